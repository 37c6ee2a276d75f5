"""The callback worker pool: the threads that run user callbacks for one session.

Who runs here: ``can_use_tool``, hooks, in-process MCP tools, elicitation
answers (the handlers of :mod:`claude_sdkurl._engine.control`), never the reader.

Threads (all daemon): one per callback running at once. A callback that hangs
holds its own thread, never the others: when no thread is idle a new one
starts; idle ones are reused and leave after :data:`IDLE_WORKER_SECONDS`
without work, down to ``keep``. :meth:`Workers.shutdown` is bounded: a callback
that never returns is abandoned (its answer is never sent) rather than block
``close()`` or interpreter exit, which ``ThreadPoolExecutor`` would.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Any

from .deadline import Deadline

logger = logging.getLogger("claude_sdkurl.session")

CALLBACK_WORKERS = 8  # callback threads kept when idle; more start while callbacks run long
IDLE_WORKER_SECONDS = 30.0


class Workers:
    """Daemon threads for user callbacks: one per callback running at once.

    (see the module doc)."""

    def __init__(self, keep: int) -> None:
        self._keep = keep  # threads that stay when idle
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads: set[threading.Thread] = set()
        self._idle = 0
        self._started = 0
        self._lock = threading.Lock()

    def submit(self, fn: Any, *args: Any) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1  # an idle worker will take this job
            else:
                t = threading.Thread(target=self._loop, name=f"claude-sdkurl-callback-{self._started}", daemon=True)
                self._started += 1
                self._threads.add(t)
                t.start()
            self._jobs.put((fn, args))

    def _loop(self) -> None:
        me = threading.current_thread()
        while True:
            try:
                job = self._jobs.get(timeout=IDLE_WORKER_SECONDS)
            except queue.Empty:
                with self._lock:
                    # Leave only if no job was promised to an idle thread meanwhile.
                    if self._idle > 0 and len(self._threads) > self._keep and self._jobs.empty():
                        self._idle -= 1
                        self._threads.discard(me)
                        return
                continue
            if job is None:
                return
            fn, args = job
            try:
                fn(*args)
            except BaseException:  # pragma: no cover - _run_handler catches everything
                logger.exception("callback worker failed")
            with self._lock:
                self._idle += 1

    def shutdown(self, timeout: float = 2.0) -> None:
        with self._lock:
            threads = list(self._threads)
        for _ in threads:
            self._jobs.put(None)
        deadline = Deadline(timeout)
        me = threading.current_thread()
        for t in threads:
            if t is not me:
                t.join(deadline.left())
            if t.is_alive() and t is not me:
                logger.warning("a callback is still running after close(); abandoning its thread %s", t.name)
