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
        assert got == [(False, None)]
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
