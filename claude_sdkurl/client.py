"""``ClaudeClient`` (alias ``ClaudeSDKClient``): a multi-turn, thread-safe session."""

from __future__ import annotations

import functools
import threading
from collections.abc import Generator, Iterable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from . import ide as _ide
from ._engine.lifecycle import Messages, made_at, sync_only, warn_collected
from ._errors import PORTING_HINT, NotAsyncError
from ._engine.deadline import Deadline
from ._errors import CLIConnectionError, ControlRequestError, ReceiveTimeoutError
from ._engine.log import get_logger
from ._engine.start import start_cold, take_ready
from ._engine.transport import Transport
from .ledger import CostLedger
from .tracing import RunTrace
from .types import (
    ClaudeAgentOptions,
    ContextUsageResponse,
    McpServerStatus,
    McpStatusResponse,
    Message,
    PermissionMode,
    ResultMessage,
    warn_if_can_use_tool_shadowed,
)

if TYPE_CHECKING:
    from ._engine.session import Session

# As query(): the session's own modules are imported when the client connects, after its CLI's
# process has started, so that they load while the CLI boots (``_engine.start``).

logger = get_logger("claude_sdkurl.client")

_UNSET: Any = object()  # a keyword left out, where None means something


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

    The official forms ``async with``, ``await client.query(...)`` and ``async for`` over
    ``receive_*`` raise :class:`NotAsyncError` (a ``TypeError``) saying what to write. A client
    collected while connected stops its CLI, with a ``ResourceWarning`` naming where it was made.
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
        self._dynamic_servers: dict[str, Any] | None = None  # the MCP map last sent (bind_ide merges into it)
        self._made_at = made_at()

    def __del__(self) -> None:
        session = getattr(self, "_session", None)
        if session is None or session.closed:
            return
        warn_collected("ClaudeClient", self._made_at, "Write `with ClaudeClient(...) as client:`, or call disconnect().",
                       functools.partial(_stop, session, list(self._feeders)))  # fmt: skip

    # ------------------------------------------------------------------ lifecycle

    @sync_only
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
                logger.error("prompt stream failed; closing the CLI's input: %s: %s", type(e).__name__, e, exc_info=e)
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
                # a spare CLI of an open SparePool, claimed for these options
                spare = take_ready(self.options, warm=False) if self._custom_transport is None else None
                if spare is not None:
                    session = spare
                    session.trace = trace
                elif warm_turn and self._custom_transport is None:
                    from .prewarm import open_warm_session

                    session, _ = open_warm_session(self.options, trace=trace)
                else:
                    warn_if_can_use_tool_shadowed(self.options)
                    session = start_cold(self.options, self._custom_transport, trace)
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

    @sync_only
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
            if isinstance(session.trace, RunTrace):
                session.trace.close()
        for feeder in self._feeders:
            feeder.join(1.0)
        self._feeders.clear()

    close = disconnect

    if not TYPE_CHECKING:  # (type checkers keep telling these forms apart from the right ones)

        async def __aenter__(self) -> Any:
            raise NotAsyncError("ClaudeClient is synchronous in claude_sdkurl: write `with ClaudeClient(options) as client:` "
                                f"(no async with). {PORTING_HINT}.")  # fmt: skip

        async def __aexit__(self, *exc: Any) -> None:
            return None

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

    @sync_only
    def query(self, prompt: str | Iterable[dict[str, Any]], session_id: str = "default") -> None:
        """Send a prompt: a string, or an iterable of message dicts (each without a
        ``session_id`` gets ``session_id``). Returns once every message is written, as the
        official ``await client.query(...)`` does: a later ``query()`` cannot overtake them,
        and an exception the iterable raises reaches the caller (what was sent before it
        stays sent)."""
        session = self._live()
        if isinstance(session.trace, RunTrace):
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
        """Every message, until the session ends (an iterator; ``async for`` over it raises
        :class:`NotAsyncError`).

        ``timeout`` (ours; the official SDK uses ``asyncio.timeout``) bounds the
        whole iteration in seconds: :class:`ReceiveTimeoutError` is raised, and
        the client stays usable; messages not read yet wait for the next call.
        The wait is a cancel point of a ``claude_sdkurl.threads`` task: its cancel
        raises ``CancelledError`` here, with nothing lost and no interrupt sent.
        """
        return Messages(self._messages(timeout), "client.receive_messages()")

    def _messages(self, timeout: float | None) -> Generator[Message, None, None]:
        session = self._live()
        deadline = Deadline(_checked_timeout(timeout))
        import queue

        from ._engine.session import Ended  # (both loaded with the session)

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
        return Messages(self._response(timeout), "client.receive_response()")

    def _response(self, timeout: float | None) -> Generator[Message, None, None]:
        for message in self._messages(timeout):
            yield message
            if isinstance(message, ResultMessage):
                return

    # ------------------------------------------------------------------ control requests we send

    def _control(self, subtype: str, **fields: Any) -> dict[str, Any]:
        return self._live().control({"subtype": subtype, **fields})

    @sync_only
    def interrupt(self) -> None:
        """Stop the current turn; its result arrives with ``error_during_execution``."""
        self._control("interrupt")

    @sync_only
    def set_permission_mode(self, mode: PermissionMode) -> None:
        """Change the permission mode for the rest of the session."""
        self._control("set_permission_mode", mode=mode)

    @sync_only
    def set_model(self, model: str | None = None) -> None:
        """Switch model (``None``: back to the default)."""
        self._control("set_model", model=model)

    def set_max_thinking_tokens(self, max_thinking_tokens: int | None, thinking_display: Any = _UNSET) -> None:
        """Change the thinking budget (``None``: back to the default).

        ``thinking_display`` (TypeScript's): ``"summarized"``, ``"omitted"``, ``"highlights"``
        or ``None`` to clear the session's display mode; left out, the mode is kept.
        """
        fields: dict[str, Any] = {"max_thinking_tokens": max_thinking_tokens}
        if thinking_display is not _UNSET:
            fields["thinking_display"] = thinking_display
        self._control("set_max_thinking_tokens", **fields)

    @sync_only
    def rewind_files(self, user_message_id: str, dry_run: bool | None = None) -> dict[str, Any]:
        """Restore files to their state at a user message (needs ``enable_file_checkpointing``).

        With ``dry_run=True`` (TypeScript's) no file changes: the answer says what would
        (``canRewind``, ``filesChanged``, ``insertions``, ``deletions``, ``error``). The official
        Python method returns ``None``; this returns the CLI's answer.
        """
        fields: dict[str, Any] = {"user_message_id": user_message_id}
        if dry_run is not None:
            fields["dry_run"] = dry_run
        return self._control("rewind_files", **fields)

    @sync_only
    def reconnect_mcp_server(self, server_name: str) -> None:
        """Reconnect an MCP server."""
        self._control("mcp_reconnect", serverName=server_name)

    @sync_only
    def toggle_mcp_server(self, server_name: str, enabled: bool) -> None:
        """Enable or disable an MCP server."""
        self._control("mcp_toggle", serverName=server_name, enabled=enabled)

    def set_mcp_servers(self, servers: dict[str, Any]) -> dict[str, Any]:
        """Replace the session's dynamic MCP servers."""
        answer = self._control("mcp_set_servers", servers=servers)
        self._dynamic_servers = _ide.dynamic_servers(servers)
        return answer

    def bind_ide(self, port: int | None = None) -> _ide.IdeLock:
        """Connect the session to a running IDE's MCP server, as the CLI's ``/ide`` does.

        The IDE is the one listening on ``port``, else the live one whose workspace holds
        ``options.cwd`` (see :func:`claude_sdkurl.ide.ide_lockfiles`). Sends ``mcp_set_servers``
        with the session's dynamic MCP servers (its ``mcp_servers`` option and what
        :meth:`set_mcp_servers` set since) and an ``ide`` entry; the others are kept. Returns the
        IDE bound; raises :class:`claude_sdkurl.ide.NoIdeError` when there is none, and
        :class:`claude_sdkurl.ide.IdeBindingRefused` when the CLI does not take the entry (2.1.330
        registers IDEs itself; 2.1.120 takes it). :meth:`mcp_server_status` then lists ``ide``
        with its connection status.
        """
        lock = _ide.choose(self.options.cwd, self.options.env, port)
        before = self._current_servers()
        answer = self.set_mcp_servers(_ide.bound(before, lock))
        refusal = (answer.get("errors") or {}).get(_ide.IDE_KEY) if isinstance(answer, dict) else None
        if refusal:
            self._dynamic_servers = _ide.unbound(before)
            raise _ide.IdeBindingRefused(f"Claude Code did not bind {lock.ide_name} (port {lock.port}): {refusal}")
        return lock

    def unbind_ide(self) -> None:
        """Disconnect the IDE :meth:`bind_ide` bound: ``mcp_set_servers`` with every other
        dynamic server as it was."""
        self.set_mcp_servers(_ide.unbound(self._current_servers()))

    def _current_servers(self) -> dict[str, Any]:
        if self._dynamic_servers is None:
            self._dynamic_servers = _ide.dynamic_servers(self.options.mcp_servers)
        return dict(self._dynamic_servers)

    @sync_only
    def stop_task(self, task_id: str) -> None:
        """Stop a background task."""
        self._control("stop_task", task_id=task_id)

    @sync_only
    def get_mcp_status(self) -> McpStatusResponse:
        """Connection status of every MCP server."""
        return self._control("mcp_status")  # type: ignore[return-value]

    @sync_only
    def get_context_usage(self, detail: Literal["full", "summary"] | None = None) -> ContextUsageResponse:
        """How the context window is used. ``detail="summary"`` (TypeScript's) answers from the
        last response's usage without counting each category (``"full"``, the CLI's default)."""
        fields = {"detail": detail} if detail is not None else {}
        return self._control("get_context_usage", **fields)  # type: ignore[return-value]

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

    @sync_only
    def get_server_info(self) -> dict[str, Any] | None:
        """What the CLI answered to ``initialize`` (commands, models, account, ...)."""
        return self._live().server_info

    # ------------------------------------------------------------------ the TypeScript SDK's methods
    # (its Query methods the official Python SDK lacks: same control subtypes and fields)

    def initialization_result(self) -> dict[str, Any]:
        """The CLI's answer to ``initialize`` (TypeScript's ``initializationResult()``)."""
        info = self._live().server_info
        if info is None:
            raise CLIConnectionError("the session has no initialize answer (a custom transport that sent none?)")
        return info

    def reinitialize(self) -> dict[str, Any]:
        """Send ``initialize`` again to the running CLI and return its fresh answer (after a
        transport gap: the answer lists the permission prompts it still waits on)."""
        session = self._live()
        assert session.plan is not None
        info = session.control(dict(session.plan.initialize), timeout=session.plan.initialize_timeout)
        session.server_info = info
        return info

    def supported_commands(self) -> list[dict[str, Any]]:
        """The slash commands and skills of this session (from ``initialize``)."""
        return list(self.initialization_result().get("commands") or [])

    def supported_models(self) -> list[dict[str, Any]]:
        """The models this session may use (from ``initialize``)."""
        return list(self.initialization_result().get("models") or [])

    def supported_agents(self) -> list[dict[str, Any]]:
        """The subagents of this session (from ``initialize``)."""
        return list(self.initialization_result().get("agents") or [])

    def account_info(self) -> dict[str, Any]:
        """The authenticated account (from ``initialize``; empty with an API key and no account)."""
        return dict(self.initialization_result().get("account") or {})

    def mcp_server_status(self) -> list[McpServerStatus]:
        """Each MCP server's status (TypeScript's name; :meth:`get_mcp_status` is the official one)."""
        return list(self.get_mcp_status().get("mcpServers") or [])

    def set_mcp_permission_mode_override(self, server_name: str, mode: Literal["default", "auto"] | None) -> dict[str, Any]:
        """Pin (or, with ``None``, clear) a tighten-only permission mode for one MCP server's tools."""
        return self._control("set_mcp_permission_mode_override", serverName=server_name, mode=mode) or {}

    def update_settings(self, source: Literal["localSettings", "userSettings"], settings: dict[str, Any]) -> None:
        """Write settings into a settings file through the CLI's own writer, and apply them
        (the CLI takes only its allow-list: ``localSettings``: ``outputStyle``;
        ``userSettings``: ``effortLevel``)."""
        self._control("update_settings", source=source, settings=settings)

    def get_usage(self, skip_behaviors: bool = False) -> dict[str, Any]:
        """The data behind ``/usage``: this session's cost and tokens, and the plan's rate-limit
        windows (5-hour, 7-day, per model) where the account has them (``rate_limits_available``).
        TypeScript's ``usage_EXPERIMENTAL_MAY_CHANGE_DO_NOT_RELY_ON_THIS_API_YET``: the CLI may change it."""
        fields = {"skip_behaviors": True} if skip_behaviors else {}
        return self._control("get_usage", **fields)

    def read_file(
        self, path: str, max_bytes: int | None = None, encoding: Literal["utf-8", "base64"] | None = None
    ) -> dict[str, Any] | None:
        """Read a file as the session's Read tool may (resolved against its ``cwd``, same
        permission rules): ``{"contents": ..., ...}``, or ``None`` when refused or missing."""
        fields: dict[str, Any] = {"path": path}
        if max_bytes is not None:
            fields["max_bytes"] = max_bytes
        if encoding is not None:
            fields["encoding"] = encoding
        try:
            return self._control("read_file", **fields)
        except ControlRequestError:
            return None

    def reload_plugins(
        self,
        hold_on_cache_impact: bool = False,
        add_plugins: list[str] | None = None,
        refuse_if_busy: bool = False,
    ) -> dict[str, Any]:
        """Reload plugins from disk; the refreshed commands, agents, plugins and MCP servers."""
        fields: dict[str, Any] = {}
        if hold_on_cache_impact:
            fields["hold_on_cache_impact"] = True
        if add_plugins:
            fields["add_plugins"] = list(add_plugins)
        if refuse_if_busy:
            fields["refuse_if_busy"] = True
        return self._control("reload_plugins", **fields)

    def reload_skills(self) -> dict[str, Any]:
        """Reload skills from disk; the refreshed skill list."""
        return self._control("reload_skills")

    def reload_output_styles(self) -> dict[str, Any]:
        """Re-read the output-style folders; the refreshed style names."""
        return self._control("reload_output_styles")

    def seed_read_state(self, path: str, mtime: float) -> None:
        """Tell the CLI a file was read at ``mtime`` (ms since the epoch), so an Edit of it
        does not fail with "file not read yet" (skipped if the file changed since)."""
        self._control("seed_read_state", path=path, mtime=mtime)

    def read_mcp_resource(self, server_name: str, uri: str) -> dict[str, Any]:
        """Read one resource of a connected MCP server (``{"contents": [...]}``)."""
        return self._control("mcp_read_resource", serverName=server_name, uri=uri)

    def background_tasks(self, tool_use_id: str | None = None) -> bool:
        """Move running foreground work (one tool call, or all with ``None``) to the background;
        ``True`` when something was moved."""
        fields = {"tool_use_id": tool_use_id} if tool_use_id is not None else {}
        answer = self._control("background_tasks", **fields) or {}
        return bool(answer.get("backgrounded", True))

    def stream_input(self, messages: Iterable[dict[str, Any]]) -> None:
        """Send more user messages into the running session (TypeScript's ``streamInput``):
        each dict is a wire ``user`` message, sent in order; returns when all are written."""
        self.query(messages)


def _stop(session: Session, feeders: list[threading.Thread]) -> None:
    """What disconnect() does, for a client collected while connected (it is gone by now)."""
    session.close()
    if isinstance(session.trace, RunTrace):
        session.trace.close()
    for feeder in feeders:
        feeder.join(1.0)


def _checked_timeout(timeout: float | None) -> float | None:
    if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ValueError("timeout must be None or a positive number of seconds")
    return timeout


ClaudeSDKClient = ClaudeClient
"""The official SDK's name for :class:`ClaudeClient` (the same class)."""
