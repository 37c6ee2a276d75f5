"""The transport interface the session core is written against: :class:`Transport` and the
:class:`TransportCallbacks` it reports through."""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(slots=True)
class TransportCallbacks:
    """What a transport reports, from its own threads.

    ``on_data`` gets raw bytes or text frames in order. ``on_exit`` is called
    exactly once, after the last ``on_data``, with the CLI's exit code (or
    ``None`` if the transport ended without a process exit, e.g. a custom
    transport) and the tail of its standard error. ``on_reconnect`` is called
    after the CLI came back on a new connection (WebSocket only); lines sent
    from it go out after those queued meanwhile. ``on_error`` ends the session
    with a typed error the transport found (e.g. a message over the size limit).
    ``on_outside`` hears of what something other than the session wrote to the CLI (a relay
    frontend, see :mod:`claude_sdkurl.relay`), in order with ``on_data`` on the reading thread:
    ``"turn"`` (the lines from here to a result answer someone else's message), ``"own"`` (the
    session's own turns again), ``"interrupt"`` (someone else interrupted the turn under way:
    its result is the one that follows).
    """

    on_data: Callable[[bytes | str], None]
    """Gets each frame read from the CLI (bytes or text), in order."""
    on_exit: Callable[[int | None, str], None]
    """Called once, after the last ``on_data``, with the exit code (``None``: no process) and the tail of
    standard error."""
    on_reconnect: Callable[[], None] | None = field(default=None)
    """Called when the CLI came back on a new connection (WebSocket only)."""
    on_error: Callable[[BaseException], None] | None = field(default=None)
    """Ends the session with a typed error the transport found (a line over the size limit)."""
    on_outside: Callable[[str], None] | None = field(default=None)
    """Hears what something other than the session wrote to the CLI: ``"turn"``, ``"own"`` or ``"interrupt"``."""


class Transport(abc.ABC):
    """Carries NDJSON lines to and from one CLI.

    Implementations: :class:`StdioTransport` (the CLI's stdin/stdout) and
    :class:`WebSocketTransport` (``claude --sdk-url``). A custom transport, such
    as a test double, implements these four methods.
    """

    #: short name, e.g. ``"stdio"`` or ``"websocket"``
    name: str = "custom"
    #: whether :meth:`end_input` leaves the CLI running to finish its work (stdio's EOF on
    #: stdin); where it cannot, the session waits for the end of the run before calling it
    can_end_input: bool = False

    def end_input(self) -> None:
        """No more input: the CLI should finish and exit (its exit ends the stream).

        The default, for transports that cannot close input alone, is :meth:`close`.
        """
        self.close()

    @abc.abstractmethod
    def start(self, callbacks: TransportCallbacks) -> None:
        """Start the CLI (or whatever stands for it) and begin delivering data."""

    @abc.abstractmethod
    def wait_ready(self, timeout: float) -> None:
        """Block until lines can reach the CLI; raise a typed error if they never will."""

    @abc.abstractmethod
    def send(self, line: str) -> None:
        """Send one complete NDJSON line (it already ends with a newline)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Ask the CLI to end, make sure it does, and release every thread and descriptor."""

    def abort(self) -> None:
        """As :meth:`close`, without waiting for a graceful exit (the stream is broken)."""
        self.close()

    def cli_pid(self) -> int | None:
        """The local process id of the CLI (or of what runs it elsewhere), once started;
        ``None`` where there is none. A transport that wraps another (``self.inner``) asks it."""
        inner = getattr(self, "inner", None)
        return inner.cli_pid() if isinstance(inner, Transport) else None

    def signal_interrupt(self) -> bool:
        """Stop the turn under way as Ctrl-C does in a terminal, for a CLI whose input is
        closed (no ``interrupt`` request can reach it any more): it ends the turn, keeps the
        partial answer and the interruption in its transcript, and exits. ``False`` where this
        transport cannot (the default); the session then stops the CLI instead."""
        return False
