"""Read pacing for the transports' reader threads (stdio and the WebSocket server)."""

from __future__ import annotations

import time


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
