"""Transports: how NDJSON lines travel between the session and the CLI.

:class:`WebSocketTransport` (CLIs up to 2.1.120) is imported when first used: ``websockets``
costs every program a few dozen milliseconds at import, and current CLIs speak over stdio.
"""

from typing import TYPE_CHECKING, Any

from .base import Transport, TransportCallbacks
from .stdio import StdioTransport

if TYPE_CHECKING:
    from .websocket import WebSocketTransport

__all__ = ["Transport", "TransportCallbacks", "StdioTransport", "WebSocketTransport"]


def __getattr__(name: str) -> Any:
    if name == "WebSocketTransport":
        from .websocket import WebSocketTransport

        return WebSocketTransport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
