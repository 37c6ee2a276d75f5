"""WebSocket drops through a TCP proxy of our own, with the real CLI 2.1.120 on the far side.

The proxy sits between the CLI and our server and cuts both TCP connections (RST) at the
moment a test picks: after the CLI sent some frame, or *instead of* forwarding one of ours, so
that frame dies with the connection. After every drop the CLI reconnects; each message must
arrive exactly once and in order, and each prompt must make exactly one turn, as counted by
the mock API.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

import pytest

from claude_sdkurl import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeClient,
    CLIJSONDecodeError,
    PermissionResultAllow,
    ResultMessage,
    StreamEvent,
    TextBlock,
    query,
)
from claude_sdkurl._engine.cli import build_args, build_env
from claude_sdkurl._engine.transport.websocket import WebSocketTransport
from claude_sdkurl.testing import MockMessagesAPI, Reply, text, tool_use

from .conftest import OptionsFactory

pytestmark = [pytest.mark.realcli, pytest.mark.parametrize("transport", ["websocket"])]

Trigger = Callable[[bytes], bool]


class MaskedFrames:
    """Unmasks the CLI's WebSocket frames (a client masks every frame) so triggers can read them."""

    def __init__(self) -> None:
        self.buf = b""

    def feed(self, data: bytes) -> bytes:
        self.buf += data
        out = []
        while len(self.buf) >= 2:
            length = self.buf[1] & 0x7F
            pos = 2
            if length == 126:
                if len(self.buf) < 4:
                    break
                length, pos = struct.unpack(">H", self.buf[2:4])[0], 4
            elif length == 127:
                if len(self.buf) < 10:
                    break
                length, pos = struct.unpack(">Q", self.buf[2:10])[0], 10
            masked = self.buf[1] & 0x80
            key = self.buf[pos : pos + 4] if masked else b""
            pos += 4 if masked else 0
            if len(self.buf) < pos + length:
                break
            payload = self.buf[pos : pos + length]
            if masked:
                payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
            out.append(payload)
            self.buf = self.buf[pos + length :]
        return b"".join(out)


class DropProxy:
    """A TCP proxy on 127.0.0.1 that can cut its connections at chosen frames."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)  # close() is noticed by the accept loop
        self.port = self.sock.getsockname()[1]
        self.target = 0
        self.drops = 0
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._threads: list[threading.Thread] = []
        # one-shot triggers: (direction, predicate, swallow); direction "in" = CLI -> us
        self._triggers: list[tuple[str, Trigger, bool]] = []
        self._closed = False
        self._accept = threading.Thread(target=self._accept_loop, name="proxy-accept")
        self._accept.start()

    def route(self, port: int) -> int:
        self.target = port
        return self.port

    def drop_after_cli_sends(self, predicate: Trigger) -> None:
        with self._lock:
            self._triggers.append(("in", predicate, False))

    def swallow_and_drop(self, predicate: Trigger) -> None:
        """The next chunk of ours that matches is not forwarded, and the connection is cut."""
        with self._lock:
            self._triggers.append(("out", predicate, True))

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                cli, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            cli.settimeout(None)
            if self._closed:
                cli.close()
                return
            server = socket.create_connection(("127.0.0.1", self.target))
            with self._lock:
                self._pairs.append((cli, server))
            for src, dst, direction in ((cli, server, "in"), (server, cli, "out")):
                t = threading.Thread(target=self._pump, args=(src, dst, direction, (cli, server)), name="proxy-pump")
                self._threads.append(t)
                t.start()

    def _fire(self, direction: str, data: bytes) -> tuple[bool, bool]:
        with self._lock:
            for i, (d, predicate, swallow) in enumerate(self._triggers):
                if d == direction and predicate(data):
                    del self._triggers[i]
                    return True, swallow
        return False, False

    def _pump(self, src: socket.socket, dst: socket.socket, direction: str, pair: tuple[socket.socket, socket.socket]) -> None:
        frames = MaskedFrames() if direction == "in" else None
        handshake_done = False
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            visible = data
            if frames is not None:
                if not handshake_done and b"\r\n\r\n" in data:  # the upgrade request comes first
                    handshake_done = True
                    visible = frames.feed(data.split(b"\r\n\r\n", 1)[1])
                elif handshake_done:
                    visible = frames.feed(data)
            fired, swallow = self._fire(direction, visible)
            if not swallow:
                try:
                    dst.sendall(data)
                except OSError:
                    break
            if fired:
                with self._lock:
                    self.drops += 1
                self._cut(pair)
                break
        self._cut(pair)

    def _cut(self, pair: tuple[socket.socket, socket.socket]) -> None:
        with self._lock:
            if pair not in self._pairs:
                return
            self._pairs.remove(pair)
        for s in pair:
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self) -> None:
        self._closed = True
        self.sock.close()
        with self._lock:
            pairs = list(self._pairs)
        for pair in pairs:
            self._cut(pair)
        self._accept.join(5)
        for t in self._threads:
            t.join(5)


@pytest.fixture
def proxy() -> Any:
    p = DropProxy()
    yield p
    p.close()


def proxied_client(options: ClaudeAgentOptions, proxy: DropProxy) -> ClaudeClient:
    transport = WebSocketTransport(
        str(options.cli_path), build_args(options), build_env(options), str(options.cwd), route=proxy.route
    )
    return ClaudeClient(options, transport=transport)


def once_and_in_order(messages: list[Any]) -> None:
    uuids = [m.uuid for m in messages if getattr(m, "uuid", None)]
    assert len(uuids) == len(set(uuids)), "a message came through twice"


SLOW = Reply([{"type": "text", "text": "tick " * 60}], chunk=5, delay=0.03)


def test_drop_mid_stream_and_twice_in_one_turn(make_options: OptionsFactory, api: MockMessagesAPI, proxy: DropProxy) -> None:
    api.enqueue(SLOW)
    deltas = [0]

    def nth_delta(n: int) -> Trigger:
        def hit(data: bytes) -> bool:
            deltas[0] += data.count(b"content_block_delta")
            return deltas[0] >= n

        return hit

    proxy.drop_after_cli_sends(nth_delta(5))
    proxy.drop_after_cli_sends(nth_delta(25))
    with proxied_client(make_options(include_partial_messages=True), proxy) as client:
        client.query("talk")
        messages = list(client.receive_response(timeout=60))
    assert proxy.drops >= 2
    once_and_in_order(messages)
    streamed = "".join(m.event["delta"]["text"] for m in messages if isinstance(m, StreamEvent) and m.event["type"] == "content_block_delta")
    assert streamed == "tick " * 60  # every delta once, in order
    assert [m for m in messages if isinstance(m, AssistantMessage)][-1].content == [TextBlock("tick " * 60)]
    assert isinstance(messages[-1], ResultMessage) and messages[-1].subtype == "success"
    assert len(api.message_requests()) == 1


def test_drop_between_turns(make_options: OptionsFactory, api: MockMessagesAPI, proxy: DropProxy) -> None:
    proxy.drop_after_cli_sends(lambda data: b'"type":"result"' in data)
    with proxied_client(make_options(), proxy) as client:
        client.query("one")
        messages = list(client.receive_response(timeout=60))
        client.query("two")
        messages += list(client.receive_response(timeout=60))
    assert proxy.drops == 1
    once_and_in_order(messages)
    assert [m.result for m in messages if isinstance(m, ResultMessage)] == ["pong", "pong"]
    assert [r.last_user_text() for r in api.message_requests()] == ["one", "two"]


def test_prompt_lost_in_the_drop_is_sent_again(make_options: OptionsFactory, api: MockMessagesAPI, proxy: DropProxy) -> None:
    """Regression: a user prompt in flight when the WebSocket died was never re-sent; the turn hung."""
    with proxied_client(make_options(), proxy) as client:
        client.query("one")
        list(client.receive_response(timeout=60))
        proxy.swallow_and_drop(lambda data: b'"content":"two"' in data)
        client.query("two")
        messages = list(client.receive_response(timeout=60))
    assert proxy.drops == 1
    once_and_in_order(messages)
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "pong"
    # "one" was re-sent too: the CLI dropped it by its uuid, so each prompt made one turn
    assert [r.last_user_text() for r in api.message_requests()] == ["one", "two"]


def test_permission_answer_lost_in_the_drop(
    make_options: OptionsFactory, api: MockMessagesAPI, proxy: DropProxy, home: Any
) -> None:
    api.enqueue(tool_use("Bash", {"command": "echo ran >> ran.txt"}), text("done"))
    asked: list[str] = []

    def allow(name: str, data: dict[str, Any], ctx: Any) -> PermissionResultAllow:
        asked.append(name)
        return PermissionResultAllow()

    proxy.swallow_and_drop(lambda data: b'"behavior":"allow"' in data)
    with proxied_client(make_options(can_use_tool=allow), proxy) as client:
        client.query("run it")
        messages = list(client.receive_response(timeout=60))
    assert proxy.drops == 1 and asked == ["Bash"]
    once_and_in_order(messages)
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "done"
    assert (home / "work" / "ran.txt").read_text() == "ran\n"  # the tool ran once
    assert len(api.message_requests()) == 2


def test_control_request_lost_in_the_drop(make_options: OptionsFactory, api: MockMessagesAPI, proxy: DropProxy) -> None:
    with proxied_client(make_options(control_timeout=30), proxy) as client:
        client.query("one")
        list(client.receive_response(timeout=60))
        proxy.swallow_and_drop(lambda data: b'"subtype":"set_permission_mode"' in data)
        client.set_permission_mode("acceptEdits")  # answered after the reconnect
        client.query("two")
        messages = list(client.receive_response(timeout=60))
    assert proxy.drops == 1
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "pong"
    assert len(api.message_requests()) == 2


def test_message_over_the_limit_ends_the_session(make_options: OptionsFactory, api: MockMessagesAPI, transport: str) -> None:
    """Regression: the server closed with 1009, the CLI reconnected and replayed the same
    message, again and again; query() never ended."""
    api.enqueue(text("x" * 300_000))
    options = make_options(max_buffer_size=64 * 1024)
    with pytest.raises(CLIJSONDecodeError, match="exceeded maximum buffer size of 65536 bytes"):
        list(query("big", options, timeout=30))
