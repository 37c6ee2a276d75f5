"""Prewarm: start Claude Code and its connection before the prompt is known.

Starting the CLI, connecting and ``initialize`` take ~0.5 s; a turn with a
fast model takes a few tens of ms. :func:`prewarm` keeps sessions ready for
:func:`query` calls that pass the *same* options object::

    options = ClaudeAgentOptions(model="claude-sonnet-4-6")
    pool = prewarm(options)          # returns at once; a CLI starts in the background
    ...
    for msg in query("hi", options): # takes the warm session; another one starts behind it
        ...
    pool.close()                     # or let interpreter exit close it

For a :class:`ClaudeClient`, call ``client.prewarm()`` instead of ``connect()``.

The warm-up turn
----------------
Starting and connecting is not all: on any session's first turn the CLI
spends a few tens of ms building its system prompt and tool list (2.1.330:
~25 ms of a ~60 ms first message). A warm session therefore also runs one
*blocked* turn: it sends a marker prompt that an SDK-owned ``UserPromptSubmit``
hook blocks, the documented way to stop a prompt before any API call. The
marker never reaches the model, costs nothing, and is not kept in the
conversation; the session file records one "blocked by hook" line saying so.
The hook stays registered and lets every other prompt through.

The warm-up turn is skipped (the session is still started ahead) where
someone else could see the marker: when the options carry their own
``UserPromptSubmit`` hooks, load settings files (``setting_sources``,
``skills``), pass ``settings``, ``plugins`` or ``extra_args``; with
``include_hook_events`` (the SDK's hook would show in the stream); and on
CLIs older than it was verified on. Pass ``warm_turn=False`` to skip it always.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
from typing import Any

from ._engine import cli as _cli
from ._engine.deadline import Deadline
from ._errors import CLIConnectionError
from ._engine.session import Ended, Session
from ._engine.start import register_ready
from ._engine.stock import Stock
from .tracing import RunTrace
from .types import AssistantMessage, ClaudeAgentOptions, ResultMessage, StreamEvent

logger = logging.getLogger("claude_sdkurl.prewarm")

WARMUP_HOOK_ID = "claude_sdkurl_prewarm"
#: The oldest CLI on which the blocked warm-up turn was verified to make no API call.
WARM_TURN_MIN_CLI = (2, 1, 120)
WARM_TURN_TIMEOUT = 30.0


class WarmTurnError(CLIConnectionError):
    """The CLI did not handle the blocked warm-up turn as expected."""


def warm_turn_obstacle(options: ClaudeAgentOptions) -> str | None:
    """Why a blocked warm-up turn must not run with ``options`` (someone else would see it), or ``None``."""
    if options.hooks and options.hooks.get("UserPromptSubmit"):
        return "the options have UserPromptSubmit hooks"
    if options.setting_sources or options.skills is not None:
        return "settings files are loaded (setting_sources/skills), and their hooks would run"
    if options.settings is not None:
        return "settings are passed"
    if options.plugins:
        return "plugins are loaded"
    if options.extra_args:
        return "extra_args are passed"
    if options.include_hook_events:
        return "include_hook_events would show the SDK's own hook in the message stream"
    if options.session_store is not None:
        return "a session_store would receive the warm-up turn's transcript"
    return None


class _WarmupHook:
    """The SDK's ``UserPromptSubmit`` hook: blocks its own marker prompt, lets the rest through."""

    def __init__(self) -> None:
        self.marker = (
            f"[claude_sdkurl prewarm {os.urandom(16).hex()}] A prompt the SDK blocks with its own hook "
            "to get the CLI's first-turn setup done ahead; it is never sent to the model."
        )

    def __call__(self, input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        if isinstance(input, dict) and input.get("prompt") == self.marker:
            return {"decision": "block", "reason": "claude_sdkurl prewarm (not sent to the model)"}
        return {}


def _run_warm_turn(session: Session, marker: str, timeout: float) -> None:
    session.send_user(marker, session_id="")
    deadline = Deadline(timeout)
    while True:
        if deadline.passed():
            raise WarmTurnError("the warm-up turn did not end in time")
        try:
            item = session.next_message(timeout=deadline.left())
        except queue.Empty as e:
            raise WarmTurnError("the warm-up turn did not end in time") from e
        if isinstance(item, Ended):
            raise item.error or WarmTurnError(f"Claude Code exited during the warm-up turn (code {item.exit_code})")
        if isinstance(item, (AssistantMessage, StreamEvent)):
            # Never seen: the hook did not block. Stop the turn at once; the session is dropped.
            session.interrupt_turn(drain=False, timeout=2.0)
            raise WarmTurnError("the CLI did not block the warm-up prompt")
        if isinstance(item, ResultMessage):
            return


def start_warm(session: Session, warm_turn: bool = True, timeout: float = WARM_TURN_TIMEOUT) -> None:
    """Start ``session`` and, where it is safe, run the blocked warm-up turn (see the module doc).

    A failed warm-up turn closes the session and raises :class:`WarmTurnError`;
    other errors are those of :meth:`Session.start`.
    """
    if not warm_turn or warm_turn_obstacle(session.options) is not None or not _cli_verified(session.options):
        session.start()
        return
    hook = _WarmupHook()
    session.start(extra_hooks={"UserPromptSubmit": (WARMUP_HOOK_ID, hook)})
    try:
        _run_warm_turn(session, hook.marker, timeout)
    except BaseException:
        session.close()
        raise


def open_warm_session(options: ClaudeAgentOptions, warm_turn: bool = True, trace: RunTrace | None = None) -> tuple[Session, bool]:
    """A started session for ``options``, through the warm-up turn where safe.

    Returns the session and whether the warm-up turn is still worth trying:
    ``False`` after it failed, in which case the session returned is a plain
    one started without it. ``trace``: the run's spans (a prewarmed client's), set on the
    session before it starts and current while the CLI launches (its W3C parent).
    """
    session = Session(options)
    session.trace = trace
    try:
        with trace.launching() if trace is not None else contextlib.nullcontext():
            start_warm(session, warm_turn)
    except WarmTurnError as e:
        logger.warning("prewarm: %s; starting without the warm-up turn", e)
        session = Session(options)
        session.trace = trace
        with trace.launching() if trace is not None else contextlib.nullcontext():
            session.start()
        return session, False
    return session, warm_turn


def _cli_verified(options: ClaudeAgentOptions) -> bool:
    try:
        version = _cli.cli_version(_cli.find_cli(options.cli_path))
    except Exception:
        return False  # Session.start() reports it
    return version is not None and version >= WARM_TURN_MIN_CLI


_pools: dict[int, WarmPool] = {}
_pools_lock = threading.Lock()


class WarmPool(Stock):
    """Keeps up to ``size`` started sessions for one options object.

    With ``warm_turn`` (the default) each one has also run the blocked
    warm-up turn where that is safe (see the module doc).
    """

    def __init__(self, options: ClaudeAgentOptions, size: int = 1, warm_turn: bool = True) -> None:
        if not isinstance(options, ClaudeAgentOptions):
            raise TypeError("prewarm() needs the ClaudeAgentOptions object you will pass to query()")
        if size < 1:
            raise ValueError("size must be at least 1")
        self.options = options
        self.size = size
        self.warm_turn = warm_turn
        super().__init__()
        self._ready: list[Session] = []
        self._fill()

    def _fill(self) -> None:
        with self._cond:
            if self._closed:
                return
            while len(self._ready) + self._starting < self.size:
                self._launch(self._start_one, "claude-sdkurl-prewarm")

    def _start_one(self) -> None:
        try:
            session, self.warm_turn = open_warm_session(self.options, self.warm_turn)
        except BaseException as e:  # reported to the next take(), which then starts normally
            self._failed("prewarming a session", e)
            return
        if not self._arrived(self._ready, session):
            session.close()

    def take(self, wait: bool = True) -> Session | None:
        """A started session, or ``None``; with ``wait``, waits for one being started."""
        with self._cond:
            while True:
                while self._ready:
                    session = self._ready.pop(0)
                    if session.ended is None:
                        break
                    session.close()
                else:
                    if wait and self._starting and not self._closed:
                        self._cond.wait()
                        continue
                    session = None
                break
        self._fill()
        return session

    def close(self) -> None:
        """Stop the warm sessions and forget this pool."""
        ready, threads = self._shut(self._ready)
        for session in ready:
            session.close()
        for t in threads:
            t.join(30)
        with _pools_lock:
            if _pools.get(id(self.options)) is self:
                del _pools[id(self.options)]

    def __enter__(self) -> WarmPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def prewarm(options: ClaudeAgentOptions, size: int = 1, warm_turn: bool = True) -> WarmPool:
    """Keep ``size`` sessions started for ``query(..., options)`` with this very options object.

    ``warm_turn=False`` skips the blocked warm-up turn (see the module doc).
    """
    with _pools_lock:
        old = _pools.get(id(options))
    if old is not None:
        old.close()
    pool = WarmPool(options, size, warm_turn)
    with _pools_lock:
        _pools[id(options)] = pool
    return pool


def take_warm(options: ClaudeAgentOptions) -> Session | None:
    """The warm session for ``options``, if :func:`prewarm` was called for it."""
    with _pools_lock:
        pool = _pools.get(id(options))
    if pool is None or pool.options is not options:
        return None
    return pool.take()


def close_all() -> None:
    """Close every warm pool (also done at interpreter exit)."""
    with _pools_lock:
        pools = list(_pools.values())
    for pool in pools:
        pool.close()


register_ready(take_warm, warm=True)

import atexit  # noqa: E402

atexit.register(close_all)
