"""What a transcript says about itself, read from its first and last 64 KiB.

Listing must not parse whole transcripts, so the CLI and both SDKs read a
file's head and tail and pick fields out of the raw text, where a line may be
cut anywhere. The rules (facts we repeat, checked against the official
functions by ``tests/test_sessions_parity.py`` and ``tests/test_sessions_units.py``):

* A field is found as ``"name":"`` or ``"name": "`` followed by a JSON string
  that ends inside the text. The compact spelling is tried first; the first
  spelling with a complete value decides. "Last" means the last complete value
  of that spelling.
* Title: the last ``customTitle`` (tail, then head), else the last ``aiTitle``.
  Summary: the title, else the tail's last ``lastPrompt``, else its last
  ``summary``, else the first prompt. A file with none of them is not listed;
  nor is one whose first line is a sidechain's.
* First prompt: the first user line (no tool result, not meta, not a compact
  summary) with a text that is not a slash command and not one of the CLI's
  generated texts; newlines flattened, cut to 200 characters and an ellipsis.
  A slash command's name is the fallback.
* Tag: only from the last tail line that starts ``{"type":"tag"`` (a bare
  ``"tag"`` scan would find tool inputs such as ``git tag``).

Store-backed sessions are put into the same shape (entries serialised as the
CLI writes them, ``type`` first) so that both paths answer alike.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ..types import SDKSessionInfo

WINDOW = 64 * 1024  # bytes read at each end of a transcript

# Texts the CLI writes as user turns that are no prompt of the user's.
_GENERATED = re.compile(
    r"^(?:<local-command-stdout>|<session-start-hook>|<tick>|<goal>|"
    r"\[Request interrupted by user[^\]]*\]|"
    r"\s*<ide_opened_file>[\s\S]*</ide_opened_file>\s*$|"
    r"\s*<ide_selection>[\s\S]*</ide_selection>\s*$)"
)
_SLASH_COMMAND = re.compile(r"<command-name>(.*?)</command-name>")
PROMPT_LIMIT = 200


# ---------------------------------------------------------------- fields in raw text


def _closing_quote(text: str, start: int) -> int:
    """Index of the quote that ends the JSON string whose body starts at ``start``; -1 when
    the text ends first."""
    i, n = start, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            return i
        i += 2 if c == "\\" else 1
    return -1


def _decoded(body: str) -> str:
    """A JSON string body as text; left as it is when it does not decode."""
    if "\\" not in body:
        return body
    try:
        value = json.loads('"' + body + '"')
    except ValueError:
        return body
    return value if isinstance(value, str) else body


def _values(text: str, opener: str) -> Iterator[str]:
    """Each complete string value after ``opener`` in ``text``, in order."""
    at = text.find(opener)
    while at >= 0:
        start = at + len(opener)
        end = _closing_quote(text, start)
        if end < 0:
            return
        yield _decoded(text[start:end])
        at = text.find(opener, end + 1)


def _openers(name: str) -> tuple[str, str]:
    return f'"{name}":"', f'"{name}": "'


def first_field(text: str, name: str) -> str | None:
    """The first value of ``name`` (see the module doc)."""
    for opener in _openers(name):
        for value in _values(text, opener):
            return value
    return None


def last_field(text: str, name: str) -> str | None:
    """The last value of ``name`` (see the module doc)."""
    found = None
    for opener in _openers(name):
        for value in _values(text, opener):
            found = value
    return found


# ---------------------------------------------------------------- the first prompt


def _texts(entry: dict[str, Any]) -> list[str]:
    """The texts of an entry's message: its string content, or its ``text`` blocks."""
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]


def prompt_and_command(entry: dict[str, Any]) -> tuple[str | None, str | None]:
    """The user's prompt in a user entry (flattened and cut), and the name of a slash command
    met before it. Used by the head scan here and by the store summary fold."""
    command = None
    for raw in _texts(entry):
        flat = raw.replace("\n", " ").strip()
        if not flat:
            continue
        named = _SLASH_COMMAND.search(flat)
        if named:
            command = command or named.group(1)
        elif not _GENERATED.match(flat):
            if len(flat) > PROMPT_LIMIT:
                flat = flat[:PROMPT_LIMIT].rstrip() + "\u2026"
            return flat, command
    return None, command


def _could_be_prompt(line: str) -> bool:
    """The cheap text checks a head line passes before it is parsed."""
    if '"type":"user"' not in line and '"type": "user"' not in line:
        return False
    if '"tool_result"' in line:
        return False
    flags = ('"isMeta":true', '"isMeta": true', '"isCompactSummary":true', '"isCompactSummary": true')
    return not any(flag in line for flag in flags)


def _user_entries(text: str) -> Iterator[dict[str, Any]]:
    """The user entries of transcript lines that may hold a prompt (cheap checks first)."""
    for line in text.split("\n"):
        if not _could_be_prompt(line):
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("type") == "user" and isinstance(entry.get("message"), dict):
            yield entry


def first_prompt(head: str) -> str:
    """The first prompt in a transcript's head, else the first slash command, else ``""``."""
    fallback = ""
    for entry in _user_entries(head):
        prompt, command = prompt_and_command(entry)
        if prompt:
            return prompt
        fallback = fallback or command or ""
    return fallback


# ---------------------------------------------------------------- head and tail


@dataclass
class Ends:
    """A transcript's first and last :data:`WINDOW` bytes (as text), size and mtime (ms)."""

    head: str
    tail: str
    size: int
    mtime: int

    @classmethod
    def of_bytes(cls, data: bytes, mtime: int) -> Ends:
        head = data[:WINDOW].decode("utf-8", errors="replace")
        tail = data[-WINDOW:].decode("utf-8", errors="replace") if len(data) > WINDOW else head
        return cls(head, tail, len(data), mtime)

    @classmethod
    def of_file(cls, path: Path) -> Ends | None:
        """``None`` when the file cannot be read or is empty."""
        try:
            with path.open("rb") as f:
                st = os.fstat(f.fileno())
                head = f.read(WINDOW)
                tail = b""
                if st.st_size > WINDOW:
                    f.seek(st.st_size - WINDOW)
                    tail = f.read(WINDOW)
        except OSError:
            return None
        if not head:
            return None
        text = head.decode("utf-8", errors="replace")
        return cls(text, tail.decode("utf-8", errors="replace") if tail else text, st.st_size, int(st.st_mtime * 1000))


def as_jsonl(entries: list[Any]) -> str:
    """Stored entries as the CLI would have written them: compact JSON, ``type`` first
    (a store may give keys back in another order; the tag rule looks at the line start)."""
    lines = []
    for e in entries:
        if isinstance(e, dict) and "type" in e:
            e = {"type": e["type"], **e}
        lines.append(json.dumps(e, separators=(",", ":")))
    return "\n".join(lines) + "\n"


def ends_of_entries(entries: list[Any], mtime: int | None = None) -> Ends:
    """The head and tail stored entries would have in a file (:func:`as_jsonl`); ``mtime``
    defaults to the last entry's timestamp (else now)."""
    jsonl = as_jsonl(entries)
    return Ends.of_bytes(jsonl.encode("utf-8"), mtime_of_jsonl(jsonl) if mtime is None else mtime)


def epoch_ms(stamp: Any) -> int | None:
    """An ISO-8601 timestamp (a trailing ``Z`` allowed) in epoch milliseconds."""
    if not isinstance(stamp, str):
        return None
    try:
        return int(datetime.fromisoformat(stamp[:-1] + "+00:00" if stamp.endswith("Z") else stamp).timestamp() * 1000)
    except ValueError:
        return None


def mtime_of_jsonl(jsonl: str) -> int:
    """A stored session's modification time: its last entry's timestamp, else now."""
    last = jsonl.rstrip().rpartition("\n")[2]
    try:
        entry = json.loads(last)
    except ValueError:
        entry = None
    stamp = epoch_ms(entry.get("timestamp")) if isinstance(entry, dict) else None
    return stamp if stamp is not None else int(time.time() * 1000)


def title_of(ends: Ends) -> str | None:
    """The title rule of the module doc: the last ``customTitle`` (tail, then head), else the
    last ``aiTitle``; ``None`` without one. Used by the listing and by a fork of a file."""
    for name in ("customTitle", "aiTitle"):
        title = last_field(ends.tail, name) or last_field(ends.head, name)
        if title:
            return title
    return None


def info_from_ends(session_id: str, ends: Ends, project_path: str | None = None) -> SDKSessionInfo | None:
    """The listing row of one transcript (see the module doc), ``None`` when it is not listed."""
    head, tail = ends.head, ends.tail
    opening = head.partition("\n")[0]
    if '"isSidechain":true' in opening or '"isSidechain": true' in opening:
        return None
    title = title_of(ends)
    prompt = first_prompt(head) or None
    summary = title or last_field(tail, "lastPrompt") or last_field(tail, "summary") or prompt
    if not summary:
        return None
    tag_lines = [line for line in tail.split("\n") if line.startswith('{"type":"tag"')]
    return SDKSessionInfo(
        session_id=session_id,
        summary=summary,
        last_modified=ends.mtime,
        file_size=ends.size,
        custom_title=title or None,
        first_prompt=prompt,
        git_branch=last_field(tail, "gitBranch") or first_field(head, "gitBranch") or None,
        cwd=first_field(head, "cwd") or project_path or None,
        tag=(last_field(tag_lines[-1], "tag") or None) if tag_lines else None,
        created_at=epoch_ms(first_field(head, "timestamp")),
    )


# ---------------------------------------------------------------- programmatic sessions and archives

PROGRAMMATIC_ENTRYPOINTS = frozenset({"sdk-cli", "sdk-ts", "sdk-py"})


def is_programmatic(ends: Ends) -> bool:
    """Whether a session was started by an SDK (its ``entrypoint``) or is a daemon's (the
    ``sessionKind`` of its first conversation entry), as TypeScript's
    ``list_sessions(include_programmatic=False)`` leaves such sessions out."""
    entrypoint = first_field(ends.head, "entrypoint") or last_field(ends.tail, "entrypoint")
    if entrypoint in PROGRAMMATIC_ENTRYPOINTS:
        return True
    first = next((line for line in ends.head.split("\n") if '"parentUuid":' in line), ends.head)
    return first_field(first, "sessionKind") in ("daemon", "daemon-worker")


def prompted_after(text: str, at_ms: float) -> bool:
    """Whether ``text`` (transcript lines) holds a user's prompt stamped after ``at_ms``."""
    for entry in _user_entries(text):
        stamp = epoch_ms(entry.get("timestamp"))
        if stamp is not None and stamp > at_ms and prompt_and_command(entry)[0]:
            return True
    return False
