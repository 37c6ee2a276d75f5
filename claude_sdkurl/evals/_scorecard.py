"""The scorecard: per task and target, the pass rate with its Wilson interval, cost, turns and
time; kept as JSONL; compared with a baseline by :func:`gate`."""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from pathlib import Path
from typing import Any

from .._files import replace_whole
from ._attempt import Attempt

Z95 = 1.959963984540054  # the normal quantile of a two-sided 95 % interval


def wilson(passes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a pass rate ``passes``/``n`` (``(0, 1)`` for no attempts):
    unlike the normal approximation it stays inside 0..1 and means something at 0/5 and 5/5."""
    if n <= 0:
        return 0.0, 1.0
    p = passes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclasses.dataclass(frozen=True)
class Cell:
    """One task on one target, over its runs."""

    task: str
    """The task's name."""
    target: str
    """The target's name."""
    n: int
    """Runs counted."""
    passes: int
    """Runs that passed."""
    cost_usd: float
    """What all runs cost together."""
    turns: float | None
    """Agent turns per run, on average; ``None``: no result."""
    seconds: float
    """Seconds per run, on average."""
    errors: int
    """Runs that failed to run (not a failed check)."""
    stopped: int = 0
    """Attempts stopped at their share of the budget: not in ``n``, ``passes``, cost or time."""

    @property
    def rate(self) -> float:
        return self.passes / self.n if self.n else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.passes, self.n)


@dataclasses.dataclass(frozen=True)
class Regression:
    """What :func:`gate` found worse than the baseline, beyond the noise."""

    task: str
    """The task's name."""
    target: str
    """The target's name."""
    what: str
    """What got worse, in words (pass rate, cost, turns), with both figures."""
    undecided: bool = False
    """``True``: not a drop the gate measured but one it could not judge: the cell passed below
    the baseline's rate at too few runs for any drop to be flagged, not even to 0 passes."""

    def __str__(self) -> str:
        return f"{self.task} on {self.target}: {self.what}"


class Scorecard:
    """Every attempt of a :func:`~claude_sdkurl.evals.run_eval`, and their cells."""

    def __init__(self, attempts: list[Attempt], tasks: list[str] | None = None, targets: list[str] | None = None,
                 looks: int = 1) -> None:  # fmt: skip
        self.attempts = attempts
        self.tasks = tasks or list(dict.fromkeys(a.task for a in attempts))
        self.targets = targets or list(dict.fromkeys(a.target for a in attempts))
        # how many times a sequential run (run_eval's max_runs) looked at its cells against the
        # baseline before it stopped adding runs: gate() shares alpha among them too
        self.looks = looks

    def cells(self) -> list[Cell]:
        out = []
        for task in self.tasks:
            for target in self.targets:
                every = [a for a in self.attempts if a.task == task and a.target == target]
                if not every:
                    continue
                mine = [a for a in every if a.stopped is None]  # measured
                turns = [a.turns for a in mine if a.turns is not None]
                out.append(Cell(task, target, len(mine), sum(a.passed for a in mine), round(sum(a.cost_usd for a in mine), 10),
                                sum(turns) / len(turns) if turns else None, sum(a.seconds for a in mine) / max(1, len(mine)),
                                sum(a.error is not None for a in mine), len(every) - len(mine)))  # fmt: skip
        return out

    def cell(self, task: str, target: str) -> Cell | None:
        return next((c for c in self.cells() if c.task == task and c.target == target), None)

    def outcomes(self) -> list[dict[str, Any]]:
        """Each attempt as a record without what differs between two runs of the same thing (its
        time, session ids, workspace): two scorecards of a replayed tape have equal outcomes."""
        return [{k: v for k, v in a.record().items() if k not in ("seconds", "session_ids")} for a in self.attempts]

    @property
    def cost_usd(self) -> float:
        """What the agent's runs cost (a judge's verdicts apart: :attr:`judge_cost_usd`)."""
        return round(sum(a.cost_usd for a in self.attempts), 10)

    @property
    def judge_cost_usd(self) -> float:
        return round(sum(a.judge_cost_usd for a in self.attempts), 10)

    # ------------------------------------------------------------------ on disk

    def save(self, path: str | Path) -> None:
        """The attempts as JSON lines (a header line with the task and target order first),
        written 0600 to a temporary name and renamed into place."""
        lines = [json.dumps({"scorecard": 1, "tasks": self.tasks, "targets": self.targets, "looks": self.looks})]
        lines += [json.dumps(a.record(), default=str) for a in self.attempts]
        replace_whole(Path(path), "\n".join(lines) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Scorecard:
        """A scorecard saved by :meth:`save` (``ValueError`` naming the line for one that is not)."""
        lines = Path(path).read_text().splitlines()
        try:
            head = json.loads(lines[0])
            if head.get("scorecard") != 1:
                raise ValueError("not a scorecard")
            attempts = [Attempt.from_record(json.loads(line)) for line in lines[1:] if line.strip()]
        except (ValueError, IndexError, TypeError) as e:
            raise ValueError(f"{path}: not a scorecard saved by Scorecard.save ({e})") from None
        looks = head.get("looks", 1)
        if not isinstance(looks, int) or isinstance(looks, bool) or looks < 1:
            raise ValueError(f"{path}: not a scorecard saved by Scorecard.save (looks {looks!r})")
        return cls(attempts, head.get("tasks"), head.get("targets"), looks)

    def save_baseline(self, path: str | Path, *, noise: Scorecard | None = None) -> None:
        """What :func:`gate` compares with: each cell's passes, runs and cost (0600, replaced whole).

        ``noise``: a second run of the same tasks and targets, unchanged (the way claude-drift
        measures it: old against old). The baseline then holds both runs' attempts together and,
        per cell, how far the two runs were apart: the pass rates' difference and the cost per
        run's relative difference. :func:`gate` flags only a change larger than that."""
        cells = _cells_of(self, noise)
        replace_whole(Path(path), json.dumps({"baseline": 1, "cells": cells}, indent=1) + "\n")

    def noise(self, other: Scorecard) -> dict[tuple[str, str], tuple[float, float]]:
        """How far ``other`` (the same targets run again, unchanged) is from this one, per cell:
        ``(pass rate difference, cost per run's relative difference)``."""
        theirs = {(c.task, c.target): c for c in other.cells()}
        out = {}
        for c in self.cells():
            o = theirs.get((c.task, c.target))
            if o is not None and c.n and o.n:
                out[(c.task, c.target)] = (abs(c.rate - o.rate), _relative(c.cost_usd / c.n, o.cost_usd / o.n))
        return out

    # ------------------------------------------------------------------ shown

    def rows(self) -> list[list[str]]:
        out = []
        for c in self.cells():
            lo, hi = c.interval
            runs = f"{c.passes}/{c.n}" + (f" +{c.stopped} stopped" if c.stopped else "")
            out.append([c.task, c.target, runs, f"{c.rate:.0%} [{lo:.0%}, {hi:.0%}]" if c.n else "–", f"${c.cost_usd:.4f}",
                        "–" if c.turns is None else f"{c.turns:.1f}", f"{c.seconds:.1f} s"])  # fmt: skip
        return out

    HEADERS = ["task", "target", "passed", "rate [95 % interval]", "cost", "turns", "time"]

    def summary(self) -> str:
        """One screen of text: a row per cell, then the totals and the first failures."""
        rows = [self.HEADERS, *self.rows()]
        widths = [max(len(r[i]) for r in rows) for i in range(len(self.HEADERS))]
        text = ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in rows]
        passed = sum(a.passed for a in self.attempts)
        measured = [a for a in self.attempts if a.stopped is None]
        judged = f" · the judge ${self.judge_cost_usd:.4f}" if self.judge_cost_usd else ""
        stopped = len(self.attempts) - len(measured)
        held = f" · {stopped} stopped (budget): not measured" if stopped else ""
        text.append(f"{passed}/{len(measured)} attempts passed{held} · ${self.cost_usd:.4f}{judged}")
        for a in [a for a in measured if not a.passed][:5]:
            why = a.error or "; ".join(a.failures)
            text.append(f"  ✘ {a.task} on {a.target} (run {a.run}): {why[:160]}")
        return "\n".join(text)

    def __str__(self) -> str:
        return self.summary()

    def html(self, title: str = "Evals", baseline: str | Path | Scorecard | None = None, *, cost_ratio: float | None = None) -> str:
        """One HTML page: a plot of each cell's pass rate and interval, the table, the failures,
        and with ``baseline`` the gate's verdict (regressed rows marked)."""
        from ._page import page

        return page(self, title, gate(self, baseline, cost_ratio=cost_ratio) if baseline is not None else None)

    def save_html(self, path: str | Path, title: str = "Evals", baseline: str | Path | Scorecard | None = None, *,
                  cost_ratio: float | None = None) -> None:  # fmt: skip
        """:meth:`html` written to ``path`` (0600, replaced whole)."""
        replace_whole(Path(path), self.html(title, baseline, cost_ratio=cost_ratio))

    def _repr_html_(self) -> str:
        from ._page import plot, table

        return table(self) + plot(self)

    def _repr_markdown_(self) -> str:
        head = "| " + " | ".join(self.HEADERS) + " |\n|" + "---|" * len(self.HEADERS) + "\n"
        return head + "\n".join("| " + " | ".join(v.replace("$", "\\$").replace("|", "\\|") for v in r) + " |" for r in self.rows())


def _relative(a: float, b: float) -> float:
    mean = (a + b) / 2
    return abs(a - b) / mean if mean > 0 else 0.0


def _cells_of(card: Scorecard, again: Scorecard | None = None) -> dict[str, dict[str, Any]]:
    cells: dict[str, dict[str, Any]] = {}
    for c in card.cells():
        if c.n:  # (a cell no attempt of which was measured is not a baseline's)
            cells[f"{c.task}\t{c.target}"] = {"passes": c.passes, "n": c.n, "cost_usd": c.cost_usd}
    if again is not None:
        apart = card.noise(again)
        for c in again.cells():
            cell = cells.get(f"{c.task}\t{c.target}")
            if cell is None or (c.task, c.target) not in apart:
                continue
            rate, cost = apart[(c.task, c.target)]
            cell.update(passes=cell["passes"] + c.passes, n=cell["n"] + c.n, cost_usd=round(cell["cost_usd"] + c.cost_usd, 10),
                        noise={"rate": round(rate, 6), "cost": round(cost, 6)})  # fmt: skip
    return cells


def _number(value: Any, low: float, high: float) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and low <= value <= high


def _valid(cell: Any) -> bool:
    if not isinstance(cell, dict) or not _number(cell.get("n"), 1, math.inf) or not _number(cell.get("passes"), 0, cell["n"]):
        return False
    if not _number(cell.get("cost_usd", 0.0), 0, math.inf):
        return False
    noise = cell.get("noise")
    return noise is None or (isinstance(noise, dict) and _number(noise.get("rate"), 0, 1) and _number(noise.get("cost"), 0, 2))


def _baseline(baseline: str | Path | Scorecard) -> dict[str, dict[str, Any]]:
    if isinstance(baseline, Scorecard):
        return _cells_of(baseline)
    try:
        data = json.loads(Path(baseline).read_text())
    except ValueError:
        data = None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("baseline") != 1 or not isinstance(cells, dict):
        raise ValueError(f"{baseline}: not a baseline saved by Scorecard.save_baseline")
    bad = next((k for k, v in cells.items() if "\t" not in str(k) or not _valid(v)), None)
    if bad is not None:
        raise ValueError(f"{baseline}: not a baseline saved by Scorecard.save_baseline (cell {str(bad)!r} is not one)")
    return {str(k): dict(v) for k, v in cells.items()}


def fewer_passes(now_passes: int, now_n: int, then_passes: int, then_n: int) -> float:
    """How likely a pass count as low as ``now_passes`` of ``now_n`` is if now and then share one
    pass rate: the one-sided p-value of Fisher's exact test (the hypergeometric tail), exact at
    the handful of runs an eval has, where a normal approximation is not."""
    total, passes = now_n + then_n, now_passes + then_passes
    ways = math.comb(total, now_n)
    return sum(math.comb(passes, k) * math.comb(total - passes, now_n - k) for k in range(0, now_passes + 1)) / ways


COST_FLOOR = 0.10  # a cost per run within 10 % of the baseline's is never a regression by itself


def detectable(baseline: str | Path | Scorecard, runs: int, *, alpha: float = 0.05) -> dict[str, int | None]:
    """What :func:`gate` can see at ``runs`` attempts a cell, before anything runs: for each cell
    of ``baseline`` (``"task\ttarget"``), the most passes of ``runs`` that it would still flag
    (``None``: not even 0 of ``runs``, the gate is blind to that cell). A cell that never passed
    has nothing to fall from and is left out. ``alpha`` is shared among the cells as
    :func:`gate` shares it; the measured noise can only make a drop harder to flag."""
    if not isinstance(runs, int) or runs < 1:
        raise ValueError("runs must be a whole number, at least 1")
    before = _baseline(baseline)
    each = alpha / max(1, len(before))
    out: dict[str, int | None] = {}
    for key, old in before.items():
        then_passes, then_n = int(old["passes"]), int(old["n"])
        if then_passes == 0:
            continue
        rate_noise = float((old.get("noise") or {}).get("rate", 0.0))
        flagged = [k for k in range(runs + 1)
                   if fewer_passes(k, runs, then_passes, then_n) < each and then_passes / then_n - k / runs > rate_noise]  # fmt: skip
        out[key] = max(flagged) if flagged else None
    return out


def looks_from(first: int, most: int) -> list[int]:
    """The runs a cell has at each look of a sequential run: ``first``, doubling, ``most`` last."""
    if not isinstance(first, int) or not isinstance(most, int) or first < 1 or most < first:
        raise ValueError("runs must be at least 1 and max_runs at least runs")
    looks = [first]
    while looks[-1] < most:
        looks.append(min(most, looks[-1] * 2))
    return looks


def _worse(passes: int, n: int, then_passes: int, then_n: int, noise: float, each: float) -> bool:
    """The gate's rule for one cell: fewer passes than chance allows, by more than the noise."""
    return fewer_passes(passes, n, then_passes, then_n) < each and then_passes / then_n - passes / n > noise


def _unclear(passes: int, n: int, then_passes: int, then_n: int, noise: float) -> bool:
    """Not flagged, and below the baseline's rate (less its noise): more runs could tell."""
    return passes / n < then_passes / then_n - noise


def power(baseline: str | Path | Scorecard, runs: int | list[int], rate: float, *, alpha: float = 0.05) -> dict[str, float]:
    """The chance that the gate flags each cell of ``baseline`` if its pass rate fell to ``rate``:
    at ``runs`` attempts a cell, or, for a list of looks (a sequential run, see
    :func:`looks_from`), over the looks as run_eval's ``max_runs`` takes them (a cell stops at a
    look once flagged, or once it passes at the baseline's rate or better). Exact (a sum over
    the binomial outcomes), not simulated. Cells that never passed are left out."""
    looks = [runs] if isinstance(runs, int) else list(runs)
    if not looks or any(not isinstance(n, int) or n < 1 for n in looks) or looks != sorted(set(looks)):
        raise ValueError("runs: a whole number, or increasing looks, each at least 1")
    if not 0.0 <= rate <= 1.0:
        raise ValueError("rate is a pass rate, between 0 and 1")
    before = _baseline(baseline)
    each = alpha / max(1, len(before)) / len(looks)
    out: dict[str, float] = {}
    for key, old in before.items():
        then_passes, then_n = int(old["passes"]), int(old["n"])
        if then_passes == 0:
            continue
        noise = float((old.get("noise") or {}).get("rate", 0.0))
        going = {0: 1.0}  # passes so far -> the chance of being there with the cell still open
        flagged, done = 0.0, 0
        for n in looks:
            more = n - done
            reached: dict[int, float] = {}
            for k, chance in going.items():
                for j in range(more + 1):
                    reached[k + j] = reached.get(k + j, 0.0) + chance * math.comb(more, j) * rate**j * (1 - rate) ** (more - j)
            going = {}
            for k, chance in reached.items():
                if _worse(k, n, then_passes, then_n, noise, each):
                    flagged += chance
                elif _unclear(k, n, then_passes, then_n, noise):
                    going[k] = chance
            done = n
        out[key] = min(1.0, flagged)
    return out


def max_runs_for(baseline: str | Path | Scorecard, runs: int, *, drop_to: float = 0.5, chance: float = 0.8,
                 alpha: float = 0.05, most: int = 640) -> int | None:  # fmt: skip
    """The fewest ``max_runs`` (looks doubling from ``runs``) at which a fall of every cell to
    ``drop_to`` is flagged with at least ``chance`` (``None``: not within ``most``: the baseline
    has too few runs for it; a baseline's own runs bound what any number of new runs can see)."""
    top = runs
    while top <= most:
        if all(p >= chance for p in power(baseline, looks_from(runs, top), drop_to, alpha=alpha).values()):
            return top
        top *= 2
    return None


def runs_needed(baseline: str | Path | Scorecard, *, alpha: float = 0.05, most: int = 200) -> int | None:
    """The fewest runs a cell at which :func:`gate` can flag some drop in every cell of
    ``baseline`` (``None``: none up to ``most``)."""
    for runs in range(1, most + 1):
        if all(v is not None for v in detectable(baseline, runs, alpha=alpha).values()):
            return runs
    return None  # (a baseline whose cells never passed: every runs count sees all there is)


def gate(current: Scorecard, baseline: str | Path | Scorecard, *, cost_ratio: float | None = None,
         alpha: float = 0.05, task: str | None = None) -> list[Regression]:  # fmt: skip
    """What got worse than ``baseline`` beyond the noise, and what it could not decide. An empty
    list: the change may go in.

    * Pass rate: a cell with fewer passes than chance allows (Fisher's exact test, one-sided,
      below ``alpha`` shared among the cells compared: Bonferroni, so ten tasks do not make ten
      chances of a false alarm) whose drop is also larger than the noise the baseline measured
      (its two unchanged runs' difference, see :meth:`Scorecard.save_baseline`).
    * A cell of the baseline not run now.
    * Cost: with ``cost_ratio``, a cell whose cost per run rose more than that ratio; without it,
      on a baseline that measured its noise, one whose cost per run rose more than twice that
      noise and at least 10 %.
    * Undecided (``undecided=True``, failing as a regression does): a cell that passed below the
      baseline's rate (less its noise) at so few runs that no drop could be flagged, not even to
      0 passes (:func:`runs_needed` says how many it takes). Such a cell at the baseline's rate
      or better is let through; every blind cell is also named in a ``RuntimeWarning``.

    ``task``: that task's cells only (a test per task); ``alpha`` is still shared among every cell
    compared, so asking task by task flags what asking for all at once does.
    """
    found = []
    before = _baseline(baseline)
    now = {f"{c.task}\t{c.target}": c for c in current.cells()}
    alpha = alpha / max(1, current.looks)  # a sequential run looked that many times
    held = [c for key, c in now.items() if c.stopped and (task is None or c.task == task)]
    if held:
        warnings.warn(f"{sum(c.stopped for c in held)} attempt(s) stopped at their share of the budget are not counted "
                      f"({', '.join(f'{c.task} on {c.target}' for c in held[:5])}{', ...' if len(held) > 5 else ''}): "
                      "a larger max_total_cost_usd measures them", RuntimeWarning, stacklevel=2)  # fmt: skip
    each = alpha / max(1, sum(key in now for key in before))
    blind_keys = [key for key in before if key in now and (task is None or key.split("\t", 1)[0] == task)
                  and int(before[key]["passes"]) > 0 and now[key].n
                  and fewer_passes(0, now[key].n, int(before[key]["passes"]), int(before[key]["n"])) >= each]  # fmt: skip
    blind = [key.replace("\t", " on ") for key in blind_keys]
    if blind:
        warnings.warn(f"the gate cannot flag a drop in {len(blind)} cell(s) at the runs they had, not even to 0 passes "
                      f"({', '.join(blind[:5])}{', ...' if len(blind) > 5 else ''}): run more (evals.runs_needed)",
                      RuntimeWarning, stacklevel=2)  # fmt: skip
    for key, old in before.items():
        name, target = key.split("\t", 1)
        if task is not None and name != task:
            continue
        cell = now.get(key)
        if cell is None:
            found.append(Regression(name, target, "not run (it is in the baseline)"))
            continue
        noise = old.get("noise") or {}
        then_passes, then_n = int(old["passes"]), int(old["n"])
        chance = fewer_passes(cell.passes, cell.n, then_passes, then_n)
        if key in blind_keys and _unclear(cell.passes, cell.n, then_passes, then_n, float(noise.get("rate", 0.0))):
            found.append(Regression(name, target, f"undecided: passed {cell.passes}/{cell.n}, was {then_passes}/{then_n}, and at "
                                                  f"{cell.n} runs no drop can be flagged, not even to 0 (evals.runs_needed)",
                                    undecided=True))  # fmt: skip
        elif cell.n and _worse(cell.passes, cell.n, then_passes, then_n, float(noise.get("rate", 0.0)), each):
            found.append(Regression(name, target, f"passed {cell.passes}/{cell.n}, was {then_passes}/{then_n} "
                                                  f"(by chance: p = {chance:.2g}, below {each:.2g})"))  # fmt: skip
        ratio = cost_ratio if cost_ratio is not None else (1 + max(2 * float(noise["cost"]), COST_FLOOR) if "cost" in noise else None)
        if ratio is not None and old.get("cost_usd") and cell.n:
            per_old, per_new = float(old["cost_usd"]) / then_n, cell.cost_usd / cell.n
            if per_new > per_old * ratio:
                found.append(Regression(name, target, f"cost ${per_new:.4f} a run, was ${per_old:.4f} (more than x{ratio:.2f})"))
    return found


def assert_gate(current: Scorecard, baseline: str | Path | Scorecard, *, cost_ratio: float | None = None, alpha: float = 0.05,
                task: str | None = None) -> None:  # fmt: skip
    """:func:`gate` for a test: ``AssertionError`` listing every regression (an undecided cell
    among them). One test gates the
    suite; with ``task``, a test per task (parametrize over the task names, the scorecard made
    once)."""
    found = gate(current, baseline, cost_ratio=cost_ratio, alpha=alpha, task=task)
    if found:
        raise AssertionError("regressions beyond the noise:\n" + "\n".join(f"  {r}" for r in found) + "\n\n" + current.summary())
