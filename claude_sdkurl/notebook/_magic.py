"""``%load_ext claude_sdkurl``: the ``%%claude`` cell magic and the ``%claude`` line magic.

How a cell waits without blocking the kernel: Jupyter handles widget clicks (comm
messages) on the kernel's event loop, which a cell blocking in plain code holds up until it
ends. So a ``%%claude`` cell is rewritten, before IPython compiles it, into
``await <its turn>``: IPython runs a cell with a top-level ``await`` as a coroutine on the
kernel's loop, and while it awaits, ipykernel dispatches comm messages (the approval
buttons work), the stop button cancels the await (the turn is interrupted and its CLI
stopped; the cell ends with the turn's "Stopped" note, no traceback, and the cells queued
after it are dropped), and "Run all" still runs the next cell only after this one. The turn itself
runs on a thread of ours and writes into the cell's outputs. With ``--background`` the
cell returns at once and other cells can run meanwhile (a Stop button stops it). Where
top-level ``await`` is off (``%autoawait off``), the magic waits in plain code: the stop
button works, and so do the approval buttons where the kernel has subshells (ipykernel 7:
the package's widgets are handled on one of its own, see :mod:`._clicks`, which is also what
lets a background turn's buttons act while another cell runs plain code); in a kernel without
them a call that would ask is denied at once, with the reason in the cell.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from ..types import ClaudeAgentOptions
from ._agent import NotebookAgent, Turn

_TICK = 0.1  # seconds between wake-ups of the kernel's loop while a cell awaits its turn

_agent: NotebookAgent | None = None
_agent_lock = threading.Lock()


def agent() -> NotebookAgent:
    """The kernel's :class:`NotebookAgent` (made on first use)."""
    global _agent
    with _agent_lock:
        if _agent is None:
            from IPython import get_ipython

            _agent = NotebookAgent(get_ipython())
        return _agent


def configure(options: ClaudeAgentOptions) -> NotebookAgent:
    """Set the options every ``%%claude`` cell starts from (its flags change them); the
    next cell starts a new CLI with them, going on with the conversation."""
    if not isinstance(options, ClaudeAgentOptions):
        raise TypeError(f"options must be ClaudeAgentOptions, not {type(options).__name__}")
    a = agent()
    a.options = options
    a._stop_cli(interrupt=False)
    return a


class CellStopped(Exception):
    """A ``%%claude`` cell stopped by the stop button, where the kernel offers no quiet way to
    keep the cells queued after it from running. IPython shows one line for it, no traceback."""

    def _render_traceback_(self) -> list[str]:
        return ["■ Stopped."]


def _stopped() -> None:
    """End a stopped cell quietly: the turn's own note says it stopped, so no traceback (a
    re-raised cancel printed 30 lines of the magic's rewrite and asyncio). Cells queued after
    it ("Run all") must not run, which an error would have seen to: the kernel is told to drop
    them as it does after an error (ipykernel's ``_abort_queues``); where it has none, a
    one-line :class:`CellStopped` error does it."""
    from IPython import get_ipython

    shell = get_ipython()
    abort = getattr(getattr(shell, "kernel", None), "_abort_queues", None)
    if abort is None:
        raise CellStopped("stopped") from None
    abort()


def _wait_plain(turn: Turn) -> bool:
    try:
        while not turn.done.wait(0.1):
            pass
    except KeyboardInterrupt:
        turn.stop()
        _stopped()
        return False
    return True


async def _await_turn(turn: Turn) -> bool:
    """Wait for ``turn`` with the kernel's loop free; ``False`` when the stop button stopped it."""
    loop = asyncio.get_running_loop()
    ended = loop.create_future()

    def settle() -> None:
        if not ended.done():
            ended.set_result(None)

    def wake() -> None:
        loop.call_soon_threadsafe(settle)

    turn.on_done(wake)
    try:
        # Race: ipykernel's SIGINT handler schedules the cancel with a plain call_soon, which
        # does not wake a loop asleep in select(); a tick keeps the stop button under 0.1 s
        # (awaiting the turn alone, the cancel landed only when the turn ended: measured).
        while not ended.done():
            await asyncio.wait([ended], timeout=_TICK)
    except asyncio.CancelledError:  # the stop button (ipykernel turns SIGINT into a cancel)
        await loop.run_in_executor(None, turn.stop)
        _stopped()
        return False
    return True


async def run_cell(line: str, body: str, prog: str = "%%claude") -> None:
    """What a rewritten ``%%claude`` cell awaits: a background turn still running first (the
    kernel stays free meanwhile: that turn's buttons work), then its own. The magic line's
    ``$var`` and ``{expr}`` are expanded first, as IPython does for every magic it calls itself
    (the rewrite runs before IPython would)."""
    a = agent()
    shell = getattr(a, "shell", None)
    if shell is not None and hasattr(shell, "var_expand"):
        line = shell.var_expand(line)
    asked = a.prepare(line, body, prog)
    if asked is None:  # --help
        return
    previous = a.unfinished()
    if previous is not None and not await _await_turn(previous):
        return  # stopped while it waited: this cell's turn does not start
    turn = a.begin(asked)
    if not turn.background:
        await _await_turn(turn)


def claude(line: str, cell: str | None = None) -> None:
    """``%%claude [flags]`` (the cell is the prompt) or ``%claude [flags] prompt``."""
    a = agent()
    asked = a.prepare(line, cell or "", "%%claude" if cell is not None else "%claude")
    if asked is None:  # --help
        return
    previous = a.unfinished()
    if previous is not None and not _wait_plain(previous):
        return
    turn = a.begin(asked, plain=True)
    if not turn.background:
        _wait_plain(turn)


def _rewrite(lines: list[str]) -> list[str]:
    """An input transformer: a ``%%claude`` cell (or a one-line ``%claude`` cell) becomes
    ``await`` of its turn when top-level ``await`` is on."""
    from IPython import get_ipython

    shell = get_ipython()
    if not lines or shell is None or not getattr(shell, "autoawait", False):
        return lines
    first = lines[0]
    if first.startswith("%%claude") and first[8:9] in ("", " ", "\t", "\n"):
        line, body, prog = first[8:].strip(), "".join(lines[1:]), "%%claude"
    elif first.startswith("%claude") and first[7:8] in (" ", "\t") and not "".join(lines[1:]).strip():
        line, body, prog = first[7:].strip(), "", "%claude"
    else:
        return lines
    call = f"await __import__('claude_sdkurl.notebook._magic', fromlist=['run_cell']).run_cell({line!r}, {body!r}, {prog!r})\n"
    return [call]


def _on_kernel_shutdown(kernel: Any) -> None:
    """Have the kernel's shutdown (a restart too) stop a turn under way with a line saying so,
    while its outputs still reach the notebook (at interpreter exit they no longer do)."""
    original = getattr(kernel, "do_shutdown", None)
    if original is None or getattr(original, "_claude_sdkurl", False):
        return

    def do_shutdown(restart: bool) -> Any:
        if _agent is not None:
            try:
                _agent.kernel_stopping(bool(restart))
            except Exception:  # the kernel's shutdown must go on whatever happens here
                pass
        return original(restart)

    do_shutdown._claude_sdkurl = True  # type: ignore[attr-defined]
    kernel.do_shutdown = do_shutdown


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext claude_sdkurl``: register ``%%claude``/``%claude`` and the rewrite."""
    shell.register_magic_function(claude, magic_kind="line_cell", magic_name="claude")
    if _rewrite not in shell.input_transformers_cleanup:
        shell.input_transformers_cleanup.append(_rewrite)
    kernel = getattr(shell, "kernel", None)
    if kernel is not None:
        _on_kernel_shutdown(kernel)


def unload_ipython_extension(shell: Any) -> None:
    """``%unload_ext claude_sdkurl``: the magics and the rewrite go, the CLI is stopped."""
    if _rewrite in shell.input_transformers_cleanup:
        shell.input_transformers_cleanup.remove(_rewrite)
    for kind in ("line", "cell"):
        shell.magics_manager.magics[kind].pop("claude", None)
    if _agent is not None:
        _agent.close()
