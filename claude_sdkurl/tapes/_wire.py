"""Wire tapes: a transport that records every frame of a session, and one that plays a tape
back in its place, with no CLI.

Replay modes (``ReplayTransport(tape, mode)``):

* ``"inert"``: the messages only. The program's prompts are awaited in order (each turn's
  messages come after its prompt); its control requests get the tape's answers for that
  subtype, in order, whenever they come; the CLI's own control requests are not replayed, so
  no callback runs.
* ``"stub"``: the whole session in lockstep: each frame the program wrote on the tape is
  awaited (a prompt, a control request such as ``interrupt``) before the frames after it are
  delivered, and the tape's answers go to the program's requests (their ids remapped, matched
  first-in-first-out per subtype). The CLI's control requests are still not replayed.
* ``"verify"``: as ``"stub"``, and the CLI's control requests are replayed (ids kept), so the
  program's callbacks (``can_use_tool``, hooks, SDK MCP tools) run again; every frame the
  program writes is compared with the tape's, and the first difference ends the session with
  :class:`TapeMismatch` naming the entry and the field.

A tape with no prompt on it (a bare frames file, as cassette ships) plays its conversation once
the program has written its first prompt, as a CLI would; ``"verify"`` refuses such a tape at
once (:class:`TapeMismatch`: nothing the program wrote was recorded to compare with).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import _errors
from .._engine.transport import Transport, TransportCallbacks
from .._engine.transport.taps import whole_lines
from .._version import OFFICIAL_SDK_VERSION, __version__
from ._format import Entry, Tape, now_iso, save
from ._scrub import Scrubber

logger = logging.getLogger("claude_sdkurl.tapes")

MODES = ("inert", "stub", "verify")
"""The replay modes (see the module doc)."""
WRITE_TIMEOUT = 30.0


class TapeMismatch(_errors.ClaudeSDKError):
    """A replayed session went another way than its tape."""

    entry: int | None
    """The tape's entry where the session went another way (from 1 after the header)."""
    field: str | None
    """Where in that entry, as a JSON path (``$.message.content``)."""
    tape: Any
    """The value on the tape."""
    program: Any
    """What the program sent or answered instead."""

    def __init__(self, message: str, entry: int | None = None, field: str | None = None, tape: Any = None,
                 program: Any = None) -> None:  # fmt: skip
        super().__init__(message)
        self.entry, self.field, self.tape, self.program = entry, field, tape, program


# ---------------------------------------------------------------- comparing frames

_VOLATILE_KEYS = {"request_id", "uuid", "session_id", "timestamp", "parent_tool_use_id"}
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def normalised(frame: Any) -> Any:
    """A frame with what differs by nature between two runs taken out (ids, uuids, times)."""
    if isinstance(frame, dict):
        return {k: normalised(v) for k, v in frame.items() if k not in _VOLATILE_KEYS}
    if isinstance(frame, list):
        return [normalised(v) for v in frame]
    if isinstance(frame, str):
        return _UUID.sub("<uuid>", frame)
    return frame


def first_difference(tape: Any, program: Any, path: str = "$") -> tuple[str, Any, Any] | None:
    """The first JSON path where two (normalised) frames differ, with both values."""
    if isinstance(tape, dict) and isinstance(program, dict):
        for key in list(tape) + [k for k in program if k not in tape]:
            if key not in program or key not in tape:
                return f"{path}.{key}", tape.get(key, "<missing>"), program.get(key, "<missing>")
            found = first_difference(tape[key], program[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(tape, list) and isinstance(program, list):
        for i, (a, b) in enumerate(zip(tape, program)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        if len(tape) != len(program):
            return f"{path}.length", len(tape), len(program)
        return None
    return None if tape == program else (path, tape, program)


def kind_of(frame: dict[str, Any] | None, end_input: bool = False) -> tuple[str, str]:
    """What a frame the program writes is, for matching it with the tape's: a prompt, a
    control request (by subtype), an answer to the CLI (by request id), or another frame."""
    if end_input or frame is None:
        return ("end_input", "")
    kind = frame.get("type")
    if kind == "user":
        return ("user", "")
    if kind == "control_request":
        return ("control_request", str((frame.get("request") or {}).get("subtype")))
    if kind == "control_response":
        return ("control_response", str((frame.get("response") or {}).get("request_id")))
    return ("other", str(kind))


# ---------------------------------------------------------------- recording


class RecordingTransport(Transport):
    """Passes every frame through to ``inner`` and keeps a copy; at the session's end, the
    tape goes to ``save_to(tape)``."""

    def __init__(self, inner: Transport, plan: Any, save_to: Callable[[Tape], None], scrubber: Scrubber) -> None:
        self.inner = inner
        self.name = inner.name
        self.can_end_input = inner.can_end_input
        self._save_to = save_to
        self._scrubber = scrubber
        self._entries: list[Entry] = []
        self._lock = threading.Lock()
        self._partial = ""
        version = getattr(plan, "cli_version", None)
        self._header: dict[str, Any] = {
            "sdk": f"claude_sdkurl {__version__}",
            "official_sdk": OFFICIAL_SDK_VERSION,
            "cli": ".".join(map(str, version)) if version else None,
            "transport": inner.name,
            "argv": list(getattr(plan, "args", []) or []),
            # the SDK's own switches of the CLI (what a drift run must set again); no secrets
            "env": {k: v for k, v in (getattr(plan, "env", None) or {}).items()
                    if k.startswith(("CLAUDE_CODE_", "CLAUDE_AGENT_SDK_")) and not re.search(r"TOKEN|KEY|SECRET", k)},
            "model": None,
            "session_id": None,
            "recorded_at": now_iso(),
        }
        self._ended = False

    def _note(self, entry: Entry) -> None:
        with self._lock:
            if not self._ended:
                self._entries.append(entry)

    def _read(self, chunk: bytes | str) -> None:
        with self._lock:
            lines, self._partial = whole_lines(self._partial, chunk, self.name)
        for line in lines:
            if not line.strip():
                continue
            try:
                frame = json.loads(line)
            except ValueError:
                continue  # (the session reports a line it cannot read; the tape keeps frames)
            if isinstance(frame, dict):
                if frame.get("type") == "system" and frame.get("subtype") == "init":
                    self._header["model"] = frame.get("model")
                    self._header["session_id"] = frame.get("session_id")
                self._note(Entry("read", frame=frame))

    def start(self, callbacks: TransportCallbacks) -> None:
        def on_data(chunk: bytes | str) -> None:
            self._read(chunk)
            callbacks.on_data(chunk)

        def on_exit(code: int | None, stderr: str) -> None:
            self._finish(Entry("end", exit_code=code, stderr=stderr[-2000:]))
            callbacks.on_exit(code, stderr)

        def on_error(error: BaseException) -> None:
            self._finish(Entry("end", error={"type": type(error).__name__, "message": str(error)}))
            if callbacks.on_error is not None:
                callbacks.on_error(error)

        self.inner.start(TransportCallbacks(on_data=on_data, on_exit=on_exit, on_reconnect=callbacks.on_reconnect,
                                            on_error=on_error, on_outside=callbacks.on_outside))  # fmt: skip

    def _finish(self, end: Entry) -> None:
        with self._lock:
            if self._ended:
                return
            self._entries.append(end)
            self._ended = True
            entries = list(self._entries)
        scrub = self._scrubber
        tape = Tape(
            header={k: scrub.frame(v) for k, v in self._header.items()},
            entries=[Entry(e.dir, frame=scrub.frame(e.frame) if e.frame is not None else None, end_input=e.end_input,
                           exit_code=e.exit_code, stderr=scrub.text(e.stderr),
                           error=scrub.frame(e.error) if e.error else None) for e in entries],  # fmt: skip
        )
        try:
            self._save_to(tape)
        except Exception:  # a tape that cannot be written must not break the session it records
            logger.exception("could not write the tape")

    def wait_ready(self, timeout: float) -> None:
        self.inner.wait_ready(timeout)

    def send(self, line: str) -> None:
        try:
            frame = json.loads(line)
        except ValueError:
            frame = None
        if isinstance(frame, dict):
            self._note(Entry("write", frame=frame))
        self.inner.send(line)

    def end_input(self) -> None:
        self._note(Entry("write", end_input=True))
        self.inner.end_input()

    def close(self) -> None:
        self.inner.close()

    def abort(self) -> None:
        self.inner.abort()

    def signal_interrupt(self) -> bool:
        return self.inner.signal_interrupt()


# ---------------------------------------------------------------- replaying


_ERRORS = {
    name: getattr(_errors, name)
    for name in dir(_errors)
    if isinstance(getattr(_errors, name), type) and issubclass(getattr(_errors, name), BaseException)
}


class ReplayTransport(Transport):
    """Plays ``tape`` back to the session in place of a CLI (see the module doc for ``mode``)."""

    name = "tape"
    can_end_input = True

    def __init__(self, tape: Tape, mode: str = "stub", write_timeout: float = WRITE_TIMEOUT) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        self.tape = tape
        self.mode = mode
        self.write_timeout = write_timeout
        self._callbacks: TransportCallbacks | None = None
        self._cond = threading.Condition()
        self._written: deque[tuple[tuple[str, str], dict[str, Any] | None]] = deque()
        self._ids: dict[str, str] = {}  # the tape's request id -> the program's
        self._closed = False
        self._exited = False
        self._thread: threading.Thread | None = None
        # the tape's answers to the program's requests, by subtype, in order (inert answers from them)
        self._answers: dict[str, deque[dict[str, Any]]] = {}
        asked: dict[str, str] = {}
        for entry in tape.entries:
            frame = entry.frame or {}
            if entry.dir == "write" and frame.get("type") == "control_request":
                asked[str(frame.get("request_id"))] = str((frame.get("request") or {}).get("subtype"))
            elif entry.dir == "read" and frame.get("type") == "control_response":
                rid = str((frame.get("response") or {}).get("request_id"))
                if rid in asked:
                    self._answers.setdefault(asked[rid], deque()).append(frame)
        self._sdk_request_ids = set(asked)
        self._left: dict[str, int] = {}  # the tape's requests of the program not yet met, by subtype
        for subtype in asked.values():
            self._left[subtype] = self._left.get(subtype, 0) + 1

    # -- the transport interface

    def start(self, callbacks: TransportCallbacks) -> None:
        self._callbacks = callbacks
        self._thread = threading.Thread(target=self._play, name="claude-sdkurl-tape", daemon=True)
        self._thread.start()

    def wait_ready(self, timeout: float) -> None:
        return None

    def send(self, line: str) -> None:
        frame = json.loads(line)
        kind = kind_of(frame)
        with self._cond:
            unrecorded = kind[0] == "control_request" and self._left.get(kind[1], 0) <= 0
            if kind[0] == "control_request" and not unrecorded:
                self._left[kind[1]] -= 1
        if kind[0] == "control_request" and (self.mode == "inert" or (unrecorded and self.mode == "stub")):
            self._answer_from_tape(frame)  # (verify keeps an unrecorded one: a difference at the end)
            return
        with self._cond:
            self._written.append((kind, frame))
            self._cond.notify_all()

    def end_input(self) -> None:
        with self._cond:
            self._written.append((("end_input", ""), None))
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5.0)
        self._exit(self._recorded_exit(), "")

    # -- playing

    def _recorded_exit(self) -> int | None:
        ends = [e for e in self.tape.entries if e.dir == "end"]
        return ends[-1].exit_code if ends and ends[-1].error is None else 0

    def _exit(self, code: int | None, stderr: str) -> None:
        with self._cond:
            if self._exited:
                return
            self._exited = True
        assert self._callbacks is not None
        self._callbacks.on_exit(code, stderr)

    def _deliver(self, frame: dict[str, Any]) -> None:
        assert self._callbacks is not None
        self._callbacks.on_data(json.dumps(frame) + "\n")

    def _fail(self, error: BaseException) -> None:
        assert self._callbacks is not None
        if self._callbacks.on_error is not None:
            self._callbacks.on_error(error)
        self._exit(None, "")

    def _answer_from_tape(self, request: dict[str, Any]) -> None:
        subtype = str((request.get("request") or {}).get("subtype"))
        recorded = self._answers.get(subtype)
        if recorded:
            answer = json.loads(json.dumps(recorded.popleft()))
            answer["response"]["request_id"] = request.get("request_id")
        else:  # a request the tape never answered: a plain success, as a CLI that took it
            answer = {"type": "control_response",
                      "response": {"subtype": "success", "request_id": request.get("request_id"), "response": {}}}  # fmt: skip
        self._deliver(answer)

    def _await(self, index: int, wanted: tuple[str, str], recorded: dict[str, Any] | None) -> dict[str, Any] | None | bool:
        """The program's next write of kind ``wanted`` (``False`` once closed); in verify mode
        any other write waiting first is a difference."""
        with self._cond:
            def found() -> bool:
                return self._closed or any(k == wanted or self._matches(k, wanted) for k, _ in self._written)

            if not self._cond.wait_for(found, self.write_timeout):
                raise TapeMismatch(f"the program did not write the tape's entry {index} ({wanted[0]} {wanted[1]}) within "
                                   f"{self.write_timeout:g} s", entry=index, tape=recorded)  # fmt: skip
            if self._closed:
                return False
            for position, (kind, frame) in enumerate(self._written):
                if kind == wanted or self._matches(kind, wanted):
                    # In verify mode a prompt or a request the program wrote before this one, where
                    # the tape has this one, is a difference. Answers to the CLI's requests are
                    # not ordered: the callbacks that give them run side by side.
                    earlier = [(k, f) for k, f in list(self._written)[:position] if k[0] == kind[0] != "control_response"]
                    if self.mode == "verify" and earlier:
                        (extra_kind, extra), = earlier[:1]
                        raise TapeMismatch(f"entry {index}: the program wrote {extra_kind[0]} {extra_kind[1]} where the "
                                           f"tape has {wanted[0]} {wanted[1]}", entry=index, tape=recorded, program=extra)  # fmt: skip
                    del self._written[position]
                    return frame
        return None

    def _matches(self, kind: tuple[str, str], wanted: tuple[str, str]) -> bool:
        # an answer to the CLI is matched by the request it answers (its id is the tape's: kept)
        return kind[0] == wanted[0] == "control_response" and kind[1] == wanted[1]

    def _play(self) -> None:
        try:
            self._play_entries()
        except TapeMismatch as mismatch:
            self._fail(mismatch)
        except Exception as e:  # a broken tape ends the session with a typed error, never a hang
            self._fail(TapeMismatch(f"the tape could not be played: {type(e).__name__}: {e}"))

    def _play_entries(self) -> None:
        mode = self.mode
        cli_requests: set[str] = set()
        # A tape with no prompt on it (a bare frames file, as cassette ships them) still plays
        # as a CLI runs: nothing of the conversation before the program's first prompt, so the
        # program's turn is under way when its result comes (and its input then ends).
        prompted = any(e.dir == "write" and kind_of(e.frame, e.end_input)[0] == "user" for e in self.tape.entries)
        if mode == "verify" and not any(e.dir == "write" for e in self.tape.entries):
            raise TapeMismatch("this tape holds no frame the program wrote (a bare frames file): verify has nothing to "
                               "compare; replay it in the 'inert' or 'stub' mode")  # fmt: skip
        for index, entry in enumerate(self.tape.entries, 1):
            if self._closed:
                return
            frame = entry.frame
            if entry.dir == "end":
                if mode == "verify":
                    with self._cond:
                        extra = [(k, f) for k, f in self._written if k[0] != "end_input"]
                    if extra:
                        (kind, what), written = extra[0]
                        raise TapeMismatch(f"entry {index}: the program wrote {kind} {what}, which the tape does not have",
                                           entry=index, program=written)  # fmt: skip
                if entry.error is not None:
                    kind = _ERRORS.get(str(entry.error.get("type")), _errors.CLIConnectionError)
                    try:
                        error = kind(entry.error.get("message", ""))
                    except TypeError:
                        error = _errors.CLIConnectionError(entry.error.get("message", ""))
                    self._fail(error)
                else:
                    self._exit(entry.exit_code, entry.stderr)
                return
            if entry.dir == "write":
                wanted = kind_of(frame, entry.end_input)
                if wanted[0] == "control_request" and mode == "inert":
                    continue  # answered when the program asks (send)
                if wanted[0] == "control_response" and (mode != "verify" or wanted[1] not in cli_requests):
                    continue  # the program's answer to a CLI request not replayed
                if wanted[0] == "other" and mode != "verify":
                    continue
                got = self._await(index, wanted, frame)
                if got is False:
                    return
                written = got if isinstance(got, dict) else None
                if wanted[0] == "control_request" and isinstance(written, dict) and frame is not None:
                    self._ids[str(frame.get("request_id"))] = str(written.get("request_id"))
                if mode == "verify" and frame is not None and isinstance(written, dict):
                    difference = first_difference(normalised(frame), normalised(written))
                    if difference is not None:
                        where, theirs, mine = difference
                        raise TapeMismatch(f"entry {index}: the program wrote {mine!r} at {where}, the tape has {theirs!r}",
                                           entry=index, field=where, tape=theirs, program=mine)  # fmt: skip
                continue
            assert frame is not None
            frame_type = frame.get("type")
            if not prompted and frame_type not in ("control_request", "control_response", "control_cancel_request"):
                if self._await(index, ("user", ""), None) is False:
                    return
                prompted = True
            if frame_type == "control_request":
                if mode != "verify":
                    continue
                cli_requests.add(str(frame.get("request_id")))
                self._deliver(frame)
            elif frame_type == "control_response":
                rid = str((frame.get("response") or {}).get("request_id"))
                if mode == "inert" and rid in self._sdk_request_ids:
                    continue  # given when the program asked
                if rid in self._ids:
                    frame = json.loads(json.dumps(frame))
                    frame["response"]["request_id"] = self._ids[rid]
                self._deliver(frame)
            elif frame_type == "control_cancel_request" and mode != "verify":
                continue
            else:
                self._deliver(frame)
        # a tape with no end entry (cut short): the CLI exits when its input closes
        if self._await(len(self.tape.entries) + 1, ("end_input", ""), None) is not False:
            self._exit(0, "")
