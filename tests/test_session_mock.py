"""Session engine and control subtypes against MockTransport (a Python stand-in CLI).

Fast unit tests; the same behaviours are covered on the real CLI elsewhere.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from claude_sdkurl import (
    ClaudeAgentOptions,
    ClaudeClient,
    CLIConnectionError,
    ControlRequestError,
    ControlRequestTimeoutError,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ProcessError,
    ResultMessage,
    ToolPermissionContext,
    create_sdk_mcp_server,
    query,
    tool,
)
from claude_sdkurl.testing import FakeCLI, MockTransport


def pong(message: dict[str, Any], cli: FakeCLI) -> None:
    if message["type"] == "user":
        cli.turn("pong")


def test_query_over_mock_transport() -> None:
    transport = MockTransport(pong)
    messages = list(query("hi", transport=transport))
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "pong"
    init, user = transport.cli.sent[:2]
    assert init["request"]["subtype"] == "initialize"
    assert user["message"] == {"role": "user", "content": "hi"}


def _permission_flow(callback: Any, tool_input: dict[str, Any]) -> dict[str, Any]:
    answers: list[dict[str, Any]] = []

    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "user":
            answers.append(
                cli.request(
                    "can_use_tool",
                    tool_name="Bash",
                    input=tool_input,
                    tool_use_id="toolu_1",
                    permission_suggestions=[{"type": "setMode", "mode": "acceptEdits", "destination": "session"}],
                )
            )
            cli.turn("ok")

    list(query("go", ClaudeAgentOptions(can_use_tool=callback), transport=MockTransport(handler)))
    return answers[0]


def test_can_use_tool_allow_sends_original_input() -> None:
    seen: list[Any] = []

    def allow(name: str, tool_input: dict[str, Any], ctx: ToolPermissionContext) -> PermissionResultAllow:
        seen.append((name, tool_input, ctx.tool_use_id, ctx.suggestions[0].mode))
        return PermissionResultAllow()

    answer = _permission_flow(allow, {"command": "ls"})
    assert answer["subtype"] == "success"
    assert answer["response"] == {"behavior": "allow", "updatedInput": {"command": "ls"}}
    assert seen == [("Bash", {"command": "ls"}, "toolu_1", "acceptEdits")]


def test_can_use_tool_async_callback_modifies_input() -> None:
    async def rewrite(name: str, tool_input: dict[str, Any], ctx: ToolPermissionContext) -> PermissionResultAllow:
        return PermissionResultAllow(updated_input={"command": "echo safe"})

    answer = _permission_flow(rewrite, {"command": "rm -rf /"})
    assert answer["response"]["updatedInput"] == {"command": "echo safe"}


def test_can_use_tool_deny_with_interrupt() -> None:
    answer = _permission_flow(lambda *a: PermissionResultDeny(message="no", interrupt=True), {"command": "x"})
    assert answer["response"] == {"behavior": "deny", "message": "no", "interrupt": True}


def test_raising_callback_becomes_an_error_answer_and_session_goes_on() -> None:
    def boom(*args: Any) -> Any:
        raise RuntimeError("callback exploded")

    answer = _permission_flow(boom, {"command": "x"})
    assert answer["subtype"] == "error" and "callback exploded" in answer["error"]


def test_wrong_return_type_is_an_error_answer() -> None:
    answer = _permission_flow(lambda *a: True, {"command": "x"})
    assert answer["subtype"] == "error" and "PermissionResultAllow" in answer["error"]


def test_hooks_registered_and_dispatched() -> None:
    calls: list[Any] = []

    def pre(hook_input: dict[str, Any], tool_use_id: str | None, ctx: Any) -> dict[str, Any]:
        calls.append((hook_input["tool_name"], tool_use_id))
        return {"continue_": True, "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}

    answers: list[Any] = []
    registered: list[Any] = []

    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message.get("request", {}).get("subtype") == "initialize":
            registered.append(message["request"]["hooks"])
            cli.respond(message, {})
        elif message["type"] == "user":
            callback_id = registered[0]["PreToolUse"][0]["hookCallbackIds"][0]
            answers.append(
                cli.request("hook_callback", callback_id=callback_id, input={"tool_name": "Bash"}, tool_use_id="t9")
            )
            answers.append(cli.request("hook_callback", callback_id="hook_404", input={}))
            cli.turn("ok")

    options = ClaudeAgentOptions(hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[pre], timeout=5)]})
    list(query("go", options, transport=MockTransport(handler)))
    assert registered == [{"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["hook_0"], "timeout": 5}]}]
    assert calls == [("Bash", "t9")]
    assert answers[0]["response"]["continue"] is True  # continue_ -> continue
    assert answers[1]["subtype"] == "error" and "hook_404" in answers[1]["error"]


def test_unknown_control_subtype_gets_an_error() -> None:
    answers: list[Any] = []

    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "user":
            answers.append(cli.request("no_such_subtype"))
            cli.turn("ok")

    list(query("go", transport=MockTransport(handler)))
    assert answers[0]["subtype"] == "error" and "no_such_subtype" in answers[0]["error"]


def test_cancelled_callback_is_not_answered() -> None:
    """The CLI cancels a permission request while the callback is running: when the callback
    returns, its answer is not sent (the CLI has forgotten the request)."""
    started, release, returned = threading.Event(), threading.Event(), threading.Event()
    saw_start: list[bool] = []

    def slow(*args: Any) -> PermissionResultAllow:
        started.set()
        release.wait(5)
        returned.set()
        return PermissionResultAllow()

    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "user":
            cli.emit({"type": "control_request", "request_id": "perm1", "request": {"subtype": "can_use_tool", "tool_name": "X", "input": {}}})
            saw_start.append(started.wait(5))  # the callback is running before the cancel
            cli.emit({"type": "control_cancel_request", "request_id": "perm1"})
            time.sleep(0.1)
            release.set()
            saw_start.append(returned.wait(5))
            time.sleep(0.3)  # an answer would be written right after the return
            cli.turn("ok")

    transport = MockTransport(handler)
    list(query("go", ClaudeAgentOptions(can_use_tool=slow), transport=transport))
    assert saw_start == [True, True]
    # everything the SDK wrote, in order (the fake CLI reads it after each handler call)
    answers = [m for m in transport.cli.sent if m["type"] == "control_response"]
    assert answers == []


def test_control_request_timeout_and_error() -> None:
    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        sub = message.get("request", {}).get("subtype")
        if sub == "set_model":
            cli.emit({"type": "control_response", "response": {"subtype": "error", "request_id": message["request_id"], "error": "bad model"}})
        # interrupt: never answered

    with ClaudeClient(ClaudeAgentOptions(control_timeout=0.3), transport=MockTransport(handler)) as client:
        started = time.monotonic()
        with pytest.raises(ControlRequestTimeoutError):
            client.interrupt()
        assert time.monotonic() - started < 2
        with pytest.raises(ControlRequestError, match="bad model"):
            client.set_model("nope")


def test_per_call_bounds_win_over_control_timeout() -> None:
    """``initialize`` has its own bound (at least 60 s) and the interrupt after a ``break`` its
    own (1 s): a short ``control_timeout`` does not fail a slow start, a long one does not make
    leaving the loop wait for a CLI that never answers the interrupt."""

    def slow_start(message: dict[str, Any], cli: FakeCLI) -> None:
        if message.get("request", {}).get("subtype") == "initialize":
            time.sleep(1.0)  # answered after this returns, 1 s late for control_timeout=0.3
        elif message["type"] == "user":
            cli.turn("pong")

    messages = list(query("hi", ClaudeAgentOptions(control_timeout=0.3), transport=MockTransport(slow_start)))
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "pong"

    interrupts: list[str] = []

    def deaf(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "user":
            cli.emit({"type": "assistant", "message": {"model": "m", "content": [{"type": "text", "text": "part"}]}, "session_id": "s"})
        elif message.get("request", {}).get("subtype") == "interrupt":
            interrupts.append(message["request_id"])  # and never answered

    started = time.monotonic()
    # a hook keeps the input open through the turn (as the official SDK), so the interrupt is a request
    hooks: dict[Any, Any] = {"PreToolUse": [HookMatcher(hooks=[lambda data, tool_use_id, context: {}])]}
    for _ in query("hi", ClaudeAgentOptions(control_timeout=30, hooks=hooks), transport=MockTransport(deaf)):
        break
    assert len(interrupts) == 1  # it was sent, and waited for at most its own bound, not 30 s
    assert time.monotonic() - started < 10


def test_dead_cli_fails_pending_requests_at_once() -> None:
    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message.get("request", {}).get("subtype") == "interrupt":
            cli.exit(3, "fatal: something broke")

    with ClaudeClient(ClaudeAgentOptions(control_timeout=30), transport=MockTransport(handler)) as client:
        started = time.monotonic()
        with pytest.raises(ProcessError) as info:
            client.interrupt()
        assert time.monotonic() - started < 2
        assert info.value.exit_code == 3 and "something broke" in (info.value.stderr or "")
        with pytest.raises(ProcessError):
            client.set_model("x")  # later requests fail at once too


def test_cli_exit_mid_turn_raises_process_error() -> None:
    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "user":
            cli.emit({"type": "system", "subtype": "init", "session_id": "s"})
            cli.exit(1, "Error: boom")

    with pytest.raises(ProcessError, match="boom"):
        list(query("go", transport=MockTransport(handler)))


def test_clean_exit_before_result_is_an_error_not_silence() -> None:
    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "user":
            cli.exit(0)

    with pytest.raises(CLIConnectionError, match="before the last turn finished"):
        list(query("go", transport=MockTransport(handler)))


def test_prompt_iterable_failure_is_raised() -> None:
    def prompts():
        yield {"type": "user", "message": {"role": "user", "content": "one"}}
        raise ValueError("generator broke")

    with pytest.raises(ValueError, match="generator broke"):
        list(query(prompts(), transport=MockTransport(pong)))


def test_client_multi_turn_and_thread_safety() -> None:
    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "user":
            cli.turn("echo: " + message["message"]["content"])
        elif message.get("request", {}).get("subtype") == "interrupt":
            cli.respond(message)

    with ClaudeClient(transport=MockTransport(handler)) as client:
        for i in range(3):
            client.query(f"turn {i}")
            results = [m for m in client.receive_response() if isinstance(m, ResultMessage)]
            assert results[0].result == f"echo: turn {i}"
        errors: list[BaseException] = []

        def interrupter() -> None:
            try:
                for _ in range(20):
                    client.interrupt()
            except BaseException as e:  # pragma: no cover
                errors.append(e)

        threads = [threading.Thread(target=interrupter) for _ in range(4)]
        for t in threads:
            t.start()
        client.query("during interrupts")
        assert [m for m in client.receive_response() if isinstance(m, ResultMessage)]
        for t in threads:
            t.join()
        assert errors == []


def test_client_requires_connect() -> None:
    client = ClaudeClient()
    with pytest.raises(CLIConnectionError, match="connect"):
        client.query("hi")
    client.disconnect()  # harmless


def test_mcp_message_bridge() -> None:
    @tool("add", "Add two numbers", {"a": float, "b": float})
    def add(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": str(args["a"] + args["b"])}]}

    @tool("fail", "Always fails", {})
    async def fail(args: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("tool broke")

    replies: list[Any] = []

    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "user":
            for rpc in (
                {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 3}}},
                {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "fail", "arguments": {}}},
                {"jsonrpc": "2.0", "id": 4, "method": "resources/list"},
            ):
                replies.append(cli.request("mcp_message", server_name="calc", message=rpc)["response"]["mcp_response"])
            replies.append(cli.request("mcp_message", server_name="nope", message={"jsonrpc": "2.0", "id": 5, "method": "ping"}))
            cli.turn("ok")

    server = create_sdk_mcp_server("calc", "2.0.0", [add, fail])
    list(query("go", ClaudeAgentOptions(mcp_servers={"calc": server}), transport=MockTransport(handler)))
    init, ack, listing, added, failed, unknown, missing = replies
    assert init["result"]["serverInfo"] == {"name": "calc", "version": "2.0.0"}
    assert init["result"]["protocolVersion"] == "2025-11-25"
    assert "result" in ack
    assert listing["result"]["tools"][0] == {
        "name": "add",
        "description": "Add two numbers",
        "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]},
    }
    assert added["result"] == {"content": [{"type": "text", "text": "5"}], "isError": False}
    assert failed["result"]["isError"] is True and "tool broke" in failed["result"]["content"][0]["text"]
    assert unknown["error"]["code"] == -32601
    assert missing["response"]["mcp_response"]["error"]["code"] == -32601


def test_elicitation_callback_and_default() -> None:
    answers: list[Any] = []

    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "user":
            answers.append(
                cli.request(
                    "elicitation",
                    mcp_server_name="github",
                    message="Which repo?",
                    requested_schema={"type": "object", "properties": {"repo": {"type": "string"}}},
                )
            )
            cli.turn("ok")

    seen: list[Any] = []

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        seen.append((request["mcp_server_name"], request["message"]))
        return {"action": "accept", "content": {"repo": "claude_sdkurl"}}

    list(query("go", ClaudeAgentOptions(on_elicitation=answer), transport=MockTransport(handler)))
    list(query("go", transport=MockTransport(handler)))
    assert seen == [("github", "Which repo?")]
    assert answers[0]["response"] == {"action": "accept", "content": {"repo": "claude_sdkurl"}}
    assert answers[1]["response"] == {"action": "decline"}


def test_callback_timeout_answers_with_an_error() -> None:
    release = threading.Event()
    answers: list[Any] = []

    def hang(*args: Any) -> PermissionResultAllow:
        release.wait(10)
        return PermissionResultAllow()

    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "user":
            answers.append(cli.request("can_use_tool", tool_name="X", input={}))
            release.set()
            time.sleep(0.2)  # the late real answer must not follow the timeout's error
            cli.turn("ok")

    started = time.monotonic()
    transport = MockTransport(handler)
    list(query("go", ClaudeAgentOptions(can_use_tool=hang, callback_timeout=0.3), transport=transport))
    assert time.monotonic() - started < 3
    assert answers[0]["subtype"] == "error" and "0.3 s" in answers[0]["error"]
    responses = [m for m in transport.cli.sent if m["type"] == "control_response" and m["response"]["request_id"] != "init"]
    request_ids = [m["response"]["request_id"] for m in responses]
    assert len(request_ids) == len(set(request_ids))  # one answer per request, never two


def test_hung_callbacks_never_block_another() -> None:
    """Regression: eight hung callbacks used to occupy every worker, so a ninth that would
    answer at once never ran."""
    release = threading.Event()
    answers: list[tuple[str, float]] = []

    def guard(name: str, data: dict[str, Any], ctx: ToolPermissionContext) -> PermissionResultAllow:
        if name == "Slow":
            release.wait(30)
        return PermissionResultAllow()

    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] != "user":
            return
        slow = [
            threading.Thread(target=cli.request, args=("can_use_tool",), kwargs={"tool_name": "Slow", "input": {}})
            for _ in range(12)
        ]
        for t in slow:
            t.start()
        t0 = time.monotonic()
        reply = cli.request("can_use_tool", tool_name="Fast", input={})
        answers.append((reply["response"]["behavior"], time.monotonic() - t0))
        release.set()
        for t in slow:
            t.join(10)
        cli.turn("ok")

    list(query("go", ClaudeAgentOptions(can_use_tool=guard), transport=MockTransport(handler)))
    [(behavior, waited)] = answers
    assert behavior == "allow" and waited < 2.0


def test_when_answering_runs_once_at_the_first_model_output_on_the_reader() -> None:
    """The spare pool's trigger for a replacement (see ``_spares._refill_later``): once, at the
    first assistant message, before the consumer sees it; not at the init message; a failing
    callback is logged and the session goes on."""
    from claude_sdkurl._engine.session import Session

    seen: list[str] = []
    session = Session(ClaudeAgentOptions(), MockTransport(pong))
    session.start()
    try:
        session.when_answering(lambda: seen.append(threading.current_thread().name))
        session.when_answering(lambda: 1 / 0)  # type: ignore[func-returns-value]
        session.send_user("hi")
        kinds = []
        while not kinds or kinds[-1] != "ResultMessage":
            kinds.append(type(session.next_message(10)).__name__)
        assert kinds[-2:] == ["AssistantMessage", "ResultMessage"] and len(seen) == 1
        assert seen[0] != threading.current_thread().name  # the thread that read it, not the consumer
    finally:
        session.close()
    assert len(seen) == 1  # not again at the close


def test_when_answering_runs_at_the_close_without_an_answer_and_at_once_after_it() -> None:
    from claude_sdkurl._engine.session import Session

    seen: list[str] = []
    session = Session(ClaudeAgentOptions(), MockTransport(pong))
    session.start()
    session.when_answering(lambda: seen.append("close"))
    assert seen == []
    session.close()
    assert seen == ["close"]
    session.when_answering(lambda: seen.append("late"))
    assert seen == ["close", "late"]
