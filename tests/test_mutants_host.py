"""The session host's wire (``host/_wire.py``) line by line, for what mutation testing found
unpinned (``tools/mutation_score.py --area host``): the frame reader's bound (it never reads
past one line more than it allows), errors that travel with their type, arguments and
attributes, options that travel or are refused by name, and permission answers both ways.
No CLI, no host: frames read from bytes."""

from __future__ import annotations

import io
import json

import pytest

from claude_sdkurl import _errors
from claude_sdkurl.host import _wire
from claude_sdkurl.host._wire import (CALLBACK_ERROR, HostError, HostGoneError, HostOptionError, HostUnreachableError, decode_error,
                                      decode_options, decode_result, encode_error, encode_options, encode_result, line,
                                      read_frame)  # fmt: skip
from claude_sdkurl.types import ClaudeAgentOptions, HookMatcher, PermissionResultAllow, PermissionResultDeny, PermissionUpdate


class Reader:
    """A reader that keeps the sizes it was asked for."""

    def __init__(self, data: bytes) -> None:
        self.inner, self.asked = io.BytesIO(data), []

    def readline(self, size: int = -1) -> bytes:
        self.asked.append(size)
        return self.inner.readline(size)


def test_the_reader_asks_for_one_byte_past_the_bound_and_refuses_a_longer_line(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _wire.MAX_LINE == 64 * 1024 * 1024
    monkeypatch.setattr(_wire, "MAX_LINE", 10)
    reader = Reader(b'{"a":12}\n' + b"x" * 50)
    assert read_frame(reader) == {"a": 12}
    with pytest.raises(HostError, match="longer than the host reads"):
        read_frame(reader)
    assert reader.asked == [11, 11] and reader.inner.tell() == 9 + 11  # never more than the bound and one byte
    assert read_frame(Reader(b'{"a":123}\n')) == {"a": 123}  # ten bytes with the newline: the longest allowed
    with pytest.raises(HostError, match="longer"):
        read_frame(Reader(b'{"a":1234}\n'))  # eleven
    assert read_frame(Reader(b'{"a":1')) is None  # cut short: the other side went away
    assert read_frame(Reader(b"")) is None
    for data, why in ((b"nope\n", "not JSON"), (b"[1]\n", "not a JSON object"), (b'"s"\n', "not a JSON object")):
        with pytest.raises(HostError, match=why):
            read_frame(Reader(data))


def test_a_frame_is_one_compact_json_line() -> None:
    assert line({"op": "end", "n": [1, 2]}) == b'{"op":"end","n":[1,2]}\n'
    assert read_frame(Reader(line({"op": "é"}))) == {"op": "é"}


def test_an_error_travels_with_its_type_arguments_and_attributes() -> None:
    error = _errors.ProcessError("the CLI failed", exit_code=3, stderr="boom")
    frame = encode_error(error)
    assert frame["op"] == "error" and frame["type"] == "ProcessError" and frame["message"] == str(error)
    again = decode_error(json.loads(json.dumps(frame)))
    assert type(again) is _errors.ProcessError and again.args == error.args
    assert again.exit_code == 3 and again.stderr == "boom"
    inner = ValueError("inner")
    outer = RuntimeError("outer", inner)
    back = decode_error(json.loads(json.dumps(encode_error(outer))))
    assert type(back) is RuntimeError and back.args[0] == "outer" and type(back.args[1]) is ValueError and back.args[1].args == ("inner",)
    odd = RuntimeError("x", object())  # an argument that is no JSON: the text alone travels
    assert encode_error(odd)["args"] == [str(odd)]
    odd.note, odd._private, odd.thing = "kept", "dropped", object()
    assert encode_error(odd)["attrs"] == {"note": "kept"}
    assert str(decode_error({"type": "KeyError", "message": "k"})) == "KeyError: k (in the session host)"
    assert isinstance(decode_error({"type": "KeyError", "message": "k"}), HostError)

    class Mine(Exception):
        pass

    assert type(decode_error({"type": "Mine", "message": "m", "args": ["m"]}, {"Mine": Mine})) is Mine
    assert decode_error({"type": "ValueError", "message": "t", "args": "no list"}).args == ("t",)
    made = decode_error({"type": "ValueError", "message": "t", "attrs": {"ok": 1, "_no": 2, "not id": 3, 4: 5}})
    assert made.ok == 1 and not hasattr(made, "_no") and not hasattr(made, "not id")
    assert decode_error({"type": "ValueError", "message": "t", "attrs": ["x"]}).args == ("t",)
    assert decode_error({"type": "ValueError", "args": [{"__error__": "not a frame"}, {"__error__": {}, "x": 1}]}).args == (
        {"__error__": "not a frame"}, {"__error__": {}, "x": 1})
    types = _wire.error_types()
    for kind in (ValueError, TypeError, RuntimeError, TimeoutError, HostError, HostGoneError, HostOptionError, HostUnreachableError,
                 _errors.ClaudeSDKError, _errors.CLIConnectionError):  # fmt: skip
        assert types[kind.__name__] is kind
    assert "KeyError" not in types and "Exception" not in types
    assert issubclass(HostUnreachableError, _errors.CLIConnectionError) and issubclass(HostOptionError, TypeError)
    assert CALLBACK_ERROR == "claude_sdkurl_callback_error"


def test_options_travel_as_what_differs_and_callbacks_are_forwarded_by_name() -> None:
    from pathlib import Path

    def tool(*a):  # noqa: ANN002, ANN202
        return None

    options = ClaudeAgentOptions(cwd=Path("/w"), allowed_tools=("Bash", "Read"), can_use_tool=tool,
                                 hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[tool], timeout=5)]},
                                 mcp_servers={"calc": {"type": "sdk", "name": "calc", "instance": object()},
                                              "web": {"type": "http", "url": "http://x"}})  # fmt: skip
    fields, forward = encode_options(options)
    assert sorted(forward) == ["can_use_tool", "hooks", "mcp_servers"]
    assert fields["cwd"] == "/w" and fields["allowed_tools"] == ["Bash", "Read"]
    assert fields["mcp_servers"] == {"calc": {"type": "sdk", "name": "calc"}, "web": {"type": "http", "url": "http://x"}}
    assert "can_use_tool" not in fields and fields["hooks"]["PreToolUse"][0]["matcher"] == "Bash"
    assert encode_options(ClaudeAgentOptions()) == ({}, [])
    assert encode_options(ClaudeAgentOptions(mcp_servers={"web": {"type": "http", "url": "u"}})) == (
        {"mcp_servers": {"web": {"type": "http", "url": "u"}}}, [])
    with pytest.raises(HostOptionError, match="options.session_store"):
        encode_options(ClaudeAgentOptions(session_store=object()))  # type: ignore[arg-type]
    with pytest.raises(HostOptionError, match="does not survive JSON"):
        encode_options(ClaudeAgentOptions(env={1: "x"}))  # type: ignore[dict-item]  # the key 1 comes back "1"
    with pytest.raises(HostOptionError, match="dict of event"):
        encode_options(ClaudeAgentOptions(hooks=[1]))  # type: ignore[arg-type]
    back, shape = decode_options(json.loads(json.dumps(fields)))
    assert back.cwd == "/w" and back.allowed_tools == ["Bash", "Read"] and shape == fields["hooks"]
    assert decode_options({}) == (ClaudeAgentOptions(), None)
    with pytest.raises(HostOptionError, match="unknown options: can_use_tool, nope"):
        decode_options({"nope": 1, "can_use_tool": 2})
    with pytest.raises(HostOptionError, match="JSON object"):
        decode_options([])
    with pytest.raises(HostOptionError, match="hooks' shape"):
        decode_options({"hooks": []})
    kept = {"model": "m", "hooks": {}}
    decode_options(kept)
    assert kept == {"model": "m", "hooks": {}}  # the frame is not changed


def test_permission_answers_travel_both_ways_and_anything_else_is_a_deny() -> None:
    update = PermissionUpdate(type="addRules", rules=[], behavior="allow", destination="session")
    allow = PermissionResultAllow(updated_input={"c": 1}, updated_permissions=[update])
    data = encode_result(allow)
    assert data == {"behavior": "allow", "updated_input": {"c": 1}, "updated_permissions": [update.to_dict()]}
    back = decode_result(json.loads(json.dumps(data)))
    assert isinstance(back, PermissionResultAllow) and back.updated_input == {"c": 1}
    assert back.updated_permissions is not None and back.updated_permissions[0].to_dict() == update.to_dict()
    assert encode_result(PermissionResultAllow()) == {"behavior": "allow"}
    assert decode_result({"behavior": "allow", "updated_input": "x", "updated_permissions": "y"}) == PermissionResultAllow()
    assert encode_result(PermissionResultDeny(message="no", interrupt=True)) == {"behavior": "deny", "message": "no", "interrupt": True}
    assert decode_result({"behavior": "deny", "message": "no", "interrupt": True}) == PermissionResultDeny(message="no", interrupt=True)
    assert decode_result({"behavior": "deny", "interrupt": "yes"}) == PermissionResultDeny(message="", interrupt=False)
    assert encode_result("allow") == {"behavior": "deny", "message": "can_use_tool returned str, not a permission result"}
    for data in ({"behavior": "maybe"}, "allow", None):
        assert decode_result(data) == PermissionResultDeny(message="the caller's answer was not a permission result")


# ---------------------------------------------------------------------- the spawner (host/_spawn.py)

import os  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402

from claude_sdkurl.host import _spawn  # noqa: E402


@pytest.fixture
def child():
    """A sleeping child in a process group of its own (stopped in the finalizer)."""
    made = []

    def start(code: str = "import time; time.sleep(60)") -> subprocess.Popen:
        popen = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
        made.append(popen)
        return popen

    yield start
    for popen in made:
        if popen.poll() is None:
            os.killpg(popen.pid, signal.SIGKILL)
        popen.wait(10)


def test_a_spawn_request_is_checked_field_by_field() -> None:
    good = {"command": "claude", "args": ["-p"], "cwd": "/w", "env": {"A": "b"}}
    assert _spawn.checked_request(good) == (["claude", "-p"], "/w", {"A": "b"})
    assert _spawn.checked_request({**good, "cwd": None}) == (["claude", "-p"], None, {"A": "b"})
    for change, why in (({"command": ""}, "without a command"), ({"command": 1}, "without a command"),
                        ({"args": "-p"}, "args"), ({"args": [1]}, "args"), ({"cwd": 3}, "cwd"),
                        ({"env": []}, "env"), ({"env": {"A": 1}}, "env"), ({"env": {1: "a"}}, "env"),
                        ({"command": "cl\0aude"}, "NUL"), ({"args": ["a\0"]}, "NUL"), ({"cwd": "/\0"}, "NUL"),
                        ({"env": {"A\0": "b"}}, "NUL"), ({"env": {"A": "\0"}}, "NUL")):  # fmt: skip
        with pytest.raises(HostError, match=why):
            _spawn.checked_request({**good, **change})


def test_the_start_time_tells_a_process_apart_and_none_for_a_gone_one(child) -> None:
    popen = child()
    started = _spawn._start_time(popen.pid)
    assert started is not None and started.isdigit()
    assert _spawn._start_time(popen.pid) == started
    assert _spawn._start_time(os.getpid()) != started or os.getpid() == popen.pid
    os.kill(popen.pid, signal.SIGKILL)
    deadline = __import__("time").monotonic() + 10
    while _spawn._start_time(popen.pid) is not None and __import__("time").monotonic() < deadline:
        __import__("time").sleep(0.02)  # a zombie until reaped: None already
    assert _spawn._start_time(popen.pid) is None
    popen.wait(10)
    assert _spawn._start_time(2**22 + 12345) is None  # no such process


def hosted(pid: int, started: str | None) -> _spawn.HostedProcess:
    """A HostedProcess whose host is gone (no connection): signals go straight to the CLI."""
    process = _spawn.HostedProcess.__new__(_spawn.HostedProcess)
    process.pid, process._started, process._conn, process.returncode = pid, started, None, None
    process._lock, process._write = threading.Lock(), threading.Lock()
    return process


def test_with_the_host_gone_only_the_process_the_host_started_is_signalled(child) -> None:
    popen = child()
    started = _spawn._start_time(popen.pid)
    hosted(popen.pid, str(int(started) + 1)).terminate()  # the pid reused by another process: left alone
    hosted(popen.pid, None).kill()
    with pytest.raises(subprocess.TimeoutExpired):
        popen.wait(0.3)
    done = hosted(popen.pid, started)
    done.returncode = 0  # it has ended, as far as the caller knows: nothing is sent
    done.kill()
    with pytest.raises(subprocess.TimeoutExpired):
        popen.wait(0.3)
    hosted(popen.pid, started).terminate()
    assert popen.wait(10) == -signal.SIGTERM
    hosted(popen.pid, started).kill()  # gone now: no error


def test_stop_group_terms_then_kills_after_the_grace(child, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_spawn, "STOP_GRACE", 0.3)
    stubborn = child("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)")
    __import__("time").sleep(0.5)
    _spawn.stop_group(stubborn)
    assert stubborn.wait(10) == -signal.SIGKILL
    polite = child()
    _spawn.stop_group(polite)
    assert polite.wait(10) == -signal.SIGTERM
    _spawn.stop_group(polite)  # ended: nothing to do


def test_the_host_takes_exactly_three_pipes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_spawn, "START_TIMEOUT", 0.2)
    opened: list[int] = []

    def pipes(n: int) -> list[int]:
        fds = []
        for _ in range(n):
            r, w = os.pipe()
            opened.extend((r, w))
            fds.append(r)
        return fds

    def pair() -> tuple[socket.socket, socket.socket]:
        return socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)

    try:
        a, b = pair()
        socket.send_fds(a, [b"p"], pipes(3))
        got = _spawn.received_pipes(b)
        assert len(got) == 3
        for fd in got:
            os.close(fd)
        a.close(), b.close()
        for n, why in ((2, "sent 2 descriptors"), (1, "sent 1 descriptors")):
            a, b = pair()
            socket.send_fds(a, [b"p"], pipes(n))
            with pytest.raises(HostError, match=why):
                _spawn.received_pipes(b)
            a.close(), b.close()
        a, b = pair()
        with open(os.devnull) as f:
            socket.send_fds(a, [b"p"], [*pipes(2), f.fileno()])
        with pytest.raises(HostError, match="must be pipes"):
            _spawn.received_pipes(b)
        a.close(), b.close()
        a, b = pair()
        with pytest.raises(HostError, match="sent no pipes"):
            _spawn.received_pipes(b)
        a.close()
        with pytest.raises(HostError, match="went away"):
            _spawn.received_pipes(b)
        b.close()
    finally:
        for fd in opened:
            try:
                os.close(fd)
            except OSError:
                pass
