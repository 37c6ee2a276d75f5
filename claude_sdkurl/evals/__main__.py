"""``python -m claude_sdkurl.evals SUITE.py``: run a suite, print its scorecard, and gate it
against a baseline (exit 1 on a regression beyond the noise, or a cell it could not decide); ``--update-baseline`` writes the
baseline instead, from two runs of the suite (the second, unchanged, measures the noise the gate
allows for). ``SUITE.py`` defines ``TASKS`` and ``TARGETS`` (and may define ``RUNS``)."""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path

from . import Scorecard, detectable, gate, looks_from, max_runs_for, power, run_eval, runs_needed
from ._scorecard import _baseline
from .._version import add_version_flag


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m claude_sdkurl.evals", description=__doc__.split("\n\n")[0])
    add_version_flag(parser)
    parser.add_argument("suite", help="a Python file defining TASKS and TARGETS (and RUNS)")
    parser.add_argument("--runs", type=int, help="attempts per task and target (default: the suite's RUNS, else 3)")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--budget", type=float, help="stop starting attempts once this many dollars are spent")
    parser.add_argument("--out", help="write the scorecard's JSONL here")
    parser.add_argument("--html", help="write the scorecard as an HTML page here (with the gate's verdict when gating)")
    parser.add_argument("--baseline", default="eval-baseline.json", help="the baseline to gate against (default: %(default)s)")
    parser.add_argument("--update-baseline", action="store_true", help="write the baseline from this run instead of gating")
    parser.add_argument("--cost-ratio", type=float, help="also fail when a task's cost per run rises more than this ratio")
    parser.add_argument("--max-runs", type=int, help="run more attempts, doubling up to this many, where a cell is unclear "
                                                     "against the baseline (sequential; alpha kept)")  # fmt: skip
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
        # the power table: how likely a fall to 50 % (or to 0) is flagged
        try:
            looks = looks_from(runs, args.max_runs) if args.max_runs else [runs]
        except ValueError as error:
            print(f"{error} (nothing was run)", file=sys.stderr)
            return 2
        kept = _baseline(baseline)
        planned = sum(1 for c in kept.values() if int(c["passes"])) * looks[-1]
        for rate in (0.5, 0.0):
            seen_power = power(baseline, looks, rate)
            if seen_power:
                low = min(seen_power.values())
                how = f"{runs} runs" if len(looks) == 1 else f"looks at {', '.join(map(str, looks))} runs (at most {planned} attempts)"
                print(f"gate: a cell falling to {rate:.0%} passes is flagged at least {low:.0%} of the time at {how}",
                      file=sys.stderr)  # fmt: skip
        top = max_runs_for(baseline, runs)
        if top is not None and (not args.max_runs or args.max_runs < top):
            print(f"gate: --max-runs {top} flags a fall to 50% at least 80% of the time", file=sys.stderr)
        elif top is None and kept:
            print("gate: the baseline has too few runs to flag a fall to 50% 80% of the time: "
                  "write it with more runs (RUNS in the suite)", file=sys.stderr)  # fmt: skip

    def once() -> Scorecard:
        sequential = {} if args.update_baseline or not args.max_runs else {"baseline": baseline, "max_runs": args.max_runs}
        return run_eval(suite["TASKS"], suite["TARGETS"], runs, max_concurrency=args.concurrency, max_total_cost_usd=args.budget,
                        progress=sys.stderr.isatty(), out=args.out, **sequential)  # fmt: skip

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
        print(f"{'UNDECIDED' if regression.undecided else 'REGRESSION'} {regression}")
    # a cell the gate could not judge fails the step as a regression does (it cannot say "passed")
    print("gate: " + ("failed" if any(not r.undecided for r in found) else "undecided" if found else "passed"))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
