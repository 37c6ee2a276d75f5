"""The conversations' store (``claude_sdkurl.stores.conversations``), no CLI: the lease's rules
between owners and processes, a key that is a path or too long, a file that is not a database,
a file created private. The real CLI across processes: test_realcli_conversations_outlive.py."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from claude_sdkurl import ClaudeAgentOptions, Conversations
from claude_sdkurl.conversations import ConversationStoreError, default_store_path
from claude_sdkurl.stores.conversations import ConversationStore, SQLiteConversationStore

KINDS = ["sqlite", "postgres", "redis"]
_made = iter(range(10**6))


def open_store(spec: str) -> ConversationStore:
    """A store from ``kind:where`` (what the worker processes are given too)."""
    kind, _, where = spec.partition(":")
    if kind == "postgres":
        from claude_sdkurl.stores.postgres import PostgresConversationStore

        url, _, table = where.rpartition("#")
        return PostgresConversationStore(url, table=table)
    if kind == "redis":
        from claude_sdkurl.stores.redis import RedisConversationStore

        url, _, prefix = where.rpartition("#")
        return RedisConversationStore(url, prefix=prefix)
    return SQLiteConversationStore(where)


@pytest.fixture(params=KINDS)
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store of each kind (a new table or prefix on the session's real servers)."""
    n = next(_made)
    if request.param == "postgres":
        return f"postgres:{request.getfixturevalue('postgres_url')}#conv_{os.getpid()}_{n}"
    if request.param == "redis":
        return f"redis:{request.getfixturevalue('redis_url')}#conv-{os.getpid()}-{n}"
    return f"sqlite:{tmp_path / 'c.sqlite3'}"


def test_one_holder_at_a_time_and_only_the_holder_writes(spec: str) -> None:
    with open_store(spec) as store:
        assert store.acquire("ns", "alice", "A", 30) == (True, None)
        assert store.acquire("ns", "alice", "B", 30) == (False, None)  # held: B leaves a mark
        assert store.record("ns", "alice", "B", "forged") is False  # only the holder writes
        assert store.record("ns", "alice", "A", "s-1") is True
        assert store.renew("ns", "A", ["alice"], 30) == ({"alice"}, {"alice"})  # A reads B's mark
        assert store.renew("ns", "B", ["alice"], 30) == (set(), set())
        store.release("ns", "alice", "B")  # not B's to give up
        assert store.acquire("ns", "alice", "B", 30) == (False, "s-1")
        store.release("ns", "alice", "A")
        assert store.acquire("ns", "alice", "B", 30) == (True, "s-1")  # and the mark is cleared
        assert store.renew("ns", "B", ["alice"], 30) == ({"alice"}, set())
        assert store.session_id("other-project", "alice") is None  # per namespace
        assert store.acquire("other-project", "alice", "A", 30) == (True, None)


def test_an_expired_lease_goes_to_whoever_asks_and_its_holder_learns_it(spec: str) -> None:
    with open_store(spec) as store:
        assert store.acquire("ns", "k", "A", 0.2)[0]
        assert not store.acquire("ns", "k", "B", 30)[0]
        time.sleep(0.3)
        if not spec.startswith("redis"):  # (Redis forgets an expired lease: gone, it can only be taken again)
            assert store.renew("ns", "A", ["k"], 30) == ({"k"}, {"k"})  # expired, but no one took it: still A's
        assert store.acquire("ns", "k", "A", 0.2)[0]
        time.sleep(0.3)
        assert store.acquire("ns", "k", "B", 30) == (True, None)
        assert store.renew("ns", "A", ["k"], 30) == (set(), set())  # lost
        assert store.record("ns", "k", "A", "late") is False


GRAB = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, sys.argv[4])
    from tests.test_conversation_store import open_store
    store = open_store(sys.argv[1])
    while time.time() < float(sys.argv[3]):
        pass
    print(store.acquire("ns", "alice", sys.argv[2], 60)[0])
    """
)


def test_eight_processes_asking_at_once_one_gets_the_lease(spec: str) -> None:
    open_store(spec).close()  # (the table made before the race)
    start = time.time() + 4.0
    root = str(Path(__file__).resolve().parent.parent)
    procs = [subprocess.Popen([sys.executable, "-c", GRAB, spec, f"owner-{i}", str(start), root], stdout=subprocess.PIPE, text=True)
             for i in range(8)]  # fmt: skip
    answers = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert sorted(answers) == ["False"] * 7 + ["True"]


def test_keys_are_data_never_paths_and_bad_keys_start_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    options = ClaudeAgentOptions(cli_path=str(tmp_path / "no-cli"), env={"HOME": str(home)}, cwd=str(tmp_path))
    with Conversations(options, lease_ttl=5) as chats:
        for bad in ["x" * 10_000, "a\x00b", ""]:
            with pytest.raises(ValueError):
                chats.send(bad, "hi")
        assert chats.session_id("../../etc/passwd") is None
    with SQLiteConversationStore(default_store_path(options)) as store:
        for key in ["../../etc/passwd", "/tmp/x", "a" * 4096, "ключ 🗝"]:
            assert store.acquire("ns", key, "A", 5)[0] and store.record("ns", key, "A", "s") and store.session_id("ns", key) == "s"
    assert sorted(p.name for p in (home / ".claude" / "claude_sdkurl").iterdir())[0] == "conversations.sqlite3"
    assert not (tmp_path / "etc").exists() and not Path("/tmp/x").exists()


def test_the_store_file_is_private_and_one_that_is_not_a_database_is_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "new" / "c.sqlite3"
    SQLiteConversationStore(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"this is not a database, " * 100)
    options = ClaudeAgentOptions(cli_path=str(tmp_path / "no-cli"), env={"HOME": str(tmp_path)}, cwd=str(tmp_path))
    with pytest.raises(ConversationStoreError, match="junk.sqlite3"):
        Conversations(options, store=junk)
    assert junk.read_bytes() == b"this is not a database, " * 100  # left as it was
    with pytest.raises(TypeError):
        Conversations(options, store=42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Conversations(options, store=":memory:", lease_ttl=0)


def test_a_held_conversation_makes_a_send_wait_then_fail_typed_and_start_nothing(tmp_path: Path) -> None:
    """Another holder keeps the key (its lease renewed) past ``lease_wait``: the send raises
    ConversationBusyError, and no CLI was looked for (the CLI path does not exist)."""
    from claude_sdkurl.conversations import ConversationBusyError

    options = ClaudeAgentOptions(cli_path=str(tmp_path / "no-cli"), env={"HOME": str(tmp_path)}, cwd=str(tmp_path))
    path = tmp_path / "c.sqlite3"
    with SQLiteConversationStore(path) as other:
        from claude_sdkurl._engine.paths import project_key_for_directory

        assert other.acquire(project_key_for_directory(tmp_path), "alice", "someone-else", 60)[0]
        with Conversations(options, store=path, lease_wait=0.5) as chats:
            t0 = time.monotonic()
            with pytest.raises(ConversationBusyError, match="nothing was sent"):
                list(chats.send("alice", "hi"))
            assert 0.4 < time.monotonic() - t0 < 30
            assert chats.live() == 0
        assert other.renew(project_key_for_directory(tmp_path), "someone-else", ["alice"], 60) == ({"alice"}, {"alice"})
    assert os.path.exists(path)


def test_a_live_lease_is_taken_over_only_from_an_owner_named_gone(spec: str) -> None:
    """``replaces`` (a restarted host's predecessors): a live lease held by one of them is taken
    at once, its wanted mark cleared and its session id kept; a live lease of any other owner,
    one whose name only begins or ends like a listed one, or an owner listed with a different
    case, is still respected (a mark is left); an empty list changes nothing."""
    with open_store(spec) as store:
        assert store.acquire("ns", "mine", "host:m:/s:1:aa/p", 600) == (True, None)
        assert store.record("ns", "mine", "host:m:/s:1:aa/p", "s-old")
        assert not store.acquire("ns", "mine", "worker", 600)[0]  # a mark, to be cleared by the takeover
        for other in ("host:m:/s:1:bb/p", "host:m:/s:1:aa/p/x", "host:m:/s:1:a", "HOST:M:/S:1:AA/P", "worker"):
            assert store.acquire("ns", "theirs", other, 600)[0]
            assert store.acquire("ns", "theirs", "host:m:/s:2:cc/p", 600, ["host:m:/s:1:aa/p"]) == (False, None), other
            store.release("ns", "theirs", other)
        assert store.acquire("ns", "mine", "host:m:/s:2:cc/p", 600, []) == (False, "s-old")  # nothing named: respected
        assert store.acquire("ns", "mine", "host:m:/s:2:cc/p", 600, ["x", "host:m:/s:1:aa/p"]) == (True, "s-old")
        assert store.renew("ns", "host:m:/s:2:cc/p", ["mine"], 600) == ({"mine"}, set())  # the mark went with the old holder
        # the gone owner alone in the list (a host's one predecessor), and first of several
        for named in (["host:m:/s:2:cc/p"], ["host:m:/s:2:cc/p", "y"]):
            successor = f"host:m:/s:3:{len(named)}/p"
            assert store.acquire("ns", "mine", successor, 600, named) == (True, "s-old"), named
            store.release("ns", "mine", successor)
            assert store.acquire("ns", "mine", "host:m:/s:2:cc/p", 600) == (True, "s-old")  # back to the one listed next
        assert store.renew("ns", "host:m:/s:1:aa/p", ["mine"], 600) == (set(), set())  # and the old holder lost it
        assert store.record("ns", "mine", "host:m:/s:1:aa/p", "forged") is False
