"""Run mutation testing over the sans-I/O core and the option builders, or one area, and print the score.

    .venv/bin/pip install -e '.[mutation]'
    .venv/bin/python tools/mutation_score.py              # the core: mutmut run, then the score
    .venv/bin/python tools/mutation_score.py --no-run     # the score of the last run
    .venv/bin/python tools/mutation_score.py --area host  # one area (--list-areas names them)

What is mutated and which tests run is ``[tool.mutmut]`` in pyproject.toml for the core: only
the fast unit tests (no real CLI), so a run takes minutes. mutmut keeps its work in
``mutants/`` and reruns only what changed.

An area is a ``[tool.mutmut_areas.NAME]`` table in pyproject.toml: ``only_mutate`` (its few
files) and ``tests`` (the fast test files that cover them), optionally ``deselect`` (test ids
left out). mutmut reads only ``[tool.mutmut]``, so an area runs in a scratch copy of the tree,
``mutants-areas/NAME/``, whose pyproject.toml has the area's settings in that table: areas
do not clobber each other's (or the core's) ``mutants/``, and each reruns only what changed.

The score is killed / (all - equivalent): a mutant counts as killed when a test failed,
timed out, or the type checker refused it. ``tools/mutation_equivalent.txt`` lists the
survivors judged equivalent (no test could tell them from the original), one per line:
``mutant-name  reason``; an area's are in ``tools/mutation_equivalent_NAME.txt``. A listed name that no longer survives, or no longer exists, is
reported, so the list cannot rot quietly. Exit status 1 when the score is under the goal.
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENT = Path(__file__).with_name("mutation_equivalent.txt")
GOAL = 0.90
DETECTED = {"killed", "timeout", "caught by type check"}
AREA_GOAL = 0.80
SCRATCH = ROOT / "mutants-areas"
# what an area's scratch tree copies from the worktree (mutmut then copies what it mutates into
# the scratch tree's own mutants/)
COPIED = ["claude_sdkurl", "claude_sdkurl_pytest", "tests", "setup.cfg"]
# [tool.mutmut] settings every area shares with the core (its pytest flags without its deselects)
SHARED = {
    "source_paths": ["claude_sdkurl"],
    "do_not_mutate_patterns": ["logger\\.(debug|info)\\("],
    "timeout_multiplier": 4.0,
    "timeout_constant": 2.0,
}
PYTEST_FLAGS = ["-p", "no:cacheprovider", "-q", "-m", "not realcli"]


def areas(pyproject: Path = ROOT / "pyproject.toml") -> dict[str, dict[str, Any]]:
    """The ``[tool.mutmut_areas]`` tables of ``pyproject``, each checked: ``only_mutate`` and
    ``tests`` non-empty lists of paths relative to the root, ``deselect`` a list of test ids."""
    with open(pyproject, "rb") as f:
        found = tomllib.load(f).get("tool", {}).get("mutmut_areas", {})
    for name, area in found.items():
        unknown = set(area) - {"only_mutate", "tests", "deselect"}
        if unknown:
            raise ValueError(f"area {name}: unknown settings {sorted(unknown)}")
        for key in ("only_mutate", "tests"):
            value = area.get(key)
            if not value or not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"area {name}: {key} must be a non-empty list of paths")
        if not isinstance(area.get("deselect", []), list):
            raise ValueError(f"area {name}: deselect must be a list of test ids")
    return found


def equivalent_file(area: str | None) -> Path:
    """Where the survivors judged equivalent are listed: the core's file, or the area's."""
    return EQUIVALENT if area is None else EQUIVALENT.with_name(f"mutation_equivalent_{area}.txt")


def _without_mutmut_tables(text: str) -> str:
    """``text`` (a pyproject.toml) without its ``[tool.mutmut]`` and ``[tool.mutmut_areas.*]`` tables."""
    kept, skipping = [], False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("[") and not stripped.startswith("[["):
            skipping = stripped == "[tool.mutmut]" or stripped.startswith("[tool.mutmut_areas")
        elif stripped.startswith("[["):
            skipping = False
        if not skipping:
            kept.append(line)
    return "\n".join(kept) + "\n"


def area_settings(area: dict[str, Any]) -> str:
    """The ``[tool.mutmut]`` table (TOML text) that runs one area."""
    flags = list(PYTEST_FLAGS)
    for test_id in area.get("deselect", []):
        flags += ["--deselect", test_id]
    settings = dict(SHARED, only_mutate=area["only_mutate"], pytest_add_cli_args=flags,
                    pytest_add_cli_args_test_selection=area["tests"])
    # JSON strings and lists of them are TOML basic strings and arrays
    return "[tool.mutmut]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in settings.items())


def prepare(name: str, area: dict[str, Any]) -> Path:
    """The area's scratch tree, brought up to date with the worktree (times kept, so mutmut
    regenerates only the mutants of files that changed)."""
    tree = SCRATCH / name
    tree.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for part in COPIED:
        source, target = ROOT / part, tree / part
        if source.is_dir():
            shutil.copytree(source, target, ignore=ignore, dirs_exist_ok=True, copy_function=shutil.copy2)
        else:
            shutil.copy2(source, target)
    text = _without_mutmut_tables((ROOT / "pyproject.toml").read_text(encoding="utf-8")) + "\n" + area_settings(area)
    pyproject = tree / "pyproject.toml"
    if not pyproject.exists() or pyproject.read_text(encoding="utf-8") != text:
        pyproject.write_text(text, encoding="utf-8")
    return tree


def statuses(cwd: Path = ROOT) -> dict[str, str]:
    """Every mutant of the last run in ``cwd`` and its status, as ``mutmut results --all true`` says."""
    out = subprocess.run(
        [sys.executable, "-m", "mutmut", "results", "--all", "true"],
        cwd=cwd, capture_output=True, text=True, check=True,
    ).stdout
    found = {}
    for line in out.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and name:
            found[name] = status
    return found


def equivalents(path: Path = EQUIVALENT) -> dict[str, str]:
    """The mutants listed in ``path`` (none if it does not exist) and why each is equivalent."""
    listed: dict[str, str] = {}
    if not path.exists():
        return listed
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, why = line.partition(" ")
            listed[name] = why.strip()
    return listed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-run", action="store_true", help="only print the score of the last run")
    parser.add_argument("--max-children", type=int, default=None, help="mutmut's parallel workers")
    parser.add_argument("--area", default=None, help="one area of [tool.mutmut_areas] instead of the core")
    parser.add_argument("--fresh", action="store_true",
                        help="forget the last run's results first (mutmut retests a kept survivor only when its function changed, not when a test did)")
    parser.add_argument("--before", action="store_true",
                        help="with --area: without the area's tests/test_mutants_*.py (the score before they were written), in mutants-areas/NAME-before/")
    parser.add_argument("--list-areas", action="store_true", help="name the areas and their files")
    args = parser.parse_args(argv)
    goal, cwd = GOAL, ROOT
    if args.list_areas:
        for name, area in areas().items():
            print(f"{name}: {', '.join(area['only_mutate'])}  (tests: {', '.join(area['tests'])})")
        return 0
    if args.area is not None:
        known = areas()
        if args.area not in known:
            print(f"no area {args.area!r}: the areas are {', '.join(known)}")
            return 2
        area, scratch = known[args.area], args.area
        if args.before:
            area = dict(area, tests=[t for t in area["tests"] if not Path(t).name.startswith("test_mutants_")])
            scratch += "-before"
        goal, cwd = AREA_GOAL, prepare(scratch, area)
    if args.fresh and not args.no_run:
        shutil.rmtree(cwd / "mutants", ignore_errors=True)
    if not args.no_run:
        command = [sys.executable, "-m", "mutmut", "run"]
        if args.max_children:
            command += ["--max-children", str(args.max_children)]
        began = time.monotonic()
        subprocess.run(command, cwd=cwd, check=True)
        print(f"mutmut run took {time.monotonic() - began:.0f} s")

    found = statuses(cwd)
    if not found:
        print("no mutants found: run without --no-run first")
        return 2
    listed = equivalents(equivalent_file(args.area))
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
    print(f"mutation score {score:.1%} = {detected}/{counted} (goal {goal:.0%})")
    survivors = sorted(n for n, s in found.items() if s not in DETECTED and n not in equivalent)
    untested = collections.Counter(n.rsplit("__mutmut_", 1)[0] for n in survivors if found[n] == "no tests")
    if survivors:
        print(f"{len(survivors)} not detected (python -m mutmut show NAME, run in {cwd}):")
        for name in survivors:
            if found[name] != "no tests":
                print(f"    {name}: {found[name]}")
        for function, n in sorted(untested.items()):  # a function no selected test reaches: its count, not each
            print(f"    {function}: {n} mutants, no test reaches it")
    if stale:
        print(f"listed as equivalent but not a survivor of this run: {', '.join(stale)}")
    return 0 if score >= goal else 1


if __name__ == "__main__":
    sys.exit(main())
