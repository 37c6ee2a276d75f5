"""The one place that knows how to call user code: a callback, a hook, a tool handler,
a session store's method. Each may be a plain function or an ``async def``.

Who calls in: the control handlers (``control``), the in-process MCP tools
(``mcp``), the session-store calls (``_engine.storecall``) and the store
conformance suite. This module imports nothing of ours.

Rules:

* :func:`call_user` calls ``fn(*args)`` on the calling thread. When the result
  is awaitable it is driven to its end on an event loop made for it alone,
  here when this thread runs no loop (our worker threads never do), else on a
  helper thread (a store function called from a Jupyter cell, whose thread
  does run one).
* :func:`in_thread` runs a function on a fresh daemon thread and hands back a
  :class:`~concurrent.futures.Future` of its outcome, for a caller that waits
  with a bound. User code cannot be cancelled: a call that never returns keeps
  its thread, never the caller.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio


def call_user(fn: Callable[..., Any], *args: Any, started: Callable[[asyncio.AbstractEventLoop, asyncio.Task[Any]], None] | None = None) -> Any:
    """``fn(*args)``, awaited to its value when it gives an awaitable (see the module doc).

    ``started`` is told the loop and the task an awaitable runs as, once both exist,
    so that another thread can cancel it (``loop.call_soon_threadsafe(task.cancel)``);
    a cancelled call raises :class:`asyncio.CancelledError`.
    """
    outcome = fn(*args)
    if not inspect.isawaitable(outcome):
        return outcome
    import asyncio  # here, not at the top: a program whose callbacks are plain never loads it (20 ms)

    async def settle() -> Any:
        task = asyncio.ensure_future(outcome)
        if started is not None:
            started(asyncio.get_running_loop(), task)
        return await task

    if not _loop_running_here():
        return asyncio.run(settle())
    return in_thread(lambda: asyncio.run(settle()), "claude-sdkurl-await").result()


def _loop_running_here() -> bool:
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def in_thread(fn: Callable[[], Any], name: str) -> Future[Any]:
    """Start ``fn`` on a new daemon thread named ``name``; the future gets its value or its
    exception (a ``BaseException`` too: whoever waits decides)."""
    future: Future[Any] = Future()

    def body() -> None:
        try:
            value = fn()
        except BaseException as raised:
            future.set_exception(raised)
        else:
            future.set_result(value)

    threading.Thread(target=body, name=name, daemon=True).start()
    return future
