"""A :class:`SessionStore` in PostgreSQL (psycopg 3: ``pip install 'claude-sdkurl[postgres]'``), and
:class:`PostgresConversationStore`, where ``Conversations`` keep their keys and leases.

Three tables (created if missing), named from ``table``: ``<table>`` holds the
entries as ``json`` (not ``jsonb``: that would refuse a ``\u0000`` in a tool's
output) in append order, ``<table>_streams`` the write time of each
transcript, ``<table>_summaries`` the folded per-session summary. An
``append`` is one transaction: the entries (an entry whose ``uuid`` the key
already holds is skipped, so a retried mirror batch lands once), the stream's
write time from the server's clock, and the summary. Many processes on many
machines may share the database.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Collection
from typing import Any

from ..sessions import fold_session_summary
from ..types import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
)
from ._common import ConnectedStore, entry_uuid
from .conversations import ConversationStore

try:
    import psycopg
    from psycopg.types.json import Json
except ImportError as e:  # pragma: no cover - depends on the install
    raise ImportError("PostgresSessionStore needs psycopg 3: pip install 'claude-sdkurl[postgres]'") from e

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,40}$")

# Milliseconds since the epoch on the server's clock, strictly after the stream's last write.
_NOW_MS = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint"


class PostgresSessionStore(ConnectedStore):
    """Session transcripts in PostgreSQL.

    Args:
        conninfo: a libpq connection string or URL (``"postgresql://user@host/db"``),
            or an open ``psycopg.Connection`` (then ``close()`` leaves it open).
        table: base name of the three tables (letters, digits, ``_``).
        create: create the tables if missing.

    One connection, used by one thread at a time (the mirror appends from a
    thread of its own); a lost connection is opened again on the next call.
    """

    def __init__(self, conninfo: str | Any, *, table: str = "claude_sessions", create: bool = True) -> None:
        if not _NAME.match(table):
            raise ValueError(f"table must be letters, digits and '_' (at most 41), not {table!r}")
        self.table = table
        self._lock = threading.Lock()
        if isinstance(conninfo, str):
            self._conninfo: str | None = conninfo
            self._conn = psycopg.connect(conninfo, autocommit=True)
        else:
            self._conninfo = None
            self._conn = conninfo
        if create:
            self._create()

    def _create(self) -> None:
        t = self.table
        with self._lock, self._conn.transaction():
            self._conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (t,))  # two creators at once
            self._conn.execute(
                f"""
                CREATE TABLE IF NOT EXISTS {t} (
                    seq BIGSERIAL PRIMARY KEY,
                    project_key TEXT NOT NULL,
                    session_id TEXT NOT NULL,
                    subpath TEXT NOT NULL,
                    uuid TEXT,
                    data JSON NOT NULL
                );
                CREATE INDEX IF NOT EXISTS {t}_key ON {t} (project_key, session_id, subpath, seq);
                CREATE UNIQUE INDEX IF NOT EXISTS {t}_uuid ON {t} (project_key, session_id, subpath, uuid)
                    WHERE uuid IS NOT NULL;
                CREATE TABLE IF NOT EXISTS {t}_streams (
                    project_key TEXT NOT NULL,
                    session_id TEXT NOT NULL,
                    subpath TEXT NOT NULL,
                    mtime BIGINT NOT NULL,
                    PRIMARY KEY (project_key, session_id, subpath)
                );
                CREATE TABLE IF NOT EXISTS {t}_summaries (
                    project_key TEXT NOT NULL,
                    session_id TEXT NOT NULL,
                    mtime BIGINT NOT NULL,
                    data JSON NOT NULL,
                    PRIMARY KEY (project_key, session_id)
                );
                """
            )

    def close(self) -> None:
        if self._conninfo is not None:
            with self._lock:
                self._conn.close()

    def __repr__(self) -> str:
        return f"PostgresSessionStore(table={self.table!r})"

    def _connection(self) -> Any:
        if self._conn.closed and self._conninfo is not None:
            self._conn = psycopg.connect(self._conninfo, autocommit=True)
        return self._conn

    # ------------------------------------------------------------------ SessionStore

    def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        if not entries:
            return
        t = self.table
        pk, sid, sub = key["project_key"], key["session_id"], key.get("subpath") or ""
        rows = [(pk, sid, sub, entry_uuid(e), Json(e)) for e in entries]
        with self._lock:
            conn = self._connection()
            with conn.transaction(), conn.cursor() as cur:
                # One writer per session at a time: the summary below is read, folded, written.
                cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"{t}/{pk}/{sid}",))
                cur.executemany(
                    f"INSERT INTO {t} (project_key, session_id, subpath, uuid, data) VALUES (%s,%s,%s,%s,%s) "
                    "ON CONFLICT DO NOTHING",
                    rows,
                )
                cur.execute(
                    f"INSERT INTO {t}_streams AS s VALUES (%s,%s,%s,{_NOW_MS}) ON CONFLICT (project_key, session_id, "
                    f"subpath) DO UPDATE SET mtime = GREATEST({_NOW_MS}, s.mtime + 1) RETURNING mtime",
                    (pk, sid, sub),
                )
                (mtime,) = cur.fetchone()
                if not sub:
                    cur.execute(
                        f"SELECT mtime, data FROM {t}_summaries WHERE project_key = %s AND session_id = %s", (pk, sid)
                    )
                    row = cur.fetchone()
                    prev: SessionSummaryEntry | None = (
                        None if row is None else {"session_id": sid, "mtime": row[0], "data": row[1]}
                    )
                    folded = fold_session_summary(prev, key, entries)
                    cur.execute(
                        f"INSERT INTO {t}_summaries VALUES (%s,%s,%s,%s) ON CONFLICT (project_key, session_id) "
                        "DO UPDATE SET mtime = excluded.mtime, data = excluded.data",
                        (pk, sid, mtime, Json(folded["data"])),
                    )

    def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        args = (key["project_key"], key["session_id"], key.get("subpath") or "")
        with self._lock:
            rows = (
                self._connection()
                .execute(
                    f"SELECT data FROM {self.table} WHERE project_key = %s AND session_id = %s AND subpath = %s "
                    "ORDER BY seq",
                    args,
                )
                .fetchall()
            )
        return [r[0] for r in rows] if rows else None

    def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        with self._lock:
            rows = (
                self._connection()
                .execute(
                    f"SELECT session_id, mtime FROM {self.table}_streams WHERE project_key = %s AND subpath = ''",
                    (project_key,),
                )
                .fetchall()
            )
        return [{"session_id": sid, "mtime": mtime} for sid, mtime in rows]

    def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        with self._lock:
            rows = (
                self._connection()
                .execute(
                    f"SELECT session_id, mtime, data FROM {self.table}_summaries WHERE project_key = %s", (project_key,)
                )
                .fetchall()
            )
        return [{"session_id": sid, "mtime": mtime, "data": data} for sid, mtime, data in rows]

    def delete(self, key: SessionKey) -> None:
        t = self.table
        pk, sid, sub = key["project_key"], key["session_id"], key.get("subpath")
        with self._lock:
            conn = self._connection()
            with conn.transaction():
                if sub:  # one subagent transcript
                    for table in (t, f"{t}_streams"):
                        conn.execute(
                            f"DELETE FROM {table} WHERE project_key = %s AND session_id = %s AND subpath = %s",
                            (pk, sid, sub),
                        )
                else:  # the session and everything under it
                    for table in (t, f"{t}_streams", f"{t}_summaries"):
                        conn.execute(f"DELETE FROM {table} WHERE project_key = %s AND session_id = %s", (pk, sid))

    def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        with self._lock:
            rows = (
                self._connection()
                .execute(
                    f"SELECT subpath FROM {self.table}_streams WHERE project_key = %s AND session_id = %s "
                    "AND subpath <> '' ORDER BY subpath",
                    (key["project_key"], key["session_id"]),
                )
                .fetchall()
            )
        return [r[0] for r in rows]


class PostgresConversationStore(ConversationStore):
    """Conversations' keys and leases in PostgreSQL, for processes on many machines (see
    :mod:`claude_sdkurl.stores.conversations`). One table, ``table`` (created if missing); every
    change is one statement, its lease times on the server's clock (the machines' clocks may
    differ). A lost connection is opened again on the next call; until then each call raises
    the driver's error (``Conversations`` makes it a ``ConversationStoreError``).

    Args:
        conninfo: a libpq connection string or URL, or an open ``psycopg.Connection`` (then
            ``close()`` leaves it open).
        table: the table's name (letters, digits, ``_``).
    """

    def __init__(self, conninfo: str | Any, *, table: str = "claude_conversations", create: bool = True) -> None:
        if not _NAME.match(table):
            raise ValueError(f"table must be letters, digits and '_' (at most 41), not {table!r}")
        self.table = table
        self._lock = threading.Lock()
        self._conninfo: str | None = conninfo if isinstance(conninfo, str) else None
        self._conn = psycopg.connect(conninfo, autocommit=True) if isinstance(conninfo, str) else conninfo
        if create:
            with self._lock, self._conn.transaction():
                self._conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (table,))  # two creators at once
                self._conn.execute(
                    f"""CREATE TABLE IF NOT EXISTS {table} (
                        namespace TEXT NOT NULL,
                        key TEXT NOT NULL,
                        session_id TEXT,
                        owner TEXT,
                        expires TIMESTAMPTZ,
                        wanted TIMESTAMPTZ,
                        PRIMARY KEY (namespace, key)
                    )"""
                )

    def __repr__(self) -> str:
        return f"PostgresConversationStore(table={self.table!r})"

    def close(self) -> None:
        if self._conninfo is not None:
            with self._lock:
                self._conn.close()

    def _run(self, sql: str, args: tuple[Any, ...] | dict[str, Any]) -> Any:
        with self._lock:
            if (self._conn.closed or self._conn.broken) and self._conninfo is not None:
                self._conn = psycopg.connect(self._conninfo, autocommit=True)
            return self._conn.execute(sql, args)

    def acquire(self, namespace: str, key: str, owner: str, ttl: float, replaces: Collection[str] = ()) -> tuple[bool, str | None]:
        t = self.table
        free = f"({t}.owner IS NULL OR {t}.owner = EXCLUDED.owner OR {t}.expires <= clock_timestamp() OR {t}.owner = ANY(%(gone)s::text[]))"
        row = self._run(
            f"INSERT INTO {t} (namespace, key, owner, expires) "
            f"VALUES (%(ns)s, %(key)s, %(owner)s, clock_timestamp() + make_interval(secs => %(ttl)s)) "
            f"ON CONFLICT (namespace, key) DO UPDATE SET "
            f"owner = CASE WHEN {free} THEN EXCLUDED.owner ELSE {t}.owner END, "
            f"expires = CASE WHEN {free} THEN EXCLUDED.expires ELSE {t}.expires END, "
            f"wanted = CASE WHEN {free} THEN NULL ELSE COALESCE({t}.wanted, clock_timestamp()) END "
            f"RETURNING owner = %(owner)s, session_id",
            {"ns": namespace, "key": key, "owner": owner, "ttl": ttl, "gone": [str(r) for r in replaces]},
        ).fetchone()
        return bool(row[0]), row[1]

    def renew(self, namespace: str, owner: str, keys: list[str], ttl: float) -> tuple[set[str], set[str]]:
        rows = self._run(
            f"UPDATE {self.table} SET expires = clock_timestamp() + make_interval(secs => %s) "
            "WHERE namespace = %s AND owner = %s AND key = ANY(%s) RETURNING key, wanted IS NOT NULL",
            (ttl, namespace, owner, list(keys)),
        ).fetchall()
        return {k for k, _ in rows}, {k for k, wanted in rows if wanted}

    def record(self, namespace: str, key: str, owner: str, session_id: str) -> bool:
        cur = self._run(f"UPDATE {self.table} SET session_id = %s WHERE namespace = %s AND key = %s AND owner = %s",
                        (session_id, namespace, key, owner))  # fmt: skip
        return bool(cur.rowcount)

    def release(self, namespace: str, key: str, owner: str) -> None:
        self._run(f"UPDATE {self.table} SET owner = NULL, expires = NULL WHERE namespace = %s AND key = %s AND owner = %s",
                  (namespace, key, owner))  # fmt: skip

    def session_id(self, namespace: str, key: str) -> str | None:
        row = self._run(f"SELECT session_id FROM {self.table} WHERE namespace = %s AND key = %s", (namespace, key)).fetchone()
        return None if row is None else row[0]


__all__ = ["PostgresConversationStore", "PostgresSessionStore"]
