"""A restarted session host takes over its dead predecessor's leases at once (issue 68), and no
one else's, without the real CLI: the record beside the socket (torn, forged, naming a holder
that still runs), the predecessor's CLIs still fenced, and a real host process killed mid-turn
and started again over a store that also holds leases of another machine's host and of a
worker running conversations in-process. The real CLI's path: tests/test_realcli_host.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import Conversations
from claude_sdkurl._engine.paths import project_key_for_directory
from claude_sdkurl.conversations import ConversationBusyError
from claude_sdkurl.host import HostGoneError, _holder
from claude_sdkurl.stores.conversations import ConversationStore, SQLiteConversationStore

from .host_standin import HostProcess, options_for, ran, standin


@pytest.fixture
def base() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="claude-sdkurl-takeover-"))
    (folder / "h").mkdir(mode=0o700)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def alive(pid: int) -> bool:
    """Running (not gone, not a zombie)."""
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def dead_pid() -> int:
    """The pid of a process that has ended."""
    probe = subprocess.Popen(["true"])
    probe.wait()
    return probe.pid


def write_record(sock: Path, record: Any) -> None:
    _holder.record_path(sock).write_text(record if isinstance(record, str) else json.dumps(record))


def test_only_a_gone_predecessor_of_this_socket_on_this_machine_is_taken_over(base: Path) -> None:
    sock = base / "h" / "host.sock"
    prefix = _holder.identity(sock)
    me, heirs = _holder.succeed(sock, 1.0)  # no record yet: nothing to take over
    assert heirs == [] and me.startswith(prefix) and me.count(":") == prefix.count(":") + 1
    written = json.loads(_holder.record_path(sock).read_text())
    assert written["owner"] == me and written["pid"] == os.getpid() and written["start"] == _holder.start_time(os.getpid())
    assert stat.S_IMODE(os.stat(_holder.record_path(sock)).st_mode) == 0o600
    assert not list(sock.parent.glob("*.tmp"))  # written whole, then renamed

    gone = {"owner": f"{prefix}{dead_pid()}:aa", "pid": dead_pid(), "start": "1", "boot": _holder.boot_id(),
            "predecessors": [f"{prefix}{n}:bb" for n in range(12)]}  # fmt: skip
    write_record(sock, gone)
    me2, heirs = _holder.succeed(sock, 1.0)
    assert heirs == [gone["owner"], *gone["predecessors"]][: _holder.KEPT]  # itself and the ones it had proved gone, a few
    assert json.loads(_holder.record_path(sock).read_text())["predecessors"] == heirs

    refused = {
        "torn": '{"owner": "' + prefix,
        "not an object": json.dumps([gone["owner"]]),
        "no pid": json.dumps({**gone, "pid": "12"}),
        "another machine's host": {**gone, "owner": gone["owner"].replace(prefix, "host:elsewhere:0123:" + os.path.realpath(sock) + ":")},
        "another socket's host": {**gone, "owner": gone["owner"].replace(str(sock), str(sock) + "2")},
        "a worker's in-process holder": {**gone, "owner": f"{os.uname().nodename}:{gone['pid']}:abc"},
        "a foreign predecessor": {**gone, "predecessors": ["host:elsewhere:0123:/x:1:aa"]},
        "a name with more after it": {**gone, "owner": gone["owner"] + ":cc"},
        "a name of the prefix alone": {**gone, "owner": prefix},
        "a host that still runs": {**gone, "pid": os.getpid(), "start": _holder.start_time(os.getpid())},
    }
    for why, record in refused.items():
        write_record(sock, record)
        assert _holder.succeed(sock, 1.0)[1] == [], why
    write_record(sock, {**gone, "pid": os.getpid(), "start": "1"})  # its pid, reused by another process since: gone
    assert _holder.succeed(sock, 1.0)[1][0] == gone["owner"]
    write_record(sock, {**gone, "pid": os.getpid(), "start": _holder.start_time(os.getpid()), "boot": "another boot"})
    assert _holder.succeed(sock, 1.0)[1][0] == gone["owner"]  # rebooted since: gone, whatever runs with that pid now


HOLDER = textwrap.dedent(
    """
    import subprocess, sys, time
    from pathlib import Path
    from claude_sdkurl.host import _holder
    from claude_sdkurl._engine.transport.process import fence_cli
    cli = subprocess.Popen(["sleep", "600"], start_new_session=True)
    fence = fence_cli(cli.pid, 600)
    me, _ = _holder.succeed(Path(sys.argv[1]), 1.0)
    print(me, cli.pid, flush=True)
    time.sleep(600)
    """
)


@pytest.mark.parametrize("fence_frozen", [False, True])
def test_the_predecessors_clis_are_stopped_before_anything_is_taken_over(base: Path, fence_frozen: bool) -> None:
    """A holder of the socket (its "CLI" a sleep, fenced as a host's CLI is) killed: the fence
    stops the CLI, and the successor takes the holder's leases over only once no fence of its is
    left; a fence that cannot act (frozen) within the bound leaves its leases to be waited out."""
    sock = base / "h" / "host.sock"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(sock)], stdout=subprocess.PIPE, text=True)
    fences: list[int] = []
    cli = 0
    try:
        assert holder.stdout is not None
        owner, cli_text = holder.stdout.readline().split()
        cli = int(cli_text)
        deadline = time.monotonic() + 30
        while len(fences := _holder.fences_of(holder.pid)) != 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(fences) == 1 and alive(cli)
        if fence_frozen:
            os.kill(fences[0], signal.SIGSTOP)
        holder.kill()
        holder.wait(60)
        began = time.monotonic()
        _, heirs = _holder.succeed(sock, 1.0)
        took = time.monotonic() - began
        if fence_frozen:
            assert heirs == [] and alive(cli) and took >= 1.0
        else:
            assert heirs == [owner] and not alive(cli)  # the CLI was gone before its lease was taken
            print(f"the predecessor's CLI was fenced off in {took:.3f} s")
    finally:
        holder.kill()
        holder.wait(60)
        for pid in (*fences, cli):
            if pid:
                try:
                    os.kill(pid, signal.SIGCONT)
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


class OldStore(SQLiteConversationStore):
    """A store of a user's, written before ``replaces``."""

    def acquire(self, namespace: str, key: str, owner: str, ttl: float) -> tuple[bool, str | None]:  # type: ignore[override]
        return super().acquire(namespace, key, owner, ttl)


def test_a_store_that_takes_no_replaces_waits_the_leases_out(base: Path) -> None:
    store = OldStore(base / "old.sqlite3")
    try:
        with Conversations(store=store, lease_wait=0.3) as chats:
            chats._hold_as("host:m:/s:1:new/t", ["host:m:/s:1:old/t"])
            assert chats._owner == "host:m:/s:1:new/t" and chats._replaces == ()
        with Conversations(store=base / "new.sqlite3") as chats:
            chats._hold_as("host:m:/s:1:new/t", ["host:m:/s:1:old/t"])
            assert chats._replaces == ("host:m:/s:1:old/t",)
        assert isinstance(store, ConversationStore)
    finally:
        store.close()


def test_a_host_killed_mid_turn_and_started_again_takes_over_its_own_leases_and_no_others(base: Path) -> None:
    """Leases of 600 s, a send waits 2 s: the old host's conversations (one mid-turn when it was
    killed, one idle) answer at once after the restart, each with its whole history and nothing
    run twice; a conversation another machine's host holds, and one a worker holds in-process,
    are still theirs. A forged record naming the other machine's host takes nothing at all."""
    setup = standin(base)
    sock = base / "h" / "host.sock"
    store_path = base / "conversations.sqlite3"
    flags = ("--lease-ttl", "600", "--lease-wait", "2", "--store", str(store_path))
    namespace = project_key_for_directory(setup["cwd"])
    tag = __import__("hashlib").sha256(b"").hexdigest()[:12]
    other_machine = f"host:elsewhere:0123:{os.path.realpath(sock)}:4242:ab/{tag}"
    started: list[HostProcess] = []
    try:
        started.append(HostProcess(sock, *flags))
        chats = Conversations(options_for(setup), host=sock)
        assert [m.result for m in chats.send("idle", "one") if type(m).__name__ == "ResultMessage"] == ["one"]  # type: ignore[attr-defined]
        with SQLiteConversationStore(store_path) as store:
            assert store.acquire(namespace, "theirs", other_machine, 600)[0]
            assert store.acquire(namespace, "in-process", f"{os.uname().nodename}:{os.getpid()}:abc", 600)[0]
        turn = chats.send("busy", "slow 120")
        next(iter(turn))
        started[0].proc.kill()  # mid-turn
        with pytest.raises(HostGoneError):
            list(turn)
        first_cli = ran(setup)[-1][0]
        started.append(HostProcess(sock, *flags))
        began = time.monotonic()
        assert [m.result for m in chats.send("busy", "after") if type(m).__name__ == "ResultMessage"] == ["slow 120 | after"]  # type: ignore[attr-defined]
        print(f"the first message after the restart took {time.monotonic() - began:.2f} s (leases of 600 s)")
        assert not alive(first_cli)
        assert [m.result for m in chats.send("idle", "two") if type(m).__name__ == "ResultMessage"] == ["one | two"]  # type: ignore[attr-defined]
        for key in ("theirs", "in-process"):
            with pytest.raises(ConversationBusyError):
                list(chats.send(key, "mine now?"))
        prompts = [p for _, _, p in ran(setup)]
        assert prompts == ["one", "slow 120", "after", "two"], prompts  # each once; nothing of the refused sends ran

        started[1].proc.kill()
        started[1].proc.wait(60)
        record = json.loads(_holder.record_path(sock).read_text())
        write_record(sock, {**record, "predecessors": [other_machine.split("/")[0]]})  # forged: the other machine's host
        started.append(HostProcess(sock, *flags))
        for key in ("busy", "theirs"):  # the whole record refused: not even the true predecessor's leases are taken
            with pytest.raises(ConversationBusyError):
                list(chats.send(key, "forged"))
        assert "forged" not in [p for _, _, p in ran(setup)]
    finally:
        for host in started:
            host.stop()


def test_a_process_start_time_is_read_from_its_own_field_of_proc_stat() -> None:
    """The record's ``start`` is the 22nd field of ``/proc/<pid>/stat`` (the start time in clock
    ticks since boot): a value that never changes while the process lives, unlike its neighbours
    (the virtual memory size, field 23, grows as it allocates), so a live host keeps being seen
    as alive: checked against the machine's uptime for a child started a moment ago."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; x = []; sys.stdin.readline(); x.append(bytearray(64 << 20)); sys.stdin.readline()"],
                             stdin=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert child.stdin is not None

        before = _holder.start_time(child.pid)
        assert before is not None
        # the child started a moment ago: its start time is the machine's uptime now, in clock ticks
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        assert abs(int(before) / os.sysconf("SC_CLK_TCK") - uptime) < 30, (before, uptime)
        child.stdin.write("\n")
        child.stdin.flush()
        time.sleep(0.5)  # it allocates
        assert _holder.start_time(child.pid) == before
    finally:
        child.kill()
        child.wait()
    assert _holder.start_time(child.pid) is None  # gone
