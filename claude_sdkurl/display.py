"""Showing messages to people: Markdown/HTML reprs for Jupyter, and live streaming text.

Every message class has ``_repr_markdown_`` and ``_repr_html_`` (Jupyter picks
them up). :func:`stream_text` prints assistant text as it streams, in a
terminal or a notebook cell::

    from claude_sdkurl import query, ClaudeAgentOptions
    from claude_sdkurl.display import stream_text

    result = stream_text(query("Tell me a story", ClaudeAgentOptions(include_partial_messages=True)))
    result  # shows cost, tokens and duration
"""

from __future__ import annotations

import html
import json
import sys
from collections.abc import Iterable
from typing import IO, Any

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

_MAX_SHOWN = 4000  # characters of a tool input/result shown before eliding


def _clip(s: str, n: int = _MAX_SHOWN) -> str:
    return s if len(s) <= n else f"{s[:n]}\n… ({len(s) - n:,} more characters)"


def _fence(s: str, lang: str = "") -> str:
    ticks = "```"
    while ticks in s:
        ticks += "`"
    return f"{ticks}{lang}\n{s}\n{ticks}"


def block_markdown(block: Any) -> str:
    """Markdown for one content block."""
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ThinkingBlock):
        return "> 💭 " + block.thinking.replace("\n", "\n> ")
    if isinstance(block, ToolUseBlock):
        return f"🔧 **{block.name}**\n\n" + _fence(_clip(json.dumps(block.input, indent=2, ensure_ascii=False)), "json")
    if isinstance(block, ToolResultBlock):
        content = block.content
        text = content if isinstance(content, str) else json.dumps(content, indent=2, ensure_ascii=False)
        mark = "❌" if block.is_error else "📎"
        return f"{mark} tool result\n\n" + _fence(_clip(text or ""))
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
            return f"**You**\n\n{message.content}"
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
    """Outcome, cost, tokens, duration and turns, as (label, value) pairs."""
    usage = result.usage or {}
    tokens_in = usage.get("input_tokens", 0) + usage.get("cache_read_input_tokens", 0) + usage.get(
        "cache_creation_input_tokens", 0
    )
    tokens_out = usage.get("output_tokens", 0)
    cost = f"${result.total_cost_usd:.4f}" if result.total_cost_usd is not None else "–"
    status = "✅" if not result.is_error else "⚠️"
    rows = [
        ("result", f"{status} {result.subtype}"),
        ("cost", cost),
        ("tokens", f"{tokens_in:,} in / {tokens_out:,} out"),
        ("duration", f"{result.duration_ms / 1000:.2f} s (API {result.duration_api_ms / 1000:.2f} s)"),
        ("turns", str(result.num_turns)),
    ]
    return rows


def result_markdown(result: ResultMessage) -> str:
    """A small Markdown table of :func:`result_rows`."""
    return "| | |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in result_rows(result))


def message_html(message: Any) -> str:
    """HTML for one message: escaped Markdown source in a styled block (no Markdown library needed)."""
    if isinstance(message, ResultMessage):
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
            for k, v in result_rows(message)
        )
        return f"<table>{rows}</table>"
    text = html.escape(message_markdown(message))
    return f"<div style='white-space:pre-wrap;font-family:inherit'>{text}</div>"


def notebook() -> Any:
    """The ``IPython`` module when running in a notebook kernel (or IPython shell), else ``None``."""
    try:
        import IPython
        import IPython.display
    except ImportError:
        return None
    ipython: Any = IPython  # untyped library: keep it out of the type checker
    return ipython if ipython.get_ipython() is not None else None


class _Live:
    """Where live text goes: a notebook display handle, or a text stream."""

    def __init__(self, file: IO[str] | None) -> None:
        self.file = file
        self.text = ""
        self.handle: Any = None
        self._markdown: Any = None
        if file is None:
            ipython = notebook()
            if ipython is not None:
                self._markdown = ipython.display.Markdown
                self.handle = ipython.display.display(self._markdown(""), display_id=True)
            else:
                self.file = sys.stdout

    def write(self, chunk: str) -> None:
        self.text += chunk
        if self.handle is not None:
            self.handle.update(self._markdown(self.text))
        elif self.file is not None:
            self.file.write(chunk)
            self.file.flush()


def stream_text(messages: Iterable[Any], file: IO[str] | None = None) -> ResultMessage | None:
    """Show assistant text live as it streams; return the last :class:`ResultMessage`.

    With ``include_partial_messages=True`` the text appears delta by delta;
    without, message by message. In Jupyter (and ``file`` unset) the text
    renders as Markdown in the cell, updated in place; elsewhere it is written
    to ``file`` (default: standard output).
    """
    live = _Live(file)
    streamed_any = False
    result: ResultMessage | None = None
    for message in messages:
        if isinstance(message, StreamEvent):
            event = message.event
            if event.get("type") == "content_block_delta" and event.get("delta", {}).get("type") == "text_delta":
                live.write(event["delta"]["text"])
                streamed_any = True
            elif event.get("type") == "message_stop" and streamed_any:
                live.write("\n")
        elif isinstance(message, AssistantMessage) and not streamed_any:
            for block in message.content:
                if isinstance(block, TextBlock):
                    live.write(block.text + "\n")
        elif isinstance(message, ResultMessage):
            result = message
            streamed_any = False
    return result
