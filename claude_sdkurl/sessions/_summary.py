"""A session's listing row kept up to date as entries are appended to a store.

A store that calls :func:`fold_session_summary` inside ``append()`` and keeps the
result (one small record per session) lets ``list_sessions_from_store`` list a
project with one ``list_session_summaries()`` call instead of loading every
session. The fold looks at each new entry once and never needs old ones: each
field is set once (sidechain flag, creation time, cwd, first prompt) or taken from
the latest entry that has it (titles, last prompt, summary, branch, tag).

The record's ``data`` keys are a format shared with the official SDK (a store
written by one SDK is listed by the other): ``is_sidechain``, ``created_at``,
``cwd``, ``first_prompt`` with ``first_prompt_locked``, ``command_fallback``,
``custom_title``, ``ai_title``, ``last_prompt``, ``summary_hint``,
``git_branch``, ``tag``. The rules are those of the head/tail scan
(:mod:`._text`), applied to whole entries.
"""

from __future__ import annotations

from typing import Any, cast

from ..types import SDKSessionInfo, SessionKey, SessionStoreEntry, SessionSummaryEntry
from ._text import epoch_ms, prompt_and_command

__all__ = ["fold_session_summary", "summary_to_info"]

# entry field -> data key, for the fields the latest entry decides
_LATEST = {
    "customTitle": "custom_title",
    "aiTitle": "ai_title",
    "lastPrompt": "last_prompt",
    "summary": "summary_hint",
    "gitBranch": "git_branch",
}


def _carries_tool_result(entry: dict[str, Any]) -> bool:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def _note_prompt(data: dict[str, Any], entry: dict[str, Any]) -> None:
    """The first-prompt rule for one entry: a real prompt locks ``first_prompt``; a slash
    command before it is kept as ``command_fallback``."""
    if data.get("first_prompt_locked") or entry.get("type") != "user":
        return
    if entry.get("isMeta") is True or entry.get("isCompactSummary") is True or _carries_tool_result(entry):
        return
    prompt, command = prompt_and_command(entry)
    if command and not data.get("command_fallback"):
        data["command_fallback"] = command
    if prompt:
        data.update(first_prompt=prompt, first_prompt_locked=True)


def fold_session_summary(
    prev: SessionSummaryEntry | None,
    key: SessionKey,
    entries: list[SessionStoreEntry],
) -> SessionSummaryEntry:
    """``prev`` (``None`` before the first append) with ``entries`` folded in.

    Call it for a session's main transcript only (a key without ``subpath``):
    subagents do not change their session's row. The result's ``mtime`` is
    ``prev``'s (0 for a new session): the store stamps its own write time after
    saving, on the same clock as its ``list_sessions()`` answers, which is what
    tells a fresh record from a stale one. ``data`` is to be kept as it is.
    """
    data: dict[str, Any] = dict(prev["data"]) if prev is not None else {}
    for raw in entries:
        entry = cast("dict[str, Any]", raw)
        data.setdefault("is_sidechain", entry.get("isSidechain") is True)
        stamp = epoch_ms(entry.get("timestamp"))
        if stamp is not None:
            data.setdefault("created_at", stamp)
        cwd = entry.get("cwd")
        if isinstance(cwd, str) and cwd:
            data.setdefault("cwd", cwd)
        _note_prompt(data, entry)
        for field, name in _LATEST.items():
            if isinstance(entry.get(field), str):
                data[name] = entry[field]
        if entry.get("type") == "tag":
            tag = entry.get("tag")
            if isinstance(tag, str) and tag:
                data["tag"] = tag
            else:
                data.pop("tag", None)
    if prev is not None:
        return {"session_id": prev["session_id"], "mtime": prev["mtime"], "data": data}
    return {"session_id": key["session_id"], "mtime": 0, "data": data}


def summary_to_info(record: SessionSummaryEntry, project_path: str | None) -> SDKSessionInfo | None:
    """The listing row of a folded record; ``None`` where the head/tail scan lists nothing
    (a sidechain, no title, prompt or summary). Stores have no file size."""
    data = record["data"]
    if data.get("is_sidechain"):
        return None
    prompt = (data.get("first_prompt") if data.get("first_prompt_locked") else data.get("command_fallback")) or None
    title = data.get("custom_title") or data.get("ai_title") or None
    summary = title or data.get("last_prompt") or data.get("summary_hint") or prompt
    if not summary:
        return None
    return SDKSessionInfo(
        session_id=record["session_id"],
        summary=summary,
        last_modified=record["mtime"],
        file_size=None,
        custom_title=title,
        first_prompt=prompt,
        git_branch=data.get("git_branch") or None,
        cwd=data.get("cwd") or project_path or None,
        tag=data.get("tag") or None,
        created_at=data.get("created_at"),
    )
