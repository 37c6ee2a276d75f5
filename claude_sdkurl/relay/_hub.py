"""The relay's state: the sessions it watches, the frontends watching, the permission requests
waiting for a person; and the one thread that carries lines from the first to the second.

A session's transport (see :mod:`._tap`) hands each chunk it reads or writes to :meth:`Hub.feed`,
which only appends it to the hub's inbox: the session never waits for a frontend, a scrub or a
lock held by a slow page. The hub's thread (woken at most every few milliseconds) splits chunks
into lines, keeps the last ones of each session as they came for pages that join late (scrubbed
when a page reads them), keeps each session's summary (state, cost, turns), and, when anyone
watches, scrubs secrets out of each line, frames it once and offers it to every frontend. A
frontend keeps a bounded queue, drained a few milliseconds of lines per write by the hub's one
writer (for every frontend that takes its writes at once) or, once a frontend's socket is full,
by a writer thread of its own; what does not fit in the queue is dropped and counted, and the
frontend is told how much it missed when it catches up.

Decisions on waiting permission requests (:meth:`Hub.decide`) are taken under the hub's lock:
the first decision for a request wins, only while the request is still waiting (the CLI has not
cancelled it, the session has not answered it another way or ended), and only for the tool name
and input that were shown.
"""

from __future__ import annotations

import collections
import functools
import itertools
import json
import logging
import os
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .._engine.transport._wsserver import frame_text
from .._engine.transport.taps import line_text, whole_lines
from ..tapes._scrub import _SECRETS, text_without_mcp_secrets
from ..ide import IDE_KEY
from ..types import _SECRET_NAME
from ._stream_scrub import StreamScrub

logger = logging.getLogger("claude_sdkurl.relay")

HISTORY_LINES = 2000  # lines of each session kept for pages that join late ...
HISTORY_BYTES = 2_000_000  # ... and bytes (its newest lines)
TOTAL_HISTORY_BYTES = 32_000_000  # bytes kept for all sessions together (the oldest ended go first)
ENDED_KEEP_SECONDS = 600.0  # an ended session's lines are let go this long after its end with no frontend
HOUSEKEEPING_SECONDS = 1.0  # how often the hub's thread looks for stuck frontends and lines to let go
LINE_OVERHEAD = 100  # what keeping one line costs besides its text (the tuple, the str header)
KEEP_ENDED = 100  # ended sessions listed (older ones are forgotten)
FRONTEND_LINES = 4000  # lines a frontend may fall behind before the relay drops lines for it
FRONTEND_BYTES = 16 * 1024 * 1024  # ... or bytes
STUCK_SECONDS = 30.0  # a frontend that took nothing for this long while full is disconnected
INBOX_LIMIT = 200_000  # chunks the hub's thread may fall behind before it drops (counted)
MAX_FRONTEND_LINE = 256 * 1024  # the longest line a frontend may send
WRITE_BATCH = 256  # lines a frontend's writer sends with one write when it is behind
COALESCE_SECONDS = 0.01  # how long a frontend's writer gathers lines before it writes them

PERMISSION_MODES = ("default", "acceptEdits", "plan", "dontAsk", "auto", "bypassPermissions")  # what the page may set

CONNECTED = {"type": "status", "text": "claude code connected"}
IS_CONNECTED = {"type": "status", "text": "claude code is connected"}
DISCONNECTED = {"type": "status", "text": "claude code disconnected"}

_TYPE = re.compile(r'\s*\{\s*"type"\s*:\s*"([a-z_]+)"')


def _kept_cost(raw: str) -> int:
    """What keeping ``raw`` in a session's history costs: its UTF-8 bytes and ``LINE_OVERHEAD``."""
    return (len(raw) if raw.isascii() else len(raw.encode("utf-8", "replace"))) + LINE_OVERHEAD


def secret_values(*envs: dict[str, str] | os._Environ[str]) -> set[str]:
    """The values of variables whose name says they are secret (8 characters or more)."""
    found: set[str] = set()
    for env in envs:
        for name, value in env.items():
            if _SECRET_NAME.search(name) and isinstance(value, str) and len(value) >= 8:
                found.add(value)
    return found


# What any of the tapes' secret patterns needs somewhere in a line, lower-cased: most lines have
# none of it, and seven substring tests cost less than one case-blind regular expression (19 us
# a streamed delta).
_SECRET_HINTS = ("sk-ant-", "bearer", "key", "token", "secret", "password", "authorization")


@functools.lru_cache(maxsize=1024)
def _spellings(literal: str) -> tuple[str, ...]:
    """How ``literal`` may be written in a line of JSON: as it is, and as a JSON string's body
    escapes it (a quote, a backslash, a control character; a non-ASCII one as the CLI writes it
    and as ``\\uXXXX``), longest first."""
    escaped = {json.dumps(literal)[1:-1], json.dumps(literal, ensure_ascii=False)[1:-1]} - {literal}
    return (*sorted(escaped, key=len, reverse=True), literal)


def scrub(text: str, literals: Iterable[str]) -> str:
    """``text`` without API keys, bearer tokens, ``"...token": "..."`` values, MCP servers'
    ``env`` and ``headers`` values and ``literals``, also as JSON escapes them (written as
    ``<scrubbed>``, as tapes write them)."""
    text = text_without_mcp_secrets(text)
    for literal in literals:
        for spelling in _spellings(literal):
            if spelling in text:
                text = text.replace(spelling, "<scrubbed>")
    lowered = text.lower()
    if any(hint in lowered for hint in _SECRET_HINTS):
        for pattern, replacement in _SECRETS:
            text = pattern.sub(replacement, text)
    return text


def shown_value(value: Any, literals: Iterable[str]) -> Any:
    """``value`` (a tool's input, a rule) as a page is shown it: every string scrubbed, then the
    whole as JSON (the ``"...token": "..."`` pattern needs the key)."""

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return scrub(v, literals)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        return v

    return json.loads(scrub(json.dumps(walk(value)), literals))


def line_type(text: str) -> str | None:
    match = _TYPE.match(text)
    if match is not None:
        return match.group(1)
    try:
        frame = json.loads(text)
    except ValueError:
        return None
    kind = frame.get("type") if isinstance(frame, dict) else None
    return kind if isinstance(kind, str) else None


@dataclass(eq=False)
class Ask:
    """A permission request waiting for a decision from a frontend (see :func:`relay.ask`)."""

    tool_use_id: str
    tool_name: str
    input: dict[str, Any]
    suggestions: list[dict[str, Any]] = field(default_factory=list)  # the CLI's permission_suggestions (wire form)
    session: WatchedSession | None = None
    request_id: str | None = None
    decided: threading.Event = field(default_factory=threading.Event)
    decision: str | None = None  # "allow" or "deny"
    reason: str = ""
    who: str = ""
    gone: str | None = None  # why it can no longer be decided (cancelled, answered, ended)
    asked_at: float = field(default_factory=time.time)
    updated_input: dict[str, Any] | None = None  # allowed as edited on the page: what runs
    updated_permissions: list[dict[str, Any]] | None = None  # allowed always: the rule shown, for the session

    def _literals(self) -> set[str]:
        return self.session.literals if self.session is not None else set()

    def shown_input(self) -> Any:
        """The input as a page is shown it (scrubbed)."""
        return shown_value(self.input, self._literals())

    def offered(self) -> list[dict[str, Any]]:
        """The "Always allow" rules a page may offer: each ``addRules`` / ``allow`` suggestion of
        the CLI whose rules show whole (nothing scrubbed), for this session only (never a
        settings file)."""
        offered = []
        for suggestion in self.suggestions:
            rules = suggestion.get("rules") if isinstance(suggestion, dict) else None
            if suggestion.get("type") != "addRules" or suggestion.get("behavior") != "allow" or not isinstance(rules, list) or not rules:
                continue
            if not all(isinstance(r, dict) and isinstance(r.get("toolName"), str) for r in rules):
                continue
            kept = [{k: r[k] for k in ("toolName", "ruleContent") if isinstance(r.get(k), str)} for r in rules]
            if shown_value(kept, self._literals()) != kept:
                continue
            offered.append({"type": "addRules", "rules": kept, "behavior": "allow", "destination": "session"})
        return offered

    def public(self) -> dict[str, Any]:
        return {
            "id": self.request_id,
            "session": self.session.key if self.session is not None else None,
            "tool_use_id": self.tool_use_id,
            "tool_name": self.tool_name,
            "input": self.shown_input(),
            "editable": self.shown_input() == self.input,  # nothing of it hidden: a page may edit it
            "always": self.offered(),
            "asked_at": self.asked_at,
        }


class WatchedSession:
    """One session the relay watches: its summary, its last lines, and how to write to its CLI."""

    def __init__(self, key: str, transport: str, inject: Callable[[str], None], hidden: bool,
                 literals: set[str], cwd: str | None) -> None:  # fmt: skip
        self.key = key
        self.transport = transport
        self.inject = inject
        self.visible = not hidden
        self.literals = literals
        self.cwd = cwd
        self.session_id: str | None = None
        self.model: str | None = None
        self.permission_mode: str | None = None  # as the CLI said at its start, then as changed
        self.state = "starting"  # running, ended, failed, interrupted (its last turn was interrupted)
        self.turns = 0  # the turns its results counted (their num_turns: the model's calls), as each result says
        self.cost_usd: float | None = None
        self.pending = 0  # prompts written to the CLI that no result has answered yet
        self.cli_state: str | None = None  # what the CLI last said of itself (session_state_changed), until a result
        self.parked = False  # the last turn ended with a tool call parked (terminal_reason "tool_deferred")
        self.resumed = False  # the CLI was started to resume a session (--resume): its earlier turns are stored
        self.resuming: str | None = None  # the session id it resumes (not a fork): its own until it says one
        self.tokens = 0  # the tokens its turns used (input, cache and output), summed over the results
        self.context_tokens: int | None = None  # what the main conversation's last call took in and gave out
        self.context_window: int | None = None  # the model's window, as the last result said
        self.models: list[str] = []  # the models the CLI offers (its answer to initialize)
        self.started_by_page = False  # a person started it from the page (relay.NewSessions)
        self.started_at = time.time()
        self.ended_at: float | None = None
        self.error: str | None = None
        self.input_open = True
        self.exited = False  # the transport ended (set on the session's thread, before the hub sees it)
        self.last_result_error = False
        self.last_result_subtype = ""
        self.interrupting = False  # an interrupt was written during the turn under way (by anyone)
        self.last_result_interrupted = False  # the last turn ended after an interrupt
        self.history: collections.deque[tuple[int, str, str]] = collections.deque()  # bounded by Hub._keep
        self.history_bytes = 0  # what the kept lines cost (their UTF-8 and LINE_OVERHEAD each)
        self.history_dropped = 0  # lines let go before the first one kept
        self.lines_released = False  # every line let go (ended, nobody came for it: see ENDED_KEEP_SECONDS)
        self.ended_monotonic: float | None = None
        self.seq = 0  # lines seen so far (a page drops a live line its history already had)
        self.partial = {"cli": "", "sdk": ""}
        self.mcp_servers: dict[str, Any] | None = None  # the last map sent with mcp_set_servers
        self.ide_env: dict[str, str] = {}  # the CLI's HOME / CLAUDE_CONFIG_DIR: where its IDE lockfiles are
        self.label: str | None = None  # who the session's last turn came from (a session host's worker), if said
        # the CLI's streamed text scrubbed across deltas (see _stream_scrub), before it is kept
        self.stream_scrub = StreamScrub(lambda text: scrub(text, literals), literals)
        self.relay_requests: dict[str, Callable[[dict[str, Any]], None]] = {}  # our own control requests
        # Lines for /ws (every session) said before the session_id was known: sent, tagged with
        # it, once the CLI names it (a notes frontend routes a line to a tab by its session_id).
        self.untagged: list[str] = []

    @property
    def running(self) -> bool:
        """The session's CLI is alive (whether or not a turn is under way)."""
        return self.state in ("starting", "running")

    def shown_state(self, waiting: int = 0) -> str:
        """What the page says of the session: ``waiting`` (a call waits for a person),
        ``running`` (a turn is under way), ``parked`` (its last turn parked a call), ``idle``
        (alive, no turn under way), or how it ended (``ended``, ``failed``, ``interrupted``)."""
        if not self.running:
            return "parked" if self.parked and self.state == "ended" else self.state
        if waiting:
            return "waiting"
        if self.pending or self.cli_state == "running":
            return "running"
        if self.parked:
            return "parked"
        return "interrupted" if self.last_result_interrupted else "idle"

    def public(self, waiting: int = 0) -> dict[str, Any]:
        return {
            "key": self.key,
            "session_id": self.session_id,
            "model": self.model,
            "permission_mode": self.permission_mode,
            "state": self.shown_state(waiting),
            "alive": self.running and not self.exited,
            "waiting": waiting,
            "turns": self.turns,
            "tokens": self.tokens,
            "context_tokens": self.context_tokens,
            "context_window": self.context_window,
            "resumed": self.resumed,
            "started_by_page": self.started_by_page,
            "models": self.models,
            "ide_bound": bool(self.mcp_servers) and IDE_KEY in (self.mcp_servers or {}),
            "cost_usd": self.cost_usd,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "error": self.error,
            "transport": self.transport,
            "input_open": self.input_open,
            "cwd": self.cwd,
            "lines_released": self.lines_released,
            "label": self.label,
        }


class Frontend:
    """One watching connection: a bounded queue and the writer thread that drains it.

    ``kind``: ``"notes"`` (raw lines and status lines, as the protocol notes' relays send them;
    ``only`` limits it to one session) or ``"page"`` (the page's envelopes, every session).
    """

    def __init__(self, kind: str, send: Callable[[bytes], None], abort: Callable[[], None], only: str | None = None,
                 try_send: Callable[[bytes], int] | None = None) -> None:  # fmt: skip
        self.kind = kind
        self.only = only
        self._send = send  # several messages, one write
        # ``try_send``: what the socket takes now, without waiting. Given, and joined to a hub, the
        # frontend is written by the hub's one writer with every other (one wake-up a batch for
        # all of them: a thread each made 10 frontends cost the host nearly as much CPU as the
        # turn it watched); the first write it cannot take whole gives it a thread of its own.
        self._try_send = try_send
        self.writer: SharedWriter | None = None  # set by Hub.join
        self._own_thread = try_send is None
        self._pending = b""  # what the shared writer could not write: the frontend's thread writes it first
        self._thread_started = False
        # what the hub's thread offers is staged here (a list append a line, no lock) and queued
        # once per batch of the hub's inbox: a line cost each frontend a lock, its checks and,
        # often, a wake-up of its writer; only the thread ``stager`` names (set by Hub.join) stages
        self.stager: int | None = None
        self._staged: list[bytes] = []
        self._staged_vital: set[int] = set()  # (the indexes in _staged of vital lines)
        self._abort = abort
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._queue: collections.deque[bytes] = collections.deque()  # frames (see frame_text)
        self._bytes = 0
        self.dropped = 0
        self.dropped_total = 0
        self._closed = False
        self._last_progress = time.monotonic()
        self._sending = False
        self.thread = threading.Thread(target=self._write_loop, name="claude-sdkurl-relay-frontend", daemon=True)

    def start(self) -> None:
        with self._lock:
            if self.writer is None:
                self._own_thread = True
        self._start_own_thread()

    def _start_own_thread(self) -> None:
        """Start this frontend's writer thread, once, if it is to have one (the shared writer may
        have given it one already: its first write did not fit)."""
        with self._lock:
            start = self._own_thread and not self._thread_started and not self._closed
            self._thread_started = self._thread_started or start
        if start:
            self.thread.start()

    def offer(self, message: str | bytes, vital: bool = False) -> None:
        """Queue ``message`` (text, or a frame made by :func:`frame_text`) for this frontend, or
        drop it (counted) when the queue is full. ``vital`` lines (status lines, the page's
        listings) are small and rare: never dropped. Offered on the ``stager`` thread (the
        hub's), it is staged, without a lock, and queued with the rest of the hub's batch."""
        text = frame_text(message) if isinstance(message, str) else message
        if self.stager is not None and threading.get_ident() == self.stager:
            if vital:
                self._staged_vital.add(len(self._staged))
            self._staged.append(text)  # (queued in order by unstage, once per batch of the hub's inbox)
            return
        self._queue_all([text], {0} if vital else set())

    def unstage(self) -> None:
        """Queue what the ``stager`` thread (the hub's) offered since the last call; that thread only."""
        if self._staged:
            staged, vital, self._staged, self._staged_vital = self._staged, self._staged_vital, [], set()
            self._queue_all(staged, vital)

    def _queue_all(self, frames: list[bytes], vital: set[int]) -> None:
        """Queue ``frames`` in order (``vital``: the indexes of those never dropped)."""
        abort = False
        shared: SharedWriter | None = None
        size = sum(map(len, frames))
        with self._lock:
            if self._closed:
                return
            was_empty = not self._queue
            if len(self._queue) + len(frames) <= FRONTEND_LINES and self._bytes + size <= FRONTEND_BYTES:
                # all of it fits, as it does unless the frontend is behind: queued at once
                if not self._queue and not self._sending:
                    self._last_progress = time.monotonic()  # idle until now: not behind
                self._note_drops()
                self._queue.extend(frames)
                self._bytes += size
            else:
                for n, text in enumerate(frames):
                    if n not in vital and (len(self._queue) >= FRONTEND_LINES or self._bytes + len(text) > FRONTEND_BYTES):
                        self.dropped += 1
                        self.dropped_total += 1
                        abort = abort or time.monotonic() - self._last_progress > STUCK_SECONDS
                        continue
                    if not self._queue and not self._sending:
                        self._last_progress = time.monotonic()
                    self._note_drops()
                    self._queue.append(text)
                    self._bytes += len(text)
            if was_empty and self._queue:
                if self._own_thread:
                    self._ready.notify()  # (the writer waits only on an empty queue)
                else:
                    shared = self.writer
        if shared is not None:
            shared.wake(self)
        if abort:
            logger.warning("a relay frontend took nothing for %.1f s while its queue was full: disconnected", STUCK_SECONDS)
            self.close()

    def _note_drops(self) -> None:
        """Tell the frontend, where the gap is, how many lines it lost (the lock is held)."""
        if self.dropped:
            if self.kind == "notes":
                text = f"relay dropped {self.dropped} lines: this frontend did not read them fast enough"
                note = frame_text(json.dumps({"type": "status", "text": text}))
            else:
                note = frame_text(json.dumps({"k": "dropped", "count": self.dropped}))
            self._queue.append(note)
            self._bytes += len(note)
            self.dropped = 0
            self._ready.notify()

    def _write_loop(self) -> None:
        if self._pending:  # what the shared writer could not write, before anything else
            pending, self._pending = self._pending, b""
            try:
                self._send(pending)
            except Exception:
                self.close()
                return
            with self._lock:
                self._bytes -= len(pending)
                self._last_progress = time.monotonic()
                self._sending = False
        while True:
            with self._lock:
                while not self._queue and not self._closed:
                    self._ready.wait()
                if self._closed:
                    return
            # A turn streams a delta every few hundred microseconds: gathering what comes in the
            # next few milliseconds makes one write (and one wake-up of this thread, which competes
            # with the session's own for the interpreter) out of many.
            time.sleep(COALESCE_SECONDS)
            with self._lock:
                if self._closed:
                    return
                batch = [self._queue.popleft() for _ in range(min(len(self._queue), WRITE_BATCH))]
                self._sending = True
                if not self._queue:
                    self._note_drops()  # caught up: say what was lost since
            try:
                self._send(b"".join(batch))
            except Exception:
                self.close()
                return
            with self._lock:
                # counted until written: a send blocked on a frontend that does not read still
                # holds its batch (up to WRITE_BATCH lines), within the same byte bound
                self._bytes -= sum(len(text) for text in batch)
                self._last_progress = time.monotonic()
                self._sending = False

    def write_shared(self) -> bool:
        """One batch written by the shared writer, without waiting (its thread): ``True`` when
        more is queued. What the socket does not take at once goes to a thread of this frontend's
        own, which writes the rest first and this frontend's every batch after."""
        with self._lock:
            if self._closed or self._own_thread or not self._queue:
                return False
            batch = [self._queue.popleft() for _ in range(min(len(self._queue), WRITE_BATCH))]
            self._sending = True
            if not self._queue:
                self._note_drops()  # caught up: say what was lost since
        data = b"".join(batch)
        assert self._try_send is not None
        try:
            sent = self._try_send(data)
        except Exception:
            self.close()
            return False
        with self._lock:
            self._bytes -= sent
            if sent:
                self._last_progress = time.monotonic()
            if sent == len(data):
                self._sending = False
                return bool(self._queue)
            # a frontend that reads slower than the lines come: a thread of its own
            self._pending = data[sent:]  # (still counted in _bytes until its thread writes it)
            self._own_thread = True
        self._start_own_thread()
        return False

    def stuck(self, now: float) -> bool:
        """Something waits to be written and the frontend took nothing for ``STUCK_SECONDS``."""
        with self._lock:
            behind = bool(self._queue) or self._sending
            return behind and not self._closed and now - self._last_progress > STUCK_SECONDS

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing being written."""
        with self._lock:
            return (not self._queue and not self._sending) or self._closed

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.clear()
            self._ready.notify_all()
        try:
            self._abort()
        except Exception:  # pragma: no cover - best effort
            pass

    def join(self, timeout: float = 5.0) -> None:
        if self.thread.is_alive() and self.thread is not threading.current_thread():
            self.thread.join(timeout)


class SharedWriter:
    """The hub's one writer for the frontends that can be written without waiting: woken by a
    frontend's first queued line, it gathers ``COALESCE_SECONDS`` of lines, then writes one
    batch to each frontend that has some (see :meth:`Frontend.write_shared`); a frontend whose
    socket is full moves to a thread of its own, so no frontend waits for another."""

    def __init__(self) -> None:
        self._ready = threading.Condition(threading.Lock())
        self._due: dict[Frontend, None] = {}  # (in the order they asked)
        self._waiting = False  # the writer waits for a frontend to wake it (not between batches)
        self._stopped = False
        self.thread = threading.Thread(target=self._loop, name="claude-sdkurl-relay-writer", daemon=True)
        self.thread.start()

    def wake(self, frontend: Frontend) -> None:
        with self._ready:
            self._due[frontend] = None
            if self._waiting:
                self._waiting = False
                self._ready.notify()

    def _loop(self) -> None:
        while True:
            with self._ready:
                if not self._due and not self._stopped:  # (lines that keep coming are written without a wake-up each)
                    self._waiting = True
                    while self._waiting and not self._stopped:
                        self._ready.wait()
                if self._stopped:
                    return
            time.sleep(COALESCE_SECONDS)  # (as a frontend's own writer: many lines, one write)
            with self._ready:
                due = list(self._due)
                self._due.clear()
            for frontend in due:
                try:
                    more = frontend.write_shared()
                except Exception:  # pragma: no cover - a frontend's failure is its own
                    logger.exception("writing to a relay frontend failed")
                    frontend.close()
                    more = False
                if more:
                    self.wake(frontend)

    def close(self) -> None:
        with self._ready:
            self._stopped = True
            self._ready.notify()
        if self.thread is not threading.current_thread():
            self.thread.join(5.0)


class Hub:
    """See the module doc. ``steer``: frontends may decide, interrupt and send messages."""

    def __init__(self, steer: bool = False, literals: Iterable[str] = ()) -> None:
        self.steer = steer
        self.literals = set(literals) | secret_values(os.environ)
        # this relay's run: a page that reconnects to another (the program restarted) starts afresh
        self.instance = secrets.token_hex(8)
        self.page_hello: dict[str, Any] = {}  # what else a page is told when it connects (the relay's settings)
        self.turn_listeners: list[Callable[[WatchedSession], None]] = []  # told on the hub's thread when a turn or session ends
        self._lock = threading.RLock()
        self._keys = itertools.count(1)
        self.sessions: dict[str, WatchedSession] = {}
        self.frontends: set[Frontend] = set()
        self._asks_by_tool: dict[str, Ask] = {}  # tool_use_id -> an ask opened by relay.ask
        self._asks_by_request: dict[str, Ask] = {}  # the CLI's request_id -> the same ask, once linked
        self._seen_requests: dict[str, tuple[WatchedSession, str]] = {}  # tool_use_id -> (session, request_id)
        self._inbox: collections.deque[tuple[Any, ...]] = collections.deque()
        self._inbox_ready = threading.Condition(threading.Lock())
        self.inbox_dropped = 0
        self.history_bytes = 0  # what every session's kept lines cost together
        self._watched_at = time.monotonic()  # the last time a frontend was connected
        self._housekept_at = time.monotonic()
        self._stopped = False
        self.writer = SharedWriter()
        self._thread = threading.Thread(target=self._loop, name="claude-sdkurl-relay-hub", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ from sessions (any thread)

    def add_session(self, transport: str, inject: Callable[[str], None], hidden: bool = False,
                    literals: Iterable[str] = (), cwd: str | None = None, resumed: bool = False) -> WatchedSession:  # fmt: skip
        session = WatchedSession(f"s{next(self._keys)}", transport, inject, hidden, set(literals) | self.literals, cwd)
        session.resumed = resumed
        self._post(("add", session))
        return session

    def feed(self, session: WatchedSession, direction: str, chunk: bytes | str) -> None:
        """A chunk read from (``"cli"``) or written to (``"sdk"``) the session's CLI."""
        self._post(("data", session, direction, chunk))

    def ended(self, session: WatchedSession, code: int | None, error: str | None = None) -> None:
        session.exited = True  # at once: nothing is sent to it, nothing of it decided, from now on
        self._post(("end", session, code, error))

    def input_ended(self, session: WatchedSession) -> None:
        session.input_open = False  # at once: a message sent after this must be refused
        self._post(("input_ended", session))

    def _post(self, item: tuple[Any, ...]) -> None:
        with self._inbox_ready:
            if len(self._inbox) >= INBOX_LIMIT and item[0] == "data":
                self.inbox_dropped += 1
                return
            self._inbox.append(item)
            if len(self._inbox) == 1:
                self._inbox_ready.notify()

    def drain(self, timeout: float = 10.0) -> bool:
        """Wait until the hub's thread has handled what was posted so far (tests, close)."""
        done = threading.Event()
        self._post(("mark", done))
        return done.wait(timeout)

    # ------------------------------------------------------------------ the hub's thread

    def _loop(self) -> None:
        while True:
            with self._inbox_ready:
                while not self._inbox and not self._stopped:
                    if not self._inbox_ready.wait(self._housekeeping_due()):
                        break
                stopping = self._stopped
            if time.monotonic() - self._housekept_at >= HOUSEKEEPING_SECONDS:
                try:
                    self._housekeep()
                except Exception:  # pragma: no cover - the relay goes on
                    logger.exception("the relay's housekeeping failed")
            if not stopping:
                # what the next few milliseconds bring is handled with this: one wake-up of this
                # thread (which competes with the sessions' own for the interpreter) for many chunks
                time.sleep(COALESCE_SECONDS / 2)
            with self._inbox_ready:
                if self._stopped and not self._inbox:
                    return
                items = list(self._inbox)
                self._inbox.clear()
            for item in items:
                try:
                    self._handle(item)
                except Exception:  # one bad line must not stop the relay
                    logger.exception("the relay could not handle %s", item[0])
            self._unstage()

    def _unstage(self) -> None:
        """Queue, for each frontend, what this (the hub's) thread offered it since the last time."""
        with self._lock:
            frontends = list(self.frontends)
        for frontend in frontends:
            frontend.unstage()

    def _housekeeping_due(self) -> float:
        return max(0.0, HOUSEKEEPING_SECONDS - (time.monotonic() - self._housekept_at))

    def _housekeep(self) -> None:
        """Let go of frontends that take nothing (with no line coming, nothing else would notice)
        and of ended sessions' lines nobody could still come for: kept ``ENDED_KEEP_SECONDS``
        after the session ended or the last frontend left, whichever is later."""
        now = self._housekept_at = time.monotonic()
        with self._lock:
            frontends = list(self.frontends)
        for frontend in frontends:
            if frontend.stuck(now):
                logger.warning("a relay frontend took nothing for %.1f s: disconnected", STUCK_SECONDS)
                self.leave(frontend)
        with self._lock:
            if self.frontends:  # (the keep time counts from the last one's leaving: see leave())
                return
            ended = [s for s in self.sessions.values() if s.ended_monotonic is not None and s.history]
        for session in ended:
            assert session.ended_monotonic is not None
            if now - max(session.ended_monotonic, self._watched_at) > ENDED_KEEP_SECONDS:
                self._release(session)

    def _keep(self, session: WatchedSession, direction: str, raw: str) -> None:
        """Keep a line for pages that join late, within the session's bounds and the total."""
        session.seq += 1
        session.history.append((session.seq, direction, raw))
        cost = _kept_cost(raw)
        session.history_bytes += cost
        self.history_bytes += cost
        session.lines_released = False
        while session.history and (len(session.history) > HISTORY_LINES or session.history_bytes > HISTORY_BYTES):
            self._let_go_oldest(session)
        if self.history_bytes > TOTAL_HISTORY_BYTES:
            self._fit_total()

    def _let_go_oldest(self, session: WatchedSession) -> None:
        _, _, raw = session.history.popleft()
        cost = _kept_cost(raw)
        session.history_bytes -= cost
        self.history_bytes -= cost
        session.history_dropped += 1

    def _release(self, session: WatchedSession) -> None:
        """Let go of every kept line of ``session`` (its summary stays listed)."""
        session.history_dropped += len(session.history)
        session.history.clear()
        self.history_bytes -= session.history_bytes
        session.history_bytes = 0
        session.lines_released = True
        self._publish_sessions()

    def _fit_total(self) -> None:
        """Over the total: ended sessions' lines go first, the longest-ended first; then the oldest
        lines of the running session that keeps the most (each keeps its newest line)."""
        with self._lock:
            ended = sorted((s for s in self.sessions.values() if s.ended_monotonic is not None and s.history),
                           key=lambda s: s.ended_monotonic or 0.0)  # fmt: skip
            running = [s for s in self.sessions.values() if s.ended_monotonic is None and s.history]
        for session in ended:
            if self.history_bytes <= TOTAL_HISTORY_BYTES:
                return
            self._release(session)
        while self.history_bytes > TOTAL_HISTORY_BYTES and running:
            biggest = max(running, key=lambda s: s.history_bytes)
            if len(biggest.history) <= 1:
                return
            self._let_go_oldest(biggest)

    def _handle(self, item: tuple[Any, ...]) -> None:
        kind = item[0]
        if kind == "data":
            _, session, direction, chunk = item
            # (what the SDK writes is always whole lines: only the CLI's WebSocket messages lack one)
            lines, session.partial[direction] = whole_lines(session.partial[direction], chunk,
                                                            session.transport if direction == "cli" else "")  # fmt: skip
            for line in lines:
                if line.strip():
                    self._line(session, direction, line)
        elif kind == "add":
            session = item[1]
            with self._lock:
                self.sessions[session.key] = session
                self._forget_old()
            if session.visible:
                self._became_visible(session)
        elif kind == "end":
            self._end(item[1], item[2], item[3])
        elif kind == "input_ended":
            item[1].input_open = False
            self._publish_sessions()
        elif kind == "mark":
            self._unstage()  # (what came before the mark is queued when its waiter wakes)
            item[1].set()

    def _forget_old(self) -> None:
        ended = [s for s in self.sessions.values() if not s.running]
        for old in ended[: max(0, len(ended) - KEEP_ENDED)]:
            del self.sessions[old.key]
            self.history_bytes -= old.history_bytes

    def _line(self, session: WatchedSession, direction: str, raw: str) -> None:
        """Keep the line (each whole line is scrubbed when it leaves: a line nobody watches costs
        no scrub; streamed text is scrubbed across its deltas first, see :mod:`._stream_scrub`)
        and hand it to the frontends."""
        if direction == "cli":
            for line in session.stream_scrub.lines(raw):
                self._one_line(session, direction, line)
        else:
            self._one_line(session, direction, raw)

    def _one_line(self, session: WatchedSession, direction: str, raw: str) -> None:
        kind = line_type(raw)
        known = session.session_id
        if kind in _WATCHED_TYPES:
            self._summarize(session, direction, kind, raw)
        if session.session_id and not known and session.visible:
            self._flush_untagged(session)
        self._keep(session, direction, raw)
        if session.visible:
            self._fan_out(session, session.seq, direction, raw)

    def _summarize(self, session: WatchedSession, direction: str, kind: str, raw: str) -> None:
        try:
            frame = json.loads(raw)
        except ValueError:
            return
        if not isinstance(frame, dict):
            return
        changed = False
        if direction == "cli":
            if kind == "system" and frame.get("subtype") == "init":
                session.session_id = frame.get("session_id") or session.session_id
                session.model = frame.get("model") or session.model
                mode = frame.get("permissionMode")
                session.permission_mode = mode if isinstance(mode, str) else session.permission_mode
                if session.state == "starting":
                    session.state = "running"
                changed = True
            elif kind == "result":
                turns = frame.get("num_turns")
                session.turns += turns if isinstance(turns, int) and not isinstance(turns, bool) and turns >= 0 else 1
                session.pending = max(0, session.pending - 1)
                session.cli_state = None
                session.parked = frame.get("terminal_reason") == "tool_deferred"
                cost = frame.get("total_cost_usd", frame.get("cost_usd"))
                if isinstance(cost, (int, float)):
                    session.cost_usd = float(cost)
                session.tokens += _tokens(frame.get("usage"), output=True)
                by_model = {n: u for n, u in (frame.get("modelUsage") or {}).items() if isinstance(u, dict)}
                # the session's own model's window (a subagent's model may have another); else the largest said
                chosen = [by_model[session.model]] if session.model in by_model else list(by_model.values())
                windows: list[int] = [w for u in chosen if isinstance(w := u.get("contextWindow"), int) and w > 0]
                if windows:
                    session.context_window = max(windows)
                session.last_result_error = bool(frame.get("is_error"))
                session.last_result_subtype = str(frame.get("subtype") or "")
                session.last_result_interrupted = session.interrupting and session.last_result_error
                session.interrupting = False
                session.session_id = frame.get("session_id") or session.session_id
                changed = True
                self._turn_ended(session)
            elif kind == "control_request":
                request = frame.get("request") or {}
                if isinstance(request, dict) and request.get("subtype") == "can_use_tool":
                    self._seen_request(session, str(frame.get("request_id")), request)
            elif kind == "assistant":
                message = frame.get("message")
                if frame.get("parent_tool_use_id") is None and isinstance(message, dict) and isinstance(message.get("usage"), dict):
                    session.context_tokens = _tokens(message["usage"], output=True)  # (a subagent's calls have their own context)
                    changed = True
            elif kind == "system" and frame.get("subtype") == "session_state_changed":
                said = frame.get("state")
                if isinstance(said, str) and said != session.cli_state:
                    session.cli_state = said
                    changed = True
            elif kind == "control_cancel_request":
                self._gone(str(frame.get("request_id")), "the CLI cancelled the request")
            elif kind == "control_response":
                response = frame.get("response") or {}
                request_id = response.get("request_id") if isinstance(response, dict) else None
                callback = session.relay_requests.pop(request_id, None) if isinstance(request_id, str) else None
                if callback is not None:
                    callback(response)
                body = response.get("response") if isinstance(response, dict) else None
                models = body.get("models") if isinstance(body, dict) else None
                if isinstance(models, list):  # the answer to initialize: the models this CLI offers
                    session.models = [m["value"] for m in models if isinstance(m, dict) and isinstance(m.get("value"), str)][:50]
                    changed = True
        else:
            if kind == "control_response":
                response = frame.get("response") or {}
                if isinstance(response, dict):
                    self._gone(str(response.get("request_id")), "the session answered the request")
            elif kind == "control_request":
                request = frame.get("request") or {}
                subtype = request.get("subtype") if isinstance(request, dict) else None
                if subtype == "interrupt":
                    session.interrupting = True
                if subtype == "claim_session" and not session.visible:
                    session.visible = True
                    self._became_visible(session)
                elif subtype == "mcp_set_servers" and isinstance(request.get("servers"), dict):
                    session.mcp_servers = request["servers"]
            elif kind == "user":
                session.pending += 1  # a prompt (what the SDK side writes is never a tool's result)
                changed = True
                if not session.visible:
                    session.visible = True
                    self._became_visible(session)
        if changed:
            self._publish_sessions()

    def _became_visible(self, session: WatchedSession) -> None:
        if session.state == "starting":
            session.state = "running"
        for seq, direction, raw in list(session.history):  # what it said before it was shown
            self._fan_out(session, seq, direction, raw, page_only=True)
        self._status(CONNECTED, session)
        self._publish_sessions()

    def _end(self, session: WatchedSession, code: int | None, error: str | None) -> None:
        if not session.running:
            return
        for direction in ("cli", "sdk"):
            rest, session.partial[direction] = session.partial[direction], ""
            if rest.strip():
                self._line(session, direction, line_text(rest))
        for kept in session.stream_scrub.flush_all():  # a stream cut off mid-block: what was kept back
            self._one_line(session, "cli", kept)
        if session.untagged and session.visible:
            self._flush_untagged(session)  # it never said its session_id: as they are
        session.ended_at = time.time()
        session.ended_monotonic = time.monotonic()
        session.input_open = False
        failed = error is not None or code not in (0, None) or session.last_result_error
        # a turn someone interrupted ends in an error result: the session was stopped, not failed
        # (whatever its exit code then: a program may stop its CLI after such a turn)
        stopped = failed and error is None and session.last_result_interrupted
        session.state = "interrupted" if stopped else "failed" if failed else "ended"
        if error is None and session.last_result_error and not stopped:
            error = session.last_result_subtype or "error result"
        session.error = None if stopped else error or (f"exit code {code}" if code not in (0, None) else None)
        with self._lock:
            for ask in list(self._asks_by_tool.values()):
                if ask.session is session and ask.gone is None and ask.decision is None:
                    ask.gone = "the session ended"
                    ask.decided.set()
            for tool_use_id, (owner, _) in list(self._seen_requests.items()):
                if owner is session:
                    del self._seen_requests[tool_use_id]
            if not session.visible:
                self.sessions.pop(session.key, None)  # a spare never claimed: nobody saw it
                return
        self._status(DISCONNECTED, session)
        self._publish_asks()  # (and the sessions)
        self._turn_ended(session)

    def _turn_ended(self, session: WatchedSession) -> None:
        for listener in list(self.turn_listeners):
            try:
                listener(session)
            except Exception:  # pragma: no cover - a listener's failure is not the session's
                logger.exception("a relay turn listener failed")

    # ------------------------------------------------------------------ fan-out

    def _fan_out(self, session: WatchedSession, seq: int, direction: str, raw: str, page_only: bool = False) -> None:
        """The line to every frontend: staged (this is the hub's thread, every frontend's stager)."""
        with self._lock:
            frontends = list(self.frontends)
        clean = scrub(raw, session.literals) if frontends else raw
        # each variant of the line is framed once, for every frontend that gets it
        envelope: bytes | None = None
        exact: bytes | None = None
        tagged: bytes | None = None
        held = False
        for frontend in frontends:
            if frontend.kind == "page":
                if envelope is None:
                    envelope = frame_text(json.dumps({"k": "line", "s": session.key, "n": seq, "d": direction, "l": clean}))
                frontend._staged.append(envelope)  # (offer's staging, inline: a line, each frontend)
            elif page_only:
                continue
            elif frontend.only == session.key:
                if exact is None:
                    exact = frame_text(clean)
                frontend._staged.append(exact)  # one session's /ws: the lines as they are
            elif frontend.only is None:
                if session.session_id is None:
                    if not held:
                        held = True
                        session.untagged.append(raw)
                    continue
                if tagged is None:
                    tagged = frame_text(_tagged(clean, session.session_id))
                frontend._staged.append(tagged)
        if not held and session.session_id is None and not page_only:
            session.untagged.append(raw)  # (no /ws frontend now; one may join before the id is known)
        del session.untagged[:-HISTORY_LINES]

    def _flush_untagged(self, session: WatchedSession) -> None:
        waiting, session.untagged = session.untagged, []
        with self._lock:
            frontends = [f for f in self.frontends if f.kind == "notes" and f.only is None]
        for raw in waiting if frontends else ():
            clean = scrub(raw, session.literals)
            tagged = frame_text(_tagged(clean, session.session_id) if session.session_id else clean)
            for frontend in frontends:
                frontend.offer(tagged)

    def _status(self, status: dict[str, str], session: WatchedSession) -> None:
        """A status line of the notes: on ``/ws`` (every session) ``connected`` when a session
        shows up and ``disconnected`` only when no session is left running (the notes' frontends
        mark every tab of the connection disconnected on it); on ``/ws/<key>`` both for that
        session."""
        with self._lock:
            frontends = list(self.frontends)
            others_running = any(s.running and s.visible and s is not session for s in self.sessions.values())
        text = json.dumps(status)
        for frontend in frontends:
            if frontend.kind == "page":
                continue
            if frontend.only == session.key or (frontend.only is None and (status is CONNECTED or not others_running)):
                frontend.offer(text, vital=True)

    def _listing(self) -> list[dict[str, Any]]:
        """The shown sessions' summaries, each with how many of its calls wait for a person
        (the lock is held)."""
        waiting: collections.Counter[str] = collections.Counter()
        for ask in self._asks_by_request.values():
            if ask.decision is None and ask.gone is None and ask.session is not None:
                waiting[ask.session.key] += 1
        return [s.public(waiting[s.key]) for s in self.sessions.values() if s.visible]

    def _publish_sessions(self) -> None:
        with self._lock:
            frontends = [f for f in self.frontends if f.kind == "page"]
            listing = self._listing()
        if frontends:
            text = json.dumps({"k": "sessions", "sessions": listing})
            for frontend in frontends:
                frontend.offer(text, vital=True)

    def _publish_asks(self) -> None:
        with self._lock:
            frontends = [f for f in self.frontends if f.kind == "page"]
            asks = self.waiting(shown=True)
        if frontends:
            text = json.dumps({"k": "asks", "asks": asks})
            for frontend in frontends:
                frontend.offer(text, vital=True)
        self._publish_sessions()  # (a session with a call waiting reads "waiting")

    # ------------------------------------------------------------------ frontends

    def join(self, frontend: Frontend) -> None:
        """Add a frontend: a page gets the listing first; a notes frontend ``is connected``
        when what it watches runs now (``disconnected`` for one ended session)."""
        if frontend._try_send is not None:
            frontend.writer = self.writer
        frontend.stager = self._thread.ident
        with self._lock:
            self.frontends.add(frontend)
            if frontend.kind == "page":
                frontend.offer(json.dumps({"k": "hello", "steer": self.steer, "instance": self.instance, "sessions": self._listing(),
                                           "asks": self.waiting(shown=True), **self.page_hello}))  # fmt: skip
            else:
                watched = [s for s in self.sessions.values() if s.visible and frontend.only in (None, s.key)]
                if any(s.running for s in watched):
                    frontend.offer(json.dumps(IS_CONNECTED))
                elif frontend.only is not None and watched:
                    frontend.offer(json.dumps(DISCONNECTED))
        frontend.start()

    def leave(self, frontend: Frontend) -> None:
        with self._lock:
            self.frontends.discard(frontend)
            self._watched_at = time.monotonic()
        frontend.close()

    def history(self, key: str) -> list[tuple[int, str, str]] | None:
        """The kept lines of session ``key``, scrubbed (``None``: no such session is shown).
        Lines before the first one were let go (see ``HISTORY_BYTES``, ``ENDED_KEEP_SECONDS``)."""
        with self._lock:
            session = self.sessions.get(key)
        if session is None or not session.visible:
            return None
        while True:
            try:
                kept = list(session.history)  # (the hub's thread appends meanwhile)
                break
            except RuntimeError:
                continue
        return [(seq, direction, scrub(raw, session.literals)) for seq, direction, raw in kept]

    def session(self, key: str) -> WatchedSession | None:
        with self._lock:
            session = self.sessions.get(key)
        return session if session is not None and session.visible else None

    def by_session_id(self, session_id: str) -> WatchedSession | None:
        with self._lock:
            found = [s for s in self.sessions.values() if s.visible and (s.session_id or s.resuming) == session_id]
        running = [s for s in found if s.running]
        chosen = running or found
        return chosen[-1] if chosen else None

    def running_sessions(self) -> list[WatchedSession]:
        with self._lock:
            return [s for s in self.sessions.values() if s.visible and s.running]

    # ------------------------------------------------------------------ asks and decisions

    def _seen_request(self, session: WatchedSession, request_id: str, request: dict[str, Any]) -> None:
        tool_use_id = request.get("tool_use_id")
        if not isinstance(tool_use_id, str):
            return
        with self._lock:
            ask = self._asks_by_tool.get(tool_use_id)
            if ask is None:
                self._seen_requests[tool_use_id] = (session, request_id)
                return
            self._link(ask, session, request_id)
        self._publish_asks()

    def _link(self, ask: Ask, session: WatchedSession, request_id: str) -> None:
        ask.session = session
        ask.request_id = request_id
        self._asks_by_request[request_id] = ask

    def open_ask(self, tool_use_id: str, tool_name: str, tool_input: dict[str, Any],
                 suggestions: list[dict[str, Any]] | None = None) -> Ask:  # fmt: skip
        """A request the program asks the relay's frontends to decide (:func:`relay.ask`);
        ``suggestions``: the CLI's ``permission_suggestions`` for it, in their wire form."""
        ask = Ask(tool_use_id, tool_name, tool_input, [x for x in suggestions or () if isinstance(x, dict)])
        with self._lock:
            self._asks_by_tool[tool_use_id] = ask
            seen = self._seen_requests.pop(tool_use_id, None)
            if seen is not None:
                self._link(ask, *seen)
        if seen is not None:
            self._publish_asks()
        return ask

    def close_ask(self, ask: Ask) -> None:
        with self._lock:
            if self._asks_by_tool.get(ask.tool_use_id) is ask:
                del self._asks_by_tool[ask.tool_use_id]
            if ask.request_id is not None and self._asks_by_request.get(ask.request_id) is ask:
                del self._asks_by_request[ask.request_id]
            if ask.gone is None and ask.decision is None:
                ask.gone = "the program stopped waiting"
        self._publish_asks()

    def _gone(self, request_id: str, why: str) -> None:
        with self._lock:
            ask = self._asks_by_request.pop(request_id, None)
            if ask is None:
                return
            self._asks_by_tool.pop(ask.tool_use_id, None)
            if ask.gone is None and ask.decision is None:
                ask.gone = why
                ask.decided.set()
        self._publish_asks()

    def tool_name_of(self, request_id: Any) -> str | None:
        """The tool name of the request waiting under ``request_id`` (``None``: none waits)."""
        with self._lock:
            ask = self._asks_by_request.get(request_id) if isinstance(request_id, str) else None
            return ask.tool_name if ask is not None else None

    def waiting(self, shown: bool = False) -> list[dict[str, Any]]:
        """The requests a frontend may decide now (linked to their session, undecided), as a
        page is shown them (scrubbed); ``shown=False``: the same (kept for callers of old)."""
        with self._lock:
            return [a.public() for a in self._asks_by_request.values()
                    if a.decision is None and a.gone is None and a.session is not None and a.session.visible]  # fmt: skip

    def decide(self, request_id: Any, allow: bool, *, shown: tuple[Any, Any] | None = None, reason: str = "",
               who: str = "a relay frontend", edited: Any = None, always: Any = None) -> str | None:  # fmt: skip
        """Decide a waiting request; ``None`` when this decision is the one taken, else why not.
        ``shown``: the tool name and input the person saw (as shown: scrubbed); a request that
        differs is refused. ``edited``: allow it with this input instead (what runs), only where
        nothing of the input was hidden from the page. ``always``: allow it and add this rule
        for the session, only one of the rules the page was offered (:meth:`Ask.offered`)."""
        if not self.steer:
            return "this relay is read-only: the program did not allow steering"
        if not isinstance(request_id, str):
            return "a decision names the request_id of a waiting request"
        with self._lock:
            ask = self._asks_by_request.get(request_id)
            if ask is None or ask.session is None or not ask.session.visible:
                return f"no request {request_id!r} is waiting (answered, cancelled, ended or never asked)"
            if ask.decision is not None:
                return f"request {request_id!r} was already decided ({ask.decision}, by {ask.who})"
            if ask.gone is not None:
                return f"request {request_id!r} can no longer be decided: {ask.gone}"
            if ask.session.exited:
                return f"request {request_id!r} can no longer be decided: the session ended"
            if shown is not None and (shown[0] != ask.tool_name or not _same(shown[1], ask.shown_input())):
                return f"request {request_id!r} is not the call that was shown (tool name or input differ)"
            if (edited is not None or always is not None) and not allow:
                return "only an allow takes an edited input or a rule"
            if edited is not None and always is not None:
                return "an edited input or a rule, not both: a rule the CLI suggested is for the call as it asked"
            if edited is not None:
                if not isinstance(edited, dict):
                    return "an edited input is a JSON object"
                if not _same(ask.shown_input(), ask.input):
                    return f"request {request_id!r} holds a secret the page does not show: allow or deny it as it is"
                if shown is None:
                    return "an edited input names the call it edits (its tool name and input as shown)"
            if always is not None and not any(_same(always, rule) for rule in ask.offered()):
                return "that rule is not one the CLI suggested for this call (the rules offered are shown with it)"
            ask.updated_input = dict(edited) if edited is not None else None
            ask.updated_permissions = [always] if always is not None else None
            ask.decision = "allow" if allow else "deny"
            ask.reason = reason
            ask.who = who
            ask.decided.set()
        self._publish_asks()
        return None

    # ------------------------------------------------------------------ steering

    def interrupt(self, session: WatchedSession) -> str | None:
        if not self.steer:
            return "this relay is read-only: the program did not allow steering"
        if not session.running or session.exited:
            return f"session {session.key} has ended"
        request_id = f"relay-{secrets.token_hex(8)}"
        try:
            session.inject(json.dumps({"type": "control_request", "request_id": request_id, "request": {"subtype": "interrupt"}}) + "\n")
        except Exception as e:
            return f"could not reach the session's CLI: {e}"
        return None

    def message(self, session: WatchedSession, content: Any) -> str | None:
        if not self.steer:
            return "this relay is read-only: the program did not allow steering"
        if not session.running or session.exited:
            return f"session {session.key} has ended"
        if not session.input_open:
            return f"session {session.key} takes no more input (its program ended it)"
        frame = {"type": "user", "message": {"role": "user", "content": content}, "parent_tool_use_id": None,
                 "session_id": session.session_id or ""}  # fmt: skip
        try:
            session.inject(json.dumps(frame) + "\n")
        except Exception as e:
            return f"could not reach the session's CLI: {e}"
        return None

    def label(self, session_id: str, label: str) -> bool:
        """Say on the page who the session with ``session_id`` works for now (a session host
        labels each turn with its worker's pid and machine); ``False``: no such session."""
        session = self.by_session_id(session_id)
        if session is None:
            return False
        if session.label != label:
            session.label = label[:200]
            self._publish_sessions()
        return True

    def set_mode(self, session: WatchedSession, mode: Any, answer: Callable[[str | None], None]) -> str | None:
        """Change the session's permission mode (``set_permission_mode``); ``answer`` gets
        ``None`` once the CLI took it, else the CLI's refusal. ``None`` when the request was
        sent, else why not (nothing sent)."""
        if not self.steer:
            return "this relay is read-only: the program did not allow steering"
        if mode not in PERMISSION_MODES:
            return f"{mode!r} is not a permission mode ({', '.join(PERMISSION_MODES)})"
        return self._change(session, "permission_mode", mode, {"subtype": "set_permission_mode", "mode": mode}, answer)

    def set_model(self, session: WatchedSession, model: Any, allowed: Iterable[str], answer: Callable[[str | None], None]) -> str | None:
        """Switch the session's model (``set_model``) to one of ``allowed``; as :meth:`set_mode`."""
        if not self.steer:
            return "this relay is read-only: the program did not allow steering"
        choices = list(allowed)
        if not isinstance(model, str) or model not in choices:
            return f"{model!r} is not a model this relay offers ({', '.join(choices) or 'none'})"
        return self._change(session, "model", model, {"subtype": "set_model", "model": model}, answer)

    def _change(self, session: WatchedSession, attribute: str, value: str, request: dict[str, Any],
                answer: Callable[[str | None], None]) -> str | None:  # fmt: skip
        """Send ``request``; once the CLI took it the session's ``attribute`` is ``value`` (the
        pages are told) and ``answer`` gets ``None``, else the CLI's refusal."""

        def on_answer(response: dict[str, Any]) -> None:
            if response.get("subtype") == "success":
                setattr(session, attribute, value)
                self._publish_sessions()
                answer(None)
            else:
                answer(f"the CLI refused {value}: {response.get('error') or 'no reason given'}")

        return self.control(session, request, on_answer)

    def control(self, session: WatchedSession, request: dict[str, Any], on_answer: Callable[[dict[str, Any]], None]) -> str | None:
        """Send a control request of the relay's own (``mcp_set_servers`` for an IDE binding);
        ``on_answer`` gets the CLI's response object on the hub's thread."""
        if not session.running or session.exited:
            return f"session {session.key} has ended"
        request_id = f"relay-{secrets.token_hex(8)}"
        session.relay_requests[request_id] = on_answer
        try:
            session.inject(json.dumps({"type": "control_request", "request_id": request_id, "request": request}) + "\n")
        except Exception as e:
            session.relay_requests.pop(request_id, None)
            return f"could not reach the session's CLI: {e}"
        return None

    def notify_pages(self, envelope: dict[str, Any]) -> None:
        with self._lock:
            frontends = [f for f in self.frontends if f.kind == "page"]
        text = json.dumps(envelope)
        for frontend in frontends:
            frontend.offer(text)

    # ------------------------------------------------------------------ end

    def flush(self, timeout: float = 2.0) -> None:
        """Let what was posted reach the frontends (the last lines of a program that ends):
        the hub's inbox handled, then each frontend's queue written, for ``timeout`` at most."""
        deadline = time.monotonic() + timeout
        self.drain(timeout)
        with self._lock:
            frontends = list(self.frontends)
        while time.monotonic() < deadline and not all(f.idle for f in frontends):
            time.sleep(0.01)

    def close(self) -> None:
        with self._lock:
            frontends = list(self.frontends)
            self.frontends.clear()
            for ask in list(self._asks_by_tool.values()):
                if ask.gone is None and ask.decision is None:
                    ask.gone = "the relay closed"
                    ask.decided.set()
        for frontend in frontends:
            frontend.close()
        with self._inbox_ready:
            self._stopped = True
            self._inbox_ready.notify()
        if self._thread is not threading.current_thread():
            self._thread.join(5.0)
        self.writer.close()
        for frontend in frontends:
            frontend.join()


_WATCHED_TYPES = frozenset({"system", "result", "control_request", "control_cancel_request", "control_response", "user", "assistant"})


def _tokens(usage: Any, output: bool) -> int:
    """The input tokens of ``usage`` (fresh, read from and written to the cache), and with
    ``output`` its output tokens too."""
    if not isinstance(usage, dict):
        return 0
    names = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens") + (("output_tokens",) if output else ())
    return sum(v for v in (usage.get(n) for n in names) if isinstance(v, int) and not isinstance(v, bool) and v > 0)


_UNNAMED = ('"session_id": ""', '"session_id":""', '"session_id": "default"', '"session_id":"default"')


def _tagged(line: str, session_id: str) -> str:
    """``line`` with ``session_id`` set where it is missing, empty or ``"default"`` (lines the
    SDK writes: ``ClaudeClient.query()`` says ``"default"``, as the official SDK's; the CLI's
    control requests); a line that names a session is left as it is."""
    if '"session_id"' in line and not any(mark in line for mark in _UNNAMED):
        return line
    try:
        frame = json.loads(line)
    except ValueError:
        return line
    if not isinstance(frame, dict) or frame.get("session_id") not in (None, "", "default"):
        return line
    frame["session_id"] = session_id
    return json.dumps(frame)


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
