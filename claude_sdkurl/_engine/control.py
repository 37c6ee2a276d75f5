"""Control requests the CLI sends us: one handler per subtype, all in this file.

Each handler takes the launch plan (the checked options, the hook-callback
registry, the in-process MCP servers) and the request body, and returns the
``response`` dict for a success answer, or raises to send an error answer
carrying the exception's message. Handlers run on the session's callback
workers (``workers``), never on the reader thread; user code is called through
:func:`claude_sdkurl._engine.usercode.call_user`. The session's machinery (first
answer wins, cancels, time-outs) stays in ``session``: handlers only decide.

=================  ===========================================
subtype            handler
=================  ===========================================
``can_use_tool``   :func:`handle_can_use_tool` -> ``can_use_tool`` option
``hook_callback``  :func:`handle_hook_callback` -> ``hooks`` option
``mcp_message``    :func:`handle_mcp_message` -> SDK MCP servers
``elicitation``    :func:`handle_elicitation` -> ``on_elicitation``
``request_user_    :func:`handle_user_dialog` -> ``on_user_dialog``
dialog``
=================  ===========================================

A handler that returns :data:`NO_ANSWER` leaves the request unanswered on purpose.

A hook that guards a tool call (``PreToolUse``, ``PermissionRequest``: ``launch.GUARD_EVENTS``)
and fails (raises, returns no dict, or is not done within :func:`answer_bound`) is answered with a
denial the model sees (:func:`failure_answer`), never with an error, which the CLI takes for "no
opinion" and runs the tool; ``on_failure="continue"`` on its matcher keeps the error answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .usercode import call_user
from ..types import (
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionUpdate,
    ToolPermissionContext,
)

if TYPE_CHECKING:
    from .launch import LaunchPlan

logger = logging.getLogger("claude_sdkurl.control")


def handle_can_use_tool(plan: LaunchPlan, request: dict[str, Any]) -> dict[str, Any]:
    """Ask ``options.can_use_tool`` whether a tool may run."""
    callback = plan.options.can_use_tool
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


def _hook_output_for_cli(output: Any) -> dict[str, Any]:
    if output is None:
        # As the official SDK, whose conversion fails on None: the CLI gets an error answer.
        raise TypeError("the hook callback returned None; return a dict ({} to change nothing)")
    if not isinstance(output, dict):
        raise TypeError(f"a hook callback must return a dict, got {type(output).__name__}")
    renamed = {"async_": "async", "continue_": "continue"}
    return {renamed.get(str(k), str(k)): v for k, v in output.items()}


def handle_hook_callback(plan: LaunchPlan, request: dict[str, Any]) -> dict[str, Any]:
    """Run the hook callback registered under ``callback_id``."""
    callback_id = request.get("callback_id")
    callback = plan.hook_callbacks.get(str(callback_id))
    if callback is None:
        raise KeyError(f"No hook callback found for ID: {callback_id}")
    output = call_user(callback, request.get("input"), request.get("tool_use_id"), {"signal": None})
    return _hook_output_for_cli(output)


def answer_bound(plan: LaunchPlan, request: dict[str, Any], callback_timeout: float | None) -> float | None:
    """Seconds the CLI's ``request`` may wait for its callback before it is answered without it
    (``None``: no bound). ``callback_timeout`` bounds every callback; a hook callback is also bound
    by its matcher's ``timeout``, else by ``DEFAULT_HOOK_TIMEOUT``, whichever is shortest."""
    if request.get("subtype") != "hook_callback":
        return callback_timeout
    from .launch import DEFAULT_HOOK_TIMEOUT  # (loaded with the plan by now)

    spec = plan.hook_specs.get(str(request.get("callback_id")))
    own = spec.timeout if spec is not None and spec.timeout is not None else DEFAULT_HOOK_TIMEOUT
    return own if callback_timeout is None else min(own, callback_timeout)


def failure_answer(plan: LaunchPlan, request: dict[str, Any], reason: str) -> dict[str, Any] | None:
    """The answer to a guarding hook's ``request`` whose callback failed (``reason``: how): the
    call it guards denied, the model told why. ``None`` for any other request (an error answer)."""
    if request.get("subtype") != "hook_callback":
        return None
    spec = plan.hook_specs.get(str(request.get("callback_id")))
    if spec is None or not spec.fails_closed:
        return None
    message = f"The {spec.event} hook {reason}. The tool call was denied: a guard that cannot decide denies."
    if spec.event == "PermissionRequest":
        return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": message}}}
    return {"hookSpecificOutput": {"hookEventName": spec.event, "permissionDecision": "deny", "permissionDecisionReason": message}}


def handle_mcp_message(plan: LaunchPlan, request: dict[str, Any]) -> dict[str, Any]:
    """Route a JSON-RPC message to the named in-process MCP server."""
    name = request.get("server_name")
    message = request.get("message")
    if not isinstance(name, str) or not isinstance(message, dict):
        raise ValueError("mcp_message needs server_name and message")
    server = plan.sdk_mcp_servers.get(name)
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


NO_ANSWER: dict[str, Any] | None = None
"""What a handler returns to send no answer at all (the session then forgets the request)."""


def handle_user_dialog(plan: LaunchPlan, request: dict[str, Any]) -> dict[str, Any] | None:
    """Ask ``options.on_user_dialog`` to render a dialog the CLI parked.

    As TypeScript: with no callback, or when it returns ``None``, nothing is answered (another
    attached client may render it; the CLI's park deadline settles it otherwise).
    """
    callback = plan.options.on_user_dialog
    if callback is None:
        logger.info("no on_user_dialog for request_user_dialog (kind %s): left unanswered", request.get("dialog_kind"))
        return NO_ANSWER
    dialog = {
        "dialog_kind": request.get("dialog_kind"),
        "payload": request.get("payload") or {},
        "tool_use_id": request.get("tool_use_id"),
    }
    result = call_user(callback, dialog)
    if result is None:
        return NO_ANSWER
    if not isinstance(result, dict) or result.get("behavior") not in ("completed", "cancelled"):
        raise TypeError("on_user_dialog must return {'behavior': 'completed', 'result': ...}, {'behavior': 'cancelled'} or None")
    return dict(result)


def handle_elicitation(plan: LaunchPlan, request: dict[str, Any]) -> dict[str, Any]:
    """Ask ``options.on_elicitation`` (if set) to answer an MCP elicitation."""
    callback = plan.options.on_elicitation
    if callback is None:
        return {"action": "decline"}
    result = call_user(callback, request)
    if not isinstance(result, dict):
        raise TypeError("on_elicitation must return a dict such as {'action': 'accept', 'content': {...}}")
    return result


HANDLERS: dict[str, Callable[[LaunchPlan, dict[str, Any]], dict[str, Any] | None]] = {
    "can_use_tool": handle_can_use_tool,
    "hook_callback": handle_hook_callback,
    "mcp_message": handle_mcp_message,
    "elicitation": handle_elicitation,
    "request_user_dialog": handle_user_dialog,
}
