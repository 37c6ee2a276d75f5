"""Asking both SDKs the same question: answers as plain data, compared."""

from __future__ import annotations

import dataclasses
from typing import Any

import claude_agent_sdk as official

import claude_sdkurl as ours


def plain(value: Any) -> Any:
    """Dataclasses of either SDK (or lists of them) as dicts, so the two can be compared."""
    if isinstance(value, list):
        return [plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = dataclasses.asdict(value)
        if isinstance(value, ours.SDKSessionInfo):
            out.pop("archived", None)  # ours (TypeScript's): the official row has no such field
        return out
    return value


def both(name: str, *args: Any, **kw: Any) -> Any:
    """``name(*args, **kw)`` of both SDKs' disk functions; they must answer alike."""
    mine = plain(getattr(ours, name)(*args, **kw))
    theirs = plain(getattr(official, name)(*args, **kw))
    assert mine == theirs, (name, args, kw)
    return mine
