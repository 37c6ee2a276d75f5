"""The transport interface the session core is written against."""

from __future__ import annotations

import abc
import time
from collections.abc import Callable

from attrs import define, field


class BurstPacer:
    """Called after each read: in a burst of small reads, waits a moment so the next read takes many lines.

    The CLI writes every message on its own; a reader as fast as the writer
    gets one line per read and wakes the consumer once per line. When small
    reads (under ``small`` bytes) come closer together than ``gap`` seconds,
    waiting ``delay`` seconds lets a few dozen lines pile up in the pipe or
    socket, which then cost one read, one parse call and one handoff. Outside
    bursts nothing waits, so a lone message is not delayed; inside one, a line
    waits at most ``delay``. Large reads never wait: data already arrives in
    big pieces, and waiting would only stall a writer facing a full pipe.
    Measured on a 20,000-event turn: ~40 lines per read instead of ~1.5, and
    less than half the CPU.
    """

    __slots__ = ("gap", "delay", "small", "_last")

    def __init__(self, gap: float = 0.002, delay: float = 0.0005, small: int = 16 * 1024) -> None:
        self.gap = gap
        self.delay = delay
        self.small = small
        self._last = 0.0

    def __call__(self, size: int) -> None:
        if size >= self.small:
            self._last = 0.0
            return
        now = time.monotonic()
        if now - self._last < self.gap:
            time.sleep(self.delay)
        self._last = now


@define
class TransportCallbacks:
    """What a transport reports, from its own threads.

    ``on_data`` gets raw bytes or text frames in order. ``on_exit`` is called
    exactly once, after the last ``on_data``, with the CLI's exit code (or
    ``None`` if the transport ended without a process exit, e.g. a custom
    transport) and the tail of its standard error. ``on_reconnect`` is called
    after the CLI came back on a new connection (WebSocket only); lines sent
    from it go out after those queued meanwhile. ``on_error`` ends the session
    with a typed error the transport found (e.g. a message over the size limit).
    """

    on_data: Callable[[bytes | str], None]
    on_exit: Callable[[int | None, str], None]
    on_reconnect: Callable[[], None] | None = field(default=None)
    on_error: Callable[[BaseException], None] | None = field(default=None)


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
