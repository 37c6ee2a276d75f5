"""Any CLI of this process started by the session host: ``query()``, ``ClaudeClient``, a batch's
items, through ``ClaudeAgentOptions(spawn_claude_code_process=host.spawner())``.

What it is for: the CLIs of every worker of a deployment are children of one process (the host),
under its user, environment and limits, wherever the workers were started from; nothing of the
worker's own changes (its callbacks, hooks and SDK MCP tools run in the worker, as with any
spawner). Unlike a conversation sent to the host, such a CLI lives as long as its caller's
query: it ends when its caller ends it or goes away.

How, on the socket of :mod:`claude_sdkurl.host._server`::

    -> {"op": "spawn", "command": ..., "args": [...], "cwd": ..., "env": {...}, "caller": "worker <pid>@<machine>"}
    <- {"op": "fds"}                      the host is ready for the pipes
    -> one byte, with three descriptors (SCM_RIGHTS): the read end of the CLI's stdin pipe and
       the write ends of its stdout and stderr pipes
    <- {"op": "spawned", "pid": ...}      | {"op": "error", ...}
    -> {"op": "signal", "sig": 15}        (any number; to that CLI's process group only)
    <- {"op": "exit", "code": ...}        then the host closes the connection

The CLI reads and writes the caller's own pipes: no line passes through the host, so a turn costs
what it costs in-process. When the host serves a relay page (``--relay``), the CLI is shown there,
labelled with its caller: then the host's threads copy each chunk between the CLI's pipes and the
caller's, handing the page a copy (the page watches such a session; its program is elsewhere).

The connection is the caller's hold on its CLI: when it closes before
the CLI has exited (the caller killed, or it let go), the host stops the CLI's process group
(SIGTERM, SIGKILL 2 s later). The host stopping (``close()``) stops its CLIs the same way; a host
that is killed leaves them to their callers, whose pipes they still have (the CLI ends when its
caller closes its input, as any CLI does); the caller then cannot learn its exit status and
counts the end as a clean exit (logged). A watched CLI's pipes are the host's: a host that is
killed ends it, and its caller reads the end of its output.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import stat
import subprocess
import threading
import time
from contextlib import suppress
from pathlib import Path
from typing import IO, Any

from .._engine.log import get_logger
from .._engine.transport.spawn import SpawnOptions
from .._errors import CLINotFoundError
from ._client import HostLink
from ._wire import MAX_LINE, HostError, HostGoneError, decode_error, line, read_frame

logger = get_logger("claude_sdkurl.host")

STOP_GRACE = 2.0  # SIGTERM, then SIGKILL this much later, for a CLI whose caller went away
START_TIMEOUT = 30.0  # each step of a start, either side (a host that is stopped answers none, a caller may send no pipes)
GONE_POLL = 0.05  # how often a caller whose host is gone looks for its CLI's end


def _start_time(pid: int) -> str | None:
    """Field 22 of ``/proc/<pid>/stat`` (when the process started: tells a reused pid apart);
    ``None`` when there is no such process or it is a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in (b"Z", b"X"):
        return None
    return fields[19].decode()


class HostSpawner:
    """``spawn_claude_code_process`` for CLIs started by the session host at ``path`` (made by
    :func:`claude_sdkurl.host.spawner`). Plain data, so options holding it travel to batch
    workers; on a machine where no host answers there, the start is a
    :class:`~claude_sdkurl.host.HostUnreachableError` (a ``CLIConnectionError``)."""

    runs_here = True  # the CLI is one of this machine's: found, and its folder checked, as in-process

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"HostSpawner({str(self.path)!r})"

    def __call__(self, options: SpawnOptions) -> HostedProcess:
        link = HostLink(self.path, {"CLINotFoundError": CLINotFoundError})
        conn = link._connect()
        conn.settimeout(None)  # (this connection's reads wait in select, each with its own bound)
        ours: list[int] = []
        theirs: list[int] = []
        try:
            for n in range(3):  # the CLI's stdin (we write it), stdout and stderr (we read them)
                read, write = os.pipe()
                ours.append(write if n == 0 else read)
                theirs.append(read if n == 0 else write)
            conn.sendall(line({"op": "spawn", "command": options.command, "args": list(options.args), "cwd": options.cwd,
                               "env": dict(options.env), "caller": f"worker {os.getpid()}@{socket.gethostname()}"}))  # fmt: skip
            process = HostedProcess(conn, ours)
            process._expect("fds", link)
            socket.send_fds(conn, [b"\0"], theirs)
            process._expect("spawned", link)
            process._started = _start_time(process.pid)
            return process
        except OSError as e:
            conn.close()
            for fd in ours:
                os.close(fd)
            raise HostGoneError(f"the session host went away while starting a CLI: {e}") from None
        except BaseException:
            conn.close()
            for fd in ours:
                os.close(fd)
            raise
        finally:
            for fd in theirs:
                os.close(fd)


class HostedProcess:
    """A CLI the host started, as a ``subprocess.Popen`` is one (see the module doc)."""

    def __init__(self, conn: socket.socket, fds: list[int]) -> None:
        self._conn: socket.socket | None = conn
        self._buffer = b""
        self._lock = threading.Lock()
        self._write = threading.Lock()
        self.pid = 0
        self._started: str | None = None
        self.returncode: int | None = None
        self._host_gone = False
        self.stdin: IO[bytes] | None = None
        self.stdout: IO[bytes] | None = None
        self.stderr: IO[bytes] | None = None
        self._fds = fds

    def _open_pipes(self) -> None:
        stdin, stdout, stderr = self._fds
        self.stdin, self.stdout, self.stderr = open(stdin, "wb", buffering=0), open(stdout, "rb", buffering=0), open(stderr, "rb", buffering=0)

    # ------------------------------------------------------------------ the connection

    def _frame(self, timeout: float | None) -> dict[str, Any] | None:
        """The host's next frame within ``timeout``; ``None`` when none came; ``{}`` at the end
        of the connection (a reset, and a line that is not a frame, end it too: the host is not
        one to talk to any more)."""
        assert self._conn is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while b"\n" not in self._buffer:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                if not select.select([self._conn], [], [], left)[0]:
                    return None
                chunk = self._conn.recv(1 << 16)
                if not chunk or len(self._buffer) + len(chunk) > MAX_LINE:
                    return {}
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\n", 1)
            frame = json.loads(raw)
        except (OSError, ValueError):  # (a host killed may reset the connection rather than close it)
            return {}
        return frame if isinstance(frame, dict) else {}

    def _expect(self, op: str, link: HostLink) -> dict[str, Any]:
        frame = self._frame(START_TIMEOUT)
        if frame is None:
            raise HostGoneError(f"the session host did not answer within {START_TIMEOUT:g} s (stopped?): no CLI was started here")
        if not frame:
            raise HostGoneError("the session host went away before starting the CLI")
        if frame.get("op") == "error":
            raise decode_error(frame, link._errors)
        if frame.get("op") != op:
            raise HostError(f"the session host answered {frame.get('op')!r} where {op!r} was due")
        if op == "spawned":
            pid = frame.get("pid")
            if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
                raise HostError(f"the session host named no process for the CLI: {pid!r}")
            self.pid = pid
            self._open_pipes()  # (last: from here the pipes' file objects own their descriptors)
        return frame

    def _settle(self, timeout: float | None) -> None:
        """Learn the exit status within ``timeout``, if it comes (the lock held)."""
        if self.returncode is not None:
            return
        while not self._host_gone:
            frame = self._frame(timeout)
            if frame is None:
                return
            if frame.get("op") == "exit" and isinstance(frame.get("code"), int) and not isinstance(frame["code"], bool):
                self.returncode = frame["code"]
                self._let_go()
                return
            if frame:
                continue  # (a frame of a later version: not ours to read)
            self._host_gone = True  # the connection ended without an exit: the host is gone
            self._let_go()
            logger.warning("the session host went away; CLI %d runs on until its caller ends it (its exit status will not be known)", self.pid)
        deadline = None if timeout is None else time.monotonic() + timeout
        while _start_time(self.pid) == self._started and self._started is not None:
            if deadline is not None and time.monotonic() >= deadline:
                return
            time.sleep(GONE_POLL)
        self.returncode = 0  # (see the module doc: unknown once the host is gone)

    def _let_go(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    # ------------------------------------------------------------------ Popen's face

    def poll(self) -> int | None:
        with self._lock:
            self._settle(0)
            return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            with self._lock:  # (in slices: poll() from another thread gets its turn)
                self._settle(0.2 if left is None else min(left, 0.2))
                if self.returncode is not None:
                    return self.returncode
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired("claude (session host)", timeout or 0)

    def send_signal(self, sig: int) -> None:
        """To the CLI's process group, through the host (or, the host gone, straight to the
        CLI, if it is still the process the host started)."""
        with self._lock:
            if self.returncode is not None:
                return
            conn = self._conn
        if conn is not None:
            try:
                with self._write:
                    conn.sendall(line({"op": "signal", "sig": int(sig)}))
                return
            except OSError:
                pass
        if self._started is not None and _start_time(self.pid) == self._started:
            try:
                os.killpg(self.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


# ---------------------------------------------------------------------- the host's side


def checked_request(request: dict[str, Any]) -> tuple[list[str], str | None, dict[str, str]]:
    """``(argv, cwd, env)`` of a spawn request; :class:`HostError` naming what is wrong."""
    command, args, cwd, env = request.get("command"), request.get("args"), request.get("cwd"), request.get("env")
    if not isinstance(command, str) or not command:
        raise HostError("a spawn request without a command")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise HostError("a spawn request's args are not a list of strings")
    if cwd is not None and not isinstance(cwd, str):
        raise HostError("a spawn request's cwd is not a string")
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise HostError("a spawn request's env is not a map of strings")
    for text in (command, *args, *(cwd and [cwd] or []), *env, *env.values()):
        if "\0" in text:
            raise HostError("a spawn request with a NUL character")
    return [command, *args], cwd, env


def received_pipes(conn: socket.socket) -> list[int]:
    """The caller's three pipe ends (see the module doc); :class:`HostError` when it sent other
    than three pipes (whatever it sent is closed: the kernel drops those past the third)."""
    if not select.select([conn], [], [], START_TIMEOUT)[0]:
        raise HostError("the caller sent no pipes")
    data, fds, flags, _ = socket.recv_fds(conn, 1, 3)
    try:
        if not data:
            raise HostError("the caller went away before sending its pipes")
        if flags & socket.MSG_CTRUNC:
            raise HostError("a spawn needs three pipes, the caller sent more descriptors")
        if len(fds) != 3:
            raise HostError(f"a spawn needs three pipes, the caller sent {len(fds)} descriptors")
        for fd in fds:
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                raise HostError("a spawn's descriptors must be pipes")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return fds


def stop_group(popen: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the CLI's process group, SIGKILL ``STOP_GRACE`` later if it has not exited."""
    if popen.poll() is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(popen.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            popen.wait(STOP_GRACE)
            return
        except subprocess.TimeoutExpired:
            pass


class _Watched:
    """A spawned CLI shown on the host's relay page: its stdin and stdout are the host's pipes,
    and two threads copy each chunk between them and the caller's, handing the hub a copy (the
    cost of watching, paid by the host). The page watches only: the session's program is the
    caller, elsewhere, so a message or an interrupt from the page is refused."""

    def __init__(self, relay: Any, fds: list[int], request: dict[str, Any], env: dict[str, str], cwd: str | None) -> None:
        from ..relay._hub import secret_values

        self.hub, self.fds = relay.hub, fds
        self.session = self.hub.add_session("stdio", self._refuse, literals=secret_values(env), cwd=cwd)
        caller = request.get("caller")
        if isinstance(caller, str):
            self.session.label = caller[:200]
        self.threads: list[threading.Thread] = []

    @staticmethod
    def _refuse(line: str) -> None:
        raise HostError("the program of this session runs in a caller of the session host; the page watches it")

    def start(self, popen: subprocess.Popen[bytes]) -> None:
        assert popen.stdin is not None and popen.stdout is not None
        for source, sink, direction in ((self.fds[0], popen.stdin.fileno(), "sdk"), (popen.stdout.fileno(), self.fds[1], "cli")):
            thread = threading.Thread(target=self._copy, args=(source, sink, direction, popen), daemon=True,
                                      name=f"claude-sdkurl-host-copy-{popen.pid}")  # fmt: skip
            thread.start()
            self.threads.append(thread)

    def _copy(self, source: int, sink: int, direction: str, popen: subprocess.Popen[bytes]) -> None:
        """One direction, to its end; each thread closes the caller's pipe end it copies with (a
        descriptor closed under another thread's read could be another file's by then)."""
        try:
            while True:
                if direction == "sdk":  # the caller may keep its end open after the CLI is gone
                    while not select.select([source], [], [], 0.5)[0]:
                        if popen.poll() is not None:
                            return
                chunk = os.read(source, 1 << 16)
                if not chunk:
                    break
                self.hub.feed(self.session, direction, chunk)
                view = memoryview(chunk)
                while view:
                    view = view[os.write(sink, view):]
        except OSError:
            pass  # (the other end is gone: the caller, or the CLI)
        finally:
            if direction == "sdk":
                self.hub.input_ended(self.session)
                with suppress(OSError):
                    popen.stdin.close()  # type: ignore[union-attr]
                os.close(self.fds[0])
            else:
                os.close(self.fds[1])  # the caller's stdout ends with the CLI's

    def end(self, code: int) -> None:
        for thread in self.threads:
            thread.join(5)
        self.hub.ended(self.session, code)


def _watching() -> Any:
    """The relay serving the host's page, if it serves one."""
    from ..relay import current

    return current()


def serve_spawn(request: dict[str, Any], caller: Any, running: set[subprocess.Popen[bytes]]) -> None:
    """One spawn request, to the CLI's exit (see the module doc). ``caller``: the connection's
    ``_Caller`` (its socket, reader and ``send``); ``running``: the host's spawned CLIs (its
    ``close()`` stops them). With a relay serving the host's page, the CLI is watched there
    (:class:`_Watched`); else it reads and writes the caller's pipes itself."""
    argv, cwd, env = checked_request(request)
    send = caller.send
    send({"op": "fds"})
    fds = received_pipes(caller.conn)
    relay = _watching()
    watched = _Watched(relay, fds, request, env, cwd) if relay is not None else None
    try:
        try:
            popen = subprocess.Popen(argv, stdin=fds[0] if watched is None else subprocess.PIPE,
                                     stdout=fds[1] if watched is None else subprocess.PIPE, stderr=fds[2], cwd=cwd, env=env,
                                     start_new_session=True, close_fds=True, bufsize=0)  # fmt: skip
        except FileNotFoundError:
            if cwd and not os.path.isdir(cwd):
                raise HostError(f"Working directory does not exist: {cwd}") from None
            raise CLINotFoundError("Claude Code not found", argv[0]) from None  # (the caller raises it as its own)
        except OSError as e:
            raise HostError(f"the host could not start the CLI: {e}") from None
        if watched is not None:
            watched.start(popen)
    except BaseException:
        if watched is not None:
            watched.hub.ended(watched.session, None, "not started")
        for fd in fds:
            os.close(fd)
        raise
    for n, fd in enumerate(fds):
        if watched is None or n == 2:
            os.close(fd)  # (the CLI has its own; a watched CLI's copiers keep theirs)
    running.add(popen)
    try:
        send({"op": "spawned", "pid": popen.pid})
        watcher = threading.Thread(target=_heed, args=(popen, caller.reader), name=f"claude-sdkurl-host-spawn-{popen.pid}", daemon=True)
        watcher.start()
        code = popen.wait()
        try:
            os.killpg(popen.pid, signal.SIGKILL)  # what it left in its group (and the CLI's stdout with it)
        except (ProcessLookupError, PermissionError):
            pass
        if watched is not None:
            watched.end(code)
        send({"op": "exit", "code": code})
        try:
            caller.conn.shutdown(socket.SHUT_RDWR)  # the watcher's read ends
        except OSError:
            pass
        watcher.join(5)
    finally:
        running.discard(popen)


def _heed(popen: subprocess.Popen[bytes], reader: Any) -> None:
    """The caller's signals for its CLI, until the connection ends: then, if the CLI still runs,
    its caller has let go of it, and it is stopped."""
    try:
        while True:
            frame = read_frame(reader)
            if frame is None:
                break
            sig = frame.get("sig")
            if frame.get("op") == "signal" and isinstance(sig, int) and not isinstance(sig, bool) and sig in signal.valid_signals():
                if popen.poll() is None:
                    try:
                        os.killpg(popen.pid, sig)
                    except (ProcessLookupError, PermissionError):
                        pass
    except (OSError, HostError, ValueError):
        pass
    stop_group(popen)
