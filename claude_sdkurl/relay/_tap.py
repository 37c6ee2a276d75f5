"""How the relay sees every session: a tap (:mod:`claude_sdkurl._engine.transport.taps`) that wraps
each new session's transport, over stdio or WebSocket alike, and hands the hub a copy of each
chunk both ways. The copy is an append to the hub's inbox; the session's own path is unchanged.
"""

from __future__ import annotations

import threading
from typing import Any

from .. import ide
from .._engine.transport import Transport, TransportCallbacks
from ._hub import Hub, secret_values


class RelayTransport(Transport):
    """``inner`` with every chunk read and every line written shown to ``hub``; lines the relay
    writes (a frontend's message, an interrupt) go to ``inner`` between the session's own."""

    def __init__(self, inner: Transport, plan: Any, hub: Hub) -> None:
        self.inner = inner
        self.name = inner.name
        self.can_end_input = inner.can_end_input
        self._hub = hub
        self._send_lock = threading.Lock()
        args = list(getattr(plan, "args", None) or [])
        env = dict(getattr(plan, "env", None) or {})
        self.watched = hub.add_session(
            inner.name,
            self._inject,
            hidden="--await-claim" in args,  # a spare: shown once claimed
            literals=secret_values(env),
            cwd=getattr(plan, "cwd", None),
        )
        # where this session's CLI looks for IDE lockfiles (the page's Bind IDE looks there too);
        # nothing else of its environment is kept
        self.watched.ide_env = {k: env[k] for k in ("HOME", "CLAUDE_CONFIG_DIR") if k in env}
        options = getattr(plan, "options", None)
        # the dynamic MCP servers the session starts with (the page's Bind IDE merges into them)
        self.watched.mcp_servers = ide.dynamic_servers(getattr(options, "mcp_servers", None))
        self._ended = False

    def _inject(self, line: str) -> None:
        with self._send_lock:
            self.inner.send(line)
        self._hub.feed(self.watched, "sdk", line)

    def start(self, callbacks: TransportCallbacks) -> None:
        hub, watched = self._hub, self.watched

        def on_data(chunk: bytes | str) -> None:
            hub.feed(watched, "cli", chunk)
            callbacks.on_data(chunk)

        def on_exit(code: int | None, stderr: str) -> None:
            self._end(code, None)
            callbacks.on_exit(code, stderr)

        def on_error(error: BaseException) -> None:
            self._end(None, f"{type(error).__name__}: {error}")
            if callbacks.on_error is not None:
                callbacks.on_error(error)

        self.inner.start(TransportCallbacks(on_data=on_data, on_exit=on_exit, on_reconnect=callbacks.on_reconnect,
                                            on_error=on_error))  # fmt: skip

    def _end(self, code: int | None, error: str | None) -> None:
        if not self._ended:
            self._ended = True
            self._hub.ended(self.watched, code, error)

    def wait_ready(self, timeout: float) -> None:
        self.inner.wait_ready(timeout)

    def send(self, line: str) -> None:
        with self._send_lock:
            self.inner.send(line)
        self._hub.feed(self.watched, "sdk", line)

    def end_input(self) -> None:
        self._hub.input_ended(self.watched)
        self.inner.end_input()

    def close(self) -> None:
        try:
            self.inner.close()
        finally:
            self._end(None, None)

    def abort(self) -> None:
        try:
            self.inner.abort()
        finally:
            self._end(None, None)

    def signal_interrupt(self) -> bool:
        return self.inner.signal_interrupt()


class RelayTap:
    """The tap a serving relay installs: it never replaces a transport, it wraps each one."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub

    def replace(self, options: Any) -> Transport | None:
        return None

    def wrap(self, transport: Transport, plan: Any) -> Transport:
        return RelayTransport(transport, plan, self.hub)
