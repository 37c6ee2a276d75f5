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
    """The prompt's place in the batch (0 for the first)."""
    prompt: str
    """The prompt."""
    text: str | None = None
    """The answer's text."""
    structured_output: Any = None
    """The answer as data, with ``output_format``."""
    total_cost_usd: float | None = None
    """What every run of this item cost, in this batch and in the batches it resumed."""
    usage: dict[str, Any] | None = None
    """Token counts of its last run."""
    session_id: str | None = None
    """The session of its last run (resume it to go on)."""
    num_turns: int | None = None
    """Agent turns of its last run."""
    error: str | None = None
    """``"TypeName: text"`` when it failed; ``None`` otherwise."""
    seconds: float = 0.0
    """Time its runs took."""
    resumed_from: str | None = None
    """The session it went on with, when a run was resumed (see ``RetryPolicy.continue_prompt``)."""
    model_usage: dict[str, Any] | None = None
    """The CLI's tokens and cost per model of its last run, less what its session carried in."""
    fault: str | None = None
    """Why it failed: ``"limit"`` (rate limit, overload), ``"transient"``, ``"budget"``, ``"stopped"``; ``None``
    otherwise."""
    resets_at: float | None = None
    """With a limit: when the CLI said it resets (epoch seconds), if it did."""
    retry_after: float | None = None
    """With a limit: the seconds the CLI meant to wait before retrying (the server's hint)."""
    worked: bool = False
    """The model answered at least once (the session holds work worth resuming)."""
    attempts: int = 1
    """Runs of this item in this batch (limits and transient faults run it again)."""
    near_limit: dict[str, Any] | None = None
    """The fullest usage window its run saw: ``{"window", "utilization", "resets_at"}``."""
    parked: dict[str, Any] | None = None
    """A tool call waiting for ``approve()``/``deny()`` (:mod:`claude_sdkurl.approvals`)."""
    outcome: Any = None
    """What a job other than a prompt made of its run (an eval's :class:`Attempt`)."""

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
    """Items finished well."""
    failed: int
    """Items failed."""
    total: int
    """Items in all."""
    cost_usd: float
    """What the batch has cost so far."""
    elapsed: float
    """Seconds since it started."""
    paused: bool = False
    """A rate limit holds the batch (see :class:`RetryPolicy`)."""
    running: int = 0
    """Items running now."""
    stopped: bool = False
    """The batch was stopped (:class:`BatchStopped`): this is its last report."""
    interrupted: int = 0
    """In that report: items the stop cut short (in neither ``done`` nor ``failed``)."""
