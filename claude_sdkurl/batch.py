"""Many prompts at once, on any ``concurrent.futures.Executor``.

::

    from claude_sdkurl.batch import run_batch

    result = run_batch(prompts, options, max_concurrency=8)           # threads in this process
    result = run_batch(prompts, options, executor=dask_client.get_executor())  # a Dask cluster
    result = run_batch(prompts, options, executor=RayExecutor())               # Ray (after ray.init())
    print(result.total_cost_usd, result.failed)

Each prompt is one :func:`claude_sdkurl.query`, run by :func:`run_one` wherever
the executor runs it. An item that fails is a :class:`BatchItem` with a named
``error`` (the exception's type and text), never an exception that ends the
batch. With ``checkpoint=path`` each finished item is appended to a JSON-lines
file as it finishes; ``resume=path`` (or a :class:`BatchResult`) skips the
prompts already finished there, so a half-done batch goes on where it stopped;
with a ``session_store`` in the options and ``continue_prompt``, an item that
failed mid-session goes on with its session from the store instead of starting
over (on any worker: the store is shared).
Options travel to remote workers by pickling: a field that cannot be pickled is
named in :class:`UnpicklableOptionError` before anything is submitted.

The driver (this process) meets limits and faults for every executor alike (see
:class:`RetryPolicy`): a rate limit pauses the batch and one probe at a time decides when it
goes on; transient faults run an item again a bounded number of times; a
``max_total_cost_usd`` budget gives each item a share as its ``max_budget_usd`` and starts
nothing once it is spent. Workers never wait on a limit holding a CLI.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import json
import logging
import os
import pickle
import random
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from . import _cancel, _trace
from ._errors import CLIConnectionError, CLINotFoundError, ClaudeSDKError, ExitedBeforeConnectingError, ProcessError, ResultError
from .display import dollars, notebook
from .ledger import CostLedger
from .query import counted
from .types import AssistantMessage, ClaudeAgentOptions, RateLimitEvent, ResultMessage, SystemMessage, TextBlock, ToolUseBlock

logger = logging.getLogger("claude_sdkurl.batch")

__all__ = ["BatchItem", "BatchResult", "BatchProgress", "CheckpointError", "RayExecutor", "RetryPolicy", "UnpicklableOptionError", "run_batch", "run_one"]


class UnpicklableOptionError(ClaudeSDKError, TypeError):
    """An option cannot travel to a remote worker (it cannot be pickled)."""

    def __init__(self, field: str, error: BaseException):
        self.field = field
        super().__init__(
            f"ClaudeAgentOptions.{field} cannot be sent to a remote worker ({type(error).__name__}: {error}); "
            "use a module-level function or a picklable object, or run the batch on threads"
        )


class BatchStopped(KeyboardInterrupt):
    """:func:`run_batch` was stopped (Ctrl-C, a notebook's stop button) and stopped its runs.

    A ``KeyboardInterrupt``, so a script still stops; ``result`` holds every item that had
    ended, the others marked ``fault="stopped"``. Pass it as ``resume=`` to go on.
    """

    def __init__(self, result: BatchResult) -> None:
        self.result = result
        ended = sum(1 for i in result.items if i.fault != "stopped")
        super().__init__(f"run_batch stopped: {ended} of {len(result.items)} items had ended; "
                         "the rest are marked fault='stopped' in this exception's .result (pass it as resume= to go on)")  # fmt: skip


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
    parked: dict[str, Any] | None = None  # a tool call waiting for approve()/deny() (claude_sdkurl.approvals)

    @property
    def ok(self) -> bool:
        """Finished without an error (a parked item is not: it waits)."""
        return self.error is None and self.parked is None

    def _repr_markdown_(self) -> str:
        return "| | |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in _item_row(self).items())


@dataclasses.dataclass
class BatchResult:
    """Every item, in prompt order, and the totals.

    Loaded from a checkpoint, it also says where an unfinished batch stood: ``unfinished``,
    the latest run of each item that was to run again (limited, or a transient fault: its
    session goes on when resumed), and ``paused_until``, the time (epoch seconds) its driver
    meant to probe a rate limit again when it stopped while paused.
    """

    items: list[BatchItem]
    unfinished: dict[int, BatchItem] = dataclasses.field(default_factory=dict)
    paused_until: float | None = None

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
        head = (f"**{len(self.succeeded)}** done, **{len(self.failed)}** failed, **{len(self.waiting)}** waiting · "
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
        with a warning; any other line that is not a whole record raises :class:`CheckpointError`
        naming the file and line (nothing is guessed, so nothing paid for is run again unseen)."""
        items: dict[int, BatchItem] = {}
        unfinished: dict[int, BatchItem] = {}
        paused_until: float | None = None
        p = Path(path)
        if not p.exists():
            return cls([], unfinished, paused_until)
        raw = p.read_bytes().split(b"\n")
        for number, line in enumerate(raw, 1):
            if not line.strip():
                continue
            last = number == len(raw)  # no newline after it: the write may have been cut short
            try:
                data = _record(line)
            except CheckpointError as bad:
                if last:
                    logger.warning("%s:%d: the last line is torn (a write cut short), skipped: %s", p, number, bad.reason)
                    continue
                raise CheckpointError(str(p), number, bad.reason) from None
            try:
                state = data.pop("state", None)
                if state is None:
                    item = _item(data)
                    items[item.index] = item
                    unfinished.pop(item.index, None)
                elif state == "again":
                    run = _item(data["item"])
                    unfinished[run.index] = run
                elif state == "paused":
                    paused_until = float(data["probe_at"])
                elif state == "going_on":
                    paused_until = None
                else:
                    raise ValueError(f"unknown state {state!r}")
            except (TypeError, ValueError, KeyError) as bad:
                raise CheckpointError(str(p), number, f"{type(bad).__name__}: {bad}") from None
        return cls([items[k] for k in sorted(items)], unfinished, paused_until)


class CheckpointError(ClaudeSDKError, ValueError):
    """A checkpoint line is not a whole record (edited, or damaged on disk): ``path`` and
    ``line`` (1-based) say where, ``reason`` what is wrong with it."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        self.path, self.line, self.reason = path, line, reason
        super().__init__(f"{path}:{line}: not a checkpoint record ({reason}); fix or remove that line to resume")


def _record(line: bytes) -> dict[str, Any]:
    """One checkpoint line as a JSON object, or :class:`CheckpointError` (path and line 0:
    the caller names them)."""
    try:
        data = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as bad:
        raise CheckpointError("", 0, f"{type(bad).__name__}: {bad}") from None
    if not isinstance(data, dict):
        raise CheckpointError("", 0, f"a JSON {type(data).__name__}, not an object")
    return data


_ITEM_TYPES: dict[str, tuple[type, ...]] = {
    "index": (int,), "prompt": (str,), "text": (str, type(None)), "total_cost_usd": (int, float, type(None)),
    "session_id": (str, type(None)), "error": (str, type(None)), "fault": (str, type(None)), "attempts": (int,),
    "seconds": (int, float), "worked": (bool,), "parked": (dict, type(None)), "usage": (dict, type(None)),
    "model_usage": (dict, type(None)), "resumed_from": (str, type(None)),
}  # fmt: skip


def _item(data: Any) -> BatchItem:
    """A :class:`BatchItem` from a checkpoint record, its fields' types checked (``TypeError``)."""
    if not isinstance(data, dict):
        raise TypeError("an item record is not an object")
    for name, kinds in _ITEM_TYPES.items():
        if name in data and (not isinstance(data[name], kinds) or (kinds == (int,) and isinstance(data[name], bool))):
            raise TypeError(f"{name} is {type(data[name]).__name__}")
    return BatchItem(**data)


_SHOWN_ITEMS = 20  # items listed in a notebook's table of a BatchResult


def _item_row(item: BatchItem) -> dict[str, str]:
    def cell(s: str, n: int = 60) -> str:  # a preview: one line, no HTML, no $ pair read as math (see dollars())
        s = " ".join(s.split()).replace("|", "\\|").replace("<", "&lt;").replace("$", "＄")
        return s if len(s) <= n else s[: n - 1] + "…"

    state = "✅" if item.ok else ("⏸ waiting" if item.parked is not None and item.error is None else f"❌ {item.fault or 'error'}")
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


def run_one(
    index: int,
    prompt: str,
    options: ClaudeAgentOptions | None = None,
    resume_session: str | None = None,
    continue_prompt: str | None = None,
    attempt: int = 1,
    release_after: float | None = None,
) -> BatchItem:
    """Run one prompt to the end; never raises for a failed run (see :class:`BatchItem`).

    With ``resume_session`` the item goes on with that session (from
    ``options.session_store``), sending ``continue_prompt`` instead of ``prompt``.
    The item's ``session_id`` is known from the session's first message, so a
    failed item still names the session it started. ``attempt`` counts the runs of this
    item (it also keeps a run again apart from the first for executors that cache by
    arguments, as Dask does). ``release_after``: when the CLI says it will wait at least this
    many seconds before retrying a rate-limited or overloaded request (its ``api_retry``
    message), the run is stopped there and ends as ``fault="limit"``, so no CLI sits idle on
    a limit (the batch's driver pauses and runs it again).
    A module-level function, so any executor (process pools, Dask, Ray) can ship it.
    """
    t0 = time.monotonic()
    item = BatchItem(index=index, prompt=prompt, resumed_from=resume_session, attempts=attempt)
    result: ResultMessage | None = None
    if resume_session is not None:
        options = dataclasses.replace(options or ClaudeAgentOptions(), resume=resume_session, continue_conversation=False)
        prompt = continue_prompt or prompt
    spent = CostLedger()  # what this run spends (a resumed session's earlier cost is not in it)
    last_answer: list[AssistantMessage] = []  # the main conversation's latest API call, as its messages
    try:
        for message in (messages := counted(prompt, options, spent)):
            if isinstance(message, ResultMessage):
                result = message
            elif isinstance(message, SystemMessage) and (delay := _limit_wait(message)) is not None \
                    and release_after is not None and delay >= release_after:  # fmt: skip
                item.fault, item.retry_after = "limit", delay
                item.error = (f"RateLimited: the API answered {message.data.get('error_status')}; "
                              f"the CLI would have waited {delay:.1f} s, so it was stopped")  # fmt: skip
                getattr(messages, "close")()  # the query's generator: interrupts the turn, stops the CLI now
                break
            elif item.session_id is None and isinstance(message, SystemMessage):
                sid = message.data.get("session_id")
                item.session_id = sid if isinstance(sid, str) else None
            elif isinstance(message, AssistantMessage) and message.error is None:
                item.worked = True
                if message.parent_tool_use_id is None:  # (one API call may come as several messages)
                    same_call = last_answer and message.message_id and message.message_id == last_answer[-1].message_id
                    last_answer = [*last_answer, message] if same_call else [message]
            elif isinstance(message, RateLimitEvent) and message.rate_limit_info.status == "rejected":
                item.fault = "limit"
                item.resets_at = float(message.rate_limit_info.resets_at) if message.rate_limit_info.resets_at else None
    except Exception as e:
        item.error = f"{type(e).__name__}: {e}"
        if _crashed(e):
            item.fault = item.fault or "transient"
    if result is not None and result.is_error:
        item.fault = _fault_of(result) or item.fault
    answer = _paid_answer(result, last_answer)
    if answer is not None:
        # Over its budget only after the final answer came: that answer was paid for and is
        # whole, so it is kept (running the item again would pay for it a second time).
        item.error, item.fault = None, None
    if result is not None and result.terminal_reason == "tool_deferred" and result.deferred_tool_use is not None:
        use = result.deferred_tool_use
        item.fault = "parked"
        item.parked = {"session_id": result.session_id, "tool_use_id": use.id, "tool_name": use.name, "tool_input": dict(use.input or {})}
    if result is not None:
        item.text = answer if answer is not None else result.result
        item.structured_output = result.structured_output
        run = next(iter(spent.runs), None)
        item.total_cost_usd = run.cost_usd if run is not None and result.total_cost_usd is not None else None
        item.usage = result.usage
        item.session_id = result.session_id
        item.num_turns = result.num_turns
        item.model_usage = {m: dict(u) for m, u in run.models.items()} if run is not None and run.models else None
    elif item.error is None:
        item.error = "CLIConnectionError: no result"
    item.seconds = time.monotonic() - t0
    return item


def _paid_answer(result: ResultMessage | None, last: list[AssistantMessage]) -> str | None:
    """The final answer of a run the CLI ended over its budget *after* that answer arrived
    (measured on 2.1.330: an ``error_max_budget_usd`` result whose ``stop_reason`` is
    ``end_turn``; ``last`` is the main conversation's last API call, text and no tool call),
    else ``None``."""
    if result is None or result.subtype != "error_max_budget_usd" or result.stop_reason != "end_turn" or not last:
        return None
    blocks = [b for message in last for b in message.content]
    if any(isinstance(b, ToolUseBlock) for b in blocks):
        return None
    texts = [b.text for b in blocks if isinstance(b, TextBlock)]
    return "".join(texts) if texts else None


def _limit_wait(message: SystemMessage) -> float | None:
    """How long the CLI will wait before retrying a rate-limited or overloaded request (its
    ``api_retry`` message), in seconds; ``None`` for any other message."""
    if message.subtype != "api_retry" or message.data.get("error_status") not in _LIMIT_STATUSES:
        return None
    return float(message.data.get("retry_delay_ms") or 0) / 1000


def _crashed(error: BaseException) -> bool:
    """The CLI died by a signal, or its stream broke: worth another run. A missing CLI, a
    refused option, an error result or a CLI that exited with a status of its own is not."""
    if isinstance(error, (CLINotFoundError, ResultError)):
        return False
    if isinstance(error, ProcessError):
        return error.exit_code is None or error.exit_code < 0
    return isinstance(error, CLIConnectionError) and not isinstance(error, ExitedBeforeConnectingError)


_LIMIT_STATUSES = (429, 529)  # rate limited, overloaded
_TRANSIENT_STATUSES = (500, 502, 503, 504)


def _fault_of(result: ResultMessage) -> str | None:
    """What an error result says about retrying: "limit", "transient", "budget" or ``None``."""
    if result.api_error_status in _LIMIT_STATUSES:
        return "limit"
    if result.api_error_status in _TRANSIENT_STATUSES:
        return "transient"
    if result.subtype == "error_max_budget_usd":
        return "budget"
    return None


@dataclasses.dataclass
class RetryPolicy:
    """How :func:`run_batch` meets rate limits, overload and transient faults.

    A limit (an item ends on a 429 or 529, or a rejected ``rate_limit_event``) pauses the whole
    batch: no item starts, and once the running ones have ended one probe (a limited item run
    again) decides when to go on. Probes wait ``first_wait`` seconds, doubling after each one
    limited again, with full jitter, never more than ``max_wait``; a ``retry-after`` hint (the
    delay a CLI said it would wait before it was released) is honoured where it is shorter than
    that. A reset time the CLI gave (a usage limit's ``resetsAt``) is waited for in full, however
    far: a probe before it would only spend a request. A batch paused for hours can be stopped
    (Ctrl-C: :class:`BatchStopped`) and resumed later from its checkpoint. A transient fault (an
    API 5xx, a CLI that crashed, a worker lost) runs that item again after the same kind of wait,
    at most ``max_retries`` times; then it fails, ``fault="transient"``. ``max_pauses`` bounds the
    probes of one pause (``None``: no bound); past it the limited items fail with ``fault="limit"``.
    A CLI that meets a limit with a short ``retry-after`` waits and retries by itself; once it
    says it will wait ``release_after`` seconds or more, its run is stopped and counts as limited
    (the CLI is released; the item runs again after the pause). ``None``: CLIs wait as they will.
    """

    first_wait: float = 1.0
    max_wait: float = 60.0
    max_retries: int = 3
    max_pauses: int | None = None
    release_after: float | None = 5.0
    continue_prompt: str = "Continue where you left off."

    def __post_init__(self) -> None:
        for name in ("first_wait", "max_wait"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and value >= 0):
                raise ValueError(f"RetryPolicy.{name} must be a number of seconds >= 0, not {value!r}")
        if not (isinstance(self.max_retries, int) and self.max_retries >= 0):
            raise ValueError(f"RetryPolicy.max_retries must be an int >= 0, not {self.max_retries!r}")
        if self.max_pauses is not None and not (isinstance(self.max_pauses, int) and self.max_pauses > 0):
            raise ValueError(f"RetryPolicy.max_pauses must be None or an int > 0, not {self.max_pauses!r}")

    def wait(self, tries: int, resets_at: float | None = None, retry_after: float | None = None) -> float:
        """Seconds before try ``tries`` (1 = the first retry): until ``resets_at`` (epoch seconds)
        when that is still ahead, however far; else jittered doubling capped at ``max_wait``,
        and at least ``retry_after`` (seconds) where that is within the cap."""
        ceiling = min(self.max_wait, self.first_wait * 2 ** max(0, tries - 1))
        jittered = random.uniform(self.first_wait / 2, max(self.first_wait / 2, ceiling))
        until = resets_at - time.time() if resets_at is not None else 0.0
        if until > 0:
            return max(until, jittered / 4)
        if retry_after is not None and 0 < retry_after <= self.max_wait:
            return max(retry_after, jittered / 4)
        return jittered


def run_batch(
    prompts: Iterable[str],
    options: ClaudeAgentOptions | None = None,
    *,
    executor: cf.Executor | None = None,
    max_concurrency: int = 8,
    progress: bool | Callable[[BatchProgress], None] | None = None,
    checkpoint: str | Path | None = None,
    resume: str | Path | BatchResult | None = None,
    continue_prompt: str | None = None,
    retry: RetryPolicy | None = RetryPolicy(),
    max_total_cost_usd: float | None = None,
) -> BatchResult:
    """Run every prompt, at most ``max_concurrency`` at a time, and return all outcomes.

    Args:
        executor: where items run (default: a thread pool of ``max_concurrency``
            threads, closed afterwards). A process pool or a Dask/Ray executor
            runs them on other processes or machines; the options are pickled.
        progress: ``True`` for a progress line on standard error (or a live line
            in a notebook), a callable for your own, ``None``/``False`` for none.
        checkpoint: a JSON-lines file each finished item is appended to, and where the batch
            stands as it changes: a run to go on with after a limit or fault, a pause and
            when it probes again, the pause's end (``{"state": ...}`` lines).
        resume: a checkpoint file or an earlier result: prompts finished there
            (same index and prompt, no error) are not run again. Under a ``retry`` policy,
            a run that was to go again there goes on with its session, and a batch stopped
            while paused starts paused: one probe at the time it had planned.
        continue_prompt: with ``resume`` and ``options.session_store``: an item
            that failed there after its session started goes on with that
            session from the store (``resume=<its session>``), sent this prompt
            (say ``"Continue where you left off."``) instead of starting over.
            Without it, failed items run again from the start.
        retry: how rate limits, overload and transient faults are met (see
            :class:`RetryPolicy`): a limit pauses the batch, a probe decides when it
            goes on, and limited items run again, going on with their session when
            the model had answered (tools already run are not run again; through
            ``options.session_store`` on other machines, from the local transcript
            on threads), from the start when it had not. ``None``: every fault fails
            its item at once (the behaviour before this policy).
        max_total_cost_usd: a budget for the whole batch. Each item starts with a
            share of what is neither spent nor promised to running items (its
            ``max_budget_usd``, so the CLI stops it there: at most one API call
            over); once the budget is spent no item starts, and those left end with
            ``fault="budget"`` (resume the batch with a larger budget to finish them).
    """
    prompts = list(prompts)
    options = options or ClaudeAgentOptions()
    if not (isinstance(max_concurrency, int) and max_concurrency > 0):
        raise ValueError("max_concurrency must be a positive int")
    if max_total_cost_usd is not None and not (isinstance(max_total_cost_usd, (int, float)) and max_total_cost_usd > 0):
        raise ValueError("max_total_cost_usd must be None or a positive number of dollars")
    if retry is not None and not isinstance(retry, RetryPolicy):
        raise TypeError(f"retry must be a RetryPolicy or None, not {type(retry).__name__}")
    own = executor is None
    if not own and not isinstance(executor, cf.ThreadPoolExecutor):
        options = picklable(options)
    if continue_prompt is not None and options.session_store is None:
        raise ValueError("continue_prompt resumes sessions from options.session_store, which is not set")
    done: dict[int, BatchItem] = {}
    go_on: dict[int, str] = {}  # index -> the session a failed item started, to go on with
    previous = BatchResult.load(resume) if isinstance(resume, (str, Path)) else resume
    for item in previous.items if previous is not None else []:
        if item.index >= len(prompts) or prompts[item.index] != item.prompt:
            continue
        if item.ok or item.parked is not None:  # a parked item waits for its decision, not a rerun
            done[item.index] = item
        elif continue_prompt is not None and item.session_id:
            go_on[item.index] = item.session_id
    todo = [i for i in range(len(prompts)) if i not in done]
    state = _Driver(retry, max_total_cost_usd, max_concurrency)
    for item in previous.items if previous is not None else []:
        if item.index in todo and prompts[item.index] == item.prompt and item.total_cost_usd:
            state.earlier[item.index] = item.total_cost_usd  # its failed runs were paid for
    for run in (previous.unfinished.values() if previous is not None else []):
        if run.index in todo and prompts[run.index] == run.prompt and run.total_cost_usd:
            state.earlier[run.index] = max(state.earlier.get(run.index, 0.0), run.total_cost_usd)
    if previous is not None and retry is not None:
        # A checkpoint of a batch stopped mid-way: runs to go on with (their sessions) and a
        # pause to keep (the limit may still hold: one probe first, not a wave of requests).
        for index, run in previous.unfinished.items():
            if index in todo and prompts[index] == run.prompt and index not in go_on:
                state.last[index], state.attempts[index] = run, run.attempts
        limited = [i for i in todo if state.last.get(i) is not None and state.last[i].fault == "limit"]
        if previous.paused_until is not None and limited:
            state.paused, state.waiting = True, limited
            state.probe_at = time.monotonic() + max(0.0, previous.paused_until - time.time())  # as the driver had planned it
            todo = [i for i in todo if i not in limited]
    report = _reporter(progress, len(prompts))
    sink = _Checkpoint(checkpoint) if checkpoint is not None else None
    pool = executor if executor is not None else cf.ThreadPoolExecutor(max_concurrency, thread_name_prefix="claude-sdkurl-batch")
    local_resume = isinstance(pool, cf.ThreadPoolExecutor)  # workers share this machine's transcripts
    t0 = time.monotonic()
    tracer = _trace.tracer()
    batch_span = _trace.start(tracer, "claude_sdkurl.batch", {"openinference.span.kind": "CHAIN", "claude_sdkurl.batch.size": len(prompts),
                                                              "claude_sdkurl.batch.to_run": len(todo)})  # fmt: skip
    item_spans: dict[int, Any] = {}
    running: dict[cf.Future[BatchItem], int] = {}
    scopes: dict[int, _cancel.Scope] = {}  # a thread pool's running items, to stop them
    late: list[cf.Future[BatchItem]] = []  # runs still stopping when a stopped batch returned
    token = uuid.uuid4().hex  # names this batch's runs on other processes, to stop them there

    def submit(index: int) -> None:
        state.attempts[index] = state.attempts.get(index, 0) + 1
        last = state.last.get(index)
        session: str | None = go_on.get(index)
        prompt_then: str | None = continue_prompt if index in go_on else None
        if retry is not None and last is not None and last.worked and last.session_id and (options.session_store is not None or local_resume):
            session, prompt_then = last.session_id, retry.continue_prompt  # (runs again only under a policy)
        share = state.reserve(index, options.max_budget_usd)
        run_options = options if share is None else dataclasses.replace(options, max_budget_usd=share)
        # The attempt number makes each run's arguments new: Dask would otherwise hand back
        # the first run's cached result for a run again (its tasks are keyed by their arguments).
        release = retry.release_after if retry is not None else None
        job = (index, prompts[index], run_options, session, prompt_then, state.attempts[index], release)
        item_span = item_spans.get(index) or _trace.start(tracer, "claude_sdkurl.batch.item", {"openinference.span.kind": "CHAIN",
                                                          "claude_sdkurl.batch.index": index}, batch_span)  # fmt: skip
        item_spans[index] = item_span
        if isinstance(pool, cf.ThreadPoolExecutor):  # stoppable, and the item's spans nest under it
            scopes[index] = _cancel.Scope()
            running[pool.submit(_run_here, scopes[index], item_span, *job)] = index
        else:
            running[pool.submit(_run_elsewhere, token, *job)] = index

    def start(index: int) -> None:
        if state.out_of_budget():
            finish(index, state.budget_item(index, prompts[index]))
        else:
            submit(index)

    def finish(index: int, item: BatchItem) -> None:
        done[index] = item
        _trace.end(item_spans.pop(index, None), item.error, {"session.id": item.session_id, "llm.cost.total": item.total_cost_usd,
                                                               "claude_sdkurl.batch.seconds": item.seconds})  # fmt: skip
        if sink is not None:
            sink.write(item)
        tell()

    def tell(stopped: bool = False) -> None:
        if report is not None:
            failed = sum(1 for i in done.values() if i.error is not None)
            report(BatchProgress(len(done), failed, len(prompts), state.spent, time.monotonic() - t0, paused=state.paused,
                                 running=len(running), stopped=stopped))  # fmt: skip

    def stop() -> BatchStopped:
        # Ctrl-C or a notebook's stop button: every running item's query is cancelled (it
        # interrupts its turn and stops its CLI at once); what ends within the bound is kept.
        for scope in scopes.values():
            scope.cancel()
        if not _stop_elsewhere(pool, token, list(running)):
            for future in running:
                future.cancel()  # a thread or process pool: what has not started does not
        # Dask and Ray runs were told to stop instead: their futures end as they do. (Dask's
        # futures cancel at once, but the task goes on running on its worker.)
        ended, _ = cf.wait(list(running), timeout=_STOP_WAIT)
        for future in running:
            if future not in ended:
                future.cancel()  # past the bound: not waited for
        for future in ended:
            index = running.pop(future)
            if not future.cancelled() and future.exception() is None and future.result().fault != "stopped":
                finish(index, future.result())  # it ended on its own meanwhile
        for index in [i for i in range(len(prompts)) if i not in done]:
            last = state.last.get(index)
            item = dataclasses.replace(last) if last is not None else BatchItem(index=index, prompt=prompts[index], attempts=0)
            item.fault, item.error = "stopped", _STOPPED
            done[index] = item
        late.extend(running)
        running.clear()
        tell(stopped=True)
        return BatchStopped(BatchResult([done[i] for i in range(len(prompts))]))

    try:
        queue = iter(todo)
        tell()
        while True:
            now = time.monotonic()
            # Start what may start: while paused, only the probe, once nothing runs.
            if state.paused:
                if not running and state.probe is None and now >= state.probe_at and state.waiting:
                    state.probe = state.waiting.pop(0)
                    submit(state.probe)
            else:
                for index in [i for i, at in sorted(state.again.items(), key=lambda kv: kv[1]) if at <= now]:
                    if len(running) >= max_concurrency:
                        break
                    del state.again[index]
                    start(index)
                while len(running) < max_concurrency and not state.paused:
                    fresh = next(queue, None)
                    if fresh is None:
                        break
                    start(fresh)
            if not running:
                wake = state.next_wake()
                if wake is None:
                    break
                time.sleep(max(0.0, min(wake - time.monotonic(), 1.0)))
                tell()
                continue
            wake = state.next_wake()
            if wake is not None and wake <= time.monotonic():
                # Due, but it waits for a running item (a free slot, or none running for a
                # probe): only an ending can change that. (Waiting for the due time spun here.)
                wake = None
            if report is not None:  # a live progress line: its clock moves while items run
                wake = now + _TICK if wake is None else min(wake, now + _TICK)
            finished, _ = cf.wait(list(running), timeout=None if wake is None else max(0.0, wake - time.monotonic()),
                                  return_when=cf.FIRST_COMPLETED)  # fmt: skip
            if not finished:
                tell()
            for future in finished:
                index = running.pop(future)
                try:
                    item = future.result()
                except BaseException as e:  # the worker itself died (killed process, lost node)
                    item = BatchItem(index=index, prompt=prompts[index], error=f"{type(e).__name__}: {e}", fault="transient",
                                     attempts=state.attempts[index])  # fmt: skip
                was_paused, probe_was = state.paused, state.probe_at
                verdict = state.outcome(index, item)
                if sink is not None:  # the checkpoint follows where the batch stands
                    if verdict == "again":
                        sink.state("again", item=dataclasses.asdict(item))
                    if state.paused and (not was_paused or state.probe_at != probe_was):
                        sink.state("paused", probe_at=time.time() + state.probe_at - time.monotonic())
                    elif was_paused and not state.paused:
                        sink.state("going_on")
                if verdict == "done":
                    finish(index, item)
                elif verdict == "failed-all":  # the pause was given up: every limited item fails
                    finish(index, item)
                    for waiting in state.waiting:
                        finish(waiting, state.last[waiting])
                    state.waiting.clear()
                    state.paused = False
    except KeyboardInterrupt as e:
        stopped = stop()
        raise stopped from e
    finally:
        if own:
            pool.shutdown(wait=not late, cancel_futures=True)  # after a stop, a run past the bound is not waited for
        if sink is not None:
            sink.close()
        for left in item_spans.values():
            _trace.end(left, "the batch stopped before this item ended")
        failed = sum(1 for i in done.values() if i.error is not None)
        _trace.end(batch_span, f"{failed} item(s) failed" if failed else None,
                   {"claude_sdkurl.batch.failed": failed, "llm.cost.total": sum(i.total_cost_usd or 0.0 for i in done.values())})
    return BatchResult([done[i] for i in range(len(prompts))])


class _Driver:
    """What :func:`run_batch` decides between items: pauses, retries and the budget."""

    def __init__(self, policy: RetryPolicy | None, budget: float | None, slots: int) -> None:
        self.policy = policy
        self.budget = budget
        self.slots = slots
        self.attempts: dict[int, int] = {}
        self.last: dict[int, BatchItem] = {}  # each item's latest run (what a run again goes on from)
        self.again: dict[int, float] = {}  # index -> when it may run again (monotonic)
        self.waiting: list[int] = []  # limited items, in probe order
        self.paused = False
        self.probe: int | None = None
        self.probe_at = 0.0
        self.probes = 0  # probes limited again in this pause
        self.spent = 0.0  # every finished run's cost, retried ones included
        self.reserved: dict[int, float] = {}  # budget promised to running items
        self.earlier: dict[int, float] = {}  # what each item's earlier runs spent (this batch and the one resumed)

    # ---------------------------------------------------------------- budget

    def reserve(self, index: int, cap: float | None) -> float | None:
        """The item's ``max_budget_usd``: an even share of what is neither spent nor promised,
        among the slots not yet running (``None`` without a batch budget)."""
        if self.budget is None:
            return cap
        free = self.budget - self.spent - sum(self.reserved.values())
        share = max(free, 0.0) / max(1, self.slots - len(self.reserved))
        share = min(share, cap) if cap is not None else share
        self.reserved[index] = share
        return share

    def out_of_budget(self) -> bool:
        return self.budget is not None and self.spent + sum(self.reserved.values()) >= self.budget - 1e-9

    def budget_item(self, index: int, prompt: str) -> BatchItem:
        last = self.last.get(index)
        item = dataclasses.replace(last) if last is not None else BatchItem(index=index, prompt=prompt, attempts=0)
        item.fault = "budget"
        item.error = f"BudgetExceeded: the batch's max_total_cost_usd (${self.budget:.4f}) is spent"
        return item

    # ---------------------------------------------------------------- outcomes

    def outcome(self, index: int, item: BatchItem) -> str:
        """Book a finished run: ``"done"`` (final), ``"again"`` (runs later) or
        ``"failed-all"`` (the pause is given up)."""
        # The run reports its own spend; the item keeps the sum over its runs (earlier ones,
        # here or in the batch this one resumed, were paid for too).
        self.spent += item.total_cost_usd or 0.0
        earlier = self.earlier.get(index)
        if earlier:
            item.total_cost_usd = (item.total_cost_usd or 0.0) + earlier
        if item.total_cost_usd is not None:
            self.earlier[index] = item.total_cost_usd
        self.reserved.pop(index, None)
        self.last[index] = item
        now = time.monotonic()
        policy = self.policy
        if index == self.probe:
            self.probe = None
            if item.fault == "limit" and policy is not None:
                self.probes += 1
                if policy.max_pauses is not None and self.probes >= policy.max_pauses:
                    return "failed-all"
                self.waiting.insert(0, index)
                self.probe_at = now + policy.wait(self.probes + 1, item.resets_at, item.retry_after)
                return "again"
            # The probe got through (or failed otherwise): the pause is over, every limited item runs again.
            self.paused, self.probes = False, 0
            for waiting in self.waiting:
                self.again[waiting] = now
            self.waiting.clear()
        if item.fault == "limit" and policy is not None:
            self.waiting.append(index)
            if not self.paused:
                self.paused, self.probes = True, 0
                self.probe_at = now + policy.wait(1, item.resets_at, item.retry_after)
            return "again"
        if item.fault == "transient" and policy is not None:
            if item.attempts <= policy.max_retries:
                self.again[index] = now + policy.wait(item.attempts)
                return "again"
            item.error = f"RetriesExhausted: {item.attempts} runs; the last: {item.error}"
        if item.fault == "budget" and self.budget is not None and not self.out_of_budget() and policy is not None:
            if item.attempts <= policy.max_retries:  # stopped at its share while the batch has more
                self.again[index] = now
                return "again"
        return "done"

    def next_wake(self) -> float | None:
        """When the driver must look again though nothing finished (``None``: only when
        something does, or never if nothing runs)."""
        times = list(self.again.values())
        if self.paused and self.probe is None and self.waiting:
            times.append(self.probe_at)
        return min(times) if times else None


_STOPPED = "Stopped: the batch was stopped before this item ended"  # a stopped item's error
_STOP_WAIT = 2.0  # seconds a stopped batch waits for its runs to stop (each interrupts, then stops its CLI)
_TICK = 1.0  # seconds between progress reports while nothing ends


def _run_here(scope: _cancel.Scope, span: Any, *job: Any) -> BatchItem:
    """:func:`run_one` on a thread pool's worker: under ``scope`` (a stop cancels the run) and
    with ``span`` current (the item's spans nest under it)."""
    _cancel.enter(scope)
    try:
        with _trace.attached(span):
            return run_one(*job)
    finally:
        _cancel.enter(None)


# Runs on other processes (Dask, Ray, process pools), per process: the running ones of each
# batch (its token), to stop them there, and the batches stopped (a run of one that starts
# late ends at once). A few dozen bytes per stopped batch stay for the worker's lifetime.
_elsewhere: dict[str, dict[int, _cancel.Scope]] = {}
_stopped: set[str] = set()
_elsewhere_lock = threading.Lock()


def _run_elsewhere(token: str, index: int, prompt: str, options: ClaudeAgentOptions | None, resume_session: str | None,
                   continue_prompt: str | None, attempt: int, release_after: float | None) -> BatchItem:
    """:func:`run_one` on another process's worker, stoppable there: by :func:`_stop_runs`
    (Dask runs it on every worker) or by a ``KeyboardInterrupt`` (Ray's ``cancel``, a
    terminal's Ctrl-C reaching a process pool). A stopped run ends as a ``fault="stopped"``
    item (its query has interrupted the turn and stopped its CLI); it is not raised, since a
    worker may treat an exception that is not an ``Exception`` as its own end."""
    # Races with a stop: one that came before this run registered is in _stopped (checked
    # under the lock it is added under); one after finds the scope, and a cancel before
    # enter() is still pending, raised at the query's first wait.
    scope = _cancel.Scope()
    with _elsewhere_lock:
        if token in _stopped:
            scope.cancel()
        _elsewhere.setdefault(token, {})[index] = scope
    _cancel.enter(scope)
    try:
        return run_one(index, prompt, options, resume_session, continue_prompt, attempt, release_after)
    except (_cancel.CancelledError, KeyboardInterrupt):
        return BatchItem(index=index, prompt=prompt, attempts=attempt, fault="stopped", error=_STOPPED)
    finally:
        _cancel.enter(None)
        with _elsewhere_lock:
            runs = _elsewhere.get(token, {})
            runs.pop(index, None)
            if not runs:
                _elsewhere.pop(token, None)


def _stop_runs(token: str) -> int:
    """On a worker process: stop the runs of batch ``token`` here and any that start later;
    how many were running. Quick (it only asks): each run stops its own CLI."""
    with _elsewhere_lock:
        _stopped.add(token)
        scopes = list(_elsewhere.get(token, {}).values())
    for scope in scopes:
        scope.cancel()
    return len(scopes)


def _stop_elsewhere(pool: cf.Executor, token: str, futures: list[cf.Future[BatchItem]]) -> bool:
    """Tell runs on other processes to stop: ``True`` for a Dask client's executor (every
    worker runs :func:`_stop_runs`) and :class:`RayExecutor` (``ray.cancel``), ``False``
    for any other executor (its futures are only cancelled: what runs goes on to its end)."""
    if isinstance(pool, RayExecutor):
        pool._stop(futures)
        return True
    client = getattr(pool, "_client", None)  # distributed.cfexecutor.ClientExecutor keeps its Client there
    if type(pool).__module__.startswith("distributed.") and client is not None:
        try:
            client.run(_stop_runs, token, on_error="ignore")  # a worker lost meanwhile has no run to stop
        except Exception:  # a closed client, a cluster gone: nothing there to stop
            return False
        return True
    return False


class RayExecutor(cf.Executor):
    """Ray as a ``concurrent.futures`` executor, for :func:`run_batch` (Ray has none of its own).

    Each ``submit`` is a Ray task (``ray.remote(fn).remote(...)``), its future the
    ``ObjectRef``'s. Call ``ray.init(...)`` first (a local instance or
    ``address="ray://..."``); ``remote_options`` go to ``ray.remote`` (``num_cpus``,
    ``max_retries``, ``runtime_env``...). A worker that dies fails its item with Ray's
    error, named, unless ``max_retries`` runs it again.
    """

    def __init__(self, **remote_options: Any) -> None:
        import ray  # an optional dependency: pip install ray

        self._ray = ray
        self._options = remote_options
        self._remotes: dict[Any, Any] = {}
        self._refs: dict[cf.Future[Any], Any] = {}  # each running future's ObjectRef, to cancel the task

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future[Any]:
        remote = self._remotes.get(fn)
        if remote is None:
            remote = self._ray.remote(**self._options)(fn) if self._options else self._ray.remote(fn)
            self._remotes[fn] = remote
        ref = remote.remote(*args, **kwargs)
        future: cf.Future[Any] = ref.future()
        self._refs[future] = ref  # dropped when its run ends
        future.add_done_callback(lambda f: self._refs.pop(f, None))
        return future

    def _stop(self, futures: list[cf.Future[Any]], grace: float = 1.0) -> None:
        """Cancel these runs' Ray tasks (cancelling the future alone would leave the task
        running): one not started never starts, a running one gets a ``KeyboardInterrupt``
        (its query interrupts the turn and stops its CLI). That one is not reliable (measured
        with Ray 2.60: in most stops a task had not ended 5 s later): a task still running
        after ``grace`` seconds is cancelled by force, its worker process killed, and the
        CLI's watcher stops the CLI at once."""
        self._cancel(futures, force=False)
        _, running = cf.wait(futures, timeout=grace)
        self._cancel(list(running), force=True)

    def _cancel(self, futures: list[cf.Future[Any]], force: bool) -> None:
        for future in futures:
            ref = self._refs.get(future)
            if ref is not None:
                try:
                    self._ray.cancel(ref, force=force)
                except Exception:  # ended meanwhile, or Ray is shut down: nothing to stop
                    pass


def picklable(options: ClaudeAgentOptions) -> ClaudeAgentOptions:
    """``options`` ready for another process: the deprecated ``debug_stderr`` (a stream) is
    dropped; any other field that cannot be pickled raises :class:`UnpicklableOptionError`."""
    options = dataclasses.replace(options, debug_stderr=None)
    try:
        pickle.dumps(options)
        return options
    except Exception:
        pass
    for f in dataclasses.fields(options):
        try:
            pickle.dumps(getattr(options, f.name))
        except Exception as e:
            raise UnpicklableOptionError(f.name, e) from e
    return options  # pragma: no cover - the whole failed but no field did


class _Checkpoint:
    """The checkpoint file: a line per ended item, and state lines (``{"state": ...}``: a run to
    go on with, a pause and its probe time, the end of a pause) read back by :meth:`BatchResult.load`.

    Created 0600 (it holds prompts, answers and parked commands). Each line is one ``write`` to
    a file opened for appending, flushed; a torn last line left by a crash is cut off (or, when
    only its newline is missing, ended) before the first new line, so no line is glued onto it.
    """

    def __init__(self, path: str | Path) -> None:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            _repair_tail(fd, str(path))
            self._file: IO[bytes] = os.fdopen(fd, "ab")
        except BaseException:
            os.close(fd)
            raise
        self._lock = threading.Lock()

    def write(self, item: BatchItem) -> None:
        self._line(dataclasses.asdict(item))

    def state(self, kind: str, **fields: Any) -> None:
        self._line({"state": kind, **fields})

    def _line(self, data: dict[str, Any]) -> None:
        line = (json.dumps(data, default=str) + "\n").encode("utf-8")
        with self._lock:
            self._file.write(line)
            self._file.flush()

    def close(self) -> None:
        self._file.close()


def _repair_tail(fd: int, path: str) -> None:
    """End the file on a newline: a last line that is a whole record gets its newline, a torn
    one is cut off (with a warning: its item runs again)."""
    size = os.fstat(fd).st_size
    if size == 0:
        return
    tail = os.pread(fd, min(size, 1 << 20), max(0, size - (1 << 20)))
    if tail.endswith(b"\n"):
        return
    cut = tail.rfind(b"\n")
    start = size - len(tail) + cut + 1 if cut >= 0 else (0 if len(tail) == size else None)
    if start is None:  # a last line over 1 MiB with no newline: read it whole
        data = os.pread(fd, size, 0)
        start = data.rfind(b"\n") + 1
    fragment = os.pread(fd, size - start, start)
    try:
        _record(fragment)
        os.write(fd, b"\n")  # whole but for its newline (O_APPEND: at the end)
    except CheckpointError as bad:
        logger.warning("%s: cutting off a torn last line (a write cut short) before appending: %s", path, bad.reason)
        os.ftruncate(fd, start)


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
