"""Where an area may stand in for, or listen on, the transports of every session started
while it is installed (the tapes of :mod:`claude_sdkurl.tapes` use it). The engine asks here;
what is installed never calls back into the engine.

A :class:`Tap` may *replace* a session's transport before the launch is planned (a replay:
no CLI is looked for), or *wrap* the transport the plan made (a recording). Taps are
process-wide, not per thread, so sessions started on worker threads inside a ``with`` block
are covered too; the most recently installed tap is asked first.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Protocol

from .base import Transport

if TYPE_CHECKING:
    from ...types import ClaudeAgentOptions

_lock = threading.Lock()
_taps: list[Tap] = []


class Tap(Protocol):
    def replace(self, options: ClaudeAgentOptions) -> Transport | None:
        """A transport to use instead of launching a CLI, or ``None``."""

    def wrap(self, transport: Transport, plan: Any) -> Transport:
        """The transport to use in place of ``transport`` (the same one to leave it alone)."""


def install(tap: Tap) -> None:
    with _lock:
        _taps.append(tap)


def remove(tap: Tap) -> None:
    with _lock:
        if tap in _taps:
            _taps.remove(tap)


def replacement(options: ClaudeAgentOptions) -> Transport | None:
    """The first replacement an installed tap offers for a session with ``options``."""
    with _lock:
        taps = list(reversed(_taps))
    for tap in taps:
        found = tap.replace(options)
        if found is not None:
            return found
    return None


def wrapped(transport: Transport, plan: Any) -> Transport:
    """``transport`` as every installed tap wraps it."""
    with _lock:
        taps = list(_taps)
    for tap in taps:
        transport = tap.wrap(transport, plan)
    return transport


def whole_lines(partial: str, chunk: bytes | str, transport: str) -> tuple[list[str], str]:
    """For a tap that reads what a session's CLI writes: the lines ``chunk`` completes after
    ``partial`` (what the last chunk left unfinished), and what it leaves unfinished. A chunk of
    the ``"websocket"`` transport is one whole message, a line whether or not it ends with one.
    A character cut between two reads is whole in its line: the bytes are kept as they came
    (``surrogateescape``) until the line is, then decoded."""
    text = chunk.decode("utf-8", errors="surrogateescape") if isinstance(chunk, bytes) else chunk
    if transport == "websocket" and not text.endswith("\n"):
        text += "\n"
    *lines, rest = (partial + text).split("\n")
    return [line_text(line) for line in lines], rest


def line_text(line: str) -> str:
    """A line :func:`whole_lines` left unfinished (or completed), its kept bytes decoded (what is
    not UTF-8 replaced)."""
    if line.isascii():  # (most lines: nothing kept, nothing to decode again)
        return line
    try:
        return line.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")
    except UnicodeEncodeError:  # a str chunk with a lone surrogate of its own: as it came
        return line
