"""The session engine: one CLI, one protocol core, one transport, the callback workers.

It also carries out what the plan asks around the CLI: the session-store mirror
(flushed before each result is shown), the removal of a resumed session's
temporary config dir once the CLI is gone, the run-ceiling timer of ``run``,
and the diagnosis of the CLI's exit (an unknown flag names the option that
needs it).

Threads (all daemon, all joined by :meth:`Session.close`):

* the transport's reader (stdout reader, or the WebSocket connection handler),
  which only parses and routes: it never runs user code;
* the callback worker pool, which runs ``can_use_tool``, hooks and MCP tools;
* the transport's own helpers (stderr reader, server thread, exit waiter).

Consumers pull messages with :meth:`Session.next_message`; any thread may call
:meth:`Session.control` or :meth:`Session.send` at any time.
"""

from __future__ import annotations

import atexit
import collections
import itertools
import logging
import os
import queue
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import cancel as _cancel
from . import cli as _cli
from .control import HANDLERS, answer_bound, failure_answer
from .._errors import (
    ClaudeSDKError,
    CLIConnectionError,
    CLINotFoundError,
    ControlRequestError,
    ControlRequestTimeoutError,
    ExitedBeforeConnectingError,
    ProcessError,
    ResultError,
    ResumeNotFoundError,
    UnsupportedOptionError,
    UnsupportedControlRequestError,
)
from .protocol import (
    ControlCancelReceived,
    ControlRequestReceived,
    ControlResponseReceived,
    Event,
    MessageReceived,
    MirrorFrame,
    Protocol,
    ProtocolErrorReceived,
    RunChanged,
)
from .deadline import Deadline
from .launch import Launch, LaunchPlan, launch
from .parse import parse_message
from .run import RunTracker
from .transport import Transport, TransportCallbacks
from .workers import CALLBACK_WORKERS, Workers
from .carried import NOTHING, Carried, carried
from .mirror import MirrorBatcher
from . import observe
from ..types import AssistantMessage, ClaudeAgentOptions, Message, ResultMessage, SessionKey, StreamEvent, SystemMessage

if TYPE_CHECKING:
    from .resume import Materialized

logger = logging.getLogger("claude_sdkurl.session")

CONNECT_TIMEOUT = 60.0
CLOSE_WAIT = 15.0  # seconds a second close() waits for the first one

_live_sessions: weakref.WeakSet[Session] = weakref.WeakSet()


@atexit.register
def _close_all_sessions() -> None:
    """Interpreter exit with live sessions: stop their CLIs instead of leaking them."""
    for session in list(_live_sessions):
        try:
            session.close()
        except Exception:  # pragma: no cover - best effort at exit
            pass


OUTSIDE = "_claude_sdkurl_outside"  # the attribute outside_of() reads


def outside_of(message: Message) -> str | None:
    """Whether ``message`` belongs to a turn someone else asked for or stopped, through a relay
    serving this process (:mod:`claude_sdkurl.relay`): ``"turn"`` (part of a turn a frontend's
    message started), ``"interrupted"`` (the result of this session's turn that a frontend
    interrupted), else ``None``."""
    return getattr(message, OUTSIDE, None)


def _uuid4() -> str:
    import uuid  # where needed (a reconnect, a store's failure): 2.4 ms off every launch

    return str(uuid.uuid4())


@dataclass(slots=True)
class Ended:
    """The stream is over: ``error`` is ``None`` for a clean end."""

    error: BaseException | None
    exit_code: int | None


@dataclass(slots=True)
class _Waiter:
    """What a thread waiting in :meth:`Session.control` is woken with."""

    done: threading.Event
    result: ControlResponseReceived | BaseException | None = None


@dataclass(slots=True)
class _Inflight:
    """A control request from the CLI being answered on the worker."""

    answered: bool = False
    timer: threading.Timer | None = None


def _check_blocking_hooks(plan: LaunchPlan, answer: dict[str, Any]) -> None:
    """A hook set to fail closed (``on_failure`` other than ``"continue"``) must not fail open:
    refuse a CLI whose ``initialize`` answer does not say it honours ``onFailure``, or says it
    did not register our hooks (the official SDK's rule and words)."""
    blocking = any(
        entry.get("onFailure") not in (None, "continue")
        for matchers in (plan.initialize.get("hooks") or {}).values()
        for entry in matchers
    )
    if not blocking:
        return
    if not answer.get("hook_on_failure_supported"):
        raise CLIConnectionError(
            "The process answering initialize does not honor on_failure on hook matchers, so a hook that "
            'fails would not block. Update Claude Code if it is old, or remove on_failure="block" from your hooks.'
        )
    if answer.get("hooks_applied") is False:
        raise CLIConnectionError(
            "This session was already running and did not register your hooks, so a hook set to "
            'on_failure="block" would never run. Start a new session, or remove on_failure="block" from your hooks.'
        )


def _check_mcp_servers_applied(plan: LaunchPlan, answer: dict[str, Any]) -> None:
    """MCP servers sent in ``initialize`` must be taken: a CLI whose answer does not say whether
    it took them is too old to read them there, and would run without them (the TypeScript SDK's
    rule and words: the session ends). One that says it did not is warned about, as there."""
    if "mcpServers" not in plan.initialize:
        return
    applied = answer.get("mcp_servers_applied")
    if not isinstance(applied, bool):
        version = answer.get("claude_code_version")
        shown = f" (version {version})" if isinstance(version, str) else ""
        raise CLIConnectionError(
            f"This Claude Code{shown} is too old to read MCP servers over stdin, which is how this SDK sends them by "
            "default, so the session was ended and no prompt was sent. Update the Claude Code you start to "
            "2.1.326 or newer, or set mcp_servers_delivery='argv', which puts the servers' env and headers on "
            "Claude Code's command line, where other users of the machine can read them."
        )
    if not applied:
        logger.warning(
            "Claude Code reported that it did not load the MCP servers sent in the initialize request, so this "
            "session may be running without them. Check that no wrapper removes --await-initialize from the launch."
        )


_NO_CONVERSATION = "No conversation found with session ID: "  # the CLI's words (2.1.120 and 2.1.330)


def _resume_not_found(plan: LaunchPlan, exited: ExitedBeforeConnectingError) -> ResumeNotFoundError | None:
    """An unknown ``resume`` id, as 2.1.120 says it on stderr before it would connect to the
    WebSocket, as the error result a CLI over stdio writes (and the official SDK raises as a
    :class:`ResultError`); ``None`` for any other early exit."""
    resume = plan.options.resume
    said = _NO_CONVERSATION + resume if resume else None
    if said is None or said not in (line.strip() for line in (exited.stderr or "").splitlines()):
        return None
    frame = {"type": "result", "subtype": "error_during_execution", "is_error": True, "duration_ms": 0,
             "duration_api_ms": 0, "num_turns": 0, "session_id": resume, "errors": [said]}  # fmt: skip
    error = ResumeNotFoundError(f"Claude Code returned an error result: {said}", data=frame, exit_code=exited.exit_code)
    error.stderr = exited.stderr
    error.__cause__ = exited
    return error


_LEDGER_KEYS = itertools.count(1)


class Session:
    """A live conversation with one Claude Code CLI.

    Args:
        options: the session's options.
        transport: a ready-made :class:`Transport` (e.g. a test double); by
            default one is chosen from the CLI's version.
    """

    def __init__(self, options: ClaudeAgentOptions | None = None, transport: Transport | None = None) -> None:
        self.options = options if options is not None else ClaudeAgentOptions()
        self._transport = transport
        self.plan: LaunchPlan | None = None  # set by start()
        # The run's spans (set by query()/the client before start(); inert with tracing off).
        self.trace: observe.Trace | None = None
        # Ledgers this session's messages are counted in (a client's own; open ones join).
        self.ledgers: list[observe.Counter] = []
        self._run = RunTracker()
        self._protocol = Protocol(run=self._run)
        # Set while the run is over (see _run.py); cleared when work reopens it.
        self._run_ended = threading.Event()
        self._ceiling_timer: threading.Timer | None = None
        self._input_ended = False
        self._rx_lock = threading.Lock()
        self._outside_turn = False  # the lines read now answer someone else's message (see _on_outside)
        self._outside_interrupt = False  # someone else interrupted the turn under way
        self._tx_lock = threading.Lock()
        self._messages: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._local: collections.deque[Any] = collections.deque()  # the rest of a batch being consumed
        self._inflight: dict[str, _Inflight] = {}
        self._answer_lock = threading.Lock()
        # Answers are idempotent for the CLI (an answer to an unknown id is ignored), so the
        # last few are sent again after a WebSocket reconnect in case the drop swallowed them.
        self._recent_answers: collections.deque[str] = collections.deque(maxlen=64)
        # Over WebSocket each prompt carries a uuid, by which the CLI drops a copy it already
        # has; the last few are sent again after a reconnect, in case the drop swallowed them.
        self._recent_prompts: collections.deque[str] = collections.deque(maxlen=16)
        self._state_lock = threading.Lock()
        self._worker: Workers | None = None
        self._ended: Ended | None = None
        # Set at each result and at the end of the stream: what an interrupt by signal waits for.
        self._turn_or_stream_over = threading.Event()
        self._closing = False
        self._closed = False
        self._closer: threading.Thread | None = None
        self._abort = False
        self._close_done = threading.Event()
        # Called once at the first model output or at the end (see when_answering).
        self._answer_waiters: list[Callable[[], None]] = []
        self.server_info: dict[str, Any] | None = None
        # verbatim_prompts as it was when the session started: toggling the option later must
        # not split one session's prompts between marked and unmarked (as the official).
        self._verbatim = bool(self.options.verbatim_prompts)
        # The CLI's version, read from its first init message (as the official SDK: not at all
        # with CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK set to anything in our environment).
        self._version_checked = bool(os.environ.get("CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK"))
        # With options.session_store: the store's copy of a resumed session, laid out in a
        # temporary config dir (removed at close), and the mirror into the store.
        self._materialized: Materialized | None = None
        self._mirror: MirrorBatcher | None = None
        # What a resumed session had cost before this run (read at its first init message).
        self._carried: Carried | None = None
        # This run's key in the ledgers: unique for the process's life (an id() is reused once
        # a session is collected, and two runs would be booked as one).
        self._ledger_key = next(_LEDGER_KEYS)

    # What start() planned (empty before it): read from the plan, not copied from it.

    @property
    def hook_callbacks(self) -> dict[str, Any]:
        return self.plan.hook_callbacks if self.plan is not None else {}

    @property
    def sdk_mcp_servers(self) -> dict[str, Any]:
        return self.plan.sdk_mcp_servers if self.plan is not None else {}

    @property
    def cli_path(self) -> str | None:
        return self.plan.cli if self.plan is not None else None

    @property
    def cli_version(self) -> tuple[int, int, int] | None:
        return self.plan.cli_version if self.plan is not None else None

    @property
    def input_ended(self) -> bool:
        """The CLI's input is closed (the run is over): it should exit by itself now."""
        return self._input_ended

    @property
    def cli_pid(self) -> int | None:
        """The CLI's local process id, once started (``None`` for a transport without one)."""
        return self._transport.cli_pid() if self._transport is not None else None

    @property
    def transport_name(self) -> str | None:
        return self._transport.name if self._transport is not None else None

    # ------------------------------------------------------------------ lifecycle

    def start(
        self, extra_hooks: dict[str, tuple[str, Callable[..., Any]]] | None = None, *, launched: Launch | None = None
    ) -> dict[str, Any]:
        """Start the CLI, connect, and send ``initialize``; returns its answer.

        ``extra_hooks`` registers hook callbacks of the SDK's own beside the
        user's (see :func:`claude_sdkurl._engine.launch.hooks_config`). ``launched``: a
        launch already made for this session's options (:func:`claude_sdkurl._engine.launch.launch`,
        its CLI perhaps booting); the session takes it over, stopping it if it fails.
        """
        try:
            if launched is None:
                launched = launch(self.options, self._transport, extra_hooks)
            self._transport, plan = launched.transport, launched.plan
            self.plan = plan
            self._materialized = plan.materialized
            options = plan.options
            if options.session_store is not None and plan.projects_dir is not None:
                self._mirror = MirrorBatcher(
                    options.session_store,
                    plan.projects_dir,
                    self._mirror_error,
                    eager=options.session_store_flush == "eager",
                )
                if self.trace is not None:
                    self._mirror.parent_span = self.trace.parent_span
            self._run.bidirectional = plan.bidirectional
            self._run.ceiling_ms = plan.ceiling_ms
            self._protocol.max_line = plan.max_line
            _live_sessions.add(self)
            self._transport.start(
                TransportCallbacks(
                    on_data=self._on_data, on_exit=self._on_exit, on_reconnect=self._on_reconnect, on_error=self._fatal,
                    on_outside=self._on_outside,
                )
            )
            try:
                self._transport.wait_ready(CONNECT_TIMEOUT)
            except ExitedBeforeConnectingError as exited:
                raise _resume_not_found(plan, exited) or exited
            self.server_info = self.control(plan.initialize, timeout=plan.initialize_timeout)
            _check_blocking_hooks(plan, self.server_info)
            _check_mcp_servers_applied(plan, self.server_info)
            return self.server_info
        except BaseException:
            self.close()
            raise

    def close(self, abort: bool = False) -> None:
        """End the CLI and release every thread, process and descriptor. Idempotent: a
        second call waits (boundedly) for the first to finish, so no caller returns while
        the CLI may still run. ``abort``: the stream is broken, do not wait for a graceful exit.
        """
        with self._state_lock:
            if self._closed:
                first = False
            else:
                first = True
                self._closed = True
                self._closing = True
        if not first:
            if threading.current_thread() is not self._closer:
                self._close_done.wait(CLOSE_WAIT)
            return
        self._closer = threading.current_thread()
        try:
            if self._transport is not None:
                if abort or self._abort:
                    self._transport.abort()
                else:
                    self._transport.close()
        finally:
            with self._answer_lock:
                for inflight in self._inflight.values():
                    inflight.answered = True
                    if inflight.timer is not None:
                        inflight.timer.cancel()
            if self._worker is not None:
                self._worker.shutdown()
            self._fail_pending(CLIConnectionError("the session is closed"))
            self._cancel_ceiling()
            self._run_ended.set()
            if self._mirror is not None:
                self._mirror.close()  # what the CLI wrote before it stopped still goes to the store
            if self._materialized is not None:
                self._materialized.cleanup()
            if self._ended is None:
                self._ended = Ended(None, None)
                self._messages.put(self._ended)
            self._turn_or_stream_over.set()
            _live_sessions.discard(self)
            self._close_done.set()
            self._answering()

    @property
    def closed(self) -> bool:
        return self._closed

    def when_answering(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` once: at this session's first output from the model (an assistant
        message, a stream event or a result), on the thread that reads it, or when the
        session closes first; at once when it is closed already. The spare pool starts a
        replacement then, once the claimed session's own set-up no longer needs the CPU."""
        with self._state_lock:
            if not self._closed:
                self._answer_waiters.append(fn)
                return
        fn()

    def _answering(self) -> None:
        with self._state_lock:
            waiters, self._answer_waiters = self._answer_waiters, []
        for fn in waiters:
            try:
                fn()
            except Exception:  # one of ours (the pool's refill); never the reader's problem
                logger.exception("a first-answer callback failed")

    # ------------------------------------------------------------------ inbound (transport threads)

    def _on_outside(self, kind: str) -> None:
        """See ``TransportCallbacks.on_outside``: the messages parsed from now on are marked
        (:func:`outside_of`) while they belong to someone else's turn."""
        with self._rx_lock:
            if kind == "interrupt":
                self._outside_interrupt = True
            else:
                self._outside_turn = kind == "turn"

    def _on_data(self, data: bytes | str) -> None:
        with self._rx_lock:
            events = self._protocol.receive_data(data)
            if self._outside_turn or self._outside_interrupt:
                self._mark_outside(events)
        # Messages completed by one chunk travel to the consumer as one batch: one queue
        # handoff (and thread wake-up) per chunk instead of one per message.
        batch: list[Message] = []
        for event in events:
            if type(event) is MessageReceived:
                self._observe(event.message)
                if type(event.message) is ResultMessage:
                    self._turn_or_stream_over.set()
                    if self._mirror is not None:
                        # As the official SDK: the turn is in the store before its result is seen.
                        if batch:
                            self._put_batch(batch)
                            batch = []
                        self._mirror.flush()
                if not self._version_checked:
                    self._check_version(event.message)
                batch.append(event.message)
            else:
                if batch:
                    self._put_batch(batch)
                    batch = []
                self._dispatch(event)
        if batch:
            self._put_batch(batch)

    def _mark_outside(self, events: list[Event]) -> None:
        for event in events:
            if type(event) is MessageReceived:
                if self._outside_turn:
                    setattr(event.message, OUTSIDE, "turn")
                    if type(event.message) is ResultMessage:
                        self._outside_interrupt = False  # (it was that turn that was interrupted)
                elif self._outside_interrupt and type(event.message) is ResultMessage:
                    setattr(event.message, OUTSIDE, "interrupted")
                    self._outside_interrupt = False

    def _observe(self, message: Message) -> None:
        """Hand a message to the run's spans and to the ledgers that count it, as it arrives.
        At the first ``init`` of a resumed, forked or continued session, what that session had
        already cost is read (see :mod:`claude_sdkurl._engine.carried`): the CLI's figures
        include it, and spans and ledgers count only what this run spends."""
        if self._answer_waiters and isinstance(message, (AssistantMessage, StreamEvent, ResultMessage)):
            self._answering()
        if self._carried is None and isinstance(message, SystemMessage) and message.subtype == "init":
            options = self.plan.options if self.plan is not None else self.options
            if options.resume or options.continue_conversation:
                source = options.resume or message.data.get("session_id")
                plan = self.plan
                self._carried = carried(plan.projects_dir, source, plan.transcripts_before) if plan is not None else NOTHING
            else:
                self._carried = NOTHING
            if self.trace is not None:
                self.trace.carry(self._carried)
        if self.trace is not None:
            self.trace.observe(message)
        if observe.counting(self.ledgers):
            observe.count(self.ledgers, self._ledger_key, message, self._carried)

    def _check_version(self, message: Message) -> None:
        """Warn, once, about a CLI too old for us or for ``verbatim_prompts``, from its first
        ``system/init`` message (the running CLI's own word, as the official SDK reads it)."""
        if isinstance(message, SystemMessage) and message.subtype == "init":
            self._version_checked = True
            for warning in _cli.init_version_warnings(message.data, self.cli_path, self._verbatim):
                logger.warning(warning)

    def _put_batch(self, batch: list[Message]) -> None:
        self._messages.put(batch if len(batch) > 1 else batch[0])

    def _dispatch(self, event: Event) -> None:
        if isinstance(event, MessageReceived):
            if not self._version_checked:
                self._check_version(event.message)
            self._observe(event.message)
            self._messages.put(event.message)
        elif isinstance(event, ControlResponseReceived):
            waiter = event.request.waiter if event.request is not None else None
            if isinstance(waiter, _Waiter):
                waiter.result = event
                waiter.done.set()
        elif isinstance(event, ControlRequestReceived):
            self._submit(event)
        elif isinstance(event, ControlCancelReceived):
            # The CLI gave up on this request: its answer must not be sent.
            with self._answer_lock:
                inflight = self._inflight.get(event.request_id)
                if inflight is not None:
                    inflight.answered = True
                    if inflight.timer is not None:
                        inflight.timer.cancel()
        elif isinstance(event, RunChanged):
            self._run_effects(event.effects)
        elif isinstance(event, MirrorFrame):
            if self._mirror is not None:
                self._mirror.enqueue(event.file_path, event.entries)
        elif isinstance(event, ProtocolErrorReceived):
            self._fatal(event.error)

    def _fatal(self, error: BaseException) -> None:
        """The stream can no longer be trusted: the consumer gets ``error`` now, and the CLI is
        stopped at once (from another thread: this may be the transport's own). A close() by
        the consumer meanwhile waits for this one, so the CLI is gone when it returns."""
        self._abort = True  # whoever closes first: no graceful wait for a broken stream
        self._end(error, None)
        threading.Thread(target=self.close, args=(True,), name="claude-sdkurl-abort", daemon=True).start()

    def _mirror_error(self, key: SessionKey | None, error: str) -> None:
        """A batch did not reach the store: tell the user with a :class:`MirrorErrorMessage`."""
        frame = {
            "type": "system",
            "subtype": "mirror_error",
            "error": error,
            "key": key,
            "uuid": _uuid4(),
            "session_id": key.get("session_id", "") if key else "",
        }
        self._messages.put(parse_message(frame))

    def _on_exit(self, code: int | None, stderr_tail: str) -> None:
        with self._rx_lock:
            events = self._protocol.receive_eof()
        for event in events:
            self._dispatch(event)
        if self._mirror is not None:
            self._mirror.flush()  # before the end is seen, as for a result
        last_error = self._run.last_error_result
        if self._closing:
            error: BaseException | None = None
        elif code not in (0, None) and (flag := _cli.unknown_flag(stderr_tail)) is not None:
            error = UnsupportedOptionError(
                f"This Claude Code ({self.plan.cli if self.plan else 'CLI'}, version "
                f"{_cli.format_version(self.cli_version)}) does not know {flag}"
                + (f", which ClaudeAgentOptions.{_cli.FLAG_OPTIONS[flag]} needs" if flag in _cli.FLAG_OPTIONS else "")
                + ": use a newer CLI"
            )
        elif code == 127 and self.plan is not None and self.plan.spawner is not None and "not found" in stderr_tail:
            # the far side's shell could not find the CLI (sh: exec: claude: not found)
            error = CLINotFoundError(f"Claude Code not found where spawn_claude_code_process runs it: {stderr_tail.strip()[-300:]}", self.plan.cli)
        elif code not in (0, None):
            error = ProcessError(f"Command failed with exit code {code}", exit_code=code, stderr=stderr_tail or None)
            if last_error is not None:
                # The CLI exits 1 on purpose after an error result; say why, as the official SDK does.
                cause, error = error, ResultError.from_result(last_error, code)
                error.__cause__ = cause
        elif last_error is not None and self._input_ended and not self._transport_ends_input():
            # Over WebSocket the end of input is our close; 2.1.120 still exits 1 after an error
            # result (measured), but a CLI that exits 0 there must not turn the error into success.
            error = ResultError.from_result(last_error, None)
        else:
            error = None
        self._end(error, code)

    def _end(self, error: BaseException | None, code: int | None) -> None:
        with self._state_lock:
            if self._ended is not None:
                return
            self._ended = Ended(error, code)
            self._turn_or_stream_over.set()
        with self._rx_lock:
            self._run.finish()
            self._run.take_effects()
        self._cancel_ceiling()
        self._run_ended.set()
        self._fail_pending(error or CLIConnectionError(f"Claude Code exited (code {code})"))
        self._messages.put(self._ended)

    def _fail_pending(self, error: BaseException) -> None:
        for pending in self._protocol.take_pending():
            if isinstance(pending.waiter, _Waiter):
                pending.waiter.result = error
                pending.waiter.done.set()

    # ------------------------------------------------------------------ the end of a run (see _run.py)

    def _run_effects(self, effects: list[Any]) -> None:
        for effect in effects:
            if effect == "ended":
                self._run_ended.set()
            elif effect == "reopened":
                self._run_ended.clear()
            elif effect == "clear":
                self._cancel_ceiling()
            else:  # ("arm", generation)
                self._cancel_ceiling()
                seconds = self._run.ceiling_ms / 1000
                timer = threading.Timer(seconds, self._ceiling_fired, (effect[1],))
                timer.name = "claude-sdkurl-run-ceiling"
                timer.daemon = True
                self._ceiling_timer = timer
                timer.start()

    def _cancel_ceiling(self) -> None:
        timer, self._ceiling_timer = self._ceiling_timer, None
        if timer is not None:
            timer.cancel()

    def _ceiling_fired(self, generation: int) -> None:
        with self._rx_lock:
            self._run.ceiling_fired(generation)
            effects = self._run.take_effects()
        if "ended" in effects:
            logger.debug("no end of the run %.0f s after the last result: ending it", self._run.ceiling_ms / 1000)
        self._run_effects(effects)

    def _transport_ends_input(self) -> bool:
        return self._transport is not None and self._transport.can_end_input

    def prompt_sent(self) -> None:
        """A prompt went out: it owes a run of its own."""
        with self._rx_lock:
            self._run.prompt_sent()
            effects = self._run.take_effects()
        self._run_effects(effects)

    def end_input(self, stop: threading.Event | None = None, wait: bool = True) -> None:
        """No more prompts: close the CLI's input (it then finishes the run and exits;
        the stream ends with its exit).

        As the official SDK: when callbacks may still be asked (or the transport
        cannot close input alone, as WebSocket), waits for the end of the run
        first; otherwise closes at once. A CLI whose input is closed holds a
        turn's result until the background work the turn started (subagents,
        background Bash) and the turn it wakes are done, so both results come
        at the end, as there (2.1.330 with its input open gives the first result
        as soon as the turn ends). Returns early, doing nothing, if ``stop`` is
        set meanwhile.
        """
        run = self._run
        if wait and (run.bidirectional or not self._transport_ends_input()):
            while not self._run_ended.wait(0.5):
                if (stop is not None and stop.is_set()) or self._ended is not None:
                    break
        if (stop is not None and stop.is_set()) or self._ended is not None or self._closing:
            return
        with self._rx_lock:
            run.finish()
            run.take_effects()
        self._cancel_ceiling()
        self._input_ended = True
        transport = self._transport
        if transport is not None:
            with self._tx_lock:
                transport.end_input()

    # ------------------------------------------------------------------ control requests from the CLI

    def _submit(self, event: ControlRequestReceived) -> None:
        handler = HANDLERS.get(event.subtype)
        if handler is None:
            self._send_quietly(
                self._protocol.control_error(event.request_id, f"Unsupported control request subtype: {event.subtype}")
            )
            return
        inflight = _Inflight()
        with self._state_lock:
            if self._closing:
                return
            if self._worker is None:
                self._worker = Workers(CALLBACK_WORKERS)
            with self._answer_lock:
                self._inflight[event.request_id] = inflight
            self._worker.submit(self._run_handler, handler, event)
            with self._answer_lock:
                timeout = self.options.callback_timeout
                if self.plan is not None:
                    timeout = answer_bound(self.plan, event.request, timeout)
                if timeout is not None and not inflight.answered:
                    inflight.timer = threading.Timer(timeout, self._time_out, (event, timeout))
                    inflight.timer.name = "claude-sdkurl-callback-timer"
                    inflight.timer.daemon = True
                    inflight.timer.start()

    def _run_handler(self, handler: Any, event: ControlRequestReceived) -> None:
        try:
            assert self.plan is not None  # start() plans before the transport can deliver a request
            if self.trace is None:
                response = handler(self.plan, event.request)
            else:
                with self.trace.callback(event.subtype, event.request) as record:
                    response = handler(self.plan, event.request)
                    if record is not None:
                        record(response)
            if response is None:  # NO_ANSWER: left unanswered on purpose (see _control)
                with self._answer_lock:
                    inflight = self._inflight.pop(event.request_id, None)
                if inflight is not None and inflight.timer is not None:
                    inflight.timer.cancel()
                return
            line = self._protocol.control_success(event.request_id, response)
        except Exception as e:  # the CLI gets the message (a guard's: a denial); the session goes on
            logger.warning("%s callback failed: %s: %s", event.subtype, type(e).__name__, e, exc_info=e)
            # (the words the CLI was told before, and a session host carries: the same in both)
            denial = failure_answer(self.plan, event.request, f"failed: {str(e) or type(e).__name__}") if self.plan else None
            if denial is not None:
                line = self._protocol.control_success(event.request_id, denial)
            else:
                line = self._protocol.control_error(event.request_id, str(e) or type(e).__name__)
        self._answer(event.request_id, line)

    def _time_out(self, event: ControlRequestReceived, timeout: float) -> None:
        """A callback took ``timeout`` seconds: the CLI is answered without it (a guarding hook:
        the call denied). Its own answer, if it ever comes, is dropped (:meth:`_answer`)."""
        denial = failure_answer(self.plan, event.request, f"did not answer within {timeout:g} s") if self.plan else None
        if denial is None:
            line = self._protocol.control_error(event.request_id, f"the {event.subtype} callback did not answer within {timeout:g} s")
        else:
            line = self._protocol.control_success(event.request_id, denial)
        with self._answer_lock:
            waiting = event.request_id in self._inflight
        if waiting:
            logger.warning("the %s callback did not answer within %g s%s", event.subtype, timeout,
                           "; the tool call it guards is denied" if denial is not None else "")  # fmt: skip
        self._answer(event.request_id, line)

    def _answer(self, request_id: str, line: str) -> None:
        """Send the first answer for a CLI request; later ones (or after a cancel) are dropped."""
        with self._answer_lock:
            inflight = self._inflight.pop(request_id, None)
            if inflight is None or inflight.answered:
                return
            inflight.answered = True
            if inflight.timer is not None:
                inflight.timer.cancel()
            self._recent_answers.append(line)
        self._send_quietly(line)

    def _on_reconnect(self) -> None:
        """The WebSocket CLI is back: send again what the drop may have swallowed."""
        with self._answer_lock:
            answers = list(self._recent_answers)
            prompts = list(self._recent_prompts)
        pending = [p.line for p in list(self._protocol.pending.values()) if p.subtype != "initialize"]
        logger.info(
            "CLI reconnected; re-sending %d prompts, %d answers and %d pending requests",
            len(prompts),
            len(answers),
            len(pending),
        )
        for line in prompts + answers + pending:
            self._send_quietly(line)

    def _send_quietly(self, line: str) -> None:
        try:
            self.send(line)
        except ClaudeSDKError as e:
            logger.debug("could not answer the CLI: %s", e)

    # ------------------------------------------------------------------ outbound

    def send(self, line: str) -> None:
        """Write one NDJSON line to the CLI."""
        if self._ended is not None:
            raise self._ended_error()
        if self._transport is None:
            raise CLIConnectionError("the session is not started")
        with self._tx_lock:
            self._transport.send(line)

    def send_user(self, content: Any, session_id: str = "default") -> None:
        """Send a prompt (a string or a list of content blocks)."""
        reconnects = self.transport_name == "websocket"
        line = self._protocol.user_message(
            content,
            session_id=session_id,
            client_composed=self._verbatim,
            uuid=_uuid4() if reconnects else None,
        )
        self._send_prompt(line, reconnects)

    def send_user_dict(self, message: dict[str, Any]) -> None:
        """Send a caller-built user message dict."""
        reconnects = self.transport_name == "websocket"
        is_prompt = message.get("type", "user") == "user"
        if is_prompt:
            if self._verbatim:
                message = {**message, "client_composed": True}
            if reconnects and "uuid" not in message:
                message = {**message, "uuid": _uuid4()}
        line = self._protocol.user_dict(message)
        if is_prompt:
            self._send_prompt(line, reconnects and "uuid" in message)
        else:
            self.send(line)

    def _send_prompt(self, line: str, resend: bool) -> None:
        if resend:
            with self._answer_lock:
                self._recent_prompts.append(line)
        self.prompt_sent()  # it owes a run of its own
        self.send(line)

    def control(self, request: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Send a control request and wait for its answer.

        Raises :class:`ControlRequestTimeoutError` after ``timeout`` (default
        ``options.control_timeout``), :class:`ControlRequestError` when the CLI
        answers with an error, and the session's end error if the CLI goes away.
        """
        timeout = self.options.control_timeout if timeout is None else timeout
        if self._ended is not None:
            raise self._ended_error()
        waiter = _Waiter(threading.Event())
        with self._tx_lock:
            pending = self._protocol.control_request(request, waiter)
            try:
                if self._transport is None:
                    raise CLIConnectionError("the session is not started")
                self._transport.send(pending.line)
            except BaseException:
                self._protocol.forget(pending.request_id)
                raise
        if self._ended is not None and not waiter.done.is_set():
            self._protocol.forget(pending.request_id)
            raise self._ended_error()
        if not waiter.done.wait(timeout):
            self._protocol.forget(pending.request_id)
            raise ControlRequestTimeoutError(pending.subtype, timeout)
        result = waiter.result
        if isinstance(result, BaseException):
            raise result
        assert result is not None
        if not result.success:
            if (result.error or "").startswith("Unsupported control request subtype"):
                version = _cli.format_version(self.cli_version) if self.cli_version else None
                raise UnsupportedControlRequestError(pending.subtype, result.error or "", version)
            raise ControlRequestError(pending.subtype, result.error or "")
        return result.response

    def _ended_error(self) -> BaseException:
        ended = self._ended
        if ended is not None and ended.error is not None:
            return ended.error
        if self._closed:
            return CLIConnectionError("the session is closed")
        return CLIConnectionError(f"Claude Code has exited (code {ended.exit_code if ended else None})")

    # ------------------------------------------------------------------ consumer side

    def next_message(self, timeout: float | None = None, cancellable: bool = False) -> Message | Ended | Any:
        """The next message, an internal marker posted with :meth:`post`, or :class:`Ended`.

        :class:`Ended` is sticky: once returned it is returned again on every call.
        Raises ``queue.Empty`` after ``timeout``. With ``cancellable``, the wait is a cancel
        point of a ``claude_sdkurl.threads`` task: its cancel raises ``CancelledError``
        here and loses no message.
        """
        local = self._local
        if local:
            try:
                return local.popleft()
            except IndexError:  # another consumer thread took it
                pass
        scope = _cancel.current() if cancellable else None
        item = self._messages.get(timeout=timeout) if scope is None else self._get_cancellably(scope, Deadline(timeout))
        if item is _WOKEN:  # left by a cancel of another wait: skipped (rare, so not timed anew)
            return self.next_message(timeout, cancellable)
        if type(item) is list:
            local.extend(item[1:])
            item = item[0]
        if isinstance(item, Ended):
            self._messages.put(item)
        return item

    def _get_cancellably(self, scope: _cancel.Scope, deadline: Deadline) -> Any:
        # A cancel wakes the wait with a _Woken marker. Race: a message may be taken
        # just as the cancel comes (the marker then stays queued, and is skipped by a
        # later call): the message is put back in front before CancelledError leaves.
        while True:
            item: Any = _WOKEN
            try:
                with scope.waking(lambda: self._messages.put(_WOKEN)):
                    item = self._messages.get(timeout=deadline.left())
            except _cancel.CancelledError:
                if isinstance(item, Ended):
                    self._messages.put(item)
                elif type(item) is list:
                    self._local.extendleft(reversed(item))
                elif item is not _WOKEN:
                    self._local.appendleft(item)
                raise
            if item is not _WOKEN:  # a marker left by a cancel that was already delivered
                return item

    def interrupt_turn(self, drain: bool, timeout: float = 5.0) -> bool:
        """Ask the CLI to stop the turn (after Ctrl-C, a ``break`` or a timeout in the
        consumer, or a warm-up turn); with ``drain``, also swallow the rest of that turn
        (through its result) so the session stays usable.

        Once the CLI's input is closed no request can reach it: it gets SIGINT instead
        (:meth:`Transport.signal_interrupt`), ends the turn the same way (an
        ``error_during_execution`` result, the interruption in its transcript: within 0.1 s
        on 2.1.330 and 2.1.332, measured) and exits (1.4 s later on 2.1.330 with a tool
        running); this waits for that result, or the exit.

        Never raises; bounded by ``timeout`` seconds. ``False`` if the CLI did not
        answer the interrupt (it is stuck: a close should not wait for it), or could
        not be asked.
        """
        deadline = Deadline(timeout)
        if self._input_ended:
            transport = self._transport
            self._turn_or_stream_over.clear()
            if transport is None or not transport.signal_interrupt():
                return False
            # so that a close that follows does not stop a CLI still writing its transcript
            return self._turn_or_stream_over.wait(deadline.left())
        try:
            self.control({"subtype": "interrupt"}, timeout=min(2.0, timeout))
        except Exception as e:
            logger.debug("interrupt after Ctrl-C failed: %s", e)
            return False
        if not drain:
            return True
        while not deadline.passed():
            try:
                item = self.next_message(timeout=deadline.left())
            except queue.Empty:
                return True
            if isinstance(item, (ResultMessage, Ended)):
                return True
        return True

    def post(self, marker: Any) -> None:
        """Wake the consumer with a marker of the caller's own."""
        self._messages.put(marker)

    @property
    def ended(self) -> Ended | None:
        return self._ended


_WOKEN = object()  # put in the queue by a cancel, to wake a cancellable wait


__all__ = ["Session", "Ended"]
