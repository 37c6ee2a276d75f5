"""What an attempt's sessions said on the wire: each ``can_use_tool`` request and the answer it got,
each hook call; and the faults a task variant plays there (a killed CLI, a tool error), and the
batch driver's rule that no CLI sits on a long rate limit. Read through a tap
(:mod:`claude_sdkurl._engine.transport.taps`) that wraps the transport of every session whose
folder is an attempt's workspace, so a program's own callbacks are seen as well as ours; the
session's path is unchanged (a copy of each line is parsed here; only the tool-error variant
changes it: it holds back one tool call from the program and answers it itself).
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
    the first in-process tool call is answered with an error before the tool runs: the program
    never sees that call). Guarded by ``lock``."""

    def __init__(self, fault: str | None = None, release_after: float | None = None) -> None:
        self.lock = threading.Lock()
        self.fault = fault
        self.release_after = release_after  # a CLI about to wait this long on a rate limit is stopped
        self.limited = False
        self.played = False  # the fault has been played (once an attempt)
        self._break: dict[str, Any] | None = None  # the CLI's tool call to answer with an error, once seen
        self.decisions: list[tuple[str, dict[str, Any], str]] = []  # (tool, input, "allow"/"deny")
        self.hooks: list[str] = []  # hook event names, in order
        self._asked: dict[str, tuple[str, dict[str, Any]]] = {}  # request id -> (tool, input)
        # API calls the CLI said it got an answer to and no result has reported the cost of yet:
        # message id -> {"model", "usage", "session_id"} (what a CLI killed mid-turn spent)
        self.unreported: dict[str, dict[str, Any]] = {}

    def cli_line(self, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        if kind == "assistant":
            message = msg.get("message") or {}
            if isinstance(message, dict) and isinstance(message.get("id"), str):
                with self.lock:
                    call = self.unreported.setdefault(message["id"], {"model": message.get("model"), "usage": {},
                                                                      "session_id": msg.get("session_id"), "said": 0})  # fmt: skip
                    call["usage"] = message.get("usage") or call["usage"]
                    # what it said so far (one line a content block): its output is at least that
                    call["said"] += len(json.dumps(message.get("content") or []))
            return
        if kind == "result":
            with self.lock:  # its figures cover every call of its session so far
                session = msg.get("session_id")
                self.unreported = {k: v for k, v in self.unreported.items() if v.get("session_id") != session}
            return
        if kind != "control_request":
            return
        request = msg.get("request") or {}
        with self.lock:
            if request.get("subtype") == "can_use_tool":
                self._asked[str(msg.get("request_id"))] = (str(request.get("tool_name")), dict(request.get("input") or {}))
            elif request.get("subtype") == "mcp_message" and self.fault == "tool-error" and not self.played \
                    and (request.get("message") or {}).get("method") == "tools/call":  # fmt: skip
                self._break, self.played = msg, True
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

    def broken_answer(self, msg: dict[str, Any]) -> str | None:
        """For the ``tool-error`` fault's call (``msg``, from the CLI): the answer the CLI gets in
        place of the tool's, an MCP tool error (the call is then held back from the program)."""
        with self.lock:
            if self._break is not msg:
                return None
            self._break = None
        call = (msg.get("request") or {}).get("message") or {}
        broken = {"jsonrpc": "2.0", "id": call.get("id"), "result": {"content": [{"type": "text", "text": INJECTED}], "isError": True}}
        out = {"type": "control_response", "response": {"subtype": "success", "request_id": msg.get("request_id"),
                                                        "response": {"mcp_response": broken}}}  # fmt: skip
        return json.dumps(out) + "\n"

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

        # With the tool-error fault the program gets whole lines only (what it parses anyway),
        # so that the broken call's line can be left out of what it reads.
        whole = self.seen.fault == "tool-error"

        def on_data(chunk: bytes | str) -> None:
            kept: list[str] = []
            held = False
            lines, partial[0] = taps.whole_lines(partial[0], chunk, self.name)
            for line in lines:
                try:
                    msg = _parsed(line)
                    if msg is not None:
                        self.seen.cli_line(msg)
                        how = self.seen.kill_now(msg)
                        if how is not None:
                            self._kill(how)
                        answer = self.seen.broken_answer(msg) if whole else None
                        if answer is not None:  # answered here, before the tool could run
                            held = True
                            self.inner.send(answer)
                            continue
                except Exception:  # watching never breaks the run
                    pass
                kept.append(line)
            if not whole:
                callbacks.on_data(chunk)
            elif self.name == "websocket":
                if not held:
                    callbacks.on_data(chunk)  # one message: as it came
            elif kept:
                callbacks.on_data("".join(line + "\n" for line in kept).encode())

        def on_exit(code: int | None, stderr: str) -> None:
            if whole and partial[0] and self.name != "websocket":
                callbacks.on_data(partial[0].encode("utf-8", errors="surrogateescape"))  # a last line with no newline: as it came
            callbacks.on_exit(code, stderr)

        self.inner.start(TransportCallbacks(on_data=on_data, on_exit=on_exit, on_reconnect=callbacks.on_reconnect,
                                            on_error=callbacks.on_error, on_outside=callbacks.on_outside))  # fmt: skip

    def wait_ready(self, timeout: float) -> None:
        self.inner.wait_ready(timeout)

    def _kill(self, how: int) -> None:
        process = getattr(self.inner, "process", None)
        pid = getattr(process, "pid", None)
        if isinstance(pid, int):
            os.kill(pid, how)  # SIGKILL: as a crash or the OOM killer would, no goodbye

    def send(self, line: str) -> None:
        msg = _parsed(line.strip())
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
