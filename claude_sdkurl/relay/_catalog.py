"""What the relay's page shows beyond the live sessions, when the program gave the relay the
options its sessions run with (``relay.serve(options=...)``): the sessions those options would
resume (from their ``session_store``, else the CLI's transcripts), readable after the program
that ran them has exited; the calls parked in them (:mod:`claude_sdkurl.approvals`), decided
from the page; and a message that continues a stored session.

Everything a page asks for is checked here before anything is read or run: a session id must
be one (nothing path-like becomes part of a path), a parked call is decided through
:func:`approvals.decide`, which looks the call up in the session and claims the decision once
(on any machine, with a store), for the tool name and input the page was shown. The runs a
decision or a message starts are this process's own sessions: the relay's tap shows them live
like any other.

Reading is bounded: the ``SCANNED`` newest sessions are listed, a listing is reused for
``FRESH_SECONDS``, and a session's parked calls are read again only when its row changed (and
kept only while it is listed).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from .._engine.paths import is_session_id

logger = logging.getLogger("claude_sdkurl.relay")

SCANNED = 50  # newest sessions listed (and looked through for parked calls)
FRESH_SECONDS = 2.0  # a listing younger than this is reused (pages ask when they connect and every few seconds)
STORED_PREFIX = "stored:"  # the page's key of a stored session: this and its session id
EVERY_PROJECT_READ_ONLY = ("the sessions of every project are listed to read: deciding or continuing one needs the options "
                           "of its program (relay.serve(options=...) in it)")  # fmt: skip


class Catalog:
    """The stored sessions and parked calls of ``options``, and the runs the page starts in them."""

    def __init__(self, options: Any, scrub: Callable[[str], str], steer: bool, running: Callable[[str], bool],
                 every_project: bool = False) -> None:  # fmt: skip
        self.options = options
        self.every_project = every_project  # list the sessions of every project (read-only: see relay.serve)
        self._scrub = scrub
        self.steer = steer
        self._running = running  # whether a live session of this process has that session id now
        self._lock = threading.Lock()
        self._reading = threading.Lock()  # one listing is made at a time (it fills _parked_by_row)
        self._listed: tuple[float, list[dict[str, Any]], list[dict[str, Any]]] | None = None
        self._parked_by_row: dict[str, tuple[Any, list[Any]]] = {}  # session id -> (row stamp, its parked calls)
        self._busy: set[str] = set()  # session ids a run started from the page is resuming now
        self._threads: list[threading.Thread] = []

    # ------------------------------------------------------------------ reading

    def listing(self, fresh: bool = False) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """``(stored sessions, parked calls)`` as the page shows them. A store or folder that
        cannot be read gives an empty listing (and a log line), never an error for the page."""
        with self._lock:
            if not fresh and self._listed is not None and time.monotonic() - self._listed[0] < FRESH_SECONDS:
                return self._listed[1], self._listed[2]
        with self._reading:
            return self._list()

    def _list(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        from .. import approvals
        from ..sessions import _of_options

        try:
            rows = _of_options.rows(self.options, SCANNED, self.every_project)
        except Exception as e:  # the store is user code; an unreadable folder lists nothing
            logger.warning("the relay could not list the stored sessions: %s", e)
            rows = []
        stored: list[dict[str, Any]] = []
        parked: list[dict[str, Any]] = []
        for row in rows:
            stored.append({
                "key": STORED_PREFIX + row.session_id, "session_id": row.session_id, "state": "stored",
                "title": self._scrub(row.custom_title or row.summary or row.first_prompt or "")[:200],
                "last_modified": row.last_modified, "cwd": row.cwd, "turns": None, "cost_usd": None,
                "model": None, "permission_mode": None, "input_open": True,
            })  # fmt: skip
            stamp = (row.last_modified, row.file_size)
            known = self._parked_by_row.get(row.session_id)
            if known is None or known[0] != stamp:
                try:
                    calls = approvals.parked_in(row.session_id, _of_options.entries(row.session_id, self.options))
                except Exception:  # gone between listing and reading, or the store failed
                    calls = []
                known = (stamp, calls)
                self._parked_by_row[row.session_id] = known
            for call in known[1]:
                try:
                    if approvals.decision_of(call, self.options) is not None:
                        continue
                except Exception:
                    continue
                parked.append({
                    "session": STORED_PREFIX + call.session_id, "session_id": call.session_id,
                    "tool_use_id": call.tool_use_id, "tool_name": call.tool_name,
                    "input": json.loads(self._scrub(json.dumps(call.tool_input))), "parked_at": call.parked_at,
                })  # fmt: skip
        listed = {row.session_id for row in rows}  # (a session no longer listed takes its calls along)
        self._parked_by_row = {sid: known for sid, known in self._parked_by_row.items() if sid in listed}
        with self._lock:
            self._listed = (time.monotonic(), stored, parked)
        return stored, parked

    def transcript(self, session_id: str, before: float | None = None) -> list[tuple[int, str, str]] | None:
        """The stored session's conversation as the page's lines (``None``: no such session):
        the prompts as what the program sent, the rest as what the CLI said, scrubbed.
        ``before`` (seconds since the epoch): only the entries written before then (what a run
        that resumed the session at that time found; an entry without a time is kept)."""
        from ..sessions import _chain, _of_options

        if not is_session_id(session_id):
            return None
        try:
            entries = _of_options.entries(session_id, self.options)
        except Exception:
            return None
        lines: list[tuple[int, str, str]] = []
        for entry in _chain.conversation(entries):
            kind = entry.get("type")
            message = entry.get("message")
            if kind not in ("user", "assistant") or not isinstance(message, dict):
                continue
            if before is not None and _written_at(entry) >= before:
                continue
            content = message.get("content")
            said_by_program = kind == "user" and not (isinstance(content, list) and any(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in content))  # fmt: skip
            line = {"type": kind, "message": message, "session_id": session_id,
                    "parent_tool_use_id": None, "uuid": entry.get("uuid")}  # fmt: skip
            lines.append((len(lines) + 1, "sdk" if said_by_program else "cli", self._scrub(json.dumps(line))))
        return lines

    # ------------------------------------------------------------------ acting

    def decide(self, op: dict[str, Any], done: Callable[[str | None], None]) -> str | None:
        """Decide the parked call the page showed (its session id, tool use id, tool name and
        input, as shown): ``None`` once claimed (the run goes on, on a thread of its own, and
        ``done`` is told how it ended), or why not (nothing claimed, nothing run)."""
        from .. import approvals

        if not self.steer:
            return "this relay is read-only: the program did not allow steering"
        if self.every_project:
            return EVERY_PROJECT_READ_ONLY
        session_id, tool_use_id = op.get("session_id"), op.get("tool_use_id")
        tool_input = op.get("input")
        if not isinstance(session_id, str) or not isinstance(tool_use_id, str) or not isinstance(tool_input, dict):
            return "a decision names the session_id, tool_use_id, tool_name and input it was shown"
        shown = approvals.Parked(session_id, tool_use_id, str(op.get("tool_name")), tool_input)
        try:
            taken = approvals.decision_of(shown, self.options)
        except Exception as e:
            return f"the decision could not be looked up: {e}"
        if taken is not None:  # (said first: the run it started may still be shown running)
            return f"the tool call {tool_use_id} was {'approved' if taken == 'allow' else 'denied'} already"
        refusal = self._reserve(session_id)
        if refusal is not None:
            return refusal
        try:
            run = approvals.decide(shown, self.options, op.get("allow") is True, reason=str(op.get("reason") or "") or None)
        except Exception as e:
            self._unreserve(session_id)
            if isinstance(e, (approvals.NotParkedError, approvals.AlreadyDecidedError)):
                return str(e)
            return f"the decision could not be recorded: {e}"  # the store failed
        self._invalidate()
        self._start(f"decide-{tool_use_id[:16]}", run, session_id, done)
        return None

    def _reserve(self, session_id: str) -> str | None:
        """Mark ``session_id`` as resumed from the page (one run at a time: two would fork its
        transcript), or say why not."""
        with self._lock:
            if session_id in self._busy or self._running(session_id):
                return f"session {session_id} is running now: write to it, or wait for its turn to end"
            self._busy.add(session_id)
        return None

    def _unreserve(self, session_id: str) -> None:
        with self._lock:
            self._busy.discard(session_id)

    def continue_session(self, session_id: Any, text: Any, done: Callable[[str | None], None]) -> str | None:
        """Start a turn in a stored session with the program's options (``resume``); ``None``
        once started, or why not."""
        from ..query import query

        if not self.steer:
            return "this relay is read-only: the program did not allow steering"
        if self.every_project:
            return EVERY_PROJECT_READ_ONLY
        if not isinstance(session_id, str) or not is_session_id(session_id):
            return f"not a session id: {session_id!r}"
        if not isinstance(text, str) or not text.strip():
            return "an empty message"
        if self.transcript(session_id) is None:
            return f"no stored session {session_id}"
        refusal = self._reserve(session_id)
        if refusal is not None:
            return refusal
        try:
            run = query(text, dataclasses.replace(self.options, resume=session_id, continue_conversation=False, fork_session=False))
        except Exception:
            self._unreserve(session_id)
            raise
        self._start(f"continue-{session_id[:8]}", run, session_id, done)
        return None

    def _start(self, name: str, run: Any, session_id: str, done: Callable[[str | None], None]) -> None:
        def consume() -> None:
            error: str | None = None
            try:
                for _ in run:
                    pass
            except Exception as e:
                error = f"{type(e).__name__}: {e}"
            finally:
                self._unreserve(session_id)
                self._invalidate()
            done(error)

        thread = threading.Thread(target=consume, name=f"claude-sdkurl-relay-{name}", daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def _invalidate(self) -> None:
        with self._lock:
            self._listed = None

    def join(self, timeout: float) -> None:
        """Wait (up to ``timeout`` in all) for the runs the page started."""
        end = time.monotonic() + timeout
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(max(0.0, end - time.monotonic()))


def _written_at(entry: dict[str, Any]) -> float:
    """When the CLI wrote a transcript entry (its ``timestamp``, ISO 8601), in seconds since the
    epoch; ``-inf`` for an entry that says no time or an unreadable one."""
    stamp = entry.get("timestamp")
    if not isinstance(stamp, str):
        return float("-inf")
    try:
        return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return float("-inf")
