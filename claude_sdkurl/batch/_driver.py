"""The driver: :func:`run_batch` runs one :class:`Driver`, in the calling process. It plans from
what a resumed batch left (finished items, runs to go on with, a pause), hands runs to the
executor, books each outcome with :class:`~._decisions.Decisions` (pause, probe, retry, budget),
keeps the checkpoint and the progress line, and stops every run on Ctrl-C."""

from __future__ import annotations

import collections
import concurrent.futures as cf
import dataclasses
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .._engine import cancel as _cancel
from .._engine import trace as _trace
from ..types import ClaudeAgentOptions
from ._checkpoint import Checkpoint
from ._decisions import Decisions
from ._elsewhere import STOPPED, _job_elsewhere, _run_elsewhere, _run_here, _stop_elsewhere, picklable
from ._item import BatchItem, BatchProgress, interrupted
from ._one import run_one
from ._progress import _reporter
from ._result import BatchResult, BatchStopped
from ._retry import RetryPolicy

Job = Callable[[int, int, "float | None", "float | None"], BatchItem]  # (index, attempt, release_after, budget share) -> its item

STOP_WAIT = 2.0  # seconds a stopped batch waits for its runs to stop (each interrupts, then stops its CLI)
TICK = 1.0  # seconds between progress reports while nothing ends


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
        checkpoint: a JSON-lines file (created 0600) each finished item is appended to, and
            where the batch stands as it changes: a run to go on with after a limit or fault,
            a pause and when it probes again, the pause's end (``{"state": ...}`` lines).
        resume: a checkpoint file or an earlier result: prompts finished there
            (same index and prompt, no error) are not run again. Under a ``retry`` policy,
            a run that was to go again there goes on with its session, and a batch stopped
            while paused starts paused: one probe at the time it had planned. A checkpoint
            line that is not a whole record (but a torn last one) is a
            :class:`CheckpointError`, before anything starts.
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
            over; an answer that came before the CLI stopped the run is kept); once the
            budget is spent no item starts, and those left end with ``fault="budget"``
            (resume the batch with a larger budget to finish them).
    """
    return Driver(prompts, options, executor=executor, max_concurrency=max_concurrency, progress=progress, checkpoint=checkpoint,
                  resume=resume, continue_prompt=continue_prompt, retry=retry, max_total_cost_usd=max_total_cost_usd).run()  # fmt: skip


class Driver:
    """One batch, from its plan to its result (see the module doc). Everything here runs on
    the calling thread; runs report back only through their futures."""

    def __init__(self, prompts: Iterable[str], options: ClaudeAgentOptions | None, *, executor: cf.Executor | None,
                 max_concurrency: int, progress: bool | Callable[[BatchProgress], None] | None, checkpoint: str | Path | None,
                 resume: str | Path | BatchResult | None, continue_prompt: str | None, retry: RetryPolicy | None,
                 max_total_cost_usd: float | None, jobs: Sequence[Job] | None = None,
                 on_finish: Callable[[BatchItem], None] | None = None) -> None:  # fmt: skip
        self.prompts = list(prompts)
        # Jobs of a caller's own instead of prompts (an eval's attempts): ``jobs[i](index,
        # attempt, release_after, budget_share)`` returns item i's BatchItem; ``prompts`` name
        # them. They meet limits, the budget and a stop as prompts do.
        self.jobs = list(jobs) if jobs is not None else None
        if self.jobs is not None and len(self.jobs) != len(self.prompts):
            raise ValueError("a job for each item")
        self.on_finish = on_finish
        options = options or ClaudeAgentOptions()
        if not (isinstance(max_concurrency, int) and max_concurrency > 0):
            raise ValueError("max_concurrency must be a positive int")
        if max_total_cost_usd is not None and not (isinstance(max_total_cost_usd, (int, float)) and max_total_cost_usd > 0):
            raise ValueError("max_total_cost_usd must be None or a positive number of dollars")
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise TypeError(f"retry must be a RetryPolicy or None, not {type(retry).__name__}")
        if executor is not None and not isinstance(executor, cf.ThreadPoolExecutor) and jobs is None:
            options = picklable(options)
        if continue_prompt is not None and options.session_store is None:
            raise ValueError("continue_prompt resumes sessions from options.session_store, which is not set")
        self.options = options
        self.executor = executor
        self.max_concurrency = max_concurrency
        self.progress = progress
        self.checkpoint = checkpoint
        self.continue_prompt = continue_prompt
        self.retry = retry
        self.state = Decisions(retry, max_total_cost_usd, max_concurrency)
        self.done: dict[int, BatchItem] = {}
        self.go_on: dict[int, str] = {}  # index -> the session a failed item started, to go on with
        previous = BatchResult.load(resume) if isinstance(resume, (str, Path)) else resume
        self.todo = self._carry_over(previous) if previous is not None else list(range(len(self.prompts)))
        self.queue: collections.deque[int] = collections.deque()  # what is left to start (set by run())
        self.running: dict[cf.Future[BatchItem], int] = {}
        self.scopes: dict[int, _cancel.Scope] = {}  # a thread pool's running items, to stop them
        self.late: list[cf.Future[BatchItem]] = []  # runs still stopping when a stopped batch returned
        self.item_spans: dict[int, Any] = {}
        self.token = uuid.uuid4().hex  # names this batch's runs on other processes, to stop them there

    # ---------------------------------------------------------------- plan

    def _carry_over(self, previous: BatchResult) -> list[int]:
        """What the batch resumed leaves: finished (or parked) items are done, failed ones go on
        with their session (``continue_prompt``), their earlier runs' cost stays theirs, runs
        that were to go again go on, and a pause it stopped in holds. Returns the items to run."""
        prompts, state = self.prompts, self.state
        same = [i for i in previous.items if i.index < len(prompts) and prompts[i.index] == i.prompt]
        for item in same:
            if item.ok or item.parked is not None:  # a parked item waits for its decision, not a rerun
                self.done[item.index] = item
            elif self.continue_prompt is not None and item.session_id:
                self.go_on[item.index] = item.session_id
        todo = [i for i in range(len(prompts)) if i not in self.done]
        for item in same:
            if item.index in todo and item.total_cost_usd:
                state.earlier[item.index] = item.total_cost_usd  # its failed runs were paid for
        for run in previous.unfinished.values():
            if run.index in todo and prompts[run.index] == run.prompt and run.total_cost_usd:
                state.earlier[run.index] = max(state.earlier.get(run.index, 0.0), run.total_cost_usd)
        if self.retry is None:
            return todo
        # A checkpoint of a batch stopped mid-way: runs to go on with (their sessions) and a
        # pause to keep (the limit may still hold: one probe first, not a wave of requests).
        for index, run in previous.unfinished.items():
            if index in todo and prompts[index] == run.prompt and index not in self.go_on:
                state.last[index], state.attempts[index] = run, run.attempts
        limited = [i for i in todo if state.last.get(i) is not None and state.last[i].fault == "limit"]
        if previous.paused_until is not None and limited:
            state.paused, state.waiting = True, limited
            state.probe_at = time.monotonic() + max(0.0, previous.paused_until - time.time())  # as the driver had planned it
            todo = [i for i in todo if i not in limited]
        return todo

    # ---------------------------------------------------------------- the loop

    def run(self) -> BatchResult:
        self.report = _reporter(self.progress, len(self.prompts))
        self.sink = Checkpoint(self.checkpoint) if self.checkpoint is not None else None
        own = self.executor is None
        self.pool = self.executor or cf.ThreadPoolExecutor(self.max_concurrency, thread_name_prefix="claude-sdkurl-batch")
        self.local_resume = isinstance(self.pool, cf.ThreadPoolExecutor)  # workers share this machine's transcripts
        self.t0 = time.monotonic()
        self.tracer = _trace.tracer()
        self.batch_span = _trace.start(self.tracer, "claude_sdkurl.batch", {"openinference.span.kind": "CHAIN",
                                       "claude_sdkurl.batch.size": len(self.prompts), "claude_sdkurl.batch.to_run": len(self.todo)})  # fmt: skip
        try:
            queue = self.queue = collections.deque(self.todo)
            self._tell()
            while self._step(queue):
                pass
        except KeyboardInterrupt:
            # the BatchStopped says it all; the Ctrl-C it came from would only add a traceback
            raise self._stop() from None
        finally:
            if own:
                self.pool.shutdown(wait=not self.late, cancel_futures=True)  # after a stop, a run past the bound is not waited for
            if self.sink is not None:
                self.sink.close()
            for left in self.item_spans.values():
                _trace.end(left, "the batch stopped before this item ended")
            failed = sum(1 for i in self.done.values() if i.error is not None)
            _trace.end(self.batch_span, f"{failed} item(s) failed" if failed else None,
                       {"claude_sdkurl.batch.failed": failed, "llm.cost.total": sum(i.total_cost_usd or 0.0 for i in self.done.values())})  # fmt: skip
        return BatchResult([self.done[i] for i in range(len(self.prompts))])

    def _step(self, queue: collections.deque[int]) -> bool:
        """Start what may start, then wait for an ending (or a due time) and book it; ``False``
        once nothing runs and nothing is due."""
        state, running = self.state, self.running
        now = time.monotonic()
        # Start what may start: while paused, only the probe, once nothing runs; while held
        # (a usage window near its limit), nothing.
        if self._held(now):
            pass
        elif state.paused:
            if not running and state.probe is None and now >= state.probe_at and state.waiting:
                state.probe = state.waiting.pop(0)
                self._submit(state.probe)
        else:
            for index in [i for i, at in sorted(state.again.items(), key=lambda kv: kv[1]) if at <= now]:
                if len(running) >= self.max_concurrency:
                    break
                del state.again[index]
                self._start(index)
            while len(running) < self.max_concurrency and not state.paused:
                if not queue:
                    break
                self._start(queue.popleft())
        if not running:
            wake = state.next_wake()
            if wake is None:
                return False
            time.sleep(max(0.0, min(wake - time.monotonic(), 1.0)))
            self._tell()
            return True
        wake = state.next_wake()
        if wake is not None and wake <= time.monotonic():
            # Due, but it waits for a running item (a free slot, or none running for a
            # probe): only an ending can change that. (Waiting for the due time spun here.)
            wake = None
        if self.report is not None:  # a live progress line: its clock moves while items run
            wake = now + TICK if wake is None else min(wake, now + TICK)
        finished, _ = cf.wait(list(running), timeout=None if wake is None else max(0.0, wake - time.monotonic()),
                              return_when=cf.FIRST_COMPLETED)  # fmt: skip
        if not finished:
            self._tell()
        for future in finished:
            self._book(running.pop(future), future)
        return True

    def _held(self, now: float) -> bool:
        """New items wait for a usage window to reset (and something is left to start)."""
        state = self.state
        if state.held(now) and not (self.queue or state.again or state.waiting):
            state.held_until = 0.0  # nothing is left to hold back
        return state.held(now)

    def _book(self, index: int, future: cf.Future[BatchItem]) -> None:
        """A run ended: its verdict, the checkpoint's state lines, and the item if final."""
        state, sink = self.state, self.sink
        try:
            item = future.result()
        except BaseException as e:  # the worker itself died (killed process, lost node)
            item = BatchItem(index=index, prompt=self.prompts[index], error=f"{type(e).__name__}: {e}", fault="transient",
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
            self._finish(index, item)
        elif verdict == "failed-all":  # the pause was given up: every limited item fails
            self._finish(index, item)
            for waiting in state.waiting:
                self._finish(waiting, state.last[waiting])
            state.waiting.clear()
            state.paused = False

    # ---------------------------------------------------------------- runs

    def _submit(self, index: int) -> None:
        state, retry, options = self.state, self.retry, self.options
        state.attempts[index] = state.attempts.get(index, 0) + 1
        last = state.last.get(index)
        session: str | None = self.go_on.get(index)
        prompt_then: str | None = self.continue_prompt if index in self.go_on else None
        if retry is not None and last is not None and last.worked and last.session_id and (options.session_store is not None or self.local_resume):
            session, prompt_then = last.session_id, retry.continue_prompt  # (runs again only under a policy)
        share = state.reserve(index, options.max_budget_usd)
        release = retry.release_after if retry is not None else None
        if self.jobs is not None:
            self._submit_job(index, share, release)
            return
        run_options = options if share is None else dataclasses.replace(options, max_budget_usd=share)
        # The attempt number makes each run's arguments new: Dask would otherwise hand back
        # the first run's cached result for a run again (its tasks are keyed by their arguments).
        job = (index, self.prompts[index], run_options, session, prompt_then, state.attempts[index], release)
        item_span = self.item_spans.get(index) or _trace.start(self.tracer, "claude_sdkurl.batch.item", {"openinference.span.kind": "CHAIN",
                                                               "claude_sdkurl.batch.index": index}, self.batch_span)  # fmt: skip
        self.item_spans[index] = item_span
        if isinstance(self.pool, cf.ThreadPoolExecutor):  # stoppable, and the item's spans nest under it
            self.scopes[index] = _cancel.Scope()
            self.running[self.pool.submit(_run_here, self.scopes[index], item_span, run_one, *job)] = index
        else:
            self.running[self.pool.submit(_run_elsewhere, self.token, *job)] = index

    def _submit_job(self, index: int, share: float | None, release: float | None) -> None:
        job, attempt = self.jobs[index], self.state.attempts[index]  # type: ignore[index]
        span = self.item_spans.get(index) or _trace.start(self.tracer, "claude_sdkurl.batch.item", {"openinference.span.kind": "CHAIN",
                                                          "claude_sdkurl.batch.index": index}, self.batch_span)  # fmt: skip
        self.item_spans[index] = span
        if isinstance(self.pool, cf.ThreadPoolExecutor):
            self.scopes[index] = _cancel.Scope()
            self.running[self.pool.submit(_run_here, self.scopes[index], span, job, index, attempt, release, share)] = index
        else:
            self.running[self.pool.submit(_job_elsewhere, self.token, job, index, attempt, release, share)] = index

    def _start(self, index: int) -> None:
        if self.state.out_of_budget():
            self._finish(index, self.state.budget_item(index, self.prompts[index]))
        else:
            self._submit(index)

    def _finish(self, index: int, item: BatchItem) -> None:
        self.done[index] = item
        _trace.end(self.item_spans.pop(index, None), item.error, {"session.id": item.session_id, "llm.cost.total": item.total_cost_usd,
                                                                    "claude_sdkurl.batch.seconds": item.seconds})  # fmt: skip
        if self.sink is not None:
            self.sink.write(item)
        if self.on_finish is not None:
            self.on_finish(item)
        self._tell()

    def _tell(self, stopped: bool = False) -> None:
        if self.report is not None:
            cut = interrupted(self.done.values())  # a stop is no failure of the item
            failed = sum(1 for i in self.done.values() if i.error is not None) - cut
            self.report(BatchProgress(len(self.done) - cut, failed, len(self.prompts), self.state.spent, time.monotonic() - self.t0,
                                      paused=self.state.paused or self._held(time.monotonic()), running=len(self.running), stopped=stopped, interrupted=cut))  # fmt: skip

    def _stop(self) -> BatchStopped:
        # Ctrl-C or a notebook's stop button: every running item's query is cancelled (it
        # interrupts its turn and stops its CLI at once); what ends within the bound is kept.
        running = self.running
        for scope in self.scopes.values():
            scope.cancel()
        if not _stop_elsewhere(self.pool, self.token, list(running)):
            for future in running:
                future.cancel()  # a thread or process pool: what has not started does not
        # Dask and Ray runs were told to stop instead: their futures end as they do. (Dask's
        # futures cancel at once, but the task goes on running on its worker.)
        ended, _ = cf.wait(list(running), timeout=STOP_WAIT)
        for future in running:
            if future not in ended:
                future.cancel()  # past the bound: not waited for
        for future in ended:
            index = running.pop(future)
            if not future.cancelled() and future.exception() is None and future.result().fault != "stopped":
                self._finish(index, future.result())  # it ended on its own meanwhile
        for index in [i for i in range(len(self.prompts)) if i not in self.done]:
            last = self.state.last.get(index)
            item = dataclasses.replace(last) if last is not None else BatchItem(index=index, prompt=self.prompts[index], attempts=0)
            item.fault, item.error = "stopped", STOPPED
            self.done[index] = item
        self.late.extend(running)
        running.clear()
        self._tell(stopped=True)
        return BatchStopped(BatchResult([self.done[i] for i in range(len(self.prompts))]))
