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
import concurrent.futures
import logging
import queue
import threading
import weakref
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
)
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
class _Pending:
    subtype: str
    done: threading.Event
    result: ControlResponseReceived | BaseException | None = None


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
        self._protocol = Protocol(self.options.max_buffer_size or DEFAULT_MAX_LINE)
        self._rx_lock = threading.Lock()
        self._tx_lock = threading.Lock()
        self._messages: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._pending: dict[str, _Pending] = {}
        self._inflight: dict[str, concurrent.futures.Future[Any]] = {}
        self._cancelled: set[str] = set()
        self._state_lock = threading.Lock()
        self._worker: concurrent.futures.ThreadPoolExecutor | None = None
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

    def start(self) -> dict[str, Any]:
        """Start the CLI, connect, and send ``initialize``; returns its answer."""
        try:
            _cli.check_options(self.options)
            hooks, self.hook_callbacks = hooks_config(self.options)
            self.sdk_mcp_servers = _sdk_servers(self.options)
            if self._transport is None:
                self._transport = self._make_transport()
            _live_sessions.add(self)
            self._transport.start(TransportCallbacks(on_data=self._on_data, on_exit=self._on_exit))
            self._transport.wait_ready(CONNECT_TIMEOUT)
            request: dict[str, Any] = {"subtype": "initialize", "hooks": hooks}
            if self.options.agents:
                request["agents"] = {
                    name: {k: v for k, v in _agent_dict(agent).items() if v is not None}
                    for name, agent in self.options.agents.items()
                }
            if isinstance(self.options.skills, list):
                request["skills"] = self.options.skills
            if self.options.forward_subagent_text:
                request["forwardSubagentText"] = True
            self.server_info = self.control(request, timeout=max(INITIALIZE_TIMEOUT, self.options.control_timeout))
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
            if self._worker is not None:
                self._worker.shutdown(wait=True, cancel_futures=True)
            self._fail_pending(CLIConnectionError("the session is closed"))
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
        for event in events:
            self._dispatch(event)

    def _dispatch(self, event: Event) -> None:
        if isinstance(event, MessageReceived):
            self._messages.put(event.message)
        elif isinstance(event, ControlResponseReceived):
            pending = self._pending.pop(event.request_id, None)
            if pending is not None:
                pending.result = event
                pending.done.set()
        elif isinstance(event, ControlRequestReceived):
            self._submit(event)
        elif isinstance(event, ControlCancelReceived):
            self._cancelled.add(event.request_id)
            future = self._inflight.get(event.request_id)
            if future is not None:
                future.cancel()
        elif isinstance(event, ProtocolErrorReceived):
            self._end(event.error, None)
            # The stream can no longer be trusted; stop the CLI (from another thread).
            threading.Thread(target=self.close, name="claude-sdkurl-close", daemon=True).start()

    def _on_exit(self, code: int | None, stderr_tail: str) -> None:
        with self._rx_lock:
            events = self._protocol.receive_eof()
        for event in events:
            self._dispatch(event)
        if self._closing:
            error: BaseException | None = None
        elif code not in (0, None):
            error = ProcessError("Command failed", exit_code=code, stderr=stderr_tail or None)
        else:
            error = None
        self._end(error, code)

    def _end(self, error: BaseException | None, code: int | None) -> None:
        with self._state_lock:
            if self._ended is not None:
                return
            self._ended = Ended(error, code)
        self._fail_pending(error or CLIConnectionError(f"Claude Code exited (code {code})"))
        self._messages.put(self._ended)

    def _fail_pending(self, error: BaseException) -> None:
        for request_id, pending in list(self._pending.items()):
            self._pending.pop(request_id, None)
            pending.result = error
            pending.done.set()

    # ------------------------------------------------------------------ control requests from the CLI

    def _submit(self, event: ControlRequestReceived) -> None:
        handler = HANDLERS.get(event.subtype)
        if handler is None:
            self._send_quietly(
                self._protocol.control_error(event.request_id, f"Unsupported control request subtype: {event.subtype}")
            )
            return
        with self._state_lock:
            if self._closing:
                return
            if self._worker is None:
                self._worker = concurrent.futures.ThreadPoolExecutor(
                    CALLBACK_WORKERS, thread_name_prefix="claude-sdkurl-callback"
                )
            future = self._worker.submit(self._run_handler, handler, event)
        self._inflight[event.request_id] = future

    def _run_handler(self, handler: Any, event: ControlRequestReceived) -> None:
        try:
            response = handler(self, event.request)
            line = self._protocol.control_success(event.request_id, response)
        except Exception as e:  # the CLI gets the message; the session goes on
            logger.warning("%s callback failed: %s", event.subtype, e, exc_info=logger.isEnabledFor(logging.DEBUG))
            line = self._protocol.control_error(event.request_id, f"{type(e).__name__}: {e}")
        finally:
            self._inflight.pop(event.request_id, None)
        if event.request_id in self._cancelled:
            self._cancelled.discard(event.request_id)
            return
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
        self.send(self._protocol.user_message(content, session_id=session_id))

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
        with self._tx_lock:
            request_id, line = self._protocol.control_request(request)
            pending = _Pending(request["subtype"], threading.Event())
            self._pending[request_id] = pending
            try:
                if self._transport is None:
                    raise CLIConnectionError("the session is not started")
                self._transport.send(line)
            except BaseException:
                self._pending.pop(request_id, None)
                self._protocol.forget(request_id)
                raise
        if self._ended is not None and not pending.done.is_set():
            self._pending.pop(request_id, None)
            raise self._ended_error()
        if not pending.done.wait(timeout):
            self._pending.pop(request_id, None)
            self._protocol.forget(request_id)
            raise ControlRequestTimeoutError(pending.subtype, timeout)
        result = pending.result
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
        item = self._messages.get(timeout=timeout)
        if isinstance(item, Ended):
            self._messages.put(item)
        return item

    def post(self, marker: Any) -> None:
        """Wake the consumer with a marker of the caller's own."""
        self._messages.put(marker)

    @property
    def ended(self) -> Ended | None:
        return self._ended


def _agent_dict(agent: Any) -> dict[str, Any]:
    import attrs

    return attrs.asdict(agent) if attrs.has(type(agent)) else dict(agent)


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
