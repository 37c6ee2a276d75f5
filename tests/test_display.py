"""The model's text as Markdown for JupyterLab (no CLI): money is money, math is math, line
breaks stay, HTML is shown as text; and where a long answer is cut into outputs.

What JupyterLab does with the result is checked in a real browser
(``tests/test_notebook_browser.py``); these pin the Markdown source it is given."""

from __future__ import annotations

import pytest

from claude_sdkurl.display import LiveMarkdown, model_text

MONEY = "\\\\$"  # what a money dollar becomes in the source: the page shows "$"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("$5 a month and $50 a year", f"{MONEY}5 a month and {MONEY}50 a year"),
        ("between $5-$10", f"between {MONEY}5-{MONEY}10"),  # a closing $ before a digit is not math
        ("costs $5 or $ 6", f"costs {MONEY}5 or {MONEY} 6"),
        ("a lone $", f"a lone {MONEY}"),
        ("$x^2$ is math, $5 is money", f"$x^2$ is math, {MONEY}5 is money"),
        ("$e^{i\\pi} + 1 = 0$", "$e^{i\\pi} + 1 = 0$"),
        ("display: $$\\int_0^1 x\\,dx$$ then $3", f"display: $$\\int_0^1 x\\,dx$$ then {MONEY}3"),
        ("already escaped \\$5", "already escaped \\$5"),
        ("in code `$5 and $6` stays", "in code `$5 and $6` stays"),
        ("| plan | price |", "| plan | price |"),
        ("| pro | $20 |", f"| pro | {MONEY}20 |"),
        ("<b>not html</b> $1", f"&lt;b>not html&lt;/b> {MONEY}1"),
        # shell variables are not math (issue 60, item 8): a $ before an upper-case name
        ("add $HOME/$USER/bin to PATH", f"add {MONEY}HOME/{MONEY}USER/bin to PATH"),
        ("echo $PATH and $MY_VAR2$", f"echo {MONEY}PATH and {MONEY}MY_VAR2{MONEY}"),
        ("$N$ items, $x_1$", "$N$ items, $x_1$"),  # one capital is math's
    ],
)
def test_dollars_that_are_money_are_shown_and_math_stays_math(text: str, shown: str) -> None:
    assert model_text(text) == shown


def test_a_fenced_block_is_left_as_written() -> None:
    block = "```python\nprice = '$5 and $6' < 7\n```"
    assert model_text(block) == block


def test_single_line_breaks_are_kept_and_paragraphs_untouched() -> None:
    haiku = "An old silent pond\nA frog jumps into the pond\nSplash! Silence again"
    assert model_text(haiku).split("\n") == ["An old silent pond  ", "A frog jumps into the pond  ", "Splash! Silence again"]
    assert model_text("one\n\ntwo") == "one\n\ntwo"
    assert model_text("line\n```\ncode\n```") == "line  \n```\ncode\n```"
    assert model_text("ends with a break  \nnext") == "ends with a break  \nnext"  # not doubled


class _Outputs:
    def __init__(self) -> None:
        self.shown: list[list[str]] = []

    def __call__(self, text: str) -> _Outputs._Handle:
        self.shown.append([text])
        return _Outputs._Handle(self.shown[-1])

    class _Handle:
        def __init__(self, versions: list[str]) -> None:
            self.versions = versions

        def update(self, text: str) -> None:
            self.versions.append(text)


def test_a_long_answer_is_not_cut_right_after_a_heading() -> None:
    para = "word " * 60 + "\n\n"  # 302 characters
    text = para * 6 + "## A heading\n\n" + para * 4
    cut_at = len(para * 6 + "## A heading\n\n")
    outputs = _Outputs()
    live = LiveMarkdown(outputs, interval=0, segment=cut_at - 2)
    for i in range(0, len(text), 7):
        live.write(text[i : i + 7])
    live.close()
    finals = [versions[-1] for versions in outputs.shown]
    assert "".join(finals) == text  # nothing lost, nothing doubled
    assert len(finals) >= 2
    for final in finals[:-1]:
        last_line = final.rstrip("\n").rsplit("\n", 1)[-1]
        assert not last_line.startswith("#"), finals
    assert any(f.startswith("## A heading") or "\n## A heading\n\nword" in f for f in finals)


def test_every_mark_we_show_is_in_an_ordinary_text_font() -> None:
    """Without an emoji font, emoji show as empty boxes (seen in the browser): every symbol the
    notebook and display code show must be in DejaVu Sans (the font matplotlib ships, and Linux's
    usual fallback). Read from the font itself, so a new emoji in the code fails here."""
    import ast
    from pathlib import Path

    import matplotlib
    from fontTools.ttLib import TTFont

    font = TTFont(Path(matplotlib.__file__).parent / "mpl-data" / "fonts" / "ttf" / "DejaVuSans.ttf")
    have = set(font.getBestCmap())
    package = Path(__file__).resolve().parent.parent / "claude_sdkurl"
    shown: dict[str, str] = {}
    for source in [package / "display.py", *sorted((package / "notebook").glob("*.py")), *sorted((package / "batch").glob("*.py"))]:
        tree = ast.parse(source.read_text())
        docstrings = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))
                      and n.body and isinstance(n.body[0], ast.Expr)}  # fmt: skip
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                for ch in node.value:
                    if ord(ch) > 0x2000 and ch not in "‘’“”–—…•":  # symbols, not typography
                        shown.setdefault(ch, f"{source.name}: {node.value[:40]!r}")
    assert len(shown) >= 5  # the marks are found at all
    missing = {ch: where for ch, where in shown.items() if ord(ch) not in have}
    assert not missing, f"shown as boxes without an emoji font: {missing}"


def test_tool_calls_read_as_a_person_reads_them() -> None:
    """An MCP tool's name reads as the approval card says it (``run_code (kernel)``, not
    ``mcp__kernel__run_code``), code and commands show as code with their line breaks, and a
    CLI's coloured error line loses its terminal escapes."""
    from claude_sdkurl.display import tool_label, tool_markdown, without_ansi

    assert tool_label("mcp__kernel__run_code") == "run_code (kernel)" and tool_label("Bash") == "Bash"
    assert tool_label("mcp__") == "mcp__" and tool_label("mcp__a__b__c") == "b (a)"
    shown = tool_markdown("mcp__kernel__run_code", {"code": "a = 1\nb = 2"}, "done")
    assert "<code>run_code (kernel) a = 1 (+1 line)</code>" in shown and "```python\na = 1\nb = 2\n```" in shown
    assert "mcp__kernel" not in shown and '"code"' not in shown
    bash = tool_markdown("Bash", {"command": "ls -l", "description": "list"})
    assert "```bash\nls -l\n```" in bash and '"description": "list"' in bash and '"command"' not in bash
    assert '"file_path": "/x"' in tool_markdown("Read", {"file_path": "/x"})
    assert without_ansi("\x1b[31mError:\x1b[0m bad \x1b]0;title\x07ok \x1b[2K") == "Error: bad ok "


class _CtrlCOnWrite:
    """A text stream that is interrupted (Ctrl-C, a notebook's stop) at its ``at``-th write."""

    def __init__(self, at: int) -> None:
        self.at, self.writes = at, 0

    def write(self, text: str) -> int:
        self.writes += 1
        if self.writes == self.at:
            raise KeyboardInterrupt
        return len(text)

    def flush(self) -> None:
        pass


@pytest.mark.parametrize("where", ["writing", "rendering"])
def test_a_stop_while_stream_text_writes_or_renders_still_stops_the_querys_cli(where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 57, item 15: the stop lands while stream_text writes a delta, or renders (the
    notebook's Markdown update at a message's end), not while it waits for the next message:
    the query is closed all the same (its CLI stopped at once) and StreamStopped raised."""
    import threading
    import time
    import uuid

    from claude_sdkurl import ClaudeAgentOptions, query
    from claude_sdkurl import display
    from claude_sdkurl.display import StreamStopped, stream_text
    from claude_sdkurl.testing import MockTransport

    def cli(message: dict, fake: object) -> None:
        if message["type"] != "user":
            return
        fake.emit({"type": "system", "subtype": "init", "session_id": "s", "uuid": str(uuid.uuid4())})  # type: ignore[attr-defined]
        for event in ({"type": "message_start"}, *({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta",
                      "text": f"word{i} "}} for i in range(3)), {"type": "message_stop"}):  # fmt: skip
            fake.emit({"type": "stream_event", "uuid": str(uuid.uuid4()), "session_id": "s", "event": event})  # type: ignore[attr-defined]
        # and the turn goes on: no result comes

    transport = MockTransport(cli)
    messages = query("talk", ClaudeAgentOptions(include_partial_messages=True), transport=transport)
    if where == "rendering":
        stops = [KeyboardInterrupt()]  # one stop, at the first render

        def stopped_while_rendering(self: object) -> None:
            if stops:
                raise stops.pop()

        monkeypatch.setattr(display._Live, "flush", stopped_while_rendering)
        file = _CtrlCOnWrite(at=0)  # (never)
    else:
        file = _CtrlCOnWrite(at=2)
    began = time.monotonic()
    with pytest.raises(StreamStopped):
        stream_text(messages, file=file)
    assert messages._gen.gi_frame is None  # type: ignore[attr-defined]  # the query was closed: its finally stopped the CLI
    assert transport._thread is not None
    transport._thread.join(5)
    assert not transport._thread.is_alive() and time.monotonic() - began < 5  # the CLI stopped, at once
    assert [t for t in threading.enumerate() if t.name.startswith("claude-sdkurl") and t.is_alive()] == []


def test_a_tool_call_of_several_lines_is_summed_up_by_its_first() -> None:
    """Issue 60, item 8: the one-line summary of a run_code call joined the code's lines
    (``answer = df.temp.max() answer``): a line that never was."""
    from claude_sdkurl.display import tool_summary

    assert tool_summary("mcp__kernel__run_code", {"code": "answer = df.temp.max()\nanswer"}) == \
        "run_code (kernel) answer = df.temp.max() (+1 line)"  # fmt: skip
    assert tool_summary("Bash", {"command": "cd /tmp\n\nls -la\nrm x"}).endswith("cd /tmp (+2 lines)")
    assert tool_summary("Bash", {"command": "ls   -la"}).endswith("ls   -la")  # one line: as written
