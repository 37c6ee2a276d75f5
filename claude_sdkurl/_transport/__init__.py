"""Transports: how NDJSON lines travel between the session and the CLI."""

from .base import Transport, TransportCallbacks
from .stdio import StdioTransport
from .websocket import WebSocketTransport

__all__ = ["Transport", "TransportCallbacks", "StdioTransport", "WebSocketTransport"]
