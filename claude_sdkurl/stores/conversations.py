"""Where :class:`~claude_sdkurl.Conversations` keep what must outlive a process: each
conversation's session id by its key, and a *lease* saying which :class:`Conversations` (in
which process, on which machine) holds a CLI for it now.

* :class:`SQLiteConversationStore`: a file shared by the processes of one machine (the
  default: ``<config>/claude_sdkurl/conversations.sqlite3``);
* ``claude_sdkurl.stores.postgres.PostgresConversationStore`` and
  ``claude_sdkurl.stores.redis.RedisConversationStore``: shared by many machines.

The rules every store keeps (:class:`ConversationStore`):

* a lease is held by one owner at a time, until it is released or its time runs out (the
  holder renews it while it keeps the CLI); an expired lease may be taken by anyone, and its
  holder may renew it only while no one has;
* a session id is written only by the lease's holder;
* an owner that asks for a held lease leaves a *wanted* mark, which the holder reads when it
  renews, and answers by stopping its CLI (at once when idle, after the turn when busy);
* conversations are kept per ``namespace`` (the project folder's key: a transcript belongs to
  its folder), so two applications sharing a store do not share a ``"alice"``.

Keys and session ids are data, never file names: a key that looks like a path is only a key.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Collection
from typing import Any

from typing_extensions import Self

__all__ = ["ConversationStore", "SQLiteConversationStore"]


class ConversationStore:
    """What :class:`~claude_sdkurl.Conversations` needs of a store (see the module doc). Every
    method is atomic on the store's side; ``ttl`` is in seconds; ``owner`` is an opaque string
    unique to one :class:`Conversations` object."""

    def acquire(self, namespace: str, key: str, owner: str, ttl: float, replaces: Collection[str] = ()) -> tuple[bool, str | None]:
        """Take the lease of ``key`` for ``owner`` if it is free, expired, ``owner``'s already,
        or held by one of ``replaces`` (owners known to be gone: a restarted session host's
        predecessors, see :mod:`claude_sdkurl.host._holder`), clearing any wanted mark; else
        leave a wanted mark. Returns (taken, its session id). A store of your own that takes no
        ``replaces`` still works: a restarted host then waits its predecessor's leases out."""
        raise NotImplementedError

    def renew(self, namespace: str, owner: str, keys: list[str], ttl: float) -> tuple[set[str], set[str]]:
        """Extend ``owner``'s leases of ``keys``; returns (the keys still ``owner``'s, those of
        them another owner wants)."""
        raise NotImplementedError

    def record(self, namespace: str, key: str, owner: str, session_id: str) -> bool:
        """Write ``key``'s session id, if ``owner`` holds its lease (``False`` otherwise)."""
        raise NotImplementedError

    def release(self, namespace: str, key: str, owner: str) -> None:
        """Give ``key``'s lease up, if ``owner`` holds it."""
        raise NotImplementedError

    def session_id(self, namespace: str, key: str) -> str | None:
        """``key``'s session id, if it has one."""
        raise NotImplementedError

    def close(self) -> None:
        """Close the store's connection (a store given by the caller is the caller's to close)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


_SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    session_id TEXT,
    owner TEXT,
    expires REAL,
    wanted REAL,
    PRIMARY KEY (namespace, key)
);
CREATE INDEX IF NOT EXISTS conversations_owner ON conversations (namespace, owner);
"""


class SQLiteConversationStore(ConversationStore):
    """Conversations' keys and leases in the SQLite file at ``path`` (created if missing, 0600),
    for the processes of one machine (their clock is the lease's clock). Each change is one
    ``BEGIN IMMEDIATE`` transaction, so two processes deciding at once are serialised by
    SQLite's write lock (waiting up to ``timeout`` seconds for it)."""

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        self.path = os.fspath(path)
        if self.path != ":memory:":
            folder = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(folder, mode=0o700, exist_ok=True)
            os.close(os.open(self.path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600))  # private from its birth
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=timeout, check_same_thread=False, isolation_level=None)
        try:
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
                # (a lease renewed four times a second need not reach the platter each time: in WAL
                # mode a power loss may undo the last changes, never tear the file)
                self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
        except BaseException:
            self._conn.close()
            raise

    def __repr__(self) -> str:
        return f"SQLiteConversationStore({self.path!r})"

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _write(self, work: Any) -> Any:
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                result = work(cur, time.time())
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            return result

    def acquire(self, namespace: str, key: str, owner: str, ttl: float, replaces: Collection[str] = ()) -> tuple[bool, str | None]:
        def work(cur: sqlite3.Cursor, now: float) -> tuple[bool, str | None]:
            row = cur.execute("SELECT session_id, owner, expires FROM conversations WHERE namespace = ? AND key = ?",
                              (namespace, key)).fetchone()  # fmt: skip
            if row is None:
                cur.execute("INSERT INTO conversations VALUES (?, ?, NULL, ?, ?, NULL)", (namespace, key, owner, now + ttl))
                return True, None
            session_id, holder, expires = row
            if holder is None or holder == owner or expires is None or expires <= now or holder in replaces:
                cur.execute("UPDATE conversations SET owner = ?, expires = ?, wanted = NULL WHERE namespace = ? AND key = ?",
                            (owner, now + ttl, namespace, key))  # fmt: skip
                return True, session_id
            cur.execute("UPDATE conversations SET wanted = COALESCE(wanted, ?) WHERE namespace = ? AND key = ?", (now, namespace, key))
            return False, session_id

        result: tuple[bool, str | None] = self._write(work)
        return result

    def renew(self, namespace: str, owner: str, keys: list[str], ttl: float) -> tuple[set[str], set[str]]:
        def work(cur: sqlite3.Cursor, now: float) -> tuple[set[str], set[str]]:
            held: set[str] = set()
            wanted: set[str] = set()
            for key in keys:
                cur.execute("UPDATE conversations SET expires = ? WHERE namespace = ? AND key = ? AND owner = ?",
                            (now + ttl, namespace, key, owner))  # fmt: skip
                if cur.rowcount:
                    held.add(key)
            for (key,) in cur.execute("SELECT key FROM conversations WHERE namespace = ? AND owner = ? AND wanted IS NOT NULL",
                                      (namespace, owner)):  # fmt: skip
                if key in held:
                    wanted.add(key)
            return held, wanted

        result: tuple[set[str], set[str]] = self._write(work)
        return result

    def record(self, namespace: str, key: str, owner: str, session_id: str) -> bool:
        def work(cur: sqlite3.Cursor, now: float) -> bool:
            cur.execute("UPDATE conversations SET session_id = ? WHERE namespace = ? AND key = ? AND owner = ?",
                        (session_id, namespace, key, owner))  # fmt: skip
            return bool(cur.rowcount)

        result: bool = self._write(work)
        return result

    def release(self, namespace: str, key: str, owner: str) -> None:
        def work(cur: sqlite3.Cursor, now: float) -> None:
            cur.execute("UPDATE conversations SET owner = NULL, expires = NULL WHERE namespace = ? AND key = ? AND owner = ?",
                        (namespace, key, owner))  # fmt: skip

        self._write(work)

    def session_id(self, namespace: str, key: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT session_id FROM conversations WHERE namespace = ? AND key = ?", (namespace, key)).fetchone()
        return None if row is None else row[0]
