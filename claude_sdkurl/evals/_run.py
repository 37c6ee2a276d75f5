"""Tasks, targets, attempts, and :func:`run_eval`, which runs each task on each target ``runs``
times on a thread pool.

Threads: ``max_concurrency`` workers (``claude-sdkurl-eval``), each running one attempt at a time
to its end (the attempt's own query, bounded by ``timeout``); the caller's thread waits for them.
Each attempt gets a workspace of its own, a fresh copy of the task's folder in a temporary
directory, removed once its checks have run (``keep_workspaces=True`` keeps them).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from ..types import AssistantMessage, ClaudeAgentOptions, Message, ResultMessage, TextBlock, ToolUseBlock
from ..testing.faults import KINDS as MOCK_FAULTS
from ..testing.faults import fault_env
from ._attempt import Attempt
from ._scorecard import Scorecard
from ._wire import Seen, WireTap
from .checks import Check

Program = Callable[[str, ClaudeAgentOptions], Iterable[Message]]


FAULTS = ("429", "5xx", "slow", "kill", "tool-error")


@dataclasses.dataclass(frozen=True)
class Task:
    """A prompt, the folder the agent works in (copied fresh for each attempt; ``None``: an empty
    one), and the checks an attempt must pass. ``fault``: what goes wrong in each attempt (one of
    :data:`FAULTS`; see :func:`variants`)."""

    name: str
    prompt: str
    workspace: str | Path | None = None
    checks: Sequence[Check] = ()
    fault: str | None = None

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
    options: ClaudeAgentOptions | None = None
    program: Program | None = None


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


class _Budget:
    def __init__(self, limit: float | None) -> None:
        self.limit, self.spent = limit, 0.0
        self.lock = threading.Lock()

    def left(self) -> bool:
        with self.lock:
            return self.limit is None or self.spent < self.limit

    def add(self, usd: float) -> None:
        with self.lock:
            self.spent += usd


def _attempt(task: Task, target: Target, run: int, tap: WireTap, budget: _Budget, keep: bool, timeout: float | None,
             model_env: dict[str, str]) -> Attempt:  # fmt: skip
    attempt = Attempt(task=task.name, target=target.name, run=run, prompt=task.prompt)
    if not budget.left():
        attempt.error = "BudgetSpent: the eval's max_total_cost_usd was spent before this attempt started"
        return attempt
    folder = Path(tempfile.mkdtemp(prefix="claude-sdkurl-eval-"))
    attempt.workspace = folder
    seen: Seen = tap.watch(folder, task.fault)
    started = time.monotonic()
    try:
        if task.workspace is not None:
            shutil.copytree(task.workspace, folder, dirs_exist_ok=True, symlinks=True)
        options = dataclasses.replace(target.options or ClaudeAgentOptions(), cwd=str(folder))
        if model_env:  # a model tape's proxy stands in for the API
            options = dataclasses.replace(options, env={**options.env, **model_env})
        if task.fault in MOCK_FAULTS:
            options = dataclasses.replace(options, env={**options.env, **fault_env(task.fault, folder.name, options.env)})
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
        attempt.decisions, attempt.hooks = list(seen.decisions), list(seen.hooks)
    _read(attempt, attempt.messages)
    budget.add(attempt.cost_usd)
    for check in task.checks:
        try:
            failure = check(attempt)
        except Exception as e:
            failure = f"{getattr(check, '__name__', 'check')} raised {type(e).__name__}: {e}"
        if failure:
            attempt.failures.append(f"{getattr(check, '__name__', 'check')}: {failure}")
    budget.add(attempt.judge_cost_usd)
    attempt.passed = attempt.error is None and not attempt.failures
    if not keep:
        shutil.rmtree(folder, ignore_errors=True)
    return attempt


def run_eval(
    tasks: Sequence[Task],
    targets: Sequence[Target],
    runs: int = 1,
    *,
    max_concurrency: int = 4,
    max_total_cost_usd: float | None = None,
    timeout: float | None = 600.0,
    progress: bool | Callable[[int, int, int], None] | None = None,
    keep_workspaces: bool = False,
    out: str | Path | None = None,
    tape: str | Path | None = None,
    record_from: str | None = None,
) -> Scorecard:
    """Run each task on each target ``runs`` times, ``max_concurrency`` at a time, and score them.

    An attempt that fails (a CLI killed, a program that raises) is recorded with its ``error``;
    the others run. ``max_total_cost_usd``: attempts not started once that much is spent are
    recorded failed (``BudgetSpent``). ``timeout`` bounds each attempt of an options target.
    ``progress``: ``True`` for a line on standard error, or ``f(done, total, passed)``.
    ``out``: the scorecard's JSONL, written when the run ends (see :meth:`Scorecard.save`).

    ``tape``: a model tape (:func:`claude_sdkurl.tapes.model_tape`) every attempt's CLI talks to
    instead of the API: with ``record_from`` (the API's or a mock's address) the exchanges are
    recorded there; without, they are replayed, offline, and the suite gives the same scorecard
    every time. A replay that asked for something not on the tape raises
    :class:`~claude_sdkurl.tapes.ModelTapeMiss` once the run ends (``out`` is written first).
    """
    if runs < 1 or max_concurrency < 1:
        raise ValueError("runs and max_concurrency must be at least 1")
    names = [t.name for t in tasks]
    if len(set(names)) != len(names) or len({t.name for t in targets}) != len(targets):
        raise ValueError("task names and target names must each be unique")
    for target in targets:
        if target.options is None and target.program is None:
            raise ValueError(f"target {target.name!r} has neither options nor a program")
    plan = [(task, target, run) for run in range(runs) for task in tasks for target in targets]
    budget = _Budget(max_total_cost_usd)
    done: list[Attempt] = []
    report = progress if callable(progress) else (_line if progress else None)
    if record_from is not None and tape is None:
        raise ValueError("record_from names where to record a tape from: give the tape's path too")
    with contextlib.ExitStack() as stack:
        model_env: dict[str, str] = {}
        if tape is not None:
            from ..tapes import model_tape

            model_env = stack.enter_context(model_tape(tape, upstream=record_from)).env()
        tap = stack.enter_context(WireTap())
        pool = stack.enter_context(cf.ThreadPoolExecutor(max_concurrency, thread_name_prefix="claude-sdkurl-eval"))
        futures = [pool.submit(_attempt, task, target, run, tap, budget, keep_workspaces, timeout, model_env) for task, target, run in plan]
        try:
            for future in cf.as_completed(futures):
                done.append(future.result())
                if report is not None:
                    report(len(done), len(plan), sum(a.passed for a in done))
        finally:
            if report is _line:
                print(file=sys.stderr)
            order = {(t.name, g.name, r): i for i, (t, g, r) in enumerate(plan)}
            card = Scorecard(sorted(done, key=lambda a: order[(a.task, a.target, a.run)]), tasks=names, targets=[t.name for t in targets])
            if out is not None and len(done) == len(plan):
                card.save(out)  # before the tape's miss, if any, is raised on leaving
    return card


def _line(done: int, total: int, passed: int) -> None:
    width = 30
    filled = int(width * done / total) if total else width
    print(f"\revals [{'#' * filled}{'.' * (width - filled)}] {done}/{total} · {passed} passed", end="", file=sys.stderr, flush=True)
