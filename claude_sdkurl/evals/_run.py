"""Tasks, targets, attempts, and :func:`run_eval`, which runs each task on each target ``runs``
times on the batch driver.

Threads: the driver runs on the caller's thread; attempts run on its pool of ``max_concurrency``
workers (``claude-sdkurl-batch``), or on the executor's workers elsewhere, each attempt to its
end (its own query, bounded by ``timeout``). Each attempt gets a workspace of its own, a fresh copy
of the task's folder in a temporary directory where it runs, removed once its checks have run
(``keep_workspaces=True`` keeps them).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import functools
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ..batch._driver import Driver
from ..batch._elsewhere import picklable
from ..batch._item import BatchItem
from ..batch._progress import _terminal
from ..batch._result import BatchStopped
from ..batch._retry import RetryPolicy, _fault_of
from ..types import AssistantMessage, ClaudeAgentOptions, Message, RateLimitEvent, ResultMessage, TextBlock, ToolUseBlock
from ..testing.faults import KINDS as MOCK_FAULTS
from ..testing.faults import fault_env
from ._attempt import Attempt
from ._scorecard import Scorecard
from ._wire import Seen, WireTap, shared_tap
from .checks import Check

Program = Callable[[str, ClaudeAgentOptions], Iterable[Message]]


FAULTS = (*MOCK_FAULTS, "kill", "tool-error")
"""The faults a task variant can play (see :func:`variants`): the mock Messages API's, then the
two played on the session's wire."""


@dataclasses.dataclass(frozen=True)
class Task:
    """A prompt, the folder the agent works in (copied fresh for each attempt; ``None``: an empty
    one), and the checks an attempt must pass. ``fault``: what goes wrong in each attempt (one of
    :data:`FAULTS`; see :func:`variants`)."""

    name: str
    """The name the scorecard shows."""
    prompt: str
    """The prompt."""
    workspace: str | Path | None = None
    """A folder copied fresh for each attempt; ``None``: an empty one."""
    checks: Sequence[Check] = ()
    """What an attempt must pass (:mod:`claude_sdkurl.evals.checks`)."""
    fault: str | None = None
    """What goes wrong in each attempt, one of :data:`FAULTS` (see :func:`variants`)."""

    def __post_init__(self) -> None:
        if self.fault is not None and self.fault not in FAULTS:
            raise ValueError(f"unknown fault {self.fault!r}: one of {', '.join(FAULTS)}")


def variants(task: Task, *faults: str) -> list[Task]:
    """The task again with each fault, named ``"<task> [<fault>]"``, same prompt, workspace and
    checks: does the program still do its job when the model or the CLI misbehaves?

    ``"429"``, ``"5xx"``, ``"slow"`` are played by the mock Messages API
    (:mod:`claude_sdkurl.testing.faults`: the attempt's requests carry a header asking for them);
    ``"kill"`` SIGKILLs the CLI when its first assistant message arrives; ``"tool-error"`` turns the
    first in-process tool call's answer into an error (both on the session's wire)."""
    return [dataclasses.replace(task, name=f"{task.name} [{fault}]", fault=fault) for fault in faults]


@dataclasses.dataclass(frozen=True)
class Target:
    """What is evaluated: ``options`` for a plain ``query()``, or a ``program`` called as
    ``program(prompt, options)`` that runs the agent the way your code does (your callbacks,
    hooks and in-process tools) and returns or yields its messages. Either way the options'
    ``cwd`` is the attempt's workspace."""

    name: str
    """The name the scorecard shows."""
    options: ClaudeAgentOptions | None = None
    """Options for a plain ``query()``."""
    program: Program | None = None
    """Your program, called as ``program(prompt, options)``; returns or yields its messages."""


def _read(attempt: Attempt, messages: list[Message]) -> None:
    totals: dict[str, float] = {}
    turns: dict[str, int] = {}
    texts: list[str] = []
    last: ResultMessage | None = None
    for message in messages:
        if isinstance(message, AssistantMessage):
            if not message.parent_tool_use_id and message.model not in attempt.models:
                attempt.models.append(message.model)
            for block in message.content:
                if isinstance(block, ToolUseBlock):
                    attempt.tool_calls.append((block.name, dict(block.input)))
                elif isinstance(block, TextBlock) and not message.parent_tool_use_id:
                    texts.append(block.text)
        elif isinstance(message, ResultMessage):
            # the CLI's figures run on within a session: its last result holds the session's total
            if message.total_cost_usd is not None:
                totals[message.session_id] = message.total_cost_usd
            turns[message.session_id] = turns.get(message.session_id, 0) + (message.num_turns or 0)
            if message.session_id not in attempt.session_ids:
                attempt.session_ids.append(message.session_id)
            if isinstance(message.result, str):
                attempt.text = message.result
            last = message
    attempt.cost_usd = round(sum(totals.values()), 10)
    attempt.turns = sum(turns.values()) if turns else None
    if not attempt.text:
        attempt.text = "\n\n".join(texts)
    if last is not None and last.is_error and attempt.error is None:  # it ran, and ended in an error (max turns, budget...)
        why = "; ".join(str(e) for e in last.errors or []) or (last.result if isinstance(last.result, str) else "")
        attempt.error = f"{last.subtype}: {why}".rstrip(": ")


def _attempt(task: Task, target: Target, run: int, tap: WireTap, keep: bool, timeout: float | None, model_env: dict[str, str],
             share: float | None = None, release_after: float | None = None) -> Attempt:  # fmt: skip
    """One attempt, its checks run, wherever it runs (this process or a worker's)."""
    attempt = Attempt(task=task.name, target=target.name, run=run, prompt=task.prompt, model_env=dict(model_env))
    folder = Path(tempfile.mkdtemp(prefix="claude-sdkurl-eval-"))
    attempt.workspace = folder
    seen: Seen = tap.watch(folder, task.fault, release_after)
    started = time.monotonic()
    env: dict[str, str] = {}  # the CLI's environment (where its transcripts are)
    try:
        if task.workspace is not None:
            shutil.copytree(task.workspace, folder, dirs_exist_ok=True, symlinks=True)
        options = dataclasses.replace(target.options or ClaudeAgentOptions(), cwd=str(folder))
        if share is not None:  # the attempt's part of the eval's budget: the CLI stops there
            options = dataclasses.replace(options, max_budget_usd=share)
        if model_env:  # a model tape's proxy stands in for the API; the attempt's own exchanges served to it
            from ..tapes._model import attempt_env

            options = dataclasses.replace(options, env={**options.env, **model_env})
            options = dataclasses.replace(options, env={**options.env, **attempt_env(f"{task.name}\0{target.name}\0{run}", options.env)})
        if task.fault in MOCK_FAULTS:
            options = dataclasses.replace(options, env={**options.env, **fault_env(task.fault, folder.name, options.env)})
        env = dict(options.env)
        if target.program is not None:
            source: Iterable[Message] = target.program(task.prompt, options)
        else:
            from ..query import query

            source = query(task.prompt, options, timeout=timeout)
        for message in source:  # kept as they come: a run that fails later keeps what it said
            attempt.messages.append(message)
    except Exception as e:  # the attempt failed; the others go on
        attempt.error = f"{type(e).__name__}: {e}"
    finally:
        attempt.seconds = time.monotonic() - started
        tap.forget(folder)
    with seen.lock:
        attempt.decisions, attempt.hooks, attempt.limited = list(seen.decisions), list(seen.hooks), seen.limited
        unreported = dict(seen.unreported)
    _read(attempt, attempt.messages)
    attempt.unreported = _served_usage(unreported, env)
    for check in task.checks:
        try:
            failure = check(attempt)
        except Exception as e:
            failure = f"{getattr(check, '__name__', 'check')} raised {type(e).__name__}: {e}"
        if failure:
            attempt.failures.append(f"{getattr(check, '__name__', 'check')}: {failure}")
    attempt.passed = attempt.error is None and not attempt.failures
    if not keep:
        shutil.rmtree(folder, ignore_errors=True)
    return attempt


def _served_usage(calls: dict[str, dict[str, Any]], env: dict[str, str]) -> list[dict[str, Any]]:
    """The model and usage of each call no result reported: as the CLI's transcript has it (its
    final count of output tokens), else as its stdout said, with output tokens estimated from
    what the call said at about four characters a token (stdout carries the count at the
    stream's start; a CLI killed as the answer came had not written it to its transcript)."""
    if not calls:
        return []
    from .._engine.paths import cli_projects_dir, transcripts_in

    final: dict[str, dict[str, Any]] = {}
    projects = cli_projects_dir(env)
    for session_id in {c.get("session_id") for c in calls.values()}:
        for path in transcripts_in(projects, session_id):
            try:
                lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            for line in lines:
                if '"assistant"' not in line:
                    continue
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue  # (a torn last line of a CLI killed while writing)
                message = entry.get("message") if isinstance(entry, dict) else None
                if isinstance(message, dict) and message.get("id") in calls and isinstance(message.get("usage"), dict):
                    final[message["id"]] = message["usage"]
    out = []
    for i, call in calls.items():
        usage = final.get(i)
        if usage is None:
            usage = dict(call.get("usage") or {})
            started = usage.get("output_tokens")
            usage["output_tokens"] = max(started if isinstance(started, int) else 0, int(call.get("said", 0)) // 4)
        out.append({"model": call.get("model"), "usage": usage, "final": i in final})
    return out


def _units(usage: dict[str, Any], names: tuple[str, str, str, str]) -> float:
    """Tokens weighted as the CLI prices them (measured on 2.1.330/2.1.332 for three models:
    output 5x input; cache reads 0.1x and writes 1.25x, the API's published ratios)."""
    def count(name: str) -> float:
        value = usage.get(name)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0

    given, made, read, written = names
    return count(given) + 5 * count(made) + 0.1 * count(read) + 1.25 * count(written)


_API_USAGE = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
_CLI_USAGE = ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheCreationInputTokens")


def _price_unreported(attempts: list[Attempt]) -> None:
    """Give each attempt's unreported calls a cost, at the rate per weighted token the CLI charged
    for the same model in the results of this eval's attempts (once an attempt; a model no
    result priced stays unpriced)."""
    spent: dict[str, list[float]] = {}
    for attempt in attempts:
        for message in attempt.messages:
            if isinstance(message, ResultMessage) and isinstance(message.model_usage, dict):
                for model, row in message.model_usage.items():
                    if isinstance(row, dict) and isinstance(row.get("costUSD"), (int, float)):
                        pair = spent.setdefault(model, [0.0, 0.0])
                        pair[0] += float(row["costUSD"])
                        pair[1] += _units(dict(row), _CLI_USAGE)
    rates = {model: cost / units for model, (cost, units) in spent.items() if units > 0}
    for attempt in attempts:
        if not attempt.unreported or attempt.unreported_cost_usd:
            continue
        cost = sum(rates.get(str(call.get("model")), 0.0) * _units(call.get("usage") or {}, _API_USAGE) for call in attempt.unreported)
        if cost > 0:
            attempt.unreported_cost_usd = round(cost, 10)
            attempt.cost_usd = round(attempt.cost_usd + cost, 10)


def _fault(attempt: Attempt) -> str | None:
    """What the batch driver makes of an attempt's end: ``"limit"`` (a rate limit or overload
    it did not get through: it runs again after the pause, afresh), ``"budget"`` (stopped at its
    share of the budget), else ``None``: its outcome stands, a crash included (a killed CLI is
    something an eval measures, not a fault to retry)."""
    if attempt.limited:
        return "limit"
    for message in reversed(attempt.messages):
        if isinstance(message, RateLimitEvent) and message.rate_limit_info.status == "rejected":
            return "limit"
        if isinstance(message, ResultMessage):
            fault = _fault_of(message)
            return fault if fault in ("limit", "budget") else None
    return None


def _outcome_of(attempt: Attempt, share: float | None) -> tuple[str | None, str | None]:
    """The batch driver's fault (see :func:`_fault`) and whether the attempt was ``stopped``:
    ``"budget"`` when the CLI stopped it at the share of the eval's budget the eval gave it (a
    budget of the target's own options that stops it is the program's outcome: it stands)."""
    fault = _fault(attempt)
    return fault, ("budget" if fault == "budget" and share is not None else None)


def _job(task: Task, target: Target, run: int, keep: bool, timeout: float | None, model_env: dict[str, str],
         index: int, tries: int, release_after: float | None, share: float | None) -> BatchItem:  # fmt: skip
    """An attempt as the batch driver's job (module level: Dask and Ray ship it to workers)."""
    with shared_tap() as tap:
        attempt = _attempt(task, target, run, tap, keep, timeout, model_env, share, release_after)
    attempt.tries = tries
    item = BatchItem(index=index, prompt=f"{task.name} · {target.name} · {run}", error=attempt.error, attempts=tries,
                     total_cost_usd=round(attempt.cost_usd + attempt.judge_cost_usd, 10), seconds=attempt.seconds,
                     session_id=attempt.session_ids[-1] if attempt.session_ids else None)  # fmt: skip
    item.fault, attempt.stopped = _outcome_of(attempt, share)
    item.outcome = attempt
    return item


def _unran(task: Task, target: Target, run: int, item: BatchItem, budget: float | None) -> Attempt:
    """The attempt of an item the driver ended without running it (the budget spent, a stop)."""
    attempt = Attempt(task=task.name, target=target.name, run=run, prompt=task.prompt)
    if item.fault == "budget":
        attempt.error = f"BudgetSpent: the eval's max_total_cost_usd (${budget or 0:.4f}) was spent before this attempt started"
        attempt.stopped = "budget"
    else:
        attempt.error = item.error or "not run"
    return attempt


def run_eval(
    tasks: Sequence[Task],
    targets: Sequence[Target],
    runs: int = 1,
    *,
    max_concurrency: int = 4,
    executor: cf.Executor | None = None,
    retry: RetryPolicy | None = RetryPolicy(max_retries=0),
    max_total_cost_usd: float | None = None,
    timeout: float | None = 600.0,
    progress: bool | Callable[[int, int, int], None] | None = None,
    keep_workspaces: bool = False,
    out: str | Path | None = None,
    tape: str | Path | None = None,
    record_from: str | None = None,
    baseline: str | Path | Scorecard | None = None,
    max_runs: int | None = None,
    alpha: float = 0.05,
) -> Scorecard:
    """Run each task on each target ``runs`` times, ``max_concurrency`` at a time, and score them.

    Attempts run on the batch driver (:func:`claude_sdkurl.batch.run_batch`'s): on threads here
    by default, or on ``executor`` (a Dask client's ``get_executor()``, a
    :class:`~claude_sdkurl.batch.RayExecutor`: tasks, targets and checks travel by pickling, and
    each attempt, its workspace and its checks run on the worker). Under ``retry`` a rate limit
    or overload an attempt did not get through pauses the eval, and that attempt runs again
    afresh after the probe, so a limit never scores as a failure; other faults (a killed CLI, a
    program that raises) are the attempt's outcome, recorded with its ``error``, and the others
    run. ``max_total_cost_usd``: each attempt gets a share as its ``max_budget_usd`` (the CLI
    stops it there: at most one API call over), and attempts not started once it is spent are
    recorded with ``BudgetSpent``; both are ``stopped="budget"``, not measured: their cells count
    them apart, never as failed runs (see :func:`gate`). ``timeout`` bounds each attempt of an options target.
    ``progress``: ``True`` for a line on standard error, or ``f(done, total, passed)``.
    ``out``: the scorecard's JSONL, written when the run ends (see :meth:`Scorecard.save`).
    Ctrl-C stops every running attempt; ``out`` gets what finished and
    :class:`~claude_sdkurl.batch.BatchStopped` is raised.

    ``tape``: a model tape (:func:`claude_sdkurl.tapes.model_tape`) every attempt's CLI talks to
    instead of the API: with ``record_from`` (the API's or a mock's address) the exchanges are
    recorded there; without, they are replayed, offline, and the suite gives the same scorecard
    every time. A replay that asked for something not on the tape raises
    :class:`~claude_sdkurl.tapes.ModelTapeMiss` once the run ends (``out`` is written first).

    ``max_runs`` with ``baseline``: a sequential run. After ``runs`` attempts a cell, each cell
    is looked at against the baseline: one the gate flags, or one passing at the baseline's rate
    or better, is done; the others (unclear) get more attempts, doubling, up to ``max_runs``.
    ``alpha`` is shared among the looks as among the cells, so the false-alarm rate stays
    ``alpha`` however many looks are taken; the scorecard records the looks and :func:`gate`
    applies the same share. :func:`power` says beforehand how likely a given fall is flagged,
    :func:`max_runs_for` which ``max_runs`` reaches a chosen power.
    """
    if runs < 1 or max_concurrency < 1:
        raise ValueError("runs and max_concurrency must be at least 1")
    names = [t.name for t in tasks]
    if len(set(names)) != len(names) or len({t.name for t in targets}) != len(targets):
        raise ValueError("task names and target names must each be unique")
    for target in targets:
        if target.options is None and target.program is None:
            raise ValueError(f"target {target.name!r} has neither options nor a program")
    looks, before = [runs], {}
    if max_runs is not None:
        if baseline is None:
            raise ValueError("max_runs runs more attempts where a cell is unclear against a baseline: give baseline too")
        from ._scorecard import _baseline, looks_from

        looks = looks_from(runs, max_runs)
        before = _baseline(baseline)  # read and checked before anything runs
    if record_from is not None and tape is None:
        raise ValueError("record_from names where to record a tape from: give the tape's path too")
    if executor is not None and not isinstance(executor, cf.ThreadPoolExecutor):
        targets = [dataclasses.replace(t, options=picklable(t.options)) if t.options is not None else t for t in targets]
        _travels(tasks, targets)
    plan = [(task, target, run) for run in range(runs) for task in tasks for target in targets]
    report = progress if callable(progress) else (_line if progress else None)
    ended = [0, 0, len(plan)]  # items finished (run or not), attempts passed, attempts planned so far
    done: list[Attempt] = []  # every look's attempts so far

    def on_finish(item: BatchItem) -> None:
        ended[0] += 1
        ended[1] += isinstance(item.outcome, Attempt) and item.outcome.passed
        if report is not None:
            report(ended[0], ended[2], ended[1])

    def scored(stage: list[tuple[Task, Target, int]], items: list[BatchItem]) -> Scorecard:
        attempts = [i.outcome if isinstance(i.outcome, Attempt) else _unran(*stage[i.index], i, max_total_cost_usd) for i in items]
        _price_unreported(done + attempts)
        return Scorecard(done + attempts, tasks=names, targets=[t.name for t in targets], looks=len(looks))

    def spare() -> float | None:
        """What is left of the budget for the next look's attempts."""
        if max_total_cost_usd is None:
            return None
        return max(0.0, max_total_cost_usd - sum(a.cost_usd + a.judge_cost_usd for a in done))

    with contextlib.ExitStack() as stack:
        model_env: dict[str, str] = {}
        if tape is not None:
            from ..tapes import model_tape

            model_env = stack.enter_context(model_tape(tape, upstream=record_from)).env()
        stage, had = plan, runs
        while True:
            jobs = [functools.partial(_job, task, target, run, keep_workspaces, timeout, model_env) for task, target, run in stage]
            driver = Driver([f"{t.name} · {g.name} · {r}" for t, g, r in stage], None, executor=executor,
                            max_concurrency=max_concurrency, progress=None, checkpoint=None, resume=None, continue_prompt=None,
                            retry=retry, max_total_cost_usd=spare(), jobs=jobs, on_finish=on_finish)  # fmt: skip
            try:
                result = driver.run()
            except BatchStopped as stopped:
                if out is not None:
                    scored(stage, stopped.result.items).save(out)
                raise
            finally:
                if report is _line and _terminal():
                    print(file=sys.stderr)  # (the redrawn line's end)
            card = scored(stage, result.items)
            done = card.attempts
            nxt = next((n for n in looks if n > had), None)
            if nxt is None or (spare() is not None and spare() == 0.0):
                break
            unclear = _unclear_cells(card, before, alpha / max(1, len(before)) / len(looks))
            stage = [(task, target, run) for run in range(had, nxt) for task in tasks for target in targets
                     if (task.name, target.name) in unclear]  # fmt: skip
            if not stage:
                break
            had = nxt
            ended[2] += len(stage)
        if out is not None:
            card.save(out)  # before the tape's miss, if any, is raised on leaving
    return card


def _unclear_cells(card: Scorecard, before: dict[str, dict[str, Any]], each: float) -> set[tuple[str, str]]:
    """The cells of ``card`` a further look could decide: neither flagged at ``each`` nor
    passing at the baseline's rate (less its noise) or better. A cell of no baseline's is done."""
    from ._scorecard import _unclear, _worse

    out = set()
    for cell in card.cells():
        old = before.get(f"{cell.task}\t{cell.target}")
        if old is None or not cell.n or int(old["passes"]) == 0:
            continue
        then_passes, then_n = int(old["passes"]), int(old["n"])
        noise = float((old.get("noise") or {}).get("rate", 0.0))
        if not _worse(cell.passes, cell.n, then_passes, then_n, noise, each) and _unclear(cell.passes, cell.n, then_passes, then_n, noise):
            out.add((cell.task, cell.target))
    return out


def _travels(tasks: Sequence[Task], targets: Sequence[Target]) -> None:
    """Tasks and targets bound for other processes: each must pickle (as Dask and Ray do it,
    by cloudpickle when it is there), or a ``TypeError`` names the one that cannot (a target's
    options were checked before, by the batch's rule: its ``debug_stderr`` stream dropped, any
    other field that cannot travel named)."""
    try:
        import cloudpickle as dumper  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - Dask and Ray both bring it
        import pickle as dumper
    every: list[Task | Target] = [*tasks, *targets]
    for what in every:
        try:
            dumper.dumps(what)
        except Exception as e:
            kind = "task" if isinstance(what, Task) else "target"
            raise TypeError(f"{kind} {what.name!r} cannot be sent to another process ({type(e).__name__}: {e}); "
                            "run the eval on threads (no executor)") from None  # fmt: skip


def _line(done: int, total: int, passed: int) -> None:
    """The progress line, redrawn on a terminal; elsewhere (a log file) a plain line each time."""
    width = 30
    filled = int(width * done / total) if total else width
    text = f"evals [{'#' * filled}{'.' * (width - filled)}] {done}/{total} · {passed} passed"
    if _terminal():
        print(f"\r{text}", end="", file=sys.stderr, flush=True)
    else:
        print(text, file=sys.stderr, flush=True)
