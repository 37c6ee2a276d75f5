"""Wire dict -> typed message, field by field as the official ``message_parser``.

Where the official parser drops things we keep them: a message or content
block of a type we do not model becomes :class:`UnknownMessage` /
:class:`UnknownBlock` with the whole dict, and every typed object keeps its
wire dict in ``raw``. A known message that lacks a field it must have raises
:class:`MessageParseError` here; the protocol core turns that into an
:class:`UnknownMessage` with a logged warning (see the migration table, docs/guide/porting.md).
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Callable

from .._errors import MessageParseError
from ..types import (
    ApiRetryMessage,
    AssistantMessage,
    AuthStatusMessage,
    PermissionDeniedMessage,
    PromptSuggestionMessage,
    SessionWritesLostMessage,
    ToolProgressMessage,
    ToolUseSummaryMessage,
    ContentBlock,
    ConversationResetMessage,
    DeferredToolUse,
    HookEventMessage,
    Message,
    MessageOrigin,
    MirrorErrorMessage,
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
    TaskUpdatedMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnknownBlock,
    UnknownMessage,
    UserMessage,
)

_T = typing.TypeVar("_T")


def _raw(obj: _T, data: dict[str, Any]) -> _T:
    obj.raw = data  # type: ignore[attr-defined]
    return obj


_BLOCKS: dict[str, Callable[[dict[str, Any]], ContentBlock]] = {
    "text": lambda b: TextBlock(b["text"]),
    "thinking": lambda b: ThinkingBlock(b["thinking"], b["signature"]),
    "tool_use": lambda b: ToolUseBlock(b["id"], b["name"], b["input"]),
    "tool_result": lambda b: ToolResultBlock(b["tool_use_id"], b.get("content"), b.get("is_error")),
    "server_tool_use": lambda b: ServerToolUseBlock(b["id"], b["name"], b["input"]),
    # The official parser keeps advisor results only; the other server-tool results
    # (a list of search hits, a fetched page...) are the same shape of thing.
    "advisor_tool_result": lambda b: ServerToolResultBlock(b["tool_use_id"], b["content"]),
    "web_search_tool_result": lambda b: ServerToolResultBlock(b["tool_use_id"], b["content"]),
    "web_fetch_tool_result": lambda b: ServerToolResultBlock(b["tool_use_id"], b["content"]),
}


def parse_block(block: Any) -> ContentBlock:
    """One content block; unknown or malformed blocks are kept as :class:`UnknownBlock`."""
    if not isinstance(block, dict):
        return UnknownBlock(type=type(block).__name__, data={"value": block})
    kind = block.get("type")
    build = _BLOCKS.get(kind) if isinstance(kind, str) else None
    if build is not None:
        try:
            return _raw(build(block), block)
        except (KeyError, TypeError):
            pass
    return _raw(UnknownBlock(type=kind if isinstance(kind, str) else type(kind).__name__, data=block), block)


def _blocks(content: Any) -> list[ContentBlock]:
    return [parse_block(b) for b in content]


def _origin(data: dict[str, Any]) -> MessageOrigin | None:
    origin = data.get("origin")
    if isinstance(origin, dict) and isinstance(origin.get("kind"), str):
        return origin  # type: ignore[return-value]
    return None


def stream_event(data: dict[str, Any]) -> StreamEvent:
    """A ``stream_event`` wire dict as :class:`StreamEvent` (raises ``KeyError`` if malformed)."""
    get = data.get
    event = StreamEvent(
        data["uuid"],
        data["session_id"],
        data["event"],
        get("parent_tool_use_id"),
        get("user_message_uuid"),
        get("user_message_uuids"),
    )
    event.__dict__["_raw"] = data
    return event


def _assistant(data: dict[str, Any]) -> AssistantMessage:
    msg = data["message"]
    content = msg["content"]
    if not isinstance(content, list):
        raise MessageParseError(f"Invalid assistant content (expected list, got {type(content).__name__})", data)
    return AssistantMessage(
        content=_blocks(content),
        model=msg["model"],
        parent_tool_use_id=data.get("parent_tool_use_id"),
        error=data.get("error"),
        usage=msg.get("usage"),
        message_id=msg.get("id"),
        stop_reason=msg.get("stop_reason"),
        session_id=data.get("session_id"),
        uuid=data.get("uuid"),
        user_message_uuid=data.get("user_message_uuid"),
        user_message_uuids=data.get("user_message_uuids"),
    )


def _user(data: dict[str, Any]) -> UserMessage:
    content = data["message"]["content"]
    return UserMessage(
        content=_blocks(content) if isinstance(content, list) else content,
        uuid=data.get("uuid"),
        parent_tool_use_id=data.get("parent_tool_use_id"),
        tool_use_result=data.get("tool_use_result"),
        origin=_origin(data),
    )


def _result(data: dict[str, Any]) -> ResultMessage:
    deferred = data.get("deferred_tool_use")
    return ResultMessage(
        subtype=data["subtype"],
        duration_ms=data["duration_ms"],
        duration_api_ms=data["duration_api_ms"],
        is_error=data["is_error"],
        num_turns=data["num_turns"],
        session_id=data["session_id"],
        stop_reason=data.get("stop_reason"),
        total_cost_usd=data.get("total_cost_usd"),
        usage=data.get("usage"),
        result=data.get("result"),
        structured_output=data.get("structured_output"),
        model_usage=data.get("modelUsage"),
        permission_denials=data.get("permission_denials"),
        deferred_tool_use=DeferredToolUse(deferred["id"], deferred["name"], deferred["input"]) if deferred else None,
        errors=data.get("errors"),
        api_error_status=data.get("api_error_status"),
        uuid=data.get("uuid"),
        terminal_reason=data.get("terminal_reason"),
        origin=_origin(data),
        user_message_uuid=data.get("user_message_uuid"),
        user_message_uuids=data.get("user_message_uuids"),
        ttft_ms=data.get("ttft_ms"),
        ttft_stream_ms=data.get("ttft_stream_ms"),
        time_to_request_ms=data.get("time_to_request_ms"),
        resume_reason=data.get("resume_reason"),
    )


def _system(data: dict[str, Any]) -> SystemMessage:
    subtype = data["subtype"]
    if subtype in ("hook_started", "hook_response"):
        return HookEventMessage(
            subtype=subtype,
            data=data,
            hook_event_name=data.get("hook_event") or data.get("hook_name") or data.get("hook_event_name") or "",
            session_id=data.get("session_id"),
            uuid=data.get("uuid"),
        )
    if subtype == "task_started":
        return TaskStartedMessage(
            subtype,
            data,
            task_id=data["task_id"],
            description=data["description"],
            uuid=data["uuid"],
            session_id=data["session_id"],
            tool_use_id=data.get("tool_use_id"),
            task_type=data.get("task_type"),
        )
    if subtype == "task_progress":
        return TaskProgressMessage(
            subtype,
            data,
            task_id=data["task_id"],
            description=data["description"],
            usage=data["usage"],
            uuid=data["uuid"],
            session_id=data["session_id"],
            tool_use_id=data.get("tool_use_id"),
            last_tool_name=data.get("last_tool_name"),
        )
    if subtype == "task_notification":
        return TaskNotificationMessage(
            subtype,
            data,
            task_id=data["task_id"],
            status=data["status"],
            output_file=data["output_file"],
            summary=data["summary"],
            uuid=data["uuid"],
            session_id=data["session_id"],
            tool_use_id=data.get("tool_use_id"),
            usage=data.get("usage"),
        )
    if subtype == "task_updated":
        patch = data.get("patch")
        if not isinstance(patch, dict):
            patch = {}
        return TaskUpdatedMessage(
            subtype,
            data,
            task_id=data.get("task_id", ""),
            patch=patch,
            status=patch.get("status"),
            session_id=data.get("session_id"),
            uuid=data.get("uuid"),
        )
    if subtype == "mirror_error":
        return MirrorErrorMessage(subtype, data, key=data.get("key"), error=data.get("error", ""))
    typed = _TYPED_SYSTEM.get(subtype)
    if typed is not None:
        return typed(subtype, data, **_fields_of(typed, data))
    return SystemMessage(subtype=subtype, data=data)


# system subtypes TypeScript types and the official Python SDK leaves as SystemMessage: every
# field they declare is optional here, so a CLI that leaves one out still gives the message
_TYPED_SYSTEM: dict[str, type[SystemMessage]] = {
    "api_retry": ApiRetryMessage,
    "permission_denied": PermissionDeniedMessage,
    "session_writes_lost": SessionWritesLostMessage,
}


def _fields_of(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """The wire fields of ``data`` that are fields of ``cls`` (but the SystemMessage pair)."""
    names = {f.name for f in dataclasses.fields(cls)} - {"subtype", "data"}
    return {k: v for k, v in data.items() if k in names}


def _prompt_suggestion(data: dict[str, Any]) -> PromptSuggestionMessage:
    return PromptSuggestionMessage(data["suggestion"], data["uuid"], data["session_id"])


def _tool_progress(data: dict[str, Any]) -> ToolProgressMessage:
    return ToolProgressMessage(
        data["tool_use_id"],
        data["tool_name"],
        data["elapsed_time_seconds"],
        data["uuid"],
        data["session_id"],
        parent_tool_use_id=data.get("parent_tool_use_id"),
        task_id=data.get("task_id"),
        heartbeat=_of(data, "heartbeat", bool),
        subagent_type=_of(data, "subagent_type", str),
        subagent_retry=_of(data, "subagent_retry", dict),
        description=_of(data, "description", str),
    )


def _of(data: dict[str, Any], key: str, kind: type) -> Any:
    """An optional field of a newer CLI: ``data[key]`` when it is a ``kind``, else ``None``
    (left out, as older CLIs do, or of a shape this SDK cannot type; the frame keeps it)."""
    value = data.get(key)
    return value if isinstance(value, kind) else None


def _tool_use_summary(data: dict[str, Any]) -> ToolUseSummaryMessage:
    return ToolUseSummaryMessage(data["summary"], list(data["preceding_tool_use_ids"]), data["uuid"], data["session_id"])


def _auth_status(data: dict[str, Any]) -> AuthStatusMessage:
    return AuthStatusMessage(
        bool(data["isAuthenticating"]), list(data["output"]), data["uuid"], data["session_id"], error=data.get("error")
    )


def _rate_limit(data: dict[str, Any]) -> RateLimitEvent:
    info = data["rate_limit_info"]
    # The wire is camelCase; the fields are snake_case.
    return RateLimitEvent(
        rate_limit_info=RateLimitInfo(
            status=info["status"],
            resets_at=info.get("resetsAt"),
            rate_limit_type=info.get("rateLimitType"),
            utilization=info.get("utilization"),
            overage_status=info.get("overageStatus"),
            overage_resets_at=info.get("overageResetsAt"),
            overage_disabled_reason=info.get("overageDisabledReason"),
            raw=info,
        ),
        uuid=data["uuid"],
        session_id=data["session_id"],
    )


def _reset(data: dict[str, Any]) -> ConversationResetMessage:
    return ConversationResetMessage(data["new_conversation_id"], data["uuid"], data["session_id"])


_MESSAGES: dict[str, Callable[[dict[str, Any]], Message]] = {
    "assistant": _assistant,
    "user": _user,
    "result": _result,
    "system": _system,
    "stream_event": stream_event,
    "rate_limit_event": _rate_limit,
    "conversation_reset": _reset,
    "prompt_suggestion": _prompt_suggestion,
    "tool_progress": _tool_progress,
    "tool_use_summary": _tool_use_summary,
    "auth_status": _auth_status,
}


def parse_message(data: dict[str, Any]) -> Message:
    """Turn one wire dict from the CLI into a typed message.

    Raises :class:`MessageParseError` when a known message type lacks a field
    it must have or has one of the wrong shape; unknown types become
    :class:`UnknownMessage`.
    """
    if not isinstance(data, dict):
        raise MessageParseError(f"Invalid message data type (expected dict, got {type(data).__name__})", None)
    kind = data.get("type")
    build = _MESSAGES.get(kind) if isinstance(kind, str) else None
    if build is None:
        return _raw(UnknownMessage(type=kind if isinstance(kind, str) else type(kind).__name__, data=data), data)
    try:
        return _raw(build(data), data)
    except MessageParseError:
        raise
    except (KeyError, TypeError, AttributeError, IndexError) as e:
        raise MessageParseError(f"Missing or malformed field in {kind} message: {e!r}", data) from e
