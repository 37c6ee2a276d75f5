"""One ``%%claude`` cell's output: the answer streaming as Markdown, tool calls folded,
approval buttons, and the turn's figures at the end. Written from any thread."""

from __future__ import annotations

import contextlib
import html
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

from ..display import (
    MARK_FAILED,
    MARK_OK,
    MARK_STOPPED,
    MARK_WARNING,
    LiveMarkdown,
    dollars,
    model_text,
    tool_label,
    tool_markdown,
    tool_summary,
    without_ansi,
)
from ..types import (
    AssistantMessage,
    ResultMessage,
    StreamEvent,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)


class CellOut:
    """Outputs that land in the cell that made this object, whichever thread writes them.

    ipykernel files a display under the "parent" message of the thread's context (the
    executing cell's); a worker thread has none of its own, so each write here sets the
    cell's for the time of the call.
    """

    def __init__(self, shell: Any) -> None:
        import IPython.display

        self._display: Any = IPython.display  # untyped library: kept out of the type checker
        self._pub: Any = getattr(shell, "display_pub", None)
        self.kernel: Any = getattr(shell, "kernel", None)
        self._parent = getattr(self._pub, "parent_header", None)
        self._count = 0  # outputs put up so far (an output's place: a handle's ``index``)
        self._count_lock = threading.Lock()

    def _shown(self, handle: Any, metadata: dict[str, Any] | None = None) -> _Handle:
        with self._count_lock:
            self._count += 1
            return _Handle(self, handle, metadata, self._count - 1)

    def is_last(self, handle: _Handle) -> bool:
        """Whether ``handle``'s output is the last one put up in this cell."""
        with self._count_lock:
            return handle.index == self._count - 1

    @contextlib.contextmanager
    def here(self) -> Iterator[None]:
        """Inside, displays (and widgets shown) go to this cell."""
        setter = getattr(self._pub, "set_thread_parent", None)
        token = setter(self._parent) if setter is not None and self._parent else None
        try:
            yield
        finally:
            if token is not None:
                self._pub.reset_thread_parent(token)

    def markdown(self, text: str, answer: bool = False) -> Any:
        """A new Markdown output; the handle's ``update(text)`` replaces it. ``answer`` marks it
        as the model's text (output metadata ``claude_sdkurl.answer``): the package's JupyterLab
        extension puts "Copy" and "Insert as a new cell" under its code blocks."""
        metadata = {"claude_sdkurl": {"answer": True}} if answer else None
        with self.here():
            return self._shown(self._display.display(_Markdown(text), display_id=True, metadata=metadata), metadata)

    def show(self, obj: Any) -> None:
        with self.here():
            self._display.display(obj)
            with self._count_lock:
                self._count += 1

    def widget(self, obj: Any) -> Any:
        """Show a widget; the handle's ``update(text)`` puts Markdown in its place (in the
        saved notebook too: no widget is left for a reader without the kernel to restore)."""
        with self.here():
            return self._shown(self._display.display(obj, display_id=True))


class _Handle:
    def __init__(self, out: CellOut, handle: Any, metadata: dict[str, Any] | None, index: int) -> None:
        self._out, self._handle, self._metadata, self.index = out, handle, metadata, index

    def update(self, text: str, answer: bool | None = None) -> None:
        """Replace the output with ``text`` (``answer``: mark it, or no longer, as the model's)."""
        if answer is not None:
            self._metadata = {"claude_sdkurl": {"answer": True}} if answer else None
        with self._out.here():
            self._handle.update(_Markdown(text), metadata=self._metadata)


class _Markdown:
    """Markdown to display, with its own text as the plain text beside it: IPython's
    ``Markdown`` gives ``<IPython.core.display.Markdown object>`` there, which is what a saved
    notebook read in a terminal, a diff or ``nbconvert --to script`` showed of every answer."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_markdown_(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text


class _Status:
    """The one-line "what is happening" output of a turn (starting, waiting, thinking), with the
    seconds it has lasted, moved on once a second by a ticker thread until the turn ends.

    It is shown at the end of the cell's outputs when it begins; what comes next (text, a tool
    call, thinking, the footer) takes its place when it is still the cell's last output
    (:meth:`take`: a saved notebook keeps no emptied line), else it is emptied. A wait after a
    tool call gets a new line below it.
    Thread: ``claude-sdkurl-cell-status``, one per turn, stopped by :meth:`close` (its waits
    are one second at most)."""

    def __init__(self, out: CellOut) -> None:
        self._out = out
        self._lock = threading.Lock()
        self._handle: Any = None
        self._what = ""
        self._since = 0.0
        self._closed = threading.Event()
        self._ticker: threading.Thread | None = None

    def show(self, what: str) -> None:
        """Say ``what`` is happening now (a new line if none is shown); its clock starts now."""
        with self._lock:
            if self._closed.is_set() or (what == self._what and self._handle is not None):
                return
            self._what, self._since = what, time.monotonic()
            self._put()
            if self._ticker is None:
                self._ticker = threading.Thread(target=self._tick, name="claude-sdkurl-cell-status", daemon=True)
                self._ticker.start()

    @property
    def what(self) -> str:
        """What the line says is happening ("" when none is shown)."""
        with self._lock:
            return self._what

    def seconds(self) -> float:
        with self._lock:
            return time.monotonic() - self._since

    def clear(self) -> None:
        """Empty the line (the answer is here); the next :meth:`show` starts a new one below."""
        with self._lock:
            self._clear()

    def take(self) -> Any:
        """The line's output for what comes next to fill, if it is the cell's last output (the
        line is gone then; the next :meth:`show` starts a new one below); else the line is
        emptied and ``None`` is answered."""
        with self._lock:
            handle = self._handle
            if handle is not None and self._out.is_last(handle):
                self._handle, self._what = None, ""
                return handle
            self._clear()
            return None

    def close(self, take: bool = False) -> Any:
        """Stop the line for good; with ``take``, answer its output as :meth:`take` does."""
        with self._lock:
            self._closed.set()
            handle = self._handle if take and self._handle is not None and self._out.is_last(self._handle) else None
            if handle is None:
                self._clear()
            self._handle = None
            ticker, self._ticker = self._ticker, None
        if ticker is not None and ticker is not threading.current_thread():
            ticker.join(2.0)
        return handle

    def _clear(self) -> None:
        if self._handle is not None:
            self._handle.update("")
        self._handle, self._what = None, ""

    def _put(self) -> None:
        seconds = int(time.monotonic() - self._since)
        line = f"*{self._what}…{f' {seconds} s' if seconds else ''}*"
        if self._handle is None:
            self._handle = self._out.markdown(line)
        else:
            self._handle.update(line)

    def _tick(self) -> None:
        while not self._closed.wait(1.0):
            with self._lock:
                if self._handle is not None and not self._closed.is_set():
                    self._put()


class TurnView:
    """Renders one turn's messages (from ``include_partial_messages=True``) into a cell: a
    status line while nothing is shown yet (starting, waiting for the model, thinking), the
    answer's text as it streams, thinking folded, tool calls folded."""

    def __init__(self, out: CellOut, interval: float = 0.1) -> None:
        self.out = out
        self._interval = interval
        self._lock = threading.Lock()
        self._tool_shown = threading.Condition(self._lock)  # notified as each tool call is shown
        self._text: LiveMarkdown | None = None  # the text block streaming now
        self._thought: list[str] | None = None  # the thinking block streaming now
        self._streamed: set[str] = set()  # message ids whose text came as deltas
        self._tools: dict[str, tuple[Any, str, dict[str, Any]]] = {}  # tool id -> (handle, name, input)
        self.status = _Status(out)
        self.text = ""  # the answer's text, all blocks

    def _output(self, text: str, answer: bool = False) -> Any:
        """A new Markdown output, in the status line's place when that is the last output."""
        handle = self.status.take()
        if handle is None:
            return self.out.markdown(text, answer=answer)
        handle.update(text, answer=answer)
        return handle

    def _live(self) -> LiveMarkdown:
        output = self._output

        class _Shown:  # the model's text, with its HTML shown as text
            def __init__(self, text: str) -> None:
                self.handle = output(model_text(text), answer=True)

            def update(self, text: str) -> None:
                self.handle.update(model_text(text))

        return LiveMarkdown(_Shown, interval=self._interval)

    def _end_text(self) -> None:
        if self._text is not None:
            self._text.close()
            self.text += self._text.text + "\n\n"
            self._text = None

    def note(self, text: str) -> None:
        """A line of the notebook's own (not the model's) where the turn is now: the status line
        (if any) goes on below it."""
        what = self.status.what
        self._output(text)
        if what:
            self.status.show(what)

    def waiting(self, what: str) -> None:
        """Show the status line (``"starting Claude Code"``, ``"waiting for Claude"``)."""
        self.status.show(what)

    def _thinking_shown(self, thought: str, seconds: float | None) -> None:
        took = f" for {seconds:.0f} s" if seconds is not None and seconds >= 1 else ""
        if thought.strip():
            self._output(f"<details><summary>Thought{took}</summary>\n\n{model_text(thought)}\n\n</details>")
        else:
            self.status.clear()

    def add(self, message: Any) -> None:
        with self._lock:
            if getattr(message, "parent_tool_use_id", None):
                return  # a subagent's: its Agent tool call stands for it
            if isinstance(message, StreamEvent):
                self._event(message.event)
            elif isinstance(message, AssistantMessage):
                for block in message.content:
                    if message.message_id in self._streamed and not isinstance(block, ToolUseBlock):
                        continue  # shown as it streamed
                    if isinstance(block, TextBlock):
                        self._end_text()
                        self._text = self._live()
                        self._text.write(block.text)
                        self._end_text()
                    elif isinstance(block, ThinkingBlock):
                        self._end_text()
                        self._thinking_shown(block.thinking, None)
                    elif isinstance(block, ToolUseBlock):
                        self._end_text()
                        handle = self._output(tool_markdown(block.name, block.input))
                        self._tools[block.id] = (handle, block.name, block.input)
                        self._tool_shown.notify_all()
            elif isinstance(message, UserMessage) and not isinstance(message.content, str):
                for block in message.content:
                    if isinstance(block, ToolResultBlock) and block.tool_use_id in self._tools:
                        handle, name, tool_input = self._tools[block.tool_use_id]
                        handle.update(tool_markdown(name, tool_input, block.content if block.content is not None else "",
                                                    block.is_error))  # fmt: skip
                        self.status.show("waiting for Claude")  # the model is asked again, with the result

    def wait_for_tool(self, tool_use_id: str | None, timeout: float = 2.0) -> None:
        """Wait until the tool call ``tool_use_id`` is shown (at most ``timeout``): its approval
        card goes below it. The CLI sends the call's message before asking, but the two are
        handled on different threads, and a slow cell thread showed the card, then the line that
        replaced it, above the call."""
        if tool_use_id:
            with self._tool_shown:
                self._tool_shown.wait_for(lambda: tool_use_id in self._tools, timeout)

    def _event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        block_type = (event.get("content_block") or {}).get("type")
        delta = event.get("delta") or {}
        if kind == "message_start":
            message_id = (event.get("message") or {}).get("id")
            if message_id:
                self._streamed.add(message_id)
        elif kind == "content_block_start" and block_type == "text":
            self._end_text()
            self._text = self._live()
        elif kind == "content_block_start" and block_type in ("thinking", "redacted_thinking"):
            self._end_text()
            self._thought = []
            self.status.show("thinking")
        elif kind == "content_block_delta" and delta.get("type") == "thinking_delta" and self._thought is not None:
            self._thought.append(str(delta.get("thinking", "")))
        elif kind == "content_block_delta" and delta.get("type") == "text_delta":
            if self._text is None:
                self._text = self._live()
            self._text.write(delta.get("text", ""))
        elif kind in ("content_block_stop", "message_stop"):
            if self._thought is not None:
                thought, self._thought = "".join(self._thought), None
                self._thinking_shown(thought, self.status.seconds())
            self._end_text()

    def outside(self, messages: list[Any]) -> None:
        """A turn someone else asked for (a message from the relay's page or a ``/ws``
        frontend) that ended before this cell's: one folded line with its answer, apart from
        the cell's own."""
        said = answer_text(messages)
        quoted = "\n".join(f"> {line}" for line in (said or "*(no text)*").splitlines())
        with self._lock:
            self._end_text()
            self.out.markdown(f"<details><summary>↪ A message sent from outside this notebook (the relay's page or a "
                              f"frontend) was answered first</summary>\n\n{quoted}\n\n</details>")  # fmt: skip

    def finish(self, result: ResultMessage | None, turn_cost: float | None, note: str | None = None, stopped: bool = False,
               models: list[str] | None = None) -> None:  # fmt: skip
        """Close the text and show the footer: outcome (``note`` first, if any), the models that
        answered this turn (``models``; else the session's, from the result), this turn's cost
        and tokens, times. A stopped turn's error result is not marked as an error (the note
        says it stopped)."""
        with self._lock:
            self._end_text()
            line = self.status.close(take=True)
            parts = []
            if note:
                parts.append(note)
            if result is not None:
                usage = result.usage or {}
                tokens_in = sum(int(usage.get(k) or 0) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
                tokens_out = int(usage.get("output_tokens") or 0)
                # an interrupted turn's result carries no usage (2.1.330): none is shown, not zeros
                tokens = f"{tokens_in:,} in / {tokens_out:,} out tokens" if tokens_in or tokens_out else "tokens not reported"
                mark = MARK_OK if not result.is_error else ("" if stopped else f"{MARK_WARNING} {result.subtype}")  # a stop: the note says it
                cost = f"{dollars(turn_cost)} this turn" if turn_cost is not None else "cost –"
                total = f" ({dollars(result.total_cost_usd)} this session)" if result.total_cost_usd is not None else ""
                # the models that answered this turn (a --model the CLI did not take shows here);
                # the result's model_usage names every model of the session so far
                named = ", ".join(f"`{m}`" for m in (models if models is not None else list(result.model_usage or {})))
                parts.append(" · ".join(p for p in (mark, named, f"{cost}{total}", tokens, f"{result.duration_ms / 1000:.1f} s") if p))
                if result.is_error and result.errors and not note:  # a stop's own error text says nothing new
                    parts.append("; ".join(without_ansi(str(e)) for e in result.errors))
            if parts and line is not None:
                line.update("\n\n".join(parts))
            elif parts:
                self.out.markdown("\n\n".join(parts))
            elif line is not None:
                line.update("")


def answer_text(messages: list[Any]) -> str:
    """The text of a turn's answer: every text block of the main conversation (a subagent's
    own words left out), paragraphs apart."""
    return "\n\n".join(b.text for m in messages if isinstance(m, AssistantMessage) and not m.parent_tool_use_id
                       for b in m.content if isinstance(b, TextBlock))  # fmt: skip


def code_span(s: str) -> str:
    """``s`` as one Markdown code span, whatever backticks it holds."""
    ticks = "`"
    while ticks in s:
        ticks += "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


_CODE_FIELDS = ("command", "code", "content")  # the input field shown whole, as code, when there is one
_MAX_CARD = 4000  # characters of a tool input shown on a card


def card_html(tool_name: str, tool_input: dict[str, Any], reason: str | None) -> str:
    """What an approval card says: the tool, what the model says the call is for (its
    ``description``), why the CLI asks, and the whole command or code as it will run (line
    breaks kept), then any other input fields."""
    parts = [f"<b>Claude asks to use {html.escape(tool_label(tool_name))}</b>"]
    said = tool_input.get("description")
    if isinstance(said, str) and said.strip():
        parts.append(f"<div>{html.escape(said.strip())}</div>")
    if reason:
        parts.append(f"<div><i>{html.escape(reason)}</i></div>")
    main = next((k for k in _CODE_FIELDS if isinstance(tool_input.get(k), str)), None)
    where = tool_input.get("file_path")
    if isinstance(where, str):
        parts.append(f"<div><code>{html.escape(where)}</code></div>")
    if main is not None:
        code = str(tool_input[main])
        clipped = code if len(code) <= _MAX_CARD else f"{code[:_MAX_CARD]}\n… ({len(code) - _MAX_CARD:,} more characters)"
        parts.append(f"<pre>{html.escape(clipped)}</pre>")
    rest = {k: v for k, v in tool_input.items() if k not in (main, "description", "file_path")}
    if rest:
        shown = json.dumps(rest, indent=2, ensure_ascii=False)
        parts.append(f"<pre>{html.escape(shown[:_MAX_CARD])}</pre>")
    return "".join(parts)


class Approval:
    """Allow / Deny (and, where ``always`` names the rules it would add, "Always allow" with
    them on its label) buttons for one tool call, on a card that shows what the model says the
    call is for and the whole command or code (:func:`card_html`). The click is handled on the
    package's kernel subshell where the kernel has subshells (at once, whatever cell runs:
    :mod:`claude_sdkurl.notebook._clicks`), else on the kernel's main thread, and wakes the
    waiting callback. ``held``, where clicks wait for a running cell, is said on the card.

    Once decided (a click, a stop, or the turn's end), the card is replaced by one Markdown line
    saying what was decided (``✔ Allowed: `Bash touch notes.txt` ``) and its widgets are
    closed, so the saved notebook reads the same anywhere: on GitHub, in nbviewer, after a
    kernel restart."""

    _WORDS = {"allow": (MARK_OK, "Allowed"), "always": (MARK_OK, "Always allowed"), "deny": (MARK_FAILED, "Denied"),
              "stop": (MARK_STOPPED, "Stopped before a decision"), "ended": (MARK_STOPPED, "Not decided: the turn ended")}  # fmt: skip

    def __init__(self, out: CellOut, tool_name: str, tool_input: dict[str, Any], reason: str | None = None,
                 always: str | None = None, held: str | None = None) -> None:
        import ipywidgets as widgets  # type: ignore[import-untyped]

        from ._clicks import available, handle_apart

        self.decision: str | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._summary = tool_summary(tool_name, tool_input)
        apart = available(out.kernel)
        note = f"<div><i>{html.escape(held)}</i></div>" if held and not apart else ""
        self._card = widgets.HTML(card_html(tool_name, tool_input, reason) + note)
        buttons = []
        choices = [("Allow", "allow", "success"), ("Deny", "deny", "danger")] + ([(f"Always allow {always}", "always", "")] if always else [])
        for label, value, style in choices:
            tip = f"{label} (this conversation: not after --new, --resume or --continue)" if value == "always" else f"{label}: {tool_name}"
            wide = {"layout": widgets.Layout(width="auto")} if value == "always" else {}  # the label names the rule
            button = widgets.Button(description=label, button_style=style, tooltip=tip, **wide)
            button.on_click(lambda _b, v=value: self.decide(v))
            buttons.append(button)
        self._buttons = buttons
        self._row = widgets.HBox(buttons)
        self.box = widgets.VBox([self._card, self._row])
        if apart:
            handle_apart(out.kernel, *buttons, self._row, self._card, self.box)
        self._handle = out.widget(self.box)

    def decide(self, value: str) -> None:
        """Record the answer once (a click; ``"stop"``; ``"ended"``) and put the line saying it
        in place of the card."""
        with self._lock:  # a click and a stop may land together: the first one decides
            if self.decision is not None:
                return
            self.decision = value
        mark, words = self._WORDS[value]
        self._handle.update(f"{mark} **{words}:** {code_span(self._summary)}")
        for widget in (*self._buttons, self._row, self._card, self.box):
            widget.close()
        self._done.set()

    def wait(self) -> str:
        self._done.wait()
        return self.decision or "deny"
