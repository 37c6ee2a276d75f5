"""What the driver decides between items: pauses and probes, retries, the budget. No I/O:
it is told each run's outcome and says what happens next."""

from __future__ import annotations

import dataclasses
import time

from ._item import BatchItem
from ._retry import RetryPolicy

class Decisions:
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
        self.held_until = 0.0  # (monotonic) no item starts before: a usage window is near its limit
        self.held_window: dict[str, object] | None = None

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
        self._hold_for(item, now)
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

    def _hold_for(self, item: BatchItem, now: float) -> None:
        """Hold new items until a usage window the run saw near its limit resets (see
        ``RetryPolicy.pause_before``); a refused run pauses by the rules above instead."""
        near, policy = item.near_limit, self.policy
        if near is None or policy is None or policy.pause_before is None or item.fault == "limit":
            return
        left = float(near["resets_at"]) - time.time()
        if near["utilization"] >= policy.pause_before and left > 0 and now + left > self.held_until:
            self.held_until, self.held_window = now + left, dict(near)

    def held(self, now: float) -> bool:
        """Whether new items wait for a usage window to reset."""
        return now < self.held_until

    def next_wake(self) -> float | None:
        """When the driver must look again though nothing finished (``None``: only when
        something does, or never if nothing runs)."""
        times = list(self.again.values())
        if self.paused and self.probe is None and self.waiting:
            times.append(self.probe_at)
        if self.held_until > time.monotonic():
            times.append(self.held_until)
        return min(times) if times else None
