"""Carried cost (``_engine/carried.py``) line by line, for what mutation testing found unpinned
(``tools/mutation_score.py --area carried``): the differences a resumed run's figures are cut
by, the last ``cost-state`` found past torn and odd lines, and which fields count. No CLI."""

from __future__ import annotations

import json
from pathlib import Path

from claude_sdkurl._engine.carried import NOTHING, Carried, _last_cost_state, _of, carried, sizes_before

SID = "8d2b1c3e-0000-4000-8000-000000000001"


def test_spent_is_the_difference_never_below_zero() -> None:
    before = Carried(1.5, {})
    assert before.spent(None) is None
    assert before.spent(4.0) == 2.5
    assert before.spent(1.0) == 0.0  # a total under what was carried (a reset): nothing, not negative
    assert NOTHING.spent(0.25) == 0.25


def test_model_spent_subtracts_only_numeric_fields_carried() -> None:
    before = Carried(0.0, {"m": {"inputTokens": 10.0, "costUSD": 0.5, "flag": 1.0}})
    usage = {"m": {"inputTokens": 25, "costUSD": 0.75, "contextWindow": 200000, "flag": True, "name": "x"},
             "new": {"inputTokens": 3}, "odd": "not a dict"}  # fmt: skip
    out = before.model_spent(usage)
    assert out == {"m": {"inputTokens": 15, "costUSD": 0.25, "contextWindow": 200000, "flag": True, "name": "x"},
                   "new": {"inputTokens": 3}, "odd": {}}  # fmt: skip
    assert type(out["m"]["inputTokens"]) is int  # an int stays an int
    assert out["m"]["flag"] is True  # a bool is no number here
    assert before.model_spent({"m": {"inputTokens": 4}}) == {"m": {"inputTokens": 0}}  # never below zero
    assert before.model_spent(None) is None
    assert usage["m"]["inputTokens"] == 25  # the CLI's dict is not changed


def test_the_last_cost_state_wins_past_torn_and_odd_lines() -> None:
    first = json.dumps({"type": "cost-state", "totalCostUSD": 1.0})
    second = json.dumps({"type": "cost-state", "totalCostUSD": 2.0})
    mention = json.dumps({"type": "user", "text": '"cost-state"'})  # the mark inside another entry
    assert _last_cost_state(f"{first}\n{second}\n".encode()).cost_usd == 2.0
    assert _last_cost_state(f"{first}\n{second}".encode()).cost_usd == 2.0  # no newline after the last
    assert _last_cost_state(f"{first}\n{mention}\n".encode()).cost_usd == 1.0
    assert _last_cost_state(f'{first}\n{second[:-3]}\n{{"x": "cost-state"'.encode()).cost_usd == 1.0  # torn lines
    assert _last_cost_state(f"{first}\n[\"cost-state\"]\n".encode()).cost_usd == 1.0  # not a dict
    assert _last_cost_state(b'{"type": "user"}\n') is NOTHING
    assert _last_cost_state(b"") is NOTHING
    assert _last_cost_state(f'{{"type": "user"}}\n{first}\n{{"type": "a"}}\n'.encode()).cost_usd == 1.0


def test_only_running_totals_and_numbers_are_carried() -> None:
    entry = {"type": "cost-state", "totalCostUSD": 3, "modelUsage": {
        "m": {"inputTokens": 5, "outputTokens": 6, "cacheReadInputTokens": 7, "cacheCreationInputTokens": 8,
              "webSearchRequests": 9, "costUSD": 1.25, "thinkingTokens": 10, "cacheCreationEphemeral5mInputTokens": 11,
              "cacheCreationEphemeral1hInputTokens": 12, "contextWindow": 200000, "maxOutputTokens": 9000,
              "bool": True, "text": "5"},
        "not a row": 3}}  # fmt: skip
    got = _of(entry)
    assert got.cost_usd == 3.0 and type(got.cost_usd) is float
    assert got.model_usage == {"m": {"inputTokens": 5.0, "outputTokens": 6.0, "cacheReadInputTokens": 7.0,
                                     "cacheCreationInputTokens": 8.0, "webSearchRequests": 9.0, "costUSD": 1.25,
                                     "thinkingTokens": 10.0, "cacheCreationEphemeral5mInputTokens": 11.0,
                                     "cacheCreationEphemeral1hInputTokens": 12.0}}  # fmt: skip
    assert _of({"totalCostUSD": True, "modelUsage": [1]}) == Carried(0.0, {})
    assert _of({"totalCostUSD": "1.0"}).cost_usd == 0.0
    assert _of({"modelUsage": {"m": {"inputTokens": True, "outputTokens": "3"}}}).model_usage == {"m": {}}


def test_a_file_that_cannot_be_read_is_passed_over(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    project = projects / "-work"
    project.mkdir(parents=True)
    (project / f"{SID}.jsonl").mkdir()  # a directory where the transcript would be: open() fails
    assert carried(projects, SID) is NOTHING
    assert carried(None, SID) is NOTHING
    (projects / "-zz").mkdir()
    (projects / "-zz" / f"{SID}.jsonl").write_text(json.dumps({"type": "cost-state", "totalCostUSD": 2.0}) + "\n")
    assert carried(projects, SID).cost_usd == 2.0  # the next project's transcript is read
    size = (projects / "-zz" / f"{SID}.jsonl").stat().st_size
    assert carried(projects, SID, {str(projects / "-zz" / f"{SID}.jsonl"): size}).cost_usd == 2.0


def test_a_transcript_gone_before_its_size_is_taken_is_passed_over(tmp_path: Path, monkeypatch) -> None:
    import claude_sdkurl._engine.carried as module

    real = tmp_path / "-b" / f"{SID}.jsonl"
    real.parent.mkdir()
    real.write_text("{}\n")
    gone = tmp_path / "-a" / f"{SID}.jsonl"  # listed, then removed before its size is taken (a race)
    monkeypatch.setattr(module, "transcripts_in", lambda projects, session_id: [gone, real])
    assert sizes_before(tmp_path, SID) == {str(real): 3}
