"""Progress reports: a line on standard error, or a live line in a notebook."""

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

    def line(p: BatchProgress) -> None:
        sys.stderr.write("\r" + _bar(p) + ("\n" if p.done == p.total or p.stopped else ""))
        sys.stderr.flush()

    return line


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
