"""The tape file: a JSON-lines file, a header and then one entry per frame.

Ours::

    {"tape": "claude_sdkurl.wire/1", "sdk": ..., "cli": ..., "model": ..., "recorded_at": ...}
    {"dir": "write", "frame": {...}}         the program wrote this to the CLI
    {"dir": "read", "frame": {...}}          the CLI wrote this to the program
    {"dir": "write", "end_input": true}      the program closed the CLI's input
    {"dir": "end", "exit_code": 0, "stderr": "...", "error": null}   how the CLI ended

Read also: ``claude-agent-cassette`` tapes (no header; reads as ``{"dir": "read", "frame"}``,
writes as ``{"dir": "write", "data": "<the JSON line>"}``) and a bare file of frames (no
``dir``: every line is a frame the CLI wrote).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
from pathlib import Path
from typing import Any

from .._files import replace_whole

FORMAT = "claude_sdkurl.wire/1"
"""The format a wire tape's header names (``{"tape": FORMAT, ...}``)."""


class TapeError(ValueError):
    """A tape cannot be read (not JSON lines, an entry of no known kind) or written."""


@dataclasses.dataclass
class Entry:
    """One line of a tape after its header: a frame read or written, the end of the program's
    input, or how the CLI ended (see the module doc)."""

    dir: str
    """``"read"`` (from the CLI), ``"write"`` (to it) or ``"end"``."""
    frame: dict[str, Any] | None = None
    """The frame, for ``read`` and ``write``."""
    end_input: bool = False
    """The program closed the CLI's input here."""
    exit_code: int | None = None
    """For ``end``: how the CLI exited."""
    stderr: str = ""
    """For ``end``: the tail of its standard error."""
    error: dict[str, str] | None = None
    """For ``end``: ``{"type", "message"}`` of the error the session ended with."""

    def to_json(self) -> dict[str, Any]:
        if self.dir == "end":
            return {"dir": "end", "exit_code": self.exit_code, "stderr": self.stderr, "error": self.error}
        if self.end_input:
            return {"dir": "write", "end_input": True}
        return {"dir": self.dir, "frame": self.frame}


@dataclasses.dataclass
class Tape:
    """One session's frames, both ways, with where they came from."""

    header: dict[str, Any]
    """Where the tape came from: SDK, CLI and model versions, the CLI's flags, the SDK's switches."""
    entries: list[Entry]
    """Every line after the header, in order."""
    path: Path | None = None
    """The file it was read from."""

    @property
    def kind(self) -> str:
        """``"claude_sdkurl"``, ``"cassette"`` or ``"frames"``: the format it was read from."""
        return str(self.header.get("_read_as", "claude_sdkurl"))

    def reads(self) -> list[dict[str, Any]]:
        return [e.frame for e in self.entries if e.dir == "read" and e.frame is not None]

    def first_prompt(self) -> str | None:
        for entry in self.entries:
            frame = entry.frame or {}
            if entry.dir == "write" and frame.get("type") == "user":
                content = (frame.get("message") or {}).get("content")
                if isinstance(content, str):
                    return content
                if isinstance(content, list):
                    return "".join(b.get("text", "") for b in content if isinstance(b, dict))
        return None


def load(path: str | os.PathLike[str]) -> Tape:
    """Read a tape of ours, a ``claude-agent-cassette`` tape, or a bare frames file."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise TapeError(f"cannot read the tape {path}: {e}") from e
    header: dict[str, Any] = {}
    entries: list[Entry] = []
    kind = None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as e:
            if number == len(lines):  # a torn last line: the recording was cut short
                break
            raise TapeError(f"{path}:{number}: not a JSON line") from e
        if not isinstance(item, dict):
            raise TapeError(f"{path}:{number}: not a JSON object")
        if number == 1 and "tape" in item:
            if item["tape"] != FORMAT:
                raise TapeError(f"{path}: a tape of format {item['tape']!r}; this reads {FORMAT!r}")
            header, kind = item, "claude_sdkurl"
            continue
        direction = item.get("dir")
        if direction is None:
            kind = kind or "frames"
            entries.append(Entry("read", frame=item))
        elif direction == "read" and isinstance(item.get("frame"), dict):
            entries.append(Entry("read", frame=item["frame"]))
        elif direction == "write" and item.get("end_input"):
            entries.append(Entry("write", end_input=True))
        elif direction == "write" and isinstance(item.get("frame"), dict):
            entries.append(Entry("write", frame=item["frame"]))
        elif direction == "write" and isinstance(item.get("data"), str):  # claude-agent-cassette
            kind = kind or "cassette"
            try:
                frame = json.loads(item["data"])
            except ValueError as e:
                raise TapeError(f"{path}:{number}: a write whose data is not JSON") from e
            entries.append(Entry("write", frame=frame))
        elif direction == "end":
            entries.append(Entry("end", exit_code=item.get("exit_code"), stderr=item.get("stderr") or "",
                                 error=item.get("error")))  # fmt: skip
        else:
            raise TapeError(f"{path}:{number}: an entry of no known kind: {line[:120]}")
    header.setdefault("_read_as", kind or "claude_sdkurl")
    return Tape(header, entries, path)


def save(tape: Tape, path: str | os.PathLike[str]) -> Path:
    """Write ``tape`` to ``path`` whole or not at all (a temporary file beside it, renamed),
    private (0600)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {k: v for k, v in tape.header.items() if not k.startswith("_")}
    header = {"tape": FORMAT, **header}
    lines = [json.dumps(header), *(json.dumps(entry.to_json()) for entry in tape.entries)]
    replace_whole(path, "\n".join(lines) + "\n")
    tape.path = path
    return path


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
