"""Cooperative cancellation for threads (the ground floor under :mod:`claude_sdkurl.threads`).

A thread cannot be stopped from outside, so a cancelled task stops where it waits: each
thread run by a :class:`claude_sdkurl.threads.Task` has a :class:`Scope`; ``cancel()`` marks
it and wakes whatever the thread is waiting on, and the wait raises :exc:`CancelledError`.
The waits that look (the cancel points) are ``threads.sleep``, waiting for a task or a task
group, and reading messages (``for m in query(...)``, ``receive_messages/receive_response``).
Anywhere else, a cancel is seen at the next cancel point.

As in asyncio, a cancel is delivered once: after the :exc:`CancelledError` was raised, the
thread may catch it and wait again (to clean up) without being cancelled again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class CancelledError(BaseException):
    """A task was cancelled (``asyncio.CancelledError``'s counterpart).

    A ``BaseException``, as asyncio's: an ``except Exception`` does not swallow it.
    """


class Scope:
    """The cancel state of one thread's task."""

    __slots__ = ("_lock", "_pending", "_wakers", "requested")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending = False  # asked for and not yet raised
        self._wakers: list[Callable[[], None]] = []
        self.requested = False  # ever asked for

    def cancel(self) -> None:
        """Ask the thread to stop at its next cancel point, and wake its current wait."""
        with self._lock:
            self._pending = self.requested = True
            wakers = list(self._wakers)
        for wake in wakers:  # outside the lock: a waker may take locks of its own
            wake()

    def check(self) -> None:
        """Raise :exc:`CancelledError` if a cancel is pending (and mark it delivered)."""
        with self._lock:
            if not self._pending:
                return
            self._pending = False
        raise CancelledError()

    @contextmanager
    def waking(self, wake: Callable[[], None]) -> Iterator[None]:
        """While inside, a cancel also calls ``wake`` (which must end the wait at hand).

        Raises at once when a cancel is already pending, and on the way out when one
        came during the wait. Race: a cancel between the check and the wait still wakes
        it, since ``wake`` is registered before the check.
        """
        with self._lock:
            self._wakers.append(wake)
        try:
            self.check()
            yield
            self.check()
        finally:
            with self._lock:
                self._wakers.remove(wake)


_local = threading.local()


def current() -> Scope | None:
    """This thread's scope, or ``None`` outside a task (nothing is cancellable there)."""
    return getattr(_local, "scope", None)


def enter(scope: Scope | None) -> None:
    """Make ``scope`` this thread's (the task runner does it, at start and end)."""
    _local.scope = scope


def wait(event: threading.Event, timeout: float | None = None) -> bool:
    """``event.wait(timeout)``, a cancel point in a task. The event must be private to
    this wait: a cancel sets it to wake the waiter."""
    scope = current()
    if scope is None:
        return event.wait(timeout)
    with scope.waking(event.set):
        return event.wait(timeout)
