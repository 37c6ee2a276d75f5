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
prompt sent.

What a decision applies to. Before anything is claimed, the call is looked up in the session's
transcript (``options.session_store`` when set, else the CLI's transcript on this machine, under
the ``HOME``/``CLAUDE_CONFIG_DIR`` of ``options.env``): the tool use id must name a call of that
session that has no result yet, with the tool name and input of the :class:`Parked` record.
Anything else (a forged or malformed id, a record edited to show another command, a transcript
that is gone) raises :class:`NotParkedError` and uses up nothing. While the call runs, the
deciding hook answers only a call with that id, name and input; a call presented otherwise is
denied.

The decision is then claimed once: with ``options.session_store`` by an entry the store keeps
the first of (so of two deciders only one wins, on any machine), otherwise by a file created
exclusively under the CLI's config directory (one machine), named by a hash of the ids, never
by the ids themselves. A second decision raises :class:`AlreadyDecidedError`, and nothing runs.
When the resumed run fails before the call has a result in the transcript (the CLI could not
start, the store failed), the claim is released: the decision can be made again.

Finding them later: the CLI records each deferral in the session (an attachment of type
``hook_deferred_tool``); :func:`list_parked` reads those of the sessions ``options`` would
resume and gives each call that has no result and no claimed decision (:func:`decision_of`),
with the session's own name and input. :func:`decide` takes the decision as a value (the
relay's page decides through it).

In a batch (:func:`claude_sdkurl.batch.run_batch`) a parked item ends with ``fault="parked"``
and its :class:`Parked` in ``BatchItem.parked``; the rest of the batch goes on, and
``approve(item, options)`` / ``deny(item, options)`` take the item itself.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ._errors import ClaudeSDKError
from ._engine.usercode import call_user
from .query import query
from .sessions import _of_options
from ._engine.paths import cli_config_dir, is_session_id, project_key_for_directory
from ._engine.storecall import call
from .types import ClaudeAgentOptions, HookMatcher, Message, ResultMessage, ToolResultBlock, UserMessage

__all__ = ["AlreadyDecidedError", "NotParkedError", "Parked", "approve", "decide", "decision_of", "deny", "list_parked",
           "parked", "parking"]

_DECISIONS = "claude_sdkurl-decisions"  # the store subpath (and local directory) of claims


class AlreadyDecidedError(ClaudeSDKError):
    """This parked tool call was approved or denied already (here or elsewhere)."""


class NotParkedError(ClaudeSDKError, ValueError):
    """What was given to decide is not a call parked in that session: a malformed or unknown
    id, a record whose tool name or input differ from the session's call, or a session whose
    transcript cannot be found. Nothing was claimed or run."""


# A tool use id as the API makes them (toolu_...); anything else is refused before any use.
_TOOL_USE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


@dataclasses.dataclass(frozen=True)
class Parked:
    """A tool call waiting for a decision."""

    session_id: str
    """The session holding the call (resume it to decide)."""
    tool_use_id: str
    """The call's id."""
    tool_name: str
    """The tool called."""
    tool_input: dict[str, Any]
    """Its arguments."""
    parked_at: str | None = None
    """When the CLI recorded it as deferred (ISO 8601), where known."""


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


def decide(waiting: Any, options: ClaudeAgentOptions | None, allow: bool, *, reason: str | None = None,
           prompt: str | None = None) -> Iterator[Message]:  # fmt: skip
    """:func:`approve` or :func:`deny` as one call, for code that holds the decision as a value
    (a page's button): checked and claimed at the call (:class:`NotParkedError`,
    :class:`AlreadyDecidedError` before anything runs), then the resumed run's messages as they
    come."""
    if allow:
        return _decide(waiting, options, "allow", prompt or "Approved: go on.", None)
    return _decide(waiting, options, "deny", prompt or "The reviewer denied that tool call; go on without it.",
                   reason or "Denied by a reviewer.")  # fmt: skip


def list_parked(options: ClaudeAgentOptions | None = None, limit: int = 50) -> list[Parked]:
    """The calls waiting for a decision in the sessions ``options`` would resume (its
    ``session_store``, else the CLI's transcripts for its ``cwd`` and ``env``), newest session
    first, from the ``limit`` newest sessions: each deferred by a ``PreToolUse`` hook, as the
    CLI recorded it (``hook_deferred_tool``), with no result in the session and no decision
    claimed. Each is the session's own call (name and input from its ``tool_use`` block)."""
    options = options or ClaudeAgentOptions()
    found: list[Parked] = []
    for row in _of_options.rows(options, limit):
        try:
            entries = _of_options.entries(row.session_id, options)
        except _of_options.TranscriptNotFound:
            continue
        for call_ in parked_in(row.session_id, entries):
            if decision_of(call_, options) is None:
                found.append(call_)
    return found


def parked_in(session_id: str, entries: list[dict[str, Any]]) -> list[Parked]:
    """The calls a hook deferred in these transcript entries that have no result yet."""
    deferred: dict[str, str | None] = {}
    calls: dict[str, dict[str, Any]] = {}
    answered: set[str] = set()
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        attachment = entry.get("attachment")
        if entry.get("type") == "attachment" and isinstance(attachment, dict) and attachment.get("type") == "hook_deferred_tool":
            if isinstance(attachment.get("toolUseID"), str):
                deferred[attachment["toolUseID"]] = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
            continue
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        for b in content if isinstance(content, list) else []:
            if not isinstance(b, dict):
                continue
            if entry.get("type") == "assistant" and b.get("type") == "tool_use" and isinstance(b.get("id"), str):
                calls[b["id"]] = b
            elif entry.get("type") == "user" and b.get("type") == "tool_result":
                answered.add(str(b.get("tool_use_id")))
    return [Parked(session_id, use_id, str(calls[use_id].get("name")), dict(calls[use_id].get("input") or {}), at)
            for use_id, at in deferred.items()
            if use_id in calls and use_id not in answered and _TOOL_USE_ID.fullmatch(use_id)]  # fmt: skip


def decision_of(waiting: Any, options: ClaudeAgentOptions | None = None) -> str | None:
    """``"allow"`` or ``"deny"`` when a decision on this parked call is claimed (and not
    released after a failed run), else ``None``. Says nothing of whether the resumed run has
    finished: the session's transcript does."""
    call_ = parked(waiting)
    if call_ is None or not is_session_id(call_.session_id) or _TOOL_USE_ID.fullmatch(call_.tool_use_id) is None:
        return None
    options = options or ClaudeAgentOptions()
    if options.session_store is not None:
        _, _, uuid, entries = _stored_claims(call_, options)
        first = next((e for e in entries if e.get("uuid") == uuid), None)
        return str(first.get("decision")) if first is not None else None
    try:
        return _claim_path(call_, options).read_text() or "decided"
    except FileNotFoundError:
        return None


def _decide(waiting: Any, options: ClaudeAgentOptions | None, decision: str, prompt: str, reason: str | None) -> Iterator[Message]:
    call_ = parked(waiting)
    if call_ is None:
        raise ValueError(f"nothing is parked in {type(waiting).__name__}")
    options = options or ClaudeAgentOptions()
    if _pending(call_, options) is None:  # the transcript shows a result: it was settled
        raise AlreadyDecidedError(f"the tool call {call_.tool_use_id} has its result in the session already")
    release = _claim(call_, decision, options)

    def shown(hook_input: dict[str, Any]) -> bool:
        """The call the CLI presents is the one the decider was shown: name and input."""
        return hook_input.get("tool_name") == call_.tool_name and _same(hook_input.get("tool_input"), call_.tool_input)

    def answer(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        if (tool_use_id or hook_input.get("tool_use_id")) != call_.tool_use_id:
            return {}  # another call: the options' own hooks and rules decide
        output: dict[str, Any] = {"hookEventName": "PreToolUse", "permissionDecision": decision}
        if not shown(hook_input):
            output = {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                      "permissionDecisionReason": "this call differs from the one the decision was made on"}  # fmt: skip
        elif reason:
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
    return _released_on_failure(query(prompt, resumed), call_, options, release)


def _released_on_failure(messages: Iterator[Message], call_: Parked, options: ClaudeAgentOptions,
                         release: Callable[[], None]) -> Iterator[Message]:  # fmt: skip
    """The run's messages; if it raises before the call has its result, and the transcript
    still shows the call waiting, the claim is released (the decision may be made again)."""
    settled = False
    try:
        for message in messages:
            if isinstance(message, UserMessage) and isinstance(message.content, list):
                settled = settled or any(isinstance(b, ToolResultBlock) and b.tool_use_id == call_.tool_use_id for b in message.content)
            yield message
    except Exception:
        if not settled:
            try:
                still_waiting = _pending(call_, options) is not None
            except NotParkedError:
                still_waiting = True  # the transcript is unreadable now: nothing ran from it
            if still_waiting:
                release()
        raise


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON (what the transcript and the record hold)."""
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _pending(call_: Parked, options: ClaudeAgentOptions) -> dict[str, Any] | None:
    """The session's ``tool_use`` block of ``call_`` while it has no result; ``None`` once it
    has one. :class:`NotParkedError` when the ids are malformed, the transcript is not found,
    no such call is in it, or the record's name or input differ from it."""
    if not isinstance(call_.session_id, str) or not is_session_id(call_.session_id):
        raise NotParkedError(f"not a session id: {call_.session_id!r}")
    if not isinstance(call_.tool_use_id, str) or _TOOL_USE_ID.fullmatch(call_.tool_use_id) is None:
        raise NotParkedError(f"not a tool use id: {call_.tool_use_id!r}")
    entries = _transcript(call_.session_id, options)
    block: dict[str, Any] | None = None
    answered = False
    for entry in entries:
        content = (entry.get("message") or {}).get("content") if isinstance(entry.get("message"), dict) else None
        for b in content if isinstance(content, list) else []:
            if not isinstance(b, dict):
                continue
            if entry.get("type") == "assistant" and b.get("type") == "tool_use" and b.get("id") == call_.tool_use_id:
                block = b
            elif entry.get("type") == "user" and b.get("type") == "tool_result" and b.get("tool_use_id") == call_.tool_use_id:
                answered = True
    if block is None:
        raise NotParkedError(f"session {call_.session_id} has no tool call {call_.tool_use_id}")
    if block.get("name") != call_.tool_name or not _same(block.get("input"), call_.tool_input):
        raise NotParkedError(
            f"the record of {call_.tool_use_id} does not match the session's call ({block.get('name')} "
            f"{json.dumps(block.get('input'), default=str)[:200]}): nothing was decided"
        )
    return None if answered else block


def _transcript(session_id: str, options: ClaudeAgentOptions) -> list[dict[str, Any]]:
    try:
        return _of_options.entries(session_id, options)
    except _of_options.TranscriptNotFound as e:
        raise NotParkedError(str(e)) from None


def _claim(call_: Parked, decision: str, options: ClaudeAgentOptions) -> Callable[[], None]:
    """Record the decision once, or raise :class:`AlreadyDecidedError` (see the module doc);
    returns what releases the claim."""
    token = secrets.token_hex(8)
    store = options.session_store
    if store is not None:
        key, mine, uuid, _ = _stored_claims(call_, options)
        entry = {"type": "claude_sdkurl_decision", "uuid": uuid, "decision": decision, "claim": token}
        call(store.append, key, [entry])
        first = next((e for e in call(store.load, key) or [] if isinstance(e, dict) and e.get("uuid") == uuid), None)
        if first is None or first.get("claim") != token:
            raise AlreadyDecidedError(f"the tool call {call_.tool_use_id} was {(first or {}).get('decision', 'decided')} already")

        def release_entry() -> None:
            call(store.append, key, [{"type": "claude_sdkurl_release", "uuid": f"release-{uuid}", "of": mine}])

        return release_entry
    path = _claim_path(call_, options)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        raise AlreadyDecidedError(f"the tool call {call_.tool_use_id} was decided already") from None
    with os.fdopen(fd, "w") as f:
        f.write(decision)

    def release_file() -> None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass

    return release_file


def _stored_claims(call_: Parked, options: ClaudeAgentOptions) -> tuple[dict[str, str], str, str, list[dict[str, Any]]]:
    """In ``options.session_store``: the key of the session's claims, this call's name there,
    the uuid its claim takes now (each released claim frees the next generation; a store keeps
    the first entry of a uuid), and the entries kept."""
    key = {"project_key": project_key_for_directory(options.cwd), "session_id": call_.session_id, "subpath": _DECISIONS}
    mine = f"decision-{call_.tool_use_id}"
    store = options.session_store
    assert store is not None
    entries = [e for e in call(store.load, key) or [] if isinstance(e, dict)]
    generation = sum(1 for e in entries if e.get("type") == "claude_sdkurl_release" and e.get("of") == mine)
    return key, mine, f"{mine}-{generation}", entries


def _claim_path(call_: Parked, options: ClaudeAgentOptions) -> Path:
    """The file that claims a decision on this machine: named by a hash of the ids, never by
    the ids themselves, under the CLI's config directory."""
    return cli_config_dir(dict(options.env or {})) / _DECISIONS / hashlib.sha256(f"{call_.session_id}/{call_.tool_use_id}".encode()).hexdigest()
