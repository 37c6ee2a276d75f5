"""No hang, no loss, no orphan: a stand-in CLI (a Python script speaking the stdio protocol) that
misbehaves in ways the real CLI cannot be made to on demand: stops reading, gets SIGSTOPped,
closes its output and lives on, leaves a process holding its stdout, writes a broken line and
ignores SIGTERM. Each case: a typed error or a clean end within 2 s, nothing left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import (
    ClaudeAgentOptions,
    ClaudeClient,
    CLIJSONDecodeError,
    ClaudeSDKError,
    ControlRequestTimeoutError,
    ProcessError,
    ReceiveTimeoutError,
    ResultMessage,
    query,
)

from claude_sdkurl.testing import MockTransport

from .conftest import child_pids
from .servers import alive

FAKE_CLI = r'''#!{python}
import json, os, signal, subprocess, sys, time
if "--version" in sys.argv:
    print("2.1.330 (Claude Code)")
    sys.exit(0)
mode = os.environ["FAKE_MODE"]
with open(os.environ["FAKE_PIDFILE"], "a") as f:
    f.write(f"{{os.getpid()}}\n")
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # only SIGKILL ends this one

def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()

def turn(text):
    out({{"type": "system", "subtype": "init", "session_id": "s", "uuid": os.urandom(8).hex()}})
    out({{"type": "assistant", "message": {{"model": "m", "content": [{{"type": "text", "text": text}}]}}, "session_id": "s", "uuid": os.urandom(8).hex()}})
    out({{"type": "result", "subtype": "success", "duration_ms": 1, "duration_api_ms": 1, "is_error": False, "num_turns": 1, "session_id": "s", "result": text, "uuid": os.urandom(8).hex()}})

for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "control_request" and msg["request"]["subtype"] == "initialize":
        out({{"type": "control_response", "response": {{"subtype": "success", "request_id": msg["request_id"], "response": {{}}}}}})
        if mode == "stop_reading":
            time.sleep(600)
        continue
    if msg["type"] != "user":
        continue
    if mode == "broken_line":
        sys.stdout.write("{{not json\n")
        sys.stdout.flush()
        time.sleep(600)
    if mode == "close_stdout":
        os.close(1)
        time.sleep(600)
    if mode == "grandchild":
        subprocess.Popen(["sleep", "600"])  # inherits stdout
        turn("done")
        sys.exit(0)
    if mode == "silent":
        time.sleep(600)
    turn("pong")
if mode == "linger":  # input closed, the turn done: stays alive and says nothing
    time.sleep(600)
'''


@pytest.fixture
def fake(tmp_path: Path) -> Any:
    script = tmp_path / "claude"
    script.write_text(FAKE_CLI.format(python=sys.executable))
    script.chmod(0o755)
    pidfile = tmp_path / "pids"

    def options(mode: str, **kw: Any) -> ClaudeAgentOptions:
        env = {"FAKE_MODE": mode, "FAKE_PIDFILE": str(pidfile)}
        return ClaudeAgentOptions(cli_path=str(script), env=env, transport="stdio", **kw)

    options.pids = lambda: [int(p) for p in pidfile.read_text().split()] if pidfile.exists() else []  # type: ignore[attr-defined]
    return options


def test_cli_that_stops_reading_blocks_nothing(fake: Any) -> None:
    """Regression: a large query() blocked in its write holding the lock that interrupt() and
    disconnect() needed: all three hung."""
    client = ClaudeClient(fake("stop_reading", control_timeout=1.0))
    client.connect()
    t0 = time.monotonic()
    client.query("x" * (20 * 1024 * 1024))  # far more than a pipe holds
    assert time.monotonic() - t0 < 1.0
    with pytest.raises(ControlRequestTimeoutError):
        client.interrupt()
    assert time.monotonic() - t0 < 2.5
    t1 = time.monotonic()
    client.disconnect()
    assert time.monotonic() - t1 < 2.5
    assert not any(alive(p) for p in fake.pids())


def test_sigstopped_cli_timeouts_and_a_fast_disconnect(fake: Any) -> None:
    client = ClaudeClient(fake("silent"))
    client.connect()
    [pid] = fake.pids()
    os.kill(pid, signal.SIGSTOP)
    client.query("anyone?")
    t0 = time.monotonic()
    with pytest.raises(ReceiveTimeoutError):
        list(client.receive_response(timeout=0.5))
    assert time.monotonic() - t0 < 1.5
    t1 = time.monotonic()
    client.disconnect()  # a stopped process ignores SIGTERM: SIGKILL at once
    assert time.monotonic() - t1 < 1.5
    assert not alive(pid)


def test_query_timeout_stops_a_silent_cli(fake: Any) -> None:
    t0 = time.monotonic()
    with pytest.raises(ReceiveTimeoutError):
        list(query("anyone?", fake("silent"), timeout=0.5))
    assert time.monotonic() - t0 < 3.0  # the timeout, a bounded interrupt, the stop
    assert not any(alive(p) for p in fake.pids())


def test_a_cli_that_lingers_after_its_last_message_is_stopped_after_the_grace(fake: Any) -> None:
    """Input closed, every result in, and the CLI neither exits nor writes: after the
    official 5 s grace it is stopped and the iteration ends normally (it waited forever)."""
    t0 = time.monotonic()
    messages = list(query("hi", fake("linger")))
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "pong"
    assert 4.5 < time.monotonic() - t0 < 9
    assert not any(alive(p) for p in fake.pids())


def test_cli_that_closes_its_output_but_lives(fake: Any) -> None:
    t0 = time.monotonic()
    with pytest.raises(ProcessError) as info:
        list(query("hi", fake("close_stdout")))
    assert "closed its output but did not exit" in str(info.value)
    assert time.monotonic() - t0 < 2.5
    assert not any(alive(p) for p in fake.pids())


def test_process_left_holding_stdout_does_not_hang_the_session(fake: Any) -> None:
    t0 = time.monotonic()
    messages = list(query("hi", fake("grandchild")))
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "done"
    assert time.monotonic() - t0 < 3.0
    assert child_pids() == []  # the CLI reaped; the sleep it left was stopped with its group


def test_broken_line_is_an_error_at_once_and_the_cli_is_gone(fake: Any) -> None:
    t0 = time.monotonic()
    with pytest.raises(CLIJSONDecodeError):
        list(query("hi", fake("broken_line")))
    assert time.monotonic() - t0 < 2.0
    assert not any(alive(p) for p in fake.pids())


def test_no_orphan_when_the_program_exits_right_after_the_error(fake: Any, tmp_path: Path) -> None:
    """Regression: the CLI was stopped on a daemon thread that lost the race with interpreter
    exit (1-2 runs in 8 left it running)."""
    options = fake("broken_line")
    program = textwrap.dedent(
        f"""
        from claude_sdkurl import ClaudeAgentOptions, ClaudeClient, CLIJSONDecodeError
        client = ClaudeClient(ClaudeAgentOptions(cli_path={str(options.cli_path)!r}, env={options.env!r}, transport="stdio"))
        client.connect()
        client.query("hi")
        try:
            for m in client.receive_messages():
                pass
        except CLIJSONDecodeError:
            print("typed error")
        # no disconnect(): the program just ends
        """
    )
    for _ in range(4):
        out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=30)
        assert "typed error" in out.stdout, out.stderr
    time.sleep(0.2)
    assert fake.pids() and not any(alive(p) for p in fake.pids())


def test_errors_are_claude_sdk_errors() -> None:
    """``except`` clauses written for the official hierarchy catch ours, every error of ours is
    a ClaudeSDKError, and a timeout really raised is caught both ways."""
    import claude_agent_sdk as official

    import claude_sdkurl

    compared = []
    for name in official.__all__:
        theirs = getattr(official, name)
        if isinstance(theirs, type) and issubclass(theirs, BaseException):
            ours = [c.__name__ for c in getattr(claude_sdkurl, name).__mro__]
            assert [c for c in ours if c in {k.__name__ for k in theirs.__mro__}] == [k.__name__ for k in theirs.__mro__], name
            compared.append(name)
    assert {"ClaudeSDKError", "CLIConnectionError", "CLINotFoundError", "ProcessError", "ResultError", "CLIJSONDecodeError"} <= set(compared)
    for name in claude_sdkurl.__all__:
        cls = getattr(claude_sdkurl, name)
        if isinstance(cls, type) and issubclass(cls, Exception) and not issubclass(cls, Warning):
            assert issubclass(cls, ClaudeSDKError), name

    # busy with the turn, as a real CLI whose input is closed goes on until the turn's end
    silent = MockTransport(lambda message, cli: time.sleep(1.0) if message["type"] == "user" else None)
    with pytest.raises(TimeoutError) as raised:
        list(query("hi", ClaudeAgentOptions(), transport=silent, timeout=0.3))
    assert isinstance(raised.value, ReceiveTimeoutError) and isinstance(raised.value, ClaudeSDKError)


def test_ctrl_c_with_a_stopped_cli_returns_quickly(fake: Any, control_calls: list[tuple[str, str]], ctrl_c: None) -> None:
    """Regression: Ctrl-C took 7-9 s on a stopped CLI (SIGTERM ignored, 5 s + 3 s before SIGKILL).
    The input is closed after the prompt (no callbacks), so the interrupt is SIGINT, which a
    stopped CLI does not act on: given up at its own bound (1 s), then SIGKILL."""
    import threading

    options = fake("silent")

    def stop_then_ctrl_c() -> None:
        deadline = time.monotonic() + 5
        while not fake.pids() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)  # the prompt is out
        os.kill(fake.pids()[0], signal.SIGSTOP)
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C

    t0 = time.monotonic()
    timer = threading.Thread(target=stop_then_ctrl_c)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        for _ in query("hi", options):
            pass
    timer.join()
    assert time.monotonic() - t0 < 3.0
    assert control_calls == [("initialize", "answered")]  # nothing more could be sent
    assert not any(alive(p) for p in fake.pids())


def test_a_cli_that_does_not_know_a_flag_names_the_option(tmp_path: Path) -> None:
    """A CLI too old for a flag an option needs (here: one without --session-mirror) refuses it
    as commander does; the user gets UnsupportedOptionError naming the option, not exit code 1."""
    from claude_sdkurl import InMemorySessionStore, UnsupportedOptionError

    old = tmp_path / "claude"
    old.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" --version "*) echo "2.1.200 (Claude Code)"; exit 0;; esac\n'
        'case " $* " in *" --session-mirror "*) echo "error: unknown option \'--session-mirror\'" >&2; exit 1;; esac\n'
        "exit 3\n"
    )
    old.chmod(0o755)
    started = time.monotonic()
    with pytest.raises(UnsupportedOptionError, match=r"does not know --session-mirror, which ClaudeAgentOptions.session_store needs"):
        list(query("hi", ClaudeAgentOptions(cli_path=str(old), session_store=InMemorySessionStore())))
    assert time.monotonic() - started < 5
    with pytest.raises(ProcessError) as failed:  # without the flag it is an ordinary failed CLI
        list(query("hi", ClaudeAgentOptions(cli_path=str(old))))
    # The official text, which programs match on (the stderr part is the CLI's real tail here).
    assert str(failed.value).startswith("Command failed with exit code 3 (exit code: 3)")
    assert failed.value.exit_code == 3


FAKE_WS_CLI = r'''#!{python}
import json, os, signal, sys, time
if "--version" in sys.argv:
    print("2.1.120 (Claude Code)")
    sys.exit(0)
from websockets.sync.client import connect
with open(os.environ["FAKE_PIDFILE"], "a") as f:
    f.write(f"{{os.getpid()}}\n")
signal.signal(signal.SIGTERM, signal.SIG_IGN)
url = sys.argv[sys.argv.index("--sdk-url") + 1]
token = os.read(int(os.environ["CLAUDE_CODE_WEBSOCKET_AUTH_FILE_DESCRIPTOR"]), 4096).decode()
ws = connect(url, additional_headers={{"Authorization": f"Bearer {{token}}"}})
for raw in ws:
    for line in raw.splitlines():
        msg = json.loads(line)
        if msg["type"] == "control_request" and msg["request"]["subtype"] == "initialize":
            ws.send(json.dumps({{"type": "control_response", "response": {{"subtype": "success", "request_id": msg["request_id"], "response": {{}}}}}}) + "\n")
        elif msg["type"] == "user":
            ws.close(1000, "bye")  # a normal close mid-turn, and never a reconnect
            time.sleep(600)
'''


def test_a_websocket_cli_that_goes_away_alive_is_a_typed_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI closes its WebSocket normally mid-turn, stays alive and never reconnects: after
    the reconnect wait a CLIConnectionError, and the CLI stopped (it waited forever)."""
    from claude_sdkurl import CLIConnectionError
    from claude_sdkurl._engine.transport import websocket

    monkeypatch.setattr(websocket, "RECONNECT_WAIT", 2.0)  # the real 10 s, shortened for the test
    script = tmp_path / "claude"
    script.write_text(FAKE_WS_CLI.format(python=sys.executable))
    script.chmod(0o755)
    pidfile = tmp_path / "pids"
    options = ClaudeAgentOptions(cli_path=str(script), env={"FAKE_PIDFILE": str(pidfile)}, transport="websocket")
    t0 = time.monotonic()
    with pytest.raises(CLIConnectionError, match="did not reconnect within 2 s"):
        list(query("hi", options))
    assert 1.9 < time.monotonic() - t0 < 6
    assert not any(alive(int(p)) for p in pidfile.read_text().split())


def test_a_turn_a_background_notice_wakes_is_waited_for_past_the_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI gives a result, its input closed, then runs the turn a background task's notice
    woke: under two CPU burners 2.1.332 began it more than the 5 s grace later, and the query
    stopped the CLI with one result of two. While such a turn is to come, the CLI is read until
    it exits (as the official SDK); a silent CLI with no such turn is still stopped at the grace."""
    import sys
    import uuid

    from claude_sdkurl import TaskNotificationMessage

    monkeypatch.setattr(sys.modules["claude_sdkurl.query"], "EXIT_GRACE", 0.5)

    def cli(message: dict[str, Any], fake: Any) -> None:
        if message["type"] != "user":
            return
        # as 2.1.332 wrote it: the turn's init, the task's notice (it ended first), the result,
        # then, silent for a while, the woken turn
        fake.emit({"type": "system", "subtype": "init", "session_id": fake.session_id, "uuid": str(uuid.uuid4())})
        fake.emit({"type": "system", "subtype": "task_notification", "task_id": "t1", "status": "completed",
                   "output_file": "/tmp/t1.output", "summary": "done", "session_id": fake.session_id, "uuid": str(uuid.uuid4())})  # fmt: skip
        fake.result("started it")
        time.sleep(1.5)  # silent for three graces
        fake.turn("it finished")

    messages = list(query("go", transport=MockTransport(cli)))
    assert any(isinstance(m, TaskNotificationMessage) for m in messages)
    assert [m.result for m in messages if isinstance(m, ResultMessage)] == ["started it", "it finished"]
