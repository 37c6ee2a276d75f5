"""The scorecard: per task and target, the pass rate with its Wilson interval, cost, turns and
time; kept as JSONL; compared with a baseline by :func:`gate`."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

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
    target: str
    n: int
    passes: int
    cost_usd: float  # all runs together
    turns: float | None  # per run, on average (None: no result)
    seconds: float  # per run, on average
    errors: int  # runs that failed to run (not a failed check)

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
    target: str
    what: str

    def __str__(self) -> str:
        return f"{self.task} on {self.target}: {self.what}"


class Scorecard:
    """Every attempt of a :func:`~claude_sdkurl.evals.run_eval`, and their cells."""

    def __init__(self, attempts: list[Attempt], tasks: list[str] | None = None, targets: list[str] | None = None) -> None:
        self.attempts = attempts
        self.tasks = tasks or list(dict.fromkeys(a.task for a in attempts))
        self.targets = targets or list(dict.fromkeys(a.target for a in attempts))

    def cells(self) -> list[Cell]:
        out = []
        for task in self.tasks:
            for target in self.targets:
                mine = [a for a in self.attempts if a.task == task and a.target == target]
                if not mine:
                    continue
                turns = [a.turns for a in mine if a.turns is not None]
                out.append(Cell(task, target, len(mine), sum(a.passed for a in mine), round(sum(a.cost_usd for a in mine), 10),
                                sum(turns) / len(turns) if turns else None, sum(a.seconds for a in mine) / len(mine),
                                sum(a.error is not None for a in mine)))  # fmt: skip
        return out

    def cell(self, task: str, target: str) -> Cell | None:
        return next((c for c in self.cells() if c.task == task and c.target == target), None)

    @property
    def cost_usd(self) -> float:
        return round(sum(a.cost_usd for a in self.attempts), 10)

    # ------------------------------------------------------------------ on disk

    def save(self, path: str | Path) -> None:
        """The attempts as JSON lines (a header line with the task and target order first),
        written 0600 to a temporary name and renamed into place."""
        lines = [json.dumps({"scorecard": 1, "tasks": self.tasks, "targets": self.targets})]
        lines += [json.dumps(a.record(), default=str) for a in self.attempts]
        _write(Path(path), "\n".join(lines) + "\n")

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
        return cls(attempts, head.get("tasks"), head.get("targets"))

    def save_baseline(self, path: str | Path) -> None:
        """What :func:`gate` compares with: each cell's passes, runs and cost (0600, replaced whole)."""
        cells = {f"{c.task}\t{c.target}": {"passes": c.passes, "n": c.n, "cost_usd": c.cost_usd} for c in self.cells()}
        _write(Path(path), json.dumps({"baseline": 1, "cells": cells}, indent=1) + "\n")

    # ------------------------------------------------------------------ shown

    def rows(self) -> list[list[str]]:
        out = []
        for c in self.cells():
            lo, hi = c.interval
            out.append([c.task, c.target, f"{c.passes}/{c.n}", f"{c.rate:.0%} [{lo:.0%}, {hi:.0%}]", f"${c.cost_usd:.4f}",
                        "–" if c.turns is None else f"{c.turns:.1f}", f"{c.seconds:.1f} s"])  # fmt: skip
        return out

    HEADERS = ["task", "target", "passed", "rate [95 % interval]", "cost", "turns", "time"]

    def summary(self) -> str:
        """One screen of text: a row per cell, then the totals and the first failures."""
        rows = [self.HEADERS, *self.rows()]
        widths = [max(len(r[i]) for r in rows) for i in range(len(self.HEADERS))]
        text = ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in rows]
        passed = sum(a.passed for a in self.attempts)
        text.append(f"{passed}/{len(self.attempts)} attempts passed · ${self.cost_usd:.4f}")
        for a in [a for a in self.attempts if not a.passed][:5]:
            why = a.error or "; ".join(a.failures)
            text.append(f"  ✘ {a.task} on {a.target} (run {a.run}): {why[:160]}")
        return "\n".join(text)

    def __str__(self) -> str:
        return self.summary()

    def _repr_markdown_(self) -> str:
        head = "| " + " | ".join(self.HEADERS) + " |\n|" + "---|" * len(self.HEADERS) + "\n"
        return head + "\n".join("| " + " | ".join(v.replace("$", "\\$").replace("|", "\\|") for v in r) + " |" for r in self.rows())


def _write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with __import__("contextlib").suppress(OSError):
            os.unlink(tmp)
        raise


def _baseline(baseline: str | Path | Scorecard) -> dict[str, dict[str, Any]]:
    if isinstance(baseline, Scorecard):
        return {f"{c.task}\t{c.target}": {"passes": c.passes, "n": c.n, "cost_usd": c.cost_usd} for c in baseline.cells()}
    try:
        data = json.loads(Path(baseline).read_text())
    except ValueError:
        data = None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("baseline") != 1 or not isinstance(cells, dict):
        raise ValueError(f"{baseline}: not a baseline saved by Scorecard.save_baseline")
    return {str(k): dict(v) for k, v in cells.items()}


def gate(current: Scorecard, baseline: str | Path | Scorecard, *, cost_ratio: float | None = None) -> list[Regression]:
    """What got worse than ``baseline`` beyond the noise: a cell whose pass rate's 95 % Wilson
    interval lies wholly below the baseline's (two runs of the same target overlap: the noise), a
    cell of the baseline not run now, and, with ``cost_ratio``, a cell whose cost per run rose
    more than that ratio. An empty list: the change may go in."""
    found = []
    before = _baseline(baseline)
    now = {f"{c.task}\t{c.target}": c for c in current.cells()}
    for key, old in before.items():
        task, target = key.split("\t", 1)
        cell = now.get(key)
        if cell is None:
            found.append(Regression(task, target, "not run (it is in the baseline)"))
            continue
        old_lo, _ = wilson(int(old["passes"]), int(old["n"]))
        new_lo, new_hi = cell.interval
        if new_hi < old_lo:
            found.append(Regression(task, target, f"passed {cell.passes}/{cell.n}, was {old['passes']}/{old['n']} "
                                                  f"(95 % intervals apart: now at most {new_hi:.0%}, was at least {old_lo:.0%})"))  # fmt: skip
        if cost_ratio is not None and old["n"] and cell.n and old.get("cost_usd"):
            per_old, per_new = float(old["cost_usd"]) / int(old["n"]), cell.cost_usd / cell.n
            if per_new > per_old * cost_ratio:
                found.append(Regression(task, target, f"cost ${per_new:.4f} a run, was ${per_old:.4f} (more than x{cost_ratio})"))
    return found


def assert_gate(current: Scorecard, baseline: str | Path | Scorecard, *, cost_ratio: float | None = None) -> None:
    """:func:`gate` for a test: ``AssertionError`` listing every regression (a suite gated by one
    pytest test)."""
    found = gate(current, baseline, cost_ratio=cost_ratio)
    if found:
        raise AssertionError("regressions beyond the noise:\n" + "\n".join(f"  {r}" for r in found) + "\n\n" + current.summary())
