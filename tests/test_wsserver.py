"""The WebSocket server the WebSocket transport runs on, against the ``websockets`` client as a peer."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http import HTTPStatus

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.http11 import Request
from websockets.sync.client import ClientConnection, connect

from claude_sdkurl._engine.transport._wsserver import Connection, ConnectionClosedError, Listener, Refusal


class Server:
    def __init__(self, max_size: int = 1 << 20) -> None:
        self.received: list[bytes] = []
        self.calls = 0
        self.conns: list[Connection] = []
        self.got = threading.Condition()
        self.listener = Listener("127.0.0.1", self.handle, max_size=max_size, close_timeout=1.0)
        self.url = f"ws://127.0.0.1:{self.listener.port}/x"

    def decide(self, request: Request) -> None:
        if request.headers.get("Authorization") != "Bearer ok":
            raise Refusal(HTTPStatus.UNAUTHORIZED, "Unauthorized\n")

    def handle(self, conn: Connection) -> None:
        if not conn.handshake(self.decide):
            return
        with self.got:
            self.conns.append(conn)
            self.got.notify_all()
        conn.run(self.on_message)

    def on_message(self, data: bytes) -> None:
        with self.got:
            self.calls += 1
            self.received.extend(line + b"\n" for line in data.split(b"\n")[:-1])
            self.got.notify_all()

    def wait(self, predicate: object, timeout: float = 5.0) -> None:
        with self.got:
            assert self.got.wait_for(predicate, timeout)  # type: ignore[arg-type]


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.listener.close()


def client(server: Server) -> ClientConnection:
    return connect(server.url, additional_headers={"Authorization": "Bearer ok"}, open_timeout=5, compression=None)


def test_messages_in_order_fragments_joined_newline_added(server: Server) -> None:
    with client(server) as ws:
        ws.send('{"n": 1}\n')
        ws.send(['{"n": ', "2}\n"])  # one message in two fragments
        ws.send('{"n": 3}')  # no trailing newline: still a line of its own
        server.wait(lambda: len(server.received) == 3)
    assert server.received == [b'{"n": 1}\n', b'{"n": 2}\n', b'{"n": 3}\n']


def test_send_ping_and_close_code(server: Server) -> None:
    with client(server) as ws:
        server.wait(lambda: server.conns)
        conn = server.conns[0]
        conn.send_text('{"hello": true}\n')
        assert ws.recv(timeout=5) == '{"hello": true}\n'
        assert ws.ping().wait(5)  # the server answers pings
        assert conn.ping(5)  # and the client answers the server's
        conn.close(4001, "session ended")
        with pytest.raises(ConnectionClosed) as info:
            ws.recv(timeout=5)
        assert info.value.rcvd is not None and info.value.rcvd.code == 4001
    assert conn.done.wait(5)
    assert not conn.ping(0.2)
    with pytest.raises(ConnectionClosedError):
        conn.send_text("{}\n")


def test_refused_before_upgrade(server: Server) -> None:
    with pytest.raises(InvalidStatus) as info:
        connect(server.url, additional_headers={"Authorization": "Bearer nope"}, open_timeout=5)
    assert info.value.response.status_code == 401
    assert server.conns == []


def test_oversized_message_closes_with_1009() -> None:
    s = Server(max_size=1000)
    try:
        with client(s) as ws:
            ws.send("x" * 2000)
            with pytest.raises(ConnectionClosed) as info:
                ws.recv(timeout=5)
            assert info.value.rcvd is not None and info.value.rcvd.code == 1009
        assert s.received == []
    finally:
        s.listener.close()


def test_close_does_not_wait_for_a_silent_peer() -> None:
    before = set(threading.enumerate())  # (only this test's threads: another's, left by its failure, is not this one's)
    s = Server()
    silent = socket.create_connection(("127.0.0.1", s.listener.port))  # never sends its handshake
    try:
        time.sleep(0.2)
        t0 = time.monotonic()
        s.listener.close()
        assert time.monotonic() - t0 < 2.0
        assert not [t for t in set(threading.enumerate()) - before if t.name.startswith("claude-sdkurl-ws")]
    finally:
        silent.close()


def test_accept_survives_running_out_of_descriptors(server: Server) -> None:
    """Regression: any OSError from accept() (EMFILE) ended the accept loop for good, so the
    CLI could never reconnect."""
    import errno

    real = server.listener.socket
    failures = [0]

    class Flaky:
        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

        def accept(self) -> object:
            if failures[0] < 3:
                failures[0] += 1
                raise OSError(errno.EMFILE, "Too many open files")
            return real.accept()

    server.listener.socket = Flaky()  # type: ignore[assignment]
    with client(server) as ws:
        ws.send('{"after": "EMFILE"}\n')
        server.wait(lambda: server.received)
    assert failures[0] == 3


def test_pending_handshakes_are_bounded(server: Server) -> None:
    """Regression: a thread and a descriptor per silent socket, without limit (300 = ~400 threads)."""
    from claude_sdkurl._engine.transport._wsserver import MAX_PENDING_HANDSHAKES

    before = threading.active_count()
    silent = [socket.create_connection(("127.0.0.1", server.listener.port)) for _ in range(100)]
    try:
        time.sleep(0.5)
        assert threading.active_count() - before <= MAX_PENDING_HANDSHAKES + 1
    finally:
        for s in silent:
            s.close()
    # once they are gone, a real peer gets through
    deadline = time.monotonic() + 5
    while True:
        try:
            with client(server) as ws:
                ws.send('{"ok": true}\n')
                server.wait(lambda: server.received)
            break
        except (OSError, ConnectionClosed):
            assert time.monotonic() < deadline
            time.sleep(0.1)


def test_a_real_peer_gets_through_a_flood_of_silent_sockets(server: Server) -> None:
    """Hundreds of silent sockets held open must not lock a reconnecting CLI out for the
    handshake timeout: the oldest pending handshakes are dropped for newcomers."""
    silent = [socket.create_connection(("127.0.0.1", server.listener.port)) for _ in range(300)]
    try:
        time.sleep(0.3)
        started = time.monotonic()
        with client(server) as ws:
            ws.send('{"through": "the flood"}\n')
            server.wait(lambda: server.received)
        assert time.monotonic() - started < 2.0
    finally:
        for s in silent:
            s.close()


def test_silent_handshake_times_out(monkeypatch: pytest.MonkeyPatch, server: Server) -> None:
    import claude_sdkurl._engine.transport._wsserver as wsserver

    monkeypatch.setattr(wsserver, "HANDSHAKE_TIMEOUT", 0.3)
    silent = socket.create_connection(("127.0.0.1", server.listener.port))
    try:
        silent.settimeout(3)
        assert silent.recv(10) == b""  # the server gave up on it
    finally:
        silent.close()


def test_a_write_that_would_wait_takes_nothing_and_says_so(server: Server) -> None:
    """``try_send_frames`` (the relay's shared writer): a socket that is full takes nothing, which
    is said with 0 (the caller gives the rest to a thread that may wait), never an error that
    would close the connection; another write under way is not waited for either."""
    from claude_sdkurl._engine.transport._wsserver import frame_text

    peer = connect(server.url, additional_headers={"Authorization": "Bearer ok"}, open_timeout=5, compression=None, close_timeout=1)
    try:
        server.wait(lambda: server.conns)
        conn = server.conns[0]
        frame = frame_text("x" * 60_000)
        with conn._write_lock:  # another writer's frame under way: not waited for
            assert conn.try_send_frames(frame) == 0
        taken = 0
        for _ in range(2000):  # the peer reads nothing: the socket fills up
            sent = conn.try_send_frames(frame)
            if sent == 0:
                break
            taken += sent
        assert sent == 0 and taken > 0
        assert conn.try_send_frames(frame) == 0  # still full: 0 again, and no error
    finally:
        peer.close()
