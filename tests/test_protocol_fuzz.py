"""The protocol core never raises, whatever the CLI sends: random bytes, and every known frame
type with its fields deleted, retyped or nested, fed as a byte stream (stdio) and as whole
text frames (WebSocket). Seeded, so a failure replays."""

from __future__ import annotations

import copy
import json
import logging
import random
from typing import Any

import pytest

from claude_sdkurl import ClaudeAgentOptions, ResultMessage, query
from claude_sdkurl._engine.protocol import Event, MessageReceived, Protocol, ProtocolErrorReceived
from claude_sdkurl._engine.run import RunTracker
from claude_sdkurl.testing import FakeCLI, MockTransport

FRAMES: list[dict[str, Any]] = [
    {"type": "assistant", "message": {"id": "m", "model": "x", "content": [{"type": "text", "text": "hi"}, {"type": "tool_use", "id": "t", "name": "Bash", "input": {"c": 1}}, {"type": "thinking", "thinking": "h", "signature": "s"}]}, "parent_tool_use_id": None, "session_id": "s", "uuid": "u1"},
    {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}, "uuid": "u2", "origin": {"kind": "human"}},
    {"type": "result", "subtype": "success", "duration_ms": 1, "duration_api_ms": 1, "is_error": False, "num_turns": 1, "session_id": "s", "deferred_tool_use": {"id": "d", "name": "n", "input": {}}, "modelUsage": {}},
    {"type": "system", "subtype": "init", "session_id": "s", "uuid": "u3"},
    {"type": "system", "subtype": "task_started", "task_id": "a", "description": "d", "uuid": "u4", "session_id": "s", "task_type": "local_agent"},
    {"type": "system", "subtype": "task_updated", "task_id": "a", "patch": {"status": "completed"}},
    {"type": "system", "subtype": "task_notification", "task_id": "a", "status": "completed", "output_file": "", "summary": "", "uuid": "u5", "session_id": "s"},
    {"type": "system", "subtype": "session_state_changed", "state": "idle", "sdk_host_only": True},
    {"type": "system", "subtype": "hook_response", "hook_event": "Stop"},
    {"type": "stream_event", "uuid": "u6", "session_id": "s", "event": {"type": "content_block_delta"}, "parent_tool_use_id": None},
    {"type": "rate_limit_event", "rate_limit_info": {"status": "allowed", "resetsAt": 1}, "uuid": "u7", "session_id": "s"},
    {"type": "conversation_reset", "new_conversation_id": "c", "uuid": "u8", "session_id": "s"},
    {"type": "control_request", "request_id": "r1", "request": {"subtype": "can_use_tool", "tool_name": "Bash", "input": {}}},
    {"type": "control_response", "response": {"subtype": "success", "request_id": "req_1_x", "response": {}}},
    {"type": "control_cancel_request", "request_id": "r1"},
    {"type": "keep_alive"},
]  # fmt: skip

ODD_VALUES: list[Any] = [None, 0, -1, 1.5, True, "", "x" * 50, [], [1, "a", None], {}, {"type": 3}, [[[[]]]], {"a": {"b": {"c": []}}}]


def mutate(rng: random.Random, value: Any, depth: int = 0) -> Any:
    """Change one thing somewhere in ``value``."""
    if isinstance(value, dict) and value and depth < 4 and rng.random() < 0.7:
        key = rng.choice(list(value))
        roll = rng.random()
        if roll < 0.3:
            del value[key]
        elif roll < 0.6:
            value[key] = copy.deepcopy(rng.choice(ODD_VALUES))
        else:
            value[key] = mutate(rng, value[key], depth + 1)
        return value
    if isinstance(value, list) and value and depth < 4 and rng.random() < 0.7:
        i = rng.randrange(len(value))
        value[i] = mutate(rng, value[i], depth + 1) if rng.random() < 0.5 else copy.deepcopy(rng.choice(ODD_VALUES))
        return value
    return copy.deepcopy(rng.choice(ODD_VALUES))


def frames(rng: random.Random, n: int) -> list[bytes]:
    out = []
    for _ in range(n):
        roll = rng.random()
        if roll < 0.1:
            out.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 60))).replace(b"\n", b" ") + b"\n")
        else:
            frame = copy.deepcopy(rng.choice(FRAMES))
            for _ in range(rng.randrange(1, 4)):
                frame = mutate(rng, frame)
            out.append(json.dumps(frame).encode() + b"\n")
    return out


def check(events: list[Event]) -> list[str]:
    """Each event's kind (a message by its class), after showing every message as a user would."""
    assert isinstance(events, list)
    kinds = []
    for event in events:
        if isinstance(event, MessageReceived):
            repr(event.message)  # a user printing what they got must not crash either
            kinds.append(type(event.message).__name__)
        else:
            kinds.append(type(event).__name__)
    return kinds


# What a frame may legitimately turn into nothing: noise, an answer to no request of ours, a
# state change the session keeps to itself.
SILENT = {"keep_alive", "control_response", "transcript_mirror"}


@pytest.mark.parametrize("seed", range(8))
def test_shape_mutated_frames_never_raise(seed: int, caplog: pytest.LogCaptureFixture) -> None:
    """Never raises, and never loses a frame: cut anywhere, the byte stream yields exactly what
    the same lines yield whole; and every object frame of a message kind, however broken,
    comes out as a message (an UnknownMessage when it cannot be used)."""
    caplog.set_level(logging.ERROR, logger="claude_sdkurl")
    rng = random.Random(seed)
    lines = frames(rng, 2500)
    stream = Protocol(run=RunTracker(bidirectional=True))  # stdio: a byte stream cut anywhere
    data = b"".join(lines)
    pos, cut = 0, []
    while pos < len(data):
        step = rng.randrange(1, 4096)
        cut += check(stream.receive_data(data[pos : pos + step]))
        pos += step
    cut += check(stream.receive_eof())
    whole_lines = Protocol(run=RunTracker(bidirectional=True))
    whole = [kind for line in lines for kind in check(whole_lines.receive_data(line))]
    assert cut == whole
    assert {"AssistantMessage", "UserMessage", "ResultMessage", "UnknownMessage", "ControlRequestReceived"} <= set(cut)

    frames_in = Protocol(run=RunTracker())  # WebSocket: whole text frames
    for line in lines:
        check(frames_in.receive_data(line.decode("utf-8", "replace")))
        try:
            frame = json.loads(line)
        except ValueError:
            continue
        if not isinstance(frame, dict) or str(frame.get("type")) in SILENT:
            continue
        if frame.get("type") == "system" and frame.get("sdk_host_only") is True:
            continue
        assert check(Protocol(run=RunTracker()).receive_data(line)), line


def test_deep_nesting_is_a_decode_error_not_a_crash() -> None:
    """An object nested too deep for the decoder is one decode error naming the line; a bare
    nested list is not an object line and is skipped like any stray output. Either way the same
    stream goes on to deliver the next frame."""
    deep = "[" * 100_000 + "]" * 100_000
    after = json.dumps(FRAMES[3]) + "\n"
    for frame, errors in (('{"type":"user","message":' + deep + "}\n", 1), (deep + "\n", 0)):
        for data in (frame + after, (frame + after).encode()):
            stream = Protocol()
            events = stream.receive_data(data)
            decode_errors = [e for e in events if isinstance(e, ProtocolErrorReceived)]
            assert len(decode_errors) == errors
            for e in decode_errors:
                assert str(e.error).startswith('Failed to decode JSON: {"type":"user","message":[[[')
            received = [e.message for e in events if isinstance(e, MessageReceived)]
            assert [type(m).__name__ for m in received] == ["SystemMessage"]
            assert received[0].subtype == "init"  # type: ignore[attr-defined]


def test_wrong_shapes_do_not_stop_the_session() -> None:
    """Regression: a control_request whose request is a list, a control_response whose
    response is a list, a request without its id: each used to kill the reader thread."""

    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "user":
            cli.emit({"type": "control_request", "request_id": "r", "request": ["can_use_tool"]})
            cli.emit({"type": "control_response", "response": ["success"]})
            cli.emit({"type": "control_request", "request": {"subtype": "can_use_tool"}})
            cli.emit({"type": "result", "subtype": ["x"], "is_error": {}})
            cli.turn("still here")

    messages = list(query("go", ClaudeAgentOptions(), transport=MockTransport(handler)))
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "still here"
    assert sum(type(m).__name__ == "UnknownMessage" for m in messages) == 4
