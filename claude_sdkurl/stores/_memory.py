"""A :class:`~claude_sdkurl.types.SessionStore` in a dict: for tests and trying things out.

The same contract as the official ``InMemorySessionStore`` (every conformance
test), with plain methods instead of ``async`` ones, safe to call from several
threads at once (the transcript mirror appends from a thread of its own).
Nothing survives the process: :class:`~claude_sdkurl.stores.SQLiteSessionStore`
keeps the same data in a file.
"""

from __future__ import annotations

import threading
import time

from ..sessions import fold_session_summary
from ..types import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStore,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
)

__all__ = ["InMemorySessionStore"]

# (project_key, session_id, subpath or "") -> what is kept under it
_Slot = tuple[str, str, str]


def _slot(key: SessionKey) -> _Slot:
    return key["project_key"], key["session_id"], key.get("subpath") or ""


class InMemorySessionStore(SessionStore):
    """Entries per key in memory, plus each session's folded summary record.

    ``mtime`` is the time of the key's last append in epoch milliseconds, made
    strictly increasing within the store so that two appends never tie.
    """

    def __init__(self) -> None:
        self._guard = threading.RLock()
        self._entries: dict[_Slot, list[SessionStoreEntry]] = {}
        self._written: dict[_Slot, int] = {}
        self._records: dict[tuple[str, str], SessionSummaryEntry] = {}
        self._clock = 0

    def _tick(self) -> int:
        self._clock = max(self._clock + 1, int(time.time() * 1000))
        return self._clock

    def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        slot = _slot(key)
        with self._guard:
            self._entries.setdefault(slot, []).extend(entries)
            when = self._written[slot] = self._tick()
            if key.get("subpath") is None:  # a subagent's entries leave its session's summary alone
                record = fold_session_summary(self._records.get(slot[:2]), key, entries)
                record["mtime"] = when
                self._records[slot[:2]] = record

    def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        with self._guard:
            kept = self._entries.get(_slot(key))
            return list(kept) if kept is not None else None

    def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        with self._guard:
            return [
                {"session_id": slot[1], "mtime": self._written.get(slot, 0)}
                for slot in self._entries
                if slot[0] == project_key and not slot[2]
            ]

    def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        with self._guard:
            return [record for (project, _), record in self._records.items() if project == project_key]

    def delete(self, key: SessionKey) -> None:
        """Remove ``key``; a session's main key takes its subagents' keys along."""
        target = _slot(key)
        whole = key.get("subpath") is None
        with self._guard:
            for slot in [s for s in self._entries if s == target or (whole and s[:2] == target[:2])]:
                del self._entries[slot]
                self._written.pop(slot, None)
            if whole:
                self._records.pop(target[:2], None)

    def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        with self._guard:
            return [s[2] for s in self._entries if s[:2] == (key["project_key"], key["session_id"]) and s[2]]

    # ------------------------------------------------------------------ for tests

    def get_entries(self, key: SessionKey) -> list[SessionStoreEntry]:
        """Every entry under ``key`` (an empty list when there is none)."""
        return self.load(key) or []

    @property
    def size(self) -> int:
        """How many sessions (main transcripts) are stored."""
        with self._guard:
            return sum(1 for s in self._entries if not s[2])

    def clear(self) -> None:
        with self._guard:
            self._entries.clear()
            self._written.clear()
            self._records.clear()
            self._clock = 0
