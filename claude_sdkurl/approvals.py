"""Parked approvals: a tool call waits for a person without holding a CLI.

::

    from claude_sdkurl.approvals import approve, deny, parked, parking

    def policy(tool_name, tool_input):
        if tool_name == "Bash" and "rm " in tool_input.get("command", ""):
            return "park"          # a person decides, later
        return None                # no opinion: the CLI's own rules and can_use_tool

    options = ClaudeAgentOptions(hooks={"PreToolUse": [parking(policy)]})
    result = list(query("clean up", options))[-1]
    waiting = parked(result)       # Parked(session_id, tool_use_id, tool_name, tool_input) or None
    ...                            # hours later, possibly from another process or machine:
    for message in approve(waiting, options):   # the command runs, once; the turn goes on
        ...
    deny(waiting, options, reason="not on production")   # or: it never runs

How it works (measured on 2.1.330). A ``PreToolUse`` hook answering ``defer`` ends the run
without running the tool: the result has ``terminal_reason="tool_deferred"`` and
``deferred_tool_use`` (id, name, input). Resuming that session with a hook that answers
``allow`` (``deny``) for that tool use makes the CLI run (refuse) it first, then go on with the
prompt sent. The decision is claimed once before anything runs: with ``options.session_store``
by an entry keyed by the tool use id in the store (the stores here keep the first entry of a
uuid, so of two deciders only one wins, on any machine), otherwise by a file created
exclusively under the CLI's config directory (one machine). A second decision raises
:class:`AlreadyDecidedError`, and nothing runs.

In a batch (:func:`claude_sdkurl.batch.run_batch`) a parked item ends with ``fault="parked"``
and its :class:`Parked` in ``BatchItem.parked``; the rest of the batch goes on, and
``approve(item, options)`` / ``deny(item, options)`` take the item itself.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ._errors import ClaudeSDKError
from ._usercode import call_user
from .query import query
from .sessions._paths import config_dir, project_key_for_directory
from .sessions._storecall import call
from .types import ClaudeAgentOptions, HookMatcher, Message, ResultMessage

__all__ = ["AlreadyDecidedError", "Parked", "approve", "deny", "parked", "parking"]

_DECISIONS = "claude_sdkurl-decisions"  # the store subpath (and local directory) of claims


class AlreadyDecidedError(ClaudeSDKError):
    """This parked tool call was approved or denied already (here or elsewhere)."""


@dataclasses.dataclass(frozen=True)
class Parked:
    """A tool call waiting for a decision."""

    session_id: str
    tool_use_id: str
    tool_name: str
    tool_input: dict[str, Any]


def parked(source: Any) -> Parked | None:
    """The parked tool call of a :class:`ResultMessage` (``terminal_reason="tool_deferred"``),
    or of a batch item (``BatchItem.parked``); ``None`` when nothing waits."""
    if isinstance(source, Parked):
        return source
    if isinstance(source, ResultMessage):
        use = source.deferred_tool_use
        if source.terminal_reason != "tool_deferred" or use is None:
            return None
        return Parked(source.session_id, use.id, use.name, dict(use.input or {}))
    waiting = getattr(source, "parked", None)
    if isinstance(waiting, dict):
        return Parked(**waiting)
    return waiting if isinstance(waiting, Parked) else None


def parking(policy: Callable[[str, dict[str, Any]], str | None], matcher: str | None = None) -> HookMatcher:
    """A ``PreToolUse`` hook from ``policy(tool_name, tool_input)``: ``"park"`` ends the run with
    the call waiting (see the module doc), ``"allow"``/``"deny"`` answer now, ``None`` leaves
    the call to the CLI's rules (and ``can_use_tool``)."""

    def hook(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        decision = policy(hook_input.get("tool_name", ""), hook_input.get("tool_input") or {})
        if decision is None:
            return {}
        if decision not in ("park", "allow", "deny"):
            raise ValueError(f"a parking policy answers 'park', 'allow', 'deny' or None, not {decision!r}")
        verdict = "defer" if decision == "park" else decision
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": verdict}}

    return HookMatcher(matcher=matcher, hooks=[hook])


def approve(waiting: Any, options: ClaudeAgentOptions | None = None, prompt: str = "Approved: go on.") -> Iterator[Message]:
    """Run the parked call (once, anywhere) and go on with the session; yields its messages.
    :class:`AlreadyDecidedError` if it was decided already. Claimed at the call, before the
    first message is asked for."""
    return _decide(waiting, options, "allow", prompt, None)


def deny(waiting: Any, options: ClaudeAgentOptions | None = None, reason: str = "Denied by a reviewer.",
         prompt: str = "The reviewer denied that tool call; go on without it.") -> list[Message]:  # fmt: skip
    """Refuse the parked call (it never runs) and let the model go on knowing why; returns
    the messages. :class:`AlreadyDecidedError` if it was decided already."""
    return list(_decide(waiting, options, "deny", prompt, reason))


def _decide(waiting: Any, options: ClaudeAgentOptions | None, decision: str, prompt: str, reason: str | None) -> Iterator[Message]:
    call_ = parked(waiting)
    if call_ is None:
        raise ValueError(f"nothing is parked in {type(waiting).__name__}")
    options = options or ClaudeAgentOptions()
    _claim(call_, decision, options)

    def answer(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        if (tool_use_id or hook_input.get("tool_use_id")) != call_.tool_use_id:
            return {}  # another call: the options' own hooks and rules decide
        output: dict[str, Any] = {"hookEventName": "PreToolUse", "permissionDecision": decision}
        if reason:
            output["permissionDecisionReason"] = reason
        return {"hookSpecificOutput": output}

    def passing(original: Any) -> Any:
        """The options' own PreToolUse hook, sitting this call out (a parking one would park it again)."""

        def hook(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> Any:
            if (tool_use_id or hook_input.get("tool_use_id")) == call_.tool_use_id:
                return {}
            return call_user(original, hook_input, tool_use_id, context)

        return hook

    hooks = {event: list(matchers) for event, matchers in (options.hooks or {}).items()}
    own = [dataclasses.replace(m, hooks=[passing(h) for h in m.hooks]) for m in hooks.get("PreToolUse", [])]
    hooks["PreToolUse"] = [HookMatcher(matcher=call_.tool_name, hooks=[answer]), *own]
    resumed = dataclasses.replace(options, resume=call_.session_id, continue_conversation=False, hooks=hooks)
    return query(prompt, resumed)


def _claim(call_: Parked, decision: str, options: ClaudeAgentOptions) -> None:
    """Record the decision once, or raise :class:`AlreadyDecidedError` (see the module doc)."""
    token = secrets.token_hex(8)
    store = options.session_store
    if store is not None:
        key = {"project_key": project_key_for_directory(options.cwd), "session_id": call_.session_id, "subpath": _DECISIONS}
        entry = {"type": "claude_sdkurl_decision", "uuid": f"decision-{call_.tool_use_id}", "decision": decision, "claim": token}
        call(store.append, key, [entry])
        first = next((e for e in call(store.load, key) or [] if isinstance(e, dict) and e.get("uuid") == entry["uuid"]), None)
        if first is None or first.get("claim") != token:
            raise AlreadyDecidedError(f"the tool call {call_.tool_use_id} was {(first or {}).get('decision', 'decided')} already")
        return
    env = options.env or {}
    base = Path(env["CLAUDE_CONFIG_DIR"]) if "CLAUDE_CONFIG_DIR" in env else Path(env["HOME"], ".claude") if "HOME" in env else config_dir()
    folder = base / _DECISIONS
    folder.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(folder / call_.tool_use_id, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        raise AlreadyDecidedError(f"the tool call {call_.tool_use_id} was decided already") from None
    with os.fdopen(fd, "w") as f:
        f.write(decision)
