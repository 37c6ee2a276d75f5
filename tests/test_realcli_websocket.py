"""The WebSocket transport's gatekeeping, with the real CLI 2.1.120 connected."""

from __future__ import annotations

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from claude_sdkurl import ClaudeClient, ResultMessage, TransportNotSupportedError, query
from claude_sdkurl._transport.websocket import WebSocketTransport
from claude_sdkurl.testing import MockMessagesAPI

from .conftest import OptionsFactory, cli_pid

pytestmark = pytest.mark.realcli


def _status(url: str, headers: dict[str, str]) -> int:
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
        assert ws.rejected == 5 and ws.connections == 1

        # the token travels in the environment, never on the command line
        pid = cli_pid()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read()
        with open(f"/proc/{pid}/environ", "rb") as f:
            environ = f.read()
        assert token.encode() not in argv
        assert f"CLAUDE_CODE_SESSION_ACCESS_TOKEN={token}".encode() in environ.split(b"\0")

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
