"""Progress reports: a line on standard error (redrawn on a terminal; elsewhere, a log file, a
plain line each time something but the clock changed), or a live line in a notebook."""

from __future__ import annotations

import sys
from collections.abc import Callable

from ..display import notebook
from ._item import BatchProgress

def _reporter(progress: bool | Callable[[BatchProgress], None] | None, total: int) -> Callable[[BatchProgress], None] | None:
    if callable(progress):
        return progress
    if not progress:
        return None
    ipython = notebook()
    if ipython is not None:
        handle = ipython.display.display(ipython.display.Markdown(""), display_id=True)
        return lambda p: handle.update(ipython.display.Markdown(_bar(p, markdown=True)))

    if not _terminal():
        last: list[tuple[int, int, int, bool, bool]] = []

        def plain(p: BatchProgress) -> None:
            state = (p.done, p.running, p.failed, p.paused, p.stopped)
            if last and last[0] == state:
                return  # (only the clock moved)
            last[:] = [state]
            sys.stderr.write(_bar(p) + "\n")
            sys.stderr.flush()

        return plain

    def line(p: BatchProgress) -> None:
        sys.stderr.write("\r" + _bar(p) + ("\n" if p.done == p.total or p.stopped else ""))
        sys.stderr.flush()

    return line


def _terminal() -> bool:
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):  # replaced by an object without it, or closed
        return False


def _bar(p: BatchProgress, markdown: bool = False, width: int = 30) -> str:
    if p.stopped:  # one line that says what a stop left, not a full bar of "failed" items
        ok = p.done - p.failed
        text = (f"stopped after {p.elapsed:.0f} s: {ok} done, {p.interrupted} interrupted"
                f"{f', {p.failed} failed' if p.failed else ''}, ${p.cost_usd:.4f} (resume=: the interrupted ones run)")  # fmt: skip
        return f"`{text}`" if markdown else text
    filled = int(width * p.done / p.total) if p.total else width
    text = f"[{'#' * filled}{'.' * (width - filled)}] {p.done}/{p.total}, {p.running} running, {p.failed} failed, ${p.cost_usd:.4f}, {p.elapsed:.0f} s"
    if p.paused:
        text += ", paused: rate limited"
    return f"`{text}`" if markdown else text
