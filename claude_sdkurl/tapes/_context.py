"""``record(path)`` and ``replay(path, mode=...)``: every session started inside the ``with``
block (on any thread) is recorded to, or replayed from, a tape."""

from __future__ import annotations

import contextlib
import itertools
import re
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .._engine.transport import Transport
from .._engine.transport import taps
from ._format import Tape, TapeError, load, save
from ._scrub import Scrubber
from ._wire import RecordingTransport, ReplayTransport


class _Recorder:
    """Wraps each new session's transport; one tape per session, named by the order sessions
    started in (``001-<session id>.jsonl``), or ``path`` itself for a path ending in ``.jsonl``."""

    def __init__(self, path: Path, scrubber: Scrubber) -> None:
        self.path = path
        self.scrubber = scrubber
        self.counter = itertools.count(1)
        self.lock = threading.Lock()
        self.tapes: list[Path] = []

    def replace(self, options: Any) -> Transport | None:
        return None

    def wrap(self, transport: Transport, plan: Any) -> Transport:
        number = next(self.counter)

        def save_to(tape: Tape) -> None:
            if self.path.suffix == ".jsonl":
                target = self.path if number == 1 else self.path.with_name(f"{self.path.stem}-{number}.jsonl")
            else:
                sid = re.sub(r"[^A-Za-z0-9_-]", "", str(tape.header.get("session_id") or "session"))[:64]
                target = self.path / f"{number:03d}-{sid}.jsonl"
            save(tape, target)
            with self.lock:
                self.tapes.append(target)

        return RecordingTransport(transport, plan, save_to, self.scrubber)


class _Player:
    """Hands each new session the next tape, in order."""

    def __init__(self, tapes: list[Tape], mode: str, write_timeout: float) -> None:
        self.tapes = list(tapes)
        self.mode = mode
        self.write_timeout = write_timeout
        self.lock = threading.Lock()
        self.played: list[ReplayTransport] = []

    def replace(self, options: Any) -> Transport | None:
        with self.lock:
            if not self.tapes:
                raise TapeError("a session started inside replay() with no tape left for it")
            transport = ReplayTransport(self.tapes.pop(0), self.mode, self.write_timeout)
            self.played.append(transport)
        return transport

    def wrap(self, transport: Transport, plan: Any) -> Transport:
        return transport


def tapes_at(path: str | Path) -> list[Tape]:
    """The tapes of a file, or of a folder's ``*.jsonl`` files in name order."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.glob("*.jsonl"))
        if not files:
            raise TapeError(f"no tapes (*.jsonl) in {path}")
        return [load(p) for p in files]
    return [load(path)]


@contextlib.contextmanager
def record(path: str | Path, scrub: Iterable[str | re.Pattern[str]] = (), home: str | None = None) -> Iterator[_Recorder]:
    """Record every session started inside to a tape under ``path`` (a folder, one tape per
    session; or one ``.jsonl`` file). Before anything is written, API keys, tokens, the home
    folder (as ``~``) and each of the ``scrub`` patterns are taken out. Each tape is written
    whole when its session ends, private (0600). Yields the recorder (``.tapes``: the files)."""
    recorder = _Recorder(Path(path), Scrubber(scrub, home))
    taps.install(recorder)
    try:
        yield recorder
    finally:
        taps.remove(recorder)


@contextlib.contextmanager
def replay(path: str | Path, mode: str = "stub", write_timeout: float = 30.0) -> Iterator[_Player]:
    """Replay the tapes at ``path`` (a tape, or a folder of them in name order) to the sessions
    started inside, one tape each, in the order they start: no CLI runs, none need be
    installed. ``mode``: ``"inert"``, ``"stub"`` or ``"verify"`` (see
    :mod:`claude_sdkurl.tapes`). A difference in verify mode ends the session with
    :class:`TapeMismatch`."""
    player = _Player(tapes_at(path), mode, write_timeout)
    taps.install(player)
    try:
        yield player
    finally:
        taps.remove(player)
