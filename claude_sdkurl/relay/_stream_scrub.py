"""Scrubbing across a session's stream, not line by line: a secret the model streams in pieces
(an ``sk-ant-`` key, a bearer token, the value of a secret-named variable, four characters a
delta) is never whole in any one line, so the relay's per-line scrub would let every piece
through and a frontend would rebuild it.

For each content block being streamed (a ``content_block_delta`` of text, thinking or tool
input JSON), :class:`StreamScrub` keeps back the end of the text that could still grow into a
secret, sends on the rest scrubbed (the delta line rewritten), and sends what it kept, scrubbed,
as a delta line of its own before the block's end (or the session's). A line with nothing to
keep back and nothing to scrub goes on as it came. What is kept back is bounded
(:data:`MAX_HELD` characters): past it, it goes on scrubbed, as a whole token would.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

MAX_HELD = 4096  # characters kept back for one block at the most

_DELTA_FIELDS = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "partial_json"}
# An end of text that may still become a secret of the tapes' patterns: an sk-ant- key under
# way (or its first characters), a bearer token under way (or the word's first letters).
_OPEN_ENDS = [
    re.compile(r"(?:sk-ant-[A-Za-z0-9_\-]*|s(?:k(?:-(?:a(?:n(?:t)?)?)?)?)?)\Z"),
    re.compile(r"(?i)\bb(?:e(?:a(?:r(?:e(?:r(?:\s+[A-Za-z0-9._~+/=\-]*)?)?)?)?)?)?\Z"),
]


def _open_from(text: str, literals: Iterable[str]) -> int:
    """Where the end of ``text`` that could still become a secret starts (``len(text)``: none)."""
    start = len(text)
    for literal in literals:
        for k in range(min(len(literal) - 1, len(text)), 0, -1):
            if text.endswith(literal[:k]):
                start = min(start, len(text) - k)
                break
    for pattern in _OPEN_ENDS:
        found = pattern.search(text)
        if found is not None and found.start() < start:
            start = found.start()
    return start


class StreamScrub:
    """One session's stream scrub. ``scrub`` scrubs a whole text (the relay's per-line rule);
    ``literals`` are the session's secret values."""

    def __init__(self, scrub: Callable[[str], str], literals: Iterable[str]) -> None:
        self._scrub = scrub
        self._literals = [literal for literal in literals if literal]
        # per streamed block: (the text kept back, the delta's type, the line it came in, parsed)
        self._held: dict[tuple[Any, Any], tuple[str, str, dict[str, Any]]] = {}

    def lines(self, raw: str) -> list[str]:
        """What goes on for the CLI's line ``raw``: itself, rewritten, or preceded by what a
        block kept back (at its end)."""
        if '"stream_event"' not in raw[:64]:
            return [raw]
        try:
            frame = json.loads(raw)
        except ValueError:
            return [raw]
        event = frame.get("event") if isinstance(frame, dict) else None
        if not isinstance(event, dict):
            return [raw]
        key = (frame.get("parent_tool_use_id"), event.get("index"))
        kind = event.get("type")
        if kind == "content_block_delta":
            return self._delta(raw, frame, event, key)
        if kind == "content_block_stop":
            return [*self._flush(key), raw]
        if kind == "message_stop":
            return [*self.flush_all(), raw]
        return [raw]

    def _delta(self, raw: str, frame: dict[str, Any], event: dict[str, Any], key: tuple[Any, Any]) -> list[str]:
        delta = event.get("delta")
        if not isinstance(delta, dict):
            return [raw]
        field = _DELTA_FIELDS.get(str(delta.get("type")))
        piece = delta.get(field) if field is not None else None
        if field is None or not isinstance(piece, str):
            return [raw]
        held = self._held.pop(key, None)
        text = (held[0] if held else "") + piece
        cut = _open_from(text, self._literals)
        if len(text) - cut > MAX_HELD:
            cut = len(text)
        out = self._scrub(text[:cut])
        if cut < len(text):
            self._held[key] = (text[cut:], str(delta.get("type")), frame)
        if not held and cut == len(text) and out == piece:
            return [raw]  # nothing kept back, nothing scrubbed: as it came
        return [_with_text(frame, field, out)] if out else []

    def _flush(self, key: tuple[Any, Any]) -> list[str]:
        held = self._held.pop(key, None)
        if held is None:
            return []
        text, delta_type, frame = held
        return [_with_text(frame, _DELTA_FIELDS[delta_type], self._scrub(text))]

    def flush_all(self) -> list[str]:
        """What every block kept back, scrubbed (the message or the session ended)."""
        return [line for key in list(self._held) for line in self._flush(key)]


def _with_text(frame: dict[str, Any], field: str, text: str) -> str:
    """``frame`` (a content_block_delta stream event) with its delta's text ``text``."""
    event = dict(frame["event"])
    event["delta"] = {**event["delta"], field: text}
    return json.dumps({**frame, "event": event})
