"""Our package is written by us: a check against the official package's source.

For each module of ``claude_sdkurl``, the long lines (over 25 characters once
stripped) are looked up among the stripped lines of the installed
``claude_agent_sdk`` 0.2.189. Interface text may repeat there and is not
counted: a line that is mostly string literals (an error text users match on,
a wire key), an annotated name (a public field or parameter declaration), a
``def`` line of a public name, and ``__all__``. The test fails when more than
``LIMIT`` of a module's counted long lines stand verbatim in the official
source. Run this file with ``-s`` to see the share per module.
"""

from __future__ import annotations

import io
import re
import tokenize
from functools import lru_cache
from pathlib import Path

import claude_agent_sdk
import pytest

import claude_sdkurl

LIMIT = 0.10  # "a small share": at most one counted long line in ten
LONG = 25

OURS = Path(claude_sdkurl.__file__).parent
THEIRS = Path(claude_agent_sdk.__file__).parent

_INTERFACE = [
    re.compile(r"^\*{0,2}[A-Za-z_][A-Za-z0-9_.]*\s*:\s*[^=]"),  # name: Type [= default] (a field, a parameter)
    re.compile(r"^(async\s+)?def\s+([a-z][A-Za-z0-9_]*|__init__)\("),  # a public function's or class's signature
    re.compile(r"^class\s"),  # a public type and its bases
    re.compile(r"^(from\s.*\simport\s|import\s|[A-Za-z_][A-Za-z0-9_]*,$)"),  # imports and names in import lists
    re.compile(r"^[a-z_][a-z0-9_]*=.*,$"),  # a keyword argument: a field filled from a wire key
    re.compile(r"^return [A-Z][A-Za-z]*\($"),  # a public type being built
    re.compile(r"^[A-Z][A-Za-z]* = (Literal|TypedDict)\["),  # a public type alias
    re.compile(r"^\|?\s*[A-Z][A-Za-z]*$"),  # a member of a public union
    re.compile(r"^[a-z_][a-z0-9_]*=[A-Z][A-Za-z]*\($"),  # a keyword argument building a public type
    re.compile(r"^\[.*\],$"),  # the parameter list of a public Callable alias
    re.compile(r"^if (not )?isinstance\([a-z_]+, [a-z]+\):$"),  # a bare type guard: commonplace Python
    re.compile(r"^if sys\.version_info"),  # a version switch for imports
]


def _lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]


@lru_cache(maxsize=1)
def theirs() -> frozenset[str]:
    return frozenset(line for p in THEIRS.rglob("*.py") for line in _lines(p) if len(line) > LONG)


def _without_strings(line: str) -> str:
    """The line with its string literals (and comments) taken out; the line itself when it
    does not tokenize alone (a part of a multi-line statement)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line + "\n").readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return re.sub(r"""(['"]).*?\1""", "", line)
    kept = [t.string for t in tokens if t.type not in (tokenize.STRING, tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE)]
    return "".join(kept)


def is_interface(line: str) -> bool:
    """Text a drop-in must repeat (see the module doc)."""
    if line.startswith("__all__") or any(rule.match(line) for rule in _INTERFACE):
        return True
    return len(_without_strings(line)) <= LONG


def share(path: Path) -> tuple[int, int]:
    """(verbatim, counted) long lines of one of our modules."""
    counted = [line for line in _lines(path) if len(line) > LONG and not is_interface(line)]
    official = theirs()
    return sum(line in official for line in counted), len(counted)


MODULES = sorted(p for p in OURS.rglob("*.py"))


def test_the_measure_finds_a_copy(tmp_path: Path) -> None:
    """The measure counts a copied function as verbatim and our own writing as not."""
    copied = next(p for p in THEIRS.rglob("sessions.py"))
    sample = tmp_path / "copied.py"
    sample.write_text(copied.read_text(encoding="utf-8"))
    verbatim, counted = share(sample)
    assert counted > 100 and verbatim / counted > 0.9
    own = tmp_path / "own.py"
    own.write_text("def walk_back_from(leaf_entry, entries_by_uuid):\n    return list(reversed(entries_by_uuid))\n")
    assert share(own) == (0, 1)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(OURS)))
def test_module_is_ours(path: Path) -> None:
    verbatim, counted = share(path)
    ratio = verbatim / counted if counted else 0.0
    print(f"{path.relative_to(OURS)}: {verbatim}/{counted} = {ratio:.0%}")
    assert ratio <= LIMIT, (
        f"{path.relative_to(OURS)}: {verbatim} of {counted} long lines stand verbatim in claude_agent_sdk "
        f"({ratio:.0%} > {LIMIT:.0%}); write it in our own words"
    )
