"""One run of a task on a target: what happened, and what the checks said of it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ..types import Message


@dataclasses.dataclass
class Attempt:
    """One run of a task on a target: what happened and what the checks said."""

    task: str
    """The task's name."""
    target: str
    """The target's name."""
    run: int
    """Which run of the task on the target (0 for the first)."""
    passed: bool = False
    """Every check passed and the run had no error."""
    prompt: str = ""
    """The prompt sent."""
    failures: list[str] = dataclasses.field(default_factory=list)
    """Each failed check's line."""
    error: str | None = None
    """``"TypeName: text"`` when the run failed to run or ended in an error result (the checks still ran)."""
    cost_usd: float = 0.0
    """What the attempt cost, the CLI's own figures, every session of it."""
    judge_cost_usd: float = 0.0
    """What a model judge's verdicts on it cost (``checks.judge``), apart."""
    unreported: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    """Model calls answered to a CLI that ended before a result reported their cost (a killed CLI):
    ``[{"model", "usage"}]``."""
    unreported_cost_usd: float = 0.0
    """Their cost, at the rate the CLI charged for that model in the eval's other runs (in ``cost_usd`` too;
    0.0 while no run of that model reported a rate)."""
    turns: int | None = None
    """Agent turns of its last result."""
    seconds: float = 0.0
    """Time it took."""
    text: str = ""
    """The answer's text (the last result's)."""
    tool_calls: list[tuple[str, dict[str, Any]]] = dataclasses.field(default_factory=list)
    """Each tool call: ``(tool, input)``."""
    decisions: list[tuple[str, dict[str, Any], str]] = dataclasses.field(default_factory=list)
    """Each ``can_use_tool`` answer: ``(tool, input, behavior)``."""
    hooks: list[str] = dataclasses.field(default_factory=list)
    """The hook events the program's callbacks ran for."""
    models: list[str] = dataclasses.field(default_factory=list)
    """The models that answered the main conversation."""
    session_ids: list[str] = dataclasses.field(default_factory=list)
    """The sessions it ran."""
    limited: bool = False
    """Its CLI was released from a long rate-limit wait (the attempt runs again)."""
    tries: int = 1
    """Runs of this attempt: a run a rate limit cut short is run again afresh."""
    stopped: str | None = None
    """``"budget"``: stopped at its share of the eval's ``max_total_cost_usd``, or never started once that was
    spent: not measured (its cell counts it apart, not as a run that failed)."""
    workspace: Path = Path()
    """The folder it ran in."""
    messages: list[Message] = dataclasses.field(default_factory=list, repr=False)
    """Every message of the run; not kept on disk."""
    model_env: dict[str, str] = dataclasses.field(default_factory=dict, repr=False)
    """A model tape's environment while the run has one (its checks' model calls use it too: a judge's verdicts
    are on the tape); not kept on disk."""

    def record(self) -> dict[str, Any]:
        """The attempt as a JSON-able dict (what a scorecard's JSONL keeps: no messages)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ("messages", "workspace", "model_env")}
        out["tool_calls"] = [list(c) for c in self.tool_calls]
        out["decisions"] = [list(d) for d in self.decisions]
        return out

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Attempt:
        known = {f.name for f in dataclasses.fields(cls)}
        data = {k: v for k, v in record.items() if k in known}
        data["tool_calls"] = [tuple(c) for c in data.get("tool_calls", [])]
        data["decisions"] = [tuple(d) for d in data.get("decisions", [])]
        return cls(**data)
