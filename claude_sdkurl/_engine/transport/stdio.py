"""NDJSON over the CLI's stdin and stdout (every CLI version)."""

from __future__ import annotations

import collections
import io
import os
import select
import threading
from collections.abc import Callable
from typing import Any

from ..._errors import CLIConnectionError
from ..log import get_logger
from ._pacing import BurstPacer
from .base import Transport, TransportCallbacks
from .process import ABORT_TERM_GRACE, CLIProcess
from .spawn import Spawner

logger = get_logger("claude_sdkurl.transport.stdio")

READ_CHUNK = 1 << 20
IDLE_POLL = 0.5  # seconds between looks at the CLI while its stdout is quiet
EXIT_DRAIN = 0.2  # after the CLI exited, how long a quiet stdout may stay open
EXIT_AFTER_EOF = 1.0  # after stdout's EOF, how long the CLI may take to exit
STOP_GRACE = 5.0  # after stdin's EOF, how long the CLI may take to exit by itself (session file)


_EOF = object()  # in the outbox: close stdin once everything before it is written


class StdioTransport(Transport):
    """Runs ``claude ... --input-format stream-json`` and talks over its pipes.

    Writes go through an outbox and a writer thread, so :meth:`send` never
    blocks: a CLI that stops reading (hung, SIGSTOPped) cannot stall the
    caller, a control request, or :meth:`close` behind a full pipe. The reader
    notices the CLI's exit even when a process it started still holds stdout.
    """

    name = "stdio"
    can_end_input = True

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: str | None = None,
        *,
        on_stderr: Callable[[str], None] | None = None,
        user: str | None = None,
        spawner: Spawner | None = None,
        sdk_env: dict[str, str] | None = None,
    ) -> None:
        self._spawner = spawner
        self._sdk_env = sdk_env
        self._argv = argv
        self._env = env
        self._cwd = cwd
        self._on_stderr = on_stderr
        self._user = user
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._outbox: collections.deque[Any] = collections.deque()
        self._writing = False  # the writer is inside a write (it may be blocked there)
        self._input_closed = False
        self._closed = False
        self._broken: str | None = None
        self.process: CLIProcess | None = None
        self._reader: threading.Thread | None = None
        self._writer: threading.Thread | None = None

    def spawn(self) -> None:
        """Start the CLI's process now (once); :meth:`start` then adds the reader and the
        writer. Nothing is lost meanwhile: the CLI writes nothing before its ``initialize``
        request (2.1.330, measured), which only the writer sends, and what it might write
        would wait in the pipe."""
        if self.process is None:
            self.process = CLIProcess(
                self._argv,
                self._env,
                self._cwd,
                stdio=True,
                on_stderr=self._on_stderr,
                user=self._user,
                spawner=self._spawner,
                sdk_env=self._sdk_env,
            )

    def start(self, callbacks: TransportCallbacks) -> None:
        self.spawn()
        assert self.process is not None
        pid = self.process.pid
        self._reader = threading.Thread(target=self._read, args=(callbacks,), name=f"claude-sdkurl-stdout-{pid}", daemon=True)
        self._writer = threading.Thread(target=self._write_loop, name=f"claude-sdkurl-stdin-{pid}", daemon=True)
        self._reader.start()
        self._writer.start()

    # ------------------------------------------------------------------ reading

    def _read(self, callbacks: TransportCallbacks) -> None:
        proc = self.process
        assert proc is not None and proc.popen.stdout is not None
        fd = proc.popen.stdout.fileno()
        os.set_blocking(fd, False)
        on_data = callbacks.on_data
        pace = BurstPacer()
        note = ""
        try:
            while True:
                try:
                    chunk = os.read(fd, READ_CHUNK)
                except BlockingIOError:
                    # Nothing to read: wait for data, and look at the CLI meanwhile. Once it has
                    # exited, what it wrote is in the pipe; a process it left behind holding
                    # stdout must not keep us here.
                    if not select.select([fd], [], [], IDLE_POLL)[0] and proc.returncode is not None:
                        if not select.select([fd], [], [], EXIT_DRAIN)[0]:
                            break
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                on_data(chunk)
                pace(len(chunk))
        finally:
            code = proc.wait(EXIT_AFTER_EOF)
            if code is None and not self._closed:
                # It closed its output but lives on: nothing more can come from it.
                note = "\n[claude_sdkurl: Claude Code closed its output but did not exit; stopped it]"
                code = proc.stop(grace=0, term_grace=ABORT_TERM_GRACE)
            elif code is None:
                code = proc.wait()
            try:
                proc.popen.stdout.close()
            except OSError:
                pass
            callbacks.on_exit(code, proc.stderr_tail() + note)

    # ------------------------------------------------------------------ writing

    def _write_loop(self) -> None:
        proc = self.process
        assert proc is not None and proc.popen.stdin is not None
        stdin = proc.popen.stdin
        flush = getattr(stdin, "flush", None) if not isinstance(stdin, io.FileIO) else None
        while True:
            with self._wake:
                while not self._outbox and not self._closed:
                    self._wake.wait()
                if self._closed:  # what was not written yet is dropped with the session
                    break
                item = self._outbox.popleft()
                if item is _EOF:
                    break
                self._writing = True
            try:
                view = memoryview(item)
                while view:
                    written = stdin.write(view)
                    view = view[written or 0 :]
                if flush is not None:
                    flush()  # a buffered pipe (a spawner's Popen with the default bufsize)
            except (OSError, ValueError) as e:
                with self._lock:
                    self._broken = f"Claude Code is not accepting input (exit code {proc.returncode}): {e}"
                    self._outbox.clear()
                    self._writing = False
                break
            with self._lock:
                self._writing = False
        try:
            stdin.close()  # EOF: the CLI finishes the run and exits
        except OSError:
            pass

    def wait_ready(self, timeout: float) -> None:
        if self.process is None:
            raise CLIConnectionError("transport not started")

    def send(self, line: str) -> None:
        if self.process is None:
            raise CLIConnectionError("transport not started")
        data = line.encode("utf-8")
        with self._wake:
            if self._closed:
                raise CLIConnectionError("the session is closed")
            if self._broken is not None:
                raise CLIConnectionError(self._broken)
            if self._input_closed:
                raise CLIConnectionError("the CLI's input is closed (end of input)")
            self._outbox.append(data)
            self._wake.notify()

    def end_input(self) -> None:
        """Close the CLI's stdin once what was sent is written: it finishes the run and exits."""
        with self._wake:
            if not self._input_closed:
                self._input_closed = True
                self._outbox.append(_EOF)
                self._wake.notify()

    def abort(self) -> None:
        self.close(graceful=False)

    def cli_pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def signal_interrupt(self) -> bool:
        # 2.1.330 and 2.1.332 with stdin at EOF: SIGINT ends the turn, the transcript keeps the
        # partial answer and "[Request interrupted by user]", exit 0 within 0.1 s (measured;
        # SIGTERM exits 143 and the transcript keeps only the prompt).
        return self.process is not None and self.process.interrupt()

    def close(self, graceful: bool = True) -> None:
        with self._wake:
            if self._closed:
                return
            self._closed = True
            # A writer stuck on a full pipe: the CLI is not reading, so waiting for it to
            # take stdin's EOF and exit by itself is pointless.
            stuck = self._writing or bool(self._outbox and self._outbox[0] is not _EOF)
            self._wake.notify()
        proc = self.process
        if proc is not None and self._reader is None:
            # Spawned, never started (the session that was to take it failed first): the CLI
            # was told nothing, and no writer or reader will close its pipes; done here.
            proc.stop(grace=0.0, term_grace=ABORT_TERM_GRACE)
            for pipe in (proc.popen.stdin, proc.popen.stdout):
                try:
                    if pipe is not None:
                        pipe.close()
                except OSError:
                    pass
            return
        if proc is not None:
            if graceful and not stuck:
                proc.stop(grace=STOP_GRACE)
            else:
                proc.stop(grace=0.0, term_grace=ABORT_TERM_GRACE)
        me = threading.current_thread()
        for t in (self._writer, self._reader):
            if t is not None and t is not me:
                t.join(10.0)
