"""A transport that plays the CLI in Python, like httpx's ``MockTransport``.

For fast unit tests of code that uses :func:`query` or :class:`ClaudeClient`
without starting any process::

    def handler(message, cli):
        if message["type"] == "user":
            cli.turn("pong")

    for msg in query("hi", transport=MockTransport(handler)):
        ...

The handler sees every message the SDK sends (``initialize`` is answered for
you unless the handler answers it) and replies through the :class:`FakeCLI`
it is given. It runs on its own thread, so it may block (e.g. waiting for a
permission answer with :meth:`FakeCLI.request`).
"""

from __future__ import annotations

import json
import queue
import threading
import uuid
from collections.abc import Callable
from typing import Any

from .._engine.transport.base import Transport, TransportCallbacks


class FakeCLI:
    """What a :class:`MockTransport` handler uses to speak as the CLI."""

    def __init__(self, transport: MockTransport) -> None:
        self._t = transport
        self.session_id = str(uuid.uuid4())
        self.version = "2.1.330"  # what the init message reports as claude_code_version
        self.sent: list[dict[str, Any]] = []
        self._answers: dict[str, queue.SimpleQueue[dict[str, Any]]] = {}

    def emit(self, message: dict[str, Any] | str | bytes) -> None:
        """Write a message (a dict) or raw data (str/bytes, sent as is) to the SDK."""
        if isinstance(message, dict):
            message = json.dumps(message) + "\n"
        self._t._deliver(message)

    def turn(self, text: str, *, model: str = "mock-model") -> None:
        """Emit a whole successful turn: system/init, an assistant text message, a result."""
        sid = self.session_id
        self.emit(
            {"type": "system", "subtype": "init", "session_id": sid, "uuid": str(uuid.uuid4()), "claude_code_version": self.version}
        )
        self.emit(
            {
                "type": "assistant",
                "message": {"id": "msg_fake", "model": model, "role": "assistant", "content": [{"type": "text", "text": text}]},
                "parent_tool_use_id": None,
                "session_id": sid,
                "uuid": str(uuid.uuid4()),
            }
        )
        self.result(text)

    def result(self, text: str = "", *, subtype: str = "success", is_error: bool = False) -> None:
        """Emit a ``result`` message."""
        self.emit(
            {
                "type": "result",
                "subtype": subtype,
                "is_error": is_error,
                "duration_ms": 1,
                "duration_api_ms": 1,
                "num_turns": 1,
                "result": text,
                "session_id": self.session_id,
                "total_cost_usd": 0.0,
                "usage": {},
                "uuid": str(uuid.uuid4()),
            }
        )

    def respond(self, request: dict[str, Any], response: dict[str, Any] | None = None) -> None:
        """Answer a control request the SDK sent."""
        self._t._answered.add(request["request_id"])
        body: dict[str, Any] = {"subtype": "success", "request_id": request["request_id"]}
        if response is not None:
            body["response"] = response
        self.emit({"type": "control_response", "response": body})

    def request(self, subtype: str, timeout: float = 30.0, **fields: Any) -> dict[str, Any]:
        """Send a control request to the SDK (e.g. ``can_use_tool``) and wait for its answer."""
        request_id = str(uuid.uuid4())
        box: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        self._answers[request_id] = box
        self.emit({"type": "control_request", "request_id": request_id, "request": {"subtype": subtype, **fields}})
        return box.get(timeout=timeout)

    def exit(self, code: int = 0, stderr: str = "") -> None:
        """End the fake process with ``code``."""
        self._t._exit(code, stderr)


class MockTransport(Transport):
    """A :class:`Transport` whose CLI is the Python ``handler(message, cli)``."""

    name = "mock"
    can_end_input = True

    def __init__(self, handler: Callable[[dict[str, Any], FakeCLI], None]) -> None:
        self.handler = handler
        self.cli = FakeCLI(self)
        self._inbox: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        self._callbacks: TransportCallbacks | None = None
        self._lock = threading.Lock()
        self._exited = False
        self._thread: threading.Thread | None = None
        self._answered: set[str] = set()

    def start(self, callbacks: TransportCallbacks) -> None:
        self._callbacks = callbacks
        self._thread = threading.Thread(target=self._run, name="claude-sdkurl-mock-cli", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            msg = self._inbox.get()
            if msg is None:
                self._exit(0, "")
                return
            self.cli.sent.append(msg)
            try:
                self.handler(msg, self.cli)
            except Exception as e:  # a broken handler is a crashed CLI
                self._exit(1, f"mock handler raised {type(e).__name__}: {e}")
                return
            if (
                msg.get("type") == "control_request"
                and (msg.get("request") or {}).get("subtype") == "initialize"
                and msg["request_id"] not in self._answered
            ):
                # as the pinned current CLI answers (it honours onFailure on hook matchers, and
                # takes the MCP servers sent in initialize)
                answer = {"commands": [], "models": [], "pid": 0, "hook_on_failure_supported": True, "hooks_applied": True}
                if "mcpServers" in msg["request"]:
                    answer["mcp_servers_applied"] = True
                self.cli.respond(msg, answer)

    def _deliver(self, data: str | bytes) -> None:
        with self._lock:
            if self._exited or self._callbacks is None:
                return
            self._callbacks.on_data(data)

    def _exit(self, code: int, stderr: str) -> None:
        with self._lock:
            if self._exited:
                return
            self._exited = True
            callbacks = self._callbacks
        if callbacks is not None:
            callbacks.on_exit(code, stderr)

    def wait_ready(self, timeout: float) -> None:
        return None

    def send(self, line: str) -> None:
        if not line.endswith("\n"):
            raise AssertionError("the SDK sent a line without its trailing newline")
        msg = json.loads(line)
        if msg.get("type") == "control_response":
            # An answer to FakeCLI.request() goes straight to the waiting handler.
            box = self.cli._answers.pop(str((msg.get("response") or {}).get("request_id")), None)
            if box is not None:
                self.cli.sent.append(msg)
                box.put(msg["response"])
                return
        self._inbox.put(msg)

    def end_input(self) -> None:
        """Like stdin EOF: the fake CLI handles what it was sent, then exits 0."""
        self._inbox.put(None)

    def close(self) -> None:
        self._inbox.put(None)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5.0)
