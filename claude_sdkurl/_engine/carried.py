"""What a resumed session has already cost: the CLI carries it into the new run's figures.

Measured on 2.1.330: after each turn the CLI appends a ``cost-state`` entry to the session's
transcript (``totalCostUSD`` and ``modelUsage``, running totals of the session), and a CLI that
resumes a session, forks it or continues it starts its own totals from the last such entry of
the session it loads. So a resumed run's ``ResultMessage.total_cost_usd`` and ``model_usage``
include what earlier runs spent; what this run spent is the difference from the figures read
here. They are read at the run's ``init`` (a continued session's id is known only then), but
only as much of each transcript as there was before the CLI started (:func:`sizes_before`, in
the launch plan): by the time a lagging reader gets to ``init`` the CLI may have finished the
turn and appended this run's own totals, which read as the carried ones made the run free.
(2.1.120 writes no ``cost-state`` entry and carries nothing: the figures are zero.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .paths import transcripts_in

_MARK = b'"cost-state"'


@dataclass(frozen=True)
class Carried:
    """A session's running totals as a CLI resuming it starts from."""

    cost_usd: float = 0.0
    model_usage: dict[str, dict[str, float]] = field(default_factory=dict)  # model -> numeric fields

    def spent(self, total: float | None) -> float | None:
        """What a run spent, from the CLI's running total."""
        return None if total is None else max(0.0, total - self.cost_usd)

    def model_spent(self, model_usage: dict[str, Any] | None) -> dict[str, dict[str, Any]] | None:
        """The CLI's ``model_usage`` less what was carried: numeric fields as differences,
        the others as the CLI gave them."""
        if model_usage is None:
            return None
        out: dict[str, dict[str, Any]] = {}
        for model, usage in model_usage.items():
            before = self.model_usage.get(model, {})
            row = dict(usage) if isinstance(usage, dict) else {}
            for key, value in row.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and key in before:
                    row[key] = type(value)(max(0, value - before[key]))  # an int stays an int
            out[model] = row
        return out


NOTHING = Carried()

# Fields of modelUsage that are running totals (the others, such as contextWindow, are not).
_TOTALS = ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheCreationInputTokens", "webSearchRequests",
           "costUSD", "thinkingTokens", "cacheCreationEphemeral5mInputTokens", "cacheCreationEphemeral1hInputTokens")  # fmt: skip


def sizes_before(projects_dir: str | Path | None, session_id: str | None) -> dict[str, int]:
    """The size of each transcript a CLI about to resume ``session_id`` (``None``: to continue
    the latest session, so any) may load, taken before it starts. The session reads what was
    carried only at the run's ``init``, and a reader that lags (a busy machine) can come to it
    after the CLI has finished the turn and appended this run's own ``cost-state``: read to
    these sizes, the file is what the CLI found."""
    if projects_dir is None:
        return {}
    paths = transcripts_in(projects_dir, session_id) if session_id is not None else Path(projects_dir).glob("*/*.jsonl")
    sizes = {}
    for path in paths:
        try:
            sizes[str(path)] = path.stat().st_size
        except OSError:
            continue
    return sizes


def carried(projects_dir: str | Path | None, session_id: str | None, before: dict[str, int] | None = None) -> Carried:
    """The last ``cost-state`` of session ``session_id`` under the CLI's ``projects_dir`` (any
    project), or :data:`NOTHING` when there is none or it cannot be read. ``before``: the
    transcripts' sizes when the CLI started (:func:`sizes_before`): only that much of each is
    read, and one made since (a new session's) carried nothing."""
    if projects_dir is None:
        return NOTHING
    for path in transcripts_in(projects_dir, session_id):
        if before is not None and str(path) not in before:
            continue
        try:
            with open(path, "rb") as f:
                data = f.read(before[str(path)]) if before is not None else f.read()
        except OSError:
            continue
        return _last_cost_state(data)
    return NOTHING


def _last_cost_state(data: bytes) -> Carried:
    at = len(data)
    while True:
        hit = data.rfind(_MARK, 0, at)
        if hit < 0:
            return NOTHING
        start = data.rfind(b"\n", 0, hit) + 1
        end = data.find(b"\n", hit)
        try:
            entry = json.loads(data[start : end if end >= 0 else len(data)])
        except ValueError:
            at = start  # a torn or odd line: look further up
            continue
        if isinstance(entry, dict) and entry.get("type") == "cost-state":
            return _of(entry)
        at = start


def _of(entry: dict[str, Any]) -> Carried:
    cost = entry.get("totalCostUSD")
    usage = entry.get("modelUsage") if isinstance(entry.get("modelUsage"), dict) else {}
    models = {
        str(model): {k: float(v) for k, v in row.items() if k in _TOTALS and isinstance(v, (int, float)) and not isinstance(v, bool)}
        for model, row in (usage or {}).items()
        if isinstance(row, dict)
    }
    return Carried(float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else 0.0, models)
