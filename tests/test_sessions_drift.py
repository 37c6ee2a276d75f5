"""Our transcripts wing against the official functions where a rewrite could drift.

The session helpers were written anew from the behaviour, so these tests put
both SDKs to the same questions on transcripts made to be awkward: seeded
random trees (branches, retries, parallel tool calls with results under other
parents, strays, ambiguous call ids, duplicate uuids, sidechain, team, meta and
progress entries, equal timestamps, corrupt lines), paging at every edge,
listing by worktree and by long paths, subagent sidecars in every state, forks
read back, and the store path (summary records, stale records, failing loads).
Everything runs on disk and in memory: no CLI.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import claude_agent_sdk as official
import pytest

import claude_sdkurl as ours

from .compare import both, plain
from claude_sdkurl._engine.paths import project_dir_name


def _now_masked(row: Any) -> Any:
    """A stored session's mtime is its last entry's timestamp, or the time of the call when
    that entry has none: two calls a millisecond apart then differ, so mask that case."""
    if isinstance(row, dict) and abs(row.get("last_modified", 0) - time.time() * 1000) < 60_000:
        return {**row, "last_modified": "now"}
    return row


def both_store(name: str, mine_store: Any, their_store: Any, *args: Any, **kw: Any) -> Any:
    mine = _now_masked(plain(getattr(ours, name)(mine_store, *args, **kw)))
    theirs = _now_masked(plain(asyncio.run(getattr(official, name)(their_store, *args, **kw))))
    assert mine == theirs, (name, args, kw)
    return mine


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    return tmp_path / "config"


def sid_of(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


# ---------------------------------------------------------------- random transcripts


def random_transcript(rng: random.Random, sid: str) -> list[Any]:
    """Entries as the CLI writes them, and as it should not (see the module doc)."""
    entries: list[Any] = []
    uuids: list[str] = []
    calls: list[tuple[str, str, str]] = []  # (call id, assistant entry uuid, response id)
    clock = [0]

    def stamp() -> str:
        clock[0] += rng.choice([0, 0, 1, 1, 1, 5, -1])  # ties and the odd step back
        return f"2026-01-01T00:{clock[0] // 60 % 60:02d}:{clock[0] % 60:02d}.000Z"

    def add(kind: str, parent: str | None, content: Any, **extra: Any) -> str:
        uid = rng.choice(uuids) if uuids and rng.random() < 0.03 else f"u{len(entries)}"  # a duplicate uuid
        entry = {"type": kind, "uuid": uid, "parentUuid": parent, "sessionId": sid, "timestamp": stamp(), "cwd": "/w"}
        if kind in ("user", "assistant"):
            entry["message"] = {"role": kind, "content": content}
        entry.update(extra)
        entries.append(entry)
        uuids.append(uid)
        return uid

    head: str | None = None
    for turn in range(rng.randint(1, 6)):
        if uuids and rng.random() < 0.2:
            head = rng.choice(uuids)  # a retry: a new branch from an earlier entry
        flags: dict[str, Any] = {}
        r = rng.random()
        if r < 0.08:
            flags["isMeta"] = True
        elif r < 0.12:
            flags["isSidechain"] = True
            flags["agentId"] = "a1"
        elif r < 0.15:
            flags["teamName"] = "t"
        head = add("user", head, rng.choice([f"prompt {turn}", [{"type": "text", "text": f"block {turn}"}]]), **flags)
        if rng.random() < 0.2:
            head = add("progress", head, None)
        response = f"msg_{rng.randint(0, 3) if rng.random() < 0.1 else turn}"  # the odd reused response id
        blocks = rng.randint(1, 4)
        made: list[tuple[str, str]] = []
        for b in range(blocks):
            if rng.random() < 0.7:
                call = f"toolu_{rng.randint(0, 2) if rng.random() < 0.25 else f'{turn}_{b}'}"  # ids reused across responses
                content: Any = [{"type": "tool_use", "id": call, "name": "Bash", "input": {}}]
            else:
                call = ""
                content = [{"type": "text", "text": f"says {turn}.{b}"}]
            extra: dict[str, Any] = {}
            if rng.random() < 0.1:
                extra["isSidechain"] = True
                extra["agentId"] = "a1"
            head = add("assistant", head, content, **extra)
            entries[-1]["message"]["id"] = response
            if call:
                made.append((call, head))
                calls.append((call, head, response))
        results: list[str] = []
        if made and rng.random() < 0.3:  # one entry answering every call
            answers = [{"type": "tool_result", "tool_use_id": c, "content": "ok"} for c, _ in made]
            results.append(add("user", made[0][1], answers))
        else:
            for call, owner in made:
                if rng.random() < 0.1:
                    continue  # never answered
                parent = owner if rng.random() < 0.85 else rng.choice(uuids)  # a stray result
                extra = {"sourceToolAssistantUUID": owner} if rng.random() < 0.5 else {}
                if rng.random() < 0.2:  # named after a sibling block of the response, not its own call
                    extra["sourceToolAssistantUUID"] = rng.choice(made)[1]
                if rng.random() < 0.05:
                    extra["isSidechain"] = True
                results.append(add("user", parent, [{"type": "tool_result", "tool_use_id": call, "content": "ok"}], **extra))
                if rng.random() < 0.15:  # answered twice, the second time from elsewhere
                    again = {"sourceToolAssistantUUID": rng.choice(made)[1]} if rng.random() < 0.5 else {}
                    add("user", rng.choice(uuids), [{"type": "tool_result", "tool_use_id": call, "content": "again"}], **again)
            if calls and rng.random() < 0.2:  # a late stray answer to an earlier turn's call
                old_call, _, _ = rng.choice(calls)
                add("user", rng.choice(uuids), [{"type": "tool_result", "tool_use_id": old_call, "content": "late"}])
        if results:
            head = rng.choice(results)
        if rng.random() < 0.3:
            head = add(rng.choice(["system", "attachment"]), head, None)
    for _ in range(rng.randint(0, 3)):  # titles, tags (a clear too), other cwds, in any order
        kind = rng.choice(["custom-title", "ai-title", "tag", "tag-clear", "cwd", "summary"])
        if kind == "custom-title":
            entries.append({"type": "custom-title", "customTitle": rng.choice(["named", ""]), "sessionId": sid})
        elif kind == "ai-title":
            entries.append({"type": "ai-title", "aiTitle": f"ai {rng.randint(0, 9)}", "sessionId": sid})
        elif kind == "tag":
            entries.append({"type": "tag", "tag": f"t{rng.randint(0, 9)}", "sessionId": sid})
        elif kind == "tag-clear":
            entries.append({"type": "tag", "tag": "", "sessionId": sid})
        elif kind == "cwd":
            entries.append({"type": "system", "uuid": f"c{len(entries)}", "cwd": f"/elsewhere/{rng.randint(0, 9)}", "gitBranch": "b"})
        else:
            entries.append({"type": "summary", "summary": "a summary", "leafUuid": "u0"})
    if rng.random() < 0.1:
        entries.append(["not", "an", "object"])
    return entries


def write_lines(path: Path, entries: list[Any], extra_lines: list[str] = ()) -> None:  # type: ignore[assignment]
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(e) if not isinstance(e, str) else e for e in entries] + list(extra_lines)
    path.write_text("".join(line + "\n" for line in lines))


@pytest.mark.parametrize("seed", range(60))
def test_random_trees_read_alike(config: Path, seed: int) -> None:
    rng = random.Random(seed)
    project = config / "projects" / project_dir_name("/w")
    sessions = []
    for _ in range(10):
        sid = sid_of(rng)
        sessions.append(sid)
        bad = ["{cut", "[1, 2"] if rng.random() < 0.2 else []
        write_lines(project / f"{sid}.jsonl", random_transcript(rng, sid), bad)
        os.utime(project / f"{sid}.jsonl", (1, 1_700_000_000 + rng.randint(0, 3)))  # mtime ties too
    for sid in sessions:
        both("get_session_messages", sid, "/w")
        both("get_session_info", sid, "/w")
        both("get_session_info", sid)
    both("list_sessions", "/w")
    both("list_sessions")
    for limit, offset in [(None, 0), (3, 0), (3, 2), (0, 4), (-1, 1), (None, -2), (5, -3), (100, 9), (2, 50)]:
        both("list_sessions", "/w", limit=limit, offset=offset)
        both("get_session_messages", sessions[0], "/w", limit=limit, offset=offset)


@pytest.mark.parametrize("seed", range(40))
def test_random_trees_from_a_store_read_alike(seed: int) -> None:
    rng = random.Random(1000 + seed)
    mine, theirs = ours.InMemorySessionStore(), official.InMemorySessionStore()
    project_key = project_dir_name(os.path.realpath("/w"))
    sids = []
    for _ in range(6):
        sid = sid_of(rng)
        sids.append(sid)
        entries = [e for e in random_transcript(rng, sid) if isinstance(e, dict)]
        key = {"project_key": project_key, "session_id": sid}
        cut = rng.randint(0, len(entries))
        for part in (entries[:cut], entries[cut:]):  # two appends, so the summary folds twice
            if part:
                mine.append(key, part)  # type: ignore[arg-type]
                asyncio.run(theirs.append(key, part))
    for sid in sids:
        both_store("get_session_messages_from_store", mine, theirs, sid, "/w")
        both_store("get_session_info_from_store", mine, theirs, sid, "/w")
    # The stores' clocks differ, so the listing is compared row by row without mtimes.
    strip = lambda rows: sorted((r | {"last_modified": 0} for r in rows), key=lambda r: r["session_id"])  # noqa: E731
    assert strip(plain(ours.list_sessions_from_store(mine, "/w"))) == strip(
        plain(asyncio.run(official.list_sessions_from_store(theirs, "/w")))
    )


# ---------------------------------------------------------------- listing by worktree and long paths


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_worktrees_and_subdirectories(config: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "pkg" / "sub").mkdir(parents=True)
    git("init", "-q", cwd=repo)
    git("-c", "user.email=a@b", "-c", "user.name=n", "commit", "-q", "--allow-empty", "-m", "x", cwd=repo)
    git("worktree", "add", "-q", str(tmp_path / "repo-wt"), cwd=repo)
    git("worktree", "add", "-q", str(tmp_path / "repo-wt2"), cwd=repo)
    rng = random.Random(7)
    places = [repo, tmp_path / "repo-wt", tmp_path / "repo-wt2", repo / "pkg" / "sub", tmp_path / "repo-other"]
    ids = {}
    for n, place in enumerate(places):
        real = os.path.realpath(place)
        sid = sid_of(rng)
        ids[place] = sid
        write_lines(config / "projects" / project_dir_name(real) / f"{sid}.jsonl", [
            {"type": "user", "uuid": "x", "sessionId": sid, "message": {"role": "user", "content": f"hi from {place.name}"}}])
        if n == 1:  # the same session under two projects: the newest row wins
            write_lines(config / "projects" / project_dir_name(os.path.realpath(repo)) / f"{sid}.jsonl", [
                {"type": "user", "uuid": "y", "sessionId": sid, "message": {"role": "user", "content": "dup"}}])
    for where in (repo, repo / "pkg" / "sub", tmp_path / "repo-wt"):
        rows = both("list_sessions", str(where))
        both("list_sessions", str(where), include_worktrees=False)
        both("list_sessions", str(where), limit=2, offset=1)
        assert ids[tmp_path / "repo-other"] not in {r["session_id"] for r in rows}
    # A session of another worktree is found by id from this one.
    both("get_session_info", ids[tmp_path / "repo-wt2"], str(repo))
    both("get_session_messages", ids[tmp_path / "repo-wt2"], str(repo))
    assert ours.get_session_info(ids[tmp_path / "repo-wt2"], str(repo)) is not None


def test_a_subdirectory_of_a_repository_with_one_worktree(config: Path, tmp_path: Path) -> None:
    """One worktree: only the directory's own project is listed, not the repository root's."""
    repo = tmp_path / "solo"
    (repo / "sub").mkdir(parents=True)
    git("init", "-q", cwd=repo)
    for place, name in ((repo, "root"), (repo / "sub", "sub")):
        sid = sid_of(random.Random(name))
        write_lines(config / "projects" / project_dir_name(os.path.realpath(place)) / f"{sid}.jsonl", [
            {"type": "user", "uuid": "u", "sessionId": sid, "message": {"role": "user", "content": name}}])
    assert [r["summary"] for r in both("list_sessions", str(repo / "sub"))] == ["sub"]


def test_long_paths_match_by_prefix(config: Path) -> None:
    long = "/w/" + "a-very-long-directory-name/" * 12 + "end"
    sid = "7a1e0000-0000-4000-8000-000000000001"
    # The CLI's own hash differs from the SDKs': a directory with another suffix must be found.
    name = project_dir_name(long)
    write_lines(config / "projects" / (name[:200] + "-cliHash") / f"{sid}.jsonl", [
        {"type": "user", "uuid": "u", "sessionId": sid, "message": {"role": "user", "content": "long"}}])
    assert both("list_sessions", long)[0]["session_id"] == sid
    both("get_session_info", sid, long)
    assert both("get_session_messages", sid, long)
    ours.rename_session(sid, "renamed", long)
    assert both("get_session_info", sid, long)["custom_title"] == "renamed"


# ---------------------------------------------------------------- subagents and sidecars


@pytest.mark.parametrize("sidecar", [None, "", "{not json", "[1]", '{"toolUseId": 5}', '{"toolUseId": "toolu_1", "parentAgentId": "p"}', b"\xff\xfe"])
def test_subagent_sidecars_in_every_state(config: Path, sidecar: Any) -> None:
    sid = "7a1e0000-0000-4000-8000-000000000002"
    project = config / "projects" / project_dir_name("/w")
    write_lines(project / f"{sid}.jsonl", [{"type": "user", "uuid": "u", "sessionId": sid, "message": {"role": "user", "content": "x"}}])
    agents = project / sid / "subagents"
    for rel in ("agent-b.jsonl", "workflows/run-1/agent-a.jsonl", "agent-c.jsonl"):
        chain = [
            {"type": "user", "uuid": "s1", "parentUuid": None, "isSidechain": True, "message": {"role": "user", "content": "go"}},
            {"type": "progress", "uuid": "s2", "parentUuid": "s1"},
            {"type": "assistant", "uuid": "s3", "parentUuid": "s2", "isSidechain": True, "message": {"role": "assistant", "content": []}},
        ]
        write_lines(agents / rel, chain)
    (agents / "notes.txt").write_text("not an agent")
    if sidecar is not None:
        target = agents / "workflows" / "run-1" / "agent-a.meta.json"
        target.write_bytes(sidecar if isinstance(sidecar, bytes) else sidecar.encode())
    assert both("list_subagents", sid, "/w") == ["b", "c", "a"]
    both("list_subagents", sid)
    for agent in ("a", "b", "missing", ""):
        both("get_subagent_messages", sid, agent, "/w")
        both("get_subagent_messages", sid, agent, "/w", limit=1, offset=1)
    mine, theirs = ours.InMemorySessionStore(), official.InMemorySessionStore()
    ours.import_session_to_store(sid, mine, directory="/w")
    asyncio.run(official.import_session_to_store(sid, theirs, directory="/w"))
    both_store("list_subagents_from_store", mine, theirs, sid, "/w")
    for agent in ("a", "b", "missing"):
        both_store("get_subagent_messages_from_store", mine, theirs, sid, agent, "/w")


# ---------------------------------------------------------------- changes read back


def _normalised_fork(path: Path) -> list[dict[str, Any]]:
    """A fork's entries with its fresh uuids replaced by their order of appearance and the
    time of the fork by a placeholder: what is left must not depend on the SDK."""
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    names: dict[str, str] = {}
    fork_id = entries[0]["sessionId"]

    def name(value: Any) -> Any:
        if isinstance(value, str) and (value == fork_id or value not in names and len(value) == 36):
            names.setdefault(value, f"id{len(names)}")
        return names.get(value, value) if isinstance(value, str) else value

    out = []
    newest = max(e["timestamp"] for e in entries)
    for e in entries:
        e = {k: name(v) if k in ("uuid", "parentUuid", "logicalParentUuid", "sessionId") else v for k, v in e.items()}
        if e.get("timestamp") == newest:
            e["timestamp"] = "fork time"
        out.append(e)
    return out


@pytest.mark.parametrize("seed", range(8))
def test_forks_write_what_the_official_writes(config: Path, seed: int) -> None:
    rng = random.Random(300 + seed)
    project = config / "projects" / project_dir_name("/w")
    sid = sid_of(rng)
    entries = [e for e in random_transcript(rng, sid) if isinstance(e, dict)]
    for e in entries[: len(entries) // 2]:
        e.update(teamName="t", agentName="n", slug="s", logicalParentUuid=entries[0].get("uuid"))
    real = lambda v: str(uuid.uuid5(uuid.NAMESPACE_OID, v)) if isinstance(v, str) else v  # noqa: E731
    for e in entries:  # a message to fork up to must have a real uuid
        for k in ("uuid", "parentUuid", "logicalParentUuid", "sourceToolAssistantUUID"):
            if k in e:
                e[k] = real(e[k])
    entries.append({"type": "content-replacement", "sessionId": sid, "replacements": [{"k": 1}]})
    write_lines(project / f"{sid}.jsonl", entries)
    main = [e["uuid"] for e in entries if e.get("type") in ("user", "assistant") and not e.get("isSidechain")]
    if not main:
        pytest.skip("this seed wrote no main-chain message")  # the seeds are fixed: see the count below
    for title, cut in ((None, None), (" my fork ", main[len(main) // 2]), ("  ", main[0])):
        mine = ours.fork_session(sid, "/w", up_to_message_id=cut, title=title).session_id
        theirs = official.fork_session(sid, "/w", up_to_message_id=cut, title=title).session_id
        assert _normalised_fork(project / f"{mine}.jsonl") == _normalised_fork(project / f"{theirs}.jsonl")
        both("get_session_messages", mine, "/w")
        assert plain(ours.get_session_info(mine, "/w")) | {"session_id": 0, "last_modified": 0, "created_at": 0} == plain(
            official.get_session_info(theirs, "/w")
        ) | {"session_id": 0, "last_modified": 0, "created_at": 0}


def test_every_fork_seed_writes_a_main_chain() -> None:
    """The fork test above skips a seed without a main-chain message: none of its seeds does."""
    for seed in range(8):
        rng = random.Random(300 + seed)
        sid = sid_of(rng)
        assert any(e.get("type") in ("user", "assistant") and not e.get("isSidechain") for e in random_transcript(rng, sid) if isinstance(e, dict))


def test_edits_read_back_alike(config: Path) -> None:
    project = config / "projects" / project_dir_name("/w")
    sid = sid_of(random.Random(3))
    write_lines(project / f"{sid}.jsonl", [e for e in random_transcript(random.Random(11), sid) if isinstance(e, dict)])
    for tag in ("x\u200by", "\ufeffz", "\u0301a", None):
        ours.tag_session(sid, tag, "/w")
        row = both("get_session_info", sid, "/w")
        assert row is None or row["tag"] == (official.get_session_info(sid, "/w").tag)  # type: ignore[union-attr]
    for bad_tag in ("\u200b", "  "):
        with pytest.raises(ValueError, match="tag must be non-empty"):
            ours.tag_session(sid, bad_tag, "/w")
    ours.rename_session(sid, " title ", "/w")
    assert both("get_session_info", sid, "/w")["custom_title"] == "title"
    ours.delete_session(sid, "/w")
    assert both("get_session_info", sid, "/w") is None


@pytest.mark.parametrize("seed", range(30))
def test_the_summary_fold_matches_the_official(seed: int) -> None:
    """The store fold, batch by batch, against the official fold on the same entries."""
    rng = random.Random(500 + seed)
    sid = sid_of(rng)
    entries = [e for e in random_transcript(rng, sid) if isinstance(e, dict)]
    for e in entries:
        if rng.random() < 0.2:
            e["cwd"] = rng.choice(["", "/a", "/b"])
    key = {"project_key": "k", "session_id": sid}
    mine = theirs = None
    while entries:
        batch, entries = entries[: rng.randint(1, 4)], entries[4:] if False else entries[rng.randint(1, 4):]
        mine = ours.fold_session_summary(mine, key, batch)  # type: ignore[arg-type]
        theirs = official.fold_session_summary(theirs, key, batch)  # type: ignore[arg-type]
        assert mine == theirs


def test_large_transcripts_read_head_and_tail(config: Path) -> None:
    """Past 64 KiB the head and the tail are different windows: a title in the middle is not
    seen, one in the tail is; the first prompt comes from the head only."""
    sid = "7a1e0000-0000-4000-8000-000000000004"
    filler = [{"type": "progress", "uuid": f"p{i}", "data": "x" * 900} for i in range(100)]
    for size in (10, 100):
        entries = [{"type": "user", "uuid": "u", "sessionId": sid, "cwd": "/w", "message": {"role": "user", "content": "first"}}]
        entries += filler[: size // 2] + [{"type": "ai-title", "aiTitle": "middle", "sessionId": sid}] + filler[size // 2 : size]
        entries += [{"type": "custom-title", "customTitle": "", "sessionId": sid}, {"type": "ai-title", "aiTitle": "late"}]
        entries[1:1] = [{"type": "ai-title", "aiTitle": "early"}]  # in the head: read there only when the tail has none
        write_lines(config / "projects" / project_dir_name("/w") / f"{sid}.jsonl", entries)
        assert both("get_session_info", sid, "/w")["custom_title"] == "late"
        both("list_sessions", "/w")
        mine, theirs = ours.InMemorySessionStore(), official.InMemorySessionStore()
        ours.import_session_to_store(sid, mine, directory="/w")
        asyncio.run(official.import_session_to_store(sid, theirs, directory="/w"))
        assert both_store("get_session_info_from_store", mine, theirs, sid, "/w")["custom_title"] == "late"
        forked = ours.fork_session(sid, "/w").session_id
        assert ours.get_session_info(forked, "/w").custom_title == "late (fork)"  # type: ignore[union-attr]


def test_store_listing_with_fresh_stale_and_missing_records() -> None:
    """The summary fast path: a record per session, one stale record, one session with none
    (a store whose fold missed it), one whose load fails; paged at every edge."""

    class Partial(ours.InMemorySessionStore):
        def __init__(self) -> None:
            super().__init__()
            self.hidden: set[str] = set()
            self.broken: set[str] = set()

        def list_session_summaries(self, project_key: str) -> Any:
            return [r for r in super().list_session_summaries(project_key) if r["session_id"] not in self.hidden]

        def load(self, key: Any) -> Any:
            if key["session_id"] in self.broken:
                raise RuntimeError("backend down")
            return super().load(key)

    class TheirPartial(official.InMemorySessionStore):  # type: ignore[misc]
        def __init__(self, hidden: set[str], broken: set[str]) -> None:
            super().__init__()
            self.hidden, self.broken = hidden, broken

        async def list_session_summaries(self, project_key: str) -> Any:
            return [r for r in await super().list_session_summaries(project_key) if r["session_id"] not in self.hidden]

        async def load(self, key: Any) -> Any:
            if key["session_id"] in self.broken:
                raise RuntimeError("backend down")
            return await super().load(key)

    rng = random.Random(5)
    mine = Partial()
    key_of = lambda sid: {"project_key": project_dir_name(os.path.realpath("/w")), "session_id": sid}  # noqa: E731
    sids = [sid_of(rng) for _ in range(7)]
    theirs = TheirPartial(mine.hidden, mine.broken)
    for i, sid in enumerate(sids):
        entries = [{"type": "user", "uuid": f"u{i}", "sessionId": sid, "timestamp": "2026-01-01T00:00:00Z",
                    "message": {"role": "user", "content": f"prompt {i}"}}]  # fmt: skip
        mine.append(key_of(sid), entries)  # type: ignore[arg-type]
        asyncio.run(theirs.append(key_of(sid), entries))
    mine.hidden.add(sids[1])
    mine.broken.add(sids[1])
    mine.hidden.add(sids[2])
    # Align the clocks: copy our store's mtimes into theirs so rows compare whole.
    theirs._mtimes = {k: mine._written[(k.split("/")[0], k.split("/")[1], "")] for k in theirs._mtimes}
    for (pk, sid), record in mine._records.items():
        theirs._summaries[(pk, sid)]["mtime"] = record["mtime"]
    stale = sids[3]
    theirs._summaries[(key_of(stale)["project_key"], stale)]["mtime"] -= 10
    mine._records[(key_of(stale)["project_key"], stale)]["mtime"] -= 10
    for limit, offset in [(None, 0), (2, 0), (2, 1), (0, 3), (10, -1), (3, 5)]:
        rows = both_store("list_sessions_from_store", mine, theirs, "/w", limit=limit, offset=offset)
        if limit is None and offset == 0:
            assert {"": sids[1]} == {r["summary"]: r["session_id"] for r in rows if not r["summary"]}


def test_strays_are_weighed_in_file_order(config: Path) -> None:
    """Two stray results answer the same open call; only the one written first is taken,
    whichever entry of the response each was filed under."""
    sid = "7a1e0000-0000-4000-8000-000000000003"

    def entry(kind: str, uid: str, parent: str | None, content: Any, **extra: Any) -> dict[str, Any]:
        return {"type": kind, "uuid": uid, "parentUuid": parent, "sessionId": sid, "timestamp": "2026-01-01T00:00:00.000Z",
                "message": {"role": kind, "content": content, **({"id": "msg_1"} if kind == "assistant" else {})}, **extra}  # fmt: skip

    def result(call: str, text: str) -> list[dict[str, Any]]:
        return [{"type": "tool_result", "tool_use_id": call, "content": text}]

    entries = [
        entry("user", "u0", None, "go"),
        entry("assistant", "m1", "u0", [{"type": "tool_use", "id": "c1", "name": "Bash", "input": {}}], agentId="x"),
        entry("assistant", "m2", "m1", [{"type": "tool_use", "id": "c2", "name": "Bash", "input": {}}]),
        entry("user", "a", "u0", result("c1", "first, filed under m2 by its source"), sourceToolAssistantUUID="m2"),
        entry("user", "b", "u0", result("c1", "second, filed under m1 as the caller's"), agentId="x"),
        entry("user", "r2", "m2", result("c2", "on the path")),
        entry("user", "u3", "r2", "next"),
    ]
    write_lines(config / "projects" / project_dir_name("/w") / f"{sid}.jsonl", entries)
    texts = [m["message"]["content"] for m in both("get_session_messages", sid, "/w")]
    assert result("c1", "first, filed under m2 by its source") in texts
    assert result("c1", "second, filed under m1 as the caller's") not in texts
