"""NDJSON over the CLI's stdin and stdout (every CLI version)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

from .._errors import CLIConnectionError
from .base import BurstPacer, Transport, TransportCallbacks
from .process import CLIProcess

logger = logging.getLogger("claude_sdkurl.transport.stdio")

READ_CHUNK = 1 << 20


class StdioTransport(Transport):
    """Runs ``claude ... --input-format stream-json`` and talks over its pipes."""

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
    ) -> None:
        self._argv = argv
        self._env = env
        self._cwd = cwd
        self._on_stderr = on_stderr
        self._user = user
        self._lock = threading.Lock()
        self._closed = False
        self.process: CLIProcess | None = None
        self._reader: threading.Thread | None = None

    def start(self, callbacks: TransportCallbacks) -> None:
        self.process = CLIProcess(
            self._argv, self._env, self._cwd, stdio=True, on_stderr=self._on_stderr, user=self._user
        )
        self._reader = threading.Thread(
            target=self._read, args=(callbacks,), name=f"claude-sdkurl-stdout-{self.process.pid}", daemon=True
        )
        self._reader.start()

    def _read(self, callbacks: TransportCallbacks) -> None:
        proc = self.process
        assert proc is not None and proc.popen.stdout is not None
        fd = proc.popen.stdout.fileno()
        on_data = callbacks.on_data
        pace = BurstPacer()
        try:
            while True:
                try:
                    chunk = os.read(fd, READ_CHUNK)
                except OSError:
                    break
                if not chunk:
                    break
                on_data(chunk)
                pace(len(chunk))
        finally:
            code = proc.wait()
            callbacks.on_exit(code, proc.stderr_tail())

    def wait_ready(self, timeout: float) -> None:
        if self.process is None:
            raise CLIConnectionError("transport not started")

    def send(self, line: str) -> None:
        proc = self.process
        if proc is None or proc.popen.stdin is None:
            raise CLIConnectionError("transport not started")
        data = line.encode("utf-8")
        with self._lock:
            if self._closed:
                raise CLIConnectionError("the session is closed")
            try:
                view = memoryview(data)
                while view:
                    written = proc.popen.stdin.write(view)
                    view = view[written or 0 :]
            except (BrokenPipeError, ValueError, OSError) as e:
                raise CLIConnectionError(f"Claude Code is not accepting input (exit code {proc.returncode})") from e

    def end_input(self) -> None:
        """Close the CLI's stdin: it finishes the run and exits."""
        proc = self.process
        with self._lock:
            if self._closed or proc is None or proc.popen.stdin is None:
                return
            try:
                proc.popen.stdin.close()
            except OSError:
                pass

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            proc = self.process
            if proc is not None and proc.popen.stdin is not None:
                try:
                    proc.popen.stdin.close()  # EOF: the CLI finishes and exits 0
                except OSError:
                    pass
        if proc is not None:
            proc.stop(grace=5.0)
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(10.0)
