"""The sans-I/O core of a session: NDJSON in, events out; intents in, lines out.

:class:`Protocol` does no I/O, starts no thread and knows nothing of sockets
or processes. A transport feeds it whatever bytes or text frames arrived
(:meth:`Protocol.receive_data`) and gets back events; the session asks it for
the exact line to write for a user message or a control request/response.
Every line it produces is valid JSON (no NaN, no Infinity) ending in exactly
one ``\\n``: the CLI dies on anything else.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
from dataclasses import dataclass
from typing import Any, Union

from .._errors import CLIJSONDecodeError, MessageParseError
from .limits import DEFAULT_MAX_LINE
from .parse import parse_message, stream_event as _stream_event
from .run import RunTracker
from ..types import Message, UnknownMessage

logger = logging.getLogger("claude_sdkurl.protocol")

SEEN_UUIDS = 20_000  # the CLI replays at most its last 1000 uuid-bearing messages on reconnect

_loads = json.loads


@dataclass(slots=True)
class MessageReceived:
    """A conversation message (user, assistant, system, result, stream_event, ...)."""

    message: Message


@dataclass(slots=True)
class ControlRequestReceived:
    """The CLI asks the host something (``can_use_tool``, ``hook_callback``, ``mcp_message``, ...)."""

    request_id: str
    subtype: str
    request: dict[str, Any]


@dataclass(slots=True)
class PendingRequest:
    """A control request we sent and still await the answer to.

    ``waiter`` is the I/O layer's own: whatever it needs to wake the caller
    (the sans-I/O core only carries it from the request to its answer).
    """

    request_id: str
    subtype: str
    line: str
    waiter: Any = None


@dataclass(slots=True)
class ControlResponseReceived:
    """The CLI answered one of our control requests."""

    request_id: str
    success: bool
    response: dict[str, Any]
    error: str | None
    raw: dict[str, Any]
    request: PendingRequest | None = None


@dataclass(slots=True)
class ControlCancelReceived:
    """The CLI abandoned a control request it had sent us."""

    request_id: str


@dataclass(slots=True)
class RunChanged:
    """The run's state moved (see :class:`claude_sdkurl._engine.run.RunTracker`): ``effects`` in order."""

    effects: list[Any]


@dataclass(slots=True)
class MirrorFrame:
    """A ``transcript_mirror`` frame (``--session-mirror``): entries the CLI just wrote to
    ``file_path``, for the session store. Never a message: the user does not see it."""

    file_path: str
    entries: list[Any]


@dataclass(slots=True)
class ProtocolErrorReceived:
    """A line that cannot be decoded; the session cannot trust the stream after it."""

    error: CLIJSONDecodeError


Event = Union[
    MessageReceived,
    ControlRequestReceived,
    ControlResponseReceived,
    ControlCancelReceived,
    RunChanged,
    MirrorFrame,
    ProtocolErrorReceived,
]


def encode(obj: dict[str, Any]) -> str:
    """Serialise one outgoing message as a single NDJSON line.

    Raises ``TypeError``/``ValueError`` for values JSON cannot carry (sets,
    objects, NaN, infinities) instead of writing a line the CLI would die on.
    """
    try:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"
    except (TypeError, ValueError) as e:
        raise type(e)(f"message cannot be sent to the CLI as JSON: {e}") from e


class Protocol:
    """State of one CLI conversation, independent of how bytes travel.

    Messages carrying a ``uuid`` are delivered once: when the WebSocket CLI
    reconnects it re-sends every uuid-bearing message since its start, and
    those replays are dropped here (the last :data:`SEEN_UUIDS` uuids are
    remembered, so memory stays bounded).

    Args:
        max_line: the largest line accepted from the CLI, in bytes.
    """

    def __init__(
        self, max_line: int = DEFAULT_MAX_LINE, seen_uuids: int = SEEN_UUIDS, run: RunTracker | None = None
    ) -> None:
        self.max_line = max_line
        # The end-of-run bookkeeping (the session's); without it every message is delivered.
        self.run = run
        self._seen: dict[str, None] = {}
        self._seen_max = seen_uuids
        self.duplicates = 0
        self._pending: list[bytes] = []
        self._pending_len = 0
        self._ids = itertools.count(1)
        self._prefix = os.urandom(4).hex()
        # the control requests we sent and await an answer for, by request_id
        self.pending: dict[str, PendingRequest] = {}

    # ------------------------------------------------------------------ inbound

    def receive_data(self, data: bytes | str) -> list[Event]:
        """Feed bytes or a text frame from the CLI; return the events it completes.

        Only the new data is scanned for newlines, and a long line is joined
        once when it completes, so a line arriving in many small chunks costs
        linear time.
        """
        nl_char: Any = "\n" if isinstance(data, str) else b"\n"
        nl = data.find(nl_char)
        if not self._pending:
            if nl == len(data) - 1:
                # Fast path: exactly one whole line, which is what the CLI sends per frame.
                if nl + 1 > self.max_line:
                    return [self._too_long(nl + 1)]
                return self._line(data)
        events: list[Event] = []
        pos = 0
        while nl >= 0:
            piece = data[pos : nl + 1]
            if self._pending:
                self._hold(piece)
                line: bytes | str = self._take()
            else:
                line = piece
            if len(line) > self.max_line:
                events.append(self._too_long(len(line)))
            else:
                events.extend(self._line(line))
            pos = nl + 1
            nl = data.find(nl_char, pos)
        if pos < len(data):
            self._hold(data[pos:])
        if self._pending_len > self.max_line:
            events.append(self._too_long(self._pending_len))
            self._pending.clear()
            self._pending_len = 0
        return events

    def _hold(self, piece: bytes | str) -> None:
        self._pending.append(piece.encode() if isinstance(piece, str) else piece)
        self._pending_len += len(piece)

    def _take(self) -> bytes:
        line = b"".join(self._pending)
        self._pending.clear()
        self._pending_len = 0
        return line

    def receive_eof(self) -> list[Event]:
        """The byte stream ended: parse a final line that lacked its newline."""
        if not self._pending:
            return []
        tail = self._take()
        events = self._line(tail)
        if events and isinstance(events[0], ProtocolErrorReceived):
            logger.debug("dropping truncated line at end of stream: %r", tail[:200])
            return []
        return events

    def _too_long(self, size: int) -> ProtocolErrorReceived:
        return ProtocolErrorReceived(
            CLIJSONDecodeError(  # the official SDK's texts, which users match on
                f"JSON message exceeded maximum buffer size of {self.max_line} bytes",
                ValueError(f"Buffer size {size} exceeds limit {self.max_line}"),
            )
        )

    def _line(self, line: bytes | str) -> list[Event]:
        first = line[:1]
        if first != "{" and first != b"{":
            line = line.strip()
            if not line:
                return []
            if line[:1] not in ("{", b"{"):
                logger.debug("skipping non-JSON line from the CLI: %r", line[:200])
                return []
        try:
            data = _loads(line)
        except (ValueError, RecursionError) as e:  # RecursionError: JSON nested too deep to decode
            text = line.decode(errors="replace") if isinstance(line, bytes) else line
            return [ProtocolErrorReceived(CLIJSONDecodeError(text.strip()[:10_000], e))]
        if type(data) is not dict:
            return []
        return self.receive_message(data)

    def receive_message(self, data: dict[str, Any]) -> list[Event]:
        """Classify one decoded wire message. Never raises: a frame of a shape we cannot
        use is delivered as :class:`UnknownMessage` (with a logged warning) instead."""
        try:
            return self._classify(data)
        except Exception as e:  # a reader thread must survive any input
            return [self._unknown(data, f"Unusable {data.get('type')!r} frame from the CLI ({type(e).__name__}: {e})")]

    def _classify(self, data: dict[str, Any]) -> list[Event]:
        kind = data.get("type")
        if kind == "stream_event":  # the hot path: thousands per turn
            if self._is_replay(data):
                return []
            run = self.run
            if run is not None:
                run.observe(data)
            try:
                event: Event = MessageReceived(_stream_event(data))
            except KeyError as e:
                event = self._unknown(data, f"Malformed 'stream_event' message from the CLI: {e!r}")
            if run is not None and run._effects:
                return [RunChanged(run.take_effects()), event]
            return [event]
        if kind == "control_response":
            resp = data.get("response")
            if not isinstance(resp, dict):
                return [self._unknown(data, "control_response without a response object")]
            request_id = resp.get("request_id")
            pending = self.pending.pop(request_id, None) if isinstance(request_id, str) else None
            if pending is None:
                logger.debug("control_response for unknown request %r", request_id)
                return []
            success = resp.get("subtype") == "success"
            body = resp.get("response")
            return [
                ControlResponseReceived(
                    request_id=pending.request_id,
                    success=success,
                    response=body if isinstance(body, dict) else {},
                    error=None if success else str(resp.get("error", "unknown error")),
                    raw=data,
                    request=pending,
                )
            ]
        if kind == "control_request":
            request = data.get("request")
            if not isinstance(request, dict):
                return [self._unknown(data, "control_request without a request object")]
            request_id = data.get("request_id")
            if not isinstance(request_id, str) or not request_id:
                return [self._unknown(data, "control_request without a request_id")]
            return [ControlRequestReceived(request_id, str(request.get("subtype")), request)]
        if kind == "control_cancel_request":
            return [ControlCancelReceived(str(data.get("request_id")))]
        if kind == "transcript_mirror":
            file_path, entries = data.get("filePath"), data.get("entries")
            if not isinstance(file_path, str) or not isinstance(entries, list):
                logger.warning("dropping a transcript_mirror frame without a filePath string and an entries list")
                return []
            return [MirrorFrame(file_path, entries)]
        if kind == "keep_alive" or self._is_replay(data):  # keep_alive is transport noise, never a message
            return []
        run = self.run
        events: list[Event] = []
        if run is not None:
            hidden = run.observe(data)
            if run._effects:
                events.append(RunChanged(run.take_effects()))
            if hidden:
                return events
        try:
            events.append(MessageReceived(parse_message(data)))
        except MessageParseError as e:
            events.append(self._unknown(data, str(e)))
        return events

    def _is_replay(self, data: dict[str, Any]) -> bool:
        """Whether this uuid-bearing message was delivered before (a reconnect replay)."""
        uuid = data.get("uuid")
        if not isinstance(uuid, str):
            return False
        seen = self._seen
        if uuid in seen:
            self.duplicates += 1
            return True
        seen[uuid] = None
        if len(seen) > self._seen_max:
            del seen[next(iter(seen))]
        return False

    @staticmethod
    def _unknown(data: dict[str, Any], why: str) -> MessageReceived:
        logger.warning("%s; delivering it as UnknownMessage", why)
        message = UnknownMessage(type=str(data.get("type")), data=data)  # a known kind: a str
        message.raw = data
        return MessageReceived(message)

    # ----------------------------------------------------------------- outbound

    def user_message(
        self,
        content: str | list[dict[str, Any]],
        *,
        session_id: str = "default",
        parent_tool_use_id: str | None = None,
        uuid: str | None = None,
        client_composed: bool = False,
    ) -> str:
        """The line for a user prompt (``client_composed``: ``verbatim_prompts``)."""
        msg: dict[str, Any] = {
            "type": "user",
            "message": {"role": "user", "content": content},
            "parent_tool_use_id": parent_tool_use_id,
            "session_id": session_id,
        }
        if uuid is not None:
            msg["uuid"] = uuid
        if client_composed:
            msg["client_composed"] = True
        return encode(msg)

    def user_dict(self, message: dict[str, Any]) -> str:
        """The line for a caller-built message dict (as yielded by a prompt iterable)."""
        if not isinstance(message, dict):
            raise TypeError(f"prompt messages must be dicts, got {type(message).__name__}")
        if message.get("type") == "user" and "message" not in message:
            raise ValueError("a user message dict needs a 'message' key: {'role': 'user', 'content': ...}")
        msg = dict(message)
        msg.setdefault("type", "user")
        if msg["type"] == "user":
            msg.setdefault("parent_tool_use_id", None)
            msg.setdefault("session_id", "")
        return encode(msg)

    def control_request(self, request: dict[str, Any], waiter: Any = None) -> PendingRequest:
        """Register a control request; its ``line`` is what to send."""
        subtype = request.get("subtype")
        if not isinstance(subtype, str) or not subtype:
            raise ValueError("a control request needs a 'subtype'")
        request_id = f"req_{next(self._ids)}_{self._prefix}"
        line = encode({"type": "control_request", "request_id": request_id, "request": request})
        pending = PendingRequest(request_id, subtype, line, waiter)
        self.pending[request_id] = pending
        return pending

    def forget(self, request_id: str) -> None:
        """Stop waiting for a control response (timed out or abandoned)."""
        self.pending.pop(request_id, None)

    def take_pending(self) -> list[PendingRequest]:
        """Every request still awaiting an answer, forgotten here (the session ended).

        Each request leaves :attr:`pending` exactly once, here or with its
        answer, even when the two race on different threads.
        """
        taken = []
        while True:
            try:
                taken.append(self.pending.popitem()[1])
            except KeyError:
                return taken

    @staticmethod
    def control_success(request_id: str, response: dict[str, Any] | None) -> str:
        """The line answering a control request from the CLI."""
        body: dict[str, Any] = {"subtype": "success", "request_id": request_id}
        if response is not None:
            body["response"] = response
        return encode({"type": "control_response", "response": body})

    @staticmethod
    def control_error(request_id: str, error: str) -> str:
        """The line refusing a control request from the CLI."""
        return encode(
            {"type": "control_response", "response": {"subtype": "error", "request_id": request_id, "error": error}}
        )
