"""Prewarm on the real CLI: the warm session is the one used; errors surface; nothing leaks."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from claude_sdkurl import ClaudeClient, CLINotFoundError, ResultMessage, prewarm, query
from claude_sdkurl._session import Session
from claude_sdkurl.testing import MockMessagesAPI, text

from .conftest import OptionsFactory

pytestmark = pytest.mark.realcli


def test_query_takes_the_warm_session(
    make_options: OptionsFactory, api: MockMessagesAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    starts: list[str] = []
    original = Session.start

    def spy(self: Session) -> Any:
        starts.append(threading.current_thread().name)
        return original(self)

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
