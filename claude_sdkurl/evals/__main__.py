"""``python -m claude_sdkurl.evals SUITE.py``: run a suite, print its scorecard, and gate it
against a baseline (exit 1 on a regression beyond the noise); ``--update-baseline`` writes the
baseline instead, from two runs of the suite (the second, unchanged, measures the noise the gate
allows for). ``SUITE.py`` defines ``TASKS`` and ``TARGETS`` (and may define ``RUNS``)."""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path

from . import Scorecard, detectable, gate, run_eval, runs_needed
from ._scorecard import _baseline


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m claude_sdkurl.evals", description=__doc__.split("\n\n")[0])
    parser.add_argument("suite", help="a Python file defining TASKS and TARGETS (and RUNS)")
    parser.add_argument("--runs", type=int, help="attempts per task and target (default: the suite's RUNS, else 3)")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--budget", type=float, help="stop starting attempts once this many dollars are spent")
    parser.add_argument("--out", help="write the scorecard's JSONL here")
    parser.add_argument("--html", help="write the scorecard as an HTML page here (with the gate's verdict when gating)")
    parser.add_argument("--baseline", default="eval-baseline.json", help="the baseline to gate against (default: %(default)s)")
    parser.add_argument("--update-baseline", action="store_true", help="write the baseline from this run instead of gating")
    parser.add_argument("--cost-ratio", type=float, help="also fail when a task's cost per run rises more than this ratio")
    args = parser.parse_args(argv)
    suite = runpy.run_path(args.suite, run_name="__eval_suite__")
    if "TASKS" not in suite or "TARGETS" not in suite:
        parser.error(f"{args.suite} defines no TASKS and TARGETS")
    runs = args.runs or int(suite.get("RUNS", 3))
    baseline = Path(args.baseline)
    if not args.update_baseline:
        # read and checked before anything runs: a gate that cannot be taken should cost nothing
        if not baseline.exists():
            print(f"no baseline at {baseline}: run with --update-baseline first (nothing was run)", file=sys.stderr)
            return 2
        try:
            _baseline(baseline)
        except (OSError, ValueError) as error:
            print(f"{error} (nothing was run)", file=sys.stderr)
            return 2
        # what the gate can see at these runs, said before anything runs; a gate that could
        # flag no drop at all would pass whatever happens: refused
        seen = detectable(baseline, runs)
        blind = sorted(key.replace("\t", " on ") for key, most in seen.items() if most is None)
        needed = runs_needed(baseline)
        if seen and len(blind) == len(seen):
            print(f"at {runs} runs a cell the gate cannot flag a drop in any of its {len(seen)} cells, not even to 0 passes: "
                  f"run with --runs {needed} or more (nothing was run)", file=sys.stderr)  # fmt: skip
            return 2
        for most in sorted({m for m in seen.values() if m is not None}):
            cells = sum(1 for m in seen.values() if m == most)
            print(f"gate at {runs} runs: {cells} cell(s) flagged when they fall to {most}/{runs} passes or fewer", file=sys.stderr)
        if blind:
            print(f"gate at {runs} runs: blind to {len(blind)} cell(s) ({', '.join(blind[:5])}{', ...' if len(blind) > 5 else ''}): "
                  f"--runs {needed} sees a drop in every cell", file=sys.stderr)  # fmt: skip

    def once() -> Scorecard:
        return run_eval(suite["TASKS"], suite["TARGETS"], runs, max_concurrency=args.concurrency, max_total_cost_usd=args.budget,
                        progress=sys.stderr.isatty(), out=args.out)  # fmt: skip

    card = once()
    print(card.summary())
    if args.update_baseline:
        again = once()  # the same suite, unchanged: how far two runs fall apart is the noise
        noisy = {k: v for k, v in card.noise(again).items() if v != (0.0, 0.0)}
        card.save_baseline(baseline, noise=again)
        if args.html:
            card.save_html(args.html)
        print(f"baseline written: {baseline} (two runs; " + (f"{len(noisy)} cell(s) differed between them" if noisy else "they agreed") + ")")
        return 0
    found = gate(card, baseline, cost_ratio=args.cost_ratio)
    if args.html:
        card.save_html(args.html, baseline=baseline, cost_ratio=args.cost_ratio)
    for regression in found:
        print(f"REGRESSION {regression}")
    print("gate: " + ("failed" if found else "passed"))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
