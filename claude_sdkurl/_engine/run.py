"""When is a run over? The official SDK's end-of-input rules, sans I/O.

A ``result`` ends one turn, not necessarily the run: on current CLIs an
``Agent`` subagent runs in the background, and its completion wakes the main
agent for a follow-up turn with a second ``result``. The SDK must keep reading
(and, when callbacks may still be asked, keep the CLI's input open) until the
run is over. :class:`RunTracker` mirrors the official ``Query`` bookkeeping:

* the CLI's ``session_state_changed`` frames (asked for with
  ``CLAUDE_CODE_SDK_READS_SESSION_STATE=1``; the ones marked ``sdk_host_only``
  are hidden from the user): ``idle`` after a result ends the run;
* without them (CLI 2.1.120), a result with no tracked agent task in flight
  ends it; ``task_started`` of an agent/workflow task tracks it,
  ``task_notification`` or a terminal ``task_updated`` clears it;
* a ceiling (``CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS``, default 10 min, 0 = none)
  ends a run whose CLI still says "running" with no new turn after a result.

The tracker does no I/O and keeps no clock: it reports what changed through
:meth:`take_effects` (``"ended"``, ``"reopened"``, ``("arm", generation)``,
``"clear"``) and the session owns the event and the timer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..types import TERMINAL_TASK_STATUSES

DEFERRING_TASK_TYPES = frozenset({"local_agent", "local_workflow"})
CEILING_ENV = "CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS"
DEFAULT_CEILING_MS = 600_000
_MAX_CEILING_MS = 2**31 - 1


def ceiling_ms(options_env: Mapping[str, str]) -> int:
    """``CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS`` as the CLI will see it (``options.env`` wins)."""
    raw = options_env.get(CEILING_ENV, os.environ.get(CEILING_ENV))
    if raw is None:
        return DEFAULT_CEILING_MS
    try:
        value = int(raw)
    except (TypeError, ValueError):
        return DEFAULT_CEILING_MS
    return min(value, _MAX_CEILING_MS) if value >= 0 else DEFAULT_CEILING_MS


class RunTracker:
    """The state of one run, fed every non-control message dict from the CLI.

    Args:
        bidirectional: callbacks (hooks, ``can_use_tool``, SDK MCP servers) may
            still be asked, so input must stay open until the run is over.
        ceiling_ms: see :func:`ceiling_ms`.
    """

    def __init__(self, bidirectional: bool = False, ceiling_ms: int = DEFAULT_CEILING_MS) -> None:
        self.bidirectional = bidirectional
        self.ceiling_ms = ceiling_ms
        self.session_state: Any = None
        self.result_received = False
        self.turn_in_progress = False
        self.tasks: set[str] = set()
        self.ended = False
        self.final = False
        self.ceiling_generation = 0
        self.last_error_result: dict[str, Any] | None = None
        self._armed = False
        self._effects: list[Any] = []

    def take_effects(self) -> list[Any]:
        effects, self._effects = self._effects, []
        return effects

    # ------------------------------------------------------------------ input

    def observe(self, data: dict[str, Any]) -> bool:
        """Account for one message; ``True`` if it must not reach the user."""
        kind = data.get("type")
        if kind == "system":
            had_tasks = bool(self.tasks)
            self._track_task(data)
            if had_tasks and not self.tasks:
                self._rearm_between_turns()
            if data.get("subtype") == "session_state_changed":
                self._on_state(data.get("state"))
                return data.get("sdk_host_only") is True
        if kind == "result":
            self.result_received = True
            self.turn_in_progress = False
            if self.session_state in (None, "idle") or not self.bidirectional:
                self._maybe_end()
            elif self.session_state != "requires_action":
                self._arm_ceiling()
            self.last_error_result = data if data.get("is_error") else None
        else:  # (state frames returned above: they leave the last error result alone)
            self.last_error_result = None
            if kind in ("assistant", "stream_event") and data.get("parent_tool_use_id") is None:
                self.turn_in_progress = True
                self._reopen()
                self._clear_ceiling()
        return False

    def prompt_sent(self) -> None:
        """A user prompt went out: it owes a run of its own, result included."""
        self._reopen()
        self.result_received = False
        self._clear_ceiling()

    def ceiling_fired(self, generation: int) -> None:
        if generation != self.ceiling_generation or self.tasks:
            return
        self._end()

    def finish(self) -> None:
        """Input is closed or the stream is over: the run stays ended."""
        self.final = True
        self._clear_ceiling()
        self._end()

    # ------------------------------------------------------------------ rules

    def _track_task(self, data: dict[str, Any]) -> None:
        subtype = data.get("subtype")
        task_id = data.get("task_id")
        if not task_id or not isinstance(task_id, str):
            return
        if subtype == "task_started":
            if data.get("task_type") in DEFERRING_TASK_TYPES:
                self.tasks.add(task_id)
        elif subtype == "task_notification":
            self.tasks.discard(task_id)
        elif subtype == "task_updated":
            patch = data.get("patch")
            if isinstance(patch, dict) and patch.get("status") in TERMINAL_TASK_STATUSES:
                self.tasks.discard(task_id)

    def _on_state(self, state: Any) -> None:
        self.session_state = state
        if state == "idle":
            if self.result_received:
                self._maybe_end()
            return
        self._reopen()
        if state == "requires_action":
            self._clear_ceiling()
        else:
            self._rearm_between_turns()

    def _maybe_end(self) -> None:
        if not self.tasks:
            self._end()

    def _end(self) -> None:
        self._clear_ceiling()
        if not self.ended:
            self.ended = True
            self._effects.append("ended")

    def _reopen(self) -> None:
        if self.ended and not self.final:
            self.ended = False
            self._effects.append("reopened")

    def _arm_ceiling(self) -> None:
        self._clear_ceiling()
        # (a final run is an ended one: finish() ends it and nothing reopens it)
        if self.ceiling_ms <= 0 or self.ended or self.turn_in_progress or not self.bidirectional:
            return
        self._armed = True
        self._effects.append(("arm", self.ceiling_generation))

    def _rearm_between_turns(self) -> None:
        if self.result_received and self.session_state not in (None, "idle", "requires_action"):
            self._arm_ceiling()

    def _clear_ceiling(self) -> None:
        self.ceiling_generation += 1
        if self._armed:
            self._armed = False
            self._effects.append("clear")
