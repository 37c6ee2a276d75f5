"""The watcher that stops a CLI when the program that started it is killed outright
(``_transport.process.guard_orphan``), with ``sleep`` standing in for the CLI (a process group
leader): it acts as soon as the program is gone, costs nothing while it waits, leaves quietly
when the CLI ends normally, and a forked child does not keep it from acting."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from claude_sdkurl._engine.transport.process import guard_orphan, release_guard

from .servers import alive

PROGRAM = textwrap.dedent(
    """
    import os, subprocess, sys, time
    from claude_sdkurl._engine.transport.process import guard_orphan
    cli = subprocess.Popen(["sleep", "300"], start_new_session=True)
    guard_orphan(cli.pid)
    if sys.argv[1] == "fork" and os.fork() == 0:
        time.sleep(300)  # a forked child (a pool worker) that outlives its parent
        os._exit(0)
    print(cli.pid, flush=True)
    time.sleep(300)
    """
)


def _watchers(cli: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if b"claude-sdkurl-guard" in argv and str(cli).encode() in argv:
                found.append(int(entry))
    return found


def _switches(pid: int) -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    return sum(int(line.split()[1]) for line in text.splitlines() if line.endswith("ctxt_switches") or "ctxt_switches:" in line)


def _blocked_on_its_pipe(pid: int) -> bool:
    """Asleep in a pipe read (``/proc/<pid>/wchan``: ``pipe_read``, ``anon_pipe_read``...): the
    watcher has reached its ``read``, past the start-up a busy machine may still be running."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state == "S" and "pipe" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


def _until(condition: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return bool(condition())  # type: ignore[operator]


@pytest.mark.parametrize("how", ["plain", "fork"])
def test_a_killed_programs_cli_is_stopped_and_its_watcher_idles_for_free(how: str) -> None:
    program = subprocess.Popen([sys.executable, "-c", PROGRAM, how], stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert program.stdout is not None
    cli = int(program.stdout.readline())
    try:
        (watcher,) = _watchers(cli)
        # (counted once it sleeps in its read: a watcher still starting on a loaded machine
        # switches once more as it gets there, which the idle check must not take for a wake-up)
        assert _until(lambda: _blocked_on_its_pipe(watcher), 10)
        before = _switches(watcher)
        time.sleep(2.5)
        # blocked on its pipe: not a single wake-up (the old watcher ran `sleep 1` each second)
        assert _switches(watcher) == before and alive(cli)
        program.send_signal(signal.SIGKILL)  # the program only: the CLI leads a group of its own
        program.wait(10)
        assert _until(lambda: not alive(cli), 10), "the CLI outlived the program that started it"
        assert _until(lambda: not _watchers(cli), 10)
    finally:
        os.killpg(program.pid, signal.SIGKILL) if alive(program.pid) else None
        program.wait(10)
        if program.stdout:
            program.stdout.close()
        if alive(cli):
            os.kill(cli, signal.SIGKILL)
        if how == "fork":  # the forked child is in the program's session
            subprocess.run(["pkill", "-KILL", "-s", str(program.pid)], check=False)


def test_a_cli_that_ends_normally_releases_its_watcher_and_is_not_signalled() -> None:
    cli = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        guard = guard_orphan(cli.pid)
        assert guard is not None and _until(lambda: len(_watchers(cli.pid)) == 1, 5)
        release_guard(guard)
        assert _until(lambda: not _watchers(cli.pid), 5)
        time.sleep(0.3)
        assert cli.poll() is None  # released, not a stop
        release_guard(guard)  # twice: a no-op, no descriptor closed twice
    finally:
        cli.kill()
        cli.wait(5)
