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

    def __init__(self, message: str = "Claude Code not found", cli_path: str | None = None):
        self.cli_path = cli_path
        if cli_path:
            message = f"{message}: {cli_path}"
        super().__init__(message)


class TransportNotSupportedError(CLIConnectionError):
    """Raised when a forced transport cannot work with the CLI at hand.

    ``cli_message`` quotes what the CLI itself said, when it said anything.
    """

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
    """Raised when the CLI process fails.

    ``exit_code`` is the process' exit status (negative for a signal) and
    ``stderr`` holds the tail of what it wrote to standard error.
    """

    def __init__(self, message: str, exit_code: int | None = None, stderr: str | None = None):
        self.exit_code = exit_code
        self.stderr = stderr
        if exit_code is not None:
            message = f"{message} (exit code: {exit_code})"
        if stderr:
            message = f"{message}\nError output: {stderr}"
        super().__init__(message)


class CLIJSONDecodeError(ClaudeSDKError):
    """Raised when a line from the CLI is not valid JSON."""

    def __init__(self, line: str, original_error: Exception):
        self.line = line
        self.original_error = original_error
        super().__init__(f"Failed to decode JSON: {line[:100]}...")


class MessageParseError(ClaudeSDKError):
    """Raised when a message from the CLI has the wrong shape."""

    def __init__(self, message: str, data: dict[str, Any] | None = None):
        self.data = data
        super().__init__(message)


class ControlRequestError(ClaudeSDKError):
    """The CLI answered a control request with an error."""

    def __init__(self, subtype: str, error: str):
        self.subtype = subtype
        self.error = error
        super().__init__(f"Control request {subtype!r} failed: {error}")


class ControlRequestTimeoutError(ClaudeSDKError, TimeoutError):
    """A control request got no answer in time."""

    def __init__(self, subtype: str, timeout: float):
        self.subtype = subtype
        self.timeout = timeout
        super().__init__(f"Control request {subtype!r} got no answer within {timeout:g} s")


class UnsupportedOptionError(ClaudeSDKError, ValueError):
    """An option of :class:`ClaudeAgentOptions` that this SDK cannot honour was set."""


__all__ = [
    "ClaudeSDKError",
    "CLIConnectionError",
    "CLINotFoundError",
    "TransportNotSupportedError",
    "ProcessError",
    "CLIJSONDecodeError",
    "MessageParseError",
    "ControlRequestError",
    "ControlRequestTimeoutError",
    "UnsupportedOptionError",
]
