"""How the relay sees every session: a tap (:mod:`claude_sdkurl._engine.transport.taps`) that wraps
each new session's transport, over stdio or WebSocket alike, and hands the hub a copy of each
chunk both ways. The copy is an append to the hub's inbox; the session's own path is unchanged.
"""

from __future__ import annotations

import collections
import re
import threading
from typing import Any

from .. import ide
from .._engine.transport import Transport, TransportCallbacks
from ._hub import Hub, secret_values
from ._launch import claim


_USER = re.compile(r'\s*\{\s*"type"\s*:\s*"user"')
_INTERRUPT = re.compile(r'"subtype"\s*:\s*"interrupt"')
# a result line holds this (compact JSON; 2.1.330 puts it after other keys, not first); within a
# string the quotes would be escaped, so elsewhere it appears only as another object's type
_RESULT = b'"type":"result"'


def _resumed_id(args: list[str]) -> str | None:
    """The session id a CLI started with ``args`` resumes and writes on (``--resume``), or
    ``None`` (none, or a fork: it writes a session of its own)."""
    if "--fork-session" in args:
        return None
    for i, arg in enumerate(args):
        if arg.startswith("--resume="):
            return arg[len("--resume="):] or None
        if arg == "--resume" and i + 1 < len(args):
            return args[i + 1]
    return None


class RelayTransport(Transport):
    """``inner`` with every chunk read and every line written shown to ``hub``; lines the relay
    writes (a frontend's message, an interrupt) go to ``inner`` between the session's own.

    Whose turn the CLI is answering: the user lines written, the session's and the relay's, in
    the order they went out (one lock), each answered by one result, in that order. While a
    relay's message is among them the chunks read are cut after each result line, and the
    session hears (``on_outside``) where someone else's turn begins and ends, so that the
    program can tell that turn's messages from its own (:func:`~claude_sdkurl._engine.session.outside_of`).
    """

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
            resumed=any(a in ("--resume", "--continue") or a.startswith("--resume=") for a in args),
        )
        self.watched.resuming = _resumed_id(args)  # (a client with no prompt yet says no session id: it holds this one)
        claim(self.watched)  # (one a page asked for: see _launch)
        # where this session's CLI looks for IDE lockfiles (the page's Bind IDE looks there too);
        # nothing else of its environment is kept
        self.watched.ide_env = {k: env[k] for k in ("HOME", "CLAUDE_CONFIG_DIR") if k in env}
        options = getattr(plan, "options", None)
        # what it was launched with, until its CLI says (a session with no prompt yet says nothing)
        self.watched.model = getattr(options, "model", None) if isinstance(getattr(options, "model", None), str) else None
        mode = getattr(options, "permission_mode", None)
        self.watched.permission_mode = mode if isinstance(mode, str) else None
        # the dynamic MCP servers the session starts with (the page's Bind IDE merges into them)
        self.watched.mcp_servers = ide.dynamic_servers(getattr(options, "mcp_servers", None))
        self._ended = False
        self._owners: collections.deque[bool] = collections.deque()  # each unanswered user line: the relay's?
        self._theirs = 0  # how many of them are the relay's
        self._callbacks: TransportCallbacks | None = None
        self._carry = b""  # the end of the last chunk read: a result's mark cut in two
        self._open_result = False  # a result line began and its newline has not come yet
        self._telling = False  # the session was told the lines are someone else's turn

    def _inject(self, line: str) -> None:
        with self._send_lock:
            if _USER.match(line):
                self._owners.append(True)
                self._theirs += 1
            elif _INTERRUPT.search(line) and self._owners and not self._owners[0]:
                callbacks = self._callbacks  # the session's turn under way: its result will say who stopped it
                if callbacks is not None and callbacks.on_outside is not None:
                    callbacks.on_outside("interrupt")
            self.inner.send(line)
        self._hub.feed(self.watched, "sdk", line)

    def _read(self, chunk: bytes | str, callbacks: TransportCallbacks) -> None:
        """Hand ``chunk`` on, cut after each result line while a relay's turn is asked for, the
        session told whose the lines after each cut are."""
        if not self._owners:
            callbacks.on_data(chunk)
            return
        data = chunk if isinstance(chunk, bytes) else chunk.encode()
        if self.name == "websocket":  # one message a chunk: handed on whole
            self._tell(callbacks)
            callbacks.on_data(chunk)
            if _RESULT in data:
                self._answered()
            self._tell(callbacks)
            return
        ends = self._result_ends(data)
        if not self._theirs and not self._telling:  # only the session's own: count, nothing to cut
            for _ in ends:
                self._answered()
            callbacks.on_data(chunk)
            return
        start = 0
        for end in ends:
            self._tell(callbacks)
            callbacks.on_data(data[start:end])
            self._answered()
            start = end
        self._tell(callbacks)
        if start < len(data):
            callbacks.on_data(data[start:])

    def _answered(self) -> None:
        """A result: the oldest user line written has its answer."""
        with self._send_lock:
            if self._owners and self._owners.popleft():
                self._theirs -= 1

    def _tell(self, callbacks: TransportCallbacks) -> None:
        theirs = bool(self._owners) and self._owners[0]
        if theirs != self._telling and callbacks.on_outside is not None:
            callbacks.on_outside("turn" if theirs else "own")
        self._telling = theirs

    def _result_ends(self, data: bytes) -> list[int]:
        """Where in ``data`` each result line ends (just after its newline)."""
        ends = []
        at = 0
        if self._open_result:
            newline = data.find(b"\n")
            if newline < 0:
                self._carry = (self._carry + data)[-len(_RESULT):]
                return []
            ends.append(newline + 1)
            self._open_result = False
            at = newline + 1
        joined = self._carry + data
        shift = len(self._carry)
        # after the open line's end; else from the carry on (a mark the last chunk's end cut in two;
        # a whole one there ended the last chunk, so its line was the open one)
        search = at + shift if at else 0
        while True:
            hit = joined.find(_RESULT, search)
            if hit < 0:
                break
            newline = joined.find(b"\n", hit)
            if newline < 0:
                self._open_result = True
                break
            ends.append(newline + 1 - shift)
            search = newline + 1  # (one result a line, whatever else it holds)
        self._carry = joined[-len(_RESULT):]
        return ends

    def start(self, callbacks: TransportCallbacks) -> None:
        hub, watched = self._hub, self.watched
        self._callbacks = callbacks

        def on_data(chunk: bytes | str) -> None:
            hub.feed(watched, "cli", chunk)
            self._read(chunk, callbacks)

        def on_exit(code: int | None, stderr: str) -> None:
            self._end(code, None)
            callbacks.on_exit(code, stderr)

        def on_error(error: BaseException) -> None:
            self._end(None, f"{type(error).__name__}: {error}")
            if callbacks.on_error is not None:
                callbacks.on_error(error)

        self.inner.start(TransportCallbacks(on_data=on_data, on_exit=on_exit, on_reconnect=callbacks.on_reconnect,
                                            on_error=on_error, on_outside=callbacks.on_outside))  # fmt: skip

    def _end(self, code: int | None, error: str | None) -> None:
        if not self._ended:
            self._ended = True
            self._hub.ended(self.watched, code, error)

    def wait_ready(self, timeout: float) -> None:
        self.inner.wait_ready(timeout)

    def send(self, line: str) -> None:
        with self._send_lock:
            if _USER.match(line):
                self._owners.append(False)
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
