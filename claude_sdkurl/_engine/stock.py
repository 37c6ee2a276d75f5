"""Things started on background threads and kept until taken: the common part of
:class:`~claude_sdkurl.prewarm.WarmPool` (warm sessions) and the spare pool (parked CLIs).

Threads: one per item being started (named by the pool); each start is bounded by what it
runs (the session's connect and ``initialize`` timeouts). ``_cond`` guards every field."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("claude_sdkurl.prewarm")


class Stock:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._starting = 0
        self._closed = False
        self._threads: list[threading.Thread] = []
        self.errors: list[BaseException] = []

    def _launch(self, target: Callable[[], None], name: str) -> None:
        """Start one item on a thread of its own (called with ``_cond`` held)."""
        self._threads = [t for t in self._threads if t.is_alive()]
        self._starting += 1
        t = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(t)
        t.start()

    def _failed(self, what: str, error: BaseException) -> None:
        """An item could not be started: kept in ``errors``; the next take starts cold."""
        logger.warning("%s failed: %s", what, error)
        with self._cond:
            self._starting -= 1
            self.errors.append(error)
            self._cond.notify_all()

    def _arrived(self, shelf: list[Any], item: Any) -> bool:
        """An item is ready: on ``shelf``, or ``False`` when the pool closed meanwhile (the
        caller then stops it)."""
        with self._cond:
            self._starting -= 1
            keep = not self._closed
            if keep:
                shelf.append(item)
            self._cond.notify_all()
        return keep

    def _shut(self, shelf: list[Any]) -> tuple[list[Any], list[threading.Thread]]:
        """Mark the pool closed: what was on ``shelf`` (now empty), for the caller to stop, and
        the threads still starting items, for it to join (what they start is stopped as it
        arrives: see :meth:`_arrived`)."""
        with self._cond:
            self._closed = True
            items = list(shelf)
            shelf.clear()
            threads = list(self._threads)
            self._cond.notify_all()
        return items, threads
