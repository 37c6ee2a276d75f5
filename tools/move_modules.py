"""Move modules of the package and rewrite every reference to them: the codemod that put the
engine in ``claude_sdkurl/_engine/`` (issue 49), kept for the next move.

    .venv/bin/python tools/move_modules.py            # the moves in MOVES, with git mv
    .venv/bin/python tools/move_modules.py --dry-run  # what would change

What it rewrites, in every ``.py`` file of the repository (package, tests, tools, bench,
examples, the pytest plugin) and every text file of ``docs/``, ``tools/`` and ``pyproject.toml``:

* ``from <module> import ...`` statements, relative or absolute, whose module (or an imported
  name that is itself a module, ``from . import _trace``) moved: relative ones stay relative,
  recomputed from the file's new place; a module imported by name under a new name keeps its
  old name with ``as``, so the code using it is unchanged;
* ``import claude_sdkurl._x`` statements;
* dotted names in text (strings, docstrings, docs): ``claude_sdkurl._engine.session.Session``, a
  ``monkeypatch`` target, a ``sys.modules`` key, a mutmut name;
* file paths: ``claude_sdkurl/_engine/session.py``.

Statements are found with :mod:`ast` and only their ``from ... import`` head is replaced, so
parenthesized name lists and their comments stay as they were.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "claude_sdkurl"

# The engine's move (issue 49), already made: set the next move here before running it again.
MOVES = {  # old dotted name (under the package) -> new
    "_session": "_engine.session",
    "_protocol": "_engine.protocol",
    "_parse": "_engine.parse",
    "_control": "_engine.control",
    "_run": "_engine.run",
    "_workers": "_engine.workers",
    "_launch": "_engine.launch",
    "_cli": "_engine.cli",
    "_start": "_engine.start",
    "_stock": "_engine.stock",
    "_spares": "_engine.spares",
    "_trace": "_engine.trace",
    "_usercode": "_engine.usercode",
    "_cancel": "_engine.cancel",
    "_deadline": "_engine.deadline",
    "_limits": "_engine.limits",
    "_log": "_engine.log",
    "_transport": "_engine.transport",
    "sessions._paths": "_engine.paths",
    "sessions._resume": "_engine.resume",
    "sessions._storecall": "_engine.storecall",
    "sessions._carried": "_engine.carried",
    "sessions._mirror": "_engine.mirror",
}


def new_name(dotted: str) -> str | None:
    """The moved name of an absolute dotted module name, or ``None`` if it did not move."""
    if not dotted.startswith(PACKAGE + "."):
        return None
    rest = dotted[len(PACKAGE) + 1 :]
    for old in sorted(MOVES, key=len, reverse=True):
        if rest == old or rest.startswith(old + "."):
            return f"{PACKAGE}.{MOVES[old]}{rest[len(old):]}"
    return None


def module_of(path: Path) -> str | None:
    """The dotted module name of a file of the package (``None`` outside it)."""
    try:
        rel = path.relative_to(ROOT)
    except ValueError:
        return None
    if rel.parts[0] != PACKAGE:
        return None
    parts = list(rel.with_suffix("").parts)
    return ".".join(parts)


def package_of(module: str, is_init: bool) -> str:
    return module if is_init else module.rsplit(".", 1)[0]


def resolve(package: str, level: int, module: str | None) -> str:
    base = package.split(".")
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, *(module.split(".") if module else [])])


def relative(from_package: str, target: str) -> str:
    """``target`` as a relative import's module part, seen from ``from_package``."""
    here, there = from_package.split("."), target.split(".")
    common = 0
    while common < min(len(here), len(there)) and here[common] == there[common]:
        common += 1
    dots = "." * (len(here) - common + 1)
    return dots + ".".join(there[common:])


def is_module(dotted: str) -> bool:
    rel = Path(*dotted.split("."))
    return (ROOT / rel).with_suffix(".py").exists() or (ROOT / rel / "__init__.py").exists()


def rewrite_imports(text: str, old_module: str | None, new_module: str | None, is_init: bool) -> str:
    """The file's import statements with moved modules renamed (``old_module``/``new_module``:
    the file's own dotted name before and after the move, ``None`` outside the package)."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, int, str]] = []  # (line index, col start, col end, new text) on one line
    whole: list[tuple[int, int, str]] = []  # (first line, last line, replacement) for split statements
    old_package = package_of(old_module, is_init) if old_module else None
    new_package = package_of(new_module, is_init) if new_module else None
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                moved = new_name(alias.name)
                if moved:
                    line = lines[node.lineno - 1]
                    at = line.index(alias.name, node.col_offset)
                    edits.append((node.lineno - 1, at, at + len(alias.name), moved))
            continue
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            if old_package is None:
                continue
            target = resolve(old_package, node.level, node.module)
        else:
            target = node.module or ""
            if not (target == PACKAGE or target.startswith(PACKAGE + ".")):
                continue
        moved_target = new_name(target) or target
        names_moved = {a.name: new_name(f"{target}.{a.name}") for a in node.names if is_module(f"{target}.{a.name}")}
        names_moved = {k: v for k, v in names_moved.items() if v}

        def spell(module: str) -> str:
            return relative(new_package, module) if node.level and new_package else module

        if names_moved:
            indent = " " * node.col_offset
            parts = []
            rest = [a for a in node.names if a.name not in names_moved]
            if rest:
                listed = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in rest)
                parts.append(f"from {spell(moved_target)} import {listed}")
            for a in node.names:
                if a.name in names_moved:
                    parent, leaf = names_moved[a.name].rsplit(".", 1)
                    alias = a.asname or a.name
                    parts.append(f"from {spell(parent)} import {leaf}" + (f" as {alias}" if alias != leaf else ""))
            whole.append((node.lineno - 1, (node.end_lineno or node.lineno) - 1, indent + f"\n{indent}".join(parts) + "\n"))
            continue
        new_spelling = spell(moved_target)
        old_spelling = ("." * node.level) + (node.module or "")
        if new_spelling == old_spelling:
            continue
        line = lines[node.lineno - 1]
        m = re.compile(r"from\s+(" + re.escape(old_spelling) + r")\s+import\b").search(line, node.col_offset)
        if m is None:
            raise SystemExit(f"cannot find the head of {ast.unparse(node)!r} in {line!r}")
        edits.append((node.lineno - 1, m.start(1), m.end(1), new_spelling))
    for index, start, end, new in sorted(edits, reverse=True):
        lines[index] = lines[index][:start] + new + lines[index][end:]
    for first, last, new in sorted(whole, reverse=True):
        tail = lines[last].rstrip("\n")
        end_col = len(tail)
        lines[first : last + 1] = [new if end_col else new]
    return "".join(lines)


def dotted_pattern() -> re.Pattern[str]:
    olds = sorted(MOVES, key=len, reverse=True)
    return re.compile(r"\b" + re.escape(PACKAGE) + r"\.(" + "|".join(re.escape(o) for o in olds) + r")\b(?![\w])")


def path_pattern() -> re.Pattern[str]:
    olds = sorted(MOVES, key=len, reverse=True)
    return re.compile(r"\b" + re.escape(PACKAGE) + r"/(" + "|".join(re.escape(o.replace(".", "/")) for o in olds) + r")(\.py|/)")


def rewrite_text(text: str) -> str:
    text = dotted_pattern().sub(lambda m: f"{PACKAGE}.{MOVES[m.group(1)]}", text)
    inverse = {o.replace(".", "/"): n.replace(".", "/") for o, n in MOVES.items()}
    return path_pattern().sub(lambda m: f"{PACKAGE}/{inverse[m.group(1)]}{m.group(2)}", text)


def files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    keep = []
    for name in listed:
        path = ROOT / name
        if path.suffix == ".py" or name.startswith("docs/") and path.suffix == ".md" or name in ("pyproject.toml",) \
                or name.startswith("tools/") and path.suffix == ".txt":  # fmt: skip
            keep.append(path)
    return keep


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    changed: dict[Path, str] = {}
    for path in files():
        text = path.read_text(encoding="utf-8")
        new = text
        if path.suffix == ".py":
            old_module = module_of(path)
            is_init = path.name == "__init__.py"
            if old_module and is_init:
                old_module = old_module.rsplit(".", 1)[0]
            new_module = (new_name(old_module) or old_module) if old_module else None
            new = rewrite_imports(new, old_module, new_module, is_init)
        new = rewrite_text(new)
        if new != text:
            changed[path] = new
    moves = []
    for old, new in sorted(MOVES.items()):
        src = ROOT / PACKAGE / Path(*old.split("."))
        dst = ROOT / PACKAGE / Path(*new.split("."))
        if src.is_dir():
            moves.append((src, dst))
        else:
            moves.append((src.with_suffix(".py"), dst.with_suffix(".py")))
    if args.dry_run:
        for path in sorted(changed):
            print(f"rewrite {path.relative_to(ROOT)}")
        for src, dst in moves:
            print(f"move {src.relative_to(ROOT)} -> {dst.relative_to(ROOT)}")
        return 0
    for path, text in changed.items():
        path.write_text(text, encoding="utf-8")
    for src, dst in moves:
        dst.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "mv", str(src), str(dst)], cwd=ROOT, check=True)
    print(f"{len(changed)} files rewritten, {len(moves)} moved")
    return 0


if __name__ == "__main__":
    sys.exit(main())
