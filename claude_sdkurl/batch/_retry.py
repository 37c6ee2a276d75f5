"""How a run's end reads for retrying (a limit, a transient fault, the budget) and the
:class:`RetryPolicy` that says how long to wait."""

from __future__ import annotations

import dataclasses
import random
import time
from typing import Any

from .._errors import CLIConnectionError, CLINotFoundError, ExitedBeforeConnectingError, ProcessError, ResultError
from ..types import RateLimitEvent, ResultMessage, SystemMessage

def _limit_wait(message: SystemMessage) -> float | None:
    """How long the CLI will wait before retrying a rate-limited or overloaded request (its
    ``api_retry`` message), in seconds; ``None`` for any other message."""
    return _retry_delay(message.data) if message.subtype == "api_retry" else None


def _retry_delay(data: dict[str, Any]) -> float | None:
    """The wait an ``api_retry`` message's fields announce, in seconds, when it is a rate limit
    or overload; ``None`` otherwise. (Also read off the raw wire by evals' tap.)"""
    if data.get("error_status") not in _LIMIT_STATUSES:
        return None
    return float(data.get("retry_delay_ms") or 0) / 1000


def _crashed(error: BaseException) -> bool:
    """The CLI died by a signal, or its stream broke: worth another run. A missing CLI, a
    refused option, an error result or a CLI that exited with a status of its own is not."""
    if isinstance(error, (CLINotFoundError, ResultError)):
        return False
    if isinstance(error, ProcessError):
        return error.exit_code is None or error.exit_code < 0
    return isinstance(error, CLIConnectionError) and not isinstance(error, ExitedBeforeConnectingError)


_LIMIT_STATUSES = (429, 529)  # rate limited, overloaded
_TRANSIENT_STATUSES = (500, 502, 503, 504)


def _fullest_window(event: RateLimitEvent) -> dict[str, Any] | None:
    """The usage window of a rate-limit event nearest its limit, as
    ``{"window", "utilization", "resets_at"}`` (the CLI reports a subscriber's windows, from the
    API's ``anthropic-ratelimit-unified-*`` headers, in ``unifiedWindows``; measured on 2.1.330),
    or ``None`` when it reports none with a utilization and a reset time."""
    windows = event.rate_limit_info.raw.get("unifiedWindows")
    best: dict[str, Any] | None = None
    if isinstance(windows, dict):
        for name, window in windows.items():
            if not isinstance(window, dict):
                continue
            used, resets = window.get("utilization"), window.get("resetsAt")
            if isinstance(used, (int, float)) and isinstance(resets, (int, float)) and (best is None or used > best["utilization"]):
                best = {"window": str(name), "utilization": float(used), "resets_at": float(resets)}
    return best


def _fault_of(result: ResultMessage) -> str | None:
    """What an error result says about retrying: "limit", "transient", "budget" or ``None``."""
    if result.api_error_status in _LIMIT_STATUSES:
        return "limit"
    if result.api_error_status in _TRANSIENT_STATUSES:
        return "transient"
    if result.subtype == "error_max_budget_usd":
        return "budget"
    return None


@dataclasses.dataclass
class RetryPolicy:
    """How :func:`run_batch` meets rate limits, overload and transient faults.

    A limit (an item ends on a 429 or 529, or a rejected ``rate_limit_event``) pauses the whole
    batch: no item starts, and once the running ones have ended one probe (a limited item run
    again) decides when to go on. Probes wait ``first_wait`` seconds, doubling after each one
    limited again, with full jitter, never more than ``max_wait``; a ``retry-after`` hint (the
    delay a CLI said it would wait before it was released) is honoured where it is shorter than
    that. A reset time the CLI gave (a usage limit's ``resetsAt``) is waited for in full, however
    far: a probe before it would only spend a request. A batch paused for hours can be stopped
    (Ctrl-C: :class:`BatchStopped`) and resumed later from its checkpoint. A transient fault (an
    API 5xx, a CLI that crashed, a worker lost) runs that item again after the same kind of wait,
    at most ``max_retries`` times; then it fails, ``fault="transient"``. ``max_pauses`` bounds the
    probes of one pause (``None``: no bound); past it the limited items fail with ``fault="limit"``.
    A CLI that meets a limit with a short ``retry-after`` waits and retries by itself; once it
    says it will wait ``release_after`` seconds or more, its run is stopped and counts as limited
    (the CLI is released; the item runs again after the pause). ``None``: CLIs wait as they will.
    A usage window that an item's run saw at ``pause_before`` or more of its limit (0.95: 95 %;
    a subscriber's 5-hour or 7-day window, from the CLI's rate-limit events) holds the batch
    before the limit: no item starts until that window resets, the running ones finish.
    ``None``: only a refusal pauses.
    """

    first_wait: float = 1.0
    """Seconds before the first probe or retry; doubled after each one limited again, with jitter."""
    pause_before: float | None = 0.95
    """Hold the batch once a usage window reaches this share of its limit (0.95: 95 %); ``None``: only a refusal
    pauses."""
    max_wait: float = 60.0
    """The longest wait between probes, in seconds (a reset time the CLI gave is waited for in full)."""
    max_retries: int = 3
    """Runs again after a transient fault before the item fails with ``fault="transient"``."""
    max_pauses: int | None = None
    """Probes of one pause before the limited items fail with ``fault="limit"``; ``None``: no bound."""
    release_after: float | None = 5.0
    """Stop a run whose CLI says it will wait this many seconds or more for a limit, and count it as limited;
    ``None``: let CLIs wait."""
    continue_prompt: str = "Continue where you left off."
    """The prompt that resumes an item's session after a limit or fault."""

    def __post_init__(self) -> None:
        for name in ("first_wait", "max_wait"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and value >= 0):
                raise ValueError(f"RetryPolicy.{name} must be a number of seconds >= 0, not {value!r}")
        if not (isinstance(self.max_retries, int) and self.max_retries >= 0):
            raise ValueError(f"RetryPolicy.max_retries must be an int >= 0, not {self.max_retries!r}")
        if self.pause_before is not None and not (isinstance(self.pause_before, (int, float)) and 0 < self.pause_before <= 1):
            raise ValueError(f"RetryPolicy.pause_before must be None or a share of the limit in (0, 1], not {self.pause_before!r}")
        if self.max_pauses is not None and not (isinstance(self.max_pauses, int) and self.max_pauses > 0):
            raise ValueError(f"RetryPolicy.max_pauses must be None or an int > 0, not {self.max_pauses!r}")

    def wait(self, tries: int, resets_at: float | None = None, retry_after: float | None = None) -> float:
        """Seconds before try ``tries`` (1 = the first retry): until ``resets_at`` (epoch seconds)
        when that is still ahead, however far; else jittered doubling capped at ``max_wait``,
        and at least ``retry_after`` (seconds) where that is within the cap."""
        ceiling = min(self.max_wait, self.first_wait * 2 ** max(0, tries - 1))
        jittered = random.uniform(self.first_wait / 2, max(self.first_wait / 2, ceiling))
        until = resets_at - time.time() if resets_at is not None else 0.0
        if until > 0:
            return max(until, jittered / 4)
        if retry_after is not None and 0 < retry_after <= self.max_wait:
            return max(retry_after, jittered / 4)
        return jittered
