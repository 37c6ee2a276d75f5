"""Prewarm: start Claude Code and its connection before the prompt is known.

Starting the CLI, connecting and ``initialize`` take ~0.5 s; a turn with a
fast model takes a few tens of ms. :func:`prewarm` keeps sessions ready for
:func:`query` calls that pass the *same* options object::

    options = ClaudeAgentOptions(model="claude-sonnet-4-6")
    pool = prewarm(options)          # returns at once; a CLI starts in the background
    ...
    for msg in query("hi", options): # takes the warm session; another one starts behind it
        ...
    pool.close()                     # or let interpreter exit close it

For a :class:`ClaudeClient`, call ``client.prewarm()`` instead of ``connect()``.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ._session import Session
from .types import ClaudeAgentOptions

logger = logging.getLogger("claude_sdkurl.prewarm")

_pools: dict[int, WarmPool] = {}
_pools_lock = threading.Lock()


class WarmPool:
    """Keeps up to ``size`` started sessions for one options object."""

    def __init__(self, options: ClaudeAgentOptions, size: int = 1) -> None:
        if not isinstance(options, ClaudeAgentOptions):
            raise TypeError("prewarm() needs the ClaudeAgentOptions object you will pass to query()")
        if size < 1:
            raise ValueError("size must be at least 1")
        self.options = options
        self.size = size
        self._ready: list[Session] = []
        self._starting = 0
        self._cond = threading.Condition()
        self._closed = False
        self._threads: list[threading.Thread] = []
        self.errors: list[BaseException] = []
        self._fill()

    def _fill(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._threads = [t for t in self._threads if t.is_alive()]
            while len(self._ready) + self._starting < self.size:
                self._starting += 1
                t = threading.Thread(target=self._start_one, name="claude-sdkurl-prewarm", daemon=True)
                self._threads.append(t)
                t.start()

    def _start_one(self) -> None:
        session = Session(self.options)
        try:
            session.start()
        except BaseException as e:  # reported to the next take(), which then starts normally
            logger.warning("prewarming a session failed: %s", e)
            with self._cond:
                self._starting -= 1
                self.errors.append(e)
                self._cond.notify_all()
            return
        with self._cond:
            self._starting -= 1
            if self._closed:
                keep = False
            else:
                self._ready.append(session)
                keep = True
            self._cond.notify_all()
        if not keep:
            session.close()

    def take(self, wait: bool = True) -> Session | None:
        """A started session, or ``None``; with ``wait``, waits for one being started."""
        with self._cond:
            while True:
                while self._ready:
                    session = self._ready.pop(0)
                    if session.ended is None:
                        break
                    session.close()
                else:
                    if wait and self._starting and not self._closed:
                        self._cond.wait()
                        continue
                    session = None
                break
        self._fill()
        return session

    def close(self) -> None:
        """Stop the warm sessions and forget this pool."""
        with self._cond:
            self._closed = True
            ready, self._ready = self._ready, []
            threads = list(self._threads)
        for session in ready:
            session.close()
        for t in threads:
            t.join(30)
        with _pools_lock:
            if _pools.get(id(self.options)) is self:
                del _pools[id(self.options)]

    def __enter__(self) -> WarmPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def prewarm(options: ClaudeAgentOptions, size: int = 1) -> WarmPool:
    """Keep ``size`` sessions started for ``query(..., options)`` with this very options object."""
    with _pools_lock:
        old = _pools.get(id(options))
    if old is not None:
        old.close()
    pool = WarmPool(options, size)
    with _pools_lock:
        _pools[id(options)] = pool
    return pool


def take_warm(options: ClaudeAgentOptions) -> Session | None:
    """The warm session for ``options``, if :func:`prewarm` was called for it."""
    with _pools_lock:
        pool = _pools.get(id(options))
    if pool is None or pool.options is not options:
        return None
    return pool.take()


def close_all() -> None:
    """Close every warm pool (also done at interpreter exit)."""
    with _pools_lock:
        pools = list(_pools.values())
    for pool in pools:
        pool.close()


import atexit  # noqa: E402

atexit.register(close_all)
