"""A scripted mock of the Anthropic Messages API, for offline tests with the real CLI.

::

    from claude_sdkurl.testing import MockMessagesAPI, text, tool_use

    with MockMessagesAPI() as api:
        api.enqueue(tool_use("Bash", {"command": "echo hi"}), text("done"))
        options = ClaudeAgentOptions(env=offline_env(api.url, tmp_home))
        for msg in query("run it", options):
            ...
        assert api.requests[-1].tool_results()  # what the model was sent

Each ``POST /v1/messages`` takes the next queued :class:`Reply`; when the
queue is empty the ``responder`` decides (default: ``pong``, or
``done (tool_result was: ...)`` right after a tool result). Streaming
(SSE) and non-streaming (JSON) requests are both served; every request is
recorded in :attr:`MockMessagesAPI.requests`.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .faults import FaultBook


@dataclass(slots=True)
class Reply:
    """One scripted model reply.

    ``blocks`` are Anthropic content blocks (``text``, ``tool_use``,
    ``thinking``). ``delay`` seconds pass before each streamed delta;
    ``chunk`` is the number of characters per text delta. ``status`` other
    than 200 answers with an API error of ``error_type``, with ``headers``
    (``{"retry-after": "120"}`` for a rate limit).
    """

    blocks: list[dict[str, Any]] = field(default_factory=list)
    """The content blocks (``text``, ``tool_use``, ``thinking``) as the API sends them."""
    stop_reason: str | None = None
    """The reply's stop reason; ``None``: ``tool_use`` when a block is one, else ``end_turn``."""
    delay: float = 0.0
    """Seconds before each streamed delta."""
    chunk: int = 4096
    """Characters per text delta."""
    status: int = 200
    """The HTTP status; other than 200, an API error of ``error_type``."""
    error_type: str = "api_error"
    """The API error's type (``rate_limit_error``, ``overloaded_error``, ...)."""
    error_message: str = "mock error"
    """The API error's message."""
    input_tokens: int = 10
    """The input tokens the usage reports."""
    on_start: Callable[[], None] | None = None
    """Called when the mock starts serving this reply."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra response headers (``retry-after`` on a 429)."""


def text(s: str, **kw: Any) -> Reply:
    """A reply that is one text block."""
    return Reply([{"type": "text", "text": s}], **kw)


_tool_ids = itertools.count(1)


def tool_use(name: str, input: dict[str, Any], id: str | None = None, **kw: Any) -> Reply:
    """A reply calling one tool."""
    return Reply([{"type": "tool_use", "id": id or f"toolu_mock_{next(_tool_ids)}", "name": name, "input": input}], **kw)


def thinking(thought: str, then: str = "", **kw: Any) -> Reply:
    """A reply with a thinking block, then (optionally) text."""
    blocks: list[dict[str, Any]] = [{"type": "thinking", "thinking": thought, "signature": "mock-signature"}]
    if then:
        blocks.append({"type": "text", "text": then})
    return Reply(blocks, **kw)


def error(status: int = 500, error_type: str = "api_error", message: str = "mock error") -> Reply:
    """An API error reply."""
    return Reply(status=status, error_type=error_type, error_message=message)


@dataclass(slots=True)
class RecordedRequest:
    """One request the CLI made."""

    method: str
    """The HTTP method."""
    path: str
    """The path (``/v1/messages``)."""
    headers: dict[str, str]
    """The request's headers."""
    body: Any
    """The request's JSON body."""
    played: str | None = None
    """The fault played for it (:func:`claude_sdkurl.testing.fault_env`), if any."""
    served_usage: dict[str, int] | None = None
    """The usage of the message the mock answered with."""
    cut: bool = False
    """The client closed a streamed answer before its end (an interrupt)."""

    def messages(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("messages") or []) if isinstance(self.body, dict) else []

    def last_user_content(self) -> list[dict[str, Any]]:
        """Content blocks of the last user message (a str content becomes one text block)."""
        for m in reversed(self.messages()):
            if m.get("role") == "user":
                c = m.get("content")
                return [{"type": "text", "text": c}] if isinstance(c, str) else list(c or [])
        return []

    def last_user_text(self) -> str:
        """The text of the last user message's last text block."""
        texts = [b.get("text", "") for b in self.last_user_content() if b.get("type") == "text"]
        return texts[-1] if texts else ""

    def tool_results(self) -> list[dict[str, Any]]:
        """``tool_result`` blocks in the last user message."""
        return [b for b in self.last_user_content() if b.get("type") == "tool_result"]


def default_responder(request: RecordedRequest) -> Reply:
    """``pong``, or ``done (tool_result was: ...)`` right after a tool result."""
    results = request.tool_results()
    if results:
        content = results[-1].get("content")
        if isinstance(content, list):
            content = " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
        return text(f"done (tool_result was: {content})")
    return text("pong")


class MockMessagesAPI:
    """A Messages API on 127.0.0.1 (random port) that answers from a script."""

    def __init__(self, responder: Callable[[RecordedRequest], Reply | str] | None = None) -> None:
        self.responder = responder or default_responder
        self.requests: list[RecordedRequest] = []
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._faults = FaultBook()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    # ------------------------------------------------------------------ script

    def enqueue(self, *replies: Reply | str) -> None:
        """Queue replies for the next ``/v1/messages`` calls, in order."""
        with self._lock:
            self._queue.extend(text(r) if isinstance(r, str) else r for r in replies)

    def message_requests(self) -> list[RecordedRequest]:
        """Recorded ``POST /v1/messages`` calls only."""
        return [r for r in self.requests if r.method == "POST" and r.path.split("?")[0] == "/v1/messages"]

    def _next_reply(self, request: RecordedRequest) -> Reply:
        played = self._faults.play(request.headers)  # a run that asked for a fault (testing.faults)
        if played is not None:
            request.played = played.name
        if played is not None and played.status != 200:
            return Reply(status=played.status, error_type=played.error_type, error_message=f"mock fault ({played.error_type})",
                         headers={"retry-after": played.retry_after} if played.retry_after else {})  # fmt: skip
        reply = self._scripted(request)
        if played is not None:
            reply = dataclasses.replace(reply, delay=played.delay or reply.delay, chunk=played.chunk or reply.chunk)
        return reply

    def _scripted(self, request: RecordedRequest) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        reply = self.responder(request)
        return text(reply) if isinstance(reply, str) else reply

    # ------------------------------------------------------------------ server

    def start(self) -> MockMessagesAPI:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _record(self, body: Any) -> RecordedRequest:
                rec = RecordedRequest(self.command, self.path, dict(self.headers.items()), body)
                with api._lock:
                    api.requests.append(rec)
                return rec

            def do_HEAD(self) -> None:  # noqa: N802 - reachability probe
                self._record(None)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:  # noqa: N802
                self._record(None)
                self._json(200, {})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                rec = self._record(body)
                path = self.path.split("?")[0]
                if path == "/v1/messages/count_tokens":
                    self._json(200, {"input_tokens": 42})
                elif path == "/v1/messages":
                    api._serve_messages(self, rec)
                else:
                    self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})

            def _json(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="mock-messages-api", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def __enter__(self) -> MockMessagesAPI:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ------------------------------------------------------------------ replies

    def _serve_messages(self, h: BaseHTTPRequestHandler, rec: RecordedRequest) -> None:
        reply = self._next_reply(rec)
        if reply.on_start is not None:
            reply.on_start()
        body = rec.body if isinstance(rec.body, dict) else {}
        if reply.status != 200:
            data = json.dumps(
                {"type": "error", "error": {"type": reply.error_type, "message": reply.error_message}}
            ).encode()
            h.send_response(reply.status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            for name, value in reply.headers.items():
                h.send_header(name, value)
            h.end_headers()
            h.wfile.write(data)
            return
        model = body.get("model", "claude-sonnet-4-6")
        msg_id = f"msg_mock_{next(self._ids)}"
        stop_reason = reply.stop_reason or (
            "tool_use" if any(b.get("type") == "tool_use" for b in reply.blocks) else "end_turn"
        )
        out_tokens = max(1, sum(len(json.dumps(b)) for b in reply.blocks) // 4)
        usage = {
            "input_tokens": reply.input_tokens,
            "output_tokens": out_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        rec.served_usage = dict(usage)
        if not body.get("stream"):
            h._json(  # type: ignore[attr-defined]
                200,
                {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": reply.blocks,
                    "stop_reason": stop_reason,
                    "stop_sequence": None,
                    "usage": usage,
                },
            )
            return
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        h.send_header("Transfer-Encoding", "chunked")
        for name, value in reply.headers.items():  # e.g. the rate-limit headers of an answer
            h.send_header(name, value)
        try:
            h.end_headers()
        except (BrokenPipeError, ConnectionResetError):
            rec.cut = True  # the CLI aborted before the answer began (an interrupt)
            return

        def send(event: dict[str, Any]) -> None:
            payload = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
            h.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))
            h.wfile.flush()

        def pause() -> None:
            if reply.delay:
                time.sleep(reply.delay)

        try:
            send(
                {
                    "type": "message_start",
                    "message": {
                        "id": msg_id,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {**usage, "output_tokens": 1},
                    },
                }
            )
            for index, block in enumerate(reply.blocks):
                kind = block.get("type")
                if kind == "text":
                    send({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
                    s = block["text"]
                    for i in range(0, max(len(s), 1), reply.chunk):
                        pause()
                        send(
                            {
                                "type": "content_block_delta",
                                "index": index,
                                "delta": {"type": "text_delta", "text": s[i : i + reply.chunk]},
                            }
                        )
                elif kind == "tool_use":
                    start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                    send({"type": "content_block_start", "index": index, "content_block": start})
                    pause()
                    send(
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
                        }
                    )
                elif kind == "thinking":
                    start = {"type": "thinking", "thinking": "", "signature": ""}
                    send({"type": "content_block_start", "index": index, "content_block": start})
                    pause()
                    send(
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "thinking_delta", "thinking": block["thinking"]},
                        }
                    )
                    send(
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "signature_delta", "signature": block.get("signature", "sig")},
                        }
                    )
                else:
                    send({"type": "content_block_start", "index": index, "content_block": block})
                send({"type": "content_block_stop", "index": index})
            send(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": out_tokens},
                }
            )
            send({"type": "message_stop"})
            h.wfile.write(b"0\r\n\r\n")
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            rec.cut = True  # the CLI aborted the stream (interrupt)
