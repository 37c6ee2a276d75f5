"""Which store a session host's ``--store`` / ``--session-store`` URL opens (``host/_stores.py``),
on the real PostgreSQL and Redis servers of the test session: the part after ``#`` names the
table or key prefix, so deployments sharing a database stay apart; other URLs are refused."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from claude_sdkurl.host import _stores

_names = itertools.count()


@pytest.fixture(params=["postgres", "redis"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """``(kind, its URL)``."""
    kind = str(request.param)
    yield kind, request.getfixturevalue(f"{kind}_url")


def closed(*stores: Any) -> None:
    for store in stores:
        store.close()


def test_the_name_after_the_hash_keeps_two_deployments_apart(server: tuple[str, str]) -> None:
    kind, url = server
    n = next(_names)
    ours, again, theirs = (_stores.session_store(f"{url}#hs_{n}_{tag}") for tag in ("a", "a", "b"))
    try:
        assert getattr(ours, "table" if kind == "postgres" else "prefix") == f"hs_{n}_a"
        key = {"project_key": "p", "session_id": "8d2b1c3e-0000-4000-8000-000000000001"}
        ours.append(key, [{"type": "user", "uuid": "u1"}])
        assert [e["uuid"] for e in again.load(key) or []] == ["u1"]  # the same name: the same transcripts
        assert not theirs.load(key)  # another name: none of them
    finally:
        closed(ours, again, theirs)
    conversations = _stores.conversation_store(f"{url}#hc_{n}")
    try:
        assert getattr(conversations, "table" if kind == "postgres" else "prefix") == f"hc_{n}"
    finally:
        closed(conversations)


def test_without_a_name_the_stores_own_defaults_are_used(server: tuple[str, str]) -> None:
    kind, url = server
    field = "table" if kind == "postgres" else "prefix"
    sessions, conversations = _stores.session_store(url), _stores.conversation_store(url)
    try:
        expected = ("claude_sessions", "claude_conversations") if kind == "postgres" else ("claude-sessions", "claude-conversations")
        assert (getattr(sessions, field), getattr(conversations, field)) == expected
    finally:
        closed(sessions, conversations)


def test_other_urls_are_refused_and_a_path_is_a_sqlite_file() -> None:
    with pytest.raises(ValueError, match="not mysql://"):
        _stores.conversation_store("mysql://somewhere/db")
    with pytest.raises(ValueError, match="postgresql://... or redis://"):
        _stores.session_store("/tmp/transcripts.db")
    assert _stores.conversation_store("/var/lib/app/conversations.db") == "/var/lib/app/conversations.db"
