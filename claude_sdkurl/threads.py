"""Thread forms of the ``asyncio`` helpers that ported programs call (``python -m
claude_sdkurl.port`` writes calls to these; they are plain functions anyone may use).

* :func:`gather`: ``asyncio.gather`` for calls (or tasks) instead of coroutines: each call
  runs on a thread of its own, all at once; the results come back in argument order.
* :func:`create_task` and :class:`Task`: ``asyncio.create_task`` for a call: it runs on a
  thread at once; ``task.cancel()``, ``task.result()`` (the ``await task``), ``done()``.
* :class:`TaskGroup`: ``asyncio.TaskGroup`` / anyio task groups / trio nurseries (their
  ``start_soon`` and ``start``, whose task says ``task_status.started()``).
* :func:`wait_for`: ``asyncio.wait_for`` for a call.
* :func:`sleep` and :exc:`CancelledError`.
* :func:`current_task`: ``asyncio.current_task()``: the task running this thread, or a handle
  of the thread itself (the ported ``main()`` is not a task), whose ``cancel()`` stops it at its
  next cancel point (a server's cancel-on-disconnect).
* :func:`iterate` and :func:`entered`: for code that stays ``async`` (an async framework's
  lifespan, middleware or websocket handler): an SDK iterator or client used from the event
  loop, each blocking step on a worker thread (``asyncio.to_thread``), so the loop never waits.

Cancelling a thread is cooperative: a cancelled task stops at its next cancel point with
:exc:`CancelledError`. The cancel points are :func:`sleep`, waiting for a task
(``result()``, :func:`wait_for`, leaving a :class:`TaskGroup`) and reading messages from
the SDK (``for m in query(...)``, ``client.receive_messages()/receive_response()``). That
covers what tasks in agent programs wait on: a timer that sleeps then calls
``client.interrupt()``, a reader loop, a bounded wait for an answer. Code that waits on
anything else (a socket, ``time.sleep``, ``threading.Event``) sees the cancel when it
reaches a cancel point; until then it runs on. Leaving a ``for m in query(...)`` by a
cancel stops that turn as leaving it by ``break`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from types import TracebackType
from typing import Any, Generic, TypeVar

from ._engine.cancel import CancelledError, Scope, current, enter
from ._engine.cancel import wait as _wait

__all__ = ["CancelledError", "Task", "TaskGroup", "ThreadHandle", "create_task", "current_task", "entered", "gather", "iterate", "sleep",
           "wait_for"]

T = TypeVar("T")
_names = itertools.count(1)


def sleep(seconds: float) -> None:
    """``time.sleep``, and a cancel point inside a task."""
    _wait(threading.Event(), max(0.0, seconds))


class Task(Generic[T]):
    """A call running on a thread of its own (made by :func:`create_task`)."""

    def __init__(self, call: Callable[[], T], name: str | None = None) -> None:
        if not callable(call):
            raise TypeError(
                f"create_task() takes a call, not {type(call).__name__}: pass the function "
                "(functools.partial(f, x) for f(x)), not a coroutine or its result"
            )
        self._call = call
        self._scope = Scope()
        self._done = threading.Event()
        self._result: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Task[T]], None]] = []
        self._lock = threading.Lock()
        self._name = name or f"Task-{next(_names)}"
        self._thread = threading.Thread(target=self._run, name=f"claude-sdkurl-{self._name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        enter(self._scope)
        _running.task = self
        try:
            self._result = self._call()
        except BaseException as e:  # kept for result(): a task's error is its waiter's
            self._error = e
        finally:
            enter(None)
            _running.task = None
            with self._lock:
                self._done.set()
                callbacks, self._callbacks = self._callbacks, []
            for callback in callbacks:
                callback(self)

    def get_name(self) -> str:
        return self._name

    def cancel(self, msg: Any = None) -> bool:
        """Ask the task to stop at its next cancel point. ``False`` if it has ended already."""
        if self._done.is_set():
            return False
        self._scope.cancel()
        return True

    def cancelled(self) -> bool:
        """Whether the task ended by :exc:`CancelledError`."""
        return self._done.is_set() and isinstance(self._error, CancelledError)

    def done(self) -> bool:
        return self._done.is_set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the task ends (a cancel point); ``False`` if ``timeout`` passed first."""
        return self._done.is_set() or _wait_done([self], timeout)

    def result(self, timeout: float | None = None) -> T:
        """Wait for the task and return its value (``await task``); its exception is raised
        here, :exc:`CancelledError` if it was cancelled. :exc:`TimeoutError` after ``timeout``."""
        if not self.join(timeout):
            raise TimeoutError(f"{self._name} did not end within {timeout} s")
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[no-any-return]

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """Wait for the task; its exception, or ``None`` (raises :exc:`CancelledError` if
        it was cancelled, as asyncio's)."""
        if not self.join(timeout):
            raise TimeoutError(f"{self._name} did not end within {timeout} s")
        if isinstance(self._error, CancelledError):
            raise CancelledError()
        return self._error

    def add_done_callback(self, callback: Callable[[Task[T]], None]) -> None:
        """Call ``callback(task)`` when it ends (at once, here, if it has)."""
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    def __repr__(self) -> str:
        state = "cancelled" if self.cancelled() else "done" if self.done() else "running"
        return f"<Task {self._name} {state}>"


_running = threading.local()  # .task: the Task this thread runs


class ThreadHandle:
    """A thread that no :class:`Task` runs (the main thread, a server's worker), as
    :func:`current_task` gives it: ``cancel()`` stops it at its next cancel point with
    :exc:`CancelledError` (delivered once), as cancelling the task that runs
    ``asyncio.run(main())`` does there."""

    def __init__(self, scope: Scope) -> None:
        self._scope = scope
        self._name = threading.current_thread().name

    def cancel(self, msg: Any = None) -> bool:
        self._scope.cancel()
        return True

    def cancelled(self) -> bool:
        return False  # a thread goes on after its cancel is delivered; it never "ends cancelled"

    def cancelling(self) -> int:
        """1 once a cancel was asked for, else 0 (asyncio's count of pending cancels, roughly)."""
        return 1 if self._scope.requested else 0

    def done(self) -> bool:
        return False

    def get_name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<ThreadHandle {self._name}>"


def current_task() -> Task[Any] | ThreadHandle:
    """``asyncio.current_task()``: the :class:`Task` running this thread, else a
    :class:`ThreadHandle` of this thread (made cancellable from here on: its waits at cancel
    points see a cancel)."""
    task = getattr(_running, "task", None)
    if task is not None:
        return task  # type: ignore[no-any-return]
    scope = current()
    if scope is None:
        scope = Scope()
        enter(scope)
    return ThreadHandle(scope)


def _wait_done(tasks: list[Task[Any]], timeout: float | None, first_error: bool = False) -> bool:
    """Wait (a cancel point) until every task has ended, or with ``first_error`` until one
    has raised; ``False`` on ``timeout``."""
    woken = threading.Event()
    lock = threading.Lock()
    left = [len(tasks)]

    def one_ended(task: Task[Any]) -> None:
        with lock:
            left[0] -= 1
            if left[0] == 0 or (first_error and task._error is not None):
                woken.set()

    for task in tasks:
        task.add_done_callback(one_ended)
    _wait(woken, timeout)
    return woken.is_set()


def create_task(call: Callable[[], T], *, name: str | None = None) -> Task[T]:
    """Start ``call()`` on a thread now and return its :class:`Task` (``asyncio.create_task``)."""
    return Task(call, name)


def wait_for(call: Callable[[], T] | Task[T], timeout: float | None) -> T:
    """Run ``call`` as a task and wait at most ``timeout`` seconds for its value
    (``asyncio.wait_for``). When time is up the task is cancelled and waited for, then
    :exc:`TimeoutError` is raised; if it finished meanwhile, its value is returned."""
    task = call if isinstance(call, Task) else create_task(call)
    try:
        if task.join(timeout):
            return task.result()
    except CancelledError:  # our own caller was cancelled: the task goes too
        task.cancel()
        raise
    task.cancel()
    task.join()  # its end, however long it takes to reach its next cancel point
    if task.cancelled():
        raise TimeoutError(f"no result within {timeout} s")
    return task.result()


class TaskGroup:
    """``asyncio.TaskGroup`` on threads (also anyio's task groups and trio's nurseries).

    ``with TaskGroup() as tg: tg.create_task(call)`` (or ``tg.start_soon(f, *args)``) runs
    each call on its own thread; leaving the block waits for all of them. When one raises,
    the others are cancelled and the errors are raised together as an ``ExceptionGroup``.
    When the block itself raises, the tasks are cancelled and waited for. ``cancel()``
    (also as ``tg.cancel_scope.cancel()``) cancels every task.
    """

    def __init__(self) -> None:
        self._tasks: list[Task[Any]] = []
        self._lock = threading.Lock()
        self._entered = False
        self._closed = False

    @property
    def cancel_scope(self) -> TaskGroup:
        return self  # anyio's tg.cancel_scope.cancel() and trio's nursery.cancel_scope.cancel()

    def __enter__(self) -> TaskGroup:
        if self._entered:
            raise RuntimeError("a TaskGroup is entered once")
        self._entered = True
        return self

    def create_task(self, call: Callable[[], T], *, name: str | None = None) -> Task[T]:
        with self._lock:
            if not self._entered or self._closed:
                raise RuntimeError("TaskGroup is not active: create tasks inside its with block")
            task = create_task(call, name=name)
            self._tasks.append(task)
        task.add_done_callback(self._on_task_done)
        return task

    def start_soon(self, function: Callable[..., Any], *args: Any, name: str | None = None) -> None:
        self.create_task(lambda: function(*args), name=name)

    def start(self, function: Callable[..., Any], *args: Any, name: str | None = None) -> Any:
        """anyio's and trio's ``start``: runs ``function(*args, task_status=...)`` as a task and
        returns once it calls ``task_status.started(value)``, with that value. A task that ends
        (or fails) before it says so raises here, as in anyio."""
        status = _TaskStatus()
        task = self.create_task(lambda: function(*args, task_status=status), name=name)
        task.add_done_callback(lambda _: status._ended.set())
        _wait(status._ended, None)  # a cancel point of the starting thread
        if status._started.is_set():
            return status._value
        error = task._error
        if error is not None and not isinstance(error, CancelledError):
            raise error
        raise RuntimeError("the task ended without calling task_status.started()")

    def _on_task_done(self, task: Task[Any]) -> None:
        if task._error is not None and not isinstance(task._error, CancelledError):
            self.cancel()  # one failed: the others stop (as asyncio's and anyio's)

    def cancel(self) -> None:
        with self._lock:
            tasks = list(self._tasks)
        for task in tasks:
            task.cancel()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if error is not None:
            self.cancel()
        cancelled: CancelledError | None = None
        while True:  # a task may create more tasks before it ends
            with self._lock:
                tasks = list(self._tasks)
            try:
                _wait_done(tasks, None)
            except CancelledError as e:  # the thread leaving the block was cancelled
                cancelled = e
                self.cancel()
                continue
            with self._lock:
                if len(self._tasks) == len(tasks):
                    self._closed = True
                    break
        errors = [t._error for t in tasks if t._error is not None and not isinstance(t._error, CancelledError)]
        if errors:
            body = [error] if isinstance(error, Exception) else []
            raise _group("unhandled errors in a TaskGroup", [*body, *errors])
        if cancelled is not None and error is None:
            raise cancelled


class _TaskStatus:
    """What :meth:`TaskGroup.start` hands its task as ``task_status``."""

    def __init__(self) -> None:
        self._started = threading.Event()
        self._ended = threading.Event()
        self._value: Any = None

    def started(self, value: Any = None) -> None:
        if self._started.is_set():
            raise RuntimeError("task_status.started() was called already")
        self._value = value
        self._started.set()
        self._ended.set()  # (wakes the waiting start())


def _group(message: str, errors: list[BaseException]) -> BaseException:
    """An ``ExceptionGroup`` (Python 3.11+, or the ``exceptiongroup`` backport on 3.10;
    without either, the first error)."""
    if sys.version_info >= (3, 11):
        return BaseExceptionGroup(message, errors)  # an ExceptionGroup when all are Exceptions
    try:
        from exceptiongroup import BaseExceptionGroup as backport  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return errors[0]
    return backport(message, errors)  # type: ignore[no-any-return]


def gather(*calls: Callable[[], Any] | Task[Any], return_exceptions: bool = False) -> list[Any]:
    """Run every call at once, each on its own thread, and return their results in order.

    As ``asyncio.gather``: with ``return_exceptions`` an exception is returned in its call's
    place; without, the first exception raised is raised here, as soon as it is raised (the
    other calls run on to their end, as gathered coroutines do when nothing cancels them).
    A :class:`Task` among the calls is waited for, not run again.
    """
    if not calls:
        return []
    if any(isinstance(c, Task) for c in calls):
        return _gather_tasks([c if isinstance(c, Task) else create_task(c) for c in calls], return_exceptions)
    pool = ThreadPoolExecutor(len(calls), thread_name_prefix="claude-sdkurl-gather")
    try:
        futures = [pool.submit(call) for call in calls if not isinstance(call, Task)]
        if not return_exceptions:
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)  # all done, or one failed
            failed = [f for f in futures if f in done and f.exception() is not None]
            if failed:
                raise failed[0].exception()  # type: ignore[misc]
        # Here every call has ended (exception() waits), without an error unless they are wanted.
        return [f.exception() if f.exception() is not None else f.result() for f in futures]
    finally:
        pool.shutdown(wait=False)


def _gather_tasks(tasks: list[Task[Any]], return_exceptions: bool) -> list[Any]:
    _wait_done(tasks, None, first_error=not return_exceptions)
    failed = [t._error for t in tasks if t.done() and t._error is not None]
    if failed and not return_exceptions:
        raise failed[0]
    return [t._error if t._error is not None else t._result for t in tasks]


_END = object()


async def iterate(items: Iterable[T]) -> AsyncIterator[T]:
    """``async for m in iterate(client.receive_response())``: a blocking iterator (the SDK's
    messages) read from async code, each ``next()`` on a worker thread. Leaving the loop early
    closes the iterator there too (a ``query()`` then stops its turn, as a ``break`` does)."""
    it = iter(items)
    try:
        while True:
            item = await asyncio.to_thread(next, it, _END)
            if item is _END:
                return
            yield item  # type: ignore[misc]
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            await asyncio.to_thread(close)


@contextlib.asynccontextmanager
async def entered(manager: Any) -> AsyncIterator[Any]:
    """``async with entered(ClaudeClient(options)) as client``: a blocking context manager
    (the SDK's client: connect, disconnect) used from async code, entered and left on a worker
    thread."""
    value = await asyncio.to_thread(manager.__enter__)
    try:
        yield value
    except BaseException:
        if not await asyncio.to_thread(manager.__exit__, *sys.exc_info()):
            raise
    else:
        await asyncio.to_thread(manager.__exit__, None, None, None)
