"""In-process MCP servers: ``@tool`` and ``create_sdk_mcp_server``.

The CLI talks to these servers through ``mcp_message`` control requests
(see :mod:`claude_sdkurl._control`); :meth:`SdkMcpServer.handle` answers one
JSON-RPC message. No ``mcp`` package is needed.
"""

from __future__ import annotations

import logging
import typing
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from attrs import define

from ._control import call_user
from .types import McpSdkServerConfig

logger = logging.getLogger("claude_sdkurl.mcp")

T = TypeVar("T")

PROTOCOL_VERSION = "2025-06-18"

_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}


@define
class ToolAnnotations:
    """MCP tool annotations (hints for the client)."""

    title: str | None = None
    readOnlyHint: bool | None = None  # noqa: N815
    destructiveHint: bool | None = None  # noqa: N815
    idempotentHint: bool | None = None  # noqa: N815
    openWorldHint: bool | None = None  # noqa: N815


@define
class SdkMcpTool(Generic[T]):
    """A Python function exposed to Claude as an MCP tool."""

    name: str
    description: str
    input_schema: Any
    handler: Callable[[Any], Any]
    annotations: ToolAnnotations | None = None


def tool(
    name: str,
    description: str,
    input_schema: Any,
    annotations: ToolAnnotations | None = None,
) -> Callable[[Callable[[Any], Any]], SdkMcpTool[Any]]:
    """Decorate a handler ``(args: dict) -> {"content": [...]}`` (plain or ``async``) as a tool.

    ``input_schema`` is a dict of argument name -> Python type
    (``{"a": float, "b": float}``), a full JSON Schema, or a TypedDict class.
    """
    if not isinstance(name, str) or not name:
        raise ValueError("tool name must be a non-empty string")

    def decorator(handler: Callable[[Any], Any]) -> SdkMcpTool[Any]:
        if not callable(handler):
            raise TypeError("@tool must decorate a callable")
        return SdkMcpTool(name, description, input_schema, handler, annotations)

    return decorator


def json_schema(input_schema: Any) -> dict[str, Any]:
    """The JSON Schema for a tool's ``input_schema`` in any accepted form."""
    if isinstance(input_schema, dict):
        if "type" in input_schema and isinstance(input_schema.get("type"), str) and (
            "properties" in input_schema or input_schema["type"] != "object" or len(input_schema) > 1
        ):
            return input_schema
        props = {key: _type_schema(value) for key, value in input_schema.items()}
        return {"type": "object", "properties": props, "required": list(props)}
    if isinstance(input_schema, type) and typing.is_typeddict(input_schema):
        hints = typing.get_type_hints(input_schema)
        required = sorted(getattr(input_schema, "__required_keys__", hints))
        return {
            "type": "object",
            "properties": {k: _type_schema(v) for k, v in hints.items()},
            "required": [k for k in hints if k in required],
        }
    raise TypeError("input_schema must be a dict of name -> type, a JSON Schema dict, or a TypedDict")


def _type_schema(tp: Any) -> dict[str, Any]:
    if isinstance(tp, dict):
        return tp
    if tp in _JSON_TYPES:
        return {"type": _JSON_TYPES[tp]}
    origin = typing.get_origin(tp)
    if origin in _JSON_TYPES:
        return {"type": _JSON_TYPES[origin]}
    return {}


class SdkMcpServer:
    """An MCP server living in this Python process."""

    def __init__(self, name: str, version: str, tools: list[SdkMcpTool[Any]]) -> None:
        self.name = name
        self.version = version
        self.tools: dict[str, SdkMcpTool[Any]] = {}
        for t in tools:
            if not isinstance(t, SdkMcpTool):
                raise TypeError(f"tools must be made with @tool, got {type(t).__name__}")
            if t.name in self.tools:
                raise ValueError(f"duplicate tool name {t.name!r} in server {name!r}")
            self.tools[t.name] = t
        self._schemas = {t.name: json_schema(t.input_schema) for t in tools}

    def handle(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """Answer one JSON-RPC message; ``None`` for notifications."""
        method = message.get("method")
        msg_id = message.get("id")
        if "id" not in message:  # notification (e.g. notifications/initialized)
            return None
        try:
            if method == "initialize":
                result: dict[str, Any] = {
                    "protocolVersion": (message.get("params") or {}).get("protocolVersion", PROTOCOL_VERSION),
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": self.name, "version": self.version},
                }
            elif method == "ping":
                result = {}
            elif method == "tools/list":
                result = {"tools": [self._describe(t) for t in self.tools.values()]}
            elif method == "tools/call":
                result = self._call(message.get("params") or {})
            else:
                return _error(msg_id, -32601, f"Method not found: {method}")
        except Exception as e:  # pragma: no cover - defensive
            return _error(msg_id, -32603, str(e) or type(e).__name__)
        return {"jsonrpc": "2.0", "id": msg_id, "result": result}

    def _describe(self, t: SdkMcpTool[Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"name": t.name, "description": t.description, "inputSchema": self._schemas[t.name]}
        if t.annotations is not None:
            out["annotations"] = {k: v for k, v in _asdict(t.annotations).items() if v is not None}
        return out

    def _call(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        t = self.tools.get(str(name))
        if t is None:
            return {"content": [{"type": "text", "text": f"Unknown tool: {name}"}], "isError": True}
        try:
            out = call_user(t.handler, params.get("arguments") or {})
        except Exception as e:
            logger.warning("tool %s raised: %s", name, e)
            return {"content": [{"type": "text", "text": f"{type(e).__name__}: {e}"}], "isError": True}
        if not isinstance(out, dict):
            return {"content": [{"type": "text", "text": str(out)}]}
        result: dict[str, Any] = {"content": out.get("content", [])}
        if out.get("is_error") or out.get("isError"):
            result["isError"] = True
        if "structuredContent" in out:
            result["structuredContent"] = out["structuredContent"]
        return result


def _asdict(obj: Any) -> dict[str, Any]:
    import attrs

    return attrs.asdict(obj)


def _error(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def create_sdk_mcp_server(
    name: str, version: str = "1.0.0", tools: list[SdkMcpTool[Any]] | None = None
) -> McpSdkServerConfig:
    """Make an in-process server for ``ClaudeAgentOptions(mcp_servers={name: server})``."""
    return {"type": "sdk", "name": name, "instance": SdkMcpServer(name, version, tools or [])}


