"""Faults the mock Messages API plays for one run, asked for by a request header.

A run (an eval's attempt, a test's query) that wants the model to misbehave sends
``x-claude-sdkurl-fault: <kind> <run id>`` with every API request; the CLI does so when its
environment has ``ANTHROPIC_CUSTOM_HEADERS`` set, which :func:`fault_env` builds::

    options = ClaudeAgentOptions(env={**offline_env(api.url, home), **fault_env("429")})

Every :class:`~claude_sdkurl.testing.MockMessagesAPI` honours the header before its script and
its responder, counting each run's requests apart (the run id), so concurrent runs with
different faults share one mock:

==========  ==========================================================================
``429``     the run's first two requests are rate limited (429, ``retry-after: 1``)
``5xx``     its first request answers 500, its second 529 (overloaded)
``slow``    every reply streams in 8-character pieces, 50 ms apart
==========  ==========================================================================
"""

from __future__ import annotations

import dataclasses
import threading
import uuid

HEADER = "x-claude-sdkurl-fault"
KINDS = ("429", "5xx", "slow")


def fault_env(kind: str, run_id: str | None = None, env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment that makes the CLI ask every request of this run for ``kind``: the
    ``ANTHROPIC_CUSTOM_HEADERS`` of ``env`` (if any) with the fault's header added."""
    if kind not in KINDS:
        raise ValueError(f"unknown fault {kind!r}: one of {', '.join(KINDS)}")
    return with_header(f"{HEADER}: {kind} {run_id or uuid.uuid4().hex}", env)


def with_header(line: str, env: dict[str, str] | None = None) -> dict[str, str]:
    """The ``ANTHROPIC_CUSTOM_HEADERS`` of ``env`` (if any) with the header ``line``
    (``"name: value"``) added: the CLI sends each of its lines with every API request."""
    earlier = (env or {}).get("ANTHROPIC_CUSTOM_HEADERS", "")
    return {"ANTHROPIC_CUSTOM_HEADERS": f"{earlier}\n{line}" if earlier else line}


@dataclasses.dataclass(frozen=True)
class Played:
    """What the mock does instead of (or to) a request's reply."""

    name: str
    status: int = 200  # not 200: answer this error instead of the reply
    error_type: str = ""
    retry_after: str | None = None
    delay: float = 0.0  # between streamed deltas
    chunk: int = 0  # characters per text delta (0: the reply's own)


class FaultBook:
    """Each run's requests so far, by run id; thread-safe (the mock serves requests on threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, int] = {}

    def play(self, headers: dict[str, str]) -> Played | None:
        value = next((v for k, v in headers.items() if k.lower() == HEADER), None)
        if value is None:
            return None
        kind, _, run = value.strip().partition(" ")
        with self._lock:
            nth = self._seen[run] = self._seen.get(run, 0) + 1
        if kind == "429" and nth <= 2:
            return Played("429", 429, "rate_limit_error", retry_after="1")
        if kind == "5xx" and nth <= 2:
            return Played("500", 500, "api_error") if nth == 1 else Played("529", 529, "overloaded_error")
        if kind == "slow":
            return Played("slow", delay=0.05, chunk=8)
        return None
