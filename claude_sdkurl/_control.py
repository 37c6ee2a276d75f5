"""Control requests the CLI sends us: one handler per subtype, all in this file.

Each handler takes the session and the request body and returns the
``response`` dict for a success answer, or raises to send an error answer
carrying the exception's message. Handlers run on the session's callback
worker, never on the reader thread.

=================  ===========================================
subtype            handler
=================  ===========================================
``can_use_tool``   :func:`handle_can_use_tool` -> ``can_use_tool`` option
``hook_callback``  :func:`handle_hook_callback` -> ``hooks`` option
``mcp_message``    :func:`handle_mcp_message` -> SDK MCP servers
``elicitation``    :func:`handle_elicitation` -> ``on_elicitation``
=================  ===========================================
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from .types import (
    ClaudeAgentOptions,
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionUpdate,
    ToolPermissionContext,
)

if TYPE_CHECKING:
    from ._session import Session

logger = logging.getLogger("claude_sdkurl.control")


def call_user(fn: Callable[..., Any], *args: Any) -> Any:
    """Call user code that may be a plain function or ``async def`` (a callback, a
    session store's method) and return its result.

    A coroutine is run to completion on a fresh event loop with :func:`asyncio.run`:
    in this thread (callback workers have no loop), or, when this thread already
    runs one (a store function called from a Jupyter cell), on a helper thread.
    """
    result = fn(*args)
    if not inspect.isawaitable(result):
        return result

    async def _await() -> Any:
        return await result

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await())
    return in_thread(lambda: asyncio.run(_await()), "claude-sdkurl-await").result()


def in_thread(fn: Callable[[], Any], name: str) -> Future[Any]:
    """Run ``fn`` on a new daemon thread; its outcome (value or exception) is the future's."""
    future: Future[Any] = Future()

    def _run() -> None:
        try:
            future.set_result(fn())
        except BaseException as e:  # handed to whoever waits on the future
            future.set_exception(e)

    threading.Thread(target=_run, name=name, daemon=True).start()
    return future


def handle_can_use_tool(session: Session, request: dict[str, Any]) -> dict[str, Any]:
    """Ask ``options.can_use_tool`` whether a tool may run."""
    callback = session.options.can_use_tool
    if callback is None:
        raise RuntimeError("can_use_tool was requested but no can_use_tool callback is set")
    original_input = request.get("input") or {}
    context = ToolPermissionContext(
        signal=None,
        suggestions=[PermissionUpdate.from_dict(s) for s in request.get("permission_suggestions") or []],
        tool_use_id=request.get("tool_use_id"),
        agent_id=request.get("agent_id"),
        blocked_path=request.get("blocked_path"),
        decision_reason=request.get("decision_reason"),
        title=request.get("title"),
        display_name=request.get("display_name"),
        description=request.get("description"),
    )
    result = call_user(callback, request.get("tool_name"), original_input, context)
    if isinstance(result, PermissionResultAllow):
        # The CLI requires updatedInput on allow (without it the tool fails validation).
        out: dict[str, Any] = {
            "behavior": "allow",
            "updatedInput": result.updated_input if result.updated_input is not None else original_input,
        }
        if result.updated_permissions is not None:
            try:
                out["updatedPermissions"] = [u.to_dict() for u in result.updated_permissions]
            except ValueError as e:
                logger.warning("can_use_tool allowed the call, but its permission updates were not sent: %s", e)
        return out
    if isinstance(result, PermissionResultDeny):
        out = {"behavior": "deny", "message": result.message}
        if result.interrupt:
            out["interrupt"] = True
        return out
    raise TypeError(
        "Tool permission callback must return PermissionResult (PermissionResultAllow or PermissionResultDeny), "
        f"got {type(result)}"
    )


def hooks_config(
    options: ClaudeAgentOptions, extra: dict[str, tuple[str, Callable[..., Any]]] | None = None
) -> tuple[dict[str, Any] | None, dict[str, Callable[..., Any]]]:
    """The ``hooks`` value for ``initialize`` and the callback-id registry behind it.

    ``extra`` maps a hook event to one internal ``(callback_id, callback)`` of
    the SDK's own (see :mod:`claude_sdkurl.prewarm`), registered after the
    user's hooks for that event.
    """
    config: dict[str, Any] = {}
    registry: dict[str, Callable[..., Any]] = {}
    for event, matchers in (options.hooks or {}).items():
        if not matchers:
            continue
        entries = []
        for matcher in matchers:
            ids = []
            for callback in matcher.hooks:
                if not callable(callback):
                    raise TypeError(f"hook for {event} is not callable: {callback!r}")
                callback_id = f"hook_{len(registry)}"
                registry[callback_id] = callback
                ids.append(callback_id)
            entry: dict[str, Any] = {"matcher": matcher.matcher, "hookCallbackIds": ids}
            if matcher.timeout is not None:
                entry["timeout"] = matcher.timeout
            if matcher.on_failure is not None:
                entry["onFailure"] = matcher.on_failure
            entries.append(entry)
        config[event] = entries
    for extra_event, (callback_id, callback) in (extra or {}).items():
        registry[callback_id] = callback
        config.setdefault(extra_event, []).append({"matcher": None, "hookCallbackIds": [callback_id]})
    return config or None, registry


def _hook_output_for_cli(output: Any) -> dict[str, Any]:
    if output is None:
        # As the official SDK, whose conversion fails on None: the CLI gets an error answer.
        raise TypeError("the hook callback returned None; return a dict ({} to change nothing)")
    if not isinstance(output, dict):
        raise TypeError(f"a hook callback must return a dict, got {type(output).__name__}")
    renamed = {"async_": "async", "continue_": "continue"}
    return {renamed.get(str(k), str(k)): v for k, v in output.items()}


def handle_hook_callback(session: Session, request: dict[str, Any]) -> dict[str, Any]:
    """Run the hook callback registered under ``callback_id``."""
    callback_id = request.get("callback_id")
    callback = session.hook_callbacks.get(str(callback_id))
    if callback is None:
        raise KeyError(f"No hook callback found for ID: {callback_id}")
    output = call_user(callback, request.get("input"), request.get("tool_use_id"), {"signal": None})
    return _hook_output_for_cli(output)


def handle_mcp_message(session: Session, request: dict[str, Any]) -> dict[str, Any]:
    """Route a JSON-RPC message to the named in-process MCP server."""
    name = request.get("server_name")
    message = request.get("message")
    if not isinstance(name, str) or not isinstance(message, dict):
        raise ValueError("mcp_message needs server_name and message")
    server = session.sdk_mcp_servers.get(name)
    if server is None:
        reply: dict[str, Any] | None = {
            "jsonrpc": "2.0",
            "id": message.get("id"),
            "error": {"code": -32601, "message": f"Server '{name}' not found"},
        }
    else:
        reply = server.handle(message)
    if reply is None:  # a notification: the control request still wants an ack
        reply = {"jsonrpc": "2.0", "result": {}}
    return {"mcp_response": reply}


def handle_elicitation(session: Session, request: dict[str, Any]) -> dict[str, Any]:
    """Ask ``options.on_elicitation`` (if set) to answer an MCP elicitation."""
    callback = getattr(session.options, "on_elicitation", None)
    if callback is None:
        return {"action": "decline"}
    result = call_user(callback, request)
    if not isinstance(result, dict):
        raise TypeError("on_elicitation must return a dict such as {'action': 'accept', 'content': {...}}")
    return result


HANDLERS: dict[str, Callable[[Session, dict[str, Any]], dict[str, Any]]] = {
    "can_use_tool": handle_can_use_tool,
    "hook_callback": handle_hook_callback,
    "mcp_message": handle_mcp_message,
    "elicitation": handle_elicitation,
}
