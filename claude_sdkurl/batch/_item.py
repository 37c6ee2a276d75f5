"""One prompt's outcome (:class:`BatchItem`), what a progress report says (:class:`BatchProgress`),
and how an item reads in a notebook's table."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from ..display import MARK_FAILED, MARK_OK, MARK_STOPPED, MARK_WAITING, all_dollars, dollars

@dataclasses.dataclass
class BatchItem:
    """The outcome of one prompt; ``error`` is set (``"TypeName: text"``) when it failed."""

    index: int
    prompt: str
    text: str | None = None
    structured_output: Any = None
    total_cost_usd: float | None = None  # what this item's runs spent, every run of it in this batch and in the batches it resumed
    usage: dict[str, Any] | None = None
    session_id: str | None = None
    num_turns: int | None = None
    error: str | None = None
    seconds: float = 0.0
    resumed_from: str | None = None  # the session this item went on with (see ``continue_prompt``)
    model_usage: dict[str, Any] | None = None  # the CLI's per-model tokens and cost (its ``costUSD``) of the last run, less what its session carried in
    fault: str | None = None  # why it failed: "limit" (rate limit, overload), "transient", "budget", "stopped"; None otherwise
    resets_at: float | None = None  # with a limit: when the CLI said it resets (epoch seconds), if it did
    retry_after: float | None = None  # with a limit: how long the CLI meant to wait before retrying (the server's hint), seconds
    worked: bool = False  # the model answered at least once (the session holds work worth resuming)
    attempts: int = 1  # runs of this item in this batch (limits and transient faults run it again)
    near_limit: dict[str, Any] | None = None  # the fullest usage window its run saw: {"window", "utilization", "resets_at"} (a subscriber's rate-limit events)
    parked: dict[str, Any] | None = None  # a tool call waiting for approve()/deny() (claude_sdkurl.approvals)
    outcome: Any = None  # what a job other than a prompt made of its run (an eval's Attempt)

    @property
    def ok(self) -> bool:
        """Finished without an error (a parked item is not: it waits)."""
        return self.error is None and self.parked is None

    def _repr_markdown_(self) -> str:
        return "| | |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in _item_row(self).items())


_SHOWN_ITEMS = 20  # items listed in a notebook's table of a BatchResult


def interrupted(items: Iterable[BatchItem]) -> int:
    """How many of ``items`` a stop cut short (``fault="stopped"``): shown as interrupted, not failed."""
    return sum(1 for i in items if i.fault == "stopped")


def _item_row(item: BatchItem) -> dict[str, str]:
    def cell(s: str, n: int = 60) -> str:  # a preview: one line, no HTML, no $ pair read as math
        s = " ".join(s.split())
        s = s if len(s) <= n else s[: n - 1] + "…"
        return all_dollars(s.replace("|", "\\|").replace("<", "&lt;"))

    if item.ok:
        state = MARK_OK
    elif item.parked is not None and item.error is None:
        state = f"{MARK_WAITING} waiting"
    elif item.fault == "stopped":
        state = f"{MARK_STOPPED} interrupted"
    else:
        state = f"{MARK_FAILED} {item.fault or 'error'}"
    cost = dollars(item.total_cost_usd) if item.total_cost_usd is not None else "–"
    return {"#": str(item.index), "": state, "prompt": cell(item.prompt, 40), "answer or error": cell(item.error or item.text or ""),
            "cost": cost, "seconds": f"{item.seconds:.1f}"}  # fmt: skip


@dataclasses.dataclass
class BatchProgress:
    """What a progress callback gets: at the start, after each item, and about once a second."""

    done: int
    failed: int
    total: int
    cost_usd: float
    elapsed: float
    paused: bool = False  # a rate limit holds the batch (see RetryPolicy)
    running: int = 0  # items running now
    stopped: bool = False  # the batch was stopped (BatchStopped), this is its last report
    interrupted: int = 0  # in that report: items the stop cut short (counted in neither done nor failed)
