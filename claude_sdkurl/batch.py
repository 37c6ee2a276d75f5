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
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import json
import pickle
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from . import _trace
from ._errors import ClaudeSDKError
from .display import notebook
from .query import query
from .types import ClaudeAgentOptions, ResultMessage, SystemMessage

__all__ = ["BatchItem", "BatchResult", "BatchProgress", "RayExecutor", "UnpicklableOptionError", "run_batch", "run_one"]


class UnpicklableOptionError(ClaudeSDKError, TypeError):
    """An option cannot travel to a remote worker (it cannot be pickled)."""

    def __init__(self, field: str, error: BaseException):
        self.field = field
        super().__init__(
            f"ClaudeAgentOptions.{field} cannot be sent to a remote worker ({type(error).__name__}: {error}); "
            "use a module-level function or a picklable object, or run the batch on threads"
        )


@dataclasses.dataclass
class BatchItem:
    """The outcome of one prompt; ``error`` is set (``"TypeName: text"``) when it failed."""

    index: int
    prompt: str
    text: str | None = None
    structured_output: Any = None
    total_cost_usd: float | None = None
    usage: dict[str, Any] | None = None
    session_id: str | None = None
    num_turns: int | None = None
    error: str | None = None
    seconds: float = 0.0
    resumed_from: str | None = None  # the session this item went on with (see ``continue_prompt``)
    model_usage: dict[str, Any] | None = None  # the CLI's per-model tokens and cost (its ``costUSD``)

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclasses.dataclass
class BatchResult:
    """Every item, in prompt order, and the totals."""

    items: list[BatchItem]

    @property
    def succeeded(self) -> list[BatchItem]:
        return [i for i in self.items if i.ok]

    @property
    def failed(self) -> list[BatchItem]:
        return [i for i in self.items if not i.ok]

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

    def _repr_html_(self) -> str:
        return (
            f"<b>{len(self.succeeded)}</b> done, <b>{len(self.failed)}</b> failed, "
            f"${self.total_cost_usd:.4f}, {self.total_tokens('input_tokens')} in / "
            f"{self.total_tokens('output_tokens')} out tokens"
        )

    @classmethod
    def load(cls, path: str | Path) -> BatchResult:
        """The items of a checkpoint file (the last line of an index wins)."""
        items: dict[int, BatchItem] = {}
        p = Path(path)
        if p.exists():
            for line in p.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    item = BatchItem(**json.loads(line))
                    items[item.index] = item
        return cls([items[k] for k in sorted(items)])


@dataclasses.dataclass
class BatchProgress:
    """What a progress callback gets after each item."""

    done: int
    failed: int
    total: int
    cost_usd: float
    elapsed: float


def run_one(
    index: int,
    prompt: str,
    options: ClaudeAgentOptions | None = None,
    resume_session: str | None = None,
    continue_prompt: str | None = None,
) -> BatchItem:
    """Run one prompt to the end; never raises for a failed run (see :class:`BatchItem`).

    With ``resume_session`` the item goes on with that session (from
    ``options.session_store``), sending ``continue_prompt`` instead of ``prompt``.
    The item's ``session_id`` is known from the session's first message, so a
    failed item still names the session it started.
    A module-level function, so any executor (process pools, Dask, Ray) can ship it.
    """
    t0 = time.monotonic()
    item = BatchItem(index=index, prompt=prompt, resumed_from=resume_session)
    result: ResultMessage | None = None
    if resume_session is not None:
        options = dataclasses.replace(options or ClaudeAgentOptions(), resume=resume_session, continue_conversation=False)
        prompt = continue_prompt or prompt
    try:
        for message in query(prompt, options):
            if isinstance(message, ResultMessage):
                result = message
            elif item.session_id is None and isinstance(message, SystemMessage):
                sid = message.data.get("session_id")
                item.session_id = sid if isinstance(sid, str) else None
    except Exception as e:
        item.error = f"{type(e).__name__}: {e}"
    if result is not None:
        item.text = result.result
        item.structured_output = result.structured_output
        item.total_cost_usd = result.total_cost_usd
        item.usage = result.usage
        item.session_id = result.session_id
        item.num_turns = result.num_turns
        item.model_usage = {m: dict(u) for m, u in result.model_usage.items()} if result.model_usage else None
    elif item.error is None:
        item.error = "CLIConnectionError: no result"
    item.seconds = time.monotonic() - t0
    return item


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
) -> BatchResult:
    """Run every prompt, at most ``max_concurrency`` at a time, and return all outcomes.

    Args:
        executor: where items run (default: a thread pool of ``max_concurrency``
            threads, closed afterwards). A process pool or a Dask/Ray executor
            runs them on other processes or machines; the options are pickled.
        progress: ``True`` for a progress line on standard error (or a live line
            in a notebook), a callable for your own, ``None``/``False`` for none.
        checkpoint: a JSON-lines file each finished item is appended to.
        resume: a checkpoint file or an earlier result: prompts finished there
            (same index and prompt, no error) are not run again.
        continue_prompt: with ``resume`` and ``options.session_store``: an item
            that failed there after its session started goes on with that
            session from the store (``resume=<its session>``), sent this prompt
            (say ``"Continue where you left off."``) instead of starting over.
            Without it, failed items run again from the start.
    """
    prompts = list(prompts)
    options = options or ClaudeAgentOptions()
    if not (isinstance(max_concurrency, int) and max_concurrency > 0):
        raise ValueError("max_concurrency must be a positive int")
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
        if item.ok:
            done[item.index] = item
        elif continue_prompt is not None and item.session_id:
            go_on[item.index] = item.session_id
    todo = [i for i in range(len(prompts)) if i not in done]
    report = _reporter(progress, len(prompts))
    sink = _Checkpoint(checkpoint) if checkpoint is not None else None
    pool = executor if executor is not None else cf.ThreadPoolExecutor(max_concurrency, thread_name_prefix="claude-sdkurl-batch")
    t0 = time.monotonic()
    tracer = _trace.tracer()
    batch_span = _trace.start(tracer, "claude_sdkurl.batch", {"openinference.span.kind": "CHAIN", "claude_sdkurl.batch.size": len(prompts),
                                                              "claude_sdkurl.batch.to_run": len(todo)})  # fmt: skip
    item_spans: dict[int, Any] = {}
    try:
        running: dict[cf.Future[BatchItem], int] = {}
        queue = iter(todo)
        while True:
            while len(running) < max_concurrency:
                index = next(queue, None)
                if index is None:
                    break
                job = (index, prompts[index], options, go_on.get(index), continue_prompt if index in go_on else None)
                item_span = item_spans[index] = _trace.start(tracer, "claude_sdkurl.batch.item", {"openinference.span.kind": "CHAIN",
                                                             "claude_sdkurl.batch.index": index}, batch_span)  # fmt: skip
                if item_span is not None and isinstance(pool, cf.ThreadPoolExecutor):  # the item's spans nest under it
                    running[pool.submit(_run_under, item_span, *job)] = index
                else:
                    running[pool.submit(run_one, *job)] = index
            if not running:
                break
            finished, _ = cf.wait(list(running), return_when=cf.FIRST_COMPLETED)
            for future in finished:
                index = running.pop(future)
                try:
                    item = future.result()
                except BaseException as e:  # the worker itself died (killed process, lost node)
                    item = BatchItem(index=index, prompt=prompts[index], error=f"{type(e).__name__}: {e}")
                done[index] = item
                _trace.end(item_spans.pop(index, None), item.error, {"session.id": item.session_id, "llm.cost.total": item.total_cost_usd,
                                                                       "claude_sdkurl.batch.seconds": item.seconds})  # fmt: skip
                if sink is not None:
                    sink.write(item)
                if report is not None:
                    failed = sum(1 for i in done.values() if not i.ok)
                    cost = sum(i.total_cost_usd or 0.0 for i in done.values())
                    report(BatchProgress(len(done), failed, len(prompts), cost, time.monotonic() - t0))
    finally:
        if own:
            pool.shutdown(wait=True)
        if sink is not None:
            sink.close()
        for left in item_spans.values():
            _trace.end(left, "the batch stopped before this item ended")
        failed = sum(1 for i in done.values() if not i.ok)
        _trace.end(batch_span, f"{failed} item(s) failed" if failed else None,
                   {"claude_sdkurl.batch.failed": failed, "llm.cost.total": sum(i.total_cost_usd or 0.0 for i in done.values())})
    return BatchResult([done[i] for i in range(len(prompts))])


def _run_under(span: Any, *job: Any) -> BatchItem:
    """:func:`run_one` with ``span`` current on the worker thread (a thread pool's item)."""
    with _trace.attached(span):
        return run_one(*job)


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

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future[Any]:
        remote = self._remotes.get(fn)
        if remote is None:
            remote = self._ray.remote(**self._options)(fn) if self._options else self._ray.remote(fn)
            self._remotes[fn] = remote
        future: cf.Future[Any] = remote.remote(*args, **kwargs).future()
        return future


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
    def __init__(self, path: str | Path) -> None:
        self._file: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115
        self._lock = threading.Lock()

    def write(self, item: BatchItem) -> None:
        line = json.dumps(dataclasses.asdict(item), default=str)
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()

    def close(self) -> None:
        self._file.close()


def _reporter(progress: bool | Callable[[BatchProgress], None] | None, total: int) -> Callable[[BatchProgress], None] | None:
    if callable(progress):
        return progress
    if not progress:
        return None
    ipython = notebook()
    if ipython is not None:
        handle = ipython.display.display(ipython.display.HTML(""), display_id=True)
        return lambda p: handle.update(ipython.display.HTML(_bar(p, html=True)))

    def line(p: BatchProgress) -> None:
        sys.stderr.write("\r" + _bar(p) + ("\n" if p.done == p.total else ""))
        sys.stderr.flush()

    return line


def _bar(p: BatchProgress, html: bool = False, width: int = 30) -> str:
    filled = int(width * p.done / p.total) if p.total else width
    text = f"[{'#' * filled}{'.' * (width - filled)}] {p.done}/{p.total}, {p.failed} failed, ${p.cost_usd:.4f}, {p.elapsed:.0f} s"
    return f"<code>{text}</code>" if html else text
