"""The session helpers against the official SDK's, on transcripts the REAL CLIs wrote.

Once per test session, each CLI (2.1.120 and 2.1.330) writes, into a HOME of its
own: a two-turn session with parallel tool calls and an Agent subagent, a
CLI fork of it (``--fork-session``), and a session resumed once. Then both
SDKs are asked the same questions of the same directory (listing, info,
messages with paging, subagents, and the store-backed functions after
``import_session_to_store``) and must answer alike; the mutations of one are
read by the other.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import claude_agent_sdk as official
import pytest

import claude_sdkurl as ours

from .compare import both, plain
from claude_sdkurl import ClaudeAgentOptions, ResultMessage, query
from claude_sdkurl.testing import MockMessagesAPI, Reply, install_cli, offline_env, text, tool_use

pytestmark = pytest.mark.realcli

VERSIONS = ["2.1.120", "2.1.330"]


def _responder(request: Any) -> Reply:
    """Decides by content, not by order: a background subagent calls the API concurrently."""
    if "SUBTASK" in json.dumps(request.messages()[:1]):
        return text("sub done")
    if request.tool_results():
        return text("after tools")
    last = request.last_user_text()
    if "alpha" in last:  # two tool calls in one response: the transcript forks, as in real use
        return Reply(
            [
                {"type": "tool_use", "id": "toolu_par_1", "name": "Bash", "input": {"command": "echo one"}},
                {"type": "tool_use", "id": "toolu_par_2", "name": "Bash", "input": {"command": "echo two"}},
            ]
        )
    if "delegate" in last:
        return tool_use("Agent", {"description": "sub", "prompt": "SUBTASK: say done", "subagent_type": "general-purpose"})
    return text(f"ok: {last[:40]}")


def _user(text_: str) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": text_}, "parent_tool_use_id": None}


@dataclasses.dataclass
class Written:
    home: Path
    work: Path
    sessions: dict[str, str]  # role -> session id


def _write(version: str, root: Path) -> Written:
    home = root / version
    work = home / "work"
    work.mkdir(parents=True)
    with MockMessagesAPI(_responder) as api:

        def run(prompts: Any, **kw: Any) -> str:
            opts = ClaudeAgentOptions(
                cli_path=str(install_cli(version)),
                env=offline_env(api.url, home),
                cwd=str(work),
                allowed_tools=["Bash", "Agent", "Task"],
                permission_mode="acceptEdits",
                **kw,
            )
            results = [m for m in query(prompts, opts) if isinstance(m, ResultMessage)]
            assert results and not results[0].is_error, results
            return results[0].session_id

        main = run([_user("alpha: run two commands"), _user("now delegate to a helper")])
        fork = run("forked prompt", resume=main, fork_session=True)
        single = run("gamma the first")
        assert run("gamma again", resume=single) == single
    return Written(home, work, {"main": main, "fork": fork, "single": single})


@pytest.fixture(scope="module")
def written() -> Iterator[dict[str, Written]]:
    with tempfile.TemporaryDirectory(prefix="claude-sdkurl-transcripts-") as d:
        yield {v: _write(v, Path(d)) for v in VERSIONS}


@pytest.fixture(params=VERSIONS)
def tree(request: pytest.FixtureRequest, written: dict[str, Written], monkeypatch: pytest.MonkeyPatch) -> Written:
    w = written[request.param]
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(w.home / ".claude"))
    return w


def test_the_cli_wrote_what_the_comparisons_need(tree: Written) -> None:
    main = tree.sessions["main"]
    assert tree.sessions["fork"] != main
    assert ours.list_subagents(main, str(tree.work)), "the Agent call left a subagent transcript"
    messages = ours.get_session_messages(main, str(tree.work))
    calls = [b for m in messages if m.type == "assistant" for b in m.message["content"] if b.get("type") == "tool_use"]
    assert {c["id"] for c in calls} >= {"toolu_par_1", "toolu_par_2"}  # both parallel calls, not only one branch
    results = [
        b for m in messages if m.type == "user" and isinstance(m.message["content"], list)
        for b in m.message["content"] if b.get("type") == "tool_result"
    ]  # fmt: skip
    assert {r["tool_use_id"] for r in results} >= {"toolu_par_1", "toolu_par_2"}


def test_listing_and_info_match_the_official(tree: Written) -> None:
    listed = both("list_sessions", str(tree.work))
    assert {s["session_id"] for s in listed} == set(tree.sessions.values())
    assert "gamma again" in {s["summary"] for s in listed}  # lastPrompt wins over the first prompt
    both("list_sessions")
    both("list_sessions", str(tree.work), limit=2, offset=1)
    both("list_sessions", str(tree.work), include_worktrees=False)
    both("list_sessions", str(tree.home / "nowhere"))
    for sid in tree.sessions.values():
        info = both("get_session_info", sid, str(tree.work))
        assert info is not None and info["cwd"] == str(tree.work)
        both("get_session_info", sid)
    both("get_session_info", "not-a-uuid")
    both("get_session_info", "00000000-0000-4000-8000-000000000000")


def test_messages_and_subagents_match_the_official(tree: Written) -> None:
    for sid in tree.sessions.values():
        messages = both("get_session_messages", sid, str(tree.work))
        assert messages and all(m["session_id"] for m in messages)
        both("get_session_messages", sid)
        both("get_session_messages", sid, str(tree.work), limit=2, offset=1)
        both("get_session_messages", sid, str(tree.work), offset=3)
        for agent in both("list_subagents", sid, str(tree.work)):
            sub = both("get_subagent_messages", sid, agent, str(tree.work))
            assert sub
            if tree.home.name == "2.1.330":  # 2.1.120's sidecar has no toolUseId
                assert sub[0]["parent_tool_use_id"], "the sidecar names the Agent call"
            both("get_subagent_messages", sid, agent, str(tree.work), limit=1, offset=1)
        both("get_subagent_messages", sid, "nope", str(tree.work))


def test_store_backed_reads_match_the_official(tree: Written) -> None:
    mine, theirs = ours.InMemorySessionStore(), official.InMemorySessionStore()
    for sid in tree.sessions.values():
        ours.import_session_to_store(sid, mine, directory=str(tree.work))
        asyncio.run(official.import_session_to_store(sid, theirs, directory=str(tree.work)))
    key = ours.project_key_for_directory(tree.work)
    assert key == official.project_key_for_directory(tree.work)
    for sid in tree.sessions.values():
        assert mine.get_entries({"project_key": key, "session_id": sid}) == theirs.get_entries(
            {"project_key": key, "session_id": sid}
        )

    def compare(name: str, *args: Any, **kw: Any) -> Any:
        a = plain(getattr(ours, name)(mine, *args, **kw))
        b = plain(asyncio.run(getattr(official, name)(theirs, *args, **kw)))
        if "info" in name or "list_sessions" in name:
            # last_modified: each store's own write clock, or the wall clock when the last entry has no timestamp
            a, b = _no_mtime(a), _no_mtime(b)
        assert a == b, name
        return a

    listed = compare("list_sessions_from_store", str(tree.work))
    assert {s["session_id"] for s in listed} == set(tree.sessions.values())
    for sid in tree.sessions.values():
        info = compare("get_session_info_from_store", sid, str(tree.work))
        assert info is not None
        disk = plain(ours.get_session_info(sid, str(tree.work)))
        assert {k: v for k, v in info.items() if k not in ("last_modified", "file_size")} == {
            k: v for k, v in disk.items() if k not in ("last_modified", "file_size")
        }
        assert compare("get_session_messages_from_store", sid, str(tree.work)) == plain(
            ours.get_session_messages(sid, str(tree.work))
        )
        for agent in compare("list_subagents_from_store", sid, str(tree.work)):
            assert compare("get_subagent_messages_from_store", sid, agent, str(tree.work)) == plain(
                ours.get_subagent_messages(sid, agent, str(tree.work))
            )


def _no_mtime(value: Any) -> Any:
    if isinstance(value, list):
        return [_no_mtime(v) for v in value]
    return {**value, "last_modified": 0} if isinstance(value, dict) else value


def _shape(messages: list[Any]) -> list[Any]:
    """Messages without the ids a fork renews."""
    return [(m.type, json.dumps(m.message, sort_keys=True)) for m in messages]


def test_mutations_are_read_alike_by_both(tree: Written, tmp_path: Path) -> None:
    work = str(tree.work)
    sid = tree.sessions["single"]
    ours.rename_session(sid, "  renamed by us  ", work)
    assert official.get_session_info(sid, work).custom_title == "renamed by us"  # type: ignore[union-attr]
    ours.tag_session(sid, "exp\u200b-1", work)  # the zero-width space is sanitised away
    assert official.get_session_info(sid, work).tag == "exp-1"  # type: ignore[union-attr]
    ours.tag_session(sid, None, work)
    assert official.get_session_info(sid, work).tag is None  # type: ignore[union-attr]
    both("list_sessions", work)

    main = tree.sessions["main"]
    source = ours.get_session_messages(main, work)
    cut = source[2].uuid
    forked = ours.fork_session(main, work, up_to_message_id=cut)
    theirs = official.fork_session(main, work, up_to_message_id=cut)
    mine_msgs = ours.get_session_messages(forked.session_id, work)
    assert _shape(mine_msgs) == _shape(official.get_session_messages(theirs.session_id, work))
    assert _shape(mine_msgs) == _shape(source[:3])
    assert plain(official.get_session_messages(forked.session_id, work)) == plain(mine_msgs)
    mine_info = ours.get_session_info(forked.session_id, work)
    assert mine_info is not None and mine_info.custom_title == official.get_session_info(theirs.session_id, work).custom_title  # type: ignore[union-attr]

    for dead in (forked.session_id, theirs.session_id):
        ours.delete_session(dead, work)
        assert official.get_session_info(dead, work) is None
    with pytest.raises(FileNotFoundError):
        ours.delete_session(forked.session_id, work)
    for bad in (lambda: ours.rename_session("nope", "t"), lambda: ours.rename_session(sid, "   ", work)):
        with pytest.raises(ValueError):
            bad()
    with pytest.raises(ValueError, match="not found"):
        ours.fork_session(main, work, up_to_message_id="00000000-0000-4000-8000-000000000000")


def test_store_mutations_are_read_alike(tree: Written) -> None:
    work = str(tree.work)
    mine, theirs = ours.InMemorySessionStore(), official.InMemorySessionStore()
    main = tree.sessions["main"]
    ours.import_session_to_store(main, mine, directory=work)
    asyncio.run(official.import_session_to_store(main, theirs, directory=work))
    ours.rename_session_via_store(mine, main, " titled ", work)
    asyncio.run(official.rename_session_via_store(theirs, main, " titled ", work))
    ours.tag_session_via_store(mine, main, "t\u200b1", work)
    asyncio.run(official.tag_session_via_store(theirs, main, "t\u200b1", work))
    a = plain(ours.get_session_info_from_store(mine, main, work))
    b = plain(asyncio.run(official.get_session_info_from_store(theirs, main, work)))
    assert _no_mtime(a) == _no_mtime(b) and a["custom_title"] == "titled" and a["tag"] == "t1"
    cut = ours.get_session_messages_from_store(mine, main, work)[2].uuid
    f_mine = ours.fork_session_via_store(mine, main, work, up_to_message_id=cut)
    f_theirs = asyncio.run(official.fork_session_via_store(theirs, main, work, up_to_message_id=cut))
    assert _shape(ours.get_session_messages_from_store(mine, f_mine.session_id, work)) == _shape(
        asyncio.run(official.get_session_messages_from_store(theirs, f_theirs.session_id, work))
    )
    ours.delete_session_via_store(mine, f_mine.session_id, work)
    assert ours.get_session_info_from_store(mine, f_mine.session_id, work) is None
    with pytest.raises(ValueError, match="non-empty"):
        ours.rename_session_via_store(mine, main, "  ", work)
