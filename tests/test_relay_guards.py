"""The relay's guards beside its named attacks (issue 70, items 8-13), without a CLI: each test
pins one line a plausible one-line bug would break, and was seen failing with that bug.

Stored sessions are transcripts written by the test where the CLI would write them (a HOME of
the test's own); live sessions are the stand-in transports of tests/test_relay.py wrapped by the
relay's tap; the stream scrubber and the history caps are driven through the hub.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import ClaudeAgentOptions, relay
from tests.test_relay import TOKEN, frontend, read_until

SESSION = "11111111-2222-4333-8444-555555555555"
KEY = "sk-ant-api03-Zq7xW2vB9nM4kL8pR1tY6uI3oE5aS0dF"
DEPLOY_TOKEN = "hunter2-deploy-value"  # the value of a secret-named variable of the options' env
QUOTED_PASSWORD = 'pa"ss\\word-0123'  # one JSON escapes: its JSON text is not the value


# ---------------------------------------------------------------- stored sessions


class Transcript:
    """A stored session's transcript, written as the CLI writes one (a line an entry)."""

    def __init__(self, tmp_path: Path, env: dict[str, str] | None = None, session_id: str = SESSION) -> None:
        from claude_sdkurl._engine import paths

        work = tmp_path / "work"
        work.mkdir(exist_ok=True)
        self.options = ClaudeAgentOptions(cwd=str(work), env={"HOME": str(tmp_path), **(env or {})})
        folder = Path(paths.cli_projects_dir(self.options.env)) / paths.project_dir_name(paths.real_path(str(work)))
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{session_id}.jsonl"
        self.session_id = session_id
        self._parent: str | None = None
        self._n = 0
        self.add("user", "please run the deploy")

    def _entry(self, kind: str, **fields: Any) -> None:
        self._n += 1
        uuid = f"{self._n:08d}-0000-4000-8000-000000000000"
        entry = {"type": kind, "uuid": uuid, "parentUuid": self._parent, "timestamp": f"2026-01-01T10:00:{self._n:02d}.000Z",
                 "sessionId": self.session_id, **fields}  # fmt: skip
        self._parent = uuid
        with self.path.open("a") as f:
            f.write(json.dumps(entry) + "\n")

    def add(self, kind: str, content: Any) -> None:
        self._entry(kind, message={"role": kind, "content": content})

    def park(self, tool_use_id: str, tool_input: dict[str, Any], tool_name: str = "Bash") -> None:
        """A tool call the CLI recorded as deferred by a PreToolUse hook (no result yet)."""
        self.add("assistant", [{"type": "tool_use", "id": tool_use_id, "name": tool_name, "input": tool_input}])
        self._entry("attachment", attachment={"type": "hook_deferred_tool", "toolUseID": tool_use_id})

    def answer(self, tool_use_id: str) -> None:
        """The call's result in the session (it was decided and ran)."""
        self.add("user", [{"type": "tool_result", "tool_use_id": tool_use_id, "content": "done"}])


def test_a_parked_calls_input_is_scrubbed_on_the_stored_listing(tmp_path: Path) -> None:
    """Item 8: the input of a call parked in a stored session, as the page's listing shows it,
    holds no API key, no value of the options' secret variables (one with a character JSON
    escapes too) and no ``"..._token": "..."`` value; the rest of it is as the CLI recorded it."""
    stored = Transcript(tmp_path, {"DEPLOY_TOKEN": DEPLOY_TOKEN, "DB_PASSWORD": QUOTED_PASSWORD})
    stored.park("toolu_01Deploy", {"command": f"curl -H 'x-api-key: {KEY}' -u ci:{DEPLOY_TOKEN} https://deploy.example",
                                   "description": f"log in as {QUOTED_PASSWORD} then deploy",
                                   "env": {"auth_token": "abcdefgh12345678"}})  # fmt: skip
    with relay.serve(port=0, announce=False, steer=True, token=TOKEN, options=stored.options) as here:
        with frontend(here, "/events") as page:
            listing = read_until(page, lambda f: f.get("k") == "stored")[-1]
            # the session's conversation, where the call's tool_use block is
            page.send(json.dumps({"op": "history", "session": f"stored:{SESSION}"}))
            history = read_until(page, lambda f: f.get("k") == "history")[-1]
    assert [s["session_id"] for s in listing["stored"]] == [SESSION]
    (call,) = listing["parked"]
    assert (call["session_id"], call["tool_use_id"], call["tool_name"]) == (SESSION, "toolu_01Deploy", "Bash")
    assert call["input"] == {"command": "curl -H 'x-api-key: <scrubbed>' -u ci:<scrubbed> https://deploy.example",
                             "description": "log in as <scrubbed> then deploy",
                             "env": {"auth_token": "<scrubbed>"}}  # fmt: skip
    (_, _, said) = history["lines"][-1]
    assert json.loads(said)["message"]["content"][0]["input"] == call["input"]
    shown = json.dumps([listing, history])
    assert KEY[:16] not in shown and DEPLOY_TOKEN not in shown and "word-0123" not in shown


def test_a_secret_json_escapes_is_scrubbed_from_a_live_sessions_lines(tmp_path: Path) -> None:
    """A secret variable's value with a quote and a backslash is in a CLI's line as JSON escapes
    it (``pa\\"ss\\\\word``): a frontend gets neither spelling of it, live or from the history."""
    from tests.test_relay import watched

    with relay.serve(port=0, announce=False, token=TOKEN) as here, frontend(here) as ws:
        inner, _ = watched({"DB_PASSWORD": QUOTED_PASSWORD, "GREETING_SECRET": "grüße-geheim-0042"})
        inner.emit({"type": "system", "subtype": "init", "session_id": "q"},
                   {"type": "assistant", "session_id": "q", "message": {"role": "assistant", "content": [
                       {"type": "text", "text": f"the password is {QUOTED_PASSWORD}, the greeting grüße-geheim-0042"}]}},
                   {"type": "result", "subtype": "success", "is_error": False, "session_id": "q"})  # fmt: skip
        said = [f for f in read_until(ws, lambda f: f.get("type") == "result") if f.get("type") == "assistant"]
        assert here.hub.drain()
        (key,) = [k for k, s in here.hub.sessions.items() if s.session_id == "q"]
        kept = [json.loads(raw) for _, _, raw in here.hub.history(key) or [] if '"assistant"' in raw]
    for frame in (*said, *kept):
        assert frame["message"]["content"][0]["text"] == "the password is <scrubbed>, the greeting <scrubbed>"


def parked_ids(catalog: Any) -> list[str]:
    """The tool use ids the page's listing shows parked, read now (not a listing reused)."""
    return [call["tool_use_id"] for call in catalog.listing(fresh=True)[1]]


def test_a_stored_sessions_parked_calls_are_read_again_when_its_transcript_changed(tmp_path: Path) -> None:
    """Item 9: the listing keeps each session's parked calls while its row is unchanged; a call
    parked since is listed, one answered since is not, and an unchanged row is not read again."""
    from claude_sdkurl import approvals
    from claude_sdkurl.relay._catalog import Catalog

    stored = Transcript(tmp_path)
    stored.park("toolu_01First", {"command": "make deploy"})
    catalog = Catalog(stored.options, lambda text: text, True, lambda _id: False)
    assert parked_ids(catalog) == ["toolu_01First"]
    reads: list[str] = []
    real = approvals.parked_in

    def counted(session_id: str, entries: list[dict[str, Any]]) -> list[Any]:
        reads.append(session_id)
        return real(session_id, entries)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(approvals, "parked_in", counted)
        assert parked_ids(catalog) == ["toolu_01First"] and reads == []  # unchanged: what was read
        stored.park("toolu_02Second", {"command": "make release"})
        assert parked_ids(catalog) == ["toolu_01First", "toolu_02Second"] and reads == [SESSION]
        stored.answer("toolu_01First")
        assert parked_ids(catalog) == ["toolu_02Second"] and reads == [SESSION, SESSION]
        stored.answer("toolu_02Second")
        assert parked_ids(catalog) == [] and reads == [SESSION] * 3


# ---------------------------------------------------------------- a session a live CLI runs


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """What the page's decisions and continued turns would run, recorded instead of a CLI."""
    import importlib

    from claude_sdkurl import approvals

    started: list[tuple[str, Any]] = []

    def decide(shown: Any, options: Any, allow: bool, **_: Any) -> Any:
        started.append(("decide", (shown.session_id, shown.tool_use_id, allow)))
        return iter(())

    def query(text: str, options: Any) -> Any:
        started.append(("continue", (options.resume, text)))
        return iter(())

    monkeypatch.setattr(approvals, "decide", decide)
    monkeypatch.setattr(importlib.import_module("claude_sdkurl.query"), "query", query)
    return started


def live_session(here: relay.Relay, session_id: str | None, args: list[str] | None = None) -> Any:
    """A stand-in CLI of this process, running ``session_id`` (said in its init line) now."""
    from tests.test_relay import watched

    inner, _ = watched(args=args)
    if session_id is not None:
        inner.emit({"type": "system", "subtype": "init", "session_id": session_id})
    assert here.hub.drain()
    return inner


def _parked_deploy(tmp_path: Path, allow: bool) -> tuple[Any, dict[str, Any], str]:
    """A stored session with ``make deploy`` parked; the page's decision on it; the refusal a
    session running now gets."""
    stored = Transcript(tmp_path)
    stored.park("toolu_01Deploy", {"command": "make deploy"})
    decision = {"op": "decide_parked", "session_id": SESSION, "tool_use_id": "toolu_01Deploy", "tool_name": "Bash",
                "input": {"command": "make deploy"}, "allow": allow}  # fmt: skip
    return stored, decision, f"session {SESSION} is running now: write to it, or wait for its turn to end"


def test_the_page_neither_decides_nor_continues_a_session_a_live_cli_runs(tmp_path: Path, runs: list[tuple[str, Any]]) -> None:
    """Item 10: while a live CLI of this process runs the stored session (an ended one of the same
    session id beside it), the page's decision on its parked call and its message are refused,
    nothing claimed, nothing run; once that CLI ended, each goes on."""
    from claude_sdkurl import approvals
    from tests.test_relay_console import page_op

    stored, decision, refused = _parked_deploy(tmp_path, allow=True)
    with relay.serve(port=0, announce=False, steer=True, token=TOKEN, options=stored.options) as here:
        live = live_session(here, SESSION)
        live_session(here, SESSION).exit(0)  # an earlier run of it, ended (listed after the live one)
        assert here.hub.drain()
        with frontend(here, "/events") as page:
            assert page_op(page, dict(decision))["error"] == refused
            assert page_op(page, {"op": "continue", "session_id": SESSION, "text": "go on"})["error"] == refused
            assert runs == [] and approvals.decision_of(stored_call(stored), stored.options) is None
            live.exit(0)
            assert here.hub.drain()
            assert page_op(page, dict(decision))["error"] is None
            assert here.catalog is not None
            here.catalog.join(10.0)  # (its run is over: the session is free again)
            assert page_op(page, {"op": "continue", "session_id": SESSION, "text": "go on"})["error"] is None
    assert runs == [("decide", (SESSION, "toolu_01Deploy", True)), ("continue", (SESSION, "go on"))]


def stored_call(stored: Transcript) -> Any:
    from claude_sdkurl import approvals

    (call,) = approvals.parked_in(SESSION, [json.loads(line) for line in stored.path.read_text().splitlines()])
    return call


@pytest.mark.parametrize("args", [[f"--resume={SESSION}"], ["--resume", SESSION]], ids=["--resume=id", "--resume id"])
def test_a_cli_started_to_resume_the_session_counts_before_it_says_its_session_id(
        tmp_path: Path, runs: list[tuple[str, Any]], args: list[str]) -> None:  # fmt: skip
    """A client connected with ``resume=`` and no prompt yet: its CLI says no init line (so no
    session id) until its first turn, but it holds the session: the page's decision and message
    are refused until it ends. A CLI that resumes the session as a fork of it writes another."""
    from tests.test_relay_console import page_op

    stored, decision, refused = _parked_deploy(tmp_path, allow=False)
    with relay.serve(port=0, announce=False, steer=True, token=TOKEN, options=stored.options) as here:
        resuming = live_session(here, None, args)
        forked = live_session(here, None, [*args, "--fork-session"])
        with frontend(here, "/events") as page:
            assert page_op(page, dict(decision))["error"] == refused
            assert page_op(page, {"op": "continue", "session_id": SESSION, "text": "go on"})["error"] == refused
            assert runs == []
            resuming.exit(0)
            assert here.hub.drain()
            assert page_op(page, {"op": "continue", "session_id": SESSION, "text": "go on"})["error"] is None
        forked.exit(0)
    assert runs == [("continue", (SESSION, "go on"))]


# ---------------------------------------------------------------- the stream scrubber


def delta(kind: str, piece: str, index: int = 0) -> str:
    field = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "partial_json"}[kind]
    return json.dumps({"type": "stream_event", "session_id": "s", "parent_tool_use_id": None,
                       "event": {"type": "content_block_delta", "index": index, "delta": {"type": kind, field: piece}}})  # fmt: skip


def event(kind: str, index: int | None = 0) -> str:
    body: dict[str, Any] = {"type": kind} if index is None else {"type": kind, "index": index}
    return json.dumps({"type": "stream_event", "session_id": "s", "parent_tool_use_id": None, "event": body})


def said(lines: list[str]) -> list[tuple[str, str]]:
    """Each line as (its event's type, its delta's text or "")."""
    out = []
    for line in lines:
        e = json.loads(line)["event"]
        d = e.get("delta") or {}
        out.append((e["type"], d.get("text") or d.get("thinking") or d.get("partial_json") or ""))
    return out


def pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def scrubber(*literals: str) -> Any:
    from claude_sdkurl.relay._hub import scrub
    from claude_sdkurl.relay._stream_scrub import StreamScrub

    return StreamScrub(lambda text: scrub(text, literals), literals)


def test_a_secret_streamed_in_pieces_inside_thinking_is_scrubbed_across_deltas(tmp_path: Path) -> None:
    """Item 11: an API key, a secret variable's value and a bearer token streamed four characters
    a ``thinking_delta``: what a frontend rebuilds of the thinking holds none of them, the rest
    as it was; through the relay, live and from the history."""
    from tests.test_relay import watched

    thought = f"I will use {KEY}, the password correct-horse-battery and Bearer abcDEF123456789xyz here."
    lines = [delta("thinking_delta", p) for p in pieces(thought, 4)] + [event("content_block_stop")]
    expected = "I will use <scrubbed>, the password <scrubbed> and Bearer <scrubbed> here."
    scrub = scrubber("correct-horse-battery")
    out = [line for raw in lines for line in scrub.lines(raw)]
    assert "".join(t for _, t in said(out)) == expected and said(out)[-1] == ("content_block_stop", "")
    with relay.serve(port=0, announce=False, token=TOKEN) as here, frontend(here) as ws:
        inner, _ = watched({"DB_PASSWORD": "correct-horse-battery"})
        inner.emit({"type": "system", "subtype": "init", "session_id": "s"})
        assert inner.callbacks is not None
        inner.callbacks.on_data("".join(line + "\n" for line in lines).encode())
        inner.emit({"type": "result", "subtype": "success", "is_error": False, "session_id": "s"})
        got = [f for f in read_until(ws, lambda f: f.get("type") == "result") if f.get("type") == "stream_event"]
        assert here.hub.drain()
        (key,) = [k for k, s in here.hub.sessions.items() if s.session_id == "s"]
        kept = [raw for _, _, raw in here.hub.history(key) or [] if '"stream_event"' in raw]
    assert "".join(t for _, t in said([json.dumps(f) for f in got])) == expected
    assert "".join(t for _, t in said(kept)) == expected


@pytest.mark.parametrize("kind", ["text_delta", "thinking_delta", "input_json_delta"])
def test_what_the_stream_kept_back_is_scrubbed_when_its_block_ends(kind: str) -> None:
    """Item 12: a key that ends a streamed block is kept back whole (it could still grow) until
    the block's stop; then it goes on scrubbed, in a delta line of its own just before the stop.
    A block cut off by the message's end goes the same way, before ``message_stop``."""
    body = f"deploy with {KEY}" if kind != "input_json_delta" else json.dumps({"key": "x", "k": f"use {KEY}"})[:-2]
    scrub = scrubber()
    out = [line for p in pieces(body, 5) for line in scrub.lines(delta(kind, p))]
    out += scrub.lines(event("content_block_stop"))
    shown = said(out)
    assert shown[-2:] == [("content_block_delta", shown[-2][1]), ("content_block_stop", "")]
    assert "".join(t for _, t in shown) == body.replace(KEY, "<scrubbed>") and KEY[:8] not in json.dumps(out)
    assert shown[-2][1].endswith("<scrubbed>")  # what was kept back: the key, scrubbed
    # cut off by the message's end (no block stop): the same, before message_stop
    scrub = scrubber()
    out = [line for p in pieces(body, 5) for line in scrub.lines(delta(kind, p, index=3))]
    out += scrub.lines(event("message_stop", None))
    shown = said(out)
    assert shown[-1] == ("message_stop", "") and shown[-2][1].endswith("<scrubbed>")
    assert "".join(t for _, t in shown) == body.replace(KEY, "<scrubbed>")


def test_what_a_stream_cut_off_by_the_cli_s_end_kept_back_reaches_a_frontend_scrubbed() -> None:
    """A CLI that exits mid-block: what its block kept back (a key at its end) is sent, scrubbed,
    when the session ends, live and in the history."""
    from tests.test_relay import watched

    with relay.serve(port=0, announce=False, token=TOKEN) as here, frontend(here) as ws:
        inner, _ = watched()
        inner.emit({"type": "system", "subtype": "init", "session_id": "cut"})
        assert inner.callbacks is not None
        inner.callbacks.on_data("".join(delta("text_delta", p) + "\n" for p in pieces(f"the key {KEY}", 6)).encode())
        inner.exit(1)
        got = [f for f in read_until(ws, lambda f: f.get("type") == "status" and "disconnected" in f.get("text", ""))
               if f.get("type") == "stream_event"]  # fmt: skip
        assert here.hub.drain()
        (key,) = [k for k, s in here.hub.sessions.items() if s.session_id == "cut"]
        kept = [raw for _, _, raw in here.hub.history(key) or [] if '"stream_event"' in raw]
    for lines in ([json.dumps(f) for f in got], kept):
        assert "".join(t for _, t in said(lines)) == "the key <scrubbed>", lines


def test_a_last_line_without_its_newline_keeps_a_character_cut_between_two_reads() -> None:
    """A CLI that ends on a line with no newline, a character of it cut between two reads: the
    line the history keeps is text (the character whole), not the bytes as they were held."""
    from tests.test_relay import watched

    line = json.dumps({"type": "assistant", "session_id": "cut", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "漢字 done"}]}}, ensure_ascii=False).encode()  # fmt: skip
    at = line.index("字".encode()) + 1  # inside the character
    with relay.serve(port=0, announce=False, token=TOKEN) as here:
        inner, _ = watched()
        inner.emit({"type": "system", "subtype": "init", "session_id": "cut"})
        assert inner.callbacks is not None
        inner.callbacks.on_data(line[:at])
        inner.callbacks.on_data(line[at:])  # no newline: the CLI ends on it
        inner.exit(0)
        assert here.hub.drain()
        (key,) = [k for k, s in here.hub.sessions.items() if s.session_id == "cut"]
        kept = [raw for _, _, raw in here.hub.history(key) or [] if '"assistant"' in raw]
    assert [json.loads(raw)["message"]["content"][0]["text"] for raw in kept] == ["漢字 done"], kept


# ---------------------------------------------------------------- history caps


@pytest.mark.parametrize("cap", ["HISTORY_BYTES", "TOTAL_HISTORY_BYTES"])
def test_the_history_caps_count_bytes_not_characters(monkeypatch: pytest.MonkeyPatch, cap: str) -> None:
    """Item 13: lines of CJK and emoji as the CLI writes them (UTF-8, not escaped): 900
    characters, 3,000 bytes of text each. Under a cap of 10,000 bytes (a session's, or all
    sessions' together) the history keeps the newest three (by characters eight would fit), and
    what it counts is their UTF-8 bytes and LINE_OVERHEAD each."""
    from claude_sdkurl.relay import _hub
    from tests.test_relay import watched

    monkeypatch.setattr(_hub, cap, 10_000)
    text = "漢字かな" * 150 + "😀" * 300
    assert (len(text), len(text.encode())) == (900, 3000)
    lines = [json.dumps({"type": "assistant", "session_id": "cjk", "message": {"role": "assistant", "content": [
        {"type": "text", "text": f"{n} {text}"}]}}, ensure_ascii=False) for n in range(6)]  # fmt: skip
    with relay.serve(port=0, announce=False, token=TOKEN) as here:
        inner, _ = watched()
        inner.emit({"type": "system", "subtype": "init", "session_id": "cjk"})
        assert inner.callbacks is not None
        for line in lines:
            inner.callbacks.on_data((line + "\n").encode())
        assert here.hub.drain()
        (session,) = [s for s in here.hub.sessions.values() if s.session_id == "cjk"]
        kept = [raw for _, _, raw in here.hub.history(session.key) or []]
        assert kept == lines[-3:]
        cost = sum(len(line.encode()) + _hub.LINE_OVERHEAD for line in lines[-3:])
        assert (session.history_bytes, here.hub.history_bytes, session.history_dropped) == (cost, cost, 4)


def test_the_parked_calls_kept_are_those_of_the_sessions_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the listing keeps of each session's parked calls is bounded by what it lists: a
    session that fell out of the ``SCANNED`` newest takes its calls along, and is read again
    when it is listed again."""
    import os

    from claude_sdkurl.relay import _catalog

    older = Transcript(tmp_path, session_id="22222222-2222-4333-8444-555555555555")
    older.park("toolu_01Older", {"command": "make older"})
    os.utime(older.path, (1_700_000_000, 1_700_000_000))
    newer = Transcript(tmp_path)
    newer.park("toolu_01Newer", {"command": "make newer"})
    catalog = _catalog.Catalog(newer.options, lambda text: text, True, lambda _id: False)
    assert parked_ids(catalog) == ["toolu_01Newer", "toolu_01Older"]
    monkeypatch.setattr(_catalog, "SCANNED", 1)
    assert parked_ids(catalog) == ["toolu_01Newer"] and set(catalog._parked_by_row) == {SESSION}
    older.park("toolu_02Older", {"command": "make older again"})  # now the newest
    assert parked_ids(catalog) == ["toolu_01Older", "toolu_02Older"] and set(catalog._parked_by_row) == {older.session_id}
