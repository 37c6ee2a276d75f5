"""The CLI child process: spawn, stderr capture, and a stop that always ends it, even
when this process is killed (see :func:`guard_orphan`)."""

from __future__ import annotations

import atexit
import collections
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

from ..._errors import CLIConnectionError, CLINotFoundError
from ..log import get_logger
from .spawn import Spawner, SpawnOptions

logger = get_logger("claude_sdkurl.process")

STDERR_TAIL_LINES = 100
ABORT_TERM_GRACE = 0.5  # when aborting (a broken stream, a stuck CLI): SIGTERM, then SIGKILL after this

# Every CLI started and not yet reaped: interpreter exit stops them, whatever state their
# session is in (a session closing on another thread at exit must not leave one behind).
_active: set[CLIProcess] = set()
_active_lock = threading.Lock()


@atexit.register
def _reap_at_exit() -> None:
    with _active_lock:
        left = list(_active)
    for proc in left:
        proc._signal(signal.SIGKILL)
    for proc in left:
        proc.wait(1.0)


# atexit does not run when this process is killed (SIGKILL, the OOM killer, a notebook
# kernel restarted by force). For that, each local CLI gets a detached watcher (not our
# child: a shell's background job, left to init) blocked reading a pipe whose only writer is
# this process. A normal end of the CLI writes a line and closes it: the watcher leaves. This
# process gone, the kernel closes the pipe: the watcher reads end-of-file at once and stops the
# CLI's process group (if the CLI still runs). Blocked in read, it costs nothing while idle.
# (It polled each second before: a killed driver's CLIs could go on making requests for up to
# 1 s, and 100 parked CLIs meant 100 wake-ups a second.)
_GUARD = (
    "exec 3<&0; ( if read -r _ <&3; then exit 0; fi; kill -0 $2 2>/dev/null || exit 0;"
    " kill -s TERM -- -$2 2>/dev/null; sleep 2; kill -s KILL -- -$2 2>/dev/null ) </dev/null >/dev/null 2>&1 &"
)


_guards: set[int] = set()  # write ends of the watchers' pipes held by this process
_guards_lock = threading.Lock()


def _forget_guards_in_child() -> None:
    """A forked child (multiprocessing's fork, a pool worker) does not own our CLIs: it must
    not hold their watchers' pipes open (the watchers would then outlive this process's death)."""
    for fd in list(_guards):
        try:
            os.close(fd)
        except OSError:
            pass
    _guards.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_guards_in_child)


def guard_orphan(cli_pid: int) -> int | None:
    """Have the CLI (a process group leader) stopped at once if this process dies without
    stopping it. Returns the pipe's write end, for :func:`release_guard` once the CLI is reaped
    (``None`` where no watcher could be started)."""
    if os.name != "posix" or not os.path.exists("/bin/sh"):
        return None
    return _detached_watcher(["/bin/sh", "-c", _GUARD, "claude-sdkurl-guard", str(os.getpid()), str(cli_pid)], "orphan guard", cli_pid)


def _detached_watcher(argv: list[str], what: str, cli_pid: int) -> int | None:
    """Start ``argv`` (a shell that leaves a background job reading its standard input, then
    exits) with a pipe as its input; the write end, kept among the guards (a forked child closes
    them), or ``None`` when it could not start."""
    read_end, write_end = os.pipe()  # (not inherited by any other child: PEP 446)
    try:
        starter = subprocess.Popen(argv, stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   start_new_session=True, env={"PATH": "/usr/bin:/bin"})  # fmt: skip
        starter.wait(5)  # the starting shell exits at once; the watcher runs on without us
    except (OSError, subprocess.TimeoutExpired) as e:
        logger.warning("no %s for the CLI %d: %s", what, cli_pid, e)
        os.close(write_end)
        return None
    finally:
        os.close(read_end)
    with _guards_lock:
        _guards.add(write_end)
    return write_end


def release_guard(write_end: int | None) -> None:
    """The CLI ended normally: tell its watcher to leave (a line, then end-of-file)."""
    with _guards_lock:
        if write_end is None or write_end not in _guards:  # (a forked child closed it already)
            return
        _guards.discard(write_end)
    try:
        os.write(write_end, b"done\n")
    except OSError:  # the watcher is gone already
        pass
    finally:
        os.close(write_end)


# A lease fence: a watcher like the orphan guard's, that also stops the CLI when the line it
# waits for does not come in time. Each line its holder writes is how many seconds to wait for
# the next ("done" ends it): the holder writes one each time its lease is confirmed, so a holder
# that is frozen (SIGSTOP, a paused VM), or whose store stopped answering, has its CLI stopped by
# this process, which is not frozen with it, before the lease can run out.
#
# The CLI runs a Bash tool's command in a process group of its own (seen on 2.1.330: killing the
# CLI's group left "sleep 8; echo ran" to finish), so the fence stops the CLI's whole tree: every
# descendant found through /proc (frozen first, so that none forks away meanwhile), each one's
# group, and each one. Python, not a shell: the tree needs /proc's parent links (this kernel has
# no /proc/PID/task/TID/children). It imports nothing of ours.
_FENCE_CODE = """
import os, select, signal, sys, time
cli, deadline, buffered = int(sys.argv[2]), time.monotonic() + float(sys.argv[3]), b""
while True:
    if not select.select([0], [], [], max(0.0, deadline - time.monotonic()))[0]:
        break
    data = os.read(0, 4096)
    if not data:
        break
    *lines, buffered = (buffered + data).split(b"\\n")
    for line in lines:
        if line == b"done":
            sys.exit(0)
        try:
            deadline = time.monotonic() + float(line)
        except ValueError:
            pass
try:
    os.kill(cli, 0)
except OSError:
    sys.exit(0)
children = {}
for entry in os.listdir("/proc"):
    if entry.isdigit():
        try:
            with open("/proc/%s/stat" % entry) as f:
                children.setdefault(int(f.read().rsplit(")", 1)[1].split()[1]), []).append(int(entry))
        except (OSError, ValueError, IndexError):
            pass
tree, todo = [], [cli]
while todo:
    pid = todo.pop()
    tree.append(pid)
    todo += children.get(pid, [])
for how in ((os.kill, signal.SIGSTOP), (os.killpg, signal.SIGKILL), (os.kill, signal.SIGKILL)):
    for pid in tree:
        try:
            how[0](pid, how[1])
        except OSError:
            pass
"""
_FENCE = 'exec 3<&0; "$0" -c "$1" "$2" "$3" "$4" <&3 >/dev/null 2>&1 &'


def fences_of(holder_pid: int) -> list[int]:
    """The lease fences still running that process ``holder_pid`` started, found in ``/proc`` by
    their command line (``python -c <the fence's code> <holder pid> <CLI pid> <seconds>``, or the
    shell that is about to become it)."""
    found = []
    code, holder = _FENCE_CODE.encode(), str(holder_pid).encode()
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    args = f.read().split(b"\0")
            except OSError:  # gone meanwhile
                continue
            if code in args and args[args.index(code) + 1 :][:1] == [holder]:
                found.append(int(entry))
    return found


class Fence:
    """The holder's end of a lease fence (see :func:`fence_cli`)."""

    def __init__(self, write_end: int) -> None:
        self._fd: int | None = write_end
        self._lock = threading.Lock()

    def allow(self, seconds: float) -> None:
        """The CLI may run ``seconds`` more without another word (at least 10 ms)."""
        with self._lock:
            if self._fd is None:
                return
            try:
                os.write(self._fd, f"{max(0.01, seconds):.3f}\n".encode())
            except OSError:  # the fence fired already (the CLI is gone) or was let go
                pass

    def release(self) -> None:
        """The CLI is stopped, or its lease given back in order: the fence leaves."""
        with self._lock:
            fd, self._fd = self._fd, None
        release_guard(fd)


def fence_cli(cli_pid: int, seconds: float) -> Fence | None:
    """Have the CLI and everything it started killed by another process unless
    :meth:`Fence.allow` is called within ``seconds``, then within each time it gives, and when
    this process dies. ``None`` where no fence can be started (not POSIX, no /proc)."""
    if os.name != "posix" or not os.path.isdir("/proc") or not os.path.exists("/bin/sh"):
        return None
    write_end = _detached_watcher(["/bin/sh", "-c", _FENCE, sys.executable, _FENCE_CODE, str(os.getpid()), str(cli_pid),
                                   f"{max(0.01, seconds):.3f}"], "lease fence", cli_pid)  # fmt: skip
    return Fence(write_end) if write_end is not None else None


def _pass_through(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # closed or missing stderr (pythonw, interpreter exit)
        pass


class CLIProcess:
    """One running CLI.

    The child gets its own process group, so stopping it also stops whatever
    it started (a Bash tool's children). Standard error is read by a thread
    that keeps the last :data:`STDERR_TAIL_LINES` lines and passes each line to
    the optional ``on_stderr`` callback.
    """

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: str | None,
        *,
        stdio: bool,
        on_stderr: Callable[[str], None] | None = None,
        user: str | None = None,
        pass_fds: tuple[int, ...] = (),
        spawner: Spawner | None = None,
        sdk_env: dict[str, str] | None = None,
    ) -> None:
        self.argv = argv
        self._guard: int | None = None  # the orphan watcher's pipe (see guard_orphan)
        self._on_stderr = on_stderr
        self._tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        # Our own children lead a process group: a stop reaches what they started. A process
        # from a user's spawner gets its signals through its own send_signal.
        self._own_group = spawner is None
        if spawner is not None:
            try:
                self.popen: Any = spawner(SpawnOptions(argv[0], argv[1:], cwd, env, dict(sdk_env or {})))
            except CLIConnectionError:
                raise  # already says what failed (a CLI not found, a session host not reached)
            except Exception as e:
                raise CLIConnectionError(f"spawn_claude_code_process failed: {type(e).__name__}: {e}") from e
            if self.popen is None or getattr(self.popen, "stdin", None) is None or getattr(self.popen, "stdout", None) is None:
                raise CLIConnectionError("spawn_claude_code_process must return a process with stdin and stdout pipes")
            self._own_group = bool(getattr(self.popen, "_claude_sdkurl_own_group", False))
            self._start_common()
            return
        try:
            self.popen = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if stdio else subprocess.DEVNULL,
                stdout=subprocess.PIPE if stdio else subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=env,
                bufsize=0,
                start_new_session=True,
                user=user,
                pass_fds=pass_fds,
            )
        except FileNotFoundError as e:
            if cwd and not os.path.isdir(cwd):
                raise CLIConnectionError(f"Working directory does not exist: {cwd}") from e
            raise CLINotFoundError("Claude Code not found", argv[0]) from e
        except PermissionError as e:
            raise CLINotFoundError("Claude Code is not executable", argv[0]) from e
        except OSError as e:
            raise CLIConnectionError(f"Failed to start Claude Code: {e}") from e
        self._guard = guard_orphan(self.popen.pid)
        self._start_common()

    def _start_common(self) -> None:
        self.pid = self.popen.pid
        with _active_lock:
            _active.add(self)
        self._stderr_thread = threading.Thread(
            target=self._read_stderr, name=f"claude-sdkurl-stderr-{self.pid}", daemon=True
        )
        self._stderr_thread.start()

    def _read_stderr(self) -> None:
        stream = self.popen.stderr
        if stream is None:  # a spawned process may keep its stderr
            return
        try:
            for raw in iter(stream.readline, b""):
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                self._tail.append(line)
                if self._on_stderr is None:
                    # As the official SDK, which lets the CLI inherit stderr when no callback is
                    # set: the user sees the CLI's warnings. We pipe it to keep a tail for
                    # ProcessError, so we pass each line on to our own standard error.
                    _pass_through(line)
                elif line.rstrip():
                    try:
                        self._on_stderr(line.rstrip())
                    except Exception:  # a user callback must not kill the reader
                        logger.exception("stderr callback raised")
        except (OSError, ValueError):
            pass
        finally:
            try:
                stream.close()
            except OSError:
                pass

    @property
    def returncode(self) -> int | None:
        code: int | None = self.popen.poll()
        return code

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait for exit; ``None`` if still running after ``timeout``. A reaped CLI leaves the registry."""
        try:
            code: int = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        with _active_lock:
            _active.discard(self)
            guard, self._guard = self._guard, None
        release_guard(guard)
        return code

    def is_stopped(self) -> bool:
        """Whether the CLI is stopped (SIGSTOP, SIGTSTP, a debugger): it then heeds only SIGKILL."""
        if not self._own_group:
            return False  # a spawner's process: not necessarily one of this machine
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state in (b"T", b"t")

    def stderr_tail(self, wait: float = 1.0) -> str:
        """The last lines of standard error (waits briefly for the reader to drain)."""
        if self.popen.poll() is not None:
            self._stderr_thread.join(wait)
        return "\n".join(self._tail)

    def interrupt(self) -> bool:
        """SIGINT to a running CLI of our own process group (what Ctrl-C in its terminal would
        send); ``False`` for a spawner's process or one that has exited."""
        if not self._own_group or self.wait(0) is not None:
            return False
        self._signal(signal.SIGINT)
        return True

    def _signal(self, sig: int) -> None:
        if self._own_group:
            try:
                os.killpg(self.pid, sig)
                return
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.popen.send_signal(sig)
        except (ProcessLookupError, OSError):
            pass

    def stop(self, grace: float = 5.0, term_grace: float = 3.0) -> int | None:
        """Wait ``grace`` seconds for a voluntary exit, then SIGTERM, then SIGKILL.

        Always reaps the child and joins the stderr reader.
        """
        code = self.wait(0)
        if code is None and self.is_stopped():
            self._signal(signal.SIGKILL)  # a stopped process would sit on SIGTERM
            code = self.wait(5.0)
        if code is None and grace > 0:
            code = self.wait(grace)
        if code is None:
            self._signal(signal.SIGTERM)
            code = self.wait(term_grace)
        if code is None:
            self._signal(signal.SIGKILL)
            code = self.wait(5.0)
        elif self._own_group:
            # The CLI is gone; make sure nothing it started in its group lingers.
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        # stdin and stdout are not closed here: the transport's writer and reader own them and
        # close them when done (closing one under a running thread could make it use another
        # thread's new descriptor).
        self._stderr_thread.join(2.0)
        return code
