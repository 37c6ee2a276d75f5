"""In-memory reference implementation of :class:`SessionStore`.

Ported from claude-agent-sdk 0.2.187 ``_internal/session_store.py`` (MIT licence,
Anthropic PBC). Its methods are plain (the official ones are ``async``) and
thread-safe: the transcript mirror appends from a thread of its own.
"""

from __future__ import annotations

import threading
import time

from ..sessions._summary import fold_session_summary
from ..types import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStore,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
)

__all__ = ["InMemorySessionStore"]


def _key_to_string(key: SessionKey) -> str:
    parts = [key["project_key"], key["session_id"]]
    subpath = key.get("subpath")
    if subpath:
        parts.append(subpath)
    return "/".join(parts)


class InMemorySessionStore(SessionStore):
    """In-memory :class:`SessionStore` for tests and development.

    Entries live in a ``dict`` keyed by ``project_key/session_id`` (plus
    ``/subpath``). Data is lost when the process exits: use
    :class:`~claude_sdkurl.stores.SQLiteSessionStore` to keep it.
    """

    def __init__(self) -> None:
        self._store: dict[str, list[SessionStoreEntry]] = {}
        self._mtimes: dict[str, int] = {}
        self._summaries: dict[tuple[str, str], SessionSummaryEntry] = {}
        self._last_mtime = 0
        self._lock = threading.RLock()

    def _next_mtime(self) -> int:
        """Storage write time in epoch ms, strictly increasing within the process."""
        now_ms = int(time.time() * 1000)
        if now_ms <= self._last_mtime:
            now_ms = self._last_mtime + 1
        self._last_mtime = now_ms
        return now_ms

    def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        with self._lock:
            k = _key_to_string(key)
            self._store.setdefault(k, []).extend(entries)
            now_ms = self._next_mtime()
            # The per-session summary is kept up to date here so list_session_summaries()
            # never re-reads; subagent subpaths don't contribute to it.
            if key.get("subpath") is None:
                sk = (key["project_key"], key["session_id"])
                folded = fold_session_summary(self._summaries.get(sk), key, entries)
                folded["mtime"] = now_ms  # storage write time, the clock list_sessions() shows
                self._summaries[sk] = folded
            self._mtimes[k] = now_ms

    def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        with self._lock:
            entries = self._store.get(_key_to_string(key))
            return None if entries is None else list(entries)

    def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        with self._lock:
            prefix = project_key + "/"
            return [
                {"session_id": k[len(prefix) :], "mtime": self._mtimes.get(k, 0)}
                for k in self._store
                if k.startswith(prefix) and "/" not in k[len(prefix) :]
            ]

    def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        with self._lock:
            return [s for (pk, _), s in self._summaries.items() if pk == project_key]

    def delete(self, key: SessionKey) -> None:
        with self._lock:
            k = _key_to_string(key)
            self._store.pop(k, None)
            self._mtimes.pop(k, None)
            # Deleting the main transcript cascades to its subkeys; a delete with a
            # subpath removes only that one.
            if key.get("subpath") is None:
                self._summaries.pop((key["project_key"], key["session_id"]), None)
                prefix = f"{key['project_key']}/{key['session_id']}/"
                for store_key in [sk for sk in self._store if sk.startswith(prefix)]:
                    self._store.pop(store_key, None)
                    self._mtimes.pop(store_key, None)

    def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        with self._lock:
            prefix = f"{key['project_key']}/{key['session_id']}/"
            return [k[len(prefix) :] for k in self._store if k.startswith(prefix)]

    # ------------------------------------------------------------------ test helpers

    def get_entries(self, key: SessionKey) -> list[SessionStoreEntry]:
        """Every entry of ``key`` (empty list if absent)."""
        with self._lock:
            return list(self._store.get(_key_to_string(key), []))

    @property
    def size(self) -> int:
        """Number of stored sessions (main transcripts only)."""
        with self._lock:
            count = 0
            for k in self._store:
                first_slash = k.find("/")
                if first_slash != -1 and "/" not in k[first_slash + 1 :]:
                    count += 1
            return count

    def clear(self) -> None:
        with self._lock:
            self._store.clear()
            self._mtimes.clear()
            self._summaries.clear()
            self._last_mtime = 0
