"""Where runs happen: on this process's threads (stoppable, spans nested) or on other
processes (Dask, Ray, process pools: options pickled, runs stoppable there), and Ray as a
``concurrent.futures`` executor."""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import pickle
import threading
from collections.abc import Callable
from typing import Any

from .._engine import cancel as _cancel
from .._engine import trace as _trace
from .._errors import ClaudeSDKError
from ..types import ClaudeAgentOptions
from ._item import BatchItem
from ._one import run_one

class UnpicklableOptionError(ClaudeSDKError, TypeError):
    """An option cannot travel to a remote worker (it cannot be pickled)."""

    field: str
    """The ``ClaudeAgentOptions`` field that cannot be pickled."""

    def __init__(self, field: str, error: BaseException):
        self.field = field
        super().__init__(
            f"ClaudeAgentOptions.{field} cannot be sent to a remote worker ({type(error).__name__}: {error}); "
            "use a module-level function or a picklable object, or run the batch on threads"
        )


STOPPED = "Stopped: the batch was stopped before this item ended"  # a stopped item's error


def _run_here(scope: _cancel.Scope, span: Any, run: Callable[..., BatchItem], *job: Any) -> BatchItem:
    """``run(*job)`` (:func:`run_one`, or a job of the driver's own) on a thread pool's worker:
    under ``scope`` (a stop cancels the run) and with ``span`` current (the item's spans nest
    under it)."""
    _cancel.enter(scope)
    try:
        with _trace.attached(span):
            return run(*job)
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
    """:func:`run_one` on another process's worker, stoppable there (see :func:`_stoppable`)."""
    return _stoppable(token, index, attempt, prompt,
                      lambda: run_one(index, prompt, options, resume_session, continue_prompt, attempt, release_after))  # fmt: skip


def _job_elsewhere(token: str, job: Callable[[int, int, float | None, float | None], BatchItem], index: int, attempt: int,
                   release_after: float | None, share: float | None) -> BatchItem:  # fmt: skip
    """A job of the driver's own (``job(index, attempt, release_after, budget_share)``: an
    eval's attempt) on another process's worker, stoppable there as a prompt's run is."""
    return _stoppable(token, index, attempt, f"job {index}", lambda: job(index, attempt, release_after, share))


def _stoppable(token: str, index: int, attempt: int, prompt: str, run: Callable[[], BatchItem]) -> BatchItem:
    """``run()`` on another process's worker, stoppable there: by :func:`_stop_runs` (Dask
    runs it on every worker) or by a ``KeyboardInterrupt`` (Ray's ``cancel``, a terminal's
    Ctrl-C reaching a process pool). A stopped run ends as a ``fault="stopped"`` item (its query
    has interrupted the turn and stopped its CLI); it is not raised, since a worker may treat
    an exception that is not an ``Exception`` as its own end."""
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
        return run()
    except (_cancel.CancelledError, KeyboardInterrupt):
        return BatchItem(index=index, prompt=prompt, attempts=attempt, fault="stopped", error=STOPPED)
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
