"""``ClaudeClient`` (alias ``ClaudeSDKClient``): a multi-turn, thread-safe session."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Any

from ._deadline import Deadline
from ._errors import CLIConnectionError, ReceiveTimeoutError
from ._session import Ended, Session
from ._transport import Transport
from .prewarm import open_warm_session
from ._spares import take_spare
from .ledger import CostLedger
from .tracing import RunTrace
from .types import (
    ClaudeAgentOptions,
    ContextUsageResponse,
    McpStatusResponse,
    Message,
    PermissionMode,
    ResultMessage,
    warn_if_can_use_tool_shadowed,
)

logger = logging.getLogger("claude_sdkurl.client")


class ClaudeClient:
    """A conversation you drive turn by turn, from any thread.

    Mirrors the official ``ClaudeSDKClient`` without ``async``::

        with ClaudeClient(options) as client:
            client.query("Hello")
            for msg in client.receive_response():
                print(msg)

    Every method may be called from any thread; one thread may be iterating
    :meth:`receive_messages` while another calls :meth:`interrupt`.
    Control requests raise :class:`ControlRequestTimeoutError` after
    ``options.control_timeout`` seconds and fail at once if the CLI dies.
    """

    def __init__(self, options: ClaudeAgentOptions | None = None, transport: Transport | None = None) -> None:
        if options is not None and not isinstance(options, ClaudeAgentOptions):
            raise TypeError(f"options must be ClaudeAgentOptions, not {type(options).__name__}")
        self.options = options or ClaudeAgentOptions()
        self._custom_transport = transport
        self._session: Session | None = None
        self._lock = threading.Lock()
        self._feeders: list[threading.Thread] = []
        self._connecting: threading.Thread | None = None
        self._connect_error: BaseException | None = None
        #: Cost and tokens of this client's runs (ours; see :mod:`claude_sdkurl.ledger`).
        self.ledger = CostLedger()

    # ------------------------------------------------------------------ lifecycle

    def connect(self, prompt: str | Iterable[dict[str, Any]] | None = None) -> None:
        """Start the CLI and connect; optionally send a first prompt.

        As the official client: a string prompt is sent and input stays open;
        an iterable of message dicts is sent in the background and the CLI's
        input is closed once the run it starts is over (the CLI then exits).
        Connecting again starts a new CLI, as there; the previous one is stopped
        first (the official client leaves it running). With a transport given to
        the client, which serves one connection, a second connect is refused.
        """
        live = self._session is not None and not self._session.closed
        if live and self._custom_transport is not None:
            raise CLIConnectionError("already connected (a transport given to the client serves one connection)")
        if live:
            self.disconnect()
        self._connect(warm_turn=False)
        if prompt is None or isinstance(prompt, str):
            if prompt is not None:
                self.query(prompt)
            return
        if isinstance(prompt, (bytes, bytearray)) or not isinstance(prompt, Iterable):
            raise TypeError(f"prompt must be a str or an iterable of message dicts, not {type(prompt).__name__}")
        session = self._live()

        def stream() -> None:
            sent = 0
            try:
                for message in prompt:
                    message = dict(message)
                    message.setdefault("session_id", "default")
                    session.send_user_dict(message)
                    sent += 1
            except Exception as e:  # as the official SDK: log, and still close the input
                logger.error("prompt stream failed; closing the CLI's input: %s", e)
            session.end_input(wait=sent > 0)

        thread = threading.Thread(target=stream, name="claude-sdkurl-client-prompt", daemon=True)
        thread.start()
        self._feeders.append(thread)

    def _connect(self, warm_turn: bool, trace: RunTrace | None = None) -> None:
        """Start the session. ``trace``: the client's spans when made in another thread than
        this one (prewarm() makes them in the caller's, so they nest under its current span)."""
        with self._lock:
            if self._session is not None and not self._session.closed:
                raise CLIConnectionError("already connected")
            trace = trace or RunTrace("client", self.options.model)
            try:
                spare = take_spare(self.options) if self._custom_transport is None else None
                if spare is not None:  # a spare CLI of an open SparePool, claimed for these options
                    session = spare
                    session.trace = trace
                elif warm_turn and self._custom_transport is None:
                    session, _ = open_warm_session(self.options, trace=trace)
                else:
                    warn_if_can_use_tool_shadowed(self.options)
                    session = Session(self.options, self._custom_transport)
                    session.trace = trace
                    with trace.launching():  # the session span is the CLI's W3C parent
                        session.start()
            except BaseException as error:
                trace.close(error)
                raise
            session.ledgers = [self.ledger]
            self._session = session

    def prewarm(self, warm_turn: bool = True) -> ClaudeClient:
        """Start connecting in the background and return at once.

        The CLI starts, connects and initializes while you prepare the prompt;
        the first call that needs the session (``query()``, ``receive_*``,
        control methods) waits for it and raises any connection error.
        With ``warm_turn`` the CLI's first-turn setup is done ahead too, by a
        blocked prompt that never reaches the model (see :mod:`claude_sdkurl.prewarm`).
        """
        with self._lock:
            if self._session is not None or self._connecting is not None:
                return self

            trace = RunTrace("client", self.options.model)  # here: the caller's current span is its parent

            def run() -> None:
                try:
                    self._connect(warm_turn, trace)
                except BaseException as e:
                    self._connect_error = e

            self._connect_error = None
            self._connecting = threading.Thread(target=run, name="claude-sdkurl-prewarm-client", daemon=True)
            self._connecting.start()
        return self

    def _await_prewarm(self) -> None:
        thread = self._connecting
        if thread is not None and thread is not threading.current_thread():
            thread.join()
            self._connecting = None
            if self._connect_error is not None:
                error, self._connect_error = self._connect_error, None
                raise error

    def disconnect(self) -> None:
        """Stop the CLI and release everything. Safe to call twice."""
        try:
            self._await_prewarm()
        except BaseException:
            pass
        with self._lock:
            session, self._session = self._session, None
        if session is not None:
            session.close()
            if session.trace is not None:
                session.trace.close()
        for feeder in self._feeders:
            feeder.join(1.0)
        self._feeders.clear()

    close = disconnect

    def __enter__(self) -> ClaudeClient:
        self.connect()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.disconnect()

    def _live(self) -> Session:
        self._await_prewarm()
        session = self._session
        if session is None:
            raise CLIConnectionError("Not connected. Call connect() first (or use 'with ClaudeClient(...)').")
        return session

    @property
    def session(self) -> Session:
        """The underlying :class:`Session` (advanced use)."""
        return self._live()

    # ------------------------------------------------------------------ conversation

    def query(self, prompt: str | Iterable[dict[str, Any]], session_id: str = "default") -> None:
        """Send a prompt: a string, or an iterable of message dicts (each without a
        ``session_id`` gets ``session_id``). Returns once every message is written, as the
        official ``await client.query(...)`` does: a later ``query()`` cannot overtake them,
        and an exception the iterable raises reaches the caller (what was sent before it
        stays sent)."""
        session = self._live()
        if session.trace is not None:
            session.trace.turn_started(prompt if isinstance(prompt, str) else None)
        if isinstance(prompt, str):
            session.send_user(prompt, session_id=session_id)
            return
        if isinstance(prompt, (bytes, bytearray)) or not isinstance(prompt, Iterable):
            raise TypeError(f"prompt must be a str or an iterable of message dicts, not {type(prompt).__name__}")
        for message in prompt:
            message = dict(message)
            message.setdefault("session_id", session_id)
            session.send_user_dict(message)

    def receive_messages(self, timeout: float | None = None) -> Iterator[Message]:
        """Every message, until the session ends.

        ``timeout`` (ours; the official SDK uses ``asyncio.timeout``) bounds the
        whole iteration in seconds: :class:`ReceiveTimeoutError` is raised, and
        the client stays usable; messages not read yet wait for the next call.
        The wait is a cancel point of a ``claude_sdkurl.threads`` task: its cancel
        raises ``CancelledError`` here, with nothing lost and no interrupt sent.
        """
        session = self._live()
        deadline = Deadline(_checked_timeout(timeout))
        while True:
            try:
                item = session.next_message(deadline.left(), cancellable=True)
            except queue.Empty:
                raise ReceiveTimeoutError(timeout or 0.0) from None
            except KeyboardInterrupt:
                # Ctrl-C (or a notebook's interrupt button): stop the turn, drop the rest of
                # it through its result, and leave the client ready for the next query().
                session.interrupt_turn(drain=True)
                raise
            if isinstance(item, Ended):
                if item.error is not None:
                    raise item.error
                return
            yield item

    def receive_response(self, timeout: float | None = None) -> Iterator[Message]:
        """Messages through the next :class:`ResultMessage`, inclusive (``timeout``: as :meth:`receive_messages`)."""
        for message in self.receive_messages(timeout):
            yield message
            if isinstance(message, ResultMessage):
                return

    # ------------------------------------------------------------------ control requests we send

    def _control(self, subtype: str, **fields: Any) -> dict[str, Any]:
        return self._live().control({"subtype": subtype, **fields})

    def interrupt(self) -> None:
        """Stop the current turn; its result arrives with ``error_during_execution``."""
        self._control("interrupt")

    def set_permission_mode(self, mode: PermissionMode) -> None:
        """Change the permission mode for the rest of the session."""
        self._control("set_permission_mode", mode=mode)

    def set_model(self, model: str | None = None) -> None:
        """Switch model (``None``: back to the default)."""
        self._control("set_model", model=model)

    def set_max_thinking_tokens(self, max_thinking_tokens: int | None) -> None:
        """Change the thinking budget."""
        self._control("set_max_thinking_tokens", max_thinking_tokens=max_thinking_tokens)

    def rewind_files(self, user_message_id: str) -> None:
        """Restore files to their state at a user message (needs ``enable_file_checkpointing``)."""
        self._control("rewind_files", user_message_id=user_message_id)

    def reconnect_mcp_server(self, server_name: str) -> None:
        """Reconnect an MCP server."""
        self._control("mcp_reconnect", serverName=server_name)

    def toggle_mcp_server(self, server_name: str, enabled: bool) -> None:
        """Enable or disable an MCP server."""
        self._control("mcp_toggle", serverName=server_name, enabled=enabled)

    def set_mcp_servers(self, servers: dict[str, Any]) -> dict[str, Any]:
        """Replace the session's dynamic MCP servers."""
        return self._control("mcp_set_servers", servers=servers)

    def stop_task(self, task_id: str) -> None:
        """Stop a background task."""
        self._control("stop_task", task_id=task_id)

    def get_mcp_status(self) -> McpStatusResponse:
        """Connection status of every MCP server."""
        return self._control("mcp_status")  # type: ignore[return-value]

    def get_context_usage(self) -> ContextUsageResponse:
        """How the context window is used."""
        return self._control("get_context_usage")  # type: ignore[return-value]

    def get_settings(self) -> dict[str, Any]:
        """The effective settings."""
        return self._control("get_settings")

    def apply_flag_settings(self, settings: dict[str, Any]) -> dict[str, Any]:
        """Merge settings into the flag-settings layer."""
        return self._control("apply_flag_settings", settings=settings)

    def end_session(self) -> dict[str, Any]:
        """Ask the CLI to end the session."""
        return self._control("end_session")

    def cancel_async_message(self, message_uuid: str) -> dict[str, Any]:
        """Drop a queued user message that has not started yet."""
        return self._control("cancel_async_message", message_uuid=message_uuid)

    def get_server_info(self) -> dict[str, Any] | None:
        """What the CLI answered to ``initialize`` (commands, models, account, ...)."""
        return self._live().server_info


def _checked_timeout(timeout: float | None) -> float | None:
    if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ValueError("timeout must be None or a positive number of seconds")
    return timeout


ClaudeSDKClient = ClaudeClient
"""The official SDK's name for :class:`ClaudeClient` (the same class)."""
