"""The sans-I/O core: framing, decoding, classification and encoding. No I/O at all."""

from __future__ import annotations

import json
import math
import re

import pytest

from claude_sdkurl import CLIJSONDecodeError, ResultMessage, TextBlock, UnknownBlock, UnknownMessage
from claude_sdkurl._engine.protocol import (
    ControlCancelReceived,
    ControlRequestReceived,
    ControlResponseReceived,
    MessageReceived,
    MirrorFrame,
    Protocol,
    ProtocolErrorReceived,
    encode,
)

RESULT = {
    "type": "result",
    "subtype": "success",
    "duration_ms": 5,
    "duration_api_ms": 3,
    "is_error": False,
    "num_turns": 1,
    "session_id": "s",
    "modelUsage": {"m": {"costUSD": 0.1}},
    "brand_new_field": [1, 2],
}


def line(obj: dict) -> str:
    return json.dumps(obj) + "\n"


def test_one_line_per_frame() -> None:
    [ev] = Protocol().receive_data(line(RESULT))
    assert isinstance(ev, MessageReceived) and isinstance(ev.message, ResultMessage)
    assert ev.message.model_usage == {"m": {"costUSD": 0.1}}
    assert ev.message.raw["brand_new_field"] == [1, 2]  # nothing dropped


@pytest.mark.parametrize("as_bytes", [False, True])
def test_split_and_joined_frames(as_bytes: bool) -> None:
    p = Protocol()
    data = line(RESULT) + line({"type": "keep_alive"}) + line({**RESULT, "num_turns": 2})
    if as_bytes:
        data = data.encode()
    events = []
    for i in range(0, len(data), 7):  # arbitrary chunk boundaries, mid-character included
        events += p.receive_data(data[i : i + 7])
    assert [e.message.num_turns for e in events] == [1, 2]


def test_multibyte_split_across_chunks() -> None:
    p = Protocol()
    data = line({"type": "assistant", "message": {"model": "m", "content": [{"type": "text", "text": "héllo ✓ 🎉"}]}})
    raw = data.encode()
    events = []
    for i in range(len(raw)):
        events += p.receive_data(raw[i : i + 1])
    assert events[0].message.content == [TextBlock("héllo ✓ 🎉")]


def test_blank_and_non_json_lines_are_skipped() -> None:
    p = Protocol()
    assert p.receive_data("\n\n[SandboxDebug] something\n") == []


def test_broken_json_is_a_decode_error() -> None:
    [ev] = Protocol().receive_data('{"type": broken\n')
    assert isinstance(ev, ProtocolErrorReceived)
    assert isinstance(ev.error, CLIJSONDecodeError) and "broken" in ev.error.line


def test_line_longer_than_limit() -> None:
    p = Protocol(max_line=1024)
    [ev] = p.receive_data('{"a":"' + "x" * 2000)
    assert isinstance(ev, ProtocolErrorReceived) and "1024" in str(ev.error.original_error)
    # the limit is not hit by a large but allowed line
    big = Protocol(max_line=64 * 1024 * 1024)
    [ok] = big.receive_data(line({**RESULT, "result": "y" * 30_000_000}))
    assert len(ok.message.result) == 30_000_000


def fed(p: Protocol, text: str, as_bytes: bool) -> list[str]:
    """What feeding ``text`` (as bytes or as a text frame) gives: errors by their words, other events by kind."""
    events = p.receive_data(text.encode() if as_bytes else text)
    return [str(e.error.original_error) if isinstance(e, ProtocolErrorReceived) else type(e).__name__ for e in events]


@pytest.mark.parametrize("as_bytes", [False, True])
def test_the_limit_counts_a_line_across_its_pieces(as_bytes: bool) -> None:
    def feed(p: Protocol, text: str) -> list[str]:
        return fed(p, text, as_bytes)

    keep_alive = '{"type":"keep_alive"}'  # 21 bytes, 22 with its newline
    p = Protocol(max_line=30)
    assert feed(p, keep_alive) == [] and feed(p, "\n") == []  # a joined line, then nothing held
    assert feed(p, "x" * 30) == []  # exactly the limit, held
    assert feed(p, "\n") == ["Buffer size 31 exceeds limit 30"]  # the whole line counts
    assert feed(p, "x" * 15) == [] and feed(p, "x" * 15) == []
    assert feed(p, "y") == ["Buffer size 31 exceeds limit 30"]  # too long before its end: refused at once
    assert feed(p, "\n") == []  # what was held is gone
    assert feed(p, keep_alive[:5]) == [] and feed(p, keep_alive[5:] + "\n") == []  # joined: 22 bytes


@pytest.mark.parametrize("as_bytes", [False, True])
def test_the_limit_at_its_edge(as_bytes: bool) -> None:
    """A line of exactly max_line bytes (newline included) is taken, one byte more is not:
    whole in one piece (the fast path) or joined from pieces."""
    whole = '{"type":"keep_alive"}\n'  # 22 bytes

    def feed(p: Protocol, text: str) -> list[str]:
        return fed(p, text, as_bytes)

    assert feed(Protocol(max_line=22), whole) == []
    assert feed(Protocol(max_line=21), whole) == ["Buffer size 22 exceeds limit 21"]
    joined = Protocol(max_line=22)
    assert feed(joined, whole[:7]) == [] and feed(joined, whole[7:]) == []
    refused = Protocol(max_line=21)
    assert feed(refused, whole[:7]) == [] and feed(refused, whole[7:]) == ["Buffer size 22 exceeds limit 21"]
    # after a line refused before its end, the count starts again from nothing
    again = Protocol(max_line=22)
    assert feed(again, "x" * 23) == ["Buffer size 23 exceeds limit 22"]
    assert feed(again, whole[:-1] + " ") == []  # 22 bytes held: at the limit, not over it
    assert feed(again, "\n") == ["Buffer size 23 exceeds limit 22"]


def test_lines_with_spaces_around_and_broken_lines() -> None:
    p = Protocol()
    [ev] = p.receive_data("  \t" + line(RESULT))  # leading whitespace: still a frame
    assert isinstance(ev.message, ResultMessage)
    [ev] = p.receive_data(b"  " + line({**RESULT, "result": "b"}).encode())
    assert isinstance(ev.message, ResultMessage) and ev.message.result == "b"
    broken = '{"type": "result", "x": "' + "y" * 20_000 + "\n"
    for data in (broken, broken.encode()):
        [err] = Protocol().receive_data(data)
        assert isinstance(err, ProtocolErrorReceived) and isinstance(err.error.original_error, json.JSONDecodeError)
        assert err.error.line == broken.strip()[:10_000]


def test_a_frame_the_run_tracker_cannot_read_is_an_unknown_message(caplog: pytest.LogCaptureFixture) -> None:
    from claude_sdkurl._engine.run import RunTracker

    frame = {"type": "system", "subtype": "task_started", "task_id": "t", "task_type": {"not": "hashable"}}
    [ev] = Protocol(run=RunTracker()).receive_data(line(frame))
    assert isinstance(ev.message, UnknownMessage) and ev.message.data == frame
    assert [r.getMessage() for r in caplog.records] == [
        "Unusable 'system' frame from the CLI (TypeError: unhashable type: 'dict'); delivering it as UnknownMessage"
    ]


def test_blocks_and_types_we_cannot_model_are_kept_whole() -> None:
    [ev] = Protocol().receive_data(
        line({"type": "assistant", "message": {"model": "m", "content": [5, {"type": 7, "x": 1}, {"type": "text", "text": "t"}]}})
    )
    odd, typeless, text = ev.message.content
    assert (odd.type, odd.data) == ("int", {"value": 5})
    assert (typeless.type, typeless.data, typeless.raw) == ("int", {"type": 7, "x": 1}, {"type": 7, "x": 1})
    assert isinstance(text, TextBlock) and text.raw == {"type": "text", "text": "t"}
    [ev] = Protocol().receive_data(line({"type": "assistant", "message": {"model": "m", "content": [{"type": [1]}]}}))
    assert ev.message.content[0].type == "list"  # an unhashable block type is a block we cannot type
    frame = {"type": "stream_event", "uuid": "u", "session_id": "s", "event": {"type": "ping"}}
    [ev] = Protocol().receive_data(line(frame))
    assert ev.message.raw == frame  # the fast path keeps the wire dict too
    [ev] = Protocol().receive_data(line({"type": 5, "x": 1}))
    assert isinstance(ev.message, UnknownMessage) and ev.message.type == "int" and ev.message.data == {"type": 5, "x": 1}
    assert ev.message.raw == {"type": 5, "x": 1}


def test_an_unusable_frame_is_an_unknown_message_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    frame = {"type": "result", "subtype": "success"}
    [ev] = Protocol().receive_data(line(frame))
    assert isinstance(ev.message, UnknownMessage) and ev.message.type == "result"
    assert ev.message.data == frame and ev.message.raw == frame
    assert [r.getMessage() for r in caplog.records] == [
        "Missing or malformed field in result message: KeyError('duration_ms'); delivering it as UnknownMessage"
    ]
    caplog.clear()
    [ev] = Protocol().receive_data(line({"type": [1], "message": 2}))
    assert isinstance(ev.message, UnknownMessage) and ev.message.type == "list"


def test_a_broken_known_message_says_what_is_wrong() -> None:
    from claude_sdkurl._errors import MessageParseError
    from claude_sdkurl._engine.parse import parse_message

    frame = {"type": "assistant", "message": {"model": "m", "content": "not a list"}}
    with pytest.raises(MessageParseError) as raised:
        parse_message(frame)
    assert str(raised.value) == "Invalid assistant content (expected list, got str)" and raised.value.data is frame
    missing = {"type": "result", "subtype": "success"}
    with pytest.raises(MessageParseError) as raised:
        parse_message(missing)
    assert str(raised.value) == "Missing or malformed field in result message: KeyError('duration_ms')"
    assert raised.value.data is missing
    with pytest.raises(MessageParseError, match=r"^Invalid message data type \(expected dict, got list\)$"):
        parse_message([])  # type: ignore[arg-type]


def test_truncated_tail_at_eof_is_dropped_but_complete_tail_kept() -> None:
    p = Protocol()
    assert p.receive_data('{"type":"res') == []
    assert p.receive_eof() == []
    p.receive_data(json.dumps(RESULT))  # no newline
    [ev] = p.receive_eof()
    assert isinstance(ev.message, ResultMessage)


def test_unknown_types_are_kept() -> None:
    p = Protocol()
    [ev] = p.receive_data(line({"type": "future_thing", "x": 1}))
    assert ev.message == UnknownMessage("future_thing", {"type": "future_thing", "x": 1})
    [ev] = p.receive_data(
        line({"type": "assistant", "message": {"model": "m", "content": [{"type": "hologram", "z": 2}]}})
    )
    assert ev.message.content == [UnknownBlock("hologram", {"type": "hologram", "z": 2})]
    # a known type missing required fields does not crash the stream either
    [ev] = p.receive_data(line({"type": "result", "subtype": "success"}))
    assert isinstance(ev.message, UnknownMessage) and ev.message.type == "result"


def test_replays_are_dropped_and_malformed_stream_events_kept() -> None:
    p = Protocol(seen_uuids=3)
    ev = {"type": "stream_event", "uuid": "u1", "session_id": "s", "event": {"type": "ping"}}
    assert len(p.receive_data(line(ev))) == 1
    assert p.receive_data(line(ev)) == [] and p.duplicates == 1
    assert p.receive_data(line({**RESULT, "uuid": "u1"})) == []  # any type: a uuid is delivered once
    assert p.duplicates == 2
    [bad] = p.receive_data(line({"type": "stream_event", "uuid": "u2"}))  # no event, no session_id
    assert isinstance(bad.message, UnknownMessage) and bad.message.data["uuid"] == "u2"
    for u in ("u3", "u4", "u5"):
        p.receive_data(line({**RESULT, "uuid": u}))
    assert len(p.receive_data(line(ev))) == 1  # memory is bounded: u1 was forgotten
    exact = Protocol(seen_uuids=3)
    for u in ("a", "b", "c"):
        exact.receive_data(line({**RESULT, "uuid": u}))
    assert exact.receive_data(line({**RESULT, "uuid": "a"})) == []  # three remembered: the first too


def test_control_round_trip() -> None:
    p = Protocol()
    waiter = object()
    req = p.control_request({"subtype": "interrupt"}, waiter)
    rid = req.request_id
    assert json.loads(req.line) == {"type": "control_request", "request_id": rid, "request": {"subtype": "interrupt"}}
    assert p.pending == {rid: req} and req.subtype == "interrupt"
    [ev] = p.receive_data(line({"type": "control_response", "response": {"subtype": "success", "request_id": rid}}))
    assert isinstance(ev, ControlResponseReceived) and ev.success and ev.response == {}
    assert ev.request is req and ev.request.waiter is waiter  # the caller's waiter comes back with the answer
    assert p.pending == {}
    # an answer to nothing we asked is ignored
    assert p.receive_data(line({"type": "control_response", "response": {"subtype": "success", "request_id": "zz"}})) == []
    rid2 = p.control_request({"subtype": "set_model", "model": "x"}).request_id
    [ev] = p.receive_data(
        line({"type": "control_response", "response": {"subtype": "error", "request_id": rid2, "error": "nope"}})
    )
    assert not ev.success and ev.error == "nope"
    # the session ended: what is still pending is handed back once, then forgotten
    left = [p.control_request({"subtype": "interrupt"}) for _ in range(3)]
    assert sorted(r.request_id for r in p.take_pending()) == sorted(r.request_id for r in left)
    assert p.pending == {} and p.take_pending() == []
    answer = {"type": "control_response", "response": {"subtype": "success", "request_id": left[0].request_id}}
    assert p.receive_data(line(answer)) == []


def test_control_answers_carry_body_error_and_frame() -> None:
    p = Protocol()
    rid = p.control_request({"subtype": "get_mcp_status"}).request_id
    frame = {"type": "control_response", "response": {"subtype": "success", "request_id": rid, "response": {"k": "v"}}}
    [ev] = p.receive_data(line(frame))
    assert (ev.request_id, ev.success, ev.response, ev.error, ev.raw) == (rid, True, {"k": "v"}, None, frame)
    rid = p.control_request({"subtype": "x"}).request_id
    [ev] = p.receive_data(line({"type": "control_response", "response": {"subtype": "success", "request_id": rid, "response": "odd"}}))
    assert ev.response == {} and ev.error is None
    rid = p.control_request({"subtype": "x"}).request_id
    [ev] = p.receive_data(line({"type": "control_response", "response": {"subtype": "error", "request_id": rid}}))
    assert not ev.success and ev.error == "unknown error"
    # an answer whose id is not a string is to nothing we asked (with a request still waiting:
    # an empty dict would not even look at the id)
    waiting = p.control_request({"subtype": "x"})
    assert p.receive_data(line({"type": "control_response", "response": {"subtype": "success", "request_id": [1]}})) == []
    assert p.pending == {waiting.request_id: waiting}


def test_broken_stream_events_and_answers_are_unknown_messages_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    for frame, why in (
        ({"type": "stream_event", "uuid": "u", "session_id": "s"}, "Malformed 'stream_event' message from the CLI: KeyError('event')"),
        ({"type": "control_response", "response": ["success"]}, "control_response without a response object"),
        ({"type": "control_request", "request_id": "r", "request": ["can_use_tool"]}, "control_request without a request object"),
        ({"type": "control_request", "request": {"subtype": "can_use_tool"}}, "control_request without a request_id"),
        ({"type": "control_request", "request_id": "", "request": {"subtype": "can_use_tool"}}, "control_request without a request_id"),
    ):
        caplog.clear()
        [ev] = Protocol().receive_data(line(frame))
        assert isinstance(ev.message, UnknownMessage) and ev.message.data == frame and ev.message.raw == frame
        assert [r.getMessage() for r in caplog.records] == [f"{why}; delivering it as UnknownMessage"]


def test_streamed_words_tell_the_run_tracker() -> None:
    from claude_sdkurl import StreamEvent
    from claude_sdkurl._engine.protocol import RunChanged
    from claude_sdkurl._engine.run import RunTracker

    run = RunTracker()
    p = Protocol(run=run)
    _, changed, _ = p.receive_data(line({"type": "assistant", "message": {"model": "m", "content": []}, "uuid": "a"}) + line(RESULT))
    assert changed == RunChanged(["ended"])
    delta = {"type": "stream_event", "uuid": "d", "session_id": "s", "event": {"type": "ping"}, "parent_tool_use_id": None}
    changed, ev = p.receive_data(line(delta))
    assert changed == RunChanged(["reopened"]) and isinstance(ev.message, StreamEvent) and ev.message.uuid == "d"
    [ev] = p.receive_data(line({**delta, "uuid": "d2"}))  # nothing changed: the message alone
    assert isinstance(ev.message, StreamEvent) and run.turn_in_progress


def test_requests_and_cancels_from_the_cli() -> None:
    p = Protocol()
    [req] = p.receive_data(
        line({"type": "control_request", "request_id": "c1", "request": {"subtype": "can_use_tool", "tool_name": "Bash"}})
    )
    assert isinstance(req, ControlRequestReceived) and req.subtype == "can_use_tool" and req.request_id == "c1"
    [cancel] = p.receive_data(line({"type": "control_cancel_request", "request_id": "c1"}))
    assert cancel == ControlCancelReceived("c1")


def test_outgoing_lines_are_always_valid_json_with_one_newline() -> None:
    p = Protocol()
    for out in (
        p.user_message("multi\nline\u2028text"),
        p.user_dict({"type": "user", "message": {"role": "user", "content": "x"}}),
        Protocol.control_success("r", {"k": "v\n"}),
        Protocol.control_error("r", "bad\nthing"),
    ):
        assert out.endswith("\n") and out.count("\n") == 1
        json.loads(out)


@pytest.mark.parametrize(("bad", "error"), [(math.nan, ValueError), (math.inf, ValueError), ({1, 2}, TypeError), (object(), TypeError)])
def test_unencodable_values_are_refused_not_sent(bad: object, error: type) -> None:
    with pytest.raises(error, match="^message cannot be sent to the CLI as JSON: "):
        encode({"type": "user", "x": bad})


def test_lines_are_compact_utf8_json() -> None:
    assert encode({"a": [1, 2], "t": "é ✓"}) == '{"a":[1,2],"t":"é ✓"}\n'


def test_a_forgotten_request_takes_no_answer() -> None:
    p = Protocol()
    kept, dropped = p.control_request({"subtype": "a"}), p.control_request({"subtype": "b"})
    p.forget(dropped.request_id)
    p.forget("never-sent")
    assert p.pending == {kept.request_id: kept}
    answer = {"type": "control_response", "response": {"subtype": "success", "request_id": dropped.request_id}}
    assert p.receive_data(line(answer)) == []


def test_user_dict_validation() -> None:
    p = Protocol()
    with pytest.raises(TypeError, match="^prompt messages must be dicts, got str$"):
        p.user_dict("not a dict")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^a user message dict needs a 'message' key: \{'role': 'user', 'content': \.\.\.\}$"):
        p.user_dict({"type": "user"})
    message = {"role": "user", "content": "x"}
    assert json.loads(p.user_dict({"type": "user", "message": message})) == {
        "type": "user", "message": message, "parent_tool_use_id": None, "session_id": ""
    }  # fmt: skip
    # no type: a user message; what the caller set is kept
    given = {"message": message, "session_id": "s9", "parent_tool_use_id": "p1", "uuid": "u1"}
    assert json.loads(p.user_dict(given)) == {"type": "user", **given}
    assert given == {"message": message, "session_id": "s9", "parent_tool_use_id": "p1", "uuid": "u1"}  # not changed
    # another type is sent as given, with nothing added
    other = {"type": "control_request", "request_id": "r", "request": {"subtype": "interrupt"}}
    assert json.loads(p.user_dict(other)) == other


def test_outgoing_lines_exactly() -> None:
    p = Protocol()
    assert json.loads(p.user_message("hi")) == {
        "type": "user", "message": {"role": "user", "content": "hi"}, "parent_tool_use_id": None, "session_id": "default"
    }  # fmt: skip
    blocks = [{"type": "text", "text": "hi"}]
    assert json.loads(p.user_message(blocks, session_id="s", parent_tool_use_id="p", uuid="u", client_composed=True)) == {
        "type": "user", "message": {"role": "user", "content": blocks}, "parent_tool_use_id": "p", "session_id": "s",
        "uuid": "u", "client_composed": True,
    }  # fmt: skip
    assert json.loads(Protocol.control_success("r1", None)) == {
        "type": "control_response", "response": {"subtype": "success", "request_id": "r1"}
    }  # fmt: skip
    assert json.loads(Protocol.control_success("r1", {})) == {
        "type": "control_response", "response": {"subtype": "success", "request_id": "r1", "response": {}}
    }  # fmt: skip
    assert json.loads(Protocol.control_error("r2", "no")) == {
        "type": "control_response", "response": {"subtype": "error", "request_id": "r2", "error": "no"}
    }  # fmt: skip
    with pytest.raises(ValueError, match="^a control request needs a 'subtype'$"):
        p.control_request({"subtype": ""})
    with pytest.raises(ValueError):
        p.control_request({"type": "interrupt"})
    first, second = p.control_request({"subtype": "a"}), Protocol().control_request({"subtype": "a"})
    assert re.fullmatch(r"req_1_[0-9a-f]{8}", first.request_id) and re.fullmatch(r"req_1_[0-9a-f]{8}", second.request_id)
    assert first.request_id != second.request_id  # each session has its own suffix
    assert p.control_request({"subtype": "b"}).request_id.startswith("req_2_")


def test_transcript_mirror_frames_are_events_never_messages(caplog: pytest.LogCaptureFixture) -> None:
    frame = {"type": "transcript_mirror", "filePath": "/h/.claude/projects/p/s.jsonl", "entries": [{"type": "user"}]}
    [ev] = Protocol().receive_data(line(frame))
    assert ev == MirrorFrame("/h/.claude/projects/p/s.jsonl", [{"type": "user"}])
    for bad in ({"type": "transcript_mirror", "entries": []}, {"type": "transcript_mirror", "filePath": "x", "entries": "no"}):
        assert Protocol().receive_data(line(bad)) == []
    assert [r.getMessage() for r in caplog.records] == [
        "dropping a transcript_mirror frame without a filePath string and an entries list"
    ] * 2
