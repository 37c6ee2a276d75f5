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


def test_the_evals_watcher_writes_a_last_line_without_its_newline_back_as_its_bytes() -> None:
    """With the tool-error fault the program is given whole lines; a last line with no newline
    (held, a character of it cut between reads, and one byte that is no UTF-8) reaches the
    program at the CLI's exit as the bytes the CLI wrote."""
    from claude_sdkurl._engine.transport import TransportCallbacks
    from claude_sdkurl.evals._wire import Seen, _Watched

    from .conftest import StandInTransport

    got: list[bytes] = []
    inner = StandInTransport()
    _Watched(inner, Seen(fault="tool-error")).start(TransportCallbacks(on_data=lambda d: got.append(d if isinstance(d, bytes) else d.encode()),
                                                                       on_exit=lambda code, err: None))  # fmt: skip
    last = '{"t": "漢字"} '.encode() + b"\xff"  # (\xff: one byte that is no UTF-8, as it came)
    cut = last.index("字".encode()) + 1
    inner.callbacks.on_data(b'{"a": 1}\n' + last[:cut])
    inner.callbacks.on_data(last[cut:])
    inner.callbacks.on_exit(0, "")
    assert b"".join(got) == b'{"a": 1}\n' + last
