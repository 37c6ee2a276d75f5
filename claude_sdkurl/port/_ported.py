"""What a port gives back (:class:`Ported`), the error for a file it cannot read, and the mark
left where a person must decide. No ``libcst`` here."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

MARK = "# claude_sdkurl.port:"
"""The comment the porting command puts above code it left for a person to port."""

_LOOPS = ("asyncio", "anyio", "trio")


def has_work(source: str) -> bool:
    """Whether a file is for the porting command at all: it names the SDK or a loop library.
    Any other file is left as it is, ``async def``s and all."""
    return "claude_agent_sdk" in source or any(f"{loop}." in source for loop in _LOOPS)


class PortError(Exception):
    """A file could not be ported (it does not parse); nothing was written."""


@dataclass
class Ported:
    """One file's port: the new text and what is left for a person, as ``(line, text)``."""

    path: str
    """The file."""
    before: str
    """Its text before."""
    after: str
    """Its text after the port."""
    todo: list[tuple[int, str]] = field(default_factory=list)
    """What is left for a person: ``(line, text)`` of each mark."""
    unsure: list[tuple[int, str]] = field(default_factory=list)
    """Each removed ``await`` whose target could not be told apart from another library's coroutine."""

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True), self.after.splitlines(keepends=True), self.path, self.path
            )
        )
