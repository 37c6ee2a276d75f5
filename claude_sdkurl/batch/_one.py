"""One prompt run to the end, wherever an executor runs it (:func:`run_one`)."""

from __future__ import annotations

import dataclasses
import time

from .._engine.launch import unattended
from ..ledger import CostLedger
from ..query import counted
from ..types import AssistantMessage, ClaudeAgentOptions, RateLimitEvent, ResultMessage, SystemMessage, TextBlock, ToolUseBlock
from ._item import BatchItem
from ._retry import _crashed, _fault_of, _fullest_window, _limit_wait

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
    options = unattended(options or ClaudeAgentOptions())  # nobody is there to answer a prompt
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
            elif isinstance(message, RateLimitEvent):
                window = _fullest_window(message)
                if window is not None and (item.near_limit is None or window["utilization"] >= item.near_limit["utilization"]):
                    item.near_limit = window
                if message.rate_limit_info.status == "rejected":
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
