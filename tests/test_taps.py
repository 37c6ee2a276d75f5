"""The taps' line splitter (``claude_sdkurl._engine.transport.taps.whole_lines``), which the
relay, tapes and evals read a CLI's output through: a line is whole whatever the reads cut."""

from __future__ import annotations

import json

import pytest

from claude_sdkurl._engine.transport.taps import line_text, whole_lines

LINES = [json.dumps({"t": "漢字 🙂 é"}, ensure_ascii=False), json.dumps({"t": "plain"}), json.dumps({"t": "ü"}, ensure_ascii=False)]


@pytest.mark.parametrize("step", [1, 2, 3, 5, 7, 8, 13])
def test_a_character_cut_between_two_reads_is_whole_in_its_line(step: int) -> None:
    data = "".join(line + "\n" for line in LINES).encode()
    got: list[str] = []
    partial = ""
    for pos in range(0, len(data), step):
        lines, partial = whole_lines(partial, data[pos : pos + step], "stdio")
        got += lines
    assert got == LINES and partial == ""


def test_what_is_not_utf8_is_replaced_once_its_line_is_whole_and_a_last_unfinished_line_reads_as_text() -> None:
    lines, partial = whole_lines("", b'{"t": "\xff"}\n{"t": "\xe6\xbc', "stdio")
    assert lines == ['{"t": "\ufffd"}']
    rest, partial = whole_lines(partial, b"\xa2", "stdio")
    assert rest == [] and line_text(partial) == '{"t": "漢'
    assert line_text('{"t": "\xe6\xbc') == '{"t": "\xe6\xbc'  # a str chunk's own text: as it came


def test_a_websocket_message_is_one_line_and_a_str_chunk_is_taken_as_it_is() -> None:
    assert whole_lines("", '{"a": 1}', "websocket") == (['{"a": 1}'], "")
    assert whole_lines("", "漢字\nx", "stdio") == (["漢字"], "x")
