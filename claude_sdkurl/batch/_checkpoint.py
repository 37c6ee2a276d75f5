"""The checkpoint file: JSON lines, one per ended item, and state lines (``{"state": ...}``: a
run to go on with, a pause and its probe time, the end of a pause); how it is written (0600,
a line per ``write``, a torn tail repaired) and read (a torn last line skipped, any other bad
line a :class:`CheckpointError`)."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
from pathlib import Path
from typing import IO, Any

from .._errors import ClaudeSDKError
from ._item import BatchItem

logger = logging.getLogger("claude_sdkurl.batch")

class CheckpointError(ClaudeSDKError, ValueError):
    """A checkpoint line is not a whole record (edited, or damaged on disk)."""

    path: str
    """The checkpoint file."""
    line: int
    """The line that is not a whole record (1-based)."""
    reason: str
    """What is wrong with it."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        self.path, self.line, self.reason = path, line, reason
        super().__init__(f"{path}:{line}: not a checkpoint record ({reason}); fix or remove that line to resume")


def _record(line: bytes) -> dict[str, Any]:
    """One checkpoint line as a JSON object, or :class:`CheckpointError` (path and line 0:
    the caller names them)."""
    try:
        data = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as bad:
        raise CheckpointError("", 0, f"{type(bad).__name__}: {bad}") from None
    if not isinstance(data, dict):
        raise CheckpointError("", 0, f"a JSON {type(data).__name__}, not an object")
    return data


_ITEM_TYPES: dict[str, tuple[type, ...]] = {
    "index": (int,), "prompt": (str,), "text": (str, type(None)), "total_cost_usd": (int, float, type(None)),
    "session_id": (str, type(None)), "error": (str, type(None)), "fault": (str, type(None)), "attempts": (int,),
    "seconds": (int, float), "worked": (bool,), "parked": (dict, type(None)), "usage": (dict, type(None)),
    "model_usage": (dict, type(None)), "resumed_from": (str, type(None)),
}  # fmt: skip


def _item(data: Any) -> BatchItem:
    """A :class:`BatchItem` from a checkpoint record, its fields' types checked (``TypeError``)."""
    if not isinstance(data, dict):
        raise TypeError("an item record is not an object")
    for name, kinds in _ITEM_TYPES.items():
        if name in data and (not isinstance(data[name], kinds) or (kinds == (int,) and isinstance(data[name], bool))):
            raise TypeError(f"{name} is {type(data[name]).__name__}")
    return BatchItem(**data)


class Checkpoint:
    """The checkpoint file: a line per ended item, and state lines (``{"state": ...}``: a run to
    go on with, a pause and its probe time, the end of a pause) read back by :meth:`BatchResult.load`.

    Created 0600 (it holds prompts, answers and parked commands). Each line is one ``write`` to
    a file opened for appending, flushed; a torn last line left by a crash is cut off (or, when
    only its newline is missing, ended) before the first new line, so no line is glued onto it.
    """

    def __init__(self, path: str | Path) -> None:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            _repair_tail(fd, str(path))
            self._file: IO[bytes] = os.fdopen(fd, "ab")
        except BaseException:
            os.close(fd)
            raise
        self._lock = threading.Lock()

    def write(self, item: BatchItem) -> None:
        self._line(dataclasses.asdict(item))

    def state(self, kind: str, **fields: Any) -> None:
        self._line({"state": kind, **fields})

    def _line(self, data: dict[str, Any]) -> None:
        line = (json.dumps(data, default=str) + "\n").encode("utf-8")
        with self._lock:
            self._file.write(line)
            self._file.flush()

    def close(self) -> None:
        self._file.close()


def _repair_tail(fd: int, path: str) -> None:
    """End the file on a newline: a last line that is a whole record gets its newline, a torn
    one is cut off (with a warning: its item runs again)."""
    size = os.fstat(fd).st_size
    if size == 0:
        return
    tail = os.pread(fd, min(size, 1 << 20), max(0, size - (1 << 20)))
    if tail.endswith(b"\n"):
        return
    cut = tail.rfind(b"\n")
    start = size - len(tail) + cut + 1 if cut >= 0 else (0 if len(tail) == size else None)
    if start is None:  # a last line over 1 MiB with no newline: read it whole
        data = os.pread(fd, size, 0)
        start = data.rfind(b"\n") + 1
    fragment = os.pread(fd, size - start, start)
    try:
        _record(fragment)
        os.write(fd, b"\n")  # whole but for its newline (O_APPEND: at the end)
    except CheckpointError as bad:
        logger.warning("%s: cutting off a torn last line (a write cut short) before appending: %s", path, bad.reason)
        os.ftruncate(fd, start)


def read(path: str | Path) -> tuple[list[BatchItem], dict[int, BatchItem], float | None]:
    """A checkpoint's items in index order (the last line of an index wins), the runs that were
    to go again (``unfinished``), and the probe time of a pause it stopped in. A torn last line
    (a crash mid-write) is skipped with a warning; any other line that is not a whole record
    raises :class:`CheckpointError` naming the file and line (nothing is guessed, so nothing
    paid for is run again unseen)."""
    items: dict[int, BatchItem] = {}
    unfinished: dict[int, BatchItem] = {}
    paused_until: float | None = None
    p = Path(path)
    if not p.exists():
        return [], unfinished, paused_until
    raw = p.read_bytes().split(b"\n")
    for number, line in enumerate(raw, 1):
        if not line.strip():
            continue
        last = number == len(raw)  # no newline after it: the write may have been cut short
        try:
            data = _record(line)
        except CheckpointError as bad:
            if last:
                logger.warning("%s:%d: the last line is torn (a write cut short), skipped: %s", p, number, bad.reason)
                continue
            raise CheckpointError(str(p), number, bad.reason) from None
        try:
            state = data.pop("state", None)
            if state is None:
                item = _item(data)
                items[item.index] = item
                unfinished.pop(item.index, None)
            elif state == "again":
                run = _item(data["item"])
                unfinished[run.index] = run
            elif state == "paused":
                paused_until = float(data["probe_at"])
            elif state == "going_on":
                paused_until = None
            else:
                raise ValueError(f"unknown state {state!r}")
        except (TypeError, ValueError, KeyError) as bad:
            raise CheckpointError(str(p), number, f"{type(bad).__name__}: {bad}") from None
    return [items[k] for k in sorted(items)], unfinished, paused_until
