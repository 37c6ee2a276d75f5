"""CLIs the session host starts for a caller's own query (``host.spawner()``), without the real
CLI: a small Python program stands in for it (the real CLI through the host is in
``tests/test_realcli_host.py``). A real host: in this process (``serve()``) where the test reads
its state, a process of its own where the test kills it.

Hostile first: descriptors that are not three pipes, requests that are not well formed, a signal
aimed at another process, the caller killed while its CLI runs (the CLI and what it started are
stopped), the host closed or killed under a running CLI, no host at all.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from claude_sdkurl import ClaudeAgentOptions, CLIConnectionError, CLINotFoundError, query
from claude_sdkurl.host import HostError, HostSpawner, HostUnreachableError, serve, spawner
from claude_sdkurl.spawn import SpawnOptions

# A stand-in CLI: echoes each input line back upper-cased, says "ready" on stderr, starts a
# child that sleeps (its pid on the first line), exits with the code named in its first argument
# at the end of its input (with "linger" after it, sleeps on instead).
STAND_IN = r"""
import subprocess, sys
child = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print('{"child": %d}' % child.pid, flush=True)
print("ready", file=sys.stderr, flush=True)
for line in sys.stdin:
    sys.stdout.write(line.upper()); sys.stdout.flush()
if sys.argv[2:] == ["linger"]:  # as a CLI mid-turn: the end of its input does not end it
    import time; time.sleep(300)
child.kill(); child.wait()
sys.exit(int(sys.argv[1]))
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except OSError:
        return False


def gone_within(pids: list[int], seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def sock() -> Iterator[Path]:
    import shutil

    base = Path(tempfile.mkdtemp(prefix="claude-sdkurl-spawntest-"))
    yield base / "host" / "host.sock"
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def host(sock: Path) -> Iterator[object]:
    serving = serve(sock)
    yield serving
    serving.close()


def stand_in(code: int = 0, cwd: str | None = None) -> SpawnOptions:
    return SpawnOptions(sys.executable, ["-c", STAND_IN, str(code)], cwd, dict(os.environ), {})


def raw_spawn(sock: Path, request: dict[str, object]) -> tuple[socket.socket, dict[str, object]]:
    conn = socket.socket(socket.AF_UNIX)
    conn.connect(str(sock))
    conn.sendall(json.dumps(request).encode() + b"\n")
    return conn, read_line(conn)


def read_line(conn: socket.socket) -> dict[str, object]:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    return json.loads(data) if data else {}


def lingering_caller(sock: Path) -> subprocess.Popen[str]:
    """A caller process whose CLI (the stand-in, lingering after its input ends) the host
    started; it prints the CLI's pid and its child's, then waits to be killed."""
    caller = f"""
import sys, json, os
from claude_sdkurl.host import HostSpawner
from claude_sdkurl.spawn import SpawnOptions
p = HostSpawner({str(sock)!r})(SpawnOptions({sys.executable!r}, ["-c", {STAND_IN!r}, "0", "linger"], None, dict(os.environ), {{}}))
child = json.loads(p.stdout.readline())["child"]
print(json.dumps({{"cli": p.pid, "child": child}}), flush=True)
sys.stdin.read()
"""
    return subprocess.Popen([sys.executable, "-c", caller], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def test_descriptors_other_than_three_pipes_are_refused_and_nothing_starts(sock: Path, host: object, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    request = {"op": "spawn", "command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w')"], "cwd": None,
               "env": dict(os.environ)}  # fmt: skip
    plain = open(tmp_path / "plain", "wb")
    sent_pipes: list[int] = []
    pipe_pairs = [os.pipe() for _ in range(2)]
    sent_pipes += [fd for pair in pipe_pairs for fd in pair]
    four_pipes = sent_pipes[:4]
    open_before = len(os.listdir("/proc/self/fd"))  # the host runs in this process
    try:
        for fds, why in (([plain.fileno()] * 3, "must be pipes"), (sent_pipes[:2], "three pipes, the caller sent 2"),
                         (four_pipes, "three pipes, the caller sent more")):  # fmt: skip
            conn, frame = raw_spawn(sock, request)
            with conn:
                assert frame == {"op": "fds"}
                socket.send_fds(conn, [b"\0"], fds)
                answer = read_line(conn)
            assert answer["op"] == "error" and why in str(answer["message"]), answer
        time.sleep(0.5)
        assert not marker.exists()  # nothing was started
        assert host._spawned == set()  # type: ignore[attr-defined]
        deadline = time.monotonic() + 20  # the host's thread closes its side after answering
        while len(os.listdir("/proc/self/fd")) != open_before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(os.listdir("/proc/self/fd")) == open_before  # every descriptor received was closed
    finally:
        plain.close()
        for fd in sent_pipes:
            os.close(fd)


@pytest.mark.parametrize("bad, why", [
    ({"args": "not a list"}, "args"),
    ({"args": [1, 2]}, "args"),
    ({"env": {"A": 1}}, "env"),
    ({"env": "A=1"}, "env"),
    ({"cwd": 7}, "cwd"),
    ({"command": ""}, "command"),
    ({"args": ["a\0b"]}, "NUL"),
])  # fmt: skip
def test_a_request_that_is_not_well_formed_is_refused_by_name(sock: Path, host: object, bad: dict[str, object], why: str) -> None:
    request = {"op": "spawn", "command": sys.executable, "args": [], "cwd": None, "env": {}, **bad}
    conn, frame = raw_spawn(sock, request)
    conn.close()
    assert frame["op"] == "error" and why in str(frame["message"]), frame


def test_a_signal_reaches_only_the_callers_own_cli(sock: Path, host: object) -> None:
    victim = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        process = HostSpawner(sock)(stand_in())
        child = json.loads(process.stdout.readline())["child"]  # type: ignore[union-attr]
        with process._write:  # signals that are none: nothing happens to the CLI
            process._conn.sendall(b'{"op": "signal", "sig": true}\n{"op": "signal", "sig": 99999}\n{"op": "signal", "sig": "9"}\n')  # type: ignore[union-attr]
        process.stdin.write(b"alive?\n")  # type: ignore[union-attr]
        assert process.stdout.readline() == b"ALIVE?\n"  # type: ignore[union-attr]
        assert process.poll() is None
        # a signal frame that names another process: the pid is not read; only the caller's CLI's group gets it
        with process._write:
            process._conn.sendall(json.dumps({"op": "signal", "sig": 9, "pid": victim.pid}).encode() + b"\n")  # type: ignore[union-attr]
        code = process.wait(30)
        assert code == -signal.SIGKILL
        assert gone_within([child])  # its group: what it started went with it
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            stream.close()  # type: ignore[union-attr]


def test_the_caller_killed_stops_its_cli_and_what_the_cli_started(sock: Path, host: object, tmp_path: Path) -> None:
    worker = lingering_caller(sock)
    try:
        assert worker.stdout is not None
        pids = json.loads(worker.stdout.readline())
        assert alive(pids["cli"]) and alive(pids["child"])
        assert os.getpid() == int(open(f"/proc/{pids['cli']}/stat").read().rsplit(")", 1)[1].split()[1])  # the host's child
        worker.kill()
        worker.wait(30)
        assert gone_within([pids["cli"], pids["child"]]), "the CLI of a caller that was killed runs on"
        deadline = time.monotonic() + 20
        while host._spawned and time.monotonic() < deadline:  # type: ignore[attr-defined]
            time.sleep(0.05)  # (the host's thread lets go of it just after)
        assert host._spawned == set()  # type: ignore[attr-defined]
    finally:
        worker.kill()
        worker.wait()
        for stream in (worker.stdin, worker.stdout):
            stream.close()  # type: ignore[union-attr]


def test_the_exit_status_and_the_pipes_are_the_clis(sock: Path, host: object) -> None:
    process = HostSpawner(sock)(stand_in(code=3))
    try:
        json.loads(process.stdout.readline())  # type: ignore[union-attr]
        assert process.stderr.readline() == b"ready\n"  # type: ignore[union-attr]
        assert process.poll() is None
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(0.3)
        process.stdin.write(b"hello\n")  # type: ignore[union-attr]
        assert process.stdout.readline() == b"HELLO\n"  # type: ignore[union-attr]
        process.stdin.close()  # type: ignore[union-attr]
        assert process.wait(30) == 3
        assert process.poll() == 3
    finally:
        for stream in (process.stdin, process.stdout, process.stderr):
            stream.close()  # type: ignore[union-attr]


def test_closing_the_host_stops_its_callers_clis(sock: Path) -> None:
    serving = serve(sock)
    try:
        process = HostSpawner(sock)(stand_in())
        child = json.loads(process.stdout.readline())["child"]  # type: ignore[union-attr]
    finally:
        serving.close()
    try:
        assert process.wait(30) == -signal.SIGTERM
        assert gone_within([process.pid, child])
    finally:
        for stream in (process.stdin, process.stdout, process.stderr):
            stream.close()  # type: ignore[union-attr]


def test_a_host_killed_leaves_the_cli_to_its_caller_to_the_end(sock: Path) -> None:
    hosting = subprocess.Popen([sys.executable, "-m", "claude_sdkurl.host", "--socket", str(sock)], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, start_new_session=True)  # fmt: skip
    process = None
    try:
        assert "session host at" in hosting.stdout.readline()  # type: ignore[union-attr]
        process = HostSpawner(sock)(stand_in(code=0))
        json.loads(process.stdout.readline())  # type: ignore[union-attr]
        hosting.kill()
        hosting.wait(30)
        process.stdin.write(b"still here\n")  # type: ignore[union-attr]
        assert process.stdout.readline() == b"STILL HERE\n"  # type: ignore[union-attr]
        assert process.poll() is None  # (the host gone: running, as far as anyone can tell)
        process.terminate()  # the host gone: straight to the CLI, which is still the one the host started
        assert process.wait(30) == 0  # its end, unknown in status, counted as clean (see _spawn)
        assert gone_within([process.pid])
    finally:
        os.killpg(hosting.pid, signal.SIGKILL) if hosting.poll() is None else None
        hosting.wait()
        hosting.stdout.close()  # type: ignore[union-attr]
        if process is not None:
            if process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
            for stream in (process.stdin, process.stdout, process.stderr):
                stream.close()  # type: ignore[union-attr]


def test_no_host_a_missing_cli_and_a_missing_folder_are_typed_errors(sock: Path, tmp_path: Path) -> None:
    options = ClaudeAgentOptions(cli_path=sys.executable, spawn_claude_code_process=spawner(sock))
    with pytest.raises(HostUnreachableError, match="nothing was sent"):
        list(query(prompt="hi", options=options))
    assert issubclass(HostUnreachableError, CLIConnectionError)
    # the CLI is one of this machine's: found and its folder checked here first, as in-process
    missing = ClaudeAgentOptions(cwd=str(tmp_path / "no-such-folder"), spawn_claude_code_process=spawner(sock))
    with pytest.raises(CLIConnectionError, match="does not exist") as raised:
        list(query(prompt="hi", options=missing))
    assert not isinstance(raised.value, HostUnreachableError)
    with pytest.raises(CLINotFoundError):
        list(query(prompt="hi", options=ClaudeAgentOptions(cli_path=tmp_path / "nope", spawn_claude_code_process=spawner(sock))))
    with serve(sock):
        with pytest.raises(CLINotFoundError, match="not found"):
            HostSpawner(sock)(SpawnOptions(str(tmp_path / "no-such-claude"), [], None, {}, {}))
        with pytest.raises(HostError, match="does not exist"):
            HostSpawner(sock)(SpawnOptions(sys.executable, [], str(tmp_path / "no-such-folder"), {}, {}))


def test_the_spawner_travels_as_data() -> None:
    again = pickle.loads(pickle.dumps(spawner("/run/x/host.sock")))
    assert isinstance(again, HostSpawner) and again.path == Path("/run/x/host.sock")


def test_on_the_hosts_page_a_callers_cli_is_watched_scrubbed_and_not_steered(sock: Path, host: object) -> None:
    from claude_sdkurl import relay

    secret = "sk-ant-api03-" + "q7" * 20  # (the stand-in upper-cases its answer: another string)
    plain = "zebra-orchard-5521"  # a secret only its variable's name tells (the caller's env, not the host's)
    env = {**os.environ, "ANTHROPIC_API_KEY": secret, "DEPLOY_TOKEN": plain}
    page = relay.serve(steer=True, announce=False)
    process = None
    try:
        process = HostSpawner(sock)(SpawnOptions(sys.executable, ["-c", STAND_IN, "0"], None, env, {}))
        json.loads(process.stdout.readline())  # type: ignore[union-attr]
        process.stdin.write(b'{"type": "user", "said": "' + secret[:20].encode())  # a secret split across two writes
        time.sleep(0.2)
        process.stdin.write(secret[20:].encode() + b'", "note": "' + plain.encode() + b'"}\n')  # type: ignore[union-attr]
        assert process.stdout.readline() == f'{{"TYPE": "USER", "SAID": "{secret.upper()}", "NOTE": "{plain.upper()}"}}\n'.encode()  # type: ignore[union-attr]
        assert page.hub.drain(10)
        (watched,) = page.hub.running_sessions()
        assert watched.label == f"worker {os.getpid()}@{socket.gethostname()}"
        kept = json.dumps(page.hub.history(watched.key))
        assert "USER" in kept and "user" in kept  # both ways: what the caller wrote, what the CLI answered
        assert secret not in kept and secret[:20] not in kept and secret[20:] not in kept and plain not in kept, kept
        # the page watches: its program is the caller, so nothing is written to the CLI from it
        assert "could not reach" in str(page.hub.message(watched, "hello"))
        assert "could not reach" in str(page.hub.interrupt(watched))
        process.stdin.close()  # type: ignore[union-attr]
        assert process.wait(30) == 0
        assert page.hub.drain(10)
        assert not watched.running and not watched.input_open
    finally:
        page.close()
        if process is not None:
            if process.poll() is None:
                process.kill()
                process.wait(30)
            for stream in (process.stdin, process.stdout, process.stderr):
                stream.close()  # type: ignore[union-attr]


def test_a_watched_cli_whose_caller_is_killed_is_stopped_too(sock: Path, host: object) -> None:
    from claude_sdkurl import relay

    page = relay.serve(announce=False)
    try:
        worker = lingering_caller(sock)
        try:
            pids = json.loads(worker.stdout.readline())  # type: ignore[union-attr]
            worker.kill()
            worker.wait(30)
            assert gone_within([pids["cli"], pids["child"]])
        finally:
            worker.kill()
            worker.wait()
            worker.stdin.close()  # type: ignore[union-attr]
            worker.stdout.close()  # type: ignore[union-attr]
        assert page.hub.drain(10)
        deadline = time.monotonic() + 20
        while page.hub.running_sessions() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert page.hub.running_sessions() == []
    finally:
        page.close()


def test_a_stopped_host_is_a_typed_error_in_bounded_time_not_a_hang(sock: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from claude_sdkurl.host import HostGoneError, _spawn

    monkeypatch.setattr(_spawn, "START_TIMEOUT", 1.0)
    hosting = subprocess.Popen([sys.executable, "-m", "claude_sdkurl.host", "--socket", str(sock)], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, start_new_session=True)  # fmt: skip
    try:
        assert "session host at" in hosting.stdout.readline()  # type: ignore[union-attr]
        hosting.send_signal(signal.SIGSTOP)  # frozen: the socket still takes connections, nobody answers
        began = time.monotonic()
        with pytest.raises(HostGoneError, match="did not answer"):
            HostSpawner(sock)(stand_in())
        print(f"gave up after {time.monotonic() - began:.2f} s")
        assert time.monotonic() - began < 20  # (1 s asked; bounded for a busy machine)
    finally:
        os.killpg(hosting.pid, signal.SIGKILL)
        hosting.wait(30)
        hosting.stdout.close()  # type: ignore[union-attr]


@pytest.mark.parametrize("answer", [b'{"op": "spawned", "pid": "7"}\n', b'{"op": "spawned", "pid": true}\n', b'{"op": "spawned"}\n',
                                    b'not json\n', b'{"op": "spawned", "pid": -1}\n'])  # fmt: skip
def test_a_host_that_answers_nonsense_is_a_typed_error_and_leaves_no_descriptor(sock: Path, answer: bytes) -> None:
    """A peer at the socket that is not a host as ours: each answer it gives to a spawn is refused
    as the host's error, and the worker's pipe ends are closed (the test's leak check counts them)."""
    import threading

    from claude_sdkurl.host import HostError

    sock.parent.mkdir(mode=0o700, parents=True)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(sock))
    listener.listen(1)

    def peer() -> None:
        conn, _ = listener.accept()
        with conn:
            read_line(conn)
            conn.sendall(b'{"op": "fds"}\n')
            _, fds, _, _ = socket.recv_fds(conn, 1, 3)
            for fd in fds:
                os.close(fd)
            conn.sendall(answer)
            conn.recv(1)  # until the worker lets go

    serving = threading.Thread(target=peer)
    serving.start()
    try:
        with pytest.raises(HostError):
            HostSpawner(sock)(stand_in())
    finally:
        serving.join(30)
        listener.close()


def test_a_caller_that_sends_no_pipes_is_told_and_nothing_starts(sock: Path, host: object, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    from claude_sdkurl.host import _spawn

    monkeypatch.setattr(_spawn, "START_TIMEOUT", 0.5)
    marker = tmp_path / "started"
    conn, frame = raw_spawn(sock, {"op": "spawn", "command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w')"],
                                   "cwd": None, "env": dict(os.environ)})  # fmt: skip
    with conn:
        assert frame == {"op": "fds"}
        began = time.monotonic()
        answer = read_line(conn)  # (no pipes sent)
    assert answer["op"] == "error" and "sent no pipes" in str(answer["message"]), answer
    assert time.monotonic() - began < 15  # the host's START_TIMEOUT (0.5 s here), not a wait of its own
    assert not marker.exists() and host._spawned == set()  # type: ignore[attr-defined]


def test_a_line_longer_than_the_bound_ends_the_start_at_once(sock: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A peer that sends an endless line while the worker waits for its answer: the worker stops
    reading at ``MAX_LINE`` and says the host went away, without waiting out ``START_TIMEOUT``."""
    import threading

    from claude_sdkurl.host import HostGoneError, _spawn

    monkeypatch.setattr(_spawn, "MAX_LINE", 1000)
    monkeypatch.setattr(_spawn, "START_TIMEOUT", 20.0)
    sock.parent.mkdir(mode=0o700, parents=True)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(sock))
    listener.listen(1)
    release = threading.Event()

    def peer() -> None:
        conn, _ = listener.accept()
        with conn:
            read_line(conn)
            conn.sendall(b'{"op": "fds", "pad": "' + b"x" * 5000)  # no end of line, and the connection kept
            release.wait(30)

    serving = threading.Thread(target=peer)
    serving.start()
    try:
        began = time.monotonic()
        with pytest.raises(HostGoneError, match="went away"):
            HostSpawner(sock)(stand_in())
        assert time.monotonic() - began < 15  # (not the 20 s of waiting for an answer)
    finally:
        release.set()
        serving.join(30)
        listener.close()


def test_with_the_host_gone_a_signal_reaches_the_cli_only_while_its_pid_is_the_one_started(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 70, 4: the host gone (no connection, or one that refuses the signal), terminate()
    and kill() signal the CLI's group straight, only while its pid is still the process the
    host started (its start time the one read then); a pid reused, gone, or whose start was
    never read is never signalled, nor one whose exit is known."""
    from claude_sdkurl.host import _spawn

    def hosted(pid: int, started: str | None, conn: socket.socket | None = None) -> _spawn.HostedProcess:
        process = _spawn.HostedProcess(conn, [])  # type: ignore[arg-type]
        process.pid, process._started = pid, started
        return process

    sent: list[tuple[int, int]] = []
    real_killpg = os.killpg
    child = subprocess.Popen(["sleep", "300"], start_new_session=True)
    reaped = subprocess.Popen(["true"])
    reaped.wait()
    try:
        started = _spawn._start_time(child.pid)
        assert started is not None
        monkeypatch.setattr(os, "killpg", lambda pid, sig: sent.append((pid, sig)))
        hosted(child.pid, str(int(started) + 1)).terminate()  # the pid is another process's now
        hosted(child.pid, None).kill()  # its start was never read
        hosted(reaped.pid, None).kill()  # gone, and never read (None is no match)
        hosted(reaped.pid, started).terminate()  # gone
        known = hosted(child.pid, started)
        known.returncode = 0
        known.kill()  # its exit is known: nothing to signal
        ours, theirs = socket.socketpair()
        theirs.close()
        hosted(child.pid, str(int(started) + 1), ours).kill()  # the host's connection refuses it: the same check
        ours.close()
        assert sent == []
        hosted(child.pid, started).terminate()
        assert sent == [(child.pid, signal.SIGTERM)]
        ours, theirs = socket.socketpair()
        theirs.close()
        hosted(child.pid, started, ours).kill()
        ours.close()
        assert sent == [(child.pid, signal.SIGTERM), (child.pid, signal.SIGKILL)]
        monkeypatch.setattr(os, "killpg", real_killpg)
        hosted(child.pid, started).terminate()  # and it does reach it
        assert child.wait(30) == -signal.SIGTERM
    finally:
        monkeypatch.setattr(os, "killpg", real_killpg)
        if child.poll() is None:
            child.kill()
        child.wait()


def test_with_the_host_gone_the_clis_end_is_its_pid_no_longer_being_the_process_started() -> None:
    """Issue 70, 4, the other half: the host gone, wait() counts the CLI ended once its pid is
    no longer the process the host started (gone, or another's with another start time), and
    not while it is."""
    from claude_sdkurl.host import _spawn

    child = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        started = _spawn._start_time(child.pid)
        assert started is not None

        def gone_host(started_as: str | None) -> _spawn.HostedProcess:
            process = _spawn.HostedProcess(None, [])  # type: ignore[arg-type]
            process.pid, process._started, process._host_gone = child.pid, started_as, True
            return process

        assert gone_host(str(int(started) + 1)).wait(5) == 0  # the pid is another process's: ours ended
        running = gone_host(started)
        with pytest.raises(subprocess.TimeoutExpired):
            running.wait(0.3)
        assert running.poll() is None
        child.kill()
        child.wait()
        assert running.wait(10) == 0  # (its status unknown: counted clean, see _spawn)
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
