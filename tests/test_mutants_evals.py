"""Evals' statistics (``evals/_scorecard.py``) line by line, for what mutation testing found
unpinned (``tools/mutation_score.py --area evals``): the looks of a sequential run, the gate's
rule and its bounds, the exact test, what a baseline may hold, the power and the runs a gate
needs. No CLI: scorecards made here."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from claude_sdkurl.evals import Attempt, Scorecard, detectable, gate, looks_from, max_runs_for, power, runs_needed, wilson
from claude_sdkurl.evals._scorecard import COST_FLOOR, _cells_of, _relative, _unclear, _valid, _worse, fewer_passes


def card(passes: dict[tuple[str, str], tuple[int, int]], cost: float = 0.001, looks: int = 1) -> Scorecard:
    attempts = []
    for (task, target), (ok, n) in passes.items():
        attempts += [Attempt(task, target, run, passed=run < ok, cost_usd=cost, turns=2, seconds=1.0) for run in range(n)]
    return Scorecard(attempts, looks=looks)


def baseline_file(tmp_path: Path, cells: dict[str, dict]) -> Path:
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"baseline": 1, "cells": cells}))
    return path


def test_looks_double_from_the_first_and_end_at_max_runs() -> None:
    assert looks_from(5, 5) == [5]
    assert looks_from(5, 40) == [5, 10, 20, 40]
    assert looks_from(3, 20) == [3, 6, 12, 20]  # the last look capped at max_runs
    assert looks_from(1, 1) == [1]
    assert looks_from(1, 2) == [1, 2]
    for first, most in ((0, 5), (5, 4), (1.0, 2), (1, 2.0)):
        with pytest.raises(ValueError, match="at least"):
            looks_from(first, most)  # type: ignore[arg-type]


def test_the_exact_test_and_the_interval_have_their_values() -> None:
    assert fewer_passes(0, 5, 9, 10) == pytest.approx(0.001998001998, rel=1e-9)
    assert fewer_passes(2, 10, 9, 10) == pytest.approx(0.0027387473207906646, rel=1e-9)
    assert fewer_passes(5, 5, 9, 10) == 1.0
    assert fewer_passes(0, 1, 1, 1) == pytest.approx(0.5)
    lo, hi = wilson(3, 10)
    assert lo == pytest.approx(0.10779126740630099) and hi == pytest.approx(0.6032218525388546)
    assert wilson(0, -1) == (0.0, 1.0)
    assert _relative(1, 3) == 1.0 and _relative(0, 0) == 0.0 and _relative(2, 2) == 0.0


def test_the_rule_flags_below_alpha_and_beyond_the_noise_only() -> None:
    p = fewer_passes(2, 10, 9, 10)
    assert _worse(2, 10, 9, 10, 0.0, p * 1.01)
    assert not _worse(2, 10, 9, 10, 0.0, p)  # at alpha exactly: not below it
    assert not _worse(2, 10, 9, 10, 0.7, 1.0)  # a drop of 0.7 within a noise of 0.7
    assert _worse(2, 10, 9, 10, 0.69, 1.0)
    assert _unclear(8, 10, 9, 10, 0.0)
    assert not _unclear(9, 10, 9, 10, 0.0)  # at the baseline's rate exactly: clear
    assert not _unclear(8, 10, 9, 10, 0.1)  # within the noise
    assert _unclear(7, 10, 9, 10, 0.1)


def test_a_cell_is_valid_only_with_numbers_in_their_ranges() -> None:
    assert _valid({"n": 1, "passes": 0})
    assert _valid({"n": 4, "passes": 4, "cost_usd": 0.0, "noise": {"rate": 1, "cost": 2}})
    assert _valid({"n": 4, "passes": 0, "noise": {"rate": 0, "cost": 0}})
    for bad in ({"n": 0, "passes": 0}, {"n": 2, "passes": 3}, {"n": 2, "passes": -1}, {"n": True, "passes": 0},
                {"n": 2, "passes": 1, "cost_usd": -0.1}, {"n": 2, "passes": 1, "cost_usd": math.inf},
                {"n": 2, "passes": 1, "noise": {"rate": 1.1, "cost": 0}}, {"n": 2, "passes": 1, "noise": {"rate": 0, "cost": 2.1}},
                {"n": 2, "passes": 1, "noise": {"rate": 0}}, {"n": 2, "passes": 1, "noise": "x"}, {"n": math.nan, "passes": 0},
                {"passes": 0}, "cell"):  # fmt: skip
        assert not _valid(bad), bad


def test_a_baseline_with_noise_holds_both_runs_and_how_far_apart_they_were() -> None:
    first = card({("t", "a"): (9, 10), ("t", "b"): (5, 10)}, cost=0.002)
    again = card({("t", "a"): (7, 10), ("u", "a"): (1, 2)}, cost=0.003)
    cells = _cells_of(first, again)
    assert cells["t\ta"] == {"passes": 16, "n": 20, "cost_usd": 0.05, "noise": {"rate": 0.2, "cost": 0.4}}
    assert cells["t\tb"] == {"passes": 5, "n": 10, "cost_usd": 0.02}  # not run again: no noise
    assert "u\ta" not in cells
    assert first.noise(again) == {("t", "a"): (pytest.approx(0.2), pytest.approx(0.4))}


def test_the_gate_flags_a_drop_with_the_looks_sharing_alpha(tmp_path: Path) -> None:
    base = card({("t", "a"): (10, 10)})
    # 5/10 against 10/10: p = 0.016; flagged at one look (alpha 0.05), not at four (0.0125)
    assert fewer_passes(5, 10, 10, 10) == pytest.approx(0.016253869969040248)
    assert [r.what.split(" (")[0] for r in gate(card({("t", "a"): (5, 10)}), base)] == ["passed 5/10, was 10/10"]
    assert gate(card({("t", "a"): (5, 10)}, looks=4), base) == []
    assert gate(card({("t", "a"): (5, 10)}), base, alpha=0.016) == []
    assert len(gate(card({("t", "a"): (5, 10)}), base, alpha=0.017)) == 1
    # alpha shared among the cells compared (those run now and in the baseline): 6/10 has p = 0.043
    two = card({("t", "a"): (10, 10), ("u", "a"): (10, 10)})
    assert gate(card({("t", "a"): (6, 10), ("u", "a"): (10, 10)}), two) == []  # below 0.025 it is not
    found = gate(card({("t", "a"): (6, 10)}), two)  # u not run: only t compared, at 0.05
    assert [(r.task, r.what.split(" (")[0]) for r in found] == [("t", "passed 6/10, was 10/10"), ("u", "not run")]
    assert [r.task for r in gate(card({("t", "a"): (6, 10)}), two, task="u")] == ["u"]
    assert [r.task for r in gate(card({("t", "a"): (6, 10)}), two, task="t")] == ["t"]


def test_the_cost_gate_uses_the_ratio_or_twice_the_noise_with_a_floor(tmp_path: Path) -> None:
    base = card({("t", "a"): (10, 10)}, cost=0.010)
    assert gate(card({("t", "a"): (10, 10)}, cost=0.020), base) == []  # no ratio, no noise: cost not gated
    found = gate(card({("t", "a"): (10, 10)}, cost=0.0201), base, cost_ratio=2.0)
    assert [r.what for r in found] == ["cost $0.0201 a run, was $0.0100 (more than x2.00)"]
    assert gate(card({("t", "a"): (10, 10)}, cost=0.020), base, cost_ratio=2.0) == []  # exactly the ratio: not more
    noisy = baseline_file(tmp_path, {"t\ta": {"passes": 10, "n": 10, "cost_usd": 0.1, "noise": {"rate": 0.0, "cost": 0.2}}})
    assert gate(card({("t", "a"): (10, 10)}, cost=0.0139), noisy) == []  # x1.4 = 1 + 2 * 0.2
    assert "x1.40" in gate(card({("t", "a"): (10, 10)}, cost=0.0141), noisy)[0].what
    quiet = baseline_file(tmp_path, {"t\ta": {"passes": 10, "n": 10, "cost_usd": 0.1, "noise": {"rate": 0.0, "cost": 0.01}}})
    assert COST_FLOOR == 0.10
    assert gate(card({("t", "a"): (10, 10)}, cost=0.0109), quiet) == []  # the floor: 10 %
    assert "x1.10" in gate(card({("t", "a"): (10, 10)}, cost=0.0111), quiet)[0].what
    free = baseline_file(tmp_path, {"t\ta": {"passes": 10, "n": 10, "cost_usd": 0, "noise": {"rate": 0.0, "cost": 0.01}}})
    assert gate(card({("t", "a"): (10, 10)}, cost=1.0), free) == []  # a baseline that cost nothing has no ratio


def test_the_gate_warns_when_blind_and_when_attempts_were_stopped() -> None:
    base = card({("t", "a"): (2, 2)})
    with pytest.warns(RuntimeWarning, match="cannot flag a drop in 1 cell"):
        blind = gate(card({("t", "a"): (0, 2)}), base)
    assert [(r.task, r.target, r.undecided) for r in blind] == [("t", "a", True)]  # fallen, and too few runs: undecided
    stopped = card({("t", "a"): (10, 10)}).attempts + [Attempt("t", "a", 10, passed=False, cost_usd=0.0, turns=None, seconds=0.0,
                                                                 stopped="budget")]  # fmt: skip
    with pytest.warns(RuntimeWarning, match="1 attempt"):
        assert gate(Scorecard(stopped), card({("t", "a"): (10, 10)})) == []


def test_a_cell_that_never_passed_in_the_baseline_is_not_named_blind() -> None:
    """Nothing can drop below 0 passes: such a cell is not among those the gate says it cannot
    flag (a probe's survivor: it was named, one cell too many)."""
    import warnings

    cells = {("t", "a"): (2, 2), ("u", "a"): (0, 2)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gate(card(cells), card(cells))
    blind = [str(w.message) for w in caught if "cannot flag a drop" in str(w.message)]
    assert len(blind) == 1 and "in 1 cell(s)" in blind[0] and "t on a" in blind[0] and "u on a" not in blind[0], blind


def test_detectable_power_and_the_runs_needed_have_their_values(tmp_path: Path) -> None:
    base = card({("t", "a"): (9, 10), ("u", "a"): (0, 10)})
    assert detectable(base, 5) == {"t\ta": 1}  # a cell that never passed is left out
    assert detectable(base, 1) == {"t\ta": None}
    with pytest.raises(ValueError):
        detectable(base, 0)
    assert runs_needed(base) == 3
    assert detectable(base, 3)["t\ta"] is not None and detectable(base, 2)["t\ta"] is None
    assert runs_needed(card({("t", "a"): (1, 1)}), most=5) is None
    one = power(base, 10, 0.5)
    assert list(one) == ["t\ta"] and 0.0 < one["t\ta"] < 1.0
    assert power(base, 10, 0.9)["t\ta"] < one["t\ta"] < power(base, 10, 0.0)["t\ta"] == pytest.approx(1.0)
    seq = power(base, [5, 10], 0.5)
    assert 0.0 < seq["t\ta"] <= 1.0 and seq != one
    for bad in ([], [5, 5], [10, 5], [0, 5], 0):
        with pytest.raises(ValueError):
            power(base, bad, 0.5)
    for rate in (-0.1, 1.1):
        with pytest.raises(ValueError):
            power(base, 5, rate)
    big = card({("t", "a"): (45, 50)})
    assert [power(big, looks_from(5, top), 0.5)["t\ta"] for top in (5, 10, 20)] == [
        pytest.approx(0.5), pytest.approx(0.685546875), pytest.approx(0.8685092926025391)]
    assert max_runs_for(big, 5) == 20  # the first at 0.8
    assert max_runs_for(big, 5, chance=0.5) == 5 and max_runs_for(big, 5, chance=0.6) == 10
    assert max_runs_for(big, 5, most=10) is None and max_runs_for(big, 5, most=20) == 20
    assert max_runs_for(base, 5, most=40) is None  # ten baseline runs bound what any number of new ones see
    assert max_runs_for(card({("t", "a"): (1, 1)}), 5, most=40) is None
