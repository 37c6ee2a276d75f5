"""Showing messages to people: Markdown for Jupyter, and live streaming text.

Messages, content blocks and batch items show as Markdown in Jupyter (JupyterLab
renders it; no HTML of ours, and none of the model's: a ``<`` in its text is shown,
not obeyed). ``display(m)`` of every message of a run stays quiet: a stream event shows
nothing (the :class:`AssistantMessage` that follows carries its text) and a session's
``init`` line shows once. :func:`stream_text` prints assistant text as it streams, in a
terminal or a notebook cell::

    from claude_sdkurl import query, ClaudeAgentOptions
    from claude_sdkurl.display import stream_text

    result = stream_text(query("Tell me a story", ClaudeAgentOptions(include_partial_messages=True)))
    result  # shows the outcome, cost, tokens and times
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import IO, Any

from . import _shown
from .types import (
    AssistantMessage,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnknownBlock,
    UserMessage,
)

__all__ = ["LiveMarkdown", "StreamStopped", "notebook", "show", "stream_text"]

# The marks shown beside outcomes: characters that ordinary text fonts have (DejaVu Sans,
# Segoe UI Symbol), so a machine without an emoji font shows them, not empty boxes.
MARK_OK = "✔"
MARK_FAILED = "✘"
MARK_STOPPED = "■"
MARK_WARNING = "⚠"
MARK_TOOL = "⚙"
MARK_WAITING = "◌"

_MAX_SHOWN = 4000  # characters of a tool input/result shown before eliding


def _clip(s: str, n: int = _MAX_SHOWN) -> str:
    return s if len(s) <= n else f"{s[:n]}\n… ({len(s) - n:,} more characters)"


def _fence(s: str, lang: str = "") -> str:
    ticks = "```"
    while ticks in s:
        ticks += "`"
    return f"{ticks}{lang}\n{s}\n{ticks}"


_CODE_SPAN = re.compile(r"(`+)(?:.+?)\1")


_SHELL_VARIABLE = re.compile(r"\$([A-Z_][A-Z0-9_]+)")  # two characters or more: $N is math's


def _text_dollars(s: str) -> str:
    r"""``$`` signs that do not open or close inline math, escaped so JupyterLab shows them.

    JupyterLab hands the text between any two ``$`` to MathJax ("$5 a month and $50 a year"
    came out as italic math), and Markdown's own ``\$`` is undone before MathJax sees the
    page; ``\\$`` reaches it as ``\$``, which it shows as a dollar sign (its
    ``processEscapes``). A pair is kept as math by Pandoc's rule, taking each ``$`` with the
    next one: the opening one followed by a non-space, the closing one preceded by a non-space
    and not followed by a digit (``$x^2$`` is math, ``$5 or $10`` is money); a ``$`` before an
    upper-case name of two characters or more is a shell's variable (``$HOME/$USER/bin``), not
    math. ``$$`` and ``\(...\)`` are left alone.
    """
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == "\\" and i + 1 < n:  # an escape of the model's own: as written
            out.append(s[i : i + 2])
            i += 2
            continue
        if c != "$":
            out.append(c)
            i += 1
            continue
        if s.startswith("$$", i):  # display math
            end = s.find("$$", i + 2)
            stop = n if end < 0 else end + 2
            out.append(s[i:stop])
            i = stop
            continue
        shell = _SHELL_VARIABLE.match(s, i)
        if shell is not None:  # $HOME, $MY_VAR: a shell's variable, not math
            out.append("\\\\$" + shell.group(1))
            i = shell.end()
            continue
        close = s.find("$", i + 1)
        while close > 0 and s[close - 1] == "\\":
            close = s.find("$", close + 1)
        opens = i + 1 < n and not s[i + 1].isspace()
        closes = (close > i + 1 and not s[close - 1].isspace() and not s.startswith("$$", close)
                  and not (close + 1 < n and s[close + 1].isdigit()))  # fmt: skip
        if opens and closes:
            out.append(s[i : close + 1])
            i = close + 1
        else:
            out.append("\\\\$")
            i += 1
    return "".join(out)


def all_dollars(s: str) -> str:
    """Every ``$`` of ``s`` shown as a dollar sign in JupyterLab, none read as math (a preview
    cut from its context, where a pair could be anything)."""
    return s.replace("$", "\\\\$")


def _plain(s: str) -> str:
    return _text_dollars(s.replace("<", "&lt;"))


def model_text(s: str) -> str:
    """The model's Markdown as the model meant it, for JupyterLab.

    - every ``<`` outside code is shown as text (no HTML of the model's reaches the page);
    - a ``$`` that is money, not math, is shown as a dollar sign (see :func:`_text_dollars`);
      LaTeX between ``$...$`` and ``$$...$$`` is still typeset;
    - a single line break is kept (Markdown would join the lines: a poem came out as one line);
    - fenced blocks and inline code are left as written.
    """
    out: list[str] = []
    fence: str | None = None
    lines = s.split("\n")
    for at_line, line in enumerate(lines):
        stripped = line.lstrip()
        if fence is not None:
            out.append(line)
            if stripped.startswith(fence):
                fence = None
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            out.append(line)
            continue
        pieces, at = [], 0
        for m in _CODE_SPAN.finditer(line):
            pieces.append(_plain(line[at : m.start()]))
            pieces.append(m.group(0))
            at = m.end()
        pieces.append(_plain(line[at:]))
        shown = "".join(pieces)
        following = lines[at_line + 1] if at_line + 1 < len(lines) else ""
        if shown.strip() and following.strip() and not shown.endswith(("  ", "\\")):
            shown += "  "  # a hard line break: ignored where a block ends (a heading, a table row)
        out.append(shown)
    return "\n".join(out)


def dollars(amount: float) -> str:
    """An amount for Markdown, as code: JupyterLab typesets text between two ``$`` as math,
    and neither ``\\$`` nor ``&#36;`` stops it (seen in the browser); a code span does, in
    every Markdown renderer."""
    return f"`${amount:.4f}`"


def _escape(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# Which input field says best what a tool call does, for its one-line summary.
_SUMMARY_FIELDS = ("command", "file_path", "path", "pattern", "url", "query", "description", "prompt")


_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


def without_ansi(text: str) -> str:
    """``text`` without terminal escape sequences (colours, cursor moves, titles): a CLI's error
    line pasted into a notebook showed them as boxes."""
    return _ANSI.sub("", text)


def tool_label(name: str) -> str:
    """A tool's name as a person reads it: ``Bash``, or ``run_code (kernel)`` for an MCP
    server's ``mcp__kernel__run_code``."""
    parts = name.split("__")
    return f"{parts[2]} ({parts[1]})" if len(parts) >= 3 and parts[0] == "mcp" and parts[1] and parts[2] else name


def tool_summary(name: str, tool_input: dict[str, Any], width: int = 80) -> str:
    """One line for a tool call: its name (:func:`tool_label`) and the input field that says
    what it does."""
    value = next((tool_input[k] for k in _SUMMARY_FIELDS if isinstance(tool_input.get(k), str)), None)
    if value is None:
        value = next((v for v in tool_input.values() if isinstance(v, str)), "")
    lines = [line for line in value.splitlines() if line.strip()]
    more = f" (+{len(lines) - 1} line{'s' if len(lines) > 2 else ''})" if len(lines) > 1 else ""
    value = (lines[0].strip() if lines else "") if more else value.strip()
    if len(value) > width:
        value = value[: width - 1] + "…"
    return f"{tool_label(name)} {value}{more}".rstrip()


def tool_markdown(name: str, tool_input: dict[str, Any], result: Any = None, is_error: bool | None = None) -> str:
    """A tool call as a collapsed block: a one-line summary that opens onto its input and,
    once known, its output. Code a tool runs (a ``code`` field: Python; a ``command``: a shell
    line) is shown as code, line breaks kept; the other fields as JSON."""
    summary = _escape(tool_summary(name, tool_input))
    parts = [f"<details><summary>{MARK_TOOL} <code>{summary}</code>{f' {MARK_FAILED}' if is_error else ''}</summary>", ""]
    code = next(((k, tool_input[k]) for k in ("code", "command") if isinstance(tool_input.get(k), str)), None)
    rest = {k: v for k, v in tool_input.items() if code is None or k != code[0]}
    if code is not None:
        parts.append(_fence(_clip(code[1]), "python" if code[0] == "code" else "bash"))
    if rest or code is None:
        parts += [*([""] if code is not None else []), _fence(_clip(json.dumps(rest, indent=2, ensure_ascii=False)), "json")]
    if result is not None:
        text = result if isinstance(result, str) else json.dumps(result, indent=2, ensure_ascii=False)
        parts += ["", "output:" if not is_error else "error:", "", _fence(_clip(text))]
    parts += ["", "</details>"]
    return "\n".join(parts)


def block_markdown(block: Any) -> str:
    """Markdown for one content block."""
    if isinstance(block, TextBlock):
        return model_text(block.text)
    if isinstance(block, ThinkingBlock):
        return "> *thinking:* " + model_text(block.thinking).replace("\n", "\n> ")
    if isinstance(block, ToolUseBlock):
        return tool_markdown(block.name, block.input)
    if isinstance(block, ToolResultBlock):
        content = block.content
        text = content if isinstance(content, str) else json.dumps(content, indent=2, ensure_ascii=False)
        mark = f"{MARK_FAILED} tool error" if block.is_error else f"{MARK_TOOL} tool result"
        return f"{mark}\n\n" + _fence(_clip(text or ""))
    if isinstance(block, UnknownBlock):
        return f"*({block.type} block)*"
    return f"*({type(block).__name__})*"


def message_markdown(message: Any) -> str:
    """Markdown for one message (what Jupyter shows for it)."""
    if isinstance(message, AssistantMessage):
        body = "\n\n".join(block_markdown(b) for b in message.content)
        return f"**Claude** · `{message.model}`\n\n{body}"
    if isinstance(message, UserMessage):
        if isinstance(message.content, str):
            return f"**You**\n\n{model_text(message.content)}"
        return "\n\n".join(block_markdown(b) for b in message.content)
    if isinstance(message, ResultMessage):
        return result_markdown(message)
    if isinstance(message, SystemMessage):
        if message.subtype == "init":
            d = message.data
            return f"*session `{d.get('session_id', '?')}` · model `{d.get('model', '?')}` · {len(d.get('tools') or [])} tools*"
        return f"*system: {message.subtype}*"
    if isinstance(message, StreamEvent):
        return f"*stream: {message.event.get('type')}*"
    return f"*{type(message).__name__}*"


def result_rows(result: ResultMessage) -> list[tuple[str, str]]:
    """The outcome and its figures as (label, value) pairs, each saying what it counts: the
    CLI reports tokens and wall time for this turn, cost and API time for its whole session."""
    usage = result.usage or {}
    tokens_in = usage.get("input_tokens", 0) + usage.get("cache_read_input_tokens", 0) + usage.get(
        "cache_creation_input_tokens", 0
    )
    tokens_out = usage.get("output_tokens", 0)
    cost = dollars(result.total_cost_usd) if result.total_cost_usd is not None else "–"
    status = MARK_OK if not result.is_error else MARK_WARNING
    return [
        ("result", f"{status} {result.subtype}"),
        ("tokens (this turn)", f"{tokens_in:,} in / {tokens_out:,} out"),
        ("time (this turn)", f"{result.duration_ms / 1000:.2f} s"),
        ("model calls (this turn)", str(result.num_turns)),
        ("cost (session so far)", cost),
        ("API time (session so far)", f"{result.duration_api_ms / 1000:.2f} s"),
    ]


def result_markdown(result: ResultMessage) -> str:
    """A small Markdown table of :func:`result_rows`."""
    return "| | |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in result_rows(result))


_shown_sessions: set[str] = set()
_shown_lock = threading.Lock()


def show(message: Any) -> None:
    """What ``display(message)`` does in Jupyter: Markdown, except that a stream event shows
    nothing and a session's ``init`` line shows only the first time."""
    if isinstance(message, StreamEvent):
        return
    if isinstance(message, SystemMessage) and message.subtype == "init":
        sid = str(message.data.get("session_id"))
        with _shown_lock:
            if sid in _shown_sessions:
                return
            _shown_sessions.add(sid)
    ipython = notebook()
    if ipython is None:
        return
    ipython.display.publish_display_data({"text/markdown": message_markdown(message), "text/plain": repr(message)})


_shown.register(message=message_markdown, block=block_markdown, show=show)  # how the types show themselves


def notebook() -> Any:
    """The ``IPython`` module when running in a notebook kernel (or IPython shell), else ``None``."""
    try:
        import IPython
        import IPython.display
    except ImportError:
        return None
    ipython: Any = IPython  # untyped library: keep it out of the type checker
    return ipython if ipython.get_ipython() is not None else None


class LiveMarkdown:
    """Markdown that grows in a notebook output, kept light for Jupyter's message limits.

    ``show(text)`` puts a new output up and returns its handle (with ``update(text)``).
    Writes are shown at most once per ``interval`` seconds, each update carrying only
    the open segment: once that passes ``segment`` characters, it is closed at its last
    paragraph break outside a code fence and not right after a heading (shown whole one last
    time) and the rest goes on in a new output. :meth:`flush` shows what is pending; :meth:`close` shows the whole
    text. Thread-safe.
    """

    def __init__(self, show: Callable[[str], Any], interval: float = 0.1, segment: int = 2000) -> None:
        self._show = show
        self._interval = interval
        self._segment = segment
        self._lock = threading.Lock()
        self._handle: Any = None
        self._open = ""  # the text of the output still growing
        self._shown = ""  # what it last showed
        self._last = 0.0
        self.text = ""  # everything written

    def write(self, chunk: str) -> None:
        with self._lock:
            self.text += chunk
            self._open += chunk
            self._split()
            if time.monotonic() - self._last >= self._interval:
                self._put()

    def flush(self) -> None:
        with self._lock:
            self._put()

    close = flush

    def _split(self) -> None:
        if len(self._open) <= self._segment:
            return
        cut = self._open.rfind("\n\n", self._segment // 2)
        # not right after a heading: it would end one output with nothing under it, and the
        # gap between two outputs is not a paragraph's (seen in the browser)
        while cut >= 0 and self._open[:cut].rsplit("\n", 1)[-1].lstrip().startswith("#"):
            cut = self._open.rfind("\n\n", self._segment // 2, cut)
        if cut < 0 or self._open[:cut].count("```") % 2:
            return  # no break yet, or inside a code fence: grow until there is one
        head, self._open = self._open[: cut + 2], self._open[cut + 2 :]
        self._put(head)  # the closed segment, whole
        self._handle, self._shown = None, ""

    def _put(self, text: str | None = None) -> None:
        text = self._open if text is None else text
        if text == self._shown and self._handle is not None:
            return
        if self._handle is None:
            if not text:
                return
            self._handle = self._show(text)
        else:
            self._handle.update(text)
        self._shown, self._last = text, time.monotonic()


class _Live:
    """Where :func:`stream_text` writes: a notebook output, or a text stream."""

    def __init__(self, file: IO[str] | None) -> None:
        self.file = file
        self.markdown: LiveMarkdown | None = None
        if file is None:
            ipython = notebook()
            if ipython is not None:
                markdown = ipython.display.Markdown

                class _Handle:
                    def __init__(self, text: str) -> None:
                        self.handle = ipython.display.display(markdown(model_text(text)), display_id=True)

                    def update(self, text: str) -> None:
                        self.handle.update(markdown(model_text(text)))

                self.markdown = LiveMarkdown(_Handle)
            else:
                self.file = sys.stdout

    def write(self, chunk: str) -> None:
        if self.markdown is not None:
            self.markdown.write(chunk)
        elif self.file is not None:
            self.file.write(chunk)
            self.file.flush()

    def flush(self) -> None:
        if self.markdown is not None:
            self.markdown.flush()


class StreamStopped(KeyboardInterrupt):
    """:func:`stream_text` was stopped (Ctrl-C, a notebook's stop button): the text so far was
    shown and the messages' source closed (a ``query()`` stops its CLI then). A
    ``KeyboardInterrupt``, so a script still stops; a notebook shows its one line."""

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for it: one line (a stop is no crash: the traceback went through
        the SDK's frames and said nothing more)."""
        return [f"{MARK_STOPPED} Stopped: {self}"]


def stream_text(messages: Iterable[Any], file: IO[str] | None = None) -> ResultMessage | None:
    """Show assistant text live as it streams; return the last :class:`ResultMessage`.

    With ``include_partial_messages=True`` the text appears delta by delta;
    without, message by message. In Jupyter (and ``file`` unset) the text
    renders as Markdown in the cell, shown at most ten times a second in outputs of
    about 2,000 characters (see :class:`LiveMarkdown`), whole at the end; elsewhere it
    is written to ``file`` (default: standard output).

    Stopped (Ctrl-C, a notebook's stop button), it closes ``messages`` if it can be closed (a
    ``query()`` stops its CLI at once) and raises :class:`StreamStopped`.
    """
    live = _Live(file)
    streamed_any = False
    result: ResultMessage | None = None
    try:
        for message in messages:
            if isinstance(message, StreamEvent):
                event = message.event
                if event.get("type") == "content_block_delta" and event.get("delta", {}).get("type") == "text_delta":
                    live.write(event["delta"]["text"])
                    streamed_any = True
                elif event.get("type") == "message_stop" and streamed_any:
                    live.write("\n")
                    live.flush()
            elif isinstance(message, AssistantMessage) and not streamed_any:
                for block in message.content:
                    if isinstance(block, TextBlock):
                        live.write(block.text + "\n")
                live.flush()
            elif isinstance(message, ResultMessage):
                result = message
                streamed_any = False
    except KeyboardInterrupt as e:
        close = getattr(messages, "close", None)
        if close is not None:
            close()
        if isinstance(e, StreamStopped):
            raise
        raise StreamStopped("stream_text stopped; its query's CLI is stopped, the text so far is above") from None
    finally:
        live.flush()
    return result
