"""Session stores: the conformance suite (ours and the official one) on the in-memory,
SQLite, PostgreSQL and Redis stores, the last two against real servers started by the
test session; plus what the suite does not check (duplicates, exact round trips,
concurrent writers, async stores)."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import claude_agent_sdk as official
import claude_agent_sdk.testing as official_testing
import pytest

from claude_sdkurl import InMemorySessionStore, list_sessions_from_store, rename_session_via_store
from claude_sdkurl.stores import SQLiteSessionStore
from claude_sdkurl.testing import run_session_store_conformance
from claude_sdkurl.types import SessionKey, SessionStore

KINDS = ["memory", "sqlite", "postgres", "redis"]
_names = itertools.count()


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[[], SessionStore]]:
    """A factory of fresh, isolated stores of ``kind`` (a new file, table or key prefix each)."""
    made: list[Any] = []

    def make() -> SessionStore:
        n = next(_names)
        store: Any
        if kind == "memory":
            store = InMemorySessionStore()
        elif kind == "sqlite":
            store = SQLiteSessionStore(tmp_path / f"s{n}.db")
        elif kind == "postgres":
            from claude_sdkurl.stores.postgres import PostgresSessionStore

            store = PostgresSessionStore(request.getfixturevalue("postgres_url"), table=f"conf_{n}")
        else:
            from claude_sdkurl.stores.redis import RedisSessionStore

            store = RedisSessionStore(request.getfixturevalue("redis_url"), prefix=f"conf{n}")
        made.append(store)
        return store

    yield make
    for store in made:
        if hasattr(store, "close"):
            store.close()


def test_conformance(make_store: Callable[[], SessionStore]) -> None:
    run_session_store_conformance(make_store)


class AsyncAdapter(official.SessionStore):  # type: ignore[misc]
    """One of our stores behind ``async def`` methods, for the official suite."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def append(self, key: Any, entries: Any) -> None:
        self.inner.append(key, entries)

    async def load(self, key: Any) -> Any:
        return self.inner.load(key)

    async def list_sessions(self, project_key: str) -> Any:
        return self.inner.list_sessions(project_key)

    async def list_session_summaries(self, project_key: str) -> Any:
        return self.inner.list_session_summaries(project_key)

    async def delete(self, key: Any) -> None:
        self.inner.delete(key)

    async def list_subkeys(self, key: Any) -> Any:
        return self.inner.list_subkeys(key)


def test_the_official_suite_passes_on_our_stores(make_store: Callable[[], SessionStore]) -> None:
    asyncio.run(official_testing.run_session_store_conformance(lambda: AsyncAdapter(make_store())))


def test_our_suite_takes_an_async_store_and_so_do_the_store_functions() -> None:
    run_session_store_conformance(lambda: AsyncAdapter(InMemorySessionStore()))
    store = AsyncAdapter(InMemorySessionStore())
    sid = "5f1c7a8e-0000-4000-8000-000000000001"
    key: SessionKey = {"project_key": "-work", "session_id": sid}
    asyncio.run(store.append(key, [{"type": "user", "uuid": "u1", "timestamp": "2026-01-01T00:00:00Z",
                                    "message": {"role": "user", "content": "hi there"}}]))  # fmt: skip
    rename_session_via_store(store, sid, "named", directory="/work")
    listed = list_sessions_from_store(store, directory="/work")
    assert [(s.session_id, s.summary, s.custom_title) for s in listed] == [(sid, "named", "named")]


def test_our_suite_fails_a_broken_store() -> None:
    class Forgetful(InMemorySessionStore):
        def load(self, key: SessionKey) -> Any:
            entries = super().load(key)
            return entries[-1:] if entries else entries  # loses all but the last entry

    with pytest.raises(AssertionError):
        run_session_store_conformance(Forgetful)


KEY: SessionKey = {"project_key": "proj", "session_id": "sess"}


def test_a_retried_batch_lands_once(kind: str, make_store: Callable[[], SessionStore]) -> None:
    """A mirror batch retried after a partial write must not duplicate entries (the SQL and
    Redis stores skip a uuid the key already holds); entries without a uuid are all kept."""
    store = make_store()
    batch = [{"type": "user", "uuid": "a"}, {"type": "assistant", "uuid": "b"}, {"type": "tag", "tag": "x"}]
    store.append(KEY, batch)
    store.append(KEY, batch)
    if kind == "memory":  # the reference store keeps everything, as the official one does
        assert store.load(KEY) == batch + batch
        return
    assert store.load(KEY) == [*batch, {"type": "tag", "tag": "x"}]
    sub: SessionKey = {**KEY, "subpath": "subagents/agent-1"}
    store.append(sub, batch[:1])  # the same uuid under another key is another entry
    assert store.load(sub) == batch[:1]


def test_entries_round_trip_exactly(make_store: Callable[[], SessionStore]) -> None:
    store = make_store()
    odd = {
        "type": "user",
        "uuid": "u",
        "z_first": 1,
        "a_second": 2,  # key order kept
        "text": "nul \u0000 tab \t emoji \U0001f600 rtl \u202e",
        "big": 2**62,
        "float": 0.1,
        "nested": {"list": [None, True, False, [], {}], "deep": {"x": [1, {"y": "z"}]}},
    }
    store.append(KEY, [odd])
    (back,) = store.load(KEY) or []
    assert back == odd and list(back) == list(odd)


def test_concurrent_writers_lose_nothing(make_store: Callable[[], SessionStore], kind: str) -> None:
    """8 writers (each with a store object of its own: separate connections) append 25
    batches each to one session: every entry is there once, each writer's in its order,
    and the summary has the session's latest write time."""
    stores = [make_store() for _ in range(8)] if kind != "memory" else [make_store()] * 8
    if kind == "sqlite":  # the same file for all: SQLite's locking between connections
        first = stores[0]
        for extra in stores[1:]:
            extra.close()  # type: ignore[attr-defined]
        stores = [SQLiteSessionStore(first.path) for _ in range(8)]  # type: ignore[attr-defined]
    elif kind == "postgres":
        table = stores[0].table  # type: ignore[attr-defined]
        from claude_sdkurl.stores.postgres import PostgresSessionStore

        url = stores[0]._conninfo  # type: ignore[attr-defined]
        stores = [stores[0]] + [PostgresSessionStore(url, table=table) for _ in range(7)]
    elif kind == "redis":
        from claude_sdkurl.stores.redis import RedisSessionStore

        prefix = stores[0].prefix  # type: ignore[attr-defined]
        stores = [stores[0]] + [RedisSessionStore(stores[0]._client, prefix=prefix) for _ in range(7)]
    errors: list[BaseException] = []

    def write(w: int) -> None:
        try:
            for i in range(25):
                stores[w].append(KEY, [{"type": "user", "uuid": f"{w}-{i}", "w": w, "i": i, "customTitle": f"t{w}"}])
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    loaded = stores[0].load(KEY) or []
    assert len(loaded) == 200 and len({e["uuid"] for e in loaded}) == 200
    for w in range(8):
        assert [e["i"] for e in loaded if e["w"] == w] == list(range(25))
    (summary,) = stores[0].list_session_summaries("proj")
    (listed,) = stores[0].list_sessions("proj")
    assert summary["mtime"] >= listed["mtime"]
    assert summary["data"]["custom_title"] == loaded[-1]["customTitle"]  # the fold saw the last write last
    if kind == "sqlite":
        for s in stores:
            s.close()  # type: ignore[attr-defined]
    elif kind in ("postgres",):
        for s in stores[1:]:
            s.close()  # type: ignore[attr-defined]
