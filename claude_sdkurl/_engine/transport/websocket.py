"""NDJSON over a WebSocket the CLI opens to us (``claude --sdk-url``, CLI <= 2.1.120).

A server thread listens on 127.0.0.1, port 0. The CLI gets a 256-bit random
token through ``CLAUDE_CODE_SESSION_ACCESS_TOKEN`` (never on argv) and must
present it as ``Authorization: Bearer`` on the upgrade; anything else is
answered 401 before any WebSocket exists. Requests carrying a browser
``Origin`` are refused with 403.

Library: ``websockets``' sans-I/O protocol (see docs/guide/transports.md, "Why websockets"),
driven by :mod:`._wsserver`: the thread that reads the socket parses the
frames and hands each message straight to the session, with no per-message
handoff between threads. The upgrade is decided before any WebSocket exists.
"""

from __future__ import annotations

import collections
import hmac
import os
import logging
import secrets
import threading
import uuid
from collections.abc import Callable
from http import HTTPStatus

from websockets.http11 import Request

from ..._errors import CLIConnectionError, CLIJSONDecodeError, ExitedBeforeConnectingError, TransportNotSupportedError
from ._wsserver import Connection, ConnectionClosedError, Listener, Refusal
from .base import Transport, TransportCallbacks
from .process import ABORT_TERM_GRACE, CLIProcess

logger = logging.getLogger("claude_sdkurl.transport.websocket")

TOKEN_ENV = "CLAUDE_CODE_SESSION_ACCESS_TOKEN"
#: The CLI reads its token from this inherited descriptor instead (once; it keeps it in memory),
#: so the token is not in the environment its tools (a Bash ``env``) inherit.
TOKEN_FD_ENV = "CLAUDE_CODE_WEBSOCKET_AUTH_FILE_DESCRIPTOR"

#: Seconds a CLI that lost its connection (and lives) has to come back. Measured on 2.1.120:
#: it reconnects 0.8-1.1 s after a drop, whatever the close code, and exits if that one
#: attempt is refused; so one still away after ten times that is not coming back.
RECONNECT_WAIT = 10.0
#: Close code that makes the CLI exit at once, with status 0, without reconnecting.
CLOSE_SESSION_ENDED = 4001


class WebSocketTransport(Transport):
    """Serves one CLI over ``--sdk-url ws://127.0.0.1:PORT/...``.

    Lines go through an outbox and a writer thread, so :meth:`send` never
    blocks (a CLI that stops reading cannot stall the caller, a control request
    or :meth:`close`). Lines sent while the CLI is not connected (before it
    first connects, or between a drop and its reconnect) wait in the outbox and
    go out, in order, when it connects. A reconnect with the right token
    replaces the old connection. A message over ``max_size`` ends the session
    with :class:`CLIJSONDecodeError` (the CLI would otherwise replay it on every
    reconnect).
    """

    name = "websocket"

    def __init__(
        self,
        cli: str,
        args: list[str],
        env: dict[str, str],
        cwd: str | None = None,
        *,
        on_stderr: Callable[[str], None] | None = None,
        user: str | None = None,
        host: str = "127.0.0.1",
        max_size: int = 256 * 1024 * 1024,
        route: Callable[[int], int] | None = None,
    ) -> None:
        self._cli = cli
        self._args = args
        self._env = env
        self._cwd = cwd
        self._on_stderr = on_stderr
        self._user = user
        self._host = host
        self._max_size = max_size
        self._token = secrets.token_urlsafe(32)  # 256 bits
        self._expected_auth = f"Bearer {self._token}".encode()
        self._route = route  # tests: our port -> the port the CLI is told (a proxy in between)
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._conn: Connection | None = None
        self._outbox: collections.deque[str] = collections.deque()
        self._writer: threading.Thread | None = None
        self._connected = threading.Event()
        self._reconnect_timer: threading.Timer | None = None
        self._handlers_idle = threading.Condition(self._lock)
        self._active_handlers = 0
        self._closed = False
        self._listener: Listener | None = None
        self._waiter: threading.Thread | None = None
        self.process: CLIProcess | None = None
        self.url: str | None = None
        self.connections = 0
        self.rejected = 0

    # ------------------------------------------------------------------ server side

    def _decide(self, request: Request) -> None:
        """Refuse an upgrade before any WebSocket exists (raises :class:`Refusal`)."""
        values = request.headers.get_all("Authorization")
        auth = values[0] if len(values) == 1 else ""  # none, or two (ambiguous): refused alike
        if not hmac.compare_digest(auth.encode("utf-8", "replace"), self._expected_auth):
            self.rejected += 1
            logger.warning("refused a WebSocket upgrade without the session token")
            raise Refusal(HTTPStatus.UNAUTHORIZED, "Unauthorized\n")
        if request.headers.get_all("Origin"):
            self.rejected += 1
            logger.warning("refused a WebSocket upgrade carrying a browser Origin")
            raise Refusal(HTTPStatus.FORBIDDEN, "Forbidden\n")
        if self._closed:
            raise Refusal(HTTPStatus.GONE, "Session closed\n")
        old = self._conn
        if old is not None and old.ping(1.0):
            # One CLI connection per session. A reconnecting CLI has given up on its old
            # connection, which then does not answer a ping; a second client does.
            self.rejected += 1
            logger.warning("refused a second WebSocket connection while the first is alive")
            raise Refusal(HTTPStatus.CONFLICT, "Session already connected\n")

    def _handle(self, conn: Connection) -> None:
        if not conn.handshake(self._decide):
            return
        with self._lock:
            if self._closed:
                conn.close(CLOSE_SESSION_ENDED, "session ended")
                return
            old, self._conn = self._conn, conn
            self._active_handlers += 1
            self.connections += 1
            self._connected.set()
            self._wake.notify_all()  # the writer sends what waited, on the new connection
        callbacks = self._callbacks
        if old is not None:
            old.close(1000, "replaced by a newer connection")
        if self.connections > 1 and callbacks.on_reconnect is not None:
            callbacks.on_reconnect()
        try:
            conn.run(callbacks.on_data)
        except Exception:
            logger.exception("WebSocket handler failed")
        finally:
            with self._lock:
                lost = self._conn is conn
                if lost:
                    self._conn = None
                    self._connected.clear()
                self._active_handlers -= 1
                self._handlers_idle.notify_all()
                if lost and not self._closed:
                    self._watch_reconnect(self.connections)
        if conn.too_big is not None and callbacks.on_error is not None and not self._closed:
            # The CLI would reconnect and replay the same message forever: end the session.
            callbacks.on_error(
                CLIJSONDecodeError(  # the official SDK's texts (the size itself is not known here)
                    f"JSON message exceeded maximum buffer size of {self._max_size} bytes",
                    ValueError(f"Buffer size over {self._max_size} exceeds limit {self._max_size}"),
                )
            )

    def _watch_reconnect(self, count: int) -> None:
        """After a lost connection: if no new one comes within :data:`RECONNECT_WAIT` and the
        CLI still runs, end the session with a typed error (the session then stops the CLI)
        instead of waiting for it forever. Called with the lock held."""

        def check() -> None:
            with self._lock:
                if self._closed or self.connections != count or self._conn is not None:
                    return
            proc = self.process
            if proc is None or proc.returncode is not None:
                return  # it exited: on_exit reports that
            callbacks = self._callbacks
            if callbacks is not None and callbacks.on_error is not None:
                callbacks.on_error(
                    CLIConnectionError(
                        f"Claude Code closed its WebSocket and did not reconnect within {RECONNECT_WAIT:g} s; stopped it"
                    )
                )

        if self._reconnect_timer is not None:
            self._reconnect_timer.cancel()
        self._reconnect_timer = threading.Timer(RECONNECT_WAIT, check)
        self._reconnect_timer.name = "claude-sdkurl-ws-reconnect-watch"
        self._reconnect_timer.daemon = True
        self._reconnect_timer.start()

    # ------------------------------------------------------------------ Transport

    def start(self, callbacks: TransportCallbacks) -> None:
        self._callbacks = callbacks
        self._listener = Listener(self._host, self._handle, max_size=self._max_size, close_timeout=2.0)
        port = self._listener.port if self._route is None else self._route(self._listener.port)
        self.url = f"ws://{self._host}:{port}/claude-sdkurl/{uuid.uuid4().hex}"
        env = dict(self._env)
        env.pop(TOKEN_ENV, None)
        token_r, token_w = os.pipe()
        try:
            try:
                os.write(token_w, self._token.encode())
            finally:
                os.close(token_w)  # closed exactly once: a second close could hit another thread's new fd
            env[TOKEN_FD_ENV] = str(token_r)
            self.process = CLIProcess(
                [self._cli, "--sdk-url", self.url, *self._args],
                env,
                self._cwd,
                stdio=False,
                on_stderr=self._on_stderr,
                user=self._user,
                pass_fds=(token_r,),
            )
        except BaseException:
            self._stop_server()
            raise
        finally:
            os.close(token_r)  # the CLI has its own copy
        self._waiter = threading.Thread(target=self._wait_exit, name=f"claude-sdkurl-wait-{self.process.pid}", daemon=True)
        self._writer = threading.Thread(target=self._write_loop, name=f"claude-sdkurl-wswrite-{self.process.pid}", daemon=True)
        self._waiter.start()
        self._writer.start()

    def _wait_exit(self) -> None:
        proc = self.process
        assert proc is not None
        code = proc.wait()
        # Let the handler deliver the frames that arrived before the exit.
        with self._lock:
            self._handlers_idle.wait_for(lambda: self._active_handlers == 0, timeout=3.0)
        self._callbacks.on_exit(code, proc.stderr_tail())

    def wait_ready(self, timeout: float) -> None:
        proc = self.process
        if proc is None:
            raise CLIConnectionError("transport not started")
        step = 0.02
        waited = 0.0
        while not self._connected.wait(step):
            code = proc.returncode
            if code is not None:
                if self._connected.is_set():
                    return
                tail = proc.stderr_tail()
                refusal = next((ln for ln in tail.splitlines() if "--sdk-url" in ln), None)
                if refusal is not None:
                    raise TransportNotSupportedError(
                        "This Claude Code CLI refuses --sdk-url to a local WebSocket host "
                        "(only CLI <= 2.1.120 accepts it); use transport='stdio' or 'auto'",
                        transport="websocket",
                        cli_message=refusal.strip(),
                    )
                # Over stdio the same early exit is a ProcessError (as in the official SDK):
                # a ProcessError here too, so one except clause serves both transports.
                raise ExitedBeforeConnectingError(
                    f"Command failed with exit code {code} (before connecting to the WebSocket)",
                    exit_code=code,
                    stderr=tail or None,
                )
            waited += step
            if waited >= timeout:
                raise CLIConnectionError(f"Claude Code did not connect to the WebSocket within {timeout:g} s")
            step = min(step * 2, 0.2)

    def send(self, line: str) -> None:
        with self._wake:
            if self._closed:
                raise CLIConnectionError("the session is closed")
            self._outbox.append(line)
            self._wake.notify_all()

    def _write_loop(self) -> None:
        """Send the outbox, in order, on whatever connection is current; a line leaves the
        outbox once written, and waits for the next connection if the current one fails."""
        while True:
            with self._wake:
                while not self._closed and (not self._outbox or self._conn is None):
                    self._wake.wait()
                if self._closed:
                    return
                conn, line = self._conn, self._outbox[0]
            assert conn is not None
            try:
                conn.send_text(line)
            except ConnectionClosedError:
                with self._wake:
                    if self._conn is conn:  # going away: wait for its handler or a new connection
                        self._wake.wait(0.05)
                continue
            with self._wake:
                if self._outbox and self._outbox[0] is line:
                    self._outbox.popleft()

    def drop_connection(self, code: int = 1011, reason: str = "dropped") -> None:
        """Close the current connection as a network fault would (the CLI reconnects).

        For fault-injection tests; close codes 1002, 4001 and 4003 make the CLI exit instead.
        """
        with self._lock:
            conn = self._conn
        if conn is not None:
            conn.close(code, reason)

    def _stop_server(self) -> None:
        if self._listener is not None:
            self._listener.close()

    def cli_pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def abort(self) -> None:
        self.close(graceful=False)

    def close(self, graceful: bool = True) -> None:
        with self._wake:
            if self._closed:
                return
            self._closed = True
            self._wake.notify_all()
            conn = self._conn
            if self._reconnect_timer is not None:
                self._reconnect_timer.cancel()
        if conn is not None:
            try:
                conn.close(CLOSE_SESSION_ENDED, "session ended")  # the CLI exits 0 at once
            except Exception:
                pass
        if self.process is not None:
            if graceful:
                self.process.stop(grace=3.0)
            else:
                self.process.stop(grace=0.0, term_grace=ABORT_TERM_GRACE)
        self._stop_server()
        me = threading.current_thread()
        for t in (self._waiter, self._writer):
            if t is not None and t is not me:
                t.join(10.0)
