"""Error types, named and shaped as in the official ``claude_agent_sdk``.

Every error raised by this package derives from :class:`ClaudeSDKError`.
"""

from __future__ import annotations

from typing import Any


class ClaudeSDKError(Exception):
    """Base exception for all claude_sdkurl errors."""


class CLIConnectionError(ClaudeSDKError):
    """Raised when the SDK cannot start or reach the Claude Code CLI."""


class CLINotFoundError(CLIConnectionError):
    """Raised when the Claude Code CLI cannot be found."""

    cli_path: str | None
    """The path that was tried, when one was given (``cli_path``, ``$CLAUDE_SDKURL_CLI``)."""

    def __init__(self, message: str = "Claude Code not found", cli_path: str | None = None):
        self.cli_path = cli_path
        if cli_path:
            message = f"{message}: {cli_path}"
        super().__init__(message)


class TransportNotSupportedError(CLIConnectionError):
    """Raised when a forced transport cannot work with the CLI at hand."""

    transport: str
    """The transport that was asked for (``"websocket"``, ``"stdio"``)."""
    cli_version: str | None
    """The CLI's version, when known."""
    cli_message: str | None
    """What the CLI itself said, when it said anything."""

    def __init__(
        self,
        message: str,
        *,
        transport: str,
        cli_version: str | None = None,
        cli_message: str | None = None,
    ):
        self.transport = transport
        self.cli_version = cli_version
        self.cli_message = cli_message
        if cli_message:
            message = f"{message}\nThe CLI said: {cli_message}"
        super().__init__(message)


class ProcessError(ClaudeSDKError):
    """Raised when the CLI process fails."""

    exit_code: int | None
    """The CLI's exit status (negative: the signal that ended it)."""
    stderr: str | None
    """The tail of what the CLI wrote on its standard error."""

    def __init__(self, message: str, exit_code: int | None = None, stderr: str | None = None):
        self.exit_code = exit_code
        self.stderr = stderr
        if exit_code is not None:
            message = f"{message} (exit code: {exit_code})"
        if stderr:
            message = f"{message}\nError output: {stderr}"
        super().__init__(message)


class ExitedBeforeConnectingError(ProcessError, CLIConnectionError):
    """The CLI exited before it connected to our WebSocket (an unknown ``resume`` id, a
    refused option, a refused upgrade). A :class:`ProcessError`, as the same exit is over
    stdio and in the official SDK, and a :class:`CLIConnectionError`, as it was here before."""


def _of_type(data: dict[str, Any], key: str, kind: type) -> Any:
    """``data[key]`` when it is a ``kind``, else ``None``."""
    value = data.get(key)
    return value if isinstance(value, kind) else None


def _result_errors(raw: Any) -> list[str]:
    """The ``errors`` of a result frame as clean strings (a bare string is accepted)."""
    listed = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    return [text.strip() for text in listed if isinstance(text, str) and text.strip()]


def error_result_text(data: dict[str, Any]) -> str:
    """The most telling text of an ``is_error`` result: errors, result text, subtype, HTTP status."""
    errors = _result_errors(data.get("errors"))
    result = (_of_type(data, "result", str) or "").strip()
    subtype: str | None = _of_type(data, "subtype", str)
    status = data.get("api_error_status")
    if errors:
        return "; ".join(errors)
    if result:
        return result
    if subtype and subtype != "success":
        return subtype
    return f"API error (HTTP {status})" if status is not None else "unknown error"


class ResultError(ProcessError):
    """The CLI ended the run after an error result (``is_error: true``).

    Raised, as by the official SDK, after the :class:`ResultMessage` was
    yielded, in place of the bare "exit code 1" :class:`ProcessError`; its
    ``exit_code`` is 1 (the CLI exits so on purpose, on both transports).
    """

    data: dict[str, Any]
    """The whole result frame."""
    subtype: str | None
    """The result's ``subtype`` (``error_max_turns``, ``error_during_execution``, ...)."""
    errors: list[str]
    """The result's error texts."""
    result: str | None
    """The result's text."""
    api_error_status: int | None
    """The HTTP status of the failing model call (429, 529, ...)."""
    terminal_reason: str | None
    """Why the turn's loop ended."""
    session_id: str | None
    """The session (resume it to go on)."""

    def __init__(self, message: str, data: dict[str, Any] | None = None, exit_code: int | None = None):
        frame: dict[str, Any] = data if isinstance(data, dict) else {}
        self.data = frame
        self.subtype = _of_type(frame, "subtype", str)
        self.errors = _result_errors(frame.get("errors"))
        self.result = _of_type(frame, "result", str)
        self.api_error_status = _of_type(frame, "api_error_status", int)
        self.terminal_reason = _of_type(frame, "terminal_reason", str)
        self.session_id = _of_type(frame, "session_id", str)
        super().__init__(message, exit_code=exit_code)

    @classmethod
    def from_result(cls, data: dict[str, Any], exit_code: int | None) -> ResultError:
        text = error_result_text(data)
        if "not logged in" in text.lower():  # (2.1.330 with no login and no key: "Not logged in · Please run /login")
            text += " (log in by running `claude` once, or set ANTHROPIC_API_KEY in the environment or in ClaudeAgentOptions(env=...))"
        return cls(f"Claude Code returned an error result: {text}", data=data, exit_code=exit_code)


class ResumeNotFoundError(ResultError, ExitedBeforeConnectingError):
    """The WebSocket CLI (2.1.120) exited before it connected because ``resume`` names no
    session it has. Over stdio, and in the official SDK, the CLI says so in an error result
    (subtype ``error_during_execution``), raised as a :class:`ResultError`: this is one too,
    with the same ``subtype``, ``errors`` and ``session_id`` (its ``data`` is made from what the
    CLI wrote on stderr, ``stderr``), and still an :class:`ExitedBeforeConnectingError`."""


class CLIJSONDecodeError(ClaudeSDKError):
    """Raised when a line from the CLI is not valid JSON."""

    line: str
    """The line that is not JSON."""
    original_error: Exception
    """The error the JSON decoder raised."""

    def __init__(self, line: str, original_error: Exception):
        self.line = line
        self.original_error = original_error
        super().__init__(f"Failed to decode JSON: {line[:100]}...")


class MessageParseError(ClaudeSDKError):
    """Raised when a message from the CLI has the wrong shape."""

    data: dict[str, Any] | None
    """The message as read, when it was a dict."""

    def __init__(self, message: str, data: dict[str, Any] | None = None):
        self.data = data
        super().__init__(message)


class ControlRequestError(ClaudeSDKError):
    """The CLI answered a control request with an error."""

    subtype: str
    """The control request that failed (``set_model``, ``mcp_status``, ...)."""
    error: str
    """The CLI's error text."""

    def __init__(self, subtype: str, error: str):
        self.subtype = subtype
        self.error = error
        super().__init__(f"Control request {subtype!r} failed: {error}")


class UnsupportedControlRequestError(ControlRequestError):
    """Ours: the running CLI does not know this control request (it answered
    ``Unsupported control request subtype``): a method that needs a newer Claude Code.
    A :class:`ControlRequestError`, so code that catches that still does."""

    cli_version: str | None
    """The running CLI's version, when known."""

    def __init__(self, subtype: str, error: str, cli_version: str | None):
        super().__init__(subtype, error)
        self.cli_version = cli_version
        self.args = (
            f"This Claude Code (version {cli_version or 'unknown'}) does not know the control request "
            f"{subtype!r}: use a newer CLI ({error})",
        )


class ControlRequestTimeoutError(ClaudeSDKError, TimeoutError):
    """A control request got no answer in time."""

    subtype: str
    """The control request that got no answer."""
    timeout: float
    """The seconds it waited."""

    def __init__(self, subtype: str, timeout: float):
        self.subtype = subtype
        self.timeout = timeout
        super().__init__(f"Control request {subtype!r} got no answer within {timeout:g} s")


class ReceiveTimeoutError(ClaudeSDKError, TimeoutError):
    """``receive_messages(timeout=...)``/``receive_response(timeout=...)`` or a
    ``query(..., timeout=...)`` ran out of time. The session is untouched: what
    was not read yet is still there for the next call."""

    timeout: float
    """The seconds it waited."""

    def __init__(self, timeout: float):
        self.timeout = timeout
        super().__init__(f"No end of the response within {timeout:g} s")


class UnsupportedOptionError(ClaudeSDKError, ValueError):
    """An option of :class:`ClaudeAgentOptions` that this SDK cannot honour was set."""


class SessionStoreError(ClaudeSDKError, RuntimeError):
    """A :class:`SessionStore` call failed or did not answer within
    ``load_timeout_ms`` while resuming from the store (the official SDK raises
    a plain ``RuntimeError`` there; this is one). Nothing is started."""


class NotAsyncError(ClaudeSDKError, TypeError):
    """Ours: a form of the official SDK's ``async`` API (``async for``, ``async with``,
    ``await``) used on this package's synchronous one. A ``TypeError``, as Python's own for the
    same misuse; its message says what to write instead and names the porting command."""


PORTING_HINT = "python -m claude_sdkurl.port rewrites a program written for claude_agent_sdk (async/await, asyncio.run, tasks) into plain calls"


__all__ = [
    "NotAsyncError",
    "ClaudeSDKError",
    "SessionStoreError",
    "CLIConnectionError",
    "CLINotFoundError",
    "TransportNotSupportedError",
    "ProcessError",
    "ResultError",
    "ReceiveTimeoutError",
    "CLIJSONDecodeError",
    "MessageParseError",
    "ControlRequestError",
    "ControlRequestTimeoutError",
    "UnsupportedOptionError",
]
