"""Drop-in behaviours, fast: parsing as the official parser (and where we keep more), the
end-of-run rules, ResultError, environment, initialize fields, hooks, SDK MCP tools."""

from __future__ import annotations

import json
import logging
import threading
import time
import warnings
from typing import Annotated, Any, Optional, TypedDict

import pytest

from claude_sdkurl import (
    ClaudeClient,
    CanUseToolShadowedWarning,
    ClaudeAgentOptions,
    DeferredToolUse,
    HookMatcher,
    PermissionResultAllow,
    ResultError,
    ResultMessage,
    ServerToolResultBlock,
    SystemMessage,
    TaskUpdatedMessage,
    UnknownMessage,
    create_sdk_mcp_server,
    query,
    tool,
)
from claude_sdkurl._engine.cli import build_env
from claude_sdkurl._engine.parse import parse_message
from claude_sdkurl._engine.protocol import MessageReceived, Protocol, RunChanged
from claude_sdkurl._engine.run import RunTracker, ceiling_ms
from claude_sdkurl.testing import FakeCLI, MockTransport

# ---------------------------------------------------------------------- parsing


@pytest.mark.parametrize("error", ["rate_limit", "authentication_failed", "unknown", None])
def test_assistant_fields_come_from_the_levels_the_official_parser_reads(error: str | None) -> None:
    """``error`` (and ``parent_tool_use_id``, ``session_id``, ``uuid``) sit on the frame; ``model``,
    ``usage``, ``id`` and ``stop_reason`` inside its ``message``. A decoy of each at the other
    level must not be read."""
    from claude_agent_sdk._internal.message_parser import parse_message as official_parse

    frame: dict[str, Any] = {
        "type": "assistant",
        "message": {
            "id": "msg_1", "model": "m", "role": "assistant", "stop_reason": "end_turn",
            "content": [{"type": "text", "text": "API Error"}], "usage": {"output_tokens": 3},
            "error": "decoy-inner", "session_id": "decoy", "uuid": "decoy",
        },
        "parent_tool_use_id": "toolu_9", "session_id": "s", "uuid": "u",
        "model": "decoy", "usage": {"output_tokens": 99}, "stop_reason": "decoy",
    }  # fmt: skip
    if error is not None:
        frame["error"] = error
    ours, theirs = parse_message(frame), official_parse(frame)
    assert ours.error == theirs.error == error  # type: ignore[union-attr]
    for name in ("model", "usage", "message_id", "stop_reason", "parent_tool_use_id", "session_id", "uuid"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert (ours.model, ours.message_id, ours.session_id) == ("m", "msg_1", "s")  # type: ignore[union-attr]


def test_deferred_tool_use_is_a_dataclass() -> None:
    result = parse_message(
        {
            "type": "result", "subtype": "success", "duration_ms": 1, "duration_api_ms": 1, "is_error": False,
            "num_turns": 1, "session_id": "s", "deferred_tool_use": {"id": "t1", "name": "Bash", "input": {"c": 1}},
        }
    )  # fmt: skip
    assert isinstance(result, ResultMessage)
    assert result.deferred_tool_use == DeferredToolUse("t1", "Bash", {"c": 1})


def test_server_tool_result_with_list_content() -> None:
    hits = [{"type": "web_search_result", "url": "https://x", "title": "X"}]
    message = parse_message(
        {
            "type": "assistant",
            "message": {"model": "m", "content": [{"type": "web_search_tool_result", "tool_use_id": "s1", "content": hits}]},
        }
    )
    assert message.content == [ServerToolResultBlock("s1", hits)]  # type: ignore[union-attr,arg-type]


def test_task_updated_message() -> None:
    frame = {"type": "system", "subtype": "task_updated", "task_id": "t", "patch": {"status": "completed"}, "uuid": "u"}
    message = parse_message(frame)
    assert isinstance(message, TaskUpdatedMessage) and isinstance(message, SystemMessage)
    assert (message.task_id, message.status, message.patch, message.data) == ("t", "completed", {"status": "completed"}, frame)


def test_malformed_known_message_is_kept_as_unknown_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """Decision (the migration table, docs/guide/porting.md): where the official parser raises MessageParseError and
    ends the query, we deliver the frame as UnknownMessage, log a warning, and go on."""
    bad = {"type": "result", "subtype": "success"}  # lacks duration_ms & co.
    with caplog.at_level(logging.WARNING, "claude_sdkurl.protocol"):
        [event] = Protocol().receive_message(bad)
    assert isinstance(event, MessageReceived) and event.message == UnknownMessage("result", bad)
    assert "result" in caplog.text


def test_keep_alive_and_host_only_state_frames_are_not_messages() -> None:
    p = Protocol(run=RunTracker())
    assert p.receive_message({"type": "keep_alive"}) == []
    hidden = {"type": "system", "subtype": "session_state_changed", "state": "running", "sdk_host_only": True}
    assert [e for e in p.receive_message(hidden) if isinstance(e, MessageReceived)] == []
    shown = {"type": "system", "subtype": "session_state_changed", "state": "running"}
    [event] = [e for e in p.receive_message(shown) if isinstance(e, MessageReceived)]
    assert isinstance(event.message, SystemMessage) and event.message.subtype == "session_state_changed"


# ---------------------------------------------------------------------- the end of a run

RESULT = {"type": "result", "subtype": "success", "duration_ms": 1, "duration_api_ms": 1, "is_error": False, "num_turns": 1, "session_id": "s"}  # fmt: skip


def effects(p: Protocol, frame: dict[str, Any]) -> list[Any]:
    return [x for e in p.receive_message(frame) if isinstance(e, RunChanged) for x in e.effects]


def test_a_result_without_state_frames_or_tasks_ends_the_run() -> None:
    run = RunTracker()
    p = Protocol(run=run)
    run.prompt_sent()
    assert "ended" in effects(p, RESULT) and run.ended


def test_an_agent_task_in_flight_holds_the_run_until_it_settles() -> None:
    run = RunTracker()
    p = Protocol(run=run)
    run.prompt_sent()
    p.receive_message({"type": "system", "subtype": "task_started", "task_id": "a", "task_type": "local_agent", "description": "d", "uuid": "u1", "session_id": "s"})  # fmt: skip
    p.receive_message({"type": "system", "subtype": "task_started", "task_id": "sh", "task_type": "local_bash", "description": "d", "uuid": "u2", "session_id": "s"})  # fmt: skip
    p.receive_message(RESULT)
    assert not run.ended  # the agent will wake the main agent for another turn
    p.receive_message({"type": "system", "subtype": "task_updated", "task_id": "a", "patch": {"status": "completed"}})
    p.receive_message({"type": "assistant", "message": {"model": "m", "content": []}, "parent_tool_use_id": None})
    p.receive_message(RESULT)
    assert run.ended  # a background shell is not tracked (it may never end)


def test_session_state_idle_ends_the_run_and_running_reopens_it() -> None:
    run = RunTracker(bidirectional=True)
    p = Protocol(run=run)
    run.prompt_sent()
    p.receive_message({"type": "system", "subtype": "session_state_changed", "state": "running", "sdk_host_only": True})
    got = effects(p, RESULT)
    assert ("arm", run.ceiling_generation) in got and not run.ended
    assert "ended" in effects(p, {"type": "system", "subtype": "session_state_changed", "state": "idle", "sdk_host_only": True})
    assert "reopened" in effects(p, {"type": "system", "subtype": "session_state_changed", "state": "running", "sdk_host_only": True})
    run.finish()
    assert run.ended and run.final
    p.receive_message({"type": "system", "subtype": "session_state_changed", "state": "running"})
    assert run.ended  # input is closed: the run stays ended


def test_the_ceiling_ends_a_run_that_stays_running() -> None:
    run = RunTracker(bidirectional=True, ceiling_ms=10)
    p = Protocol(run=run)
    run.prompt_sent()
    p.receive_message({"type": "system", "subtype": "session_state_changed", "state": "running"})
    [arm] = [e for e in effects(p, RESULT) if isinstance(e, tuple)]
    run.ceiling_fired(arm[1] - 1)  # a stale timer does nothing
    assert not run.ended
    run.ceiling_fired(arm[1])
    assert run.ended


def test_ceiling_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS", "1234")
    assert ceiling_ms({}) == 1234
    assert ceiling_ms({"CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS": "0"}) == 0
    assert ceiling_ms({"CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS": "x"}) == 600_000


def test_query_reads_past_the_first_result_until_the_cli_exits() -> None:
    """A follow-up turn after the first result (a background agent woke the main one)."""

    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "user":
            cli.emit({"type": "system", "subtype": "task_started", "task_id": "a", "task_type": "local_agent", "description": "d", "uuid": "t1", "session_id": "s"})  # fmt: skip
            cli.turn("first")
            cli.emit({"type": "system", "subtype": "task_notification", "task_id": "a", "status": "completed", "output_file": "", "summary": "", "uuid": "t2", "session_id": "s"})  # fmt: skip
            cli.turn("second")

    messages = list(query("go", transport=MockTransport(handler)))
    assert [m.result for m in messages if isinstance(m, ResultMessage)] == ["first", "second"]


def test_result_error_replaces_the_exit_code_error() -> None:
    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "user":
            cli.result("", subtype="error_max_turns", is_error=True)
            cli.exit(1)

    seen: list[Any] = []
    with pytest.raises(ResultError) as info:
        for m in query("go", transport=MockTransport(handler)):
            seen.append(m)
    assert isinstance(seen[-1], ResultMessage) and seen[-1].is_error
    assert info.value.subtype == "error_max_turns" and info.value.exit_code == 1
    assert str(info.value).startswith("Claude Code returned an error result: error_max_turns")
    import pickle

    again = pickle.loads(pickle.dumps(info.value))
    assert isinstance(again, ResultError) and again.subtype == "error_max_turns"


def test_an_unknown_resume_id_said_before_connecting_is_the_result_error_stdio_gives() -> None:
    """2.1.120's words on stderr for an unknown ``resume`` id become the ``ResultError`` a CLI
    over stdio gives (issue 72); any other early exit stays what it was."""
    from types import SimpleNamespace

    from claude_sdkurl._engine.session import _resume_not_found
    from claude_sdkurl._errors import ExitedBeforeConnectingError, ResumeNotFoundError

    sid = "0f0e0d0c-0000-4000-8000-00000000dead"
    plan: Any = SimpleNamespace(options=ClaudeAgentOptions(resume=sid))
    said = f"No conversation found with session ID: {sid}"
    exited = ExitedBeforeConnectingError("Command failed with exit code 1", exit_code=1, stderr=f"booting\n{said}\n")
    error = _resume_not_found(plan, exited)
    assert isinstance(error, ResultError) and isinstance(error, ExitedBeforeConnectingError)
    assert (error.subtype, error.errors, error.session_id, error.exit_code) == ("error_during_execution", [said], sid, 1)
    assert error.data["is_error"] is True and error.stderr == exited.stderr and error.__cause__ is exited
    assert str(error) == f"Claude Code returned an error result: {said} (exit code: 1)"
    import pickle

    again = pickle.loads(pickle.dumps(error))
    assert isinstance(again, ResumeNotFoundError) and again.subtype == "error_during_execution"
    for stderr, resume in ((f"No conversation found with session ID: {sid[:-1]}0", sid),  # another id
                           ("error: unknown option '--x'", sid), (said, None), (None, sid)):  # fmt: skip
        other = ExitedBeforeConnectingError("Command failed", exit_code=1, stderr=stderr)
        assert _resume_not_found(SimpleNamespace(options=ClaudeAgentOptions(resume=resume)), other) is None  # type: ignore[arg-type]


# ---------------------------------------------------------------------- what goes to the CLI


def test_environment_as_the_official_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDECODE", "1")
    env = build_env(ClaudeAgentOptions(env={"X": "1"}))
    assert env["CLAUDE_AGENT_SDK_VERSION"] == "0.2.189"
    assert env["CLAUDE_CODE_ENTRYPOINT"] == "sdk-py"
    assert env["CLAUDE_CODE_SDK_READS_SESSION_STATE"] == "1"
    assert "CLAUDECODE" not in env and env["X"] == "1"
    mine = build_env(ClaudeAgentOptions(env={"claude_code_sdk_reads_session_state": "0"}))
    assert "CLAUDE_CODE_SDK_READS_SESSION_STATE" not in mine


def test_initialize_fields_and_verbatim_string_prompt() -> None:
    transport = MockTransport(lambda m, cli: cli.turn("ok") if m["type"] == "user" else None)
    options = ClaudeAgentOptions(
        system_prompt={"type": "preset", "preset": "claude_code", "exclude_dynamic_sections": True, "snapshot": False},
        verbatim_prompts=True,
    )
    list(query("as written", options, transport=transport))
    init = next(m for m in transport.cli.sent if m["type"] == "control_request")["request"]
    assert init["excludeDynamicSections"] is True and init["systemPromptSnapshot"] is False
    user = next(m for m in transport.cli.sent if m["type"] == "user")
    assert user["client_composed"] is True and user["session_id"] == ""


def test_initialize_timeout_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from claude_sdkurl._engine.launch import initialize_timeout

    monkeypatch.setenv("CLAUDE_CODE_STREAM_CLOSE_TIMEOUT", "120000")
    assert initialize_timeout() == 120.0
    monkeypatch.setenv("CLAUDE_CODE_STREAM_CLOSE_TIMEOUT", "1000")
    assert initialize_timeout() == 60.0
    monkeypatch.setenv("CLAUDE_CODE_STREAM_CLOSE_TIMEOUT", "60001")
    assert initialize_timeout() == 60.001
    monkeypatch.setenv("CLAUDE_CODE_STREAM_CLOSE_TIMEOUT", "soon")
    assert initialize_timeout() == 60.0
    monkeypatch.delenv("CLAUDE_CODE_STREAM_CLOSE_TIMEOUT")
    assert initialize_timeout() == 60.0


def test_hook_returning_none_is_an_error_answer() -> None:
    answers: list[Any] = []

    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "user":
            answers.append(cli.request("hook_callback", callback_id="hook_0", input={}, tool_use_id=None))
            cli.turn("ok")

    options = ClaudeAgentOptions(hooks={"Stop": [HookMatcher(hooks=[lambda i, t, c: None])]})
    list(query("go", options, transport=MockTransport(handler)))
    assert answers[0]["subtype"] == "error" and "None" in answers[0]["error"]


def test_can_use_tool_shadowed_warning() -> None:
    transport = MockTransport(lambda m, cli: cli.turn("ok") if m["type"] == "user" else None)
    options = ClaudeAgentOptions(can_use_tool=lambda n, i, c: PermissionResultAllow(), allowed_tools=["Read", "Bash(ls:*)"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        list(query("go", options, transport=transport))
    [w] = [w for w in caught if issubclass(w.category, CanUseToolShadowedWarning)]
    assert "Read" in str(w.message) and "Bash" not in str(w.message)
    # Under the default filter, once per process (per message), whoever calls and from where.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(2):
            list(query("go", options, transport=MockTransport(lambda m, cli: cli.turn("ok") if m["type"] == "user" else None)))
        list(query("go", options, transport=MockTransport(lambda m, cli: cli.turn("ok") if m["type"] == "user" else None)))
    assert len([w for w in caught if issubclass(w.category, CanUseToolShadowedWarning)]) == 1


def test_system_prompt_fields_of_initialize_follow_the_prompt_type() -> None:
    """``excludeDynamicSections`` only for a preset, ``systemPromptSnapshot`` for a preset or
    a custom prompt, never for a file prompt (as the official initialize)."""
    from claude_sdkurl._engine.launch import initialize_request

    def fields(sp: Any) -> dict[str, Any]:
        request = initialize_request(ClaudeAgentOptions(system_prompt=sp), None)
        return {k: v for k, v in request.items() if k in ("excludeDynamicSections", "systemPromptSnapshot")}

    flags = {"exclude_dynamic_sections": True, "snapshot": True}
    assert fields({"type": "preset", "preset": "claude_code", **flags}) == {"excludeDynamicSections": True, "systemPromptSnapshot": True}
    assert fields({"type": "custom", "text": "x", **flags}) == {"systemPromptSnapshot": True}
    assert fields({"type": "file", "path": "p.md", **flags}) == {}
    assert fields("plain text") == {}


# ---------------------------------------------------------------------- SDK MCP tools


class Point(TypedDict):
    x: int
    y: Annotated[float, "the y coordinate"]


def test_tool_schemas_from_python_types() -> None:
    @tool("t", "T", {"names": list[str], "maybe": Optional[int], "either": int | str, "at": Point, "note": Annotated[str, "a note"]})
    def t(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": []}

    server = create_sdk_mcp_server("s", tools=[t])["instance"]
    schema = server.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})["result"]["tools"][0]["inputSchema"]  # type: ignore[index]
    props = schema["properties"]
    assert props["names"] == {"type": "array", "items": {"type": "string"}}
    assert props["maybe"] == {"type": "integer"}
    assert props["either"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert props["at"] == {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "number", "description": "the y coordinate"}},
        "required": ["x", "y"],
    }
    assert props["note"] == {"type": "string", "description": "a note"}
    assert schema["required"] == ["names", "maybe", "either", "at", "note"]


def call(server: Any, name: str, arguments: dict[str, Any], rpc_id: int = 2) -> dict[str, Any]:
    reply = server.handle({"jsonrpc": "2.0", "id": rpc_id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
    assert reply is not None
    return reply


def test_tool_arguments_are_validated_and_results_converted() -> None:
    calls: list[Any] = []

    @tool("add", "Add", {"a": int, "b": int})
    def add(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        return {"content": [{"type": "text", "text": str(args["a"] + args["b"])}, {"type": "resource_link", "name": "n", "uri": "u"}]}

    server = create_sdk_mcp_server("s", tools=[add])["instance"]
    assert call(server, "add", {"a": 1, "b": 2})["result"] == {
        "content": [{"type": "text", "text": "3"}, {"type": "text", "text": "n\nu"}],
        "isError": False,
    }
    bad = call(server, "add", {"a": "x"})["result"]
    assert bad["isError"] is True and bad["content"][0]["text"].startswith("Input validation error: ")
    assert call(server, "nope", {})["result"]["content"][0]["text"] == "Tool 'nope' not found"
    assert calls == [{"a": 1, "b": 2}]


@pytest.mark.parametrize("msg_id", [2.5, None, True, [1], {"a": 1}])
def test_a_message_mcp_reads_as_a_notification_gets_no_reply(msg_id: Any) -> None:
    """An id that is not a JSON-RPC request id (a string or a strict integer): the ``mcp``
    package reads the message as a notification, and so do we: nothing is answered (the
    tool is not run)."""
    from mcp import types as mcp_types
    from pydantic import TypeAdapter

    read = TypeAdapter(mcp_types.JSONRPCMessage).validate_python
    assert isinstance(read({"jsonrpc": "2.0", "id": msg_id, "method": "tools/list"}), mcp_types.JSONRPCNotification)
    ran: list[Any] = []

    @tool("t", "d", {})
    def t(args: dict[str, Any]) -> dict[str, Any]:
        ran.append(args)
        return {"content": []}

    server = create_sdk_mcp_server("s", tools=[t])["instance"]
    for method in ("tools/list", "tools/call", "ping"):
        assert server.handle({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": {"name": "t", "arguments": {}}}) is None
    assert ran == []
    for good in (0, 7, "x"):  # real ids are answered
        assert isinstance(read({"jsonrpc": "2.0", "id": good, "method": "ping"}), mcp_types.JSONRPCRequest)
        assert server.handle({"jsonrpc": "2.0", "id": good, "method": "ping"}) == {"jsonrpc": "2.0", "id": good, "result": {}}


def test_a_tool_that_returns_is_error_reaches_the_model_as_an_error() -> None:
    @tool("fails", "d", {})
    def fails(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "no such file"}], "is_error": True}

    server = create_sdk_mcp_server("s", tools=[fails])["instance"]
    result = call(server, "fails", {})["result"]
    assert result["isError"] is True and result["content"] == [{"type": "text", "text": "no such file"}]


def test_not_required_keys_of_a_typeddict_schema_stay_optional() -> None:
    """NotRequired keys are optional and Required ones required, also in a module with
    ``from __future__ import annotations`` (where Python 3.10/3.11 put every key in
    ``__required_keys__``, and the official conversion makes them all required: the migration table)."""
    import importlib.util
    import sys
    from pathlib import Path

    from typing_extensions import NotRequired, TypedDict

    Plain = TypedDict("Plain", {"query": str, "limit": NotRequired[int]})  # (annotations not postponed)

    spec = importlib.util.spec_from_file_location("typeddict_future", Path(__file__).parent / "fixtures" / "typeddict_future.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["typeddict_future"] = module  # (type hints resolve in the class's module)
    try:
        spec.loader.exec_module(module)
        assert module.Search.__required_keys__ == {"query", "limit"} or sys.version_info >= (3, 12)  # Python's own view
        for schema in (Plain, module.Search, module.Loose):
            mine = create_sdk_mcp_server("s", tools=[tool("t", "d", schema)(lambda a: a)])["instance"]
            (listed,) = mine.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})["result"]["tools"]
            assert listed["inputSchema"]["required"] == ["query"], schema
            assert set(listed["inputSchema"]["properties"]) == {"query", "limit"}
    finally:
        del sys.modules["typeddict_future"]


def test_cancelled_notification_cancels_an_async_tool() -> None:
    started = threading.Event()
    finished: list[str] = []

    @tool("wait", "Waits", {})
    async def wait(args: dict[str, Any]) -> dict[str, Any]:
        import asyncio

        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            finished.append("cancelled")
            raise
        return {"content": []}

    server = create_sdk_mcp_server("s", tools=[wait])["instance"]
    replies: list[Any] = []
    thread = threading.Thread(target=lambda: replies.append(call(server, "wait", {}, rpc_id=7)))
    t0 = time.monotonic()
    thread.start()
    assert started.wait(5)
    assert server.handle({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}) is None
    thread.join(5)
    assert not thread.is_alive() and time.monotonic() - t0 < 5
    assert finished == ["cancelled"]
    assert replies[0]["error"]["message"] == "Request cancelled"


def test_notification_ack_has_no_id() -> None:
    answers: list[Any] = []

    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "user":
            answers.append(cli.request("mcp_message", server_name="s", message={"jsonrpc": "2.0", "method": "notifications/initialized"}))
            cli.turn("ok")

    list(query("go", ClaudeAgentOptions(mcp_servers={"s": create_sdk_mcp_server("s")}), transport=MockTransport(handler)))
    assert answers[0]["response"] == {"mcp_response": {"jsonrpc": "2.0", "result": {}}}
    json.dumps(answers)


def test_result_error_when_a_closing_transport_sees_exit_0() -> None:
    """A transport that ends input by closing (as WebSocket): should the CLI then exit 0 after
    an error result, the error is not turned into success."""

    class Closing(MockTransport):
        can_end_input = False

        def end_input(self) -> None:
            self.cli.exit(0)

    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "user":
            cli.result("", subtype="error_max_budget_usd", is_error=True)

    with pytest.raises(ResultError) as info:
        list(query("go", transport=Closing(handler)))
    assert info.value.subtype == "error_max_budget_usd" and info.value.exit_code is None


def test_client_query_of_an_iterable_returns_once_every_message_is_written() -> None:
    """As ``await client.query(iterable)``: a later query cannot overtake the messages, and
    an exception of the iterable reaches the caller, after what it yielded was sent."""
    seen: list[str] = []

    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "user":
            seen.append(message["message"]["content"])

    def slow_prompts() -> Any:
        for i in range(3):
            time.sleep(0.05)  # a producer that takes its time: the official awaits it
            yield {"type": "user", "message": {"role": "user", "content": f"part {i}"}}

    def failing_prompts() -> Any:
        yield {"type": "user", "message": {"role": "user", "content": "before the failure"}}
        raise ValueError("the prompt source failed")

    with ClaudeClient(transport=MockTransport(handler)) as client:
        client.query(slow_prompts())
        client.query("after")
        with pytest.raises(ValueError, match="the prompt source failed"):
            client.query(failing_prompts())
        deadline = time.monotonic() + 5
        while len(seen) < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert seen == ["part 0", "part 1", "part 2", "after", "before the failure"]


def test_a_malformed_result_or_a_broken_schema_is_an_error_result_as_in_the_official() -> None:
    """A text block without ``text`` and an input schema jsonschema rejects both come back as
    ``isError`` results with the official's text, read by both SDKs' in-process servers."""
    import asyncio

    import claude_agent_sdk as official

    def no_text(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text"}]}

    broken = {"type": "object", "properties": {"a": {"type": "no-such-type"}}}
    mine = create_sdk_mcp_server("s", tools=[tool("no_text", "d", {})(no_text), tool("broken", "d", broken)(no_text)])["instance"]

    runners: list[Any] = []  # the official server's run_tool, caught as it is built

    def catch(name: str, version: str, tools: Any, run_tool: Any) -> Any:
        runners.append(run_tool)
        return None

    async def handler(args: dict[str, Any]) -> dict[str, Any]:
        return no_text(args)

    original = official.build_tool_server  # type: ignore[attr-defined]
    official.build_tool_server = catch  # type: ignore[attr-defined]
    try:
        official.create_sdk_mcp_server("s", tools=[official.tool("no_text", "d", {})(handler), official.tool("broken", "d", broken)(handler)])
    finally:
        official.build_tool_server = original  # type: ignore[attr-defined]

    def theirs_call(name: str) -> Any:
        return asyncio.run(runners[0](name, {"a": 1})).model_dump(exclude_none=True, by_alias=True)

    for name in ("no_text", "broken"):
        ours_ = call(mine, name, {"a": 1})["result"]
        theirs = theirs_call(name)
        assert ours_["isError"] is True and theirs["isError"] is True
        assert ours_["content"] == theirs["content"], name


def test_verbatim_prompts_is_read_once_per_session() -> None:
    """Toggling the option after connect must not split one session's prompts between
    marked and unmarked (the official test_option_is_captured_at_connect)."""
    transport = MockTransport(lambda m, cli: cli.turn("ok") if m["type"] == "user" else None)
    options = ClaudeAgentOptions(verbatim_prompts=False)
    with ClaudeClient(options, transport=transport) as client:
        client.query("first")
        list(client.receive_response())
        options.verbatim_prompts = True
        client.query("later")
        client.query([{"type": "user", "message": {"role": "user", "content": "later streamed"}}])
    users = [m for m in transport.cli.sent if m["type"] == "user"]
    assert len(users) == 3 and all("client_composed" not in m for m in users)


@pytest.mark.parametrize(
    ("version", "verbatim", "expected"),
    [
        ("2.1.247", True, ["verbatim_prompts is enabled, but Claude Code version 2.1.247"]),
        ("2.0.5", True, ["2.1.248 or later is required"]),
        ("2.1.248", True, []),
        ("3.0.0", True, []),
        ("2.1.100", False, []),
        (None, False, ["too old to report its version", "Minimum required version is 2.0.0"]),
        (None, True, ["too old to report", "Claude Code version unknown at", "ignores it: prompts will still have @path mentions expanded and slash commands dispatched. Claude Code 2.1.248 or later is required."]),
    ],
)
def test_warnings_about_the_cli_version(version: str | None, verbatim: bool, expected: list[str], caplog: pytest.LogCaptureFixture) -> None:
    text_ = _version_warnings(version, verbatim, caplog)
    for piece in expected:
        assert piece in text_
    if not expected:
        assert "Claude Code" not in text_


@pytest.mark.parametrize("verbatim", [False, True])
def test_version_warnings_can_be_skipped(verbatim: bool, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """As the official SDK (its test_version_warning_can_be_skipped): any value of
    CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK in the environment silences both warnings."""
    monkeypatch.setenv("CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK", "1")
    assert "Claude Code" not in _version_warnings(None, verbatim, caplog)


def _version_warnings(version: str | None, verbatim: bool, caplog: pytest.LogCaptureFixture) -> str:
    """What is logged for a one-turn query to a CLI that reports ``version`` in its init."""

    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "user":
            cli.version = version  # type: ignore[assignment]
            cli.turn("ok")

    with caplog.at_level(logging.WARNING, "claude_sdkurl"):
        list(query("hi", ClaudeAgentOptions(verbatim_prompts=verbatim), transport=MockTransport(handler)))
    return caplog.text


def test_an_active_opentelemetry_span_reaches_the_cli_as_its_trace_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """As the official SDK: TRACEPARENT (and TRACESTATE) in the CLI's environment, an inherited
    context replaced, what options.env sets kept; nothing without an active span."""
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

    from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

    monkeypatch.setenv("TRACEPARENT", "00-inherited-0000000000000001-01")
    monkeypatch.setenv("TRACESTATE", "old=1")
    span = NonRecordingSpan(
        SpanContext(trace_id=0x1234, span_id=0x5678, is_remote=False, trace_flags=TraceFlags(1), trace_state=TraceState([("k", "v")]))
    )
    assert "TRACEPARENT" in build_env(ClaudeAgentOptions()) and build_env(ClaudeAgentOptions())["TRACEPARENT"].startswith("00-inherited")
    with trace.use_span(span):
        mine = build_env(ClaudeAgentOptions())
        kept = build_env(ClaudeAgentOptions(env={"TRACESTATE": "mine=1"}))

        async def official_env() -> dict[str, str]:
            transport = SubprocessCLITransport(prompt="x", options=ClaudeAgentOptions(cli_path="/bin/true"))  # type: ignore[arg-type]
            captured: dict[str, str] = {}

            async def fake_open_process(*args: Any, **kwargs: Any) -> Any:
                captured.update(kwargs["env"])
                raise OSError("stop here")

            monkeypatch.setattr("anyio.open_process", fake_open_process)
            try:
                await transport.connect()
            except Exception:
                pass
            return captured

        import asyncio

        theirs = asyncio.run(official_env())
    assert mine["TRACEPARENT"] == "00-00000000000000000000000000001234-0000000000005678-01"
    assert mine["TRACEPARENT"] == theirs["TRACEPARENT"] and mine["TRACESTATE"] == theirs["TRACESTATE"] == "k=v"
    assert kept["TRACESTATE"] == "mine=1" and kept["TRACEPARENT"] == mine["TRACEPARENT"]
    # a span without a trace state: the inherited TRACESTATE goes (it belonged to another parent)
    bare = NonRecordingSpan(SpanContext(trace_id=0x99, span_id=0x77, is_remote=False, trace_flags=TraceFlags(1)))
    with trace.use_span(bare):
        stateless = build_env(ClaudeAgentOptions())
        chosen = build_env(ClaudeAgentOptions(env={"TRACEPARENT": "00-chosen-01"}))
    assert stateless["TRACEPARENT"] == "00-00000000000000000000000000000099-0000000000000077-01"
    assert "TRACESTATE" not in stateless
    assert chosen["TRACEPARENT"] == "00-chosen-01" and "TRACESTATE" not in chosen
    monkeypatch.delenv("TRACESTATE")
    with trace.use_span(bare):
        assert "TRACESTATE" not in build_env(ClaudeAgentOptions())  # nothing inherited to drop


def test_a_failing_prompt_iterable_lets_the_turns_it_sent_finish() -> None:
    """The turn already sent runs to its result (the official SDK does the same); the
    iterable's exception is raised after it (the official logs it and ends quietly)."""

    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "user":
            time.sleep(0.1)  # the failure is raised while this turn is under way
            cli.turn("answered")

    def prompts() -> Any:
        yield {"type": "user", "message": {"role": "user", "content": "one"}}
        raise RuntimeError("the prompt source broke")

    seen: list[Any] = []
    with pytest.raises(RuntimeError, match="the prompt source broke"):
        for message in query(prompts(), transport=MockTransport(handler)):
            seen.append(message)
    assert isinstance(seen[-1], ResultMessage) and seen[-1].result == "answered"


def test_tool_schema_conversion_differs_only_where_the_readme_says() -> None:
    """Same JSON Schema as the official for Python types; for per-property schema dicts and
    pydantic model classes ours keeps what the tool declared (the migration table, docs/guide/porting.md)."""
    import claude_agent_sdk as official
    import pydantic

    class Model(pydantic.BaseModel):
        n: int

    same: list[Any] = [{"a": int, "b": Optional[str], "c": list[float], "d": Annotated[bool, "flag"]}, Point, {"type": "object", "properties": {}}]
    for schema in same:
        mine = create_sdk_mcp_server("s", tools=[tool("t", "d", schema)(lambda a: a)])["instance"]
        ours_ = mine.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})["result"]["tools"][0]["inputSchema"]
        theirs = official._build_input_schema(official.tool("t", "d", schema)(lambda a: a))  # type: ignore[attr-defined]
        assert ours_ == theirs
    differs = {"n": {"type": "integer", "minimum": 0}}
    assert official._build_input_schema(official.tool("t", "d", differs)(lambda a: a))["properties"]["n"] == {"type": "string"}  # type: ignore[attr-defined]
    assert official._build_input_schema(official.tool("t", "d", Model)(lambda a: a)) == {"type": "object", "properties": {}}  # type: ignore[attr-defined]
    mine = create_sdk_mcp_server("s", tools=[tool("x", "d", differs)(lambda a: a), tool("m", "d", Model)(lambda a: a)])["instance"]
    listed = {t["name"]: t["inputSchema"] for t in mine.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})["result"]["tools"]}
    assert listed["x"]["properties"]["n"] == {"type": "integer", "minimum": 0}
    assert listed["m"]["properties"]["n"]["type"] == "integer"
