"""What a live CLI takes from the options of each turn, and what only a new start gives it.

A conversation's CLI (:mod:`claude_sdkurl.conversations`, in-process and in the session host)
serves turns whose options may differ from those it was started with (a deploy). Three sorts of
field:

* the **live** ones (:data:`LIVE_FIELDS`), which a control request changes between turns. Both
  CLIs answer these (``set_model``, ``set_permission_mode``, ``set_max_thinking_tokens``: found in
  2.1.120, over the WebSocket, and in 2.1.330, over stdio; ``apply_flag_settings`` and
  ``mcp_set_servers`` exist in both too, but change layers of settings and servers that a fresh
  start would not build the same way, so those fields restart);
* the callbacks, which a CLI is started with as callbacks that ask the options of the turn under
  way (:func:`asking`): a turn's ``can_use_tool``, hooks, in-process MCP servers, elicitation,
  dialog and stderr handlers are its own whoever started the CLI; only whether there are any
  (hooks: their events and matchers; servers: their names) is the CLI's to know at its start;
* every other field (``env``, tools, the system prompt, ``cwd``, MCP servers, ...), which the CLI
  takes only when it starts (:func:`launch_view`, :func:`changed`): one that differs needs a new
  start, with the conversation's history.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import PurePath
from typing import Any

from ..types import ClaudeAgentOptions, HookMatcher, PermissionResultDeny

LIVE_FIELDS = ("model", "permission_mode", "max_thinking_tokens")
"""The fields a live CLI takes with a control request (see the module doc)."""

ASKED = ("can_use_tool", "on_elicitation", "on_user_dialog", "stderr")
"""Callbacks asked of the turn under way; a CLI's start knows only whether there is one."""

NO_DECIDER = "no can_use_tool in the program that sent this turn"
OTHER_HOOKS = ("the program that sent this turn has other hooks than the conversation's CLI was started with "
               "(a deploy under way): nothing they did not decide may run")  # fmt: skip


def live_values(options: ClaudeAgentOptions) -> dict[str, Any]:
    """The live fields as the CLI is told them (no permission mode: ``"default"``; with
    ``thinking`` set the CLI gets no ``--max-thinking-tokens``, so that field means nothing)."""
    return {"model": options.model, "permission_mode": options.permission_mode or "default",
            "max_thinking_tokens": options.max_thinking_tokens if options.thinking is None else None}  # fmt: skip


def _in_process(config: Any) -> bool:
    return isinstance(config, dict) and config.get("type") == "sdk"


def _served(config: Any) -> bool:
    return _in_process(config) and hasattr(config.get("instance"), "handle")


def hook_shape(hooks: dict[str, list[HookMatcher]]) -> dict[str, list[dict[str, Any]]]:
    """What of ``options.hooks`` says which callbacks there are: by event, each matcher's
    pattern, timeout, failure rule and number of callbacks."""
    return {str(event): [{"matcher": m.matcher, "hooks": len(m.hooks), "timeout": m.timeout, "on_failure": m.on_failure}
                         for m in matchers]
            for event, matchers in hooks.items()}  # fmt: skip


def _shape(hooks: Any) -> dict[str, Any]:
    """:func:`hook_shape`, an event without matchers being none."""
    return {event: shape for event, shape in hook_shape(hooks or {}).items() if shape}


def launch_view(options: ClaudeAgentOptions) -> dict[str, Any]:
    """What of ``options`` a CLI takes only at its start: every field but the live ones, a
    callback as whether there is one, the hooks as their shape, an in-process MCP server as its
    name (their calls are asked of each turn's own, see :func:`asking`)."""
    view: dict[str, Any] = {}
    for f in dataclasses.fields(ClaudeAgentOptions):
        if f.name in LIVE_FIELDS:
            continue
        value = getattr(options, f.name)
        if f.name in ASKED:
            value = value is not None
        elif f.name == "hooks":
            value = _shape(value)
        elif f.name == "mcp_servers" and isinstance(value, dict):
            value = {name: {"type": "sdk", "name": c.get("name", name)} if _in_process(c) else c for name, c in value.items()}
        elif isinstance(value, PurePath):
            value = os.fspath(value)
        elif isinstance(value, tuple):
            value = list(value)
        view[f.name] = value
    return view


def changed(before: ClaudeAgentOptions, after: ClaudeAgentOptions) -> list[str]:
    """The names of the launch-time fields that differ (names only: ``env`` holds secrets)."""
    old, new = launch_view(before), launch_view(after)
    return [name for name in new if new[name] != old[name]]


class _Asking:
    """A callback of a CLI's start that calls the same callback of the turn under way (``turn()``:
    its options). It stands for the callback it was made from in ``==`` (a spare pool started
    from the same options still fits)."""

    def __init__(self, made_from: Any, call: Callable[..., Any]) -> None:
        self.made_from = made_from
        self._call = call

    def __call__(self, *args: Any) -> Any:
        return self._call(*args)

    def __eq__(self, other: object) -> bool:
        return other is self.made_from or (isinstance(other, _Asking) and other.made_from is self.made_from)

    def __hash__(self) -> int:
        return hash(id(self.made_from))


class _AskedServer(_Asking):
    """An in-process MCP server of a CLI's start: each JSON-RPC message goes to the server of
    that name in the turn's options (a request it lacks is answered as the CLI's own "not
    found"). It stands for the server it was made from in ``==``, as :class:`_Asking`."""

    def __init__(self, made_from: Any, name: str, turn: Callable[[], ClaudeAgentOptions]) -> None:
        super().__init__(made_from, self.handle)
        self.name, self._turn = name, turn

    def handle(self, message: dict[str, Any]) -> dict[str, Any] | None:
        servers = self._turn().mcp_servers
        config = servers.get(self.name) if isinstance(servers, dict) else None
        instance = config.get("instance") if _in_process(config) else None  # type: ignore[union-attr]
        if instance is None or not hasattr(instance, "handle"):
            if "id" not in message:
                return None
            return {"jsonrpc": "2.0", "id": message.get("id"), "error": {"code": -32601, "message": f"Server '{self.name}' not found"}}
        reply: dict[str, Any] | None = instance.handle(message)
        return reply


def asking(options: ClaudeAgentOptions, turn: Callable[[], ClaudeAgentOptions]) -> ClaudeAgentOptions:
    """``options`` (a CLI's start) with each callback asking the options of the turn under way
    (``turn()``). A turn without the callback: ``can_use_tool`` denies and says why, elicitation
    declines, a user dialog is left unanswered, stderr goes nowhere; a hook whose turn has other
    hooks (another shape) denies a ``PreToolUse`` and says why, and has no opinion elsewhere."""
    def ask(name: str, otherwise: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            callback = getattr(turn(), name)
            return otherwise(*args) if callback is None else callback(*args)

        return call

    changes: dict[str, Any] = {}
    fallbacks: dict[str, Callable[..., Any]] = {
        "can_use_tool": lambda *a: PermissionResultDeny(message=NO_DECIDER),
        "on_elicitation": lambda *a: {"action": "decline"},
        "on_user_dialog": lambda *a: None,
        "stderr": lambda *a: None,
    }
    for name in ASKED:
        made_from = getattr(options, name)
        if made_from is not None:
            changes[name] = _Asking(made_from, ask(name, fallbacks[name]))
    if options.hooks:
        shape = _shape(options.hooks)

        def hook(event: str, m: int, h: int, made_from: Any) -> _Asking:
            def call(hook_input: Any, tool_use_id: str | None, context: Any) -> Any:
                hooks = turn().hooks or {}
                if _shape(hooks) != shape:
                    if event == "PreToolUse":
                        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                                       "permissionDecisionReason": OTHER_HOOKS}}  # fmt: skip
                    return {}
                return hooks[event][m].hooks[h](hook_input, tool_use_id, context)  # type: ignore[index]

            return _Asking(made_from, call)

        changes["hooks"] = {event: [HookMatcher(matcher=matcher.matcher, timeout=matcher.timeout, on_failure=matcher.on_failure,
                                                hooks=[hook(event, m, h, c) for h, c in enumerate(matcher.hooks)])
                                    for m, matcher in enumerate(matchers)]
                            for event, matchers in options.hooks.items()}  # fmt: skip
    if isinstance(options.mcp_servers, dict) and any(_served(c) for c in options.mcp_servers.values()):
        # (a server without a usable instance is left as it is: the launch refuses it, as it would)
        changes["mcp_servers"] = {name: {**c, "instance": _AskedServer(c["instance"], name, turn)} if _served(c) else c  # type: ignore[typeddict-item]
                                  for name, c in options.mcp_servers.items()}  # fmt: skip
    return dataclasses.replace(options, **changes) if changes else options
