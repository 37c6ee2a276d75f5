"""Prewarm on the real CLI: the warm session is the one used; errors surface; nothing leaks."""

from __future__ import annotations

import threading
from typing import Any

import pytest

import json
import sys

from claude_sdkurl import (
    AssistantMessage,
    ClaudeClient,
    CLINotFoundError,
    HookMatcher,
    ResultMessage,
    SystemMessage,
    prewarm,
    query,
)
from claude_sdkurl._engine.session import Session
from claude_sdkurl.testing import MockMessagesAPI, text

_prewarm = sys.modules["claude_sdkurl.prewarm"]  # the module; the package exports the function
MARK = "claude_sdkurl prewarm"


def _marker_requests(api: MockMessagesAPI) -> list[str]:
    return [r.path for r in api.requests if MARK in json.dumps(r.body)]

from .conftest import OptionsFactory

pytestmark = pytest.mark.realcli


def test_query_takes_the_warm_session(
    make_options: OptionsFactory, api: MockMessagesAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    starts: list[str] = []
    original = Session.start

    def spy(self: Session, *args: Any, **kwargs: Any) -> Any:
        starts.append(threading.current_thread().name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Session, "start", spy)
    options = make_options()
    with prewarm(options) as pool:
        api.enqueue(text("first"), text("second"))
        assert list(query("one", options))[-1].result == "first"
        assert list(query("two", options))[-1].result == "second"
        # every CLI start happened on the pool's threads, none in the caller's
        assert starts and all(name == "claude-sdkurl-prewarm" for name in starts)
        # other options objects are not served from this pool
        other = make_options()
        assert list(query("three", other))[-1].result == "pong"
        assert starts[-1] == threading.current_thread().name
    assert pool.errors == []


def test_prewarm_failure_falls_back_to_a_normal_start(make_options: OptionsFactory, tmp_path: Any) -> None:
    options = make_options(cli_path=str(tmp_path / "missing-claude"))
    with prewarm(options) as pool:
        with pytest.raises(CLINotFoundError):
            list(query("hi", options))
    assert pool.errors and isinstance(pool.errors[0], CLINotFoundError)


def test_client_prewarm(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    client = ClaudeClient(make_options()).prewarm()
    try:
        client.query("hello")  # waits for the background connect
        assert [m for m in client.receive_response() if isinstance(m, ResultMessage)][0].result == "pong"
    finally:
        client.disconnect()


def test_client_prewarm_error_surfaces_on_first_use(make_options: OptionsFactory, tmp_path: Any) -> None:
    client = ClaudeClient(make_options(cli_path=str(tmp_path / "missing-claude"))).prewarm()
    with pytest.raises(CLINotFoundError):
        client.query("hello")
    client.disconnect()


def test_warm_turn_reaches_no_api_and_leaves_no_trace(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    options = make_options()
    with prewarm(options) as pool:
        session = pool.take()  # started and through its warm-up turn
        assert session is not None
        session.close()
    assert api.message_requests() == [] and _marker_requests(api) == [] and pool.errors == []

    with prewarm(options) as pool:
        msgs = list(query("hello", options))
        assert pool.warm_turn  # the warm-up turn ran and was not given up
    # the user sees exactly a normal turn: init, the answer, the result
    assert isinstance(msgs[0], SystemMessage) and msgs[0].subtype == "init"
    assert [type(m) for m in msgs[1:]] == [AssistantMessage, ResultMessage]
    result = msgs[-1]
    assert isinstance(result, ResultMessage) and result.result == "pong" and result.num_turns == 1
    assert len(api.message_requests()) == 1 and api.message_requests()[0].last_user_text() == "hello"
    assert _marker_requests(api) == []

    # resuming that conversation does not bring the blocked prompt back either
    again = list(query("again", make_options(resume=result.session_id)))
    assert isinstance(again[-1], ResultMessage) and again[-1].result == "pong"
    texts = json.dumps(api.message_requests()[-1].messages())
    assert "hello" in texts and MARK not in texts
    assert _marker_requests(api) == []


def test_the_blocked_turn_runs_the_setup_without_a_model_call(make_options: OptionsFactory) -> None:
    """The blocked turn goes through the CLI's first-turn setup (it emits init) and stops before the model."""
    options = make_options()
    session = Session(options)
    hook = _prewarm._WarmupHook()
    try:
        session.start(extra_hooks={"UserPromptSubmit": (_prewarm.WARMUP_HOOK_ID, hook)})
        session.send_user(hook.marker, session_id="")
        seen = []
        while not seen or not isinstance(seen[-1], ResultMessage):
            seen.append(session.next_message(timeout=30))
        assert not any(isinstance(m, AssistantMessage) for m in seen)
        assert any(isinstance(m, SystemMessage) and m.subtype == "init" for m in seen)
        assert seen[-1].num_turns == 0 and seen[-1].total_cost_usd in (0, None)
    finally:
        session.close()


def test_user_prompt_hooks_turn_the_warm_turn_off(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    prompts: list[str] = []

    def on_prompt(input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        prompts.append(input["prompt"])
        return {}

    options = make_options(hooks={"UserPromptSubmit": [HookMatcher(hooks=[on_prompt])]})
    assert _prewarm.warm_turn_obstacle(options) is not None
    with prewarm(options):
        assert list(query("hello", options))[-1].result == "pong"
    assert prompts == ["hello"]  # the user's hook never saw a warm-up prompt


def test_warm_turn_false_registers_no_hook(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    options = make_options()
    with prewarm(options, warm_turn=False) as pool:
        session = pool.take()
        assert session is not None
        try:
            assert _prewarm.WARMUP_HOOK_ID not in session.hook_callbacks
        finally:
            session.close()
    assert api.message_requests() == []


def test_a_warm_turn_that_is_not_blocked_is_stopped_and_given_up(
    make_options: OptionsFactory, api: MockMessagesAPI, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Should a CLI ignore the hook's block, the pool drops that session and warms without the turn."""
    monkeypatch.setattr(_prewarm._WarmupHook, "__call__", lambda self, *a: {})
    options = make_options()
    with prewarm(options) as pool:
        msgs = list(query("hello", options))
        assert pool.warm_turn is False and pool.errors == []
    assert isinstance(msgs[-1], ResultMessage) and msgs[-1].result == "pong"
    assert "did not block the warm-up prompt" in caplog.text
    assert api.message_requests()[-1].last_user_text() == "hello"


def test_client_prewarm_runs_the_warm_turn(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    client = ClaudeClient(make_options()).prewarm()
    try:
        client.query("hello")
        msgs = list(client.receive_response())
        assert isinstance(msgs[0], SystemMessage) and isinstance(msgs[-1], ResultMessage)
        assert msgs[-1].result == "pong"
        assert _prewarm.WARMUP_HOOK_ID in client.session.hook_callbacks
        client.query("again")  # the SDK hook lets later prompts through
        assert [m for m in client.receive_response() if isinstance(m, ResultMessage)][0].result == "pong"
    finally:
        client.disconnect()
    assert [r.last_user_text() for r in api.message_requests()] == ["hello", "again"]
    assert _marker_requests(api) == []
