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
        sys.stderr.write("\r" + _bar(p) + ("\n" if p.done == p.total else ""))
        sys.stderr.flush()

    return line


def _bar(p: BatchProgress, markdown: bool = False, width: int = 30) -> str:
    filled = int(width * p.done / p.total) if p.total else width
    text = f"[{'#' * filled}{'.' * (width - filled)}] {p.done}/{p.total}, {p.running} running, {p.failed} failed, ${p.cost_usd:.4f}, {p.elapsed:.0f} s"
    if p.paused:
        text += ", paused: rate limited"
    if p.stopped:
        text += ", stopped"
    return f"`{text}`" if markdown else text
