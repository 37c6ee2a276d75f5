"""What an attempt's sessions said on the wire: each ``can_use_tool`` request and the answer it got,
each hook call; and the faults a task variant plays there (a killed CLI, a tool error), and the
batch driver's rule that no CLI sits on a long rate limit. Read through a tap
(:mod:`claude_sdkurl._engine.transport.taps`) that wraps the transport of every session whose
folder is an attempt's workspace, so a program's own callbacks are seen as well as ours; the
session's path is unchanged (a copy of each line is parsed here, and only the tool-error variant
rewrites one).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._engine.transport import Transport, TransportCallbacks
from .._engine.transport import taps
from ..batch._retry import _retry_delay


INJECTED = "injected tool error (a tool-error variant of the task)"


class Seen:
    """What one attempt's sessions asked and were answered, and the fault it plays on the wire
    (``"kill"``: the CLI is SIGKILLed when its first assistant message arrives; ``"tool-error"``:
    the first in-process tool call's answer becomes an error). Guarded by ``lock``."""

    def __init__(self, fault: str | None = None, release_after: float | None = None) -> None:
        self.lock = threading.Lock()
        self.fault = fault
        self.release_after = release_after  # a CLI about to wait this long on a rate limit is stopped
        self.limited = False
        self.played = False  # the fault has been played (once an attempt)
        self._break: str | None = None  # the tool call's request id whose answer becomes an error
        self.decisions: list[tuple[str, dict[str, Any], str]] = []  # (tool, input, "allow"/"deny")
        self.hooks: list[str] = []  # hook event names, in order
        self._asked: dict[str, tuple[str, dict[str, Any]]] = {}  # request id -> (tool, input)

    def cli_line(self, msg: dict[str, Any]) -> None:
        if msg.get("type") != "control_request":
            return
        request = msg.get("request") or {}
        with self.lock:
            if request.get("subtype") == "can_use_tool":
                self._asked[str(msg.get("request_id"))] = (str(request.get("tool_name")), dict(request.get("input") or {}))
            elif request.get("subtype") == "mcp_message" and self.fault == "tool-error" and not self.played \
                    and (request.get("message") or {}).get("method") == "tools/call":  # fmt: skip
                self._break, self.played = str(msg.get("request_id")), True
            elif request.get("subtype") == "hook_callback":
                event = (request.get("input") or {}).get("hook_event_name")
                if isinstance(event, str):
                    self.hooks.append(event)

    def kill_now(self, msg: dict[str, Any]) -> int | None:
        """The signal to stop the CLI with at this line from it, if any: the ``kill`` fault's
        SIGKILL (once), or SIGTERM when it says it will wait ``release_after`` seconds or more
        on a rate limit or overload (the batch driver's rule: no CLI sits on a limit)."""
        with self.lock:
            if self.fault == "kill" and not self.played and msg.get("type") == "assistant":
                self.played = True
                return signal.SIGKILL
            delay = _retry_delay(msg) if msg.get("type") == "system" and msg.get("subtype") == "api_retry" else None
            if self.release_after is not None and delay is not None and delay >= self.release_after:
                self.limited = True
                return signal.SIGTERM
        return None

    def rewrite(self, line: str, msg: dict[str, Any]) -> str:
        """The SDK's line as sent to the CLI: for the ``tool-error`` fault, the broken call's
        answer is an MCP tool error instead of the tool's result."""
        response = msg.get("response") if msg.get("type") == "control_response" else None
        with self.lock:
            if not isinstance(response, dict) or self._break is None or str(response.get("request_id")) != self._break:
                return line
            self._break = None
        reply = (response.get("response") or {}).get("mcp_response") or {}
        broken = {"jsonrpc": "2.0", "id": reply.get("id"), "result": {"content": [{"type": "text", "text": INJECTED}], "isError": True}}
        out = {"type": "control_response", "response": {"subtype": "success", "request_id": response.get("request_id"),
                                                        "response": {"mcp_response": broken}}}  # fmt: skip
        return json.dumps(out) + ("\n" if line.endswith("\n") else "")

    def sdk_line(self, msg: dict[str, Any]) -> None:
        if msg.get("type") != "control_response":
            return
        response = msg.get("response") or {}
        with self.lock:
            asked = self._asked.pop(str(response.get("request_id")), None)
            if asked is None:
                return
            answer = response.get("response") or {}
            behavior = answer.get("behavior") if response.get("subtype") == "success" else "error"
            self.decisions.append((asked[0], asked[1], str(behavior)))


def _parsed(line: str) -> dict[str, Any] | None:
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    return msg if isinstance(msg, dict) else None


class _Watched(Transport):
    def __init__(self, inner: Transport, seen: Seen) -> None:
        self.inner, self.seen = inner, seen
        self.name = inner.name
        self.can_end_input = inner.can_end_input

    def start(self, callbacks: TransportCallbacks) -> None:
        partial = [""]  # what the last chunk left unfinished (the reader thread's alone)

        def on_data(chunk: bytes | str) -> None:
            try:
                lines, partial[0] = taps.whole_lines(partial[0], chunk, self.name)
                for line in lines:
                    msg = _parsed(line)
                    if msg is not None:
                        self.seen.cli_line(msg)
                        how = self.seen.kill_now(msg)
                        if how is not None:
                            self._kill(how)
            except Exception:  # watching never breaks the run
                pass
            callbacks.on_data(chunk)

        self.inner.start(TransportCallbacks(on_data=on_data, on_exit=callbacks.on_exit, on_reconnect=callbacks.on_reconnect,
                                            on_error=callbacks.on_error))  # fmt: skip

    def wait_ready(self, timeout: float) -> None:
        self.inner.wait_ready(timeout)

    def _kill(self, how: int) -> None:
        process = getattr(self.inner, "process", None)
        pid = getattr(process, "pid", None)
        if isinstance(pid, int):
            os.kill(pid, how)  # SIGKILL: as a crash or the OOM killer would, no goodbye

    def send(self, line: str) -> None:
        msg = _parsed(line.strip())
        if msg is not None and self.seen.fault == "tool-error":
            line = self.seen.rewrite(line, msg)
        self.inner.send(line)
        if msg is not None:
            self.seen.sdk_line(msg)

    def end_input(self) -> None:
        self.inner.end_input()

    def close(self) -> None:
        self.inner.close()

    def abort(self) -> None:
        self.inner.abort()

    def signal_interrupt(self) -> bool:
        return self.inner.signal_interrupt()


class WireTap:
    """Installed for a :func:`~claude_sdkurl.evals.run_eval`: sessions started in a registered
    workspace are watched for that attempt."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_folder: dict[str, Seen] = {}

    def watch(self, folder: Path, fault: str | None = None, release_after: float | None = None) -> Seen:
        seen = Seen(fault, release_after)
        with self._lock:
            self._by_folder[str(folder.resolve())] = seen
        return seen

    def forget(self, folder: Path) -> None:
        with self._lock:
            self._by_folder.pop(str(folder.resolve()), None)

    def replace(self, options: Any) -> Transport | None:
        return None

    def wrap(self, transport: Transport, plan: Any) -> Transport:
        cwd = getattr(plan, "cwd", None)
        if cwd is None:
            return transport
        where = Path(cwd).resolve()
        with self._lock:
            seen = next((s for folder, s in self._by_folder.items() if where == Path(folder) or Path(folder) in where.parents), None)
        return transport if seen is None else _Watched(transport, seen)

    def __enter__(self) -> WireTap:
        taps.install(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        taps.remove(self)


_shared: WireTap | None = None
_users = 0
_shared_lock = threading.Lock()


@contextlib.contextmanager
def shared_tap() -> Iterator[WireTap]:
    """The process's one :class:`WireTap`, installed while any attempt here uses it (attempts
    run on a pool's threads, here or on a worker process, each watching its own folder)."""
    global _shared, _users
    with _shared_lock:
        if _shared is None:
            _shared = WireTap().__enter__()
        _users += 1
        tap = _shared
    try:
        yield tap
    finally:
        with _shared_lock:
            _users -= 1
            if _users == 0 and _shared is not None:
                _shared.__exit__(None, None, None)
                _shared = None
