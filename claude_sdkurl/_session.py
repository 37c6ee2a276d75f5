"""The session engine: one CLI, one protocol core, one transport, a callback worker.

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
import os
import time
import collections
import logging
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any

from attrs import define

from . import _cli
from ._control import HANDLERS, hooks_config
from ._errors import (
    ClaudeSDKError,
    CLIConnectionError,
    ControlRequestError,
    ControlRequestTimeoutError,
    ProcessError,
    ResultError,
    TransportNotSupportedError,
)
from ._protocol import (
    DEFAULT_MAX_LINE,
    ControlCancelReceived,
    ControlRequestReceived,
    ControlResponseReceived,
    Event,
    MessageReceived,
    Protocol,
    ProtocolErrorReceived,
    RunChanged,
)
from ._run import RunTracker, ceiling_ms
from ._transport import StdioTransport, Transport, TransportCallbacks, WebSocketTransport
from .types import ClaudeAgentOptions, Message

logger = logging.getLogger("claude_sdkurl.session")

CONNECT_TIMEOUT = 60.0
INITIALIZE_TIMEOUT = 60.0
CALLBACK_WORKERS = 8

_live_sessions: weakref.WeakSet[Session] = weakref.WeakSet()


@atexit.register
def _close_all_sessions() -> None:
    """Interpreter exit with live sessions: stop their CLIs instead of leaking them."""
    for session in list(_live_sessions):
        try:
            session.close()
        except Exception:  # pragma: no cover - best effort at exit
            pass


@define
class Ended:
    """The stream is over: ``error`` is ``None`` for a clean end."""

    error: BaseException | None
    exit_code: int | None


@define
class _Waiter:
    """What a thread waiting in :meth:`Session.control` is woken with."""

    done: threading.Event
    result: ControlResponseReceived | BaseException | None = None


@define
class _Inflight:
    """A control request from the CLI being answered on the worker."""

    answered: bool = False
    timer: threading.Timer | None = None


class _Workers:
    """A small pool of daemon threads for user callbacks.

    Unlike ``ThreadPoolExecutor`` its shutdown is bounded: a callback that
    never returns is abandoned (its answer will not be sent) instead of
    blocking :meth:`Session.close` or interpreter exit.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, fn: Any, *args: Any) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1  # an idle worker will take this job
            elif len(self._threads) < self._size:
                t = threading.Thread(target=self._loop, name=f"claude-sdkurl-callback-{len(self._threads)}", daemon=True)
                self._threads.append(t)
                t.start()
        self._jobs.put((fn, args))

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, args = job
            try:
                fn(*args)
            except BaseException:  # pragma: no cover - _run_handler catches everything
                logger.exception("callback worker failed")
            with self._lock:
                self._idle += 1

    def shutdown(self, timeout: float = 2.0) -> None:
        for _ in self._threads:
            self._jobs.put(None)
        deadline = time.monotonic() + timeout
        me = threading.current_thread()
        for t in self._threads:
            if t is not me:
                t.join(max(0.0, deadline - time.monotonic()))
            if t.is_alive() and t is not me:
                logger.warning("a callback is still running after close(); abandoning its thread %s", t.name)


def select_transport(options: ClaudeAgentOptions, cli: str) -> tuple[str, tuple[int, int, int] | None]:
    """``"websocket"`` or ``"stdio"`` for this CLI, honouring a forced choice."""
    version = _cli.cli_version(cli)
    choice = options.transport
    if choice == "auto":
        return ("websocket" if _cli.supports_websocket(version) else "stdio"), version
    return choice, version


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
        opts = self.options
        bidirectional = bool(
            opts.can_use_tool or opts.hooks or opts.on_elicitation or _has_sdk_servers(opts.mcp_servers)
        )
        self._run = RunTracker(bidirectional, ceiling_ms(opts.env))
        self._protocol = Protocol(opts.max_buffer_size or DEFAULT_MAX_LINE, run=self._run)
        # Set while the run is over (see _run.py); cleared when work reopens it.
        self._run_ended = threading.Event()
        self._ceiling_timer: threading.Timer | None = None
        self._input_ended = False
        self._rx_lock = threading.Lock()
        self._tx_lock = threading.Lock()
        self._messages: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._local: collections.deque[Any] = collections.deque()  # the rest of a batch being consumed
        self._inflight: dict[str, _Inflight] = {}
        self._answer_lock = threading.Lock()
        # Answers are idempotent for the CLI (an answer to an unknown id is ignored), so the
        # last few are sent again after a WebSocket reconnect in case the drop swallowed them.
        self._recent_answers: collections.deque[str] = collections.deque(maxlen=64)
        self._state_lock = threading.Lock()
        self._worker: _Workers | None = None
        self._ended: Ended | None = None
        self._closing = False
        self._closed = False
        self.hook_callbacks: dict[str, Any] = {}
        self.sdk_mcp_servers: dict[str, Any] = {}
        self.server_info: dict[str, Any] | None = None
        self.cli_path: str | None = None
        self.cli_version: tuple[int, int, int] | None = None

    @property
    def transport_name(self) -> str | None:
        return self._transport.name if self._transport is not None else None

    # ------------------------------------------------------------------ lifecycle

    def start(self, extra_hooks: dict[str, tuple[str, Callable[..., Any]]] | None = None) -> dict[str, Any]:
        """Start the CLI, connect, and send ``initialize``; returns its answer.

        ``extra_hooks`` registers hook callbacks of the SDK's own beside the
        user's (see :func:`claude_sdkurl._control.hooks_config`).
        """
        try:
            _cli.check_options(self.options)
            hooks, self.hook_callbacks = hooks_config(self.options, extra_hooks)
            if hooks:
                self._run.bidirectional = True
            self.sdk_mcp_servers = _sdk_servers(self.options)
            if self._transport is None:
                self._transport = self._make_transport()
            _live_sessions.add(self)
            self._transport.start(
                TransportCallbacks(on_data=self._on_data, on_exit=self._on_exit, on_reconnect=self._on_reconnect)
            )
            self._transport.wait_ready(CONNECT_TIMEOUT)
            request: dict[str, Any] = {"subtype": "initialize", "hooks": hooks}
            if self.options.agents:
                request["agents"] = {
                    name: {k: v for k, v in _agent_dict(agent).items() if v is not None}
                    for name, agent in self.options.agents.items()
                }
            if isinstance(self.options.skills, list):
                request["skills"] = self.options.skills
            sp = self.options.system_prompt
            if isinstance(sp, dict):
                if isinstance(sp.get("exclude_dynamic_sections"), bool):
                    request["excludeDynamicSections"] = sp["exclude_dynamic_sections"]  # type: ignore[typeddict-item]
                if isinstance(sp.get("snapshot"), bool):
                    request["systemPromptSnapshot"] = sp["snapshot"]  # type: ignore[typeddict-item]
            if self.options.forward_subagent_text:
                request["forwardSubagentText"] = True
            self.server_info = self.control(request, timeout=max(initialize_timeout(), self.options.control_timeout))
            return self.server_info
        except BaseException:
            self.close()
            raise

    def _make_transport(self) -> Transport:
        opts = self.options
        cli = _cli.find_cli(opts.cli_path)
        self.cli_path = cli
        name, self.cli_version = select_transport(opts, cli)
        args = _cli.build_args(opts)
        env = _cli.build_env(opts)
        cwd = str(opts.cwd) if opts.cwd is not None else None
        if name == "websocket":
            if opts.transport == "websocket" and self.cli_version is not None and not _cli.supports_websocket(
                self.cli_version
            ):
                logger.info(
                    "transport='websocket' forced on CLI %s; trying anyway", _cli.format_version(self.cli_version)
                )
            return WebSocketTransport(
                cli,
                args,
                env,
                cwd,
                on_stderr=opts.stderr,
                user=opts.user,
                max_size=opts.max_buffer_size or DEFAULT_MAX_LINE,
            )
        return StdioTransport([cli, *args], env, cwd, on_stderr=opts.stderr, user=opts.user)

    def close(self) -> None:
        """End the CLI and release every thread, process and descriptor. Idempotent."""
        with self._state_lock:
            if self._closed:
                return
            self._closed = True
            self._closing = True
        try:
            if self._transport is not None:
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
            if self._ended is None:
                self._ended = Ended(None, None)
                self._messages.put(self._ended)
            _live_sessions.discard(self)

    @property
    def closed(self) -> bool:
        return self._closed

    # ------------------------------------------------------------------ inbound (transport threads)

    def _on_data(self, data: bytes | str) -> None:
        with self._rx_lock:
            events = self._protocol.receive_data(data)
        # Messages completed by one chunk travel to the consumer as one batch: one queue
        # handoff (and thread wake-up) per chunk instead of one per message.
        batch: list[Message] = []
        for event in events:
            if type(event) is MessageReceived:
                batch.append(event.message)
            else:
                if batch:
                    self._put_batch(batch)
                    batch = []
                self._dispatch(event)
        if batch:
            self._put_batch(batch)

    def _put_batch(self, batch: list[Message]) -> None:
        self._messages.put(batch if len(batch) > 1 else batch[0])

    def _dispatch(self, event: Event) -> None:
        if isinstance(event, MessageReceived):
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
        elif isinstance(event, ProtocolErrorReceived):
            self._end(event.error, None)
            # The stream can no longer be trusted; stop the CLI (from another thread).
            threading.Thread(target=self.close, name="claude-sdkurl-close", daemon=True).start()

    def _on_exit(self, code: int | None, stderr_tail: str) -> None:
        with self._rx_lock:
            events = self._protocol.receive_eof()
        for event in events:
            self._dispatch(event)
        last_error = self._run.last_error_result
        if self._closing:
            error: BaseException | None = None
        elif code not in (0, None):
            error = ProcessError("Command failed", exit_code=code, stderr=stderr_tail or None)
            if last_error is not None:
                # The CLI exits 1 on purpose after an error result; say why, as the official SDK does.
                cause, error = error, ResultError.from_result(last_error, code)
                error.__cause__ = cause
        elif last_error is not None and self._input_ended and not self._transport_ends_input():
            # Over WebSocket the end of input is a close, after which the CLI exits 0 whatever
            # the result was: the same ResultError as over stdio, without an exit code.
            error = ResultError.from_result(last_error, None)
        else:
            error = None
        self._end(error, code)

    def _end(self, error: BaseException | None, code: int | None) -> None:
        with self._state_lock:
            if self._ended is not None:
                return
            self._ended = Ended(error, code)
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
        logger.debug("no end of the run %.0f s after the last result", self._run.ceiling_ms / 1000)
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
        """No more prompts: once the run is over, close the CLI's input (it then
        finishes and exits; the stream ends with its exit).

        As the official SDK, waits for the end of the run only when callbacks
        may still be asked (or the transport cannot close input alone, as
        WebSocket); otherwise closes at once and the CLI finishes the run.
        Returns early, doing nothing, if ``stop`` is set meanwhile.
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
                self._worker = _Workers(CALLBACK_WORKERS)
            with self._answer_lock:
                self._inflight[event.request_id] = inflight
            self._worker.submit(self._run_handler, handler, event)
            with self._answer_lock:
                timeout = self.options.callback_timeout
                if timeout is not None and not inflight.answered:
                    inflight.timer = threading.Timer(
                        timeout,
                        self._answer,
                        (
                            event.request_id,
                            self._protocol.control_error(
                                event.request_id, f"the {event.subtype} callback did not answer within {timeout:g} s"
                            ),
                        ),
                    )
                    inflight.timer.name = "claude-sdkurl-callback-timer"
                    inflight.timer.daemon = True
                    inflight.timer.start()

    def _run_handler(self, handler: Any, event: ControlRequestReceived) -> None:
        try:
            response = handler(self, event.request)
            line = self._protocol.control_success(event.request_id, response)
        except Exception as e:  # the CLI gets the message; the session goes on
            logger.warning("%s callback failed: %s", event.subtype, e, exc_info=logger.isEnabledFor(logging.DEBUG))
            line = self._protocol.control_error(event.request_id, str(e) or type(e).__name__)
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
        pending = [p.line for p in list(self._protocol.pending.values()) if p.subtype != "initialize"]
        logger.info("CLI reconnected; re-sending %d answers and %d pending requests", len(answers), len(pending))
        for line in answers + pending:
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
        self.send(
            self._protocol.user_message(content, session_id=session_id, client_composed=self.options.verbatim_prompts)
        )

    def send_user_dict(self, message: dict[str, Any]) -> None:
        """Send a caller-built user message dict."""
        if self.options.verbatim_prompts and message.get("type", "user") == "user":
            message = {**message, "client_composed": True}
        self.send(self._protocol.user_dict(message))

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

    def next_message(self, timeout: float | None = None) -> Message | Ended | Any:
        """The next message, an internal marker posted with :meth:`post`, or :class:`Ended`.

        :class:`Ended` is sticky: once returned it is returned again on every call.
        Raises ``queue.Empty`` after ``timeout``.
        """
        local = self._local
        if local:
            try:
                return local.popleft()
            except IndexError:  # another consumer thread took it
                pass
        item = self._messages.get(timeout=timeout)
        if type(item) is list:
            local.extend(item[1:])
            item = item[0]
        if isinstance(item, Ended):
            self._messages.put(item)
        return item

    def interrupt_after_ctrl_c(self, drain: bool, timeout: float = 5.0) -> None:
        """Ctrl-C in the consumer: ask the CLI to stop the turn; with ``drain``, also
        swallow the rest of that turn (through its result) so the session stays usable.

        Never raises; bounded by ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        try:
            self.control({"subtype": "interrupt"}, timeout=min(2.0, timeout))
        except Exception as e:
            logger.debug("interrupt after Ctrl-C failed: %s", e)
            return
        if not drain:
            return
        from .types import ResultMessage

        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                item = self.next_message(timeout=left)
            except queue.Empty:
                return
            if isinstance(item, (ResultMessage, Ended)):
                return

    def post(self, marker: Any) -> None:
        """Wake the consumer with a marker of the caller's own."""
        self._messages.put(marker)

    @property
    def ended(self) -> Ended | None:
        return self._ended


def _agent_dict(agent: Any) -> dict[str, Any]:
    import dataclasses

    return dataclasses.asdict(agent) if dataclasses.is_dataclass(agent) and not isinstance(agent, type) else dict(agent)


def initialize_timeout() -> float:
    """Seconds to wait for ``initialize``: ``CLAUDE_CODE_STREAM_CLOSE_TIMEOUT`` (ms), at least 60."""
    try:
        ms = int(os.environ.get("CLAUDE_CODE_STREAM_CLOSE_TIMEOUT", "60000"))
    except ValueError:
        ms = 60000
    return max(ms / 1000.0, INITIALIZE_TIMEOUT)


def _has_sdk_servers(servers: Any) -> bool:
    return isinstance(servers, dict) and any(
        isinstance(c, dict) and c.get("type") == "sdk" for c in servers.values()
    )


def _sdk_servers(options: ClaudeAgentOptions) -> dict[str, Any]:
    servers: dict[str, Any] = {}
    if isinstance(options.mcp_servers, dict):
        for name, config in options.mcp_servers.items():
            if isinstance(config, dict) and config.get("type") == "sdk":
                instance = config.get("instance")
                if instance is None or not hasattr(instance, "handle"):
                    raise TypeError(f"SDK MCP server {name!r} has no usable 'instance'; use create_sdk_mcp_server()")
                servers[name] = instance
    return servers


__all__ = ["Session", "Ended", "select_transport", "TransportNotSupportedError"]
