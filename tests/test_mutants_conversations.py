"""The SQLite conversations' store (``stores/conversations.py``) line by line, for what mutation
testing found unpinned (``tools/mutation_score.py --area conversations``): each lease rule at
its edge (expired at the second it ends, an owner's own, a gone owner named), the wanted mark
kept from the first asker and cleared by a take, what renew gives back, a write by a non-holder
refused, a failed change rolled back whole, the file and its folder private. No CLI, no server."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

import pytest

from claude_sdkurl.stores import conversations as module
from claude_sdkurl.stores.conversations import SQLiteConversationStore


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def time(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(module.time, "time", c.time)
    return c


@pytest.fixture
def store(tmp_path: Path) -> SQLiteConversationStore:
    s = SQLiteConversationStore(tmp_path / "deep" / "c.sqlite3")
    yield s
    s.close()


def row(store: SQLiteConversationStore, key: str, namespace: str = "ns") -> tuple:
    return store._conn.execute("SELECT session_id, owner, expires, wanted FROM conversations WHERE namespace = ? AND key = ?",
                               (namespace, key)).fetchone()  # fmt: skip


def test_a_lease_runs_its_ttl_and_is_free_at_the_second_it_ends(store: SQLiteConversationStore, clock: Clock) -> None:
    assert store.acquire("ns", "k", "a", 10.0) == (True, None)
    assert row(store, "k") == (None, "a", 1010.0, None)
    clock.now = 1009.9
    assert store.acquire("ns", "k", "b", 10.0) == (False, None)
    assert row(store, "k") == (None, "a", 1010.0, 1009.9)  # b's wanted mark, at when it asked
    clock.now = 1009.95
    assert store.acquire("ns", "k", "c", 10.0) == (False, None)
    assert row(store, "k")[3] == 1009.9  # the first asker's mark is kept
    assert store.acquire("ns", "k", "a", 5.0) == (True, None)  # its own again: renewed, mark cleared
    assert row(store, "k") == (None, "a", 1014.95, None)
    clock.now = 1014.95
    assert store.acquire("ns", "k", "b", 10.0) == (True, None)  # expired exactly now: free
    assert row(store, "k") == (None, "b", 1024.95, None)


def test_a_live_lease_goes_only_to_an_owner_that_replaces_its_holder(store: SQLiteConversationStore, clock: Clock) -> None:
    store.acquire("ns", "k", "old", 30.0)
    assert store.record("ns", "k", "old", "sid-1")
    assert store.acquire("ns", "k", "new", 30.0, replaces=["other"]) == (False, "sid-1")
    assert store.acquire("ns", "k", "new", 30.0, replaces=["other", "old"]) == (True, "sid-1")
    assert row(store, "k") == ("sid-1", "new", 1030.0, None)
    store.release("ns", "k", "new")
    assert row(store, "k") == ("sid-1", None, None, None)
    assert store.acquire("ns", "k", "third", 1.0) == (True, "sid-1")  # released: no holder


def test_an_expired_holder_cannot_renew_or_write_once_another_took_it(store: SQLiteConversationStore, clock: Clock) -> None:
    store.acquire("ns", "k", "a", 10.0)
    clock.now = 1011.0
    assert store.acquire("ns", "k", "b", 10.0) == (True, None)
    assert store.renew("ns", "a", ["k"], 10.0) == (set(), set())
    assert not store.record("ns", "k", "a", "sid-a")
    store.release("ns", "k", "a")  # not its lease: nothing changes
    assert row(store, "k") == (None, "b", 1021.0, None)
    assert store.record("ns", "k", "b", "sid-b") is True
    assert store.session_id("ns", "k") == "sid-b"
    assert store.session_id("ns", "missing") is None
    assert store.session_id("other", "k") is None  # namespaces apart


def test_renew_gives_back_what_is_still_held_and_what_is_wanted(store: SQLiteConversationStore, clock: Clock) -> None:
    for key in ("k1", "k2", "k3"):
        store.acquire("ns", key, "a", 10.0)
    store.acquire("ns", "k2", "b", 10.0)  # wanted
    store.acquire("ns", "x", "b", 10.0)  # b's own, also wanted by a
    store.acquire("ns", "x", "a", 10.0)
    clock.now = 1005.0
    assert store.renew("ns", "a", ["k1", "k2", "gone"], 20.0) == ({"k1", "k2"}, {"k2"})
    assert row(store, "k1")[2] == 1025.0 and row(store, "k3")[2] == 1010.0  # only the keys named
    assert store.renew("ns", "b", ["x"], 20.0) == ({"x"}, {"x"})
    assert store.renew("ns", "a", [], 20.0) == (set(), set())  # k2 is wanted, but not asked about
    assert store.renew("other", "a", ["k1"], 20.0) == (set(), set())


def test_a_failed_change_is_rolled_back_whole(store: SQLiteConversationStore, clock: Clock) -> None:
    store.acquire("ns", "k", "a", 10.0)

    def half(cur: sqlite3.Cursor, now: float) -> None:
        cur.execute("UPDATE conversations SET owner = 'x' WHERE key = 'k'")
        raise RuntimeError("cut")

    with pytest.raises(RuntimeError):
        store._write(half)
    assert row(store, "k")[1] == "a"
    assert store._write(lambda cur, now: now) == 1000.0  # the work is given the store's clock
    assert store.acquire("ns", "k2", "a", 1.0) == (True, None)  # the store still works


def test_the_file_and_its_folder_are_made_private_and_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "new" / "c.sqlite3"
    s = SQLiteConversationStore(path)
    try:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert s._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert s._conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert repr(s) == f"SQLiteConversationStore({str(path)!r})"
    finally:
        s.close()
    with SQLiteConversationStore(":memory:") as memory:
        assert memory.acquire("ns", "k", "a", 1.0) == (True, None)
    with pytest.raises(sqlite3.ProgrammingError):
        memory.acquire("ns", "k", "a", 1.0)  # closed on leaving
    (tmp_path / "bad.sqlite3").write_bytes(b"not a database, not at all" * 100)
    with pytest.raises(sqlite3.DatabaseError):
        SQLiteConversationStore(tmp_path / "bad.sqlite3")


def test_the_connection_waits_its_timeout_and_runs_no_implicit_transactions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []
    real = sqlite3.connect

    def connect(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(module.sqlite3, "connect", connect)
    SQLiteConversationStore(tmp_path / "a.sqlite3").close()
    SQLiteConversationStore(tmp_path / "b.sqlite3", timeout=0.5).close()
    assert seen == [{"timeout": 30.0, "check_same_thread": False, "isolation_level": None},
                    {"timeout": 0.5, "check_same_thread": False, "isolation_level": None}]  # fmt: skip


def test_an_in_memory_store_makes_no_file_and_keeps_sqlites_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with SQLiteConversationStore(":memory:") as memory:
        assert memory._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL: not set for memory
        assert memory.acquire("ns", "k", "a", 1.0) == (True, None)
    assert list(tmp_path.iterdir()) == []  # no file named ":memory:", no folder made
