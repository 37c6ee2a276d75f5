"""Every bound of a turn holds through the session host (issue 68), without the real CLI: a
stand-in CLI (tests/host_standin.py) under a real host (in this process, or as its own process
where it is to be frozen). A send's ``timeout`` while another worker's turn is stuck on its own
question; a question its caller never answers (the host's answer timeout); a turn busier than
the caller's silence bound (the host's heartbeats) and a frozen host (a typed error, not a hang);
every error a turn raises reaches the caller as its own type. The real CLI's path:
tests/test_realcli_host.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import (
    ClaudeSDKError,
    Conversations,
    PermissionResultAllow,
    PermissionResultDeny,
    ProcessError,
    ResultMessage,
    _errors,
)
from claude_sdkurl.conversations import ConversationBusyError, ConversationLeaseLost, ConversationStoreError
from claude_sdkurl.host import HostError, HostGoneError, SessionHost, _client, _server, _wire

from .host_standin import HostProcess, options_for, ran, standin


@pytest.fixture
def base() -> Iterator[Path]:
    """A folder under /tmp (a socket's path is at most 107 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="claude-sdkurl-bounds-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def setup(base: Path) -> dict[str, Any]:
    return standin(base)


@pytest.fixture
def serving(base: Path) -> Iterator[Any]:
    """``serving(**kw)``: a host in this process at ``base/h/host.sock``, closed at the end."""
    hosts: list[SessionHost] = []

    def start(**kw: Any) -> SessionHost:
        hosts.append(SessionHost(base / "h" / "host.sock", **kw))
        return hosts[-1]

    yield start
    for host in hosts:
        host.close()


class Blocked:
    """A ``can_use_tool`` that says it was asked, then waits until let go (or 60 s), then allows."""

    def __init__(self) -> None:
        self.asked, self.go = threading.Event(), threading.Event()

    def __call__(self, tool_name: str, tool_input: dict[str, Any], context: object) -> object:
        self.asked.set()
        self.go.wait(60)
        return PermissionResultAllow()


def in_thread(work: Any) -> tuple[threading.Thread, list[Any]]:
    """``work()`` on a thread: ``[("ok", value, seconds)]`` or ``[("raised", error, seconds)]`` once done."""
    out: list[Any] = []

    def run() -> None:
        began = time.monotonic()
        try:
            out.append(("ok", work(), time.monotonic() - began))
        except BaseException as e:  # noqa: BLE001 - the test reads it
            out.append(("raised", e, time.monotonic() - began))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def result_of(chats: Conversations, key: str, prompt: str, **kw: Any) -> str:
    return str([m for m in chats.send(key, prompt, **kw) if isinstance(m, ResultMessage)][-1].result)


# ---------------------------------------------------------------------- a send's timeout


def test_a_send_waits_for_another_workers_stuck_turn_no_longer_than_its_timeout(setup: dict[str, Any], serving: Any) -> None:
    """Worker A's turn waits on A's own ``can_use_tool``; B's sends on the same conversation
    raise ``ConversationBusyError`` at their deadline (0 and a negative one at once, none after
    the host's ``lease_wait``), nothing of B's reaches the CLI; once A answers, B goes on."""
    host = serving(lease_wait=6.0)
    blocked = Blocked()
    a = Conversations(options_for(setup, can_use_tool=blocked), host=host.path)
    b = Conversations(options_for(setup), host=host.path)
    turn_a, got_a = in_thread(lambda: result_of(a, "k", "ask"))
    try:
        assert blocked.asked.wait(60)
        for timeout, at_most in ((1.0, 5.0), (0, 5.0), (-5, 5.0), (None, 30.0)):  # (5: the send's 1 s, not the host's 6)
            thread, got = in_thread(lambda: result_of(b, "k", "from B", timeout=timeout))
            thread.join(at_most + 30)  # (a wait that ignored the deadline fails here, not hangs the suite)
            assert got, f"timeout={timeout}: B's send had no answer after {at_most + 30:g} s"
            kind, error, took = got[0]
            print(f"timeout={timeout}: {type(error).__name__} after {took:.2f} s")
            assert kind == "raised" and isinstance(error, ConversationBusyError), got
            assert "busy with another worker's turn" in str(error) and "nothing was sent" in str(error)
            expected = {1.0: 1.0, 0: 0.0, -5: 0.0, None: 6.0}[timeout]
            assert expected - 0.05 <= took < at_most, (timeout, took)
        assert [p for _, _, p in ran(setup)] == ["ask"]  # nothing of B's ran
    finally:
        blocked.go.set()
        turn_a.join(60)
    assert got_a and got_a[0][0] == "ok", got_a
    assert json.loads(got_a[0][1])["behavior"] == "allow"
    assert result_of(b, "k", "from B", timeout=30) == "ask | from B"


def test_in_process_a_second_thread_waits_for_a_stuck_turn_no_longer_than_its_timeout(setup: dict[str, Any]) -> None:
    """The same bound in-process, two threads of one ``Conversations``: it held only between
    processes (the lease), a thread of the same object waited for ever."""
    blocked = Blocked()
    with Conversations(options_for(setup, can_use_tool=blocked), lease_wait=6.0) as chats:
        turn_a, got_a = in_thread(lambda: result_of(chats, "k", "ask"))
        try:
            assert blocked.asked.wait(60)
            for timeout, expected, at_most in ((1.0, 1.0, 5.0), (-1, 0.0, 5.0), (None, 6.0, 30.0)):
                thread, got = in_thread(lambda: result_of(chats, "k", "again", timeout=timeout))
                thread.join(60)
                assert got and got[0][0] == "raised" and isinstance(got[0][1], ConversationBusyError), got
                assert expected - 0.05 <= got[0][2] < at_most, got
        finally:
            blocked.go.set()
            turn_a.join(60)
        assert got_a and got_a[0][0] == "ok", got_a
        assert result_of(chats, "k", "again") == "ask | again"


# ---------------------------------------------------------------------- a question nobody answers


def test_a_question_its_caller_never_answers_is_denied_after_the_answer_timeout(setup: dict[str, Any], serving: Any) -> None:
    """The caller's ``can_use_tool`` blocks: after the host's ``answer_timeout`` the CLI is told
    a deny with the reason (the model sees it); the caller's late allow is dropped."""
    host = serving(answer_timeout=1.0)
    blocked = Blocked()
    chats = Conversations(options_for(setup, can_use_tool=blocked), host=host.path)
    thread, got = in_thread(lambda: result_of(chats, "k", "ask"))
    try:
        assert blocked.asked.wait(60)
        deadline = time.monotonic() + 30
        while not host._turns and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(3)  # past the answer timeout: the CLI has its deny, while the callback still blocks
    finally:
        blocked.go.set()  # (it allows now: too late)
        thread.join(60)
    assert got and got[0][0] == "ok", got
    decided = json.loads(got[0][1])
    assert decided == {"behavior": "deny", "message": _server.late(1.0)}, decided
    assert "did not answer within 1 s" in decided["message"]


def test_each_kind_of_question_unanswered_in_time_is_answered_for_its_caller(serving: Any) -> None:
    """Under the answer timeout, as for a caller gone, each with the reason: ``can_use_tool`` a
    deny, a ``PreToolUse`` hook a deny, another hook no opinion, an MCP request an error, an MCP
    notification nothing."""
    host = serving(answer_timeout=0.3)
    ours, theirs = socket.socketpair()
    caller = _server._Caller(ours)
    where = ("", "k")
    host._callers[where] = caller
    def bounded(work: Any) -> Any:  # (a question that waits for ever fails the test, not hangs it)
        thread, got = in_thread(work)
        thread.join(30)
        assert got and got[0][0] == "ok", got
        return got[0][1]

    try:
        reason = _server.late(0.3)
        denied = bounded(lambda: host._router(where)("Bash", {}, _server.ToolPermissionContext()))
        assert isinstance(denied, PermissionResultDeny) and denied.message == reason
        hooks = host._hooks(where, {"PreToolUse": [{"matcher": None, "hooks": 1}], "PostToolUse": [{"matcher": None, "hooks": 1}]})
        pre = bounded(lambda: hooks["PreToolUse"][0].hooks[0]({}, None, {}))
        assert pre["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert pre["hookSpecificOutput"]["permissionDecisionReason"] == reason
        assert bounded(lambda: hooks["PostToolUse"][0].hooks[0]({}, None, {})) == {}
        server = _server._AskedServer(host, where, "calc")
        assert bounded(lambda: server.handle({"jsonrpc": "2.0", "id": 7, "method": "tools/list"})) == {
            "jsonrpc": "2.0", "id": 7, "error": {"code": -32000, "message": reason}}  # fmt: skip
        assert bounded(lambda: server.handle({"jsonrpc": "2.0", "method": "notifications/initialized"})) is None
        asked = theirs.recv(1 << 16).decode()
        assert asked.count('"op":"ask"') == 1 and asked.count('"op":"hook"') == 2  # each was put to the caller first
    finally:
        del host._callers[where]
        ours.close()
        theirs.close()


def test_the_answer_timeout_is_the_deployers_and_nonsense_is_refused(base: Path) -> None:
    """``serve(answer_timeout=)`` and ``--answer-timeout``: a documented default of 300 s, ``None``
    to wait; zero, a negative, a bool or a string refused before anything listens."""
    with SessionHost(base / "a" / "host.sock") as host:
        assert host.answer_timeout == _server.ANSWER_TIMEOUT == 300.0
    with SessionHost(base / "a" / "host.sock", answer_timeout=None) as host:
        assert host.answer_timeout is None
    for bad in (0, -1, True, "10"):
        with pytest.raises(ValueError, match="answer_timeout"):
            SessionHost(base / "b" / "host.sock", answer_timeout=bad)
        assert not (base / "b" / "host.sock").exists()
    ran_ = subprocess.run([sys.executable, "-m", "claude_sdkurl.host", "--socket", str(base / "c" / "host.sock"), "--answer-timeout", "-1"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert ran_.returncode == 2 and "answer_timeout" in ran_.stderr


# ---------------------------------------------------------------------- heartbeats, a frozen host


def test_a_turn_busier_than_the_silence_bound_is_not_taken_for_a_dead_host(setup: dict[str, Any], serving: Any,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A tool call three times as long as the caller's silence bound: the host's heartbeats say it
    is alive; the turn ends with its result."""
    monkeypatch.setattr(_client, "SILENCE", 1.0)
    monkeypatch.setattr(_server, "HEARTBEAT", 0.2)
    host = serving()
    chats = Conversations(options_for(setup), host=host.path)
    assert result_of(chats, "k", "slow 3") == "done"
    blocked = Blocked()  # and a request that waits (hibernate waits for the turn under way) is beaten for too
    asking = Conversations(options_for(setup, can_use_tool=blocked), host=host.path)
    thread, _ = in_thread(lambda: result_of(asking, "k2", "ask"))
    try:
        assert blocked.asked.wait(60)
        threading.Timer(2.5, blocked.go.set).start()
        chats.hibernate("k2")
    finally:
        blocked.go.set()
        thread.join(60)


@pytest.fixture
def frozen_host(base: Path) -> Iterator[HostProcess]:
    host = HostProcess(base / "f" / "host.sock")
    yield host
    host.stop()


def test_a_frozen_host_is_a_typed_error_within_the_silence_bound(setup: dict[str, Any], frozen_host: HostProcess, base: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The host SIGSTOPped mid-turn (a long tool call under way) and between turns: the turn, a
    new send (with and without a timeout of its own) and a question to the host each raise
    ``HostGoneError`` once the host has been silent for the bound; never a hang."""
    monkeypatch.setattr(_client, "SILENCE", 3.0)
    chats = Conversations(options_for(setup), host=base / "f" / "host.sock")
    assert result_of(chats, "k", "hello") == "hello"
    turn = chats.send("k", "slow 120")
    assert [b.text for b in next(m for m in turn if type(m).__name__ == "AssistantMessage").content] == ["working"]  # type: ignore[attr-defined]
    os.kill(frozen_host.proc.pid, signal.SIGSTOP)
    cases = {"mid-turn": lambda: list(turn), "a new send": lambda: result_of(chats, "k", "again"),
             "a send with its own timeout": lambda: result_of(chats, "k", "again", timeout=60),
             "a question": lambda: chats.live()}  # fmt: skip
    running = {name: in_thread(work) for name, work in cases.items()}  # (all at once: each waits out the bound)
    for name, (thread, got) in running.items():
        thread.join(60)
        assert got, f"{name}: no answer after 60 s"
        kind, error, took = got[0]
        print(f"{name}: {type(error).__name__} after {took:.2f} s")
        assert kind == "raised" and isinstance(error, HostGoneError), got
        assert "sent nothing for 3 s" in str(error)
        assert 2.9 <= took < 30


# ---------------------------------------------------------------------- error types


def samples() -> list[BaseException]:
    """One error of each type a turn can raise in-process, with attributes set."""
    made: list[BaseException] = [
        ValueError("bad", 3), TypeError("worse"), RuntimeError("these conversations are closed"), TimeoutError("late"),
        RuntimeError("wrapped", ValueError("inner")),  # an exception among the arguments
        ConversationBusyError("held"), ConversationLeaseLost("taken"), ConversationStoreError("down"),
        HostError("refused"),
        _errors.ClaudeSDKError("base"), _errors.CLIConnectionError("no"), _errors.CLINotFoundError("Claude Code not found", "/x/claude"),
        _errors.TransportNotSupportedError("no ws", transport="websocket", cli_version="2.1.330", cli_message="unknown option"),
        _errors.ProcessError("Command failed", exit_code=3, stderr="broken"),
        _errors.ExitedBeforeConnectingError("exited", exit_code=1, stderr="bad resume"),
        _errors.ResultError.from_result({"subtype": "error_max_turns", "is_error": True, "errors": ["too many"], "session_id": "s"}, 1),
        _errors.CLIJSONDecodeError("{not json", ValueError("Expecting value")),
        _errors.MessageParseError("wrong shape", {"type": "x"}),
        _errors.ControlRequestError("set_model", "nope"),
        _errors.UnsupportedControlRequestError("rewind_files", "Unsupported control request subtype", "2.1.120"),
        _errors.ControlRequestTimeoutError("interrupt", 30.0), _errors.ReceiveTimeoutError(20.0),
        _errors.UnsupportedOptionError("no such thing"), _errors.SessionStoreError("store down"),
        _errors.NotAsyncError("query() is not awaitable: write for message in query(...)"),
        _errors.ResumeNotFoundError("Claude Code returned an error result: No conversation found with session ID: s",
                                    data={"type": "result", "subtype": "error_during_execution", "is_error": True, "session_id": "s",
                                          "errors": ["No conversation found with session ID: s"]}, exit_code=1),
    ]  # fmt: skip
    made[-1].stderr = "No conversation found with session ID: s\n"  # type: ignore[attr-defined]
    return made


def same(a: BaseException, b: BaseException) -> None:
    assert type(a) is type(b) and str(a) == str(b) and len(a.args) == len(b.args), (a, b)
    for mine, theirs in zip(a.args, b.args):  # an exception among the arguments arrives as that exception
        if isinstance(mine, BaseException):
            same(mine, theirs)
        else:
            assert theirs == mine, (type(a).__name__, a.args, b.args)
    for name, value in vars(a).items():
        other = getattr(b, name)
        if isinstance(value, BaseException):
            same(value, other)
        else:
            assert other == value, (type(a).__name__, name, other, value)


def test_every_error_a_turn_raises_is_raised_in_the_caller_as_its_own_type() -> None:
    conversations = {e.__name__: e for e in (ConversationBusyError, ConversationLeaseLost, ConversationStoreError)}
    listed = set(_wire.error_types()) | set(conversations)
    every = {name for name, kind in vars(_errors).items() if isinstance(kind, type) and issubclass(kind, ClaudeSDKError)}
    assert every <= listed and {type(e).__name__ for e in samples()} >= every  # (a new error type must be sampled here)
    for error in samples():
        frame = json.loads(_wire.line(_wire.encode_error(error)))  # as it travels
        back = _wire.decode_error(frame, conversations)
        same(error, back)
    unknown = _wire.decode_error(json.loads(_wire.line(_wire.encode_error(KeyError("x")))), conversations)
    assert type(unknown) is HostError and str(unknown) == "KeyError: 'x' (in the session host)"
    class Odd(ValueError):  # noqa: E306 - a type of nobody's registry: a HostError that names it
        pass
    assert type(_wire.decode_error(_wire.encode_error(Odd("o")))) is HostError
    forged = _wire.decode_error({"op": "error", "type": "ProcessError", "message": "m", "args": ["m"], "attrs": {"__class__": 1, "_x": 2}})
    assert type(forged) is ProcessError and not hasattr(forged, "_x")


def test_a_cli_that_fails_mid_turn_is_the_same_error_through_the_host_as_in_process(setup: dict[str, Any], serving: Any) -> None:
    """The stand-in CLI exits 3 mid-turn: in-process and through the host, the same type, text
    and attributes (it was ``HostError("ProcessError: ...")``)."""
    with Conversations(options_for(setup)) as here:
        with pytest.raises(ClaudeSDKError) as in_process:
            result_of(here, "k", "exit")
    host = serving()
    with pytest.raises(ClaudeSDKError) as hosted:
        result_of(Conversations(options_for(setup), host=host.path), "k2", "exit")
    print(f"in-process {type(in_process.value).__name__}: {in_process.value}")
    assert type(hosted.value) is type(in_process.value) and not isinstance(hosted.value, HostError)
    assert str(hosted.value) == str(in_process.value)
    assert {k: v for k, v in vars(hosted.value).items()} == {k: v for k, v in vars(in_process.value).items()}
