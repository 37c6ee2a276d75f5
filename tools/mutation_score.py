"""Run mutation testing over the sans-I/O core and the option builders, and print the score.

    .venv/bin/pip install -e '.[mutation]'
    .venv/bin/python tools/mutation_score.py            # mutmut run, then the score
    .venv/bin/python tools/mutation_score.py --no-run   # the score of the last run

What is mutated and which tests run is ``[tool.mutmut]`` in pyproject.toml: only the fast
unit tests (no real CLI), so a run takes minutes. mutmut keeps its work in ``mutants/``
and reruns only what changed.

The score is killed / (all - equivalent): a mutant counts as killed when a test failed,
timed out, or the type checker refused it. ``tools/mutation_equivalent.txt`` lists the
survivors judged equivalent (no test could tell them from the original), one per line:
``mutant-name  reason``. A listed name that no longer survives, or no longer exists, is
reported, so the list cannot rot quietly. Exit status 1 when the score is under the goal.
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENT = Path(__file__).with_name("mutation_equivalent.txt")
GOAL = 0.90
DETECTED = {"killed", "timeout", "caught by type check"}


def statuses() -> dict[str, str]:
    """Every mutant of the last run and its status, as ``mutmut results --all true`` says."""
    out = subprocess.run(
        [sys.executable, "-m", "mutmut", "results", "--all", "true"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout
    found = {}
    for line in out.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and name:
            found[name] = status
    return found


def equivalents() -> dict[str, str]:
    listed = {}
    for line in EQUIVALENT.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, why = line.partition(" ")
            listed[name] = why.strip()
    return listed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-run", action="store_true", help="only print the score of the last run")
    parser.add_argument("--max-children", type=int, default=None, help="mutmut's parallel workers")
    args = parser.parse_args(argv)
    if not args.no_run:
        command = [sys.executable, "-m", "mutmut", "run"]
        if args.max_children:
            command += ["--max-children", str(args.max_children)]
        subprocess.run(command, cwd=ROOT, check=True)

    found = statuses()
    if not found:
        print("no mutants found: run without --no-run first")
        return 2
    listed = equivalents()
    by_status = collections.Counter(found.values())
    equivalent = {name for name in listed if found.get(name) == "survived"}
    stale = sorted(set(listed) - equivalent)
    detected = sum(n for status, n in by_status.items() if status in DETECTED)
    counted = len(found) - len(equivalent)
    score = detected / counted if counted else 1.0

    per_file: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for name, status in found.items():
        module = name.rsplit(".", 1)[0]  # claude_sdkurl._engine.protocol.xǁProtocolǁ_line__mutmut_3
        per_file[module]["detected" if status in DETECTED else status] += 1
    for module in sorted(per_file):
        counts = per_file[module]
        print(f"{module:32} " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print("statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(by_status.items())))
    print(f"mutants {len(found)}, equivalent {len(equivalent)}, detected {detected}")
    print(f"mutation score {score:.1%} (goal {GOAL:.0%})")
    survivors = sorted(n for n, s in found.items() if s not in DETECTED and n not in equivalent)
    if survivors:
        print(f"{len(survivors)} not detected (python -m mutmut show NAME):")
        for name in survivors:
            print(f"    {name}: {found[name]}")
    if stale:
        print(f"listed as equivalent but not a survivor of this run: {', '.join(stale)}")
    return 0 if score >= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
