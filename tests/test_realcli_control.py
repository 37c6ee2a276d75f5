"""Permissions, hooks, interrupt and control requests on the REAL CLI, both transports."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import (
    AssistantMessage,
    ClaudeClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionRuleValue,
    PermissionUpdate,
    ResultMessage,
    StreamEvent,
    ToolPermissionContext,
    UserMessage,
    query,
)
from claude_sdkurl.testing import MockMessagesAPI, Reply, text, tool_use

from .conftest import OptionsFactory, with_the_newest_cli

pytestmark = pytest.mark.realcli


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    with_the_newest_cli(metafunc)  # the stdio tests run on the newest CLI (2.1.333) as well

TOUCH = "touch probe_touched.txt && echo hi"  # not read-only: needs permission


def _tool_results(messages: list[Any]) -> list[Any]:
    return [
        b
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
        if getattr(b, "tool_use_id", None)
    ]


def test_permission_allow(make_options: OptionsFactory, api: MockMessagesAPI, home: Path) -> None:
    api.enqueue(tool_use("Bash", {"command": TOUCH, "description": "touch"}))
    asked: list[Any] = []

    def allow(name: str, tool_input: dict[str, Any], ctx: ToolPermissionContext) -> PermissionResultAllow:
        asked.append((name, tool_input["command"], ctx.tool_use_id))
        return PermissionResultAllow()

    messages = list(query("touch it", make_options(can_use_tool=allow)))
    assert asked and asked[0][:2] == ("Bash", TOUCH)
    assert (home / "work" / "probe_touched.txt").exists()
    [result_block] = _tool_results(messages)
    assert result_block.is_error is False
    # the tool's output reached the model's next request
    assert api.message_requests()[-1].tool_results()[0]["content"] == "hi"
    assert messages[-1].result == "done (tool_result was: hi)"


def test_permission_modified_input(make_options: OptionsFactory, api: MockMessagesAPI, home: Path) -> None:
    api.enqueue(tool_use("Bash", {"command": TOUCH, "description": "touch"}))

    async def rewrite(name: str, tool_input: dict[str, Any], ctx: ToolPermissionContext) -> PermissionResultAllow:
        return PermissionResultAllow(updated_input={**tool_input, "command": "echo CHANGED_BY_HOST"})

    list(query("touch it", make_options(can_use_tool=rewrite)))
    assert not (home / "work" / "probe_touched.txt").exists()
    assert api.message_requests()[-1].tool_results()[0]["content"] == "CHANGED_BY_HOST"


def test_permission_deny(make_options: OptionsFactory, api: MockMessagesAPI, home: Path) -> None:
    api.enqueue(tool_use("Bash", {"command": TOUCH, "description": "touch"}))
    messages = list(query("touch it", make_options(can_use_tool=lambda *a: PermissionResultDeny(message="no bash today"))))
    assert not (home / "work" / "probe_touched.txt").exists()
    sent = api.message_requests()[-1].tool_results()[0]
    assert sent["is_error"] is True and "no bash today" in str(sent["content"])
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.subtype == "success"
    assert result.permission_denials and result.permission_denials[0]["tool_name"] == "Bash"


def test_always_allow_rules_from_the_callback_reach_the_cli(make_options: OptionsFactory, api: MockMessagesAPI, home: Path) -> None:
    """An allow carrying ``updated_permissions`` ("always allow"): the CLI takes the rule, so
    the second command of the same kind runs without asking again; the other tool still asks."""
    api.enqueue(
        tool_use("Bash", {"command": "touch first.txt && echo one", "description": "first"}),
        tool_use("Bash", {"command": "touch second.txt && echo two", "description": "second"}),
        tool_use("Write", {"file_path": str(home / "work" / "w.txt"), "content": "x"}),
        text("all done"),
    )
    asked: list[str] = []

    def always(name: str, tool_input: dict[str, Any], ctx: ToolPermissionContext) -> PermissionResultAllow:
        asked.append(name)
        rule = PermissionUpdate(type="addRules", rules=[PermissionRuleValue("Bash")], behavior="allow", destination="session")
        return PermissionResultAllow(updated_permissions=[rule] if name == "Bash" else None)

    messages = list(query("touch both", make_options(can_use_tool=always)))
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "all done"
    assert asked == ["Bash", "Write"]  # the second Bash call was allowed by the rule
    assert (home / "work" / "first.txt").exists() and (home / "work" / "second.txt").exists()


def test_permission_callback_raising(make_options: OptionsFactory, api: MockMessagesAPI, home: Path) -> None:
    api.enqueue(tool_use("Bash", {"command": TOUCH, "description": "touch"}))

    def broken(*args: Any) -> Any:
        raise RuntimeError("host could not decide")

    messages = list(query("touch it", make_options(can_use_tool=broken)))
    assert not (home / "work" / "probe_touched.txt").exists()
    sent = api.message_requests()[-1].tool_results()[0]
    assert sent["is_error"] is True and "host could not decide" in str(sent["content"])
    assert isinstance(messages[-1], ResultMessage)  # the session went on to a result


@pytest.mark.parametrize(
    ("decision", "expect_can_use_tool", "expect_ran"),
    [("deny", False, False), ("allow", False, True), (None, True, True)],
)
def test_pre_tool_use_hook(
    make_options: OptionsFactory,
    api: MockMessagesAPI,
    home: Path,
    decision: str | None,
    expect_can_use_tool: bool,
    expect_ran: bool,
) -> None:
    api.enqueue(tool_use("Bash", {"command": TOUCH, "description": "touch"}))
    hook_inputs: list[Any] = []
    asked: list[str] = []

    def hook(hook_input: dict[str, Any], tool_use_id: str | None, ctx: Any) -> dict[str, Any]:
        hook_inputs.append(hook_input)
        if decision is None:
            return {}
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": decision,
                "permissionDecisionReason": f"hook says {decision}",
            }
        }

    def allow(name: str, tool_input: dict[str, Any], ctx: ToolPermissionContext) -> PermissionResultAllow:
        asked.append(name)
        return PermissionResultAllow()

    options = make_options(can_use_tool=allow, hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[hook])]})
    messages = list(query("touch it", options))
    assert len(hook_inputs) == 1
    assert hook_inputs[0]["hook_event_name"] == "PreToolUse"
    assert hook_inputs[0]["tool_input"]["command"] == TOUCH
    assert bool(asked) is expect_can_use_tool
    assert (home / "work" / "probe_touched.txt").exists() is expect_ran
    assert isinstance(messages[-1], ResultMessage)
    if decision == "deny":
        assert "hook says deny" in str(api.message_requests()[-1].tool_results()[0]["content"])


def test_interrupt_mid_stream_then_next_turn(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    api.enqueue(Reply([{"type": "text", "text": "word " * 200}], chunk=5, delay=0.05), text("after interrupt"))
    with ClaudeClient(make_options(include_partial_messages=True)) as client:
        client.query("talk slowly")
        deltas = 0
        interrupted = False
        messages = []
        for message in client.receive_response():
            messages.append(message)
            if isinstance(message, StreamEvent) and message.event["type"] == "content_block_delta":
                deltas += 1
                if deltas == 3 and not interrupted:
                    client.interrupt()
                    interrupted = True
        result = messages[-1]
        assert isinstance(result, ResultMessage)
        assert result.subtype == "error_during_execution" and result.is_error
        assert deltas < 100  # the stream really stopped early
        # the client is still usable
        client.query("are you there?")
        second = [m for m in client.receive_response() if isinstance(m, ResultMessage)]
        assert second[0].subtype == "success" and second[0].result == "after interrupt"


def test_set_model_and_permission_mode(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    with ClaudeClient(make_options()) as client:
        info = client.get_server_info()
        assert info and "commands" in info
        client.query("which model?")
        list(client.receive_response())
        default_model = api.message_requests()[-1].body["model"]
        client.set_model("claude-haiku-4-5")
        client.set_permission_mode("acceptEdits")
        client.query("and now?")
        messages = list(client.receive_response())
        assert isinstance(messages[-1], ResultMessage)
        assert "haiku" in api.message_requests()[-1].body["model"]
        client.set_model(None)
        client.query("back to default?")
        list(client.receive_response())
        assert api.message_requests()[-1].body["model"] == default_model
        status = client.get_mcp_status()
        assert "mcpServers" in status


def test_readonly_tool_runs_without_asking(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    # The offline-testing guide's example (docs/guide/testing.md), on both transports.
    api.enqueue(tool_use("Bash", {"command": "echo hi"}), text("all done"))
    messages = list(query("run it", make_options(permission_mode="acceptEdits")))
    assert api.requests[-1].tool_results()[0]["content"] == "hi"
    assert any(isinstance(m, AssistantMessage) for m in messages)
    assert messages[-1].result == "all done"


def test_every_hook_event_registered_fires_with_typed_input(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    api.enqueue(tool_use("Bash", {"command": TOUCH, "description": "touch"}))
    fired: list[dict[str, Any]] = []

    async def record(hook_input: dict[str, Any], tool_use_id: str | None, ctx: Any) -> dict[str, Any]:
        fired.append(hook_input)
        return {}

    events = [
        "PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop", "SubagentStop",
        "PreCompact", "Notification", "SubagentStart", "PermissionRequest", "SessionStart", "SessionEnd",
    ]  # fmt: skip
    options = make_options(
        hooks={e: [HookMatcher(matcher=None, hooks=[record])] for e in events},
        can_use_tool=lambda *a: PermissionResultAllow(),
    )
    messages = list(query("touch it", options))
    assert isinstance(messages[-1], ResultMessage)
    by_event = {h["hook_event_name"]: h for h in fired}
    assert {"UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"} <= set(by_event)
    for h in fired:  # BaseHookInput fields on every one
        assert h["session_id"] == messages[-1].session_id and h["cwd"] and h["transcript_path"]
    assert by_event["UserPromptSubmit"]["prompt"] == "touch it"
    assert by_event["PreToolUse"]["tool_input"]["command"] == TOUCH
    assert by_event["PostToolUse"]["tool_response"]["stdout"] == "hi"
    assert isinstance(by_event["Stop"]["stop_hook_active"], bool)


def test_two_threads_share_one_client(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    api.enqueue(Reply([{"type": "text", "text": "word " * 200}], chunk=5, delay=0.05))
    with ClaudeClient(make_options(include_partial_messages=True)) as client:
        client.query("talk slowly")
        seen: list[Any] = []
        started = threading.Event()

        def reader() -> None:
            for message in client.receive_response():
                seen.append(message)
                if isinstance(message, StreamEvent):
                    started.set()

        t = threading.Thread(target=reader)
        t.start()
        assert started.wait(10)
        assert "mcpServers" in client.get_mcp_status()  # a control round trip while streaming
        client.interrupt()  # from this thread, while the other one receives
        t.join(10)
        assert not t.is_alive()
        assert isinstance(seen[-1], ResultMessage) and seen[-1].subtype == "error_during_execution"


def test_50_sequential_turns_no_growth(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    import gc
    import os

    with ClaudeClient(make_options()) as client:
        client.query("warm up")
        list(client.receive_response())
        gc.collect()
        threads, fds = threading.active_count(), len(os.listdir("/proc/self/fd"))
        for i in range(50):
            client.query(f"turn {i}")
            results = [m for m in client.receive_response() if isinstance(m, ResultMessage)]
            assert results[0].result == "pong"
        gc.collect()
        assert threading.active_count() == threads
        assert len(os.listdir("/proc/self/fd")) == fds
    assert len(api.message_requests()) == 51


def test_a_hook_that_must_block_is_refused_by_a_cli_that_would_let_it_fail_open(
    make_options: OptionsFactory, api: MockMessagesAPI, transport: str
) -> None:
    """``on_failure="block"`` on a CLI whose initialize answer does not say it honours
    ``onFailure`` (2.1.120) is a typed error before any turn, as in the official SDK; the
    current CLI says it does (2.1.330), and the hook runs."""
    from claude_sdkurl import CLIConnectionError

    options = make_options(hooks={"UserPromptSubmit": [HookMatcher(hooks=[lambda i, t, c: {}], on_failure="block")]})
    if transport == "websocket":  # 2.1.120
        with pytest.raises(CLIConnectionError, match="does not honor on_failure"):
            list(query("hi", options))
        assert not [r for r in api.requests if r.method == "POST"]  # no prompt reached the model
    else:
        assert isinstance(list(query("hi", options))[-1], ResultMessage)
