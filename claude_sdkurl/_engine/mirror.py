"""Transcript mirroring: ``transcript_mirror`` frames from the CLI into a :class:`SessionStore`.

With ``session_store`` set the CLI runs with ``--session-mirror`` and, beside
its messages, writes ``{"type": "transcript_mirror", "filePath": ..., "entries":
[...]}`` frames: what it just appended to its local transcript. The protocol
core turns them into :class:`~claude_sdkurl._engine.protocol.MirrorFrame` events (never
shown to the user) and the session hands them to a :class:`MirrorBatcher`,
which appends them to the store as the official SDK's
``TranscriptMirrorBatcher`` does:

* frames are buffered and coalesced per file; a ``result`` message is held back
  until everything before it is in the store (``flush``), so a caller who sees
  the result can read the turn from the store;
* ``"eager"`` (or a buffer over 500 entries / 1 MiB) appends in the background
  at once;
* a failing ``append`` is tried 3 times (0.2 s, 0.8 s apart); a call that does
  not return within ``send_timeout`` is not retried (it may still land). Then
  the batch is reported through ``on_error`` (the session shows a
  :class:`MirrorErrorMessage`) and the turn goes on: the local transcript is
  already durable.

Threads: every flush runs on the batcher's one worker thread, in order, so a
flush never overtakes an eager append. Each ``append`` call runs on a helper
thread the worker waits for at most ``send_timeout``: a store that hangs keeps
only that helper (user code cannot be cancelled; if the call returns later, the
batch lands then), and the worker goes on with the next batch. So the session's
reader waits for a flush at most about ``send_timeout`` per file (plus the
retries' pauses for a failing store), and ``close()`` the same.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from . import trace as _trace
from .paths import key_for_file
from .storecall import StoreTimeout, call_bounded
from ..types import SessionKey, SessionStore

logger = logging.getLogger("claude_sdkurl.mirror")

# The official batcher's numbers: a background append past 500 entries or 1 MiB buffered,
# 60 s for one append, three tries 0.2 s and 0.8 s apart.
BUFFER_ENTRIES = 500
BUFFER_BYTES = 1 << 20
SEND_TIMEOUT_SECONDS = 60.0
PAUSES = (0.2, 0.8)  # before the second and the third try

OnError = Callable[[SessionKey | None, str], None]


class MirrorBatcher:
    """Buffers mirror frames and appends them to ``store`` (see the module doc)."""

    def __init__(
        self,
        store: SessionStore,
        projects_dir: str,
        on_error: OnError,
        *,
        eager: bool = False,
        send_timeout: float | None = None,
    ) -> None:
        self.store = store
        self.projects_dir = projects_dir
        self.on_error = on_error
        self.send_timeout = SEND_TIMEOUT_SECONDS if send_timeout is None else send_timeout
        self.max_pending_entries = 0 if eager else BUFFER_ENTRIES
        self.max_pending_bytes = 0 if eager else BUFFER_BYTES
        self._lock = threading.Lock()
        self._pending: list[tuple[str, list[Any]]] = []
        self._pending_entries = 0
        self._pending_bytes = 0
        self._jobs: list[tuple[list[tuple[str, list[Any]]], Future[None]]] = []
        self._wake = threading.Condition(self._lock)
        self._worker: threading.Thread | None = None
        self._closed = False
        self.parent_span: Any = None  # the run's span: store calls are traced under it

    # ------------------------------------------------------------------ producer side (reader thread)

    def enqueue(self, file_path: str, entries: list[Any]) -> None:
        """Buffer one frame; start a background append when over the thresholds."""
        weight = len(json.dumps(entries))  # sized as the official batcher sizes it
        with self._lock:
            if self._closed:
                return
            self._pending.append((file_path, entries))
            self._pending_entries, self._pending_bytes = self._pending_entries + len(entries), self._pending_bytes + weight
            if self._pending_entries > self.max_pending_entries or self._pending_bytes > self.max_pending_bytes:
                self._submit_locked()

    def flush(self) -> None:
        """Append everything buffered so far, and wait (bounded) until it is in the store."""
        with self._lock:
            if self._closed and not self._pending:
                return
            future = self._submit_locked()
        self._wait(future)

    def close(self) -> None:
        """Final flush, then stop the worker. Never raises."""
        try:
            self.flush()
        except Exception as e:  # pragma: no cover - defensive
            logger.debug("mirror close flush failed: %s", e)
        with self._lock:
            self._closed = True
            self._wake.notify_all()
            worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join(1.0)

    # ------------------------------------------------------------------ worker side

    def _submit_locked(self) -> Future[None]:
        items, self._pending = self._pending, []
        self._pending_entries = 0
        self._pending_bytes = 0
        future: Future[None] = Future()
        self._jobs.append((items, future))
        if self._worker is None:
            self._worker = threading.Thread(target=self._work, name="claude-sdkurl-mirror", daemon=True)
            self._worker.start()
        self._wake.notify()
        return future

    def _wait(self, future: Future[None]) -> None:
        budget = self.send_timeout * (len(PAUSES) + 1) + sum(PAUSES)
        try:
            future.result(budget)
        except Exception:  # the worker reports its own errors; a wait that ran out is logged
            logger.warning("SessionStore mirror: still appending after %.0f s; going on", budget)

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._jobs and not self._closed:
                    self._wake.wait()
                if not self._jobs:
                    return
                items, future = self._jobs.pop(0)
            try:
                with _trace.attached(self.parent_span):
                    failures = self._append_all(items)
                for key, error in failures:
                    try:
                        self.on_error(key, error)
                    except Exception as e:  # pragma: no cover - defensive
                        logger.error("SessionStore mirror: on_error raised: %s", e)
            except Exception as e:  # pragma: no cover - defensive: never let the worker die
                logger.error("SessionStore mirror: flush raised: %s", e)
            finally:
                future.set_result(None)

    def _append_all(self, items: list[tuple[str, list[Any]]]) -> list[tuple[SessionKey | None, str]]:
        # Coalesce by file so each file gets one append per flush; first-seen order kept.
        by_path: dict[str, list[Any]] = {}
        for file_path, entries in items:
            by_path.setdefault(file_path, []).extend(entries)
        errors: list[tuple[SessionKey | None, str]] = []
        for file_path, batch in by_path.items():
            if not batch:
                continue
            key = key_for_file(file_path, self.projects_dir)
            if key is None:
                logger.warning(
                    "SessionStore: dropping mirror frame: filePath %s is not under %s -- the CLI's "
                    "CLAUDE_CONFIG_DIR likely differs from this process's (custom env / container?)",
                    file_path,
                    self.projects_dir,
                )
                continue
            error = self._append_with_retries(key, batch)
            if error is not None:
                logger.error("SessionStore mirror: append failed for %s: %s", file_path, error)
                errors.append((key, error))
        return errors

    def _append_with_retries(self, key: SessionKey, entries: list[Any]) -> str | None:
        last = ""
        for pause in (0.0, *PAUSES):
            time.sleep(pause)
            try:
                call_bounded(self.send_timeout, self.store.append, key, entries)
                return None
            except StoreTimeout:
                # Not retried: the call may still land, and a retry would race it.
                return f"SessionStore.append() timed out after {self.send_timeout:g}s"
            except Exception as e:  # the store is user code
                last = str(e) or type(e).__name__
        return last
