"""What the public faces (``query``, the client, the spare pool) share about how their objects
are used and let go. Imports only the ground (``_errors``).

* :class:`Messages`: the iterator ``query()`` and a client's ``receive_*`` methods return. A
  plain iterator (``for``, ``next()``, ``.close()``, ``with``); ``async for`` over it and
  ``await`` on it raise :class:`~claude_sdkurl.NotAsyncError` saying what to write instead
  (the official SDK's forms; Python's own ``TypeError`` says nothing of this package).
  One made with ``made_at`` (a query's) that is collected after it started and before its end
  stops its CLI, as its ``finally`` always did, and says so with a ``ResourceWarning``.
* :func:`sync_only`: a method whose call, when the caller awaits it (``await client.query(...)``
  in an ``async def``), raises :class:`~claude_sdkurl.NotAsyncError` before doing anything. The
  caller's next instruction is read (``GET_AWAITABLE``), so the same call without ``await`` in an
  ``async def`` runs as anywhere.
* :func:`made_at` and :func:`warn_collected`: where an object was made (the first frame outside
  this package) and the ``ResourceWarning`` of one collected while its CLI runs (as
  ``subprocess.Popen`` and files warn), for a query, a client and a spare pool. A client's and a
  pool's CLIs are then stopped on a thread of their own (``claude-sdkurl-collected``): the
  collector may run inside any code, holding any lock a close would take.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import warnings
from collections.abc import Callable, Generator, Iterator
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from .._errors import PORTING_HINT, NotAsyncError

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # claude_sdkurl/
_CO_ASYNC = 0x80 | 0x100 | 0x200  # CO_COROUTINE, CO_ITERABLE_COROUTINE, CO_ASYNC_GENERATOR


def made_at() -> str:
    """``file:line`` of the first caller outside this package (where the user made the object)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
    return f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else "an unknown place"


def warn_collected(what: str, where: str, instead: str, stop: Callable[[], None], *, here: bool = False) -> None:
    """``what`` (made at ``where``) was collected while its CLI ran: a ``ResourceWarning`` that
    says so and what to write (``instead``), then ``stop()``: on a thread of its own, or with
    ``here`` on this one. Never raises (it runs in ``__del__``)."""
    try:
        warnings.warn(f"{what} made at {where} was not closed: its Claude Code CLI is stopped now. {instead}",
                      ResourceWarning, stacklevel=2)  # fmt: skip
    except Exception:  # pragma: no cover - at interpreter exit the warnings machinery may be gone
        pass
    if not here:
        try:
            threading.Thread(target=_quietly, args=(stop,), name="claude-sdkurl-collected", daemon=True).start()
            return
        except RuntimeError:  # interpreter shutdown: no new threads
            pass
    _quietly(stop)


def _quietly(stop: Callable[[], None]) -> None:
    try:
        stop()
    except Exception:  # pragma: no cover - best effort: nobody is left to tell
        pass


def _suspended(gen: Any) -> bool:
    """Started and not finished (neither closed nor running now)."""
    if gen.gi_frame is None or gen.gi_running:
        return False
    suspended = getattr(gen, "gi_suspended", None)  # Python 3.11+
    return bool(suspended) if suspended is not None else gen.gi_frame.f_lasti != -1


class Messages(Iterator[T]):
    """An iterator over a run's messages (see the module doc)."""

    __slots__ = ("_gen", "_form", "_made_at")

    def __init__(self, gen: Generator[T, None, None], form: str, made_at: str | None = None) -> None:
        self._gen = gen
        self._form = form  # how the loop is written: "query(...)", "client.receive_response()"
        self._made_at = made_at

    def __iter__(self) -> Messages[T]:
        return self

    def __next__(self) -> T:
        return next(self._gen)

    def close(self) -> None:
        """Stop early (a query stops its CLI, interrupting a turn under way; see ``query()``)."""
        self._gen.close()

    def __enter__(self) -> Messages[T]:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_made_at", None) is None or not _suspended(self._gen):
            return
        warn_collected(self._form.replace("(...)", "()"), str(self._made_at),
                       f"Read it to its end, call .close(), or write `with {self._form} as messages:`.",
                       self._gen.close, here=True)  # fmt: skip

    if not TYPE_CHECKING:  # (type checkers keep telling these forms apart from the right ones)

        def __aiter__(self) -> Any:
            raise NotAsyncError(f"{self._form} is a plain iterator in claude_sdkurl: write `for message in {self._form}:` "
                                f"(no async for). {PORTING_HINT}.")  # fmt: skip

        def __await__(self) -> Any:
            raise NotAsyncError(f"{self._form} is a plain iterator in claude_sdkurl, nothing to await: write "
                                f"`for message in {self._form}:`. {PORTING_HINT}.")  # fmt: skip


_awaited_at: dict[tuple[Any, int], bool] = {}  # (code, instruction) -> whether its call is awaited


def _result_awaited(frame: FrameType) -> bool:
    """Whether the call ``frame`` is making now is awaited: its next instruction is ``GET_AWAITABLE``."""
    key = (frame.f_code, frame.f_lasti)
    known = _awaited_at.get(key)
    if known is None:
        import dis  # only for calls from an ``async def``

        known = False
        instructions = iter(dis.get_instructions(frame.f_code))
        for instruction in instructions:
            if instruction.offset == frame.f_lasti:
                following = next(instructions, None)
                known = following is not None and following.opname == "GET_AWAITABLE"
                break
        if len(_awaited_at) >= 512:
            _awaited_at.clear()
        _awaited_at[key] = known
    return known


def sync_only(method: Callable[P, R]) -> Callable[P, R]:
    """``method``, which raises :class:`~claude_sdkurl.NotAsyncError` when its call is awaited
    (see the module doc); signature, name and docstring kept."""
    owner, _, name = method.__qualname__.rpartition(".")
    call = f"{owner[:1].lower()}{owner[1:]}.{name}(...)" if owner != "ClaudeClient" else f"client.{name}(...)"

    @functools.wraps(method)
    def sync(*args: P.args, **kwargs: P.kwargs) -> R:
        caller = sys._getframe(1)
        if caller.f_code.co_flags & _CO_ASYNC and _result_awaited(caller):
            raise NotAsyncError(f"{method.__qualname__}() is synchronous in claude_sdkurl: call `{call}` without await. "
                                f"{PORTING_HINT}.")  # fmt: skip
        return method(*args, **kwargs)

    return sync
