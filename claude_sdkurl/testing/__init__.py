"""Offline testing helpers: a scripted mock Messages API and real-CLI installs.

Use these to test your own agent code without an account or network:
:class:`MockMessagesAPI` stands in for api.anthropic.com, :func:`install_cli`
fetches a real Claude Code build from npm once, and :func:`offline_env` wires
the two together through ``ClaudeAgentOptions(env=...)``.
"""

from .cli import (
    NEWEST_CLI_VERSION,
    STDIO_CLI_VERSION,
    WEBSOCKET_CLI_VERSION,
    CLIInstallError,
    cache_dir,
    install_cli,
    offline_env,
)
from .faults import fault_env
from .mock_api import MockMessagesAPI, RecordedRequest, Reply, default_responder, error, text, thinking, tool_use

__all__ = [
    "MockMessagesAPI",
    "fault_env",
    "RecordedRequest",
    "Reply",
    "default_responder",
    "error",
    "text",
    "thinking",
    "tool_use",
    "install_cli",
    "offline_env",
    "cache_dir",
    "CLIInstallError",
    "WEBSOCKET_CLI_VERSION",
    "NEWEST_CLI_VERSION",
    "STDIO_CLI_VERSION",
]

from .mock_transport import FakeCLI, MockTransport  # noqa: E402

__all__ += ["MockTransport", "FakeCLI"]

from .demo import DemoEnvironment  # noqa: E402

__all__ += ["DemoEnvironment"]

from .session_store_conformance import run_session_store_conformance  # noqa: E402

__all__ += ["run_session_store_conformance"]

from ..tapes import TapeMismatch, record, replay  # noqa: E402

__all__ += ["record", "replay", "TapeMismatch"]
