"""A :class:`SessionStore` in one SQLite file (stdlib ``sqlite3``, no server).

Several processes of one machine may share the file (SQLite locks it; WAL
mode lets readers run beside a writer). Entries are kept verbatim as JSON
text, in append order; an entry whose ``uuid`` the key already holds is
skipped, so a retried mirror batch or a second ``import_session_to_store``
does not duplicate anything. A per-session summary is folded inside the
appending transaction (:func:`fold_session_summary`), so
``list_sessions_from_store`` needs no per-session load.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time

from ..sessions import fold_session_summary
from ..types import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
)
from ._common import ConnectedStore, entry_uuid

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    project_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    subpath TEXT NOT NULL,
    uuid TEXT,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_key ON entries (project_key, session_id, subpath, seq);
CREATE UNIQUE INDEX IF NOT EXISTS entries_uuid ON entries (project_key, session_id, subpath, uuid)
    WHERE uuid IS NOT NULL;
CREATE TABLE IF NOT EXISTS streams (
    project_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    subpath TEXT NOT NULL,
    mtime INTEGER NOT NULL,
    PRIMARY KEY (project_key, session_id, subpath)
);
CREATE TABLE IF NOT EXISTS summaries (
    project_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    mtime INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (project_key, session_id)
);
"""


class SQLiteSessionStore(ConnectedStore):
    """Session transcripts in the SQLite database at ``path`` (created if missing).

    ``":memory:"`` gives a private in-process database. Safe to share between
    threads (one connection, serialised) and between processes (SQLite's own
    locking, waiting up to ``timeout`` seconds for a busy file).
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=timeout, check_same_thread=False, isolation_level=None)
        if self.path != ":memory:":
            self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __repr__(self) -> str:
        return f"SQLiteSessionStore({self.path!r})"

    # ------------------------------------------------------------------ SessionStore

    def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        if not entries:
            return
        pk, sid, sub = key["project_key"], key["session_id"], key.get("subpath") or ""
        rows = [(pk, sid, sub, entry_uuid(e), json.dumps(e, separators=(",", ":"))) for e in entries]
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")  # takes the write lock first: the mtime read below is ours
            try:
                cur.executemany(
                    "INSERT OR IGNORE INTO entries (project_key, session_id, subpath, uuid, data) VALUES (?,?,?,?,?)",
                    rows,
                )
                (last,) = cur.execute("SELECT COALESCE(MAX(mtime), 0) FROM streams").fetchone()
                mtime = max(int(time.time() * 1000), last + 1)  # strictly increasing per file
                cur.execute(
                    "INSERT INTO streams VALUES (?,?,?,?) ON CONFLICT DO UPDATE SET mtime = excluded.mtime",
                    (pk, sid, sub, mtime),
                )
                if not sub:
                    row = cur.execute(
                        "SELECT mtime, data FROM summaries WHERE project_key = ? AND session_id = ?", (pk, sid)
                    ).fetchone()
                    prev: SessionSummaryEntry | None = (
                        None if row is None else {"session_id": sid, "mtime": row[0], "data": json.loads(row[1])}
                    )
                    folded = fold_session_summary(prev, key, entries)
                    cur.execute(
                        "INSERT INTO summaries VALUES (?,?,?,?) ON CONFLICT DO UPDATE SET mtime = excluded.mtime, "
                        "data = excluded.data",
                        (pk, sid, mtime, json.dumps(folded["data"])),
                    )
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise

    def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        args = (key["project_key"], key["session_id"], key.get("subpath") or "")
        with self._lock:
            rows = self._conn.execute(
                "SELECT data FROM entries WHERE project_key = ? AND session_id = ? AND subpath = ? ORDER BY seq", args
            ).fetchall()
        return [json.loads(r[0]) for r in rows] if rows else None

    def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT session_id, mtime FROM streams WHERE project_key = ? AND subpath = ''", (project_key,)
            ).fetchall()
        return [{"session_id": sid, "mtime": mtime} for sid, mtime in rows]

    def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT session_id, mtime, data FROM summaries WHERE project_key = ?", (project_key,)
            ).fetchall()
        return [{"session_id": sid, "mtime": mtime, "data": json.loads(data)} for sid, mtime, data in rows]

    def delete(self, key: SessionKey) -> None:
        pk, sid, sub = key["project_key"], key["session_id"], key.get("subpath")
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                if sub:  # one subagent transcript
                    for table in ("entries", "streams"):
                        cur.execute(
                            f"DELETE FROM {table} WHERE project_key = ? AND session_id = ? AND subpath = ?", (pk, sid, sub)
                        )
                else:  # the session and everything under it
                    for table in ("entries", "streams", "summaries"):
                        cur.execute(f"DELETE FROM {table} WHERE project_key = ? AND session_id = ?", (pk, sid))
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise

    def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT subpath FROM streams WHERE project_key = ? AND session_id = ? AND subpath != '' ORDER BY subpath",
                (key["project_key"], key["session_id"]),
            ).fetchall()
        return [r[0] for r in rows]
