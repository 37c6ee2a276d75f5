"""What areas add to a run, as the engine sees it: the shapes it calls, and the one registry.

The engine imports no area. A run's spans (:class:`claude_sdkurl.tracing.RunTrace`) and the
ledgers that count it (:class:`claude_sdkurl.ledger.CostLedger`) are handed to a session by the
public face that made them (``query()``, a client, a pool), or, for a ledger open with ``with``,
registered here for every run of the process (:data:`EVERY_RUN`); the session calls them by
the shapes below. Neither may break a run: a counter's failure is swallowed.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .carried import Carried


class Trace(Protocol):
    """A run's spans (``tracing.RunTrace``)."""

    @property
    def parent_span(self) -> Any: ...

    def launching(self) -> AbstractContextManager[None]: ...

    def carry(self, carried: Any) -> None: ...

    def observe(self, message: Any) -> None: ...

    def callback(self, subtype: str, request: dict[str, Any]) -> AbstractContextManager[Any]: ...


class Counter(Protocol):
    """Something that counts what runs spend (``ledger.CostLedger``); ``run`` is a key unique to
    the run for the process's life."""

    def record(self, run: int, message: Any, carried: Carried | None = None) -> None: ...


EVERY_RUN: list[Counter] = []  # counters every run of the process feeds (a ledger open with ``with``)
EVERY_RUN_LOCK = threading.Lock()


def counting(counters: list[Counter]) -> bool:
    """Whether a run with ``counters`` of its own has anything to feed."""
    return bool(counters or EVERY_RUN)


def count(counters: list[Counter], run: int, message: Any, carried: Carried | None = None) -> None:
    """Give ``message`` to each of ``counters`` and to every counter in :data:`EVERY_RUN`."""
    for counter in [*counters, *EVERY_RUN]:
        try:
            counter.record(run, message, carried)
        except Exception:  # a counter never breaks a run
            pass
