"""run_batch's driver alone (pauses, probes, reset times, the checkpoint's pause), fast: an
executor that runs nothing and answers each submitted run with a scripted BatchItem. The real
CLI under real limits: test_realcli_batch_limits."""

from __future__ import annotations

import concurrent.futures as cf
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl.batch import BatchItem, BatchProgress, BatchResult, BatchStopped, RetryPolicy, run_batch

HOUR = 3600.0


class Scripted(cf.Executor):
    """Each submitted run is answered at once by ``answer(index, prompt, attempt, options)``;
    every submit is recorded as (wall-clock time, index, attempt)."""

    def __init__(self, answer: Callable[..., BatchItem]) -> None:
        self.answer = answer
        self.calls: list[tuple[float, int, int]] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future[Any]:
        _token, index, prompt, options, _session, _prompt_then, attempt, _release = args
        self.calls.append((time.time(), index, attempt))
        future: cf.Future[Any] = cf.Future()
        future.set_result(self.answer(index, prompt, attempt, options))
        return future


def stop_after(seconds: float) -> Callable[[BatchProgress], None]:
    """A progress callback that stops the batch (as Ctrl-C does) once, ``seconds`` from now."""
    t0 = time.monotonic()
    fired: list[BatchProgress] = []

    def report(p: BatchProgress) -> None:
        if not fired and time.monotonic() - t0 > seconds:
            fired.append(p)
            raise KeyboardInterrupt

    return report


def test_wait_honours_a_reset_time_however_far() -> None:
    policy = RetryPolicy(first_wait=1.0, max_wait=60.0)
    assert HOUR - 5 < policy.wait(1, time.time() + HOUR) <= HOUR  # not cut to max_wait
    assert 0.5 <= policy.wait(1, time.time() - 5) <= 1.0  # a reset already past: the backoff
    assert all(0.5 <= policy.wait(n) <= 60.0 for n in range(1, 20))
    # a retry-after hint is honoured where it is within the cap, and the cap wins where it is not
    assert 8.0 <= policy.wait(1, retry_after=8.0) <= 8.0 + 1.0
    assert RetryPolicy(first_wait=1.0, max_wait=3.0).wait(1, retry_after=8.0) <= 3.0


def test_a_usage_limit_an_hour_away_is_waited_for_not_probed(tmp_path: Path) -> None:
    """The first wave meets a usage limit that resets in an hour: nothing runs again before
    then, whatever max_wait says; stopped and resumed, the batch is still paused until then."""
    resets = time.time() + HOUR

    def answer(index: int, prompt: str, attempt: int, options: Any) -> BatchItem:
        return BatchItem(index=index, prompt=prompt, error="ResultError: usage limit", fault="limit", resets_at=resets,
                         attempts=attempt)  # fmt: skip

    checkpoint = tmp_path / "cp.jsonl"
    pool = Scripted(answer)
    policy = RetryPolicy(first_wait=0.2, max_wait=0.5)  # a backoff alone would probe within 0.5 s
    with pytest.raises(BatchStopped) as stopped:
        run_batch([f"item {i}" for i in range(4)], executor=pool, max_concurrency=4, retry=policy, checkpoint=checkpoint,
                  progress=stop_after(2.0))  # fmt: skip
    assert sorted(index for _, index, _ in pool.calls) == [0, 1, 2, 3]  # the first wave only: no probe
    assert [i.fault for i in stopped.value.result.items] == ["stopped"] * 4
    saved = BatchResult.load(checkpoint)
    assert saved.paused_until is not None and abs(saved.paused_until - resets) < 5
    assert sorted(saved.unfinished) == [0, 1, 2, 3]

    again = Scripted(answer)
    with pytest.raises(BatchStopped):
        run_batch([f"item {i}" for i in range(4)], executor=again, max_concurrency=4, retry=policy, checkpoint=checkpoint,
                  resume=checkpoint, progress=stop_after(1.5))  # fmt: skip
    assert again.calls == []  # resumed paused, its probe still an hour away


def test_one_probe_at_the_reset_time_then_the_rest() -> None:
    """A reset 1 s away: nothing runs until it, then one probe, then every item left."""
    resets = time.time() + 1.0

    def answer(index: int, prompt: str, attempt: int, options: Any) -> BatchItem:
        if time.time() < resets:
            return BatchItem(index=index, prompt=prompt, error="ResultError: usage limit", fault="limit", resets_at=resets,
                             attempts=attempt)  # fmt: skip
        return BatchItem(index=index, prompt=prompt, text=f"answer {index}", attempts=attempt)

    pool = Scripted(answer)
    result = run_batch([f"item {i}" for i in range(6)], executor=pool, max_concurrency=3, retry=RetryPolicy(first_wait=0.2, max_wait=0.5))
    assert [i.text for i in result.items] == [f"answer {i}" for i in range(6)] and result.failed == []
    wave, probe, rest = pool.calls[:3], pool.calls[3], pool.calls[4:]
    assert sorted(index for _, index, _ in wave) == [0, 1, 2] and all(t < resets for t, _, _ in wave)
    assert probe[0] >= resets - 0.02 and probe[2] == 2  # not before the reset: a limited item's second run
    assert sorted(index for _, index, _ in rest) == sorted({0, 1, 2, 3, 4, 5} - {probe[1]})


def test_transient_faults_run_again_then_fail_named() -> None:
    def answer(index: int, prompt: str, attempt: int, options: Any) -> BatchItem:
        if index == 0 or attempt < 3:
            return BatchItem(index=index, prompt=prompt, error="ProcessError: killed by signal 9", fault="transient", attempts=attempt)
        return BatchItem(index=index, prompt=prompt, text="ok", attempts=attempt)

    pool = Scripted(answer)
    result = run_batch(["a", "b"], executor=pool, retry=RetryPolicy(first_wait=0.01, max_wait=0.02, max_retries=2))
    first, second = result.items
    assert first.error == "RetriesExhausted: 3 runs; the last: ProcessError: killed by signal 9" and first.fault == "transient"
    assert second.ok and second.attempts == 3
    assert sorted((index, attempt) for _, index, attempt in pool.calls) == [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2), (1, 3)]
    # without a policy, a fault fails its item at once
    once = Scripted(answer)
    assert run_batch(["a"], executor=once, retry=None).items[0].error == "ProcessError: killed by signal 9" and len(once.calls) == 1


def test_max_pauses_gives_the_limited_items_up() -> None:
    def answer(index: int, prompt: str, attempt: int, options: Any) -> BatchItem:
        return BatchItem(index=index, prompt=prompt, error="ResultError: 429", fault="limit", attempts=attempt)

    pool = Scripted(answer)
    result = run_batch([f"item {i}" for i in range(3)], executor=pool, max_concurrency=3,
                       retry=RetryPolicy(first_wait=0.01, max_wait=0.02, max_pauses=2))  # fmt: skip
    assert [i.fault for i in result.items] == ["limit"] * 3 and len(result.failed) == 3
    assert len(pool.calls) == 3 + 2  # the first wave, then two probes, one at a time


def test_a_batch_budget_is_shared_and_then_ends_the_rest() -> None:
    """Each run is given a share of what is left as its max_budget_usd and spends it all: the
    batch never spends more than its budget, and what could not start ends as "budget"."""

    def answer(index: int, prompt: str, attempt: int, options: Any) -> BatchItem:
        return BatchItem(index=index, prompt=prompt, text="ok", total_cost_usd=options.max_budget_usd, attempts=attempt)

    pool = Scripted(answer)
    result = run_batch([f"item {i}" for i in range(10)], executor=pool, max_concurrency=2, max_total_cost_usd=1.0)
    shares = [i.total_cost_usd or 0.0 for i in result.items if i.ok]
    assert shares and all(s > 0 for s in shares) and sum(shares) <= 1.0 + 1e-9
    ended = [i for i in result.items if not i.ok]
    assert ended and all(i.fault == "budget" and (i.error or "").startswith("BudgetExceeded") for i in ended)
    assert len(pool.calls) == len(shares)  # nothing started once the budget was spent


@pytest.mark.parametrize("cap", [0.05, 5.0])
def test_an_items_share_is_the_smaller_of_its_own_budget_and_the_batchs(cap: float) -> None:
    """Options with their own ``max_budget_usd`` in a batch with a total budget: each run is
    given the smaller of the two (its cap below the batch's even share, then above it), and
    the batch spends no more than its budget nor any item more than its cap."""
    given: list[float] = []

    def answer(index: int, prompt: str, attempt: int, options: Any) -> BatchItem:
        given.append(options.max_budget_usd)
        return BatchItem(index=index, prompt=prompt, text="ok", total_cost_usd=options.max_budget_usd, attempts=attempt)

    from claude_sdkurl import ClaudeAgentOptions

    result = run_batch([f"item {i}" for i in range(10)], ClaudeAgentOptions(max_budget_usd=cap), executor=Scripted(answer),
                       max_concurrency=2, max_total_cost_usd=1.0)  # fmt: skip
    assert given and all(0 < g <= cap + 1e-12 for g in given)
    assert given[0] == pytest.approx(min(cap, 1.0 / 2))  # the first of two slots: half the batch, or the cap
    assert sum(i.total_cost_usd or 0.0 for i in result.items) <= 1.0 + 1e-9
    if cap < 0.1:  # ten items at their cap fit in the batch's budget: all ran, each at its cap
        assert result.failed == [] and given == [pytest.approx(cap)] * 10


def test_a_usage_window_near_its_limit_holds_new_items_until_it_resets() -> None:
    from claude_sdkurl.batch._decisions import Decisions

    def item(index: int, used: float | None, resets_in: float = 5.0, fault: str | None = None) -> BatchItem:
        near = None if used is None else {"window": "five_hour", "utilization": used, "resets_at": time.time() + resets_in}
        return BatchItem(index=index, prompt="p", near_limit=near, fault=fault, text=None if fault else "ok")

    decisions = Decisions(RetryPolicy(pause_before=0.95), None, 2)
    assert decisions.outcome(0, item(0, 0.5)) == "done" and not decisions.held(time.monotonic())
    assert decisions.outcome(1, item(1, 0.96)) == "done"
    now = time.monotonic()
    assert decisions.held(now) and 4.0 < decisions.held_until - now <= 5.0
    assert decisions.next_wake() == decisions.held_until  # the driver wakes when the window resets
    assert not decisions.held(now + 5.1)
    # a window that already reset, a policy that does not hold, a refused run (paused instead)
    for policy, it in [(RetryPolicy(), item(2, 0.99, resets_in=-1)), (RetryPolicy(pause_before=None), item(2, 0.99)),
                       (RetryPolicy(), item(2, 1.0, fault="limit"))]:  # fmt: skip
        other = Decisions(policy, None, 2)
        other.outcome(2, it)
        assert not other.held(time.monotonic())
    with pytest.raises(ValueError, match="pause_before"):
        RetryPolicy(pause_before=1.5)
    with pytest.raises(ValueError, match="pause_before"):
        RetryPolicy(pause_before=0)
