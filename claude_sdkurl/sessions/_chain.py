"""From transcript entries to the conversation a reader sees.

A transcript is a tree, not a list: every entry names its ``parentUuid``, an
edit or a retry starts a new branch, and subagent (sidechain) and team entries
hang off it. The conversation is one path through that tree. The rules (facts
of the CLI's, checked against the official functions on transcripts the real
CLIs wrote, ``tests/test_sessions_parity.py``):

1. Entries that count: objects of type ``user``, ``assistant``, ``progress``,
   ``system`` or ``attachment`` with a string ``uuid``.
2. The path ends at a *leaf*: from each entry nobody names as parent, walk up to
   the nearest ``user``/``assistant`` entry. Among those, prefer ones that are
   not sidechain, team or meta entries; among the preferred, the one written
   last in the file.
3. The path is the walk from the leaf up the ``parentUuid`` links to the root
   (a loop ends it), read root first. ``logicalParentUuid`` is not followed:
   after a compaction the summary entry stands for what came before.
4. Parallel tool calls: the CLI writes one assistant entry per content block,
   all with the response's ``message.id``, chained one after another, and each
   tool result names its own call's entry as parent. The walk of rule 3 keeps
   only the branch the conversation went on from, so :func:`_put_back_parallel`
   returns the response's other entries and their results (see there).
5. Shown: ``user`` and ``assistant`` entries that are not meta, sidechain or
   team entries (a compact summary is shown: it is all that is left of what it
   summarises).

A subagent's transcript is a line: its last user/assistant entry is the leaf,
and every user/assistant entry on the walk is shown.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from typing import Any, Literal

from ..types import SessionMessage

logger = logging.getLogger("claude_sdkurl.sessions")

Entry = dict[str, Any]
KINDS = frozenset({"user", "assistant", "progress", "system", "attachment"})
_SPOKEN = ("user", "assistant")


def counts(entry: Any) -> bool:
    """Rule 1 of the module doc."""
    return isinstance(entry, dict) and entry.get("type") in KINDS and isinstance(entry.get("uuid"), str)


def entries_of_text(text: str) -> list[Entry]:
    """The counting entries of a transcript file's text. A line that is not a JSON object
    is skipped with one logged warning for all of them, except a last line with no newline
    yet (the CLI may be writing it)."""
    found: list[Entry] = []
    bad = 0
    lines = text.split("\n")
    for number, line in enumerate(lines):
        line = line.strip()
        if not line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            bad += number < len(lines) - 1
            continue
        if not isinstance(entry, dict):
            bad += 1
        elif counts(entry):
            found.append(entry)
    if bad:
        logger.warning("skipped %d corrupt line(s) in a session transcript", bad)
    return found


def _up_from(start: Entry, by_uuid: dict[str, Entry]) -> list[Entry]:
    """``start`` and its ancestors, nearest first, stopping at a missing parent or a loop."""
    path: list[Entry] = []
    met: set[str] = set()
    here: Entry | None = start
    while here is not None and here["uuid"] not in met:
        met.add(here["uuid"])
        path.append(here)
        parent = here.get("parentUuid")
        here = by_uuid.get(parent) if parent else None
    return path


def _leaf(entries: list[Entry], by_uuid: dict[str, Entry]) -> Entry | None:
    """Rule 2 of the module doc."""
    named = {parent for e in entries if (parent := e.get("parentUuid"))}
    ends = [e for e in entries if e["uuid"] not in named]
    leaves = []
    for end in ends:
        spoken = next((e for e in _up_from(end, by_uuid) if e.get("type") in _SPOKEN), None)
        if spoken is not None:
            leaves.append(spoken)
    if not leaves:
        return None
    main = [e for e in leaves if not (e.get("isSidechain") or e.get("teamName") or e.get("isMeta"))]
    position = {e["uuid"]: i for i, e in enumerate(entries)}
    pool = main or leaves
    # The latest in the file; on a tie (one uuid reached twice) the first met.
    return max(pool, key=lambda e: position[e["uuid"]])


def conversation(entries: list[Entry]) -> list[Entry]:
    """Rules 2 to 4: the path through the tree, parallel tool calls made whole."""
    by_uuid = {e["uuid"]: e for e in entries}
    leaf = _leaf(entries, by_uuid)
    if leaf is None:
        return []
    path = _up_from(leaf, by_uuid)[::-1]
    return _put_back_parallel(path, by_uuid)


# ---------------------------------------------------------------- parallel tool calls


def _response_id(entry: Entry) -> str | None:
    """The API message id of an assistant entry (the response it is a block of)."""
    message = entry.get("message")
    if entry.get("type") != "assistant" or not isinstance(message, dict):
        return None
    mid = message.get("id")
    return mid if isinstance(mid, str) and mid else None


def _block_ids(entry: Entry, kind: str, field: str) -> list[str]:
    """``field`` of each content block of type ``kind`` (tool_use ids, answered ids)."""
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return []
    return [b[field] for b in content if isinstance(b, dict) and b.get("type") == kind and isinstance(b.get(field), str)]


def _calls(entry: Entry) -> list[str]:
    return _block_ids(entry, "tool_use", "id")


def _answers(entry: Entry) -> list[str]:
    return _block_ids(entry, "tool_result", "tool_use_id")


def _is_result(entry: Entry) -> bool:
    """A user entry with a parent that carries at least one tool result."""
    parent = entry.get("parentUuid")
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return (
        entry.get("type") == "user"
        and isinstance(parent, str)
        and bool(parent)
        and isinstance(content, list)
        and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def _same_author(a: Entry, b: Entry) -> bool:
    """Written by the same agent: same sidechain flag, same ``agentId``."""
    return bool(a.get("isSidechain")) == bool(b.get("isSidechain")) and a.get("agentId") == b.get("agentId")


def _stamp(entry: Entry) -> str:
    stamp = entry.get("timestamp")
    return stamp if isinstance(stamp, str) else ""


def _put_back_parallel(path: list[Entry], by_uuid: dict[str, Entry]) -> list[Entry]:
    """Rule 4: for each response on ``path``, insert after its last entry on the path the
    entries of it the walk missed and the missed results of its calls.

    Which results belong to a response: those whose parent is one of its entries, and,
    written by the same agent, those whose ``sourceToolAssistantUUID`` or answered call
    points into it. A result of the second kind whose parent is elsewhere (a "stray") is
    taken only if it answers a call of this response not yet answered on the path or by
    a result already taken; strays are considered in file order. A call id made by two
    different responses is ambiguous and places nothing. Missed entries, then missed
    results, each in timestamp order (file order on a tie).
    """
    on_path = {e["uuid"] for e in path}
    last_on_path: dict[str, Entry] = {}
    for e in path:
        rid = _response_id(e)
        if rid:
            last_on_path[rid] = e
    if not last_on_path:
        return path

    # Every response's entries, who made each call, and every result, in file order.
    blocks: dict[str, list[Entry]] = defaultdict(list)
    caller: dict[str, Entry | None] = {}
    results: list[Entry] = []
    for e in by_uuid.values():
        rid = _response_id(e)
        if rid is None:
            if _is_result(e):
                results.append(e)
            continue
        blocks[rid].append(e)
        for call in _calls(e):
            if call not in caller:
                caller[call] = e
            else:
                known = caller[call]
                caller[call] = e if known is not None and _response_id(known) == rid else None

    # Results filed under each assistant entry they may belong to.
    filed: dict[str, list[Entry]] = defaultdict(list)
    for r in results:
        filed[r["parentUuid"]].append(r)
        source = r.get("sourceToolAssistantUUID")
        if isinstance(source, str) and source in by_uuid and _same_author(r, by_uuid[source]):
            filed[source].append(r)
        for call in _answers(r):
            maker = caller.get(call)
            if maker is not None and _same_author(r, maker):
                filed[maker["uuid"]].append(r)

    order = {uid: i for i, uid in enumerate(by_uuid)}
    answered_on_path = {call for e in path for call in _answers(e)}
    after: dict[str, list[Entry]] = {}
    for rid, first, anchor in _responses_in_path_order(path, last_on_path):
        members = blocks.get(rid) or [first]
        member_ids = {m["uuid"] for m in members}
        missed = [m for m in members if m["uuid"] not in on_path]
        own: list[Entry] = []
        strays: list[Entry] = []
        taken: set[str] = set()
        for m in members:
            for r in filed.get(m["uuid"], ()):
                if r["uuid"] in on_path or r["uuid"] in taken:
                    continue
                taken.add(r["uuid"])
                (own if r["parentUuid"] in member_ids else strays).append(r)
        if strays:
            answered = answered_on_path | {call for r in own for call in _answers(r)}
            for r in sorted(strays, key=lambda s: order[s["uuid"]]):
                calls = _answers(r)
                if any(c not in answered and (caller.get(c) or {}).get("uuid") in member_ids for c in calls):
                    answered.update(calls)
                    own.append(r)
        if missed or own:
            back = sorted(missed, key=_stamp) + sorted(own, key=_stamp)
            on_path.update(e["uuid"] for e in back)
            after[anchor["uuid"]] = back
    if not after:
        return path
    whole: list[Entry] = []
    for e in path:
        whole.append(e)
        whole.extend(after.get(e["uuid"], ()))
    return whole


def _responses_in_path_order(path: list[Entry], last_on_path: dict[str, Entry]) -> list[tuple[str, Entry, Entry]]:
    """Each response id on ``path`` once, in the order its first entry appears there, with
    its first and its last entry on the path."""
    firsts: dict[str, Entry] = {}
    for e in path:
        rid = _response_id(e)
        if rid and rid not in firsts:
            firsts[rid] = e
    return [(rid, first, last_on_path[rid]) for rid, first in firsts.items()]


# ---------------------------------------------------------------- messages


def _message(entry: Entry, tool_use_id: str | None = None, agent_id: str | None = None) -> SessionMessage:
    kind: Literal["user", "assistant", "system"] = entry.get("type") if entry.get("type") in ("user", "system") else "assistant"  # type: ignore[assignment]
    message = entry.get("message")
    if kind == "system" and message is None:  # a system entry carries its text in the entry itself
        message = {k: entry[k] for k in ("subtype", "content", "level", "compactMetadata") if k in entry}
    return SessionMessage(
        type=kind,
        uuid=entry.get("uuid", ""),
        session_id=entry.get("sessionId", ""),
        message=message,
        parent_tool_use_id=tool_use_id,
        parent_agent_id=agent_id,
    )


def page(items: list[Any], limit: int | None, offset: int) -> list[Any]:
    """``offset``/``limit`` as the session readers apply them (a limit of 0 or less is no limit)."""
    if limit is not None and limit > 0:
        return items[offset : offset + limit]
    return items[offset:] if offset > 0 else items


def session_messages(
    entries: list[Entry], limit: int | None, offset: int, include_system: bool = False
) -> list[SessionMessage]:
    """Rule 5 over :func:`conversation`, paged (with ``include_system``, system entries too)."""
    kinds = (*_SPOKEN, "system") if include_system else _SPOKEN
    shown = [
        _message(e)
        for e in conversation(entries)
        if e.get("type") in kinds and not (e.get("isMeta") or e.get("isSidechain") or e.get("teamName"))
    ]
    return page(shown, limit, offset)


def subagent_messages(
    entries: list[Entry], limit: int | None, offset: int, tool_use_id: str | None, agent_id: str | None
) -> list[SessionMessage]:
    """A subagent's conversation (see the module doc), each message naming the Agent call
    and the agent that started it."""
    leaf = next((e for e in reversed(entries) if e.get("type") in _SPOKEN), None)
    if leaf is None:
        return []
    by_uuid = {e["uuid"]: e for e in entries}
    walk = _up_from(leaf, by_uuid)[::-1]
    return page([_message(e, tool_use_id, agent_id) for e in walk if e.get("type") in _SPOKEN], limit, offset)
