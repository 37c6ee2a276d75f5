"""Issue 69, item 4, on the real CLIs (2.1.120 over WebSocket, 2.1.330 over stdio): a guard hook
that cannot decide denies its tool call. The tools are allowed outright (``allowed_tools``), so
nothing but the hook stands between the model and the command: the command never runs (the file
it would write is not there) and the model is told why (the tool result the mock was sent).

Measured on both CLIs before the change: a ``PreToolUse`` hook that raised was answered with an
error, which the CLI took for "no opinion" and ran the command; one that hung past
``callback_timeout`` likewise; one that hung past its ``HookMatcher`` timeout ran it on 2.1.120
(2.1.330 denied); one with no timeout hung the turn."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import HookMatcher, ResultMessage, query
from claude_sdkurl._engine import launch as _launch
from claude_sdkurl.testing import MockMessagesAPI, text, tool_use

from .conftest import OptionsFactory

pytestmark = pytest.mark.realcli


def _told(api: MockMessagesAPI, call: int) -> dict[str, Any]:
    """The tool result the model was sent for its ``call``-th tool call (from 0)."""
    [result] = api.message_requests()[call + 1].tool_results()
    return result


def _run(prompt: str, options: Any, release: threading.Event) -> None:
    """The query to its end; a hook still hanging is let go at the result (else the session's
    close waits for it before abandoning its thread)."""
    try:
        messages = []
        for message in query(prompt, options, timeout=120):
            messages.append(message)
            if isinstance(message, ResultMessage):
                release.set()
    finally:
        release.set()
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "done", messages[-1]


def test_a_guard_that_hangs_past_callback_timeout_or_raises_denies_the_call(make_options: OptionsFactory, api: MockMessagesAPI,
                                                                            home: Path) -> None:  # fmt: skip
    hung, raised = home / "work" / "hung.txt", home / "work" / "raised.txt"
    api.enqueue(tool_use("Bash", {"command": f"touch {hung}", "description": "touch"}),
                tool_use("Bash", {"command": f"touch {raised}", "description": "touch"}), text("done"))  # fmt: skip
    release = threading.Event()
    calls: list[str] = []

    def guard(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        calls.append(hook_input["tool_input"]["command"])
        if len(calls) == 1:
            release.wait(60)  # hangs: answered after callback_timeout, denied
            return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
        raise KeyError("tool_input")  # a bug in the guard

    options = make_options(allowed_tools=["Bash"], callback_timeout=5, hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[guard])]})
    _run("touch both", options, release)
    assert calls == [f"touch {hung}", f"touch {raised}"]
    assert not hung.exists() and not raised.exists()
    first, second = _told(api, 0), _told(api, 1)
    assert first["is_error"] and "The PreToolUse hook did not answer within 5 s. The tool call was denied" in str(first["content"])
    assert second["is_error"] and "The PreToolUse hook failed: 'tool_input'. The tool call was denied" in str(second["content"])
    assert len(api.message_requests()) == 3  # the two calls and the answer: nothing else was served


def test_a_guard_that_hangs_past_its_matchers_timeout_or_with_none_denies_the_call(make_options: OptionsFactory, api: MockMessagesAPI,
                                                                                   home: Path, monkeypatch: pytest.MonkeyPatch,
                                                                                   transport: str) -> None:  # fmt: skip
    """``HookMatcher(timeout=2)`` (2.1.120 is not told it: it would run the command when the time
    is up), and a matcher with no timeout, bound by DEFAULT_HOOK_TIMEOUT (here made short to see
    it hold; it is 10 minutes: tests/test_guard_hooks.py)."""
    monkeypatch.setattr(_launch, "DEFAULT_HOOK_TIMEOUT", 2.0)
    written = home / "work" / "written.txt"
    touched = home / "work" / "touched.txt"
    api.enqueue(tool_use("Bash", {"command": f"touch {touched}", "description": "touch"}),
                tool_use("Write", {"file_path": str(written), "content": "x"}), text("done"))  # fmt: skip
    release = threading.Event()

    def hangs(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        release.wait(60)
        return {}

    hooks = {"PreToolUse": [HookMatcher(matcher="Bash", hooks=[hangs], timeout=2), HookMatcher(matcher="Write", hooks=[hangs])]}
    _run("touch and write", make_options(allowed_tools=["Bash", "Write"], hooks=hooks), release)
    assert not touched.exists() and not written.exists()
    ours = "The PreToolUse hook did not answer within 2 s. The tool call was denied"
    bash, write = _told(api, 0), _told(api, 1)
    assert bash["is_error"] and write["is_error"]
    if transport == "websocket":  # the session's bound alone: the CLI was not told the matcher's
        assert ours in str(bash["content"])
    else:  # 2.1.330 was told, and its own bound denies too: whichever came first is the answer
        assert ours in str(bash["content"]) or "The tool call was not executed" in str(bash["content"])
    assert ours in str(write["content"])
    assert len(api.message_requests()) == 3
