"""The relay's stream scrub (``relay/_stream_scrub.py``) line by line, for what mutation testing
found unpinned (``tools/mutation_score.py --area relay``): a secret streamed in pieces in text,
thinking and tool input, what is kept back and when it goes on (a block's end, the message's
end), the bound on what is kept, blocks kept apart, and lines that go on as they came. No CLI,
no server: the scrub is given lines as the CLI writes them."""

from __future__ import annotations

import json
import re
from typing import Any

from claude_sdkurl.relay._stream_scrub import MAX_HELD, StreamScrub, _open_from


def scrub(text: str) -> str:
    return re.sub(r"sk-ant-[A-Za-z0-9_\-]+", "[key]", re.sub(r"(?i)bearer\s+\S+", "Bearer [token]", text)).replace("hunter2", "[secret]")


def delta(text: str, kind: str = "text_delta", index: int = 0, parent: Any = None) -> str:
    field = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "partial_json"}[kind]
    return json.dumps({"type": "stream_event", "parent_tool_use_id": parent, "session_id": "s",
                       "event": {"type": "content_block_delta", "index": index, "delta": {"type": kind, field: text}}})  # fmt: skip


def stop(kind: str = "content_block_stop", index: int = 0, parent: Any = None) -> str:
    return json.dumps({"type": "stream_event", "parent_tool_use_id": parent, "event": {"type": kind, "index": index}})


def texts(lines: list[str]) -> list[Any]:
    out = []
    for line in lines:
        event = json.loads(line)["event"]
        d = event.get("delta")
        out.append(next(iter(v for k, v in d.items() if k != "type")) if d else event["type"])
    return out


def test_a_key_streamed_in_pieces_never_goes_on_whole_or_in_part() -> None:
    s = StreamScrub(scrub, [])
    got = [texts(s.lines(delta(p))) for p in ("my key is s", "k-", "ant-abc", "def", " done")]
    assert got == [["my key is "], [], [], [], ["[key] done"]]
    first = json.loads(StreamScrub(scrub, []).lines(delta("my key is sk-"))[0])
    assert first["session_id"] == "s" and first["parent_tool_use_id"] is None  # the line's other fields kept
    assert first["event"]["delta"] == {"type": "text_delta", "text": "my key is "}


def test_thinking_and_tool_input_are_scrubbed_across_deltas_too() -> None:
    for kind in ("thinking_delta", "input_json_delta"):
        s = StreamScrub(scrub, ["hunter2"])
        assert texts(s.lines(delta("pass hun", kind))) == ["pass "]
        assert texts(s.lines(delta("ter2!", kind))) == ["[secret]!"]
        assert json.loads(s.lines(delta("x", kind))[0])["event"]["delta"]["type"] == kind


def test_what_was_kept_back_goes_on_scrubbed_at_the_blocks_end_then_the_end() -> None:
    s = StreamScrub(scrub, [])
    assert texts(s.lines(delta("the key sk-ant-abc"))) == ["the key "]
    assert texts(s.lines(stop())) == ["[key]", "content_block_stop"]
    assert texts(s.lines(stop())) == ["content_block_stop"]  # nothing kept any more
    s.lines(delta("a Bearer abc"))
    s.lines(delta("tail sk-", index=1))
    assert texts(s.lines(stop("message_stop"))) == ["Bearer [token]", "sk-", "message_stop"]
    assert s.flush_all() == []
    s.lines(delta("x sk"))
    s.lines(delta("y sk-ant-q", parent="toolu_1"))
    assert texts(s.flush_all()) == ["sk", "[key]"]
    assert texts(s.lines(stop("message_start"))) == ["message_start"]


def test_blocks_are_kept_apart_by_index_and_parent() -> None:
    s = StreamScrub(scrub, [])
    assert texts(s.lines(delta("a sk-ant-x", index=0))) == ["a "]
    assert texts(s.lines(delta("yz", index=1))) == ["yz"]
    assert texts(s.lines(delta("b sk-ant-w", index=0, parent="toolu_1"))) == ["b "]
    assert texts(s.lines(stop(index=1))) == ["content_block_stop"]
    assert texts(s.lines(delta("y!", index=0))) == ["[key]!"]
    assert texts(s.lines(stop(index=0, parent="toolu_1"))) == ["[key]", "content_block_stop"]


def test_what_is_kept_back_is_bounded() -> None:
    s = StreamScrub(scrub, [])
    assert texts(s.lines(delta("sk-ant-" + "a" * (MAX_HELD - 7)))) == []  # MAX_HELD characters: kept back
    assert texts(s.lines(delta("b"))) == ["[key]"]  # one more: it goes on, scrubbed, as a whole token would
    assert s.flush_all() == []


def test_a_line_with_nothing_to_keep_or_scrub_goes_on_as_it_came() -> None:
    s = StreamScrub(scrub, ["hunter2"])
    for raw in (delta("plain text"), stop(), stop("message_delta"), "not json at all",
                '{"type": "stream_event", "event": "text"}', '{"type": "stream_event", bad json',
                '[1, "stream_event"]',  # not an object
                json.dumps({"type": "stream_event", "event": {"type": "content_block_delta", "delta": "x"}}),
                json.dumps({"type": "stream_event", "event": {"type": "content_block_delta", "delta": {"type": "signature_delta", "text": "sk-"}}}),
                json.dumps({"type": "stream_event", "event": {"type": "content_block_delta", "delta": {"type": "text_delta", "text": 3}}}),
                json.dumps({"type": "assistant", "pad": "x" * 70, "t": "stream_event", "text": "sk-ant-abc"})):  # fmt: skip
        assert s.lines(raw) == [raw], raw
    assert s.lines(delta("a hunter2 !")) == [delta("a [secret] !")]


def test_the_open_end_is_found_for_keys_tokens_and_secret_values() -> None:
    assert _open_from("abc sk", []) == 4 and _open_from("abc s", []) == 4 and _open_from("abc sk-ant-x_-9", []) == 4
    assert _open_from("abc sk-an", []) == 4 and _open_from("abc task", []) == 6
    assert _open_from("abc Bearer abc", []) == 4 and _open_from("abc BEARER", []) == 4 and _open_from("x be", []) == 2
    assert _open_from("abc rebear", []) == 10  # not at a word's start
    assert _open_from("x hunt", ["hunter2"]) == 2 and _open_from("plain", ["hunter2"]) == 5
    assert _open_from("ab", ["abc"]) == 0 and _open_from("abc", ["abc"]) == 3  # the whole value is no open end
    assert _open_from("xhunter", ["hunter2", "terrible"]) == 1  # the earliest open end of all
    assert _open_from("", ["a"]) == 0
    assert StreamScrub(scrub, ["", "v"])._literals == ["v"]
