"""The WebSocket transport's gatekeeping, with the real CLI 2.1.120 connected."""

from __future__ import annotations

from typing import Any

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from claude_sdkurl import ClaudeClient, ResultMessage, TransportNotSupportedError, query
from claude_sdkurl._engine.transport.websocket import WebSocketTransport
from claude_sdkurl.testing import MockMessagesAPI

from .conftest import OptionsFactory, cli_pid

pytestmark = pytest.mark.realcli


def _status(url: str, headers: Any) -> int:
    with pytest.raises(InvalidStatus) as info:
        with connect(url, additional_headers=headers, open_timeout=5):
            pass
    return info.value.response.status_code


@pytest.mark.parametrize("transport", ["websocket"])
def test_bad_token_rejected_before_upgrade(make_options: OptionsFactory, api: MockMessagesAPI, transport: str) -> None:
    with ClaudeClient(make_options()) as client:
        ws = client.session._transport
        assert isinstance(ws, WebSocketTransport) and ws.url
        token = ws._token
        assert len(token) >= 43  # 32 random bytes, urlsafe base64
        assert ws.url.startswith("ws://127.0.0.1:")

        assert _status(ws.url, {}) == 401
        assert _status(ws.url, {"Authorization": "Bearer wrong"}) == 401
        assert _status(ws.url, {"Authorization": f"Bearer {token}x"}) == 401
        assert _status(ws.url, {"Authorization": token}) == 401
        # the right token from a browser page is still refused
        assert _status(ws.url, {"Authorization": f"Bearer {token}", "Origin": "http://evil.example"}) == 403
        # two Authorization headers, even both right, are ambiguous: 401, not a 500
        twice = [("Authorization", f"Bearer {token}"), ("Authorization", f"Bearer {token}")]
        assert _status(ws.url, twice) == 401
        assert ws.rejected == 6 and ws.connections == 1

        # the token travels through an inherited pipe: not on the command line, not in the
        # environment (which the CLI's tools inherit)
        pid = cli_pid()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read()
        with open(f"/proc/{pid}/environ", "rb") as f:
            environ = f.read()
        assert token.encode() not in argv and token.encode() not in environ
        assert b"CLAUDE_CODE_WEBSOCKET_AUTH_FILE_DESCRIPTOR=" in environ

        # and the real session is unaffected by the refused attempts
        client.query("still there?")
        result = [m for m in client.receive_response() if isinstance(m, ResultMessage)]
        assert result and result[0].result == "pong"


@pytest.mark.parametrize("transport", ["websocket"])
def test_auto_picks_websocket_for_old_cli(make_options: OptionsFactory, transport: str) -> None:
    with ClaudeClient(make_options(transport="auto")) as client:
        assert client.session.transport_name == "websocket"
        assert client.session.cli_version == (2, 1, 120)


@pytest.mark.parametrize("transport", ["stdio"])
def test_auto_picks_stdio_for_current_cli(make_options: OptionsFactory, transport: str) -> None:
    with ClaudeClient(make_options(transport="auto")) as client:
        assert client.session.transport_name == "stdio"
        assert client.session.cli_version is not None and client.session.cli_version > (2, 1, 120)


@pytest.mark.parametrize("transport", ["stdio"])
def test_forced_websocket_on_current_cli_is_a_typed_error(make_options: OptionsFactory, transport: str) -> None:
    with pytest.raises(TransportNotSupportedError) as info:
        list(query("hi", make_options(transport="websocket")))
    err = info.value
    assert err.transport == "websocket"
    # the CLI's own words are quoted
    assert err.cli_message and "--sdk-url rejected" in err.cli_message
    assert "--sdk-url rejected" in str(err)


@pytest.mark.parametrize("transport", ["websocket"])
def test_tools_do_not_inherit_the_session_token(make_options: OptionsFactory, api: MockMessagesAPI, transport: str) -> None:
    from claude_sdkurl.testing import text, tool_use

    api.enqueue(tool_use("Bash", {"command": "env; ls -l /proc/self/fd"}), text("ok"))
    with ClaudeClient(make_options(permission_mode="acceptEdits", allowed_tools=["Bash"])) as client:
        token = client.session._transport._token  # type: ignore[union-attr]
        client.query("look around")
        list(client.receive_response())
        client.query("still connected?")  # the CLI keeps the token it read once
        assert [m for m in client.receive_response() if isinstance(m, ResultMessage)][0].result == "pong"
    [result] = api.message_requests()[1].tool_results()
    assert "PATH=" in str(result["content"]) and token not in str(result["content"])
    assert "CLAUDE_CODE_SESSION_ACCESS_TOKEN" not in str(result["content"])


@pytest.mark.parametrize("transport", ["websocket"])
def test_a_second_connection_gets_409_while_the_first_is_alive_and_is_taken_once_it_is_dead(
        make_options: OptionsFactory, api: MockMessagesAPI, transport: str) -> None:  # fmt: skip
    """One CLI connection per session: a second client with the right token is refused while
    the first answers pings; a reconnect while the server still holds a dead connection (no
    close ever arrived: a laptop asleep, a NAT that dropped it) is accepted."""
    import os
    import signal

    with ClaudeClient(make_options()) as client:
        ws = client.session._transport
        assert isinstance(ws, WebSocketTransport) and ws.url
        auth = {"Authorization": f"Bearer {ws._token}"}
        assert _status(ws.url, auth) == 409 and ws.connections == 1
        pid = cli_pid()
        os.kill(pid, signal.SIGSTOP)  # the CLI's connection stays open but answers nothing
        try:
            with connect(ws.url, additional_headers=auth, open_timeout=10) as taken:
                assert taken.protocol.state.name == "OPEN"
            assert ws.connections == 2
        finally:
            os.kill(pid, signal.SIGCONT)
