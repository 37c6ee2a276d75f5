"""Issue 69, item 4: a hook that guards a tool call fails closed. A ``PreToolUse`` or
``PermissionRequest`` hook that raises, returns no dict, or does not answer in time is answered
with a denial that carries the reason, never with an error (which the CLI takes for "no opinion":
the tool runs, on 2.1.120 and 2.1.330 alike, measured); every other event keeps the error answer;
a hook with no timeout gets ``DEFAULT_HOOK_TIMEOUT``. These run on a fake CLI; the real CLIs'
side (the tool does not run, the model reads the reason) is tests/test_realcli_guard_hooks.py."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import ClaudeAgentOptions, HookMatcher, query
from claude_sdkurl._engine import launch as _launch
from claude_sdkurl._engine.launch import DEFAULT_HOOK_TIMEOUT, GUARD_EVENTS, HOOK_TIMEOUT_BLOCKS_VERSION, plan_launch
from claude_sdkurl.testing import FakeCLI, MockTransport

Hook = Callable[[Any, Any, Any], Any]


def _asked(hooks: dict[str, list[HookMatcher]], *, times: int = 1, wait: float = 30.0, release: threading.Event | None = None,
           **options: Any) -> tuple[list[dict[str, Any]], list[float]]:  # fmt: skip
    """Run a query whose fake CLI asks the first registered callback ``times`` times: the answers
    the CLI got (each ``control_response``'s body) and how long each took. ``release`` is set
    once they are in (a hanging hook then returns: its late answer must not be sent)."""
    answers: list[dict[str, Any]] = []
    took: list[float] = []
    registered: list[dict[str, Any]] = []

    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message.get("request", {}).get("subtype") == "initialize":
            registered.append(message["request"]["hooks"])
            cli.respond(message, {})
        elif message["type"] == "user":
            event, matchers = next(iter(registered[0].items()))
            for _ in range(times):
                began = time.monotonic()
                answers.append(cli.request("hook_callback", timeout=wait, callback_id=matchers[0]["hookCallbackIds"][0],
                                           input={"hook_event_name": event, "tool_name": "Bash", "tool_input": {"command": "rm -rf /"}},
                                           tool_use_id="toolu_1"))  # fmt: skip
                took.append(time.monotonic() - began)
            if release is not None:
                release.set()
            time.sleep(0.3)  # a late answer of the callback itself would be written by now
            cli.turn("ok")

    transport = MockTransport(handler)
    list(query("go", ClaudeAgentOptions(hooks=hooks, **options), transport=transport))
    sent = [m["response"] for m in transport.cli.sent if m["type"] == "control_response"]
    assert len(sent) == len(answers) == times, sent  # one answer per request, the late one dropped
    return answers, took


def _raises(error: BaseException) -> Hook:
    def hook(hook_input: Any, tool_use_id: Any, context: Any) -> Any:
        raise error

    return hook


def _hangs(release: threading.Event, then: Any = None) -> Hook:
    def hook(hook_input: Any, tool_use_id: Any, context: Any) -> Any:
        release.wait(30)
        return then if then is not None else {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}

    return hook


def _denial(answer: dict[str, Any], event: str = "PreToolUse") -> str:
    """The reason of a guard's denial (the answer must be one, in the CLI's shape for ``event``)."""
    assert answer["subtype"] == "success", answer
    output = answer["response"]["hookSpecificOutput"]
    assert output["hookEventName"] == event
    if event == "PermissionRequest":
        assert set(output) == {"hookEventName", "decision"} and output["decision"]["behavior"] == "deny"
        return str(output["decision"]["message"])
    assert set(output) == {"hookEventName", "permissionDecision", "permissionDecisionReason"}
    assert output["permissionDecision"] == "deny"
    return str(output["permissionDecisionReason"])


def test_a_pre_tool_use_hook_that_raises_denies_the_call_and_says_why(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="claude_sdkurl.session"):
        [answer], _ = _asked({"PreToolUse": [HookMatcher(matcher="Bash", hooks=[_raises(KeyError("tool_input"))])]})
    assert _denial(answer) == "The PreToolUse hook failed: 'tool_input'. The tool call was denied: a guard that cannot decide denies."
    # logged with its type and its traceback (issue 69, item 7: it was the bare "'tool_input'")
    [record] = [r for r in caplog.records if "callback failed" in r.getMessage()]
    assert record.getMessage() == "hook_callback callback failed: KeyError: 'tool_input'"
    assert record.exc_info is not None and record.exc_info[0] is KeyError


@pytest.mark.parametrize("returned", [None, "allow", ["deny"]], ids=["None", "a string", "a list"])
def test_a_pre_tool_use_hook_that_returns_no_dict_denies_the_call(returned: Any) -> None:
    [answer], _ = _asked({"PreToolUse": [HookMatcher(hooks=[lambda i, t, c: returned])]})
    assert _denial(answer).startswith("The PreToolUse hook failed: ") and "hook callback" in _denial(answer)


def test_a_guard_that_raises_with_no_message_is_named_by_its_type() -> None:
    """The reason is the text the CLI was told before (and a session host carries the same)."""
    [answer], _ = _asked({"PreToolUse": [HookMatcher(hooks=[_raises(PermissionError())])]})
    assert _denial(answer).startswith("The PreToolUse hook failed: PermissionError. ")


def test_a_permission_request_hook_that_raises_denies_in_its_own_shape() -> None:
    [answer], _ = _asked({"PermissionRequest": [HookMatcher(hooks=[_raises(RuntimeError("policy service down"))])]})
    assert _denial(answer, "PermissionRequest").startswith("The PermissionRequest hook failed: policy service down. The tool call was denied")


def test_an_async_guard_that_raises_denies_too() -> None:
    async def hook(hook_input: Any, tool_use_id: Any, context: Any) -> Any:
        raise ValueError("no")

    [answer], _ = _asked({"PreToolUse": [HookMatcher(hooks=[hook])]})
    assert _denial(answer).startswith("The PreToolUse hook failed: no. ")


def test_a_guard_that_hangs_past_callback_timeout_is_denied_once_and_its_late_allow_dropped(caplog: pytest.LogCaptureFixture) -> None:
    release = threading.Event()
    timer = threading.Timer(1.5, release.set)  # the hook "answers" allow well after its bound
    timer.start()
    try:
        with caplog.at_level(logging.WARNING, logger="claude_sdkurl.session"):
            [answer], [took] = _asked({"PreToolUse": [HookMatcher(hooks=[_hangs(release)])]}, release=release, callback_timeout=0.3)
        assert release.wait(5)
    finally:
        timer.cancel()
    assert _denial(answer) == "The PreToolUse hook did not answer within 0.3 s. The tool call was denied: a guard that cannot decide denies."
    assert 0.3 <= took < 1.5  # at its bound, not at the hook's own (late) answer
    assert "the hook_callback callback did not answer within 0.3 s; the tool call it guards is denied" in caplog.messages


def test_a_guard_that_hangs_past_its_matchers_timeout_is_denied() -> None:
    release = threading.Event()
    try:
        [answer], [took] = _asked({"PreToolUse": [HookMatcher(hooks=[_hangs(release)], timeout=0.4)]}, release=release)
    finally:
        release.set()
    assert _denial(answer).startswith("The PreToolUse hook did not answer within 0.4 s") and took >= 0.4


def test_the_shorter_of_callback_timeout_and_the_matchers_timeout_holds() -> None:
    first, second = threading.Event(), threading.Event()
    try:
        [a], [took_a] = _asked({"PreToolUse": [HookMatcher(hooks=[_hangs(first)], timeout=0.3)]}, release=first, callback_timeout=20)
        [b], [took_b] = _asked({"PreToolUse": [HookMatcher(hooks=[_hangs(second)], timeout=20)]}, release=second, callback_timeout=0.3)
    finally:
        first.set(), second.set()
    assert "within 0.3 s" in _denial(a) and "within 0.3 s" in _denial(b) and took_a < 10 and took_b < 10


def test_a_hook_with_no_timeout_is_bound_by_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default's value is the CLI's own for its command hooks (10 minutes); here it is made
    short to see it hold, for a guard (a denial) and for any other event (an error, as a
    callback_timeout gives)."""
    assert DEFAULT_HOOK_TIMEOUT == 600.0
    monkeypatch.setattr(_launch, "DEFAULT_HOOK_TIMEOUT", 0.3)
    first, second = threading.Event(), threading.Event()
    try:
        [guard], _ = _asked({"PreToolUse": [HookMatcher(hooks=[_hangs(first)])]}, release=first)
        [other], _ = _asked({"PostToolUse": [HookMatcher(hooks=[_hangs(second)])]}, release=second)
    finally:
        first.set(), second.set()
    assert "did not answer within 0.3 s" in _denial(guard)
    assert other == {"subtype": "error", "request_id": other["request_id"], "error": "the hook_callback callback did not answer within 0.3 s"}


def test_a_callback_other_than_a_hook_keeps_no_bound_by_default() -> None:
    """can_use_tool, MCP tools and elicitations are not hooks: unbounded unless callback_timeout
    says otherwise (a parked approval may wait for a person for hours)."""
    from claude_sdkurl._engine.control import answer_bound

    plan = plan_launch(ClaudeAgentOptions(), custom_transport=True)
    assert answer_bound(plan, {"subtype": "can_use_tool"}, None) is None
    assert answer_bound(plan, {"subtype": "can_use_tool"}, 7.0) == 7.0
    assert answer_bound(plan, {"subtype": "hook_callback", "callback_id": "forged"}, None) == DEFAULT_HOOK_TIMEOUT


@pytest.mark.parametrize("event", ["PostToolUse", "Stop", "UserPromptSubmit", "Notification"])
def test_other_events_keep_the_error_answer(event: str) -> None:
    [answer], _ = _asked({event: [HookMatcher(hooks=[_raises(KeyError("x"))])]})
    assert answer == {"subtype": "error", "request_id": answer["request_id"], "error": "'x'"}


def test_on_failure_continue_keeps_the_error_answer_for_a_guard() -> None:
    release = threading.Event()
    try:
        [raised], _ = _asked({"PreToolUse": [HookMatcher(hooks=[_raises(KeyError("x"))], on_failure="continue")]})
        [late], _ = _asked({"PreToolUse": [HookMatcher(hooks=[_hangs(release)], on_failure="continue")]}, release=release, callback_timeout=0.3)
    finally:
        release.set()
    assert raised["subtype"] == "error" and raised["error"] == "'x'"
    assert late["subtype"] == "error" and late["error"] == "the hook_callback callback did not answer within 0.3 s"


def test_each_callback_keeps_its_own_matchers_rule() -> None:
    """Two matchers of one event, one set to continue: each callback id has its own rule."""
    from claude_sdkurl._engine.control import failure_answer

    hooks = {"PreToolUse": [HookMatcher(hooks=[_raises(KeyError("a"))], on_failure="continue"),
                            HookMatcher(matcher="Bash", hooks=[_raises(KeyError("b")), _raises(KeyError("c"))])],
             "Stop": [HookMatcher(hooks=[_raises(KeyError("d"))])]}  # fmt: skip
    plan = plan_launch(ClaudeAgentOptions(hooks=hooks), custom_transport=True)  # type: ignore[arg-type]
    ask = {f"hook_{n}": failure_answer(plan, {"subtype": "hook_callback", "callback_id": f"hook_{n}"}, "failed") for n in range(4)}
    assert ask["hook_0"] is None and ask["hook_1"] is not None and ask["hook_2"] is not None and ask["hook_3"] is None
    assert failure_answer(plan, {"subtype": "hook_callback", "callback_id": "hook_9"}, "failed") is None  # not ours: an error
    assert failure_answer(plan, {"subtype": "can_use_tool", "callback_id": "hook_1"}, "failed") is None
    assert GUARD_EVENTS == {"PreToolUse", "PermissionRequest"}


def _cli_reporting(tmp_path: Path, version: str) -> str:
    cli = tmp_path / f"claude-{version}"
    cli.write_text(f"#!/bin/sh\necho '{version} (Claude Code)'\n")
    cli.chmod(0o755)
    return str(cli)


def test_an_old_cli_is_not_told_a_guards_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """2.1.120 answers a hook that passed its matcher's timeout with "no opinion" itself, and
    the tool runs (measured): it is not told a guard's timeout, which the session keeps. 2.1.330
    denies the call then: it is told, as by the official SDK; so are other events' timeouts."""
    monkeypatch.setenv("CLAUDE_SDKURL_VERSION_CACHE", "")
    hooks = {"PreToolUse": [HookMatcher(matcher="Bash", hooks=[lambda i, t, c: {}], timeout=5),
                            HookMatcher(hooks=[lambda i, t, c: {}], timeout=6, on_failure="continue")],
             "PermissionRequest": [HookMatcher(hooks=[lambda i, t, c: {}], timeout=7)],
             "PostToolUse": [HookMatcher(hooks=[lambda i, t, c: {}], timeout=8)]}  # fmt: skip

    def sent(version: str) -> dict[str, list[Any]]:
        plan = plan_launch(ClaudeAgentOptions(hooks=hooks, cli_path=_cli_reporting(tmp_path, version), transport="stdio"))  # type: ignore[arg-type]
        assert [s.timeout for s in plan.hook_specs.values()] == [5, 6, 7, 8]  # the session keeps them all
        return {event: [m.get("timeout") for m in matchers] for event, matchers in plan.initialize["hooks"].items()}

    assert HOOK_TIMEOUT_BLOCKS_VERSION == (2, 1, 330)
    assert sent("2.1.120") == sent("2.1.329") == {"PreToolUse": [None, 6], "PermissionRequest": [None], "PostToolUse": [8]}
    assert sent("2.1.330") == sent("2.1.332") == {"PreToolUse": [5, 6], "PermissionRequest": [7], "PostToolUse": [8]}
    # a CLI of unknown version (a transport of the caller's) is told, as by the official SDK
    plan = plan_launch(ClaudeAgentOptions(hooks=hooks), custom_transport=True)  # type: ignore[arg-type]
    assert [m.get("timeout") for m in plan.initialize["hooks"]["PreToolUse"]] == [5, 6]


def test_the_prewarm_hook_of_our_own_is_a_guard_with_the_default_bound() -> None:
    """The SDK's own PreToolUse hook (prewarm's blocked first turn) is bound and denies like any."""
    from claude_sdkurl._engine.control import answer_bound, failure_answer

    plan = plan_launch(ClaudeAgentOptions(), custom_transport=True, extra_hooks={"PreToolUse": ("warm_0", lambda i, t, c: {})})
    request = {"subtype": "hook_callback", "callback_id": "warm_0"}
    assert answer_bound(plan, request, None) == DEFAULT_HOOK_TIMEOUT
    assert _denial({"subtype": "success", "response": failure_answer(plan, request, "failed")}).startswith("The PreToolUse hook failed")
    assert os.environ.get("CLAUDE_SDKURL_VERSION_CACHE") != ""  # (the monkeypatch above is undone)
