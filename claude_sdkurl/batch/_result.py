"""All of a batch's outcomes (:class:`BatchResult`), and the exception a stopped batch raises."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ..display import dollars
from ._checkpoint import read
from ._item import _SHOWN_ITEMS, BatchItem, _item_row, interrupted

class BatchStopped(KeyboardInterrupt):
    """:func:`run_batch` was stopped (Ctrl-C, a notebook's stop button) and stopped its runs.

    A ``KeyboardInterrupt``, so a script still stops; ``result`` holds every item that had
    ended, the others marked ``fault="stopped"``. Pass it as ``resume=`` to go on.
    """

    result: BatchResult
    """Every item that had ended; the others marked ``fault="stopped"``. Pass it as ``resume=``."""

    def __init__(self, result: BatchResult) -> None:
        self.result = result
        cut = interrupted(result.items)
        failed = len(result.failed) - cut
        done = len(result.items) - cut - failed
        super().__init__(f"run_batch stopped: {done} done, {cut} interrupted{f', {failed} failed' if failed else ''}; "
                         "the interrupted ones are marked fault='stopped' in this exception's .result (pass it as resume= to go on)")  # fmt: skip

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for it: its one line (a stop is no crash: a chained traceback of
        the driver's frames said nothing more)."""
        return [f"BatchStopped: {self}"]


@dataclasses.dataclass
class BatchResult:
    """Every item, in prompt order, and the totals.

    Loaded from a checkpoint, it also says where an unfinished batch stood: ``unfinished``,
    the latest run of each item that was to run again (limited, or a transient fault: its
    session goes on when resumed), and ``paused_until``, the time (epoch seconds) its driver
    meant to probe a rate limit again when it stopped while paused.
    """

    items: list[BatchItem]
    """Every item, in prompt order."""
    unfinished: dict[int, BatchItem] = dataclasses.field(default_factory=dict)
    """From a checkpoint: the latest run of each item that was to run again, by index."""
    paused_until: float | None = None
    """From a checkpoint: when (epoch seconds) a paused batch meant to probe the limit again."""

    @property
    def succeeded(self) -> list[BatchItem]:
        return [i for i in self.items if i.ok]

    @property
    def failed(self) -> list[BatchItem]:
        return [i for i in self.items if i.error is not None]

    @property
    def waiting(self) -> list[BatchItem]:
        """Items whose run ended on a parked tool call (see :mod:`claude_sdkurl.approvals`)."""
        return [i for i in self.items if i.parked is not None and i.error is None]

    @property
    def total_cost_usd(self) -> float:
        return sum(i.total_cost_usd or 0.0 for i in self.items)

    def cost_by_model(self) -> dict[str, float]:
        """Per model, the CLI's own ``costUSD`` summed over items (workers anywhere: it travels
        in each item)."""
        out: dict[str, float] = {}
        for item in self.items:
            for model, usage in (item.model_usage or {}).items():
                out[model] = out.get(model, 0.0) + float(usage.get("costUSD") or 0.0)
        return out

    def total_tokens(self, kind: str = "output_tokens") -> int:
        """Sum of a usage counter (``input_tokens``, ``output_tokens``, ``cache_read_input_tokens``...)."""
        return sum(int((i.usage or {}).get(kind) or 0) for i in self.items)

    def _repr_markdown_(self) -> str:
        cut = interrupted(self.items)  # a stopped batch: interrupted, not failed
        head = (f"**{len(self.succeeded)}** done, {f'**{cut}** interrupted, ' if cut else ''}**{len(self.failed) - cut}** failed, "
                f"**{len(self.waiting)}** waiting · "
                f"{dollars(self.total_cost_usd)} · {self.total_tokens('input_tokens'):,} in / {self.total_tokens('output_tokens'):,} out tokens")  # fmt: skip
        rows = [_item_row(i) for i in self.items[:_SHOWN_ITEMS]]
        if not rows:
            return head
        table = "\n".join(["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
                          + ["| " + " | ".join(r.values()) + " |" for r in rows])  # fmt: skip
        more = f"\n\n… and {len(self.items) - _SHOWN_ITEMS} more items" if len(self.items) > _SHOWN_ITEMS else ""
        return f"{head}\n\n{table}{more}"

    @classmethod
    def load(cls, path: str | Path) -> BatchResult:
        """A checkpoint file's items (the last line of an index wins) and, from its state lines,
        where the batch stood (see the class). A torn last line (a crash mid-write) is skipped
        with a warning; any other line that is not a whole record raises
        :class:`CheckpointError` naming the file and line."""
        items, unfinished, paused_until = read(path)
        return cls(items, unfinished, paused_until)
