"""Parked approvals (``approvals.py``) line by line without a CLI, for what mutation testing
found unpinned (``tools/mutation_score.py --area approvals``): which record is parked, the
parking hook's answers, what a decision checks before it claims, the claim (a private file,
or the store's first entry), its release after a failed run, and the deciding hook's answers.
The resumed run is a fake ``query`` that calls the hooks the decision gave it; the CLI's own
runs are in tests/test_realcli_approvals.py."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import approvals
from claude_sdkurl._engine.paths import project_dir_name, real_path
from claude_sdkurl.approvals import AlreadyDecidedError, NotParkedError, Parked
from claude_sdkurl.stores import InMemorySessionStore
from claude_sdkurl.types import (ClaudeAgentOptions, DeferredToolUse, HookMatcher, ResultMessage, TextBlock, ToolResultBlock,
                                 UserMessage)  # fmt: skip

SID = "1f8fbd58-5023-46ae-8d79-2edecba7d17d"
SID2 = "1f8fbd58-5023-46ae-8d79-2edecba7d17e"
INPUT = {"command": "rm -rf build"}
PROMPT = {"type": "user", "message": {"role": "user", "content": "clean up"}, "cwd": "/w"}


def call(use_id: str, command: str = INPUT["command"], name: str = "Bash") -> dict[str, Any]:
    return {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": use_id, "name": name, "input": {"command": command}}]}}  # fmt: skip


def deferred(use_id: str, at: str = "2026-11-28T21:52:03.900Z") -> dict[str, Any]:
    return {"type": "attachment", "timestamp": at, "attachment": {"type": "hook_deferred_tool", "toolUseID": use_id}}


def result(use_id: str) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use_id, "content": "ok"}]}}


def local(tmp_path: Path, entries: list[dict[str, Any]], sid: str = SID) -> ClaudeAgentOptions:
    """Options whose CLI keeps its transcripts under tmp_path/config, with one session written."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    folder = tmp_path / "config" / "projects" / project_dir_name(real_path(str(work)))
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(dict(e, uuid=f"{sid[-4:]}-{i}", sessionId=sid, timestamp=e.get("timestamp", "2026-11-28T21:52:00.000Z")))
             + "\n" for i, e in enumerate([PROMPT, *entries])]  # fmt: skip
    (folder / f"{sid}.jsonl").write_text("".join(lines))
    return ClaudeAgentOptions(cwd=str(work), env={"CLAUDE_CONFIG_DIR": str(tmp_path / "config")})


class FakeQuery:
    """Stands in for ``approvals.query``: keeps what it was given, asks the PreToolUse hooks, then
    yields ``messages`` (raising ``fail`` after them when set)."""

    def __init__(self, messages: list[Any] = (), fail: BaseException | None = None) -> None:
        self.messages, self.fail, self.calls = list(messages), fail, []

    def __call__(self, prompt: str, options: ClaudeAgentOptions) -> Any:
        self.calls.append((prompt, options))
        yield from self.messages
        if self.fail is not None:
            raise self.fail

    def ask(self, tool_use_id: str | None, name: str = "Bash", tool_input: Any = INPUT, in_input: bool = False) -> list[Any]:
        options = self.calls[-1][1]
        hook_input = {"tool_name": name, "tool_input": tool_input}
        if in_input:
            hook_input["tool_use_id"] = tool_use_id
            tool_use_id = None
        return [h(hook_input, tool_use_id, None) for m in options.hooks["PreToolUse"] for h in m.hooks]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeQuery:
    stand_in = FakeQuery()
    monkeypatch.setattr(approvals, "query", stand_in)
    return stand_in


def test_parked_reads_a_deferred_result_a_batch_item_or_nothing() -> None:
    use = DeferredToolUse(id="toolu_1", name="Bash", input=INPUT)
    message = ResultMessage(subtype="success", duration_ms=1, duration_api_ms=1, is_error=False, num_turns=1, session_id=SID,
                            terminal_reason="tool_deferred", deferred_tool_use=use)  # fmt: skip
    got = approvals.parked(message)
    assert got == Parked(SID, "toolu_1", "Bash", INPUT) and got.tool_input is not INPUT
    assert approvals.parked(got) is got
    other = ResultMessage(subtype="success", duration_ms=1, duration_api_ms=1, is_error=False, num_turns=1, session_id=SID,
                          terminal_reason="completed", deferred_tool_use=use)  # fmt: skip
    assert approvals.parked(other) is None
    bare = ResultMessage(subtype="success", duration_ms=1, duration_api_ms=1, is_error=False, num_turns=1, session_id=SID,
                         terminal_reason="tool_deferred")  # fmt: skip
    assert approvals.parked(bare) is None
    none_input = ResultMessage(subtype="success", duration_ms=1, duration_api_ms=1, is_error=False, num_turns=1, session_id=SID,
                               terminal_reason="tool_deferred", deferred_tool_use=DeferredToolUse(id="t", name="B", input=None))  # fmt: skip
    assert approvals.parked(none_input) == Parked(SID, "t", "B", {})

    class Item:
        parked = {"session_id": SID, "tool_use_id": "toolu_1", "tool_name": "Bash", "tool_input": INPUT}

    assert approvals.parked(Item()) == Parked(SID, "toolu_1", "Bash", INPUT)
    Item.parked = got
    assert approvals.parked(Item()) is got
    Item.parked = "a string"
    assert approvals.parked(Item()) is None
    assert approvals.parked(object()) is None


def test_the_parking_hook_answers_as_its_policy_says() -> None:
    seen = []

    def policy(name: str, tool_input: dict[str, Any]) -> str | None:
        seen.append((name, tool_input))
        return tool_input.get("answer")

    matcher = approvals.parking(policy, matcher="Bash")
    assert isinstance(matcher, HookMatcher) and matcher.matcher == "Bash" and len(matcher.hooks) == 1
    hook = matcher.hooks[0]
    assert hook({"tool_name": "Bash", "tool_input": {"answer": None}}, "t", None) == {}
    for decision, verdict in (("park", "defer"), ("allow", "allow"), ("deny", "deny")):
        assert hook({"tool_name": "Bash", "tool_input": {"answer": decision}}, "t", None) == {
            "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": verdict}}
    with pytest.raises(ValueError, match="'maybe'"):
        hook({"tool_name": "Bash", "tool_input": {"answer": "maybe"}}, "t", None)
    hook({}, None, None)
    assert seen[-1] == ("", {})
    hook({"tool_name": "Bash", "tool_input": None}, None, None)
    assert seen[-1] == ("Bash", {})
    assert approvals.parking(policy).matcher is None


def test_a_decision_is_checked_against_the_session_before_anything_is_claimed(tmp_path: Path, fake: FakeQuery) -> None:
    options = local(tmp_path, [call("toolu_1"), deferred("toolu_1"), call("toolu_2", "ls"), result("toolu_2")])
    good = Parked(SID, "toolu_1", "Bash", INPUT)
    refused = [
        (Parked("not-a-session", "toolu_1", "Bash", INPUT), "not a session id"),
        (Parked(SID, "../toolu_1", "Bash", INPUT), "not a tool use id"),
        (Parked(SID, "toolu_9", "Bash", INPUT), "no tool call toolu_9"),
        (Parked(SID, "toolu_1", "Write", INPUT), "does not match"),
        (Parked(SID, "toolu_1", "Bash", {"command": "echo harmless"}), "does not match"),
        (Parked(SID2, "toolu_1", "Bash", INPUT), "transcript|no transcript"),
    ]
    for record, why in refused:
        with pytest.raises(NotParkedError, match=why):
            approvals.approve(record, options)
        assert approvals.decision_of(record, options) is None
    with pytest.raises(AlreadyDecidedError, match="has its result"):
        approvals.approve(Parked(SID, "toolu_2", "Bash", {"command": "ls"}), options)
    assert fake.calls == []
    with pytest.raises(ValueError, match="nothing is parked in str"):
        approvals.approve("junk", options)
    assert approvals.decision_of(good, options) is None
    assert approvals.decision_of("junk", options) is None
    assert approvals.decision_of(Parked(SID, "bad id", "Bash", INPUT), options) is None
    assert approvals.decision_of(Parked("nope", "toolu_1", "Bash", INPUT), options) is None


def test_an_approval_claims_a_private_file_once_and_answers_only_its_own_call(tmp_path: Path, fake: FakeQuery) -> None:
    own_seen = []

    def own(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        own_seen.append(tool_use_id or hook_input.get("tool_use_id"))
        return {"own": True}

    options = local(tmp_path, [call("toolu_1"), deferred("toolu_1")])
    options.hooks = {"PreToolUse": [HookMatcher(matcher="Bash", hooks=[own])], "Stop": [HookMatcher(hooks=[own])]}
    waiting = Parked(SID, "toolu_1", "Bash", INPUT)
    messages = approvals.approve(waiting, options, prompt="go")
    claim = tmp_path / "config" / "claude_sdkurl-decisions" / hashlib.sha256(f"{SID}/toolu_1".encode()).hexdigest()
    assert claim.read_text() == "allow"  # claimed at the call, before any message is asked for
    assert stat.S_IMODE(claim.stat().st_mode) == 0o600 and stat.S_IMODE(claim.parent.stat().st_mode) == 0o700
    assert approvals.decision_of(waiting, options) == "allow"
    with pytest.raises(AlreadyDecidedError, match="decided already"):
        approvals.deny(waiting, options)
    assert list(messages) == [] and len(fake.calls) == 1
    prompt, resumed = fake.calls[0]
    assert prompt == "go" and resumed.resume == SID and resumed.continue_conversation is False
    assert options.hooks["PreToolUse"][0].hooks == [own]  # the caller's options are not changed
    first = resumed.hooks["PreToolUse"][0]
    assert first.matcher == "Bash" and len(resumed.hooks["PreToolUse"]) == 2
    assert resumed.hooks["Stop"][0].hooks == [own]
    allow = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
    assert fake.ask("toolu_1") == [allow, {}]
    assert fake.ask("toolu_1", in_input=True) == [allow, {}]
    assert own_seen == []  # the options' own hook sits this call out
    assert fake.ask("toolu_7") == [{}, {"own": True}]
    assert fake.ask("toolu_8", in_input=True) == [{}, {"own": True}]
    assert own_seen == ["toolu_7", "toolu_8"]
    differs = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                      "permissionDecisionReason": "this call differs from the one the decision was made on"}}  # fmt: skip
    assert fake.ask("toolu_1", tool_input={"command": "rm -rf /"})[0] == differs
    assert fake.ask("toolu_1", name="Write")[0] == differs
    assert fake.ask("toolu_1", tool_input={"command": "rm -rf build", "x": 1})[0] == differs


def test_a_denial_gives_its_reason_and_decide_takes_the_defaults(tmp_path: Path, fake: FakeQuery) -> None:
    options = local(tmp_path, [call("toolu_1"), deferred("toolu_1"), call("toolu_2"), deferred("toolu_2"),
                               call("toolu_3"), deferred("toolu_3"), call("toolu_4"), deferred("toolu_4")])  # fmt: skip
    assert approvals.deny(Parked(SID, "toolu_1", "Bash", INPUT), options, reason="not here") == []
    assert fake.calls[-1][0] == "The reviewer denied that tool call; go on without it."
    assert fake.ask("toolu_1")[0] == {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                                             "permissionDecisionReason": "not here"}}  # fmt: skip
    assert approvals.decision_of(Parked(SID, "toolu_1", "Bash", INPUT), options) == "deny"
    list(approvals.decide(Parked(SID, "toolu_2", "Bash", INPUT), options, False))
    assert fake.calls[-1][0] == "The reviewer denied that tool call; go on without it."
    assert fake.ask("toolu_2")[0]["hookSpecificOutput"]["permissionDecisionReason"] == "Denied by a reviewer."
    list(approvals.decide(Parked(SID, "toolu_3", "Bash", INPUT), options, True))
    assert fake.calls[-1][0] == "Approved: go on."
    assert fake.ask("toolu_3")[0] == {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
    list(approvals.decide(Parked(SID, "toolu_4", "Bash", INPUT), options, False, reason="why", prompt="p"))
    assert fake.calls[-1][0] == "p" and fake.ask("toolu_4")[0]["hookSpecificOutput"]["permissionDecisionReason"] == "why"
    assert approvals.decision_of(Parked(SID, "toolu_3", "Bash", INPUT), options) == "allow"
    assert approvals.list_parked(options) == []  # every one decided


def test_a_failed_run_releases_the_claim_unless_the_call_got_its_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    options = local(tmp_path, [call("toolu_1"), deferred("toolu_1")])
    waiting = Parked(SID, "toolu_1", "Bash", INPUT)
    other_result = UserMessage(content=[ToolResultBlock(tool_use_id="toolu_0", content="x")])
    monkeypatch.setattr(approvals, "query", FakeQuery([other_result, UserMessage(content="text")], fail=RuntimeError("cut")))
    with pytest.raises(RuntimeError, match="cut"):
        list(approvals.approve(waiting, options))
    assert approvals.decision_of(waiting, options) is None  # released: the decision may be made again
    own_result = UserMessage(content=[TextBlock(text="t"), ToolResultBlock(tool_use_id="toolu_1", content="done")])
    monkeypatch.setattr(approvals, "query", FakeQuery([own_result, other_result], fail=RuntimeError("cut")))
    with pytest.raises(RuntimeError):
        list(approvals.approve(waiting, options))
    assert approvals.decision_of(waiting, options) == "allow"  # the call ran: the claim stays


def test_a_failed_run_keeps_the_claim_when_the_transcript_shows_the_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    options = local(tmp_path, [call("toolu_1"), deferred("toolu_1")])
    waiting = Parked(SID, "toolu_1", "Bash", INPUT)

    def run_then_fail(prompt: str, resumed: Any) -> Any:
        local(tmp_path, [call("toolu_1"), deferred("toolu_1"), result("toolu_1")])  # the CLI wrote the result
        raise RuntimeError("cut after the call ran")
        yield  # pragma: no cover

    monkeypatch.setattr(approvals, "query", run_then_fail)
    with pytest.raises(RuntimeError):
        list(approvals.approve(waiting, options))
    assert approvals.decision_of(waiting, options) == "allow"

    def gone_then_fail(prompt: str, resumed: Any) -> Any:
        for path in (tmp_path / "config" / "projects").rglob("*.jsonl"):
            path.unlink()
        raise RuntimeError("cut, transcript gone")
        yield  # pragma: no cover

    second = Parked(SID2, "toolu_2", "Bash", INPUT)
    options2 = local(tmp_path, [call("toolu_2"), deferred("toolu_2")], SID2)
    monkeypatch.setattr(approvals, "query", gone_then_fail)
    with pytest.raises(RuntimeError):
        list(approvals.approve(second, options2))
    assert approvals.decision_of(second, options2) is None  # unreadable: nothing ran from it, released


def test_a_store_keeps_the_first_claim_and_a_release_frees_the_next(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    store = InMemorySessionStore()
    work = tmp_path / "w"
    work.mkdir()
    options = ClaudeAgentOptions(cwd=str(work), session_store=store)
    key = {"project_key": approvals.project_key_for_directory(str(work)), "session_id": SID}
    store.append(key, [dict(e, uuid=f"u{i}", timestamp="2026-11-28T21:52:03.900Z")
                       for i, e in enumerate([PROMPT, call("toolu_1"), deferred("toolu_1")])])  # fmt: skip
    waiting = Parked(SID, "toolu_1", "Bash", INPUT)
    assert approvals.list_parked(options) == [Parked(SID, "toolu_1", "Bash", INPUT, "2026-11-28T21:52:03.900Z")]
    monkeypatch.setattr(approvals, "query", FakeQuery(fail=RuntimeError("no CLI")))
    with pytest.raises(RuntimeError):
        list(approvals.deny(waiting, options))
    claims = {**key, "subpath": "claude_sdkurl-decisions"}
    kept = store.load(claims)
    assert [e["type"] for e in kept] == ["claude_sdkurl_decision", "claude_sdkurl_release"]
    assert kept[0]["uuid"] == "decision-toolu_1-0" and kept[0]["decision"] == "deny"
    assert kept[1] == {"type": "claude_sdkurl_release", "uuid": "release-decision-toolu_1-0", "of": "decision-toolu_1"}
    assert approvals.decision_of(waiting, options) is None
    monkeypatch.setattr(approvals, "query", FakeQuery())
    list(approvals.approve(waiting, options))
    assert store.load(claims)[-1]["uuid"] == "decision-toolu_1-1"
    assert approvals.decision_of(waiting, options) == "allow"
    assert approvals.list_parked(options) == []
    # another decider's claim got there first: this one's entry is not the first of its uuid
    store.append(claims, [{"type": "claude_sdkurl_release", "uuid": "release-decision-toolu_1-1", "of": "decision-toolu_1"},
                          {"type": "claude_sdkurl_decision", "uuid": "decision-toolu_1-2", "decision": "deny", "claim": "theirs"}])  # fmt: skip
    with pytest.raises(AlreadyDecidedError, match="was deny already"):
        approvals.approve(waiting, options)
    assert approvals.decision_of(waiting, options) == "deny"


def test_listing_reads_the_newest_sessions_and_skips_the_decided(tmp_path: Path, fake: FakeQuery) -> None:
    options = local(tmp_path, [call("toolu_1"), deferred("toolu_1", "t1"), call("toolu_2"), deferred("toolu_2", "t2")])
    local(tmp_path, [call("toolu_3"), deferred("toolu_3")], SID2)
    folder = tmp_path / "config" / "projects" / project_dir_name(real_path(options.cwd))
    os.utime(folder / f"{SID}.jsonl", (1_000_000, 1_000_000))  # the older session
    everything = approvals.list_parked(options)
    assert [c.tool_use_id for c in everything] == ["toolu_3", "toolu_1", "toolu_2"]
    assert everything[1] == Parked(SID, "toolu_1", "Bash", INPUT, "t1")
    assert [c.tool_use_id for c in approvals.list_parked(options, limit=1)] == ["toolu_3"]
    list(approvals.approve(everything[1], options))
    assert [c.tool_use_id for c in approvals.list_parked(options)] == ["toolu_3", "toolu_2"]
    (folder / f"{SID2}.jsonl").write_bytes(b"\xff\xfe not text")  # unreadable: passed over
    assert [c.tool_use_id for c in approvals.list_parked(options)] == ["toolu_2"]


class Racing(InMemorySessionStore):
    """A store where another decider's claim lands just before this one's (two deciders at once)."""

    def __init__(self) -> None:
        super().__init__()
        self.other: Any = None

    def append(self, key: Any, entries: list[Any]) -> None:
        other, self.other = self.other, None
        if other is not None:
            other()
        super().append(key, entries)


def stored(work: Path, store: InMemorySessionStore, entries: list[dict[str, Any]], sid: str = SID) -> ClaudeAgentOptions:
    key = {"project_key": approvals.project_key_for_directory(str(work)), "session_id": sid}
    store.append(key, [dict(e, uuid=f"{sid[-4:]}-{i}", timestamp="2026-11-28T21:52:03.900Z") for i, e in enumerate([PROMPT, *entries])])
    return ClaudeAgentOptions(cwd=str(work), session_store=store)


def test_of_two_deciders_at_once_only_the_first_claim_wins(tmp_path: Path, fake: FakeQuery) -> None:
    store = Racing()
    options = stored(tmp_path, store, [call("toolu_1"), deferred("toolu_1")])
    waiting = Parked(SID, "toolu_1", "Bash", INPUT)
    won = []
    store.other = lambda: won.append(approvals.deny(waiting, options))
    with pytest.raises(AlreadyDecidedError, match="was deny already"):
        approvals.approve(waiting, options)
    assert won == [[]] and len(fake.calls) == 1 and approvals.decision_of(waiting, options) == "deny"


def test_a_store_that_lost_the_claim_is_no_decision(tmp_path: Path, fake: FakeQuery) -> None:
    class Forgetful(InMemorySessionStore):
        def append(self, key: Any, entries: list[Any]) -> None:
            if key.get("subpath") is None:
                super().append(key, entries)

    options = stored(tmp_path, Forgetful(), [call("toolu_1"), deferred("toolu_1")])
    with pytest.raises(AlreadyDecidedError, match=r"^the tool call toolu_1 was decided already$"):
        approvals.approve(Parked(SID, "toolu_1", "Bash", INPUT), options)
    assert fake.calls == []


def test_releasing_one_calls_claim_leaves_anothers_generation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = InMemorySessionStore()
    options = stored(tmp_path, store, [call("toolu_1"), deferred("toolu_1"), call("toolu_2"), deferred("toolu_2")])
    monkeypatch.setattr(approvals, "query", FakeQuery(fail=RuntimeError("no CLI")))
    with pytest.raises(RuntimeError):
        list(approvals.approve(Parked(SID, "toolu_1", "Bash", INPUT), options))
    monkeypatch.setattr(approvals, "query", FakeQuery())
    list(approvals.approve(Parked(SID, "toolu_2", "Bash", INPUT), options))
    claims = {"project_key": approvals.project_key_for_directory(str(tmp_path)), "session_id": SID, "subpath": "claude_sdkurl-decisions"}
    assert store.load(claims)[-1]["uuid"] == "decision-toolu_2-0"


def test_what_the_decision_hands_on_and_the_defaults_it_sends(tmp_path: Path, fake: FakeQuery) -> None:
    contexts = []

    def own(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        contexts.append(context)
        return {}

    options = local(tmp_path, [call("toolu_1"), deferred("toolu_1"), call("toolu_2"), deferred("toolu_2"), call("toolu_3"), deferred("toolu_3")])
    options.continue_conversation = True
    options.hooks = {"PreToolUse": [HookMatcher(hooks=[own])]}
    list(approvals.approve(Parked(SID, "toolu_1", "Bash", INPUT), options))
    prompt, resumed = fake.calls[-1]
    assert prompt == "Approved: go on." and resumed.continue_conversation is False and resumed.resume == SID
    marker = object()
    resumed.hooks["PreToolUse"][1].hooks[0]({"tool_name": "Read", "tool_input": {}}, "toolu_9", marker)
    assert contexts == [marker]
    approvals.deny(Parked(SID, "toolu_2", "Bash", INPUT), options)
    assert fake.calls[-1][0] == "The reviewer denied that tool call; go on without it."
    assert fake.ask("toolu_2")[0]["hookSpecificOutput"] == {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                                            "permissionDecisionReason": "Denied by a reviewer."}  # fmt: skip
    list(approvals.decide(Parked(SID, "toolu_3", "Bash", INPUT), options, False))
    assert fake.ask("toolu_3")[0]["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_the_session_is_read_past_odd_blocks_and_other_peoples_results(tmp_path: Path, fake: FakeQuery) -> None:
    entries = [
        {"type": "user", "message": "a plain string"},
        {"type": "assistant", "message": {"content": ["odd", {"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                                               "input": {"b": 2, "a": 1}}]}},  # fmt: skip
        {"type": "assistant", "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]}},  # not the user's
        {"type": "user", "message": {"content": [{"type": "text", "text": "hi", "tool_use_id": "toolu_1"}]}},  # not a result
        deferred("toolu_1"),
    ]
    options = local(tmp_path, entries)
    waiting = Parked(SID, "toolu_1", "Bash", {"a": 1, "b": 2})  # the keys in another order: the same input
    assert approvals._pending(waiting, options)["id"] == "toolu_1"
    assert approvals.parked_in(SID, ["junk", *entries]) == [Parked(SID, "toolu_1", "Bash", {"b": 2, "a": 1}, "2026-11-28T21:52:03.900Z")]
    with pytest.raises(NotParkedError, match=r"does not match the session.s call \(Bash \{\"b\": 2, \"a\": 1\}\): nothing was decided"):
        approvals.approve(Parked(SID, "toolu_1", "Bash", {"a": 1}), options)
    assert approvals._same({"p": Path("/a")}, {"p": "/a"})  # what is no JSON is compared as its text
    list(approvals.approve(waiting, options))
    assert fake.calls


def test_a_deferral_without_a_timestamp_and_an_empty_claim_file(tmp_path: Path) -> None:
    at = dict(deferred("toolu_1"), timestamp=5)
    assert approvals.parked_in(SID, [call("toolu_1"), at])[0].parked_at is None
    options = local(tmp_path, [call("toolu_1"), deferred("toolu_1")])
    waiting = Parked(SID, "toolu_1", "Bash", INPUT)
    claim = approvals._claim_path(waiting, options)
    claim.parent.mkdir(parents=True)
    claim.write_text("")
    assert approvals.decision_of(waiting, options) == "decided"


def test_a_session_that_cannot_be_read_is_passed_over_in_the_listing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    options = local(tmp_path, [call("toolu_1"), deferred("toolu_1")])
    local(tmp_path, [call("toolu_3"), deferred("toolu_3")], SID2)
    real = approvals._of_options.entries

    def entries(session_id: str, options: Any) -> Any:
        if session_id == SID2:
            raise approvals._of_options.TranscriptNotFound("gone")
        return real(session_id, options)

    monkeypatch.setattr(approvals._of_options, "entries", entries)
    assert [c.tool_use_id for c in approvals.list_parked(options)] == ["toolu_1"]
