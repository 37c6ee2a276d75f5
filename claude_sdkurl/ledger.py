"""A cost ledger: what runs spend, by run, model, subagent and tool, readable while they go on.

::

    with CostLedger() as ledger:          # every run in this process while open, all threads
        run_batch(prompts, options)
    print(ledger.total_cost_usd)          # the CLI's own figures, summed
    ledger                                # a small table in a notebook

    with ClaudeClient(options) as client:
        ...
        client.ledger.by_model()          # a client's own ledger

Where the figures come from. The CLI reports cost in each ``ResultMessage``: ``total_cost_usd``
and ``model_usage`` (tokens and ``costUSD`` per model) are totals of the CLI process so far
(measured on 2.1.330: they grow turn by turn in one client), and of a resumed, forked or
continued session they start from what that session had cost before (2.1.330 carries it over).
So a run's cost is its latest result's total less what was carried in (read from the session's
transcript when the run starts: :mod:`claude_sdkurl._engine.carried`), and the ledger's total
is the sum over runs of that: what the runs spent, to the cent, each API call counted once
however often its session is resumed. Per model likewise, from ``model_usage``. Per turn, the
difference from the run's previous result.

Per subagent and per tool the CLI gives no cost; the ledger counts each API call's tokens from
the assistant messages (input and cache tokens at the call's start; output tokens from the
stream's final ``message_delta`` when ``include_partial_messages`` is on, else the count the
message carries, which is the stream's start count: 2.1.330 streams no events for a
subagent's calls, so theirs are always that) and gives each the share of its model's cost that its tokens are of that
model's tokens (``estimated``); a call's share is split evenly among the tools it asked for.
While a turn runs (before its result), tokens grow and cost is that of the results so far.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from ._engine import observe
from ._engine.carried import NOTHING, Carried
from .types import AssistantMessage, ResultMessage, StreamEvent, SystemMessage, ToolUseBlock

__all__ = ["CostLedger", "RunCost"]

MAIN = "main"  # the subagent key of the main conversation


def _money(usd: float) -> float:
    """Dollars as a person reads them: sums and differences of the CLI's figures rounded to 12
    places (0.1 + 0.2 shows as 0.3, not 0.30000000000000004), far below any price's step."""
    return round(usd, 12)

# ledgers open with ``with``: every run in the process feeds them (the engine's registry)
_active = observe.EVERY_RUN
_active_lock = observe.EVERY_RUN_LOCK


@dataclass
class _Call:
    """One API call (one assistant message id) of a run."""

    model: str
    subagent: str
    tools: list[str] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class RunCost:
    """One run (a ``query()``, or one client's CLI) as the ledger sees it."""

    session_id: str | None = None
    """The run's session."""
    cost_usd: float = 0.0
    """What this run spent so far: the CLI's total less what was carried in."""
    turns: list[float] = field(default_factory=list)
    """The cost of each turn (differences of the totals)."""
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The CLI's ``model_usage``, latest, less what was carried in."""
    carried: Carried = NOTHING
    """What the session had cost before this run (resumed, forked, continued)."""
    calls: dict[str, _Call] = field(default_factory=dict)
    """Each model call (an assistant message id): model, subagent, tools, tokens."""
    _open_stream: dict[str, str] = field(default_factory=dict)  # subagent -> message id being streamed


class CostLedger:
    """Cost and tokens of runs; thread-safe. See the module doc for what each figure means."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[int, RunCost] = {}

    # ------------------------------------------------------------------ collection

    def __enter__(self) -> CostLedger:
        with _active_lock:
            _active.append(self)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        with _active_lock:
            if self in _active:
                _active.remove(self)

    def record(self, run: int, message: Any, carried: Carried | None = None) -> None:
        """Count ``message`` of the run ``run`` (any key unique to that run); ``carried``: what
        the run's session had cost before it (the CLI's totals include it)."""
        with self._lock:
            entry = self._runs.get(run)
            if entry is None:
                entry = self._runs[run] = RunCost()
            if carried is not None:
                entry.carried = carried
            _count(entry, message)

    # ------------------------------------------------------------------ reading

    @property
    def runs(self) -> list[RunCost]:
        with self._lock:
            return list(self._runs.values())

    @property
    def total_cost_usd(self) -> float:
        """The CLI's own totals, summed over runs."""
        return _money(sum(r.cost_usd for r in self.runs))

    def by_model(self) -> dict[str, dict[str, float]]:
        """Per model: ``cost_usd`` and tokens, the CLI's own figures summed over runs."""
        out: dict[str, dict[str, float]] = {}
        for run in self.runs:
            for model, usage in run.models.items():
                row = out.setdefault(model, {"cost_usd": 0.0, "input_tokens": 0, "output_tokens": 0,
                                             "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0})  # fmt: skip
                row["cost_usd"] += float(usage.get("costUSD") or 0.0)
                row["input_tokens"] += int(usage.get("inputTokens") or 0)
                row["output_tokens"] += int(usage.get("outputTokens") or 0)
                row["cache_read_input_tokens"] += int(usage.get("cacheReadInputTokens") or 0)
                row["cache_creation_input_tokens"] += int(usage.get("cacheCreationInputTokens") or 0)
        for row in out.values():
            row["cost_usd"] = _money(row["cost_usd"])
        return out

    def by_subagent(self) -> dict[str, dict[str, float]]:
        """Per subagent (the ``parent_tool_use_id`` of its messages; ``"main"`` for the main
        conversation): API calls, tokens, and the estimated share of cost."""
        return self._shares(lambda call: [(call.subagent, 1.0)])

    def by_tool(self) -> dict[str, dict[str, float]]:
        """Per tool name: the API calls that asked for it, and their estimated cost (a call's
        share split evenly among the tools it asked for)."""
        return self._shares(lambda call: [(t, 1.0 / len(call.tools)) for t in call.tools])

    def _shares(self, keys: Any) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for run in self.runs:
            tokens_by_model: dict[str, int] = {}
            for call in run.calls.values():
                tokens_by_model[call.model] = tokens_by_model.get(call.model, 0) + call.input_tokens + call.output_tokens
            for call in run.calls.values():
                model_cost = float((run.models.get(call.model) or {}).get("costUSD") or 0.0)
                total = tokens_by_model.get(call.model) or 0
                share = model_cost * (call.input_tokens + call.output_tokens) / total if total else 0.0
                for key, weight in keys(call):
                    row = out.setdefault(key, {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0})
                    row["calls"] += weight
                    row["input_tokens"] += call.input_tokens * weight
                    row["output_tokens"] += call.output_tokens * weight
                    row["cost_usd"] += share * weight
        for row in out.values():
            row["cost_usd"] = _money(row["cost_usd"])
        return out

    # ------------------------------------------------------------------ display

    def _rows(self) -> list[tuple[str, str, float, int, int]]:
        rows = [("model", m, r["cost_usd"], int(r["input_tokens"] + r["cache_read_input_tokens"] + r["cache_creation_input_tokens"]),
                 int(r["output_tokens"])) for m, r in sorted(self.by_model().items())]  # fmt: skip
        rows += [("subagent", k, r["cost_usd"], int(r["input_tokens"]), int(r["output_tokens"])) for k, r in sorted(self.by_subagent().items())]
        rows += [("tool", k, r["cost_usd"], int(r["input_tokens"]), int(r["output_tokens"])) for k, r in sorted(self.by_tool().items())]
        return rows

    def __repr__(self) -> str:
        lines = [f"CostLedger: ${self.total_cost_usd:.4f} over {len(self.runs)} run(s)"]
        lines += [f"  {kind:<8} {name:<32} ${cost:.4f}  in {tin}  out {tout}" for kind, name, cost, tin, tout in self._rows()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html  # a notebook's display only

        cells = "".join(
            f"<tr><td>{kind}</td><td>{html.escape(name)}</td><td style='text-align:right'>${cost:.4f}</td>"
            f"<td style='text-align:right'>{tin}</td><td style='text-align:right'>{tout}</td></tr>"
            for kind, name, cost, tin, tout in self._rows()
        )
        return (
            f"<table><caption>Cost: ${self.total_cost_usd:.4f} over {len(self.runs)} run(s) "
            "(per subagent and tool: estimated shares)</caption>"
            "<tr><th>by</th><th></th><th>cost</th><th>input tokens</th><th>output tokens</th></tr>"
            f"{cells}</table>"
        )


def _count(run: RunCost, message: Any) -> None:
    if isinstance(message, SystemMessage) and message.subtype == "init":
        run.session_id = message.data.get("session_id") or run.session_id
    elif isinstance(message, AssistantMessage):
        key = message.message_id or f"anon-{len(run.calls)}"
        subagent = message.parent_tool_use_id or MAIN
        call = run.calls.get(key)
        if call is None:  # one API call may come as several messages (one per content block)
            call = run.calls[key] = _Call(model=message.model, subagent=subagent)
            usage = message.usage or {}
            call.input_tokens = int(usage.get("input_tokens") or 0) + int(usage.get("cache_read_input_tokens") or 0) + int(
                usage.get("cache_creation_input_tokens") or 0
            )
            call.output_tokens = max(call.output_tokens, int(usage.get("output_tokens") or 0))
        call.tools += [b.name for b in message.content if isinstance(b, ToolUseBlock)]
    elif isinstance(message, StreamEvent):
        event = message.event or {}
        subagent = message.parent_tool_use_id or MAIN
        if event.get("type") == "message_start":
            run._open_stream[subagent] = (event.get("message") or {}).get("id") or ""
        elif event.get("type") == "message_delta":
            output = (event.get("usage") or {}).get("output_tokens")
            call = run.calls.get(run._open_stream.get(subagent, ""))
            if output is not None and call is not None:  # (the message comes before its delta: measured)
                call.output_tokens = int(output)  # the stream's final count for this call
    elif isinstance(message, ResultMessage):
        run.session_id = message.session_id or run.session_id
        spent = run.carried.spent(message.total_cost_usd)
        if spent is not None:
            run.turns.append(_money(spent - run.cost_usd))
            run.cost_usd = _money(spent)
        if message.model_usage:
            run.models = run.carried.model_spent(message.model_usage) or {}


def feed(ledgers: list[CostLedger], run: int, message: Any, carried: Carried | None = None) -> None:
    """Give ``message`` to each ledger in ``ledgers`` and to every ledger open with ``with``."""
    observe.count(list(ledgers), run, message, carried)
