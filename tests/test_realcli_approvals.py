"""Parked approvals (``claude_sdkurl.approvals``) on the real CLI 2.1.330: a tool call waits
without a CLI, then runs exactly once when approved (from this process or another) and never
when denied; in a batch the other items go on."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import ClaudeAgentOptions, ResultMessage, ToolResultBlock, UserMessage, query
from claude_sdkurl.approvals import AlreadyDecidedError, NotParkedError, approve, deny, parked, parking
from claude_sdkurl.batch import run_batch
from claude_sdkurl.stores import SQLiteSessionStore
from claude_sdkurl.testing import MockMessagesAPI, offline_env, text, tool_use

pytestmark = pytest.mark.realcli


def policy(tool_name: str, tool_input: dict[str, Any]) -> str | None:
    return "park" if "danger" in str(tool_input.get("command", "")) else None


def responder(log: Path) -> Any:
    def answer(request: Any) -> Any:
        said = request.last_user_text()
        if request.tool_results() or not said.startswith("item"):
            return text("done")
        n = int(said.split()[1])
        command = f"echo {n} >> {log}" + (" # danger" if n % 5 == 0 else "")
        return tool_use("Bash", {"command": command})

    return answer


def runs(log: Path) -> list[int]:
    return sorted(int(x) for x in log.read_text().split()) if log.exists() else []


def _options(cli_paths: Any, api: MockMessagesAPI, home: Path, **kw: Any) -> ClaudeAgentOptions:
    return ClaudeAgentOptions(cli_path=str(cli_paths["stdio"]), env=offline_env(api.url, home), cwd=str(home / "work"),
                              allowed_tools=["Bash"], hooks={"PreToolUse": [parking(policy)]}, **kw)  # fmt: skip


def test_a_parked_call_runs_once_when_approved_and_never_when_denied(cli_paths: Any, api: MockMessagesAPI, home: Path, tmp_path: Path) -> None:
    log = tmp_path / "ran.log"
    api.responder = responder(log)
    options = _options(cli_paths, api, home)
    first = [m for m in query("item 5", options) if isinstance(m, ResultMessage)][-1]
    waiting = parked(first)
    assert waiting is not None and waiting.tool_name == "Bash" and "danger" in waiting.tool_input["command"]
    assert runs(log) == []  # parked: not run, and no CLI waits (the query is over)
    messages = list(approve(waiting, options))
    assert runs(log) == [5]
    assert any(isinstance(m, UserMessage) and isinstance(m.content, list) and any(
        isinstance(b, ToolResultBlock) and b.tool_use_id == waiting.tool_use_id for b in m.content) for m in messages)
    with pytest.raises(AlreadyDecidedError):
        approve(waiting, options)
    with pytest.raises(AlreadyDecidedError):
        deny(waiting, options)
    assert runs(log) == [5]  # still once

    second = parked([m for m in query("item 10", options) if isinstance(m, ResultMessage)][-1])
    assert second is not None
    answered = deny(second, options, reason="not today")
    assert runs(log) == [5]  # never run
    results = [b for m in answered if isinstance(m, UserMessage) and isinstance(m.content, list) for b in m.content
               if isinstance(b, ToolResultBlock) and b.tool_use_id == second.tool_use_id]  # fmt: skip
    assert results and results[0].is_error and "not today" in str(results[0].content)
    with pytest.raises(ValueError, match="nothing is parked"):
        approve(dataclasses.replace(first, terminal_reason="completed"), options)


DECIDER = textwrap.dedent(
    """
    import json, sys
    from claude_sdkurl import ClaudeAgentOptions
    from claude_sdkurl.approvals import AlreadyDecidedError, approve, deny, parking
    from claude_sdkurl.stores import SQLiteSessionStore
    from claude_sdkurl.batch import BatchResult
    sys.path.insert(0, sys.argv[3])
    from test_realcli_approvals import policy
    config = json.loads(sys.argv[1])
    store = SQLiteSessionStore(config["store"])
    options = ClaudeAgentOptions(cli_path=config["cli"], env=config["env"], cwd=config["cwd"], allowed_tools=["Bash"],
                                 hooks={"PreToolUse": [parking(policy)]}, session_store=store)
    items = {i.index: i for i in BatchResult.load(config["checkpoint"]).items}
    outcome = {}
    for index in json.loads(sys.argv[2]):
        try:
            if index % 10 == 0:
                list(approve(items[index], options))
                outcome[index] = "approved"
            else:
                deny(items[index], options)
                outcome[index] = "denied"
        except AlreadyDecidedError:
            outcome[index] = "already"
    store.close()
    print(json.dumps(outcome))
    """
)


def test_a_batch_goes_on_past_parked_items_decided_later_from_other_processes(cli_paths: Any, api: MockMessagesAPI, home: Path,
                                                                             tmp_path: Path) -> None:  # fmt: skip
    log = tmp_path / "ran.log"
    api.responder = responder(log)
    store_path = tmp_path / "store.db"
    store = SQLiteSessionStore(store_path)
    try:
        options = _options(cli_paths, api, home, session_store=store)
        # (fifty items took 94 s of a loaded run; twenty still fill 8 slots twice, 4 parked)
        result = run_batch([f"item {i}" for i in range(20)], options, max_concurrency=8, checkpoint=tmp_path / "cp.jsonl")
    finally:
        store.close()
    waiting = [i.index for i in result.waiting]
    assert waiting == list(range(0, 20, 5))  # 4 parked
    assert len(result.succeeded) == 16 and result.failed == []
    assert runs(log) == [i for i in range(20) if i % 5]  # the other 16 ran theirs, none parked ran
    # the checkpoint keeps the parked items as waiting: resuming from it runs nothing again
    requests_before = len(api.message_requests())
    store = SQLiteSessionStore(store_path)
    try:
        again = run_batch([f"item {i}" for i in range(20)], _options(cli_paths, api, home, session_store=store),
                          resume=tmp_path / "cp.jsonl")  # fmt: skip
    finally:
        store.close()
    assert [i.index for i in again.waiting] == waiting and len(again.succeeded) == 16
    assert runs(log) == [i for i in range(20) if i % 5] and len(api.message_requests()) == requests_before
    config = {"store": str(store_path), "cli": str(cli_paths["stdio"]), "env": offline_env(api.url, home), "cwd": str(home / "work"),
              "checkpoint": str(tmp_path / "cp.jsonl")}  # fmt: skip
    # two processes decide the same four at once: each call is decided once, by one of them
    deciders = [subprocess.Popen([sys.executable, "-c", DECIDER, json.dumps(config), json.dumps(waiting), str(Path(__file__).parent)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]  # fmt: skip
    outcomes = []
    for p in deciders:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        outcomes.append(json.loads(out.strip().splitlines()[-1]))
    for index in waiting:
        said = sorted(o[str(index)] for o in outcomes)
        assert said[0] == "already" and said[1] in ("approved", "denied"), (index, said)  # one winner each
    approved = [i for i in waiting if i % 10 == 0]
    assert runs(log) == sorted([i for i in range(20) if i % 5] + approved)  # approved ones once, denied never
    assert len(approved) == 2


# ---------------------------------------------------------------------- hostile decisions


def _park(options: ClaudeAgentOptions, prompt: str = "item 5") -> Any:
    waiting = parked([m for m in query(prompt, options) if isinstance(m, ResultMessage)][-1])
    assert waiting is not None
    return waiting


@pytest.fixture
def one_parked(cli_paths: Any, api: MockMessagesAPI, home: Path, tmp_path: Path) -> tuple[Path, ClaudeAgentOptions, Any]:
    """``item 5`` parked: (the log its command would append to, the options, the Parked)."""
    log = tmp_path / "ran.log"
    api.responder = responder(log)
    options = _options(cli_paths, api, home)
    return log, options, _park(options)


def _decision_files(home: Path) -> list[Path]:
    return sorted(p for p in home.rglob("*") if p.is_file() and "claude_sdkurl-decisions" in p.parts)


def test_a_forged_or_path_like_id_is_refused_and_uses_up_nothing(one_parked: Any, api: MockMessagesAPI, home: Path, tmp_path: Path) -> None:  # fmt: skip
    log, options, waiting = one_parked
    served = len(api.message_requests())
    forged = [
        dataclasses.replace(waiting, tool_use_id="toolu_mock_99"),  # well formed, not in the session
        dataclasses.replace(waiting, tool_use_id="../../../../tmp/owned"),
        dataclasses.replace(waiting, tool_use_id=str(tmp_path / "owned")),
        dataclasses.replace(waiting, session_id="../" + waiting.session_id),
        dataclasses.replace(waiting, session_id="00000000-0000-4000-8000-000000000000"),  # no such session
    ]
    for bad in forged:
        with pytest.raises(NotParkedError):
            approve(bad, options)
        with pytest.raises(NotParkedError):
            deny(bad, options)
    assert not (tmp_path / "owned").exists() and not Path("/tmp/owned").exists()
    assert _decision_files(home) == []  # nothing claimed
    assert len(api.message_requests()) == served and runs(log) == []  # no CLI resumed, nothing ran
    list(approve(waiting, options))  # the real decision is still to be made, and works
    assert runs(log) == [5]
    (claim,) = _decision_files(home)
    assert waiting.tool_use_id not in claim.name and claim.stat().st_mode & 0o777 == 0o600


def test_a_tampered_record_is_refused_and_the_real_call_never_runs_unseen(one_parked: Any, home: Path) -> None:
    log, options, waiting = one_parked
    harmless = dataclasses.replace(waiting, tool_input={"command": "echo harmless"})
    with pytest.raises(NotParkedError, match="does not match"):
        approve(harmless, options)
    with pytest.raises(NotParkedError):
        approve(dataclasses.replace(waiting, tool_name="Read"), options)
    assert runs(log) == [] and _decision_files(home) == []
    # past the check (as if the transcript had been edited between the check and the run): the
    # deciding hook itself sees a call that differs from the record it was given, and denies it
    from claude_sdkurl import approvals

    real_pending = approvals._pending
    approvals._pending = lambda call_, options: {"id": call_.tool_use_id}  # type: ignore[assignment]
    try:
        answered = list(approve(harmless, options))
    finally:
        approvals._pending = real_pending  # type: ignore[assignment]
    assert runs(log) == []  # "echo 5 ... # danger" never ran on an approval of "echo harmless"
    results = [b for m in answered if isinstance(m, UserMessage) and isinstance(m.content, list) for b in m.content
               if isinstance(b, ToolResultBlock) and b.tool_use_id == waiting.tool_use_id]  # fmt: skip
    assert results and results[0].is_error and "differs" in str(results[0].content)


def test_a_decision_on_a_missing_transcript_is_refused_then_made_once_it_is_back(one_parked: Any, home: Path) -> None:
    log, options, waiting = one_parked
    (transcript,) = (home / ".claude" / "projects").glob(f"*/{waiting.session_id}.jsonl")
    saved = transcript.read_bytes()
    transcript.unlink()
    with pytest.raises(NotParkedError, match="transcript"):
        approve(waiting, options)
    assert _decision_files(home) == [] and runs(log) == []
    transcript.write_bytes(saved)
    list(approve(waiting, options))
    assert runs(log) == [5]
    with pytest.raises(AlreadyDecidedError):
        approve(waiting, options)


def test_a_decision_whose_run_fails_before_the_call_ran_can_be_made_again(one_parked: Any, home: Path, tmp_path: Path) -> None:
    log, options, waiting = one_parked
    broken = dataclasses.replace(options, cli_path=str(tmp_path / "no-such-cli"))
    with pytest.raises(Exception):  # noqa: B017 - the run's own error: the CLI is missing
        list(approve(waiting, broken))
    assert runs(log) == [] and _decision_files(home) == []  # released
    list(approve(waiting, options))
    assert runs(log) == [5]


# ---------------------------------------------------------------------- a call parked after others


def late_responder(log: Path, notes: Path) -> Any:
    """``late N``: a Read and a harmless Bash run (and finish) first, then the dangerous Bash
    that parks; then ``done``."""

    def answer(request: Any) -> Any:
        said = " ".join(b.get("text", "") for m in request.messages() if m.get("role") == "user"
                        for b in (m["content"] if isinstance(m.get("content"), list) else [{"text": m.get("content")}])
                        if isinstance(b, dict))  # fmt: skip
        n = int(said.split("late ", 1)[1].split()[0])
        results = [b for m in request.messages() if m.get("role") == "user" and isinstance(m.get("content"), list)
                   for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]  # fmt: skip
        steps = [tool_use("Read", {"file_path": str(notes)}),
                 tool_use("Bash", {"command": f"echo first-{n} >> {log}"}),
                 tool_use("Bash", {"command": f"echo {n} >> {log} # danger"})]  # fmt: skip
        return steps[len(results)] if len(results) < len(steps) else text(f"done {n}")

    return answer


def test_a_call_parked_after_other_tools_is_found_and_decided_alone(cli_paths: Any, api: MockMessagesAPI, home: Path, tmp_path: Path) -> None:
    """Every other test parks a session's first tool call; here a Read and a Bash ran and have
    their results before the parked call: approve() and deny() find the parked call, decide it
    and only it (the earlier calls do not run again), and a decision on an earlier call is
    refused as settled."""
    log, notes = tmp_path / "ran.log", home / "work" / "notes.txt"
    notes.write_text("the notes\n")
    api.responder = late_responder(log, notes)
    options = dataclasses.replace(_options(cli_paths, api, home), allowed_tools=["Bash", "Read"])
    lines = lambda: log.read_text().split() if log.exists() else []  # noqa: E731
    first = _park(options, "late 7")
    assert first.tool_input["command"].startswith("echo 7 ") and lines() == ["first-7"]
    # the finished Bash before it, named as if it were parked: its result is in the transcript
    earlier = next(b for m in api.message_requests()[-1].messages() if m.get("role") == "assistant"
                   for b in m["content"] if b.get("type") == "tool_use" and "first-7" in str(b.get("input")))  # fmt: skip
    with pytest.raises(AlreadyDecidedError):
        approve(dataclasses.replace(first, tool_use_id=earlier["id"], tool_input=earlier["input"]), options)
    messages = list(approve(first, options))
    assert lines() == ["first-7", "7"]  # the parked call ran once; the earlier ones not again
    assert [m.result for m in messages if isinstance(m, ResultMessage)][-1] == "done 7"
    with pytest.raises(AlreadyDecidedError):
        deny(first, options)

    second = _park(options, "late 8")
    answered = deny(second, options, reason="not after a read")
    assert lines() == ["first-7", "7", "first-8"]  # denied: never ran
    results = [b for m in answered if isinstance(m, UserMessage) and isinstance(m.content, list) for b in m.content
               if isinstance(b, ToolResultBlock)]  # fmt: skip
    assert [b.tool_use_id for b in results] == [second.tool_use_id] and results[0].is_error
    assert "not after a read" in str(results[0].content)
