"""The one place that knows how to call a :class:`~claude_sdkurl.types.SessionStore`.

A store is user code: its methods may be plain or ``async def`` (both are run
through :func:`claude_sdkurl._engine.usercode.call_user`), its optional methods may
be missing or left as the protocol's stubs, and it may hang. Three ways to call:

* :func:`call` waits as long as the store takes (the helper functions do, as
  the official ones do);
* :func:`call_bounded` waits at most a given time on a helper thread and raises
  :class:`StoreTimeout` past it (the mirror); the hung call keeps its thread;
* :func:`call_for_resume` is :func:`call_bounded` with the errors a resume from
  a store reports (:class:`~claude_sdkurl.SessionStoreError`, texts as the
  official SDK words them).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from typing import Any

from . import trace as _trace
from .._errors import SessionStoreError
from .usercode import call_user, in_thread
from ..types import SessionStore


@contextmanager
def _traced(method: Any, args: tuple[Any, ...]) -> Iterator[None]:
    """A span around a store call in this thread when tracing is on (nothing otherwise)."""
    tracer = _trace.tracer()
    if tracer is None:
        yield
        return
    key = args[0] if args and isinstance(args[0], dict) else {}
    attributes = {
        "openinference.span.kind": "CHAIN",
        "claude_sdkurl.store.method": getattr(method, "__name__", str(method)),
        "claude_sdkurl.store.class": type(getattr(method, "__self__", None)).__name__,
        "session.id": key.get("session_id"),
        "claude_sdkurl.store.project_key": key.get("project_key"),
        "claude_sdkurl.store.entries": len(args[1]) if len(args) > 1 and isinstance(args[1], list) else None,
    }
    with _trace.span(tracer, f"claude_sdkurl.store.{getattr(method, '__name__', 'call')}", attributes):
        yield


def call(method: Any, *args: Any) -> Any:
    """``method(*args)`` here, as long as it takes (a span around it when tracing is on)."""
    with _traced(method, args):
        return call_user(method, *args)


def implements(store: Any, method: str) -> bool:
    """Whether ``store`` has ``method`` of its own, not the protocol's stub that raises
    ``NotImplementedError``."""
    if getattr(store, method, None) is None:
        return False
    return getattr(type(store), method, None) is not getattr(SessionStore, method, None)


class StoreTimeout(Exception):
    """A bounded store call was still running when its time was up."""


def call_bounded(seconds: float, method: Any, *args: Any) -> Any:
    """``method(*args)`` on a helper thread, waited for at most ``seconds`` (the span, when
    tracing is on, is this thread's: it ends when the wait does)."""
    with _traced(method, args):
        pending = in_thread(lambda: call_user(method, *args), "claude-sdkurl-store-call")
        try:
            return pending.result(seconds)
        except FutureTimeout:
            if pending.done():  # the store raised a TimeoutError of its own: its error, not a hang
                raise
            raise StoreTimeout() from None


def call_for_resume(seconds: float, what: str, method: Any, *args: Any) -> Any:
    """:func:`call_bounded` while a session is brought back from the store: any failure is a
    :class:`SessionStoreError` naming ``what``."""
    try:
        return call_bounded(seconds, method, *args)
    except StoreTimeout:
        raise SessionStoreError(f"{what} timed out after {int(seconds * 1000)}ms during resume materialization") from None
    except Exception as error:
        raise SessionStoreError(f"{what} failed during resume materialization: {error}") from error
