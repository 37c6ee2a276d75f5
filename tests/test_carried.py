"""What a resumed session had cost, read from its transcript (``_engine/carried.py``) as it was
when the CLI started: the bound on each file, a file made since, ids that are not session ids.
No CLI: transcripts written here (the real CLI's are in tests/test_realcli_resumed_cost.py)."""

from __future__ import annotations

import json
from pathlib import Path

from claude_sdkurl._engine.carried import NOTHING, carried, sizes_before

SID = "8d2b1c3e-0000-4000-8000-000000000001"
OTHER = "8d2b1c3e-0000-4000-8000-000000000002"


def cost_state(session_id: str, total: float) -> str:
    return json.dumps({"type": "cost-state", "sessionId": session_id, "totalCostUSD": total,
                       "modelUsage": {"m": {"inputTokens": 10 * total, "costUSD": total}}}) + "\n"  # fmt: skip


def test_only_what_the_transcript_held_when_the_cli_started_is_carried(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-work"
    project.mkdir(parents=True)
    transcript = project / f"{SID}.jsonl"
    transcript.write_text('{"type": "user"}\n' + cost_state(SID, 1.0))
    before = sizes_before(tmp_path / "projects", SID)
    assert before == {str(transcript): transcript.stat().st_size}
    with transcript.open("a") as f:  # the CLI's turn, done before a lagging reader gets to init
        f.write('{"type": "assistant"}\n' + cost_state(SID, 3.0))
    assert carried(tmp_path / "projects", SID, before).cost_usd == 1.0
    assert carried(tmp_path / "projects", SID, before).model_usage == {"m": {"inputTokens": 10.0, "costUSD": 1.0}}
    assert carried(tmp_path / "projects", SID).cost_usd == 3.0  # unbounded: this run's own totals


def test_a_transcript_made_after_the_cli_started_carried_nothing(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    (projects / "-work").mkdir(parents=True)
    before = sizes_before(projects, None)  # continuing: every transcript there was
    (projects / "-work" / f"{SID}.jsonl").write_text(cost_state(SID, 2.0))
    assert before == {}
    assert carried(projects, SID, before) is NOTHING


def test_continuing_takes_every_transcript_and_an_id_that_is_no_session_id_none(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    for project, sid in (("-a", SID), ("-b", OTHER)):
        (projects / project).mkdir(parents=True)
        (projects / project / f"{sid}.jsonl").write_text(cost_state(sid, 1.0))
    assert sorted(Path(p).name for p in sizes_before(projects, None)) == sorted([f"{SID}.jsonl", f"{OTHER}.jsonl"])
    assert sizes_before(projects, "../-a/" + SID) == {}
    assert sizes_before(None, SID) == {}
    assert carried(projects, "../-a/" + SID, {}) is NOTHING


def _run_with_transcript_grown_before_init(tmp_path: Path, **kw: object) -> tuple[object, float | None]:
    """A run (a MockTransport for the CLI) of session ``SID``, which had cost 1.0: the CLI ends
    its turn, appending this run's own totals (3.0), before the reader gets to its ``init``.
    ``(the launch plan's transcript sizes, what the ledger counts for the run)``."""
    from claude_sdkurl import ClaudeAgentOptions, query
    from claude_sdkurl._engine.launch import plan_launch
    from claude_sdkurl.ledger import CostLedger
    from claude_sdkurl.testing import MockTransport

    config = tmp_path / "config"
    project = config / "projects" / "-work"
    project.mkdir(parents=True)
    transcript = project / f"{SID}.jsonl"
    transcript.write_text('{"type": "user"}\n' + cost_state(SID, 1.0))
    options = ClaudeAgentOptions(env={"CLAUDE_CONFIG_DIR": str(config)}, **kw)  # type: ignore[arg-type]

    def cli(message: dict, fake: object) -> None:
        if message.get("type") != "user":
            return
        with transcript.open("a") as f:
            f.write('{"type": "assistant"}\n' + cost_state(SID, 3.0))
        fake.session_id = SID  # type: ignore[attr-defined]
        fake.emit({"type": "system", "subtype": "init", "session_id": SID, "uuid": "u1", "claude_code_version": "2.1.330"})  # type: ignore[attr-defined]
        fake.emit({"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1, "duration_api_ms": 1,  # type: ignore[attr-defined]
                   "num_turns": 1, "result": "ok", "session_id": SID, "total_cost_usd": 3.0, "usage": {}, "uuid": "u2",
                   "modelUsage": {"m": {"inputTokens": 30, "costUSD": 3.0}}})  # fmt: skip

    before = plan_launch(options, custom_transport=True).transcripts_before
    with CostLedger() as ledger:
        list(query("go", options, transport=MockTransport(cli)))
    return before, ledger.total_cost_usd


def test_a_continued_session_carries_only_what_its_transcripts_held_before_the_cli_started(tmp_path: Path) -> None:
    """Issue 70, 7: ``continue_conversation=True`` takes the size of every transcript before
    the CLI starts, as a resume takes its session's, and what it carried is read to those
    sizes: the run spent 2.0, not 0 (this run's own totals read as carried) nor 3.0."""
    before, spent = _run_with_transcript_grown_before_init(tmp_path, continue_conversation=True)
    transcript = tmp_path / "config" / "projects" / "-work" / f"{SID}.jsonl"
    assert spent == 2.0
    assert before == {str(transcript): len('{"type": "user"}\n' + cost_state(SID, 1.0))}


def test_a_resumed_session_carries_only_what_its_transcript_held_before_the_cli_started(tmp_path: Path) -> None:
    before, spent = _run_with_transcript_grown_before_init(tmp_path, resume=SID)
    assert before is not None and len(before) == 1
    assert spent == 2.0
