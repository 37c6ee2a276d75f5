"""Changes to a session, as entries: a title, a tag, a fork. No I/O here; the disk and
store functions write what these return.

Facts of the CLI's that a change must respect (readers take the *last* title and
tag in a transcript's tail, so a change is an appended entry, never an edit):

* ``{"type":"custom-title","customTitle":...,"sessionId":...}``: the title
  stripped, never empty.
* ``{"type":"tag","tag":...,"sessionId":...}``: the tag with invisible and
  private-use characters removed (NFKC, then every character of Unicode category
  Cf, Co or Cn and the bidi/zero-width ranges, repeated until nothing changes, at
  most ten rounds), stripped, never empty; ``""`` clears the tag.
* A fork copies the main-chain entries (no sidechains) up to a message, each
  with a new uuid and the new session id, parents re-linked past the
  ``progress`` entries it leaves out, ``forkedFrom`` pointing at the original,
  the last entry stamped now; then the source's content replacements, then a
  title (the one asked for, else the source's title or first prompt with
  `` (fork)``).
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from .._engine.paths import is_session_id

# Zero-width and bidi marks, isolates, the BOM, and the private-use area: removed from tags
# even where the category test would let them through.
_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff\ue000-\uf8ff]")
_DROPPED_CATEGORIES = frozenset({"Cf", "Co", "Cn"})
_FORK_LEAVES_OUT = ("teamName", "agentName", "slug", "sourceToolAssistantUUID")


def now_iso() -> str:
    """Now, in UTC, as the CLI stamps entries (ISO 8601 with a ``Z``)."""
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def check_session_id(session_id: str, what: str = "session_id") -> None:
    if not is_session_id(session_id):
        raise ValueError(f"Invalid {what}: {session_id}")


def title_entry(session_id: str, title: str) -> dict[str, Any]:
    """The entry that renames ``session_id``."""
    check_session_id(session_id)
    title = title.strip()
    if not title:
        raise ValueError("title must be non-empty")
    return {"type": "custom-title", "customTitle": title, "sessionId": session_id}


def drop_invisible(text: str) -> str:
    """``text`` without the characters a tag may not hold (see the module doc)."""
    for _ in range(10):
        before = text
        text = unicodedata.normalize("NFKC", text)
        text = _INVISIBLE.sub("", "".join(c for c in text if unicodedata.category(c) not in _DROPPED_CATEGORIES))
        if text == before:
            break
    return text


def tag_entry(session_id: str, tag: str | None) -> dict[str, Any]:
    """The entry that tags ``session_id`` (``None`` clears its tag)."""
    check_session_id(session_id)
    value = ""
    if tag is not None:
        value = drop_invisible(tag).strip()
        if not value:
            raise ValueError("tag must be non-empty (use None to clear)")
    return {"type": "tag", "tag": value, "sessionId": session_id}


_FORKED_KINDS = frozenset({"user", "assistant", "attachment", "system", "progress"})


def fork_parts(entries: list[Any], session_id: str) -> tuple[list[dict[str, Any]], list[Any]]:
    """What a fork takes from a session's entries: its transcript entries (with a string
    uuid), and the replacements of its own ``content-replacement`` entries."""
    transcript: list[dict[str, Any]] = []
    replacements: list[Any] = []
    for e in entries:
        if not isinstance(e, dict):
            continue
        if e.get("type") in _FORKED_KINDS and isinstance(e.get("uuid"), str):
            transcript.append(e)
        elif e.get("type") == "content-replacement" and e.get("sessionId") == session_id:
            if isinstance(e.get("replacements"), list):
                replacements.extend(e["replacements"])
    return transcript, replacements


def fork_entries(
    transcript: list[dict[str, Any]],
    replacements: list[Any],
    session_id: str,
    up_to: str | None,
    title: str | None,
    source_title: Callable[[], str | None],
) -> tuple[str, list[dict[str, Any]]]:
    """The new session id and its entries (see the module doc). ``source_title`` is asked
    only when no ``title`` is given."""
    empty = ValueError(f"Session {session_id} has no messages to fork")
    kept = [e for e in transcript if not e.get("isSidechain")]
    if not kept:
        raise empty
    if up_to:
        ends = [i for i, e in enumerate(kept) if e.get("uuid") == up_to]
        if not ends:
            raise ValueError(f"Message {up_to} not found in session {session_id}")
        kept = kept[: ends[0] + 1]
    new_uuid = {e["uuid"]: str(uuid.uuid4()) for e in kept}
    by_uuid = {e["uuid"]: e for e in kept}
    written = [e for e in kept if e.get("type") != "progress"]
    if not written:
        raise empty

    def new_parent(entry: dict[str, Any]) -> str | None:
        parent = entry.get("parentUuid")
        while parent and parent in by_uuid:
            if by_uuid[parent].get("type") != "progress":
                return new_uuid.get(parent)
            parent = by_uuid[parent].get("parentUuid")
        return None

    fork_id = str(uuid.uuid4())
    stamp = now_iso()
    out: list[dict[str, Any]] = []
    for i, old in enumerate(written):
        logical = old.get("logicalParentUuid")
        copy = {
            **old,
            "uuid": new_uuid[old["uuid"]],
            "parentUuid": new_parent(old),
            "logicalParentUuid": new_uuid.get(logical) if logical else logical,
            "sessionId": fork_id,
            "timestamp": stamp if i == len(written) - 1 else old.get("timestamp", stamp),
            "isSidechain": False,
            "forkedFrom": {"sessionId": session_id, "messageUuid": old["uuid"]},
        }
        for field in _FORK_LEAVES_OUT:
            copy.pop(field, None)
        out.append(copy)
    if replacements:
        out.append(
            {
                "type": "content-replacement",
                "sessionId": fork_id,
                "replacements": replacements,
                "uuid": str(uuid.uuid4()),
                "timestamp": stamp,
            }
        )
    name = title.strip() if title else ""
    if not name:
        name = f"{source_title() or 'Forked session'} (fork)"
    out.append({"type": "custom-title", "sessionId": fork_id, "customTitle": name, "uuid": str(uuid.uuid4()), "timestamp": stamp})
    return fork_id, out
