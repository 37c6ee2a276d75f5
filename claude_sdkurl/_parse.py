"""Wire dict -> typed message, with cattrs doing the field work.

Nothing is dropped: a message or content block of a type we do not model
becomes :class:`UnknownMessage` / :class:`UnknownBlock` with the whole dict,
and every typed object keeps its wire dict in ``raw``.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Callable

import cattrs
from cattrs.gen import make_dict_structure_fn, override

from ._errors import MessageParseError
from .types import (
    AssistantMessage,
    ContentBlock,
    ConversationResetMessage,
    HookEventMessage,
    Message,
    RateLimitEvent,
    RateLimitInfo,
    ResultMessage,
    ServerToolResultBlock,
    ServerToolUseBlock,
    StreamEvent,
    SystemMessage,
    TaskNotificationMessage,
    TaskProgressMessage,
    TaskStartedMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnknownBlock,
    UnknownMessage,
    UserMessage,
)

_converter = cattrs.Converter()
# Values are passed through as the CLI sent them (dicts stay dicts, Any stays Any).
_converter.register_structure_hook(Any, lambda v, _: v)
# Unions (``str | None``, ``str | list[...]``) carry JSON values as they are.
_UNION_ORIGINS: tuple[Any, ...] = (typing.Union, types.UnionType)
_converter.register_structure_hook_func(lambda t: typing.get_origin(t) in _UNION_ORIGINS, lambda v, _: v)


def _make(cls: type, **overrides: Any) -> Callable[[dict[str, Any]], Any]:
    """A fast structure function for ``cls`` that ignores unknown keys and skips ``raw``."""
    fn: Callable[[Any, Any], Any] = make_dict_structure_fn(cls, _converter, raw=override(omit=True), **overrides)

    def build(data: dict[str, Any]) -> Any:
        obj = fn(data, cls)
        obj.raw = data
        return obj

    return build


_BLOCKS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "text": _make(TextBlock),
    "thinking": _make(ThinkingBlock),
    "tool_use": _make(ToolUseBlock),
    "tool_result": _make(ToolResultBlock),
    "server_tool_use": _make(ServerToolUseBlock),
    "advisor_tool_result": _make(ServerToolResultBlock),
    "web_search_tool_result": _make(ServerToolResultBlock),
    "web_fetch_tool_result": _make(ServerToolResultBlock),
}

_result = _make(
    ResultMessage,
    model_usage=override(rename="modelUsage"),
)
_rate_limit_info = _make(RateLimitInfo)

_SYSTEM: dict[str, Callable[[dict[str, Any]], Any]] = {
    "task_started": _make(TaskStartedMessage),
    "task_progress": _make(TaskProgressMessage),
    "task_notification": _make(TaskNotificationMessage),
}


def parse_block(block: Any) -> ContentBlock:
    """One content block; unknown or malformed blocks are kept as :class:`UnknownBlock`."""
    if not isinstance(block, dict):
        return UnknownBlock(type=type(block).__name__, data={"value": block})
    kind = block.get("type")
    build = _BLOCKS.get(kind)  # type: ignore[arg-type]
    if build is not None:
        try:
            return typing.cast(ContentBlock, build(block))
        except (cattrs.BaseValidationError, KeyError, TypeError, ValueError):
            pass
    return UnknownBlock(type=str(kind), data=block, raw=block)


def _blocks(content: Any) -> list[ContentBlock]:
    return [parse_block(b) for b in content]


def stream_event(data: dict[str, Any]) -> StreamEvent:
    """A ``stream_event`` wire dict as :class:`StreamEvent` (raises ``KeyError`` if malformed)."""
    get = data.get
    return StreamEvent(
        data["uuid"],
        data["session_id"],
        data["event"],
        get("parent_tool_use_id"),
        get("user_message_uuid"),
        get("user_message_uuids"),
        raw=data,
    )


def parse_message(data: dict[str, Any]) -> Message:
    """Turn one wire dict from the CLI into a typed message.

    Raises :class:`MessageParseError` only when a known message type lacks a
    field it must have; unknown types become :class:`UnknownMessage`.
    """
    kind = data.get("type")
    try:
        if kind == "stream_event":
            return stream_event(data)
        if kind == "assistant":
            msg = data["message"]
            content = msg["content"]
            if not isinstance(content, list):
                raise MessageParseError("assistant content is not a list", data)
            return AssistantMessage(
                content=_blocks(content),
                model=msg.get("model", ""),
                parent_tool_use_id=data.get("parent_tool_use_id"),
                error=data.get("error"),
                usage=msg.get("usage"),
                message_id=msg.get("id"),
                stop_reason=msg.get("stop_reason"),
                session_id=data.get("session_id"),
                uuid=data.get("uuid"),
                user_message_uuid=data.get("user_message_uuid"),
                user_message_uuids=data.get("user_message_uuids"),
                raw=data,
            )
        if kind == "user":
            content = data["message"]["content"]
            origin = data.get("origin")
            return UserMessage(
                content=_blocks(content) if isinstance(content, list) else content,
                uuid=data.get("uuid"),
                parent_tool_use_id=data.get("parent_tool_use_id"),
                tool_use_result=data.get("tool_use_result"),
                origin=origin if isinstance(origin, dict) else None,
                raw=data,
            )
        if kind == "result":
            return typing.cast(ResultMessage, _result(data))
        if kind == "system":
            subtype = data.get("subtype", "")
            if subtype in ("hook_started", "hook_response"):
                return HookEventMessage(
                    subtype=subtype,
                    data=data,
                    hook_event_name=data.get("hook_event") or data.get("hook_name") or data.get("hook_event_name") or "",
                    session_id=data.get("session_id"),
                    uuid=data.get("uuid"),
                    raw=data,
                )
            build = _SYSTEM.get(subtype)
            if build is not None:
                with_data = dict(data)
                with_data["data"] = data
                obj = build(with_data)
                obj.raw = data
                return typing.cast(SystemMessage, obj)
            return SystemMessage(subtype=subtype, data=data, raw=data)
        if kind == "rate_limit_event":
            info = data["rate_limit_info"]
            parsed_info = _rate_limit_info(info)
            parsed_info.raw = info
            return RateLimitEvent(rate_limit_info=parsed_info, uuid=data["uuid"], session_id=data["session_id"], raw=data)
        if kind == "conversation_reset":
            return ConversationResetMessage(
                new_conversation_id=data["new_conversation_id"],
                uuid=data["uuid"],
                session_id=data["session_id"],
                raw=data,
            )
    except MessageParseError:
        raise
    except (KeyError, TypeError, cattrs.BaseValidationError) as e:
        raise MessageParseError(f"Malformed {kind!r} message from the CLI: {e!r}", data) from e
    return UnknownMessage(type=str(kind), data=data, raw=data)
