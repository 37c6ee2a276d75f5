"""In-process MCP servers: ``@tool`` and ``create_sdk_mcp_server``.

The CLI talks to these servers through ``mcp_message`` control requests
(see :mod:`claude_sdkurl._engine.control`); :meth:`SdkMcpServer.handle` answers one
JSON-RPC message. No ``mcp`` package is needed, but ``mcp.types.ToolAnnotations``
(or any pydantic model of that shape) is accepted as annotations.

Tool semantics follow the official SDK: input schemas from Python types
(``list[X]`` with ``items``, ``Optional``/unions, ``Annotated`` descriptions,
nested TypedDicts), arguments validated against the schema, unknown tools,
invalid arguments and raising handlers all answered as ``isError`` results,
``maxResultSizeChars`` sent in the tool's ``_meta``. A ``notifications/cancelled``
from the CLI cancels an ``async def`` handler and answers its call with a
"Request cancelled" error; a plain handler runs to its end, but its result is
dropped the same way.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import types as builtin_types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar, Union, get_args, get_origin

# typing_extensions' forms know TypedDicts of both modules (typing's is_typeddict does not know
# typing_extensions.TypedDict, which programs written for 3.10 use) and strip the key markers.
from typing_extensions import get_type_hints, is_typeddict

from ._engine.usercode import call_user
from .types import McpSdkServerConfig

logger = logging.getLogger("claude_sdkurl.mcp")

T = TypeVar("T")

PROTOCOL_VERSION = "2025-06-18"
REQUEST_CANCELLED = -32800

# The snake_case spelling of each hint, mapped to its wire (camelCase) name.
_HINT_WIRE_NAMES = {
    "read_only_hint": "readOnlyHint",
    "destructive_hint": "destructiveHint",
    "idempotent_hint": "idempotentHint",
    "open_world_hint": "openWorldHint",
    "max_result_size_chars": "maxResultSizeChars",
}


class ToolAnnotations:
    """Hints about a tool's behaviour, plus Claude Code's ``maxResultSizeChars``.

    Takes every hint in either spelling, ``ToolAnnotations(readOnlyHint=True)``
    or ``ToolAnnotations(read_only_hint=True)``, and reads back in either too;
    unknown keywords are kept (as the official class's ``extra="allow"``).
    ``maxResultSizeChars`` travels in the tool's ``_meta``, the others in its
    ``annotations``.
    """

    def __init__(self, **data: Any) -> None:
        for snake, wire in _HINT_WIRE_NAMES.items():
            if snake in data:
                value = data.pop(snake)
                data.setdefault(wire, value)
        data.setdefault("title", None)
        for wire in _HINT_WIRE_NAMES.values():
            data.setdefault(wire, None)
        self.__dict__.update(data)

    def __getattr__(self, name: str) -> Any:
        wire = _HINT_WIRE_NAMES.get(name)
        if wire is not None:
            return self.__dict__[wire]
        raise AttributeError(name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolAnnotations) and self.__dict__ == other.__dict__

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items() if v is not None)
        return f"ToolAnnotations({shown})"

    def model_dump(self, by_alias: bool = True, exclude_none: bool = True, **_: Any) -> dict[str, Any]:
        """The camelCase dict, as pydantic's ``model_dump`` of the official class."""
        return {k: v for k, v in self.__dict__.items() if not (exclude_none and v is None)}


def annotations_dict(annotations: Any) -> dict[str, Any]:
    """Annotations of any accepted kind (ours, ``mcp.types.ToolAnnotations``, a dict) as a camelCase dict."""
    if annotations is None:
        return {}
    if isinstance(annotations, dict):
        data = dict(annotations)
    elif hasattr(annotations, "model_dump"):
        data = annotations.model_dump(by_alias=True, exclude_none=True)
    elif dataclasses.is_dataclass(annotations) and not isinstance(annotations, type):
        data = dataclasses.asdict(annotations)
    else:
        raise TypeError(f"tool annotations must be ToolAnnotations, mcp.types.ToolAnnotations or a dict, not {annotations!r}")
    for snake, wire in _HINT_WIRE_NAMES.items():
        if snake in data:
            data.setdefault(wire, data.pop(snake))
    extra = getattr(annotations, "model_extra", None)
    if isinstance(extra, dict):
        data.update(extra)
    return {k: v for k, v in data.items() if v is not None}


@dataclass
class SdkMcpTool(Generic[T]):
    """A Python function exposed to Claude as an MCP tool."""

    name: str
    """The tool's name (the model calls it ``mcp__<server>__<name>``)."""
    description: str
    """What the tool does, as the model reads it."""
    input_schema: type[T] | dict[str, Any]
    """Its arguments: ``{name: type}``, a JSON Schema, a TypedDict or a pydantic model."""
    handler: Callable[[T], Any]
    """The function that runs the call (plain or ``async def``); returns ``{"content": [...]}``."""
    annotations: Any = None
    """Hints for the model (read-only, destructive, ...): a :class:`ToolAnnotations` or a dict."""


def tool(
    name: str,
    description: str,
    input_schema: type | dict[str, Any],
    annotations: Any = None,
) -> Callable[[Callable[[Any], Any]], SdkMcpTool[Any]]:
    """Decorate a handler ``(args: dict) -> {"content": [...]}`` (plain or ``async``) as a tool.

    ``input_schema`` is a dict of argument name -> Python type
    (``{"a": float, "b": float}``), a full JSON Schema, or a TypedDict class.
    """
    if not isinstance(name, str) or not name:
        raise ValueError("tool name must be a non-empty string")
    if annotations is not None:
        annotations_dict(annotations)  # a wrong kind fails here, not in tools/list

    def decorator(handler: Callable[[Any], Any]) -> SdkMcpTool[Any]:
        if not callable(handler):
            raise TypeError("@tool must decorate a callable")
        return SdkMcpTool(name, description, input_schema, handler, annotations)

    return decorator


def _type_schema(py_type: Any) -> dict[str, Any]:
    """A Python type annotation as JSON Schema (the official conversion, plus schema-dict values)."""
    if isinstance(py_type, dict):
        return dict(py_type)
    origin = get_origin(py_type)
    if getattr(origin, "_name", None) in ("NotRequired", "Required", "ReadOnly"):
        return _type_schema(get_args(py_type)[0])
    if origin is Annotated:
        args = get_args(py_type)
        schema = _type_schema(args[0])
        for meta in args[1:]:
            if isinstance(meta, str):
                schema["description"] = meta
                break
        return schema
    simple = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if py_type in simple:
        return {"type": simple[py_type]}
    if origin is Union or isinstance(py_type, builtin_types.UnionType):
        non_none = [a for a in get_args(py_type) if a is not type(None)]
        if len(non_none) == 1:
            return _type_schema(non_none[0])
        return {"anyOf": [_type_schema(a) for a in non_none]}
    if origin is list:
        item_args = get_args(py_type)
        return {"type": "array", "items": _type_schema(item_args[0])} if item_args else {"type": "array"}
    if origin is dict or py_type is dict:
        return {"type": "object"}
    if py_type is list:
        return {"type": "array"}
    if is_typeddict(py_type):
        return _typeddict_schema(py_type)
    return {"type": "string"}


def _typeddict_schema(td: type) -> dict[str, Any]:
    """A TypedDict as JSON Schema. Which keys are required: the class's own
    ``__required_keys__``, but a key marked ``NotRequired[...]`` is optional and one marked
    ``Required[...]`` required, whatever Python made of it. (In a module with ``from __future__
    import annotations``, Python 3.10 and 3.11 see the markers only as strings when the class
    is made and put every key in ``__required_keys__``; the official conversion keeps that, so
    there every key of such a schema is required. The resolved hints still carry the markers.)"""
    hints = get_type_hints(td, include_extras=True)
    schema: dict[str, Any] = {"type": "object", "properties": {k: _type_schema(v) for k, v in hints.items()}}
    required = set(getattr(td, "__required_keys__", set(hints)))
    for key, hint in hints.items():
        marker = getattr(get_origin(hint), "_name", None)
        if marker == "NotRequired":
            required.discard(key)
        elif marker == "Required":
            required.add(key)
    if required:
        schema["required"] = sorted(required)
    return schema


def json_schema(input_schema: Any) -> dict[str, Any]:
    """The JSON Schema for a tool's ``input_schema`` in any accepted form."""
    if isinstance(input_schema, dict):
        if "properties" in input_schema and isinstance(input_schema.get("type"), str):
            return input_schema
        props = {key: _type_schema(value) for key, value in input_schema.items()}
        return {"type": "object", "properties": props, "required": list(props)}
    if is_typeddict(input_schema):
        return _typeddict_schema(input_schema)
    model_schema = getattr(input_schema, "model_json_schema", None)  # a pydantic model class
    if isinstance(input_schema, type) and callable(model_schema):
        schema: dict[str, Any] = model_schema()
        return schema
    return {"type": "object", "properties": {}}


def convert_tool_content(items: Any) -> list[dict[str, Any]]:
    """A handler's ``content`` as MCP content blocks (text and image pass, resources flatten to text)."""
    content: list[dict[str, Any]] = []
    for item in items if isinstance(items, list) else []:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "text":
            content.append({"type": "text", "text": item["text"]})
        elif kind == "image":
            content.append({"type": "image", "data": item["data"], "mimeType": item["mimeType"]})
        elif kind == "resource_link":
            parts = [str(p) for p in (item.get("name"), item.get("uri"), item.get("description")) if p]
            content.append({"type": "text", "text": "\n".join(parts) if parts else "Resource link"})
        elif kind == "resource":
            resource = item.get("resource") or {}
            if "text" in resource:
                content.append({"type": "text", "text": resource["text"]})
            else:
                logger.warning("Binary embedded resource cannot be converted to text, skipping")
        else:
            logger.warning("Unsupported content type %r in tool result, skipping", kind)
    return content


class _Cancelled(Exception):
    pass


@dataclass
class _Call:
    """A ``tools/call`` being served, so a ``notifications/cancelled`` can reach it."""

    cancelled: bool = False
    loop: asyncio.AbstractEventLoop | None = None
    task: asyncio.Task[Any] | None = None

    def cancel(self) -> None:
        self.cancelled = True
        loop, task = self.loop, self.task
        if loop is not None and task is not None:
            loop.call_soon_threadsafe(task.cancel)

    def run(self, handler: Callable[[Any], Any], arguments: dict[str, Any]) -> Any:
        try:
            return call_user(handler, arguments, started=self._started)
        except asyncio.CancelledError:
            raise _Cancelled() from None

    def _started(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        self.loop, self.task = loop, task
        if self.cancelled:  # the cancel came before the task existed
            task.cancel()


def _tool_error(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


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
        self._described = [self._describe(t) for t in tools]
        self._calls: dict[Any, _Call] = {}
        self._lock = threading.Lock()
        # Imported here, not with the package: jsonschema's import can take over a second (with
        # rfc3987-syntax installed, as Jupyter installs it, it builds a grammar at import), which
        # every program paid; now only one with in-process tools does, before any tool call.
        import jsonschema

        self._jsonschema: Any = jsonschema

    def handle(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """Answer one JSON-RPC message; ``None`` for notifications."""
        method = message.get("method")
        msg_id = message.get("id")
        # A request's id is a string or an integer (the ``mcp`` package's RequestId: a strict int,
        # so not a bool); a message with any other id (2.5, null, true) is read as the ``mcp``
        # package reads it, as a notification: nothing is answered.
        if not (isinstance(msg_id, str) or (isinstance(msg_id, int) and not isinstance(msg_id, bool))):
            if method == "notifications/cancelled":
                self._cancel((message.get("params") or {}).get("requestId"))
            return None
        try:
            if method == "initialize":
                result: dict[str, Any] = {
                    "protocolVersion": (message.get("params") or {}).get("protocolVersion", PROTOCOL_VERSION),
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": {"name": self.name, "version": self.version},
                }
            elif method == "ping":
                result = {}
            elif method == "tools/list":
                result = {"tools": self._described}
            elif method == "tools/call":
                call = _Call()
                with self._lock:
                    if msg_id in self._calls:
                        return _error(msg_id, -32600, f"Request id {msg_id!r} is already in flight")
                    self._calls[msg_id] = call
                try:
                    result = self._call(message.get("params") or {}, call)
                finally:
                    with self._lock:
                        self._calls.pop(msg_id, None)
                if call.cancelled:
                    return _error(msg_id, REQUEST_CANCELLED, "Request cancelled")
            else:
                return _error(msg_id, -32601, f"Method not found: {method}")
        except Exception as e:  # pragma: no cover - defensive
            return _error(msg_id, -32603, str(e) or type(e).__name__)
        return {"jsonrpc": "2.0", "id": msg_id, "result": result}

    def _cancel(self, request_id: Any) -> None:
        with self._lock:
            call = self._calls.get(request_id)
        if call is not None:
            logger.info("tool call %r cancelled by the CLI", request_id)
            call.cancel()

    def _describe(self, t: SdkMcpTool[Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"name": t.name, "description": t.description, "inputSchema": self._schemas[t.name]}
        hints = annotations_dict(t.annotations)
        max_size = hints.pop("maxResultSizeChars", None)
        if hints:
            out["annotations"] = hints
        if max_size is not None:
            out["_meta"] = {"anthropic/maxResultSizeChars": max_size}
        return out

    def _call(self, params: dict[str, Any], call: _Call) -> dict[str, Any]:
        name = params.get("name")
        t = self.tools.get(str(name))
        if t is None:
            return _tool_error(f"Tool '{name}' not found")
        arguments = params.get("arguments") or {}
        jsonschema = self._jsonschema
        try:
            jsonschema.validate(instance=arguments, schema=self._schemas[t.name])
        except jsonschema.ValidationError as e:
            return _tool_error(f"Input validation error: {e.message}")
        except jsonschema.SchemaError as e:  # the tool's own schema is broken: as the official, an error result
            logger.warning("tool %s has an invalid input schema: %s", name, e.message)
            return _tool_error(str(e))
        try:
            out = call.run(t.handler, arguments)
        except _Cancelled:
            return _tool_error("Request cancelled")
        except Exception as e:
            logger.warning("tool %s raised: %s: %s", name, type(e).__name__, e, exc_info=e)
            return _tool_error(str(e))
        if not isinstance(out, dict):
            return _tool_error(f"Tool '{name}' returned {type(out).__name__}, not a dict with 'content'")
        try:  # a malformed block (a text block without "text") is an error result the model reads
            content = convert_tool_content(out.get("content", []))
        except Exception as e:
            return _tool_error(str(e))
        return {"content": content, "isError": bool(out.get("is_error", out.get("isError", False)))}


def _error(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def create_sdk_mcp_server(
    name: str, version: str = "1.0.0", tools: list[SdkMcpTool[Any]] | None = None
) -> McpSdkServerConfig:
    """Make an in-process server for ``ClaudeAgentOptions(mcp_servers={name: server})``."""
    return {"type": "sdk", "name": name, "instance": SdkMcpServer(name, version, tools or [])}
