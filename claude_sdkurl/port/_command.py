"""The command, ``python -m claude_sdkurl.port``: files found, read in their encoding, each
ported and written whole or not at all, one line for each file it cannot read, parse or write.
``libcst`` is imported here only when there is something to port: a clear message when it is
missing."""

from __future__ import annotations

import argparse
import io
import os
import re
import stat
import sys
import tokenize
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._files import replace_whole
from .._version import add_version_flag
from ._ported import PortError, Ported, has_work

_ASYNC_DEF = re.compile(r"^[ \t]*async[ \t]+def[ \t]+(\w+)", re.MULTILINE)

def _files(paths: Sequence[str]) -> list[Path]:
    """The files named, and the ``*.py`` below the directories named (symlinked directories are
    not followed, so a link loop is walked once)."""
    found: list[Path] = []
    for p in map(Path, paths):
        if not p.is_dir():
            found.append(p)
            continue
        for top, dirs, names in os.walk(p):
            dirs.sort()
            found += [Path(top, n) for n in sorted(names) if n.endswith(".py")]
    return found


def _read(path: Path) -> tuple[str, str]:
    """The file's text and its encoding, as Python reads a source file (PEP 263: a BOM or a
    ``coding:`` line, else UTF-8)."""
    with open(path, "rb") as f:
        data = f.read()
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding), encoding


def _write(path: Path, text: str, encoding: str) -> None:
    """Replace the file's contents at once: written to a temporary file beside it (its mode
    copied), flushed to disk, then renamed over it; a write cut short (a full disk, a size limit)
    leaves the file as it was. A symlink is followed: its target is written, the link stays."""
    target = Path(os.path.realpath(path))
    mode = stat.S_IMODE(target.stat().st_mode)
    if not mode & 0o222 or not os.access(target, os.W_OK):
        raise PermissionError("the file is read-only")
    replace_whole(target, text.encode(encoding), mode=mode, suffix=".port-tmp")


def _reason(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """The command (see the module doc). Exit 0: done (or nothing to do); 1 with ``--check``
    when a file would change or has places left; 2: a file could not be read, parsed or
    written (each such file is named on one line; the other files are ported all the same).

    Each file is written whole or not at all (see :func:`_write`); a run is not all-or-nothing
    across files: the files that could be ported are written."""
    parser = argparse.ArgumentParser(prog="python -m claude_sdkurl.port", description="Port a program written for claude_agent_sdk to synchronous claude_sdkurl.")
    add_version_flag(parser)
    parser.add_argument("paths", nargs="+", help="files or directories (*.py below them)")
    parser.add_argument("-w", "--write", action="store_true", help="write the ported files in place")
    parser.add_argument("--check", action="store_true", help="exit 1 if any file still needs porting")
    args = parser.parse_args(argv)
    port_source = _porter()
    results: list[tuple[Ported, str]] = []
    status = 0
    sources: list[tuple[Path, str, str, frozenset[str]]] = []
    for path in _files(args.paths):
        try:
            source, encoding = _read(path)
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError) as error:
            print(f"claude_sdkurl.port: {path}: cannot read: {_reason(error)}", file=sys.stderr)
            status = 2
            continue
        sources.append((path, source, encoding, frozenset(_ASYNC_DEF.findall(source)) if has_work(source) else frozenset()))
    for path, source, encoding, _ in sources:
        # the async defs of the run's other files: made plain by this same run
        elsewhere = frozenset().union(*(names for other, _, _, names in sources if other != path))
        try:
            results.append((port_source(source, str(path), elsewhere), encoding))
        except PortError as error:
            print(f"claude_sdkurl.port: {error}", file=sys.stderr)
            status = 2
    written: list[Ported] = []
    for r, encoding in results:
        if not r.changed and not r.todo:
            continue
        if args.write and r.changed:
            try:
                _write(Path(r.path), r.after, encoding)
            except (OSError, UnicodeEncodeError) as error:
                print(f"claude_sdkurl.port: {r.path}: not written: {_reason(error)}", file=sys.stderr)
                status = 2
                continue
            written.append(r)
        elif not args.check:
            sys.stdout.write(r.diff())
    ported = [r for r, _ in results]
    left = [(r.path, line, text) for r in ported for line, text in r.todo]
    unsure = [(r.path, line, text) for r in ported for line, text in r.unsure]
    changed = written if args.write else [r for r in ported if r.changed]
    print(f"claude_sdkurl.port: {len(changed)} file(s) {'written' if args.write else 'to change'}, "
          f"{len(left)} place(s) left for you", file=sys.stderr)  # fmt: skip
    for where, line, text in left:
        print(f"  {where}:{line}: {text}", file=sys.stderr)
    if unsure:
        print("  awaits removed whose target is not an SDK call or a function of the file (check each):", file=sys.stderr)
        for where, line, text in unsure:
            print(f"  {where}:{line}: await {text}", file=sys.stderr)
    if status:
        return status
    return 1 if args.check and (changed or left) else 0


def _porter() -> Any:
    """:func:`~claude_sdkurl.port.port_source`, or the command's end with what to install."""
    try:
        from ._rewrite import port_source
    except ImportError as missing:  # the optional extra
        raise SystemExit("claude_sdkurl.port needs libcst: pip install 'claude-sdkurl[port]'") from missing
    return port_source
