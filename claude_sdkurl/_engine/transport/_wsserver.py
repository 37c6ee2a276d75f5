"""A small threaded WebSocket server on ``websockets``' sans-I/O protocol.

``websockets.sync`` reads each connection on a thread of its own and hands
every message to the application's thread through a queue: two threads and a
wake-up per message. Here the thread that reads the socket parses the frames
and calls ``on_message`` itself, so a message costs one ``recv`` and no
handoff; the session's queue to the consumer is the only one left.

:class:`Listener` accepts on one thread and runs each connection on a thread
of its own: handshake first (the ``decide`` callback may refuse it with an
HTTP status before any WebSocket exists), then the read loop. Sending is
thread-safe. Only what ``claude --sdk-url`` needs is here: text messages,
fragments, ping/pong, the closing handshake; no compression or subprotocols.
"""

from __future__ import annotations

import logging
import os
import select
import selectors
import socket
import threading
import time
from collections.abc import Callable
from http import HTTPStatus

from websockets.exceptions import PayloadTooBig
from websockets.frames import Frame, Opcode
from websockets.http11 import Request
from websockets.protocol import CLOSED, OPEN
from websockets.server import ServerProtocol

from ._pacing import BurstPacer

logger = logging.getLogger("claude_sdkurl.transport.websocket")

RECV_SIZE = 256 * 1024
HANDSHAKE_TIMEOUT = 10.0  # seconds a peer may take to send its upgrade request
MAX_PENDING_HANDSHAKES = 16  # connections still in their handshake; past it the oldest is dropped
HANDSHAKE_WARNING_SECONDS = 60.0  # at most one warning this often about dropped handshakes
ACCEPT_BACKOFF = 0.1  # seconds to wait after accept() failed (e.g. out of descriptors)


class ConnectionClosedError(Exception):
    """The connection is closed or closing; nothing more can be sent on it."""


class Refusal(Exception):
    """Raised by a ``decide`` callback to answer the upgrade with an HTTP error."""

    def __init__(self, status: HTTPStatus, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


class Reply(Refusal):
    """Raised by a ``decide`` callback to answer a plain HTTP ``GET`` (no upgrade) with a
    body of its own: a page served next to the WebSocket endpoints. The connection closes
    after it, as after a refusal."""

    def __init__(self, status: HTTPStatus, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(status, "")
        self.body = body
        self.content_type = content_type
        self.headers = dict(headers or {})


def frame_text(text: str) -> bytes:
    """``text`` as one final, unmasked WebSocket text frame (what a server sends; no extension
    is ever negotiated here)."""
    payload = text.encode("utf-8")
    size = len(payload)
    if size < 126:
        head = bytes((0x81, size))
    elif size < 1 << 16:
        head = bytes((0x81, 126)) + size.to_bytes(2, "big")
    else:
        head = bytes((0x81, 127)) + size.to_bytes(8, "big")
    return head + payload


def _as_line(message: bytes) -> bytes:
    """A whole WebSocket message as one NDJSON line (newline-terminated)."""
    return message if message.endswith(b"\n") else message + b"\n"


class Connection:
    """One accepted WebSocket connection, read on the thread that called :meth:`run`."""

    def __init__(self, sock: socket.socket, max_size: int, close_timeout: float) -> None:
        self._sock = sock
        self.protocol = ServerProtocol(max_size=max_size)
        self.request: Request | None = None
        self._close_timeout = close_timeout
        self._proto_lock = threading.Lock()  # the protocol object is not thread-safe
        self._write_lock = threading.Lock()  # whole frames, one writer at a time
        self._pongs: dict[bytes, threading.Event] = {}
        self._abort_timer: threading.Timer | None = None
        self.done = threading.Event()
        self.too_big: PayloadTooBig | None = None  # the peer sent a message over max_size
        self.handshake_done = False
        self.dropped = False  # abort() was called: its thread is on its way out

    # ------------------------------------------------------------------ writing

    def _write_locked(self, chunks: list[bytes]) -> None:
        """Write what the protocol produced; the caller holds the write lock."""
        for data in chunks:
            if data:
                self._sock.sendall(data)
            else:  # the protocol's way of asking for a half-close
                try:
                    self._sock.shutdown(socket.SHUT_WR)
                except OSError:
                    pass

    def _produce(self, make: Callable[[], None], wait: float = -1) -> None:
        # The write lock is taken first so frames reach the socket in the order the protocol made them.
        # ``wait``: how long another writer (maybe blocked on a peer that stopped reading) may hold it.
        if not self._write_lock.acquire(timeout=wait):
            raise ConnectionClosedError("the connection is stuck in a write (the peer is not reading)")
        try:
            with self._proto_lock:
                make()
                out = self.protocol.data_to_send()
            self._write_locked(out)
        finally:
            self._write_lock.release()

    def _send(self, make: Callable[[], None], wait: float = -1) -> None:
        def checked() -> None:
            if self.protocol.state is not OPEN:
                raise ConnectionClosedError("the WebSocket connection is closed")
            make()

        try:
            self._produce(checked, wait)
        except OSError as e:
            raise ConnectionClosedError(str(e)) from e

    def send_text(self, text: str) -> None:
        """Send one text message; raises :class:`ConnectionClosedError` once closing."""
        data = text.encode("utf-8")
        self._send(lambda: self.protocol.send_text(data))

    def send_frames(self, data: bytes) -> None:
        """Write whole frames made by :func:`frame_text` (one write for several messages). A
        server's frames are not masked, so one line framed once goes to every watcher as it is."""
        if not self._write_lock.acquire(timeout=-1):  # pragma: no cover - blocking acquire
            raise ConnectionClosedError("the connection is stuck")
        try:
            with self._proto_lock:
                if self.protocol.state is not OPEN:
                    raise ConnectionClosedError("the WebSocket connection is closed")
            self._sock.sendall(data)
        except OSError as e:
            raise ConnectionClosedError(str(e)) from e
        finally:
            self._write_lock.release()

    def try_send_frames(self, data: bytes) -> int:
        """As much of :meth:`send_frames`'s ``data`` as the socket takes now, without waiting:
        the bytes written (0 while another write is under way, or the socket is full); the rest
        is the caller's to write, before anything else."""
        if not self._write_lock.acquire(blocking=False):
            return 0
        try:
            with self._proto_lock:
                if self.protocol.state is not OPEN:
                    raise ConnectionClosedError("the WebSocket connection is closed")
            return self._sock.send(data, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return 0
        except OSError as e:
            raise ConnectionClosedError(str(e)) from e
        finally:
            self._write_lock.release()

    def ping(self, timeout: float) -> bool:
        """Whether the peer answers a ping within ``timeout`` seconds."""
        payload = os.urandom(4)
        waiter = threading.Event()
        self._pongs[payload] = waiter
        try:
            self._send(lambda: self.protocol.send_ping(payload), wait=timeout)
            return waiter.wait(timeout) and not self.done.is_set()
        except ConnectionClosedError:
            return False
        finally:
            self._pongs.pop(payload, None)

    def close(self, code: int, reason: str) -> None:
        """Start the closing handshake; the socket is dropped after ``close_timeout`` at the latest
        (at once if a write is stuck on a peer that does not read)."""
        try:
            self._send(lambda: self.protocol.send_close(code, reason), wait=1.0)
        except ConnectionClosedError:
            if not self.done.is_set() and self.protocol.state is OPEN:
                self.abort()
        self._arm_abort()

    def _arm_abort(self) -> None:
        with self._proto_lock:
            if self._abort_timer is not None or self.done.is_set():
                return
            self._abort_timer = threading.Timer(self._close_timeout, self.abort)
            self._abort_timer.daemon = True
            self._abort_timer.name = "claude-sdkurl-ws-close"
        self._abort_timer.start()

    def abort(self) -> None:
        """Drop the TCP connection without a closing handshake."""
        self.dropped = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the reader's recv()
        except OSError:
            pass

    # ------------------------------------------------------------------ reading

    def _feed(self, data: bytes) -> list[Frame | Request]:
        with self._proto_lock:
            if data:
                self.protocol.receive_data(data)
            else:
                self.protocol.receive_eof()
            events = self.protocol.events_received()
            out = self.protocol.data_to_send()
        if out:
            try:
                with self._write_lock:
                    self._write_locked(out)
            except OSError:
                pass
        return events  # type: ignore[return-value]

    def _recv(self) -> bytes:
        try:
            return self._sock.recv(RECV_SIZE)
        except OSError:
            return b""

    def handshake(self, decide: Callable[[Request], None]) -> bool:
        """Read the upgrade request and answer it; ``True`` if the connection is open."""
        try:
            return self._handshake(decide)
        finally:
            self.handshake_done = True

    def _handshake(self, decide: Callable[[Request], None]) -> bool:
        self._sock.settimeout(HANDSHAKE_TIMEOUT)  # a silent peer does not hold a thread for long
        while self.request is None:
            data = self._recv()
            for event in self._feed(data):
                if isinstance(event, Request):
                    self.request = event
            if not data or self.protocol.handshake_exc is not None:
                return False
        self._sock.settimeout(None)
        try:
            decide(self.request)
            response = self.protocol.accept(self.request)
            response.headers.pop("Server", None)
        except Refusal as r:
            response = self.protocol.reject(r.status, r.text)
            if isinstance(r, Reply):
                response.body = r.body
                # (websockets' Headers add a value on assignment: the old ones go first)
                for name, value in {"Content-Length": str(len(r.body)), "Content-Type": r.content_type, **r.headers}.items():
                    if name in response.headers:
                        del response.headers[name]
                    response.headers[name] = value
        except Exception:
            logger.exception("deciding on a WebSocket upgrade failed")
            response = self.protocol.reject(HTTPStatus.INTERNAL_SERVER_ERROR, "Internal error\n")
        try:
            self._produce(lambda: self.protocol.send_response(response))
        except OSError:
            return False
        return self.protocol.state is OPEN

    def run(self, on_message: Callable[[bytes], None]) -> None:
        """Read until the connection ends, calling ``on_message`` with whole messages.

        Messages are newline-terminated NDJSON lines; those completed by one
        ``recv`` are passed in one call (joined, each ending with a newline), so
        a burst costs the session one wake-up instead of one per message.
        """
        fragments: list[bytes] | None = None
        batch: list[bytes] = []
        pace = BurstPacer()
        while True:
            data = self._recv()
            for event in self._feed(data):
                if not isinstance(event, Frame):
                    continue
                opcode = event.opcode
                payload = event.data
                if type(payload) is not bytes:
                    payload = bytes(payload)
                if opcode is Opcode.TEXT or opcode is Opcode.BINARY:
                    if event.fin:
                        batch.append(_as_line(payload))
                    else:
                        fragments = [payload]
                elif opcode is Opcode.CONT and fragments is not None:
                    fragments.append(payload)
                    if event.fin:
                        batch.append(_as_line(b"".join(fragments)))
                        fragments = None
                elif opcode is Opcode.PONG:
                    waiter = self._pongs.get(payload)
                    if waiter is not None:
                        waiter.set()
            if batch:
                on_message(batch[0] if len(batch) == 1 else b"".join(batch))
                batch = []
            if isinstance(self.protocol.parser_exc, PayloadTooBig):
                self.too_big = self.protocol.parser_exc
            if not data or self.protocol.state is CLOSED:
                return
            if self.protocol.close_expected():
                self._arm_abort()
            pace(len(data))

    def finish(self) -> None:
        """Release the socket and wake anyone waiting on this connection."""
        self.done.set()
        for waiter in list(self._pongs.values()):
            waiter.set()
        with self._proto_lock:
            timer, self._abort_timer = self._abort_timer, None
        if timer is not None:
            timer.cancel()
        try:
            self._sock.close()
        except OSError:
            pass


class Listener:
    """Accepts on ``host``:``port`` (any free port by default) and runs ``handle(connection)`` on
    a thread per connection."""

    def __init__(
        self, host: str, handle: Callable[[Connection], None], max_size: int, close_timeout: float, port: int = 0
    ) -> None:
        self._handle = handle
        self._max_size = max_size
        self._close_timeout = close_timeout
        self.socket = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
        self.socket.setblocking(False)
        self.port: int = self.socket.getsockname()[1]
        self._wake_r, self._wake_w = socket.socketpair()
        self._lock = threading.Lock()
        self._conns: dict[Connection, threading.Thread] = {}  # open connections and their threads
        self._stopped = False
        self._warned_at: float | None = None
        self._dropped_handshakes = 0
        self._thread = threading.Thread(target=self._accept_loop, name=f"claude-sdkurl-ws-{self.port}", daemon=True)
        self._thread.start()

    def _accept_loop(self) -> None:
        with selectors.DefaultSelector() as sel:
            sel.register(self.socket, selectors.EVENT_READ)
            sel.register(self._wake_r, selectors.EVENT_READ)
            while True:
                ready = [key.fileobj for key, _ in sel.select()]
                if self._wake_r in ready:
                    return
                try:
                    sock, _ = self.socket.accept()
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError as e:
                    # Out of descriptors (EMFILE), or memory: the pending connection stays in the
                    # backlog. Back off and keep serving; the CLI's reconnects depend on it.
                    logger.warning("accept() failed (%s); retrying", e)
                    if select.select([self._wake_r], [], [], ACCEPT_BACKOFF)[0]:
                        return
                    continue
                with self._lock:
                    waiting = [c for c in self._conns if not c.handshake_done and not c.dropped]  # oldest first
                if len(waiting) >= MAX_PENDING_HANDSHAKES:
                    # Full: drop the oldest pending handshake, not the newcomer. A CLI completes
                    # its handshake in milliseconds; what has waited longest is a silent (or slow)
                    # peer, and refusing newcomers would let a flood of them lock the CLI's
                    # reconnect out for the whole handshake timeout.
                    # Said once a minute at most: any local process can open silent sockets,
                    # and each must not cost a line on the program's stderr.
                    self._dropped_handshakes += 1
                    now = time.monotonic()
                    if self._warned_at is None or now - self._warned_at >= HANDSHAKE_WARNING_SECONDS:
                        logger.warning("%d handshakes pending: dropping the oldest (%d dropped since the last warning)",
                                       len(waiting), self._dropped_handshakes)  # fmt: skip
                        self._warned_at, self._dropped_handshakes = now, 0
                    else:
                        logger.debug("%d handshakes pending: dropping the oldest", len(waiting))
                    waiting[0].abort()
                sock.setblocking(True)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                conn = Connection(sock, self._max_size, self._close_timeout)
                with self._lock:
                    if self._stopped:
                        conn.finish()
                        return
                    t = threading.Thread(target=self._run, args=(conn,), name="claude-sdkurl-ws-conn", daemon=True)
                    self._conns[conn] = t
                t.start()

    def _run(self, conn: Connection) -> None:
        try:
            self._handle(conn)
        except Exception:
            logger.exception("WebSocket connection handler failed")
        finally:
            conn.finish()
            with self._lock:
                self._conns.pop(conn, None)

    def close(self, timeout: float = 5.0) -> None:
        """Stop accepting and wait for the accept thread and the connection threads."""
        with self._lock:
            self._stopped = True
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        me = threading.current_thread()
        if self._thread is not me:
            self._thread.join(timeout)
        with self._lock:
            conns = dict(self._conns)
        for conn in conns:  # whatever is still open (e.g. a peer that never finished its handshake)
            conn.abort()
        for t in conns.values():
            if t is not me:
                t.join(timeout)
        for s in (self.socket, self._wake_r, self._wake_w):
            s.close()


__all__ = ["Connection", "ConnectionClosedError", "Listener", "Refusal", "Reply", "frame_text"]
