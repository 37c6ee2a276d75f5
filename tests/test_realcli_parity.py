"""Drop-in behaviour on the REAL CLIs: ResultError, the end of a query, receive timeouts,
the CLI's stderr, SDK MCP tools as the official ones (both transports unless noted)."""

from __future__ import annotations

import json
import threading
from typing import Any

import mcp.types
import pytest

from claude_sdkurl import (
    AssistantMessage,
    ClaudeClient,
    ReceiveTimeoutError,
    ResultError,
    ResultMessage,
    SystemMessage,
    TaskNotificationMessage,
    TaskStartedMessage,
    TaskUpdatedMessage,
    ToolAnnotations,
    create_sdk_mcp_server,
    query,
    tool,
)
from claude_sdkurl.testing import MockMessagesAPI, error, text, tool_use

from .conftest import OptionsFactory

pytestmark = pytest.mark.realcli


def _run_to_error(options: Any) -> tuple[list[Any], ResultError]:
    seen: list[Any] = []
    with pytest.raises(ResultError) as info:
        for message in query("go", options):
            seen.append(message)
    return seen, info.value


def test_result_error_after_max_turns(make_options: OptionsFactory, api: MockMessagesAPI, transport: str) -> None:
    api.enqueue(tool_use("Bash", {"command": "echo hi"}), text("never reached"))
    seen, e = _run_to_error(make_options(max_turns=1, permission_mode="acceptEdits", allowed_tools=["Bash"]))
    result = seen[-1]
    assert isinstance(result, ResultMessage) and result.is_error and result.subtype == "error_max_turns"
    assert e.subtype == "error_max_turns" and e.errors == ["Reached maximum number of turns (1)"]
    assert e.session_id == result.session_id and e.data == result.raw
    assert str(e).startswith("Claude Code returned an error result: Reached maximum number of turns (1)")
    assert e.exit_code == 1  # both CLIs exit 1 after an error result (2.1.120 once we close the WebSocket)


def test_result_error_after_budget(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    api.enqueue(text("expensive", input_tokens=10_000_000))
    seen, e = _run_to_error(make_options(max_budget_usd=0.0001))
    assert isinstance(seen[-1], ResultMessage) and seen[-1].subtype == "error_max_budget_usd"
    assert e.subtype == "error_max_budget_usd" and e.errors == ["Reached maximum budget ($0.0001)"]


def test_result_error_after_api_error(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    api.enqueue(*[error(400, "invalid_request_error", "bad thing")] * 12)
    seen, e = _run_to_error(make_options())
    assert isinstance(seen[-1], ResultMessage) and seen[-1].is_error
    # the CLI's kind of API failure, from the top level of its assistant frame
    [failed] = [m for m in seen if isinstance(m, AssistantMessage)]
    assert failed.error == "unknown" and failed.raw["error"] == "unknown" and "bad thing" in str(failed.content)
    assert e.api_error_status == 400 and e.result is not None and "bad thing" in e.result
    assert "bad thing" in str(e)


def test_client_receive_raises_result_error_when_its_iterable_input_ends(
    make_options: OptionsFactory, api: MockMessagesAPI
) -> None:
    api.enqueue(tool_use("Bash", {"command": "echo hi"}), text("never reached"))
    prompt = [{"type": "user", "message": {"role": "user", "content": "go"}, "parent_tool_use_id": None}]
    with ClaudeClient(make_options(max_turns=1, permission_mode="acceptEdits", allowed_tools=["Bash"])) as client:
        client.disconnect()
        client.connect(prompt)  # as the official client: input closes once this run is over
        seen: list[Any] = []
        with pytest.raises(ResultError) as info:
            for message in client.receive_messages():
                seen.append(message)
    assert isinstance(seen[-1], ResultMessage) and info.value.subtype == "error_max_turns"


def agent_script(sub: list[Any], main: list[Any], prompt: str) -> Any:
    """A responder for a main agent that delegates ``prompt`` to a background subagent: the two
    call the API concurrently, so replies go by who asks (the first user message), not by order."""
    calls = {"main": 0, "sub": 0}
    lock = threading.Lock()

    def respond(request: Any) -> Any:
        first = json.dumps(request.messages()[:1])
        who = "sub" if prompt in first else "main"
        with lock:
            n = calls[who]
            calls[who] += 1
        if who == "main":
            if n == 0:
                return tool_use("Agent", {"description": "sub", "prompt": prompt, "subagent_type": "general-purpose"})
            return main[min(n - 1, len(main) - 1)]
        return sub[min(n, len(sub) - 1)]

    return respond


def test_query_reads_until_the_background_subagent_is_done(cli_paths: Any, api: MockMessagesAPI, home: Any) -> None:
    """CLI 2.1.330 runs Agent subagents in the background: the subagent's messages, the task
    frames and the follow-up turn with its second result all reach the user (stdio only:
    2.1.120 runs the subagent in the foreground, one result)."""
    from claude_sdkurl import ClaudeAgentOptions
    from claude_sdkurl.testing import offline_env

    api.responder = agent_script(sub=[text("sub says hi")], main=[text("main done"), text("after the subagent")], prompt="say hi")
    options = ClaudeAgentOptions(
        cli_path=str(cli_paths["stdio"]),
        env=offline_env(api.url, home),
        cwd=str(home / "work"),
        permission_mode="acceptEdits",
        allowed_tools=["Agent", "Task"],
    )
    messages = list(query("delegate", options))
    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert [r.result for r in results] == ["main done", "after the subagent"]
    assert any(isinstance(m, TaskStartedMessage) and m.task_type == "local_agent" for m in messages)
    assert any(isinstance(m, TaskUpdatedMessage) for m in messages)
    assert any(isinstance(m, TaskNotificationMessage) and m.status == "completed" for m in messages)
    assert any(isinstance(m, AssistantMessage) and m.parent_tool_use_id for m in messages)  # the subagent's
    # the state frames the SDK asked for are not the user's
    assert not any(isinstance(m, SystemMessage) and m.subtype == "session_state_changed" for m in messages)
    assert not any(type(m).__name__ == "UnknownMessage" for m in messages)


def test_query_with_callbacks_keeps_input_open_for_the_subagent(
    cli_paths: Any, api: MockMessagesAPI, home: Any
) -> None:
    """With a hook (a bidirectional need) the input stays open until the run is over, so the
    subagent's tool call after the first result still reaches the hook."""
    from claude_sdkurl import ClaudeAgentOptions, HookMatcher
    from claude_sdkurl.testing import offline_env

    seen_tools: list[str] = []

    def pre_tool(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        seen_tools.append(data["tool_name"])
        return {}

    api.responder = agent_script(
        sub=[tool_use("Bash", {"command": "echo from-sub"}), text("sub done")],
        main=[text("main waits"), text("all done")],
        prompt="run it",
    )
    options = ClaudeAgentOptions(
        cli_path=str(cli_paths["stdio"]),
        env=offline_env(api.url, home),
        cwd=str(home / "work"),
        permission_mode="acceptEdits",
        allowed_tools=["Agent", "Task", "Bash"],
        hooks={"PreToolUse": [HookMatcher(hooks=[pre_tool])]},
    )
    messages = list(query("delegate", options))
    assert "Bash" in seen_tools and "Agent" in seen_tools
    assert sum(isinstance(m, ResultMessage) for m in messages) >= 2


def test_receive_timeout_leaves_the_client_usable(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    api.enqueue(text("slow " * 20, delay=0.1, chunk=5), text("second"))
    with ClaudeClient(make_options(include_partial_messages=True)) as client:
        client.query("first")
        got: list[Any] = []
        with pytest.raises(ReceiveTimeoutError):
            for message in client.receive_response(timeout=0.5):
                got.append(message)
        assert got and not any(isinstance(m, ResultMessage) for m in got)
        rest = list(client.receive_response(timeout=30))
        assert isinstance(rest[-1], ResultMessage) and "slow slow" in (rest[-1].result or "")
        client.query("again")
        again = list(client.receive_response(timeout=30))
        assert isinstance(again[-1], ResultMessage) and again[-1].result == "second"


def test_cli_stderr_reaches_ours_without_a_callback(
    make_options: OptionsFactory, api: MockMessagesAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    api.enqueue(text("ok"), text("ok"))
    list(query("hi", make_options(extra_args={"debug-to-stderr": None})))
    passed = capsys.readouterr().err
    assert passed.strip(), "the CLI's stderr was swallowed"
    lines: list[str] = []
    list(query("hi", make_options(extra_args={"debug-to-stderr": None}, stderr=lines.append)))
    assert lines and all(line == line.rstrip() and line for line in lines)
    assert capsys.readouterr().err == ""  # with a callback, nothing passes through


def test_sdk_tools_as_the_official_ones(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    """mcp.types.ToolAnnotations, maxResultSizeChars, list[X] schemas and argument validation."""
    calls: list[Any] = []

    @tool("total", "Add numbers", {"values": list[int]}, annotations=mcp.types.ToolAnnotations(readOnlyHint=True))
    def total(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        return {"content": [{"type": "text", "text": str(sum(args["values"]))}]}

    @tool("echo", "Echo", {"s": str}, annotations=ToolAnnotations(read_only_hint=True, max_result_size_chars=10_000))
    def echo(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": args["s"]}]}

    server = create_sdk_mcp_server("calc", tools=[total, echo])
    api.enqueue(
        tool_use("mcp__calc__total", {"values": [1, 2, 3]}),
        tool_use("mcp__calc__total", {"values": "not a list"}),
        text("done"),
    )
    messages = list(query("add", make_options(mcp_servers={"calc": server}, allowed_tools=["mcp__calc__total"])))
    assert isinstance(messages[-1], ResultMessage) and not messages[-1].is_error
    assert calls == [{"values": [1, 2, 3]}]  # the invalid call never reached the handler
    results = [r for req in api.message_requests() for r in req.tool_results()]
    assert len(results) == 2
    assert results[0]["content"] == [{"type": "text", "text": "6"}] and not results[0].get("is_error")
    assert results[1].get("is_error") is True
    assert "Input validation error" in str(results[1]["content"])
