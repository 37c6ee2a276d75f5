"""The relay's stream scrub (``relay/_stream_scrub.py``) line by line, for what mutation testing
found unpinned (``tools/mutation_score.py --area relay``): a secret streamed in pieces in text,
thinking and tool input, what is kept back and when it goes on (a block's end, the message's
end), the bound on what is kept, blocks kept apart, and lines that go on as they came. No CLI,
no server: the scrub is given lines as the CLI writes them."""

from __future__ import annotations

import json
import re
from typing import Any

from claude_sdkurl.relay._stream_scrub import MAX_HELD, StreamScrub, _open_from


def scrub(text: str) -> str:
    return re.sub(r"sk-ant-[A-Za-z0-9_\-]+", "[key]", re.sub(r"(?i)bearer\s+\S+", "Bearer [token]", text)).replace("hunter2", "[secret]")


def delta(text: str, kind: str = "text_delta", index: int = 0, parent: Any = None) -> str:
    field = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "partial_json"}[kind]
    return json.dumps({"type": "stream_event", "parent_tool_use_id": parent, "session_id": "s",
                       "event": {"type": "content_block_delta", "index": index, "delta": {"type": kind, field: text}}})  # fmt: skip


def stop(kind: str = "content_block_stop", index: int = 0, parent: Any = None) -> str:
    return json.dumps({"type": "stream_event", "parent_tool_use_id": parent, "event": {"type": kind, "index": index}})


def texts(lines: list[str]) -> list[Any]:
    out = []
    for line in lines:
        event = json.loads(line)["event"]
        d = event.get("delta")
        out.append(next(iter(v for k, v in d.items() if k != "type")) if d else event["type"])
    return out


def test_a_key_streamed_in_pieces_never_goes_on_whole_or_in_part() -> None:
    s = StreamScrub(scrub, [])
    got = [texts(s.lines(delta(p))) for p in ("my key is s", "k-", "ant-abc", "def", " done")]
    assert got == [["my key is "], [], [], [], ["[key] done"]]
    first = json.loads(StreamScrub(scrub, []).lines(delta("my key is sk-"))[0])
    assert first["session_id"] == "s" and first["parent_tool_use_id"] is None  # the line's other fields kept
    assert first["event"]["delta"] == {"type": "text_delta", "text": "my key is "}


def test_thinking_and_tool_input_are_scrubbed_across_deltas_too() -> None:
    for kind in ("thinking_delta", "input_json_delta"):
        s = StreamScrub(scrub, ["hunter2"])
        assert texts(s.lines(delta("pass hun", kind))) == ["pass "]
        assert texts(s.lines(delta("ter2!", kind))) == ["[secret]!"]
        assert json.loads(s.lines(delta("x", kind))[0])["event"]["delta"]["type"] == kind


def test_what_was_kept_back_goes_on_scrubbed_at_the_blocks_end_then_the_end() -> None:
    s = StreamScrub(scrub, [])
    assert texts(s.lines(delta("the key sk-ant-abc"))) == ["the key "]
    assert texts(s.lines(stop())) == ["[key]", "content_block_stop"]
    assert texts(s.lines(stop())) == ["content_block_stop"]  # nothing kept any more
    s.lines(delta("a Bearer abc"))
    s.lines(delta("tail sk-", index=1))
    assert texts(s.lines(stop("message_stop"))) == ["Bearer [token]", "sk-", "message_stop"]
    assert s.flush_all() == []
    s.lines(delta("x sk"))
    s.lines(delta("y sk-ant-q", parent="toolu_1"))
    assert texts(s.flush_all()) == ["sk", "[key]"]
    assert texts(s.lines(stop("message_start"))) == ["message_start"]


def test_blocks_are_kept_apart_by_index_and_parent() -> None:
    s = StreamScrub(scrub, [])
    assert texts(s.lines(delta("a sk-ant-x", index=0))) == ["a "]
    assert texts(s.lines(delta("yz", index=1))) == ["yz"]
    assert texts(s.lines(delta("b sk-ant-w", index=0, parent="toolu_1"))) == ["b "]
    assert texts(s.lines(stop(index=1))) == ["content_block_stop"]
    assert texts(s.lines(delta("y!", index=0))) == ["[key]!"]
    assert texts(s.lines(stop(index=0, parent="toolu_1"))) == ["[key]", "content_block_stop"]


def test_what_is_kept_back_is_bounded() -> None:
    s = StreamScrub(scrub, [])
    assert texts(s.lines(delta("sk-ant-" + "a" * (MAX_HELD - 7)))) == []  # MAX_HELD characters: kept back
    assert texts(s.lines(delta("b"))) == ["[key]"]  # one more: it goes on, scrubbed, as a whole token would
    assert s.flush_all() == []


def test_a_line_with_nothing_to_keep_or_scrub_goes_on_as_it_came() -> None:
    s = StreamScrub(scrub, ["hunter2"])
    for raw in (delta("plain text"), stop(), stop("message_delta"), "not json at all",
                '{"type": "stream_event", "event": "text"}', '{"type": "stream_event", bad json',
                '[1, "stream_event"]',  # not an object
                json.dumps({"type": "stream_event", "event": {"type": "content_block_delta", "delta": "x"}}),
                json.dumps({"type": "stream_event", "event": {"type": "content_block_delta", "delta": {"type": "signature_delta", "text": "sk-"}}}),
                json.dumps({"type": "stream_event", "event": {"type": "content_block_delta", "delta": {"type": "text_delta", "text": 3}}}),
                json.dumps({"type": "assistant", "pad": "x" * 70, "t": "stream_event", "text": "sk-ant-abc"})):  # fmt: skip
        assert s.lines(raw) == [raw], raw
    assert s.lines(delta("a hunter2 !")) == [delta("a [secret] !")]


def test_the_open_end_is_found_for_keys_tokens_and_secret_values() -> None:
    assert _open_from("abc sk", []) == 4 and _open_from("abc s", []) == 4 and _open_from("abc sk-ant-x_-9", []) == 4
    assert _open_from("abc sk-an", []) == 4 and _open_from("abc task", []) == 6
    assert _open_from("abc Bearer abc", []) == 4 and _open_from("abc BEARER", []) == 4 and _open_from("x be", []) == 2
    assert _open_from("abc rebear", []) == 10  # not at a word's start
    assert _open_from("x hunt", ["hunter2"]) == 2 and _open_from("plain", ["hunter2"]) == 5
    assert _open_from("ab", ["abc"]) == 0 and _open_from("abc", ["abc"]) == 3  # the whole value is no open end
    assert _open_from("xhunter", ["hunter2", "terrible"]) == 1  # the earliest open end of all
    assert _open_from("", ["a"]) == 0
    assert StreamScrub(scrub, ["", "v"])._literals == ["v"]


# ---------------------------------------------------------------------- the stored sessions (relay/_catalog.py)

import os  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from claude_sdkurl import approvals  # noqa: E402
from claude_sdkurl._engine.paths import project_dir_name, real_path  # noqa: E402
from claude_sdkurl.relay import _catalog  # noqa: E402
from claude_sdkurl.types import ClaudeAgentOptions  # noqa: E402

SID = "1f8fbd58-5023-46ae-8d79-2edecba7d17d"
KEY = "sk-ant-api03-" + "x" * 20


def session(tmp_path: Path, entries: list[dict[str, Any]], sid: str = SID) -> tuple[ClaudeAgentOptions, Path]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    folder = tmp_path / "config" / "projects" / project_dir_name(real_path(str(work)))
    folder.mkdir(parents=True, exist_ok=True)
    prompt = {"type": "user", "message": {"role": "user", "content": f"use {KEY}"}, "cwd": str(work)}
    lines = [json.dumps(dict(e, uuid=f"u{i}", sessionId=sid, timestamp=e.get("timestamp", "2026-11-28T21:52:00.000Z"))) + "\n"
             for i, e in enumerate([prompt, *entries])]  # fmt: skip
    path = folder / f"{sid}.jsonl"
    path.write_text("".join(lines))
    return ClaudeAgentOptions(cwd=str(work), env={"CLAUDE_CONFIG_DIR": str(tmp_path / "config")}), path


def call(use_id: str, command: str) -> dict[str, Any]:
    return {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": use_id, "name": "Bash", "input": {"command": command}}]}}  # fmt: skip


def deferred(use_id: str) -> dict[str, Any]:
    return {"type": "attachment", "timestamp": "2026-11-28T21:52:03.900Z", "attachment": {"type": "hook_deferred_tool", "toolUseID": use_id}}


def catalog(options: ClaudeAgentOptions, steer: bool = True, running: Any = lambda sid: False, every: bool = False) -> _catalog.Catalog:
    return _catalog.Catalog(options, scrub, steer, running, every)


def test_the_listing_scrubs_titles_and_parked_inputs_and_rereads_a_changed_session(tmp_path: Path) -> None:
    options, path = session(tmp_path, [call("toolu_1", f"curl -H 'x-api-key: {KEY}'"), deferred("toolu_1")])
    c = catalog(options)
    stored, parked = c.listing()
    assert [s["key"] for s in stored] == [_catalog.STORED_PREFIX + SID] and KEY not in json.dumps(stored)
    assert stored[0]["title"] == "use [key]" and stored[0]["state"] == "stored" and stored[0]["input_open"] is True
    assert parked == [{"session": "stored:" + SID, "session_id": SID, "tool_use_id": "toolu_1", "tool_name": "Bash",
                       "input": {"command": "curl -H 'x-api-key: [key]'"}, "parked_at": "2026-11-28T21:52:03.900Z"}]  # fmt: skip
    session(tmp_path, [call("toolu_1", "ls"), deferred("toolu_1"), call("toolu_2", "pwd"), deferred("toolu_2")])
    assert [p["tool_use_id"] for p in c.listing()[1]] == ["toolu_1"]  # reused for FRESH_SECONDS
    os.utime(path, (2_000_000_000, 2_000_000_000))
    assert [p["tool_use_id"] for p in c.listing(fresh=True)[1]] == ["toolu_1", "toolu_2"]  # changed: read again
    assert _catalog.FRESH_SECONDS == 2.0 and _catalog.SCANNED == 50


def test_the_page_decides_or_continues_only_what_it_may(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    options, _ = session(tmp_path, [call("toolu_1", "ls"), deferred("toolu_1")])
    op = {"session_id": SID, "tool_use_id": "toolu_1", "tool_name": "Bash", "input": {"command": "ls"}, "allow": True}
    assert "read-only" in catalog(options, steer=False).decide(op, print)
    assert catalog(options, every=True).decide(op, print) == _catalog.EVERY_PROJECT_READ_ONLY
    assert "names the session_id" in catalog(options).decide({**op, "input": "ls"}, print)
    assert "is running now" in catalog(options, running=lambda sid: sid == SID).decide(op, print)
    assert "does not match" in catalog(options).decide({**op, "input": {"command": "rm -rf /"}}, print)
    assert "read-only" in catalog(options, steer=False).continue_session(SID, "go", print)
    assert catalog(options, every=True).continue_session(SID, "go", print) == _catalog.EVERY_PROJECT_READ_ONLY
    assert catalog(options).continue_session("../x", "go", print) == "not a session id: '../x'"
    assert catalog(options).continue_session(SID, "  ", print) == "an empty message"
    assert catalog(options).continue_session("1f8fbd58-5023-46ae-8d79-2edecba7d17e", "go", print).startswith("no stored session")
    assert "is running now" in catalog(options, running=lambda sid: True).continue_session(SID, "go", print)
    ran, ended = [], []

    def fake_query(prompt: str, resumed: Any) -> Any:
        ran.append((prompt, resumed.resume, resumed.continue_conversation, resumed.fork_session))
        yield from ()

    monkeypatch.setattr(approvals, "query", fake_query)
    c = catalog(options)
    assert c.decide(op, ended.append) is None
    c.join(10)
    assert ran == [("Approved: go on.", SID, False, False)] and ended == [None]
    assert c.decide(op, ended.append) == "the tool call toolu_1 was approved already"
    assert c._busy == set()


def test_a_stored_transcript_is_shown_scrubbed_and_cut_at_a_time(tmp_path: Path) -> None:
    late = {"type": "assistant", "timestamp": "2026-11-28T22:00:00.000Z", "parentUuid": "u0",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "later"}]}}  # fmt: skip
    options, _ = session(tmp_path, [late])
    c = catalog(options)
    lines = c.transcript(SID)
    assert [(n, who) for n, who, _ in lines] == [(1, "sdk"), (2, "cli")] and KEY not in json.dumps(lines)
    assert json.loads(lines[0][2])["message"]["content"] == "use [key]"
    cut = _catalog._written_at(late)
    assert [n for n, _, _ in c.transcript(SID, before=cut)] == [1]
    assert c.transcript("../x") is None and c.transcript("1f8fbd58-5023-46ae-8d79-2edecba7d17e") is None
    assert _catalog._written_at({"timestamp": 5}) == float("-inf") and _catalog._written_at({"timestamp": "x"}) == float("-inf")
    assert _catalog._written_at({"timestamp": "1970-01-01T00:00:10Z"}) == 10.0


def test_a_long_text_still_keeps_back_a_key_at_its_end() -> None:
    s = StreamScrub(scrub, [])
    head = "a" * 4000 + " "
    assert texts(s.lines(delta(head + "sk-ant-x"))) == [head]  # the text is long, what is kept is short
    assert texts(s.lines(delta("yz!"))) == ["[key]!"]  # the key's rest never goes on by itself


def test_a_compact_line_with_nothing_to_do_goes_on_byte_for_byte() -> None:
    s = StreamScrub(scrub, [])
    raw = json.dumps({"type": "stream_event", "event": {"type": "content_block_delta", "index": 0,
                                                        "delta": {"type": "text_delta", "text": "plain"}}}, separators=(",", ":"))  # fmt: skip
    assert s.lines(raw) == [raw]
    s.lines(delta("x s"))  # something kept back for block 0
    assert texts(s.lines(raw)) == ["splain"]  # now it is rewritten: what was kept, then the piece


def test_each_transcript_line_is_the_entry_as_the_page_reads_it(tmp_path: Path) -> None:
    use = {"type": "assistant", "parentUuid": "u0", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]}}  # fmt: skip
    late = {"type": "assistant", "parentUuid": "u1", "timestamp": "2026-11-28T23:00:00.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "late"}]}}  # fmt: skip
    answer = {"type": "user", "parentUuid": "u2", "timestamp": "2026-11-28T21:00:00.000Z",
              "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]}}  # fmt: skip
    text = {"type": "user", "parentUuid": "u3", "message": {"role": "user", "content": [{"type": "text", "text": "more"}]}}
    options, _ = session(tmp_path, [use, late, answer, text])
    lines = catalog(options).transcript(SID, before=_catalog._written_at(late))
    assert [(n, who) for n, who, _ in lines] == [(1, "sdk"), (2, "cli"), (3, "cli"), (4, "sdk")]  # the late one left out, not the rest
    second = json.loads(lines[1][2])
    assert second == {"type": "assistant", "message": use["message"], "session_id": SID, "parent_tool_use_id": None, "uuid": "u1"}
