"""The imports of a ported module: the standard-library modules the rewrites call are added,
``import asyncio/anyio/trio`` no longer used is dropped (its comments kept), in one pass."""

from __future__ import annotations

import ast
import re
from typing import Any

import libcst as cst

from ._find import _dotted
from ._ported import _LOOPS


def _fix_imports(module: cst.Module, porter: Any) -> cst.Module:
    """Add the stdlib modules the rewrites call; drop ``import asyncio/anyio/trio`` no longer
    used (the comments and blank lines above a dropped line stay, above the next statement).
    What the module still uses is looked at once, and only where a loop library is imported."""
    kept: list[cst.BaseStatement] = []
    carried: list[cst.EmptyLine] = []  # the leading lines of a dropped import, for the next statement
    used: set[str] | None = None
    for stmt in module.body:
        names = _plain_imports(stmt)
        loops = set(names) & set(_LOOPS)
        if loops and used is None:
            used = _loops_used(module)
        unused = loops - (used or set())
        if unused and isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Import):  # (what names says)
            # a loop library no longer used: drop it from the import
            imp = stmt.body[0]
            aliases = [a for a in imp.names if _dotted(a.name) not in unused]
            if not aliases:
                carried += list(stmt.leading_lines)
                trailing = stmt.trailing_whitespace.comment
                if trailing is not None:  # its own line now, where the import was: not lost
                    carried.append(cst.EmptyLine(comment=trailing))
                continue
            aliases[-1] = aliases[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            stmt = stmt.with_changes(body=[imp.with_changes(names=aliases)])
        if carried:
            own = list(stmt.leading_lines)
            if carried[-1].comment is None and own and own[0].comment is None:
                own = own[1:]  # one blank line where the import was, not two
            stmt = stmt.with_changes(leading_lines=[*carried, *own])
            carried = []
        kept.append(stmt)
    present = {n for stmt in kept for n in _plain_imports(stmt)}
    missing = sorted(porter.need - present)
    footer = list(module.footer)
    if carried:  # the dropped import was the last statement: its comments go to the footer
        footer = [*carried, *footer]
    if missing:
        # After the file's first run of imports: a comment above an import (the top of the
        # file's among them, which libcst keeps in the module's header) stays with it.
        begins = next((i for i, s in enumerate(kept) if _is_import(s)), None)
        if begins is None:
            at = 1 if kept and _is_docstring(kept[0]) else 0
        else:
            at = begins
            while at < len(kept) and _is_import(kept[at]):
                at += 1
        kept[at:at] = [cst.parse_statement(f"import {name}\n") for name in missing]
    first = kept[0] if kept else None
    if not missing and module.body and isinstance(first, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and first is not module.body[0]:
        # the file's first statement was dropped: no blank line left at its top
        lines = list(first.leading_lines)
        while lines and lines[0].comment is None:
            lines.pop(0)
        kept[0] = first.with_changes(leading_lines=lines)
    return module.with_changes(body=kept, footer=footer)


def _plain_imports(stmt: cst.BaseStatement) -> list[str]:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Import):
        return [_dotted(a.name) for a in stmt.body[0].names if a.asname is None]
    return []


def _is_import(stmt: cst.BaseStatement) -> bool:
    """A line of imports alone (``import a``, ``from b import c``, or several with ``;``)."""
    return isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _loops_used(module: cst.Module) -> set[str]:
    """The loop libraries (asyncio, anyio, trio) the module's code still refers to. A look at
    its text first: a name found nowhere but in the import statements is not used. Where the
    text has it elsewhere too (code, a comment, a string), Python's own parser says whether any
    of that is code: a walk of its tree costs a tenth of libcst's (a multi-megabyte file spent
    as long here as in every rewrite together)."""
    code = module.code
    imports = "".join(module.code_for_node(stmt) for stmt in module.body if _is_import(stmt))
    candidates = {loop for loop in _LOOPS if len(re.findall(rf"\b{loop}\b", code)) > len(re.findall(rf"\b{loop}\b", imports))}
    if not candidates:
        return set()
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return candidates  # (kept: an import too many is harmless, one too few is not)
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in candidates}
