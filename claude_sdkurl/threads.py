"""Thread forms of ``asyncio`` helpers that ported programs call (``python -m claude_sdkurl.port``
writes calls to these; they are plain functions anyone may use).

:func:`gather` is ``asyncio.gather`` for calls instead of coroutines: each runs on a thread of
its own, all at once, and the results come back in argument order.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any

__all__ = ["gather"]


def gather(*calls: Callable[[], Any], return_exceptions: bool = False) -> list[Any]:
    """Run every call at once, each on its own thread, and return their results in order.

    As ``asyncio.gather``: with ``return_exceptions`` an exception is returned in its call's
    place; without, the first exception raised is raised here, as soon as it is raised (the
    other calls run on to their end, as gathered coroutines do when nothing cancels them).
    """
    if not calls:
        return []
    pool = ThreadPoolExecutor(len(calls), thread_name_prefix="claude-sdkurl-gather")
    try:
        futures = [pool.submit(call) for call in calls]
        if not return_exceptions:
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)  # all done, or one failed
            failed = [f for f in futures if f in done and f.exception() is not None]
            if failed:
                raise failed[0].exception()  # type: ignore[misc]
        # Here every call has ended (exception() waits), without an error unless they are wanted.
        return [f.exception() if f.exception() is not None else f.result() for f in futures]
    finally:
        pool.shutdown(wait=False)
