"""The session host's wire, without a CLI: what a caller that never reads, a torn or overlong
line, and options that cannot travel do to the host's side (``claude_sdkurl.host._wire`` and the
caller of ``_server``)."""

from __future__ import annotations

import io
import socket
import threading
import time

import pytest

from claude_sdkurl import ClaudeAgentOptions
from claude_sdkurl.host import HostError, HostOptionError
from claude_sdkurl.host import _server, _wire


def test_a_caller_that_never_reads_is_given_up_on_not_waited_for() -> None:
    ours, theirs = socket.socketpair()
    try:
        began = time.monotonic()
        with pytest.raises(TimeoutError):
            _server.send_within(ours, b"x" * (8 << 20), 0.5)  # far more than the socket buffers hold
        took = time.monotonic() - began
        print(f"gave up after {took:.2f} s")
        assert took < 10  # (0.5 asked; bounded for a busy machine)
    finally:
        ours.close()
        theirs.close()


def test_a_caller_gone_while_asked_answers_nothing_at_once() -> None:
    ours, theirs = socket.socketpair()
    caller = _server._Caller(ours)
    reader = threading.Thread(target=caller.read_answers)
    reader.start()
    try:
        got: list[tuple[bool, object]] = []
        asking = threading.Thread(target=lambda: got.append(caller.question({"op": "ask", "tool_name": "Bash"})))
        asking.start()
        assert theirs.recv(1000).startswith(b'{"op":"ask"')  # the question went out
        theirs.close()  # and the caller went away without answering
        asking.join(10)
        assert got == [(False, _server.GONE)]
    finally:
        reader.join(10)
        caller.reader.close()
        ours.close()


def test_a_torn_overlong_or_foreign_line_is_not_a_frame() -> None:
    assert _wire.read_frame(io.BytesIO(b'{"op": "answer"')) is None  # cut short: the other side went away
    assert _wire.read_frame(io.BytesIO(b"")) is None
    with pytest.raises(HostError, match="not JSON"):
        _wire.read_frame(io.BytesIO(b"not json\n"))
    with pytest.raises(HostError, match="not a JSON object"):
        _wire.read_frame(io.BytesIO(b"[1, 2]\n"))
    with pytest.raises(HostError, match="longer"):
        _wire.read_frame(io.BytesIO(b"x" * (_wire.MAX_LINE + 2) + b"\n"))
    assert _wire.read_frame(io.BytesIO(b'{"op": "end"}\n')) == {"op": "end"}


def test_options_that_cannot_travel_are_refused_by_name_and_unknown_ones_are_not_taken() -> None:
    with pytest.raises(HostOptionError, match="stderr"):
        _wire.encode_options(ClaudeAgentOptions(stderr=print))
    fields, forward = _wire.encode_options(ClaudeAgentOptions(model="m", allowed_tools=["Bash"], can_use_tool=lambda *a: None))
    assert fields == {"model": "m", "allowed_tools": ["Bash"]} and forward == ["can_use_tool"]
    with pytest.raises(HostOptionError, match="unknown options: evil"):
        _wire.decode_options({"evil": 1})
    with pytest.raises(HostOptionError, match="unknown options: can_use_tool"):
        _wire.decode_options({"can_use_tool": "x"})  # a callback never comes as data


class _Turns:
    """Stands in for the host's ``Conversations``: each turn yields one message, then waits until
    told to end; ``interrupt`` notes whose turn it found under way, after waiting to be let go
    (as a reader thread descheduled between seeing its caller gone and interrupting)."""

    def __init__(self) -> None:
        self.current: str | None = None
        self.finish = {"A": threading.Event(), "B": threading.Event()}
        self.interrupting = threading.Event()
        self.let_go = threading.Event()
        self.found: list[str | None] = []

    def _send(self, key: str, prompt: str, options: object, timeout: float | None, sender: object, outside: bool) -> object:
        from types import SimpleNamespace

        self.current = prompt
        yield SimpleNamespace(raw={"type": "assistant", "turn": prompt})
        self.finish[prompt].wait(30)
        self.current = None

    def interrupt(self, key: str) -> None:
        self.interrupting.set()
        self.let_go.wait(30)
        self.found.append(self.current)


def past_beats(conn: socket.socket) -> bytes:
    """What the host sent next, its heartbeats skipped (they come every second from the start)."""
    got = b""
    while not got.replace(b'{"op":"beat"}\n', b""):
        got += conn.recv(1000)
    return got.replace(b'{"op":"beat"}\n', b"")


def test_a_caller_gone_as_its_turn_ends_does_not_interrupt_the_next_callers_turn() -> None:
    import json
    import tempfile
    from pathlib import Path

    base = Path(tempfile.mkdtemp(prefix="claude-sdkurl-hostwire-"))
    host = _server.SessionHost(base / "h" / "host.sock")
    turns = _Turns()
    host._pool = lambda fields, forward: ("", turns, ClaudeAgentOptions(), None)  # type: ignore[method-assign]
    callers: list[socket.socket] = []

    def caller(prompt: str) -> socket.socket:
        conn = socket.socket(socket.AF_UNIX)
        conn.connect(str(host.path))
        conn.sendall(json.dumps({"op": "send", "key": "k", "prompt": prompt}).encode() + b"\n")
        callers.append(conn)
        return conn

    try:
        a = caller("A")
        assert b'"turn":"A"' in past_beats(a)
        a.close()  # A goes away as its turn ends: its reader starts interrupting, and is held
        assert turns.interrupting.wait(30)
        turns.finish["A"].set()  # A's turn ends meanwhile
        b = caller("B")  # the next caller's turn on the same conversation
        deadline = time.monotonic() + 3  # time for B's turn to begin, if anything lets it
        while turns.current != "B" and time.monotonic() < deadline:
            time.sleep(0.02)
        turns.let_go.set()
        deadline = time.monotonic() + 30
        while not turns.found and time.monotonic() < deadline:
            time.sleep(0.02)
        assert turns.found and turns.found[0] != "B", turns.found  # A's leaving stopped A's turn or nothing
        assert b'"turn":"B"' in past_beats(b)  # and B's turn went on
        turns.finish["B"].set()
    finally:
        for event in (*turns.finish.values(), turns.let_go):
            event.set()
        for conn in callers:
            conn.close()
        host.close()
        import shutil

        shutil.rmtree(base, ignore_errors=True)
