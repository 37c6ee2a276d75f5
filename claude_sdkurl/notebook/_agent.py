"""The notebook's agent: one conversation for the kernel, a turn per ``%%claude`` cell.

A turn runs on its own thread; the cell waits for it without blocking the kernel (see
:mod:`claude_sdkurl.notebook._magic`), so widget clicks (approvals) are handled while it
runs, and the stop button stops it.
"""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import os
import shlex
import threading
import warnings
from collections.abc import Callable
from typing import Any

from .._engine.session import outside_of
from ..client import ClaudeClient
from ..display import MARK_FAILED, MARK_STOPPED, tool_summary, without_ansi
from ..types import (
    AssistantMessage,
    CanUseToolShadowedWarning,
    ClaudeAgentOptions,
    Message,
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionRuleValue,
    PermissionUpdate,
    ResultMessage,
    SystemMessage,
    ToolPermissionContext,
    shadowed_can_use_tool_message,
)
from ._context import ContextError, attach, kernel_server, on_main_thread
from ._view import Approval, CellOut, TurnView, answer_text, code_span

STOP_WAIT = 1.0  # seconds a stop gives the CLI to answer its interrupt before it is stopped


_REFUSED = {  # what the model is told when a tool call is not allowed, by the decision
    "deny": "The user denied this in the notebook.",
    "stop": "The turn was stopped.",
    "ended": "The turn ended before anyone decided.",
    "unseen": "No one can approve this here: install ipywidgets for approval buttons "
              "(pip install 'claude-sdkurl[notebook]'), or allow the tool with --allowed-tools.",
    "held": "No one can approve this here: the notebook cell waits in plain code (%autoawait off) in a "
            "kernel that cannot take clicks meanwhile; allow the tool with --allowed-tools.",
}
# said on a background turn's card where the kernel takes clicks only between cells
_HELD = "Another cell running now? A click here is acted on when it ends (this kernel takes clicks only between cells)."


class _NotStarted(RuntimeError):
    """A cell's CLI would refuse to start: its text is the note the cell shows."""


class UsageError(ValueError):
    """A ``%%claude`` line that cannot be run (IPython shows it without a traceback)."""


def _usage_error(message: str) -> Exception:
    try:
        from IPython.core.error import UsageError as IPythonUsageError

        return IPythonUsageError(message)
    except ImportError:  # pragma: no cover - the magic needs IPython
        return UsageError(message)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit the kernel's process
        raise _usage_error(f"{message}\n\n{self.format_usage()}")


def _unasked(options: ClaudeAgentOptions) -> str | None:
    """What runs without the approval buttons because of the user's own permission mode or
    allow rules, said for a notebook (``None``: every call the rules leave open asks)."""
    if options.permission_mode == "bypassPermissions" and refused_as_root(options):
        return (f"{MARK_FAILED} As root, Claude Code refuses `--permission-mode bypassPermissions` outside a sandbox. "
                "In a container or VM you trust, set `IS_SANDBOX=1` (exactly `1`) in the options' `env` "
                "(`claude_sdkurl.notebook.configure(...)`); else use `acceptEdits` or `--allowed-tools`.")  # fmt: skip
    if shadowed_can_use_tool_message(options) is None:
        return None
    if options.permission_mode == "bypassPermissions":
        return "ℹ Every tool runs without asking in this conversation (`--permission-mode bypassPermissions`): no approval buttons."
    from ..types import _shadowed_tools

    tools = _shadowed_tools(options)  # (the SDK's own list: Skill with skills="all" too)
    one = len(tools) == 1
    # a narrower rule of a tool named, one the user has not written already
    written = set(options.allowed_tools)
    narrower = [r for r in (_NARROWER.get(t, f"{t}(...)") for t in tools) if r not in written]
    advice = f" Name a narrower rule, `{narrower[0]}` say, to be asked for the rest." if narrower else ""
    return (f"ℹ {', '.join(f'`{t}`' for t in tools)} {'runs' if one else 'run'} without asking (your "
            f"`--allowed-tools`): no approval buttons for {'it' if one else 'them'}.{advice}")  # fmt: skip


_NARROWER = {"Bash": "Bash(git *)", "Read": "Read(./src/**)", "Edit": "Edit(./src/**)", "Write": "Write(./out/**)",
             "WebFetch": "WebFetch(domain:docs.python.org)", "Glob": "Glob(./src/**)", "Grep": "Grep(./src/**)"}  # fmt: skip


def refused_as_root(options: ClaudeAgentOptions) -> bool:
    """Whether the CLI will refuse bypassPermissions: it runs as root and not in a sandbox. As
    2.1.330 decides it: ``IS_SANDBOX`` exactly ``1`` (``yes`` is not) or ``CLAUDE_CODE_BUBBLEWRAP``
    set, in its environment (the options' ``env`` over this process's)."""
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None or geteuid() != 0:
        return False
    env = {**os.environ, **(options.env or {})}
    return env.get("IS_SANDBOX") != "1" and not env.get("CLAUDE_CODE_BUBBLEWRAP")


def _words(line: str) -> list[str]:
    """The magic line's words, as a shell splits them, except that a word opening a parenthesis
    goes on to the word that closes it: ``--allowed-tools Read,Bash(git *)`` is one rule, as
    written in the guide and in Claude Code's own settings (quoting it works too)."""
    words: list[str] = []
    for word in shlex.split(line):
        if words and words[-1].count("(") > words[-1].count(")"):
            words[-1] += " " + word
        else:
            words.append(word)
    return words


def parser(prog: str = "%%claude") -> argparse.ArgumentParser:
    p = _Parser(prog=prog, add_help=False, description="Ask Claude Code; the cell is the prompt.")
    p.add_argument("--model", help="the model for this cell and on, e.g. claude-sonnet-4-6 (changed on the live CLI)")
    p.add_argument("--cwd", help="the folder Claude Code works in (a new CLI of the conversation)")
    p.add_argument("--permission-mode", choices=["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"],
                   help="how tool calls are permitted; bypassPermissions asks nothing (as root, only with IS_SANDBOX=1)")
    p.add_argument("--allowed-tools", help="comma-separated tool rules, e.g. Read,Bash(git *) (a rule's spaces need no quotes)")
    p.add_argument("--max-budget-usd", type=float, help="stop the conversation's CLI once it has cost this many dollars")
    p.add_argument("--resume", metavar="SESSION_ID", help="go on with that conversation (its session id)")
    p.add_argument("--continue", dest="continue_", action="store_true", help="go on with the latest conversation in this folder")
    p.add_argument("--new", action="store_true", help="start a new conversation")
    p.add_argument("--with", dest="with_", nargs="+", default=[], metavar="VAR", help="attach notebook variables")
    p.add_argument("--kernel-tools", action="store_true", help="let the agent list and read the kernel's variables")
    p.add_argument("--allow-kernel-exec", action="store_true", help="and run code in the kernel (each run approved)")
    p.add_argument("--background", "--bg", action="store_true", help="return at once; the turn goes on")
    p.add_argument("-h", "--help", action="store_true", help="show this help (nothing is asked)")
    p.add_argument("prompt", nargs="*", help="the prompt (with %%%%claude, words on the line come before the cell's)")
    return p


@dataclasses.dataclass
class Asked:
    """A cell's checked request: its flags, prompt and attached variables."""

    args: argparse.Namespace
    prompt: str
    blocks: list[dict[str, Any]]


@dataclasses.dataclass
class CellRun:
    """One ``%%claude`` cell's turn (``_claude`` in the notebook after it ends)."""

    prompt: str
    """The cell's prompt."""
    text: str = ""
    """The answer's text (every text block of the turn)."""
    result: ResultMessage | None = None
    """The turn's result, if it got one."""
    messages: list[Message] = dataclasses.field(default_factory=list)
    """Every message of the turn."""
    session_id: str | None = None
    """The conversation's session."""
    cost_usd: float | None = None
    """What this turn cost (the CLI reports a running total; this is the difference)."""
    stopped: bool = False
    """The turn was stopped (the stop button, the relay's page)."""
    error: BaseException | None = None
    """What the turn failed with, if it did."""

    def _repr_markdown_(self) -> str:
        return self.text or "*(no text)*"


class Turn:
    """A turn under way: its thread, its view, and how to stop it."""

    def __init__(self, agent: NotebookAgent, run: CellRun, view: TurnView, background: bool, plain: bool = False) -> None:
        self.agent, self.run, self.view, self.background = agent, run, view, background
        self.plain = plain  # the cell waits in plain code (``%autoawait off``): the kernel is busy meanwhile
        self.done = threading.Event()
        self.stopping = False
        self.stop_note = f"{MARK_STOPPED} Stopped. The conversation goes on in the next cell."
        self.approvals: list[Approval] = []
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def on_done(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if not self.done.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def _ended(self) -> None:
        with self._lock:
            self.done.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def stop(self) -> None:
        """The stop button: interrupt the turn (bounded), stop the CLI, keep what was shown.
        The conversation goes on in the next cell (from the session's transcript)."""
        self.stopping = True
        for approval in list(self.approvals):
            approval.decide("stop")
        self.agent._stop_cli(interrupt=True)
        self.done.wait(STOP_WAIT + 1.0)


class NotebookAgent:
    """The kernel's conversation with Claude Code: ``%%claude`` cells are its turns.

    ``options`` are the base for every cell (a cell's flags change them for that cell and
    on); set them with :func:`claude_sdkurl.notebook.configure`. Approvals: a tool call the
    permission rules do not settle shows Allow / Deny / Always allow buttons in the cell.
    """

    def __init__(self, shell: Any, options: ClaudeAgentOptions | None = None) -> None:
        self.shell = shell
        self.options = options or ClaudeAgentOptions()
        self.client: ClaudeClient | None = None
        self.session_id: str | None = None
        self._key: tuple[Any, ...] | None = None  # what the live CLI was started with
        self._live: dict[str, Any] = {}  # model / permission mode set on it since
        self._totals: dict[str, float] = {}  # session -> the CLI's cost total at its last result
        self._always: set[str] = set()
        self._told: set[str] = set()  # what _unasked said already, in this kernel (said once)
        self._stderr: list[str] = []  # the CLI's standard error since the turn began
        self._stderr_lock = threading.Lock()
        self.turn: Turn | None = None
        # Re-entrant: a cell's thread stops the old CLI (_stop_cli) while it holds the lock to
        # pick the client; a stop from the kernel's thread takes it only for the swap.
        self._lock = threading.RLock()
        atexit.register(self.close)

    def _describe(self) -> str:
        o = self.options
        mode = o.permission_mode or "default"
        where = f"conversation `{self.session_id}`" if self.session_id else "no conversation yet (the next cell starts one)"
        return f"%%claude: model `{o.model or 'the CLI default'}`, permission mode `{mode}`, {where}"

    def _repr_markdown_(self) -> str:
        return self._describe()

    def __repr__(self) -> str:
        return f"<NotebookAgent: {self._describe().replace('`', '')}>"

    # ------------------------------------------------------------------ cells

    def prepare(self, line: str, body: str, prog: str = "%%claude") -> Asked | None:
        """Parse the flags and attach the variables; a usage error (nothing started) for bad
        flags or variables; ``None`` (the help printed, nothing started) for ``--help``."""
        flags = parser(prog)
        try:
            args = flags.parse_args(_words(line))
        except ValueError as e:  # shlex: an unclosed quote
            raise _usage_error(f"{prog}: {e}") from None
        if args.help:
            print(flags.format_help())
            return None
        # with %%claude, words on the line after the flags open the prompt, the cell goes on with it
        prompt = "\n\n".join(p for p in (" ".join(args.prompt), body.strip() if prog == "%%claude" else "") if p)
        if not prompt:
            raise _usage_error(f"{prog}: nothing to ask (the {'cell' if prog == '%%claude' else 'line'} is empty)")
        if args.allow_kernel_exec:
            args.kernel_tools = True
        try:
            blocks = attach(args.with_, self.shell.user_ns) if args.with_ else []
        except ContextError as e:
            raise _usage_error(str(e)) from None
        return Asked(args, prompt, blocks)

    def unfinished(self) -> Turn | None:
        """The turn still running (a background one: the next cell waits for it, and must not
        block the kernel meanwhile, or its approval buttons could never be clicked)."""
        turn = self.turn
        return turn if turn is not None and not turn.done.is_set() else None

    def begin(self, asked: Asked, plain: bool = False) -> Turn:
        """Show the cell's outputs and start the turn on its thread (``plain``: the cell will
        wait for it in plain code, holding the kernel)."""
        if self.unfinished() is not None:
            raise _usage_error("%%claude: a turn is still running; wait for it or stop it first")
        turn = Turn(self, CellRun(prompt=asked.prompt), TurnView(CellOut(self.shell)), asked.args.background,
                    plain and not asked.args.background)  # fmt: skip
        self.turn = turn
        if asked.args.background:  # first: the status line below it stays the last output, for the answer to take
            self._stop_button(turn)
        # at once, before anything starts: a cold CLI takes seconds before the first word
        turn.view.waiting("waiting for Claude" if self.client is not None else "starting Claude Code")
        thread = threading.Thread(target=self._run, args=(turn, asked.args, asked.prompt, asked.blocks), name="claude-sdkurl-cell",
                                  daemon=True)  # fmt: skip
        thread.start()
        return turn

    def _stop_button(self, turn: Turn) -> None:
        try:
            import ipywidgets as widgets  # type: ignore[import-untyped]
        except ImportError:
            return
        from ._clicks import handle_apart

        button = widgets.Button(description="Stop", icon="stop", tooltip="stop this background turn")
        button.on_click(lambda _b: threading.Thread(target=turn.stop, daemon=True).start())
        if not handle_apart(turn.view.out.kernel, button):
            button.tooltip = "stop this background turn (while another cell runs, when it ends)"
        handle = turn.view.out.widget(button)

        def gone() -> None:  # a finished turn has nothing to stop: no button left in the notebook (nor an empty output)
            handle.update("*background turn*")
            button.close()

        turn.on_done(gone)

    # ------------------------------------------------------------------ the turn's thread

    def _run(self, turn: Turn, args: argparse.Namespace, prompt: str, blocks: list[dict[str, Any]]) -> None:
        run, view = turn.run, turn.view
        note = None
        try:
            client = self._client_for(args, turn)
            if blocks:
                content = [*blocks, {"type": "text", "text": prompt}]
                client.query([{"type": "user", "message": {"role": "user", "content": content}, "parent_tool_use_id": None}])
            else:
                client.query(prompt)
            view.waiting("waiting for Claude")
            theirs: list[Message] = []  # a turn someone else asked for (the relay's page), answered first
            for message in client.receive_messages():
                mark = outside_of(message)
                if mark == "turn":
                    theirs.append(message)
                    if isinstance(message, ResultMessage):
                        if message.total_cost_usd is not None:  # its cost is not this cell's
                            self._totals[message.session_id] = message.total_cost_usd
                        view.outside(theirs)
                        theirs = []
                    continue
                run.messages.append(message)
                if isinstance(message, SystemMessage) and message.subtype == "init":
                    self.session_id = run.session_id = str(message.data.get("session_id"))
                view.add(message)
                if isinstance(message, ResultMessage):
                    run.result = message
                    self.session_id = run.session_id = message.session_id
                    if mark == "interrupted" and not turn.stopping:  # the relay's page stopped it: a stop, not an error
                        turn.stopping = True
                        turn.stop_note = f"{MARK_STOPPED} Stopped from the relay's page. The conversation goes on in the next cell."
                    if message.total_cost_usd is not None:
                        # (rounded to 1e-10 dollars: a difference of two running totals carries float noise)
                        run.cost_usd = round(message.total_cost_usd - self._totals.get(message.session_id, 0.0), 10)
                        self._totals[message.session_id] = message.total_cost_usd
                    break
        except _NotStarted as e:  # said in the notebook's words; no CLI was started
            run.error = e
            note = str(e)
        except BaseException as e:  # shown in the cell; a stop's broken stream is no error
            if not turn.stopping:
                run.error = e
                note = f"{MARK_FAILED} {type(e).__name__}: {without_ansi(str(e))}"
                self._stop_cli(interrupt=False)
        finally:
            for approval in list(turn.approvals):  # one still showing when the turn ended (an error)
                approval.decide("ended")
            run.stopped = turn.stopping
            if turn.stopping:
                note = turn.stop_note
            run.text = answer_text(run.messages)
            said = self._said_on_stderr(note)
            if said is not None:
                view.note(said)
            answered = [m.model for m in run.messages if isinstance(m, AssistantMessage) and m.model]
            view.finish(run.result, run.cost_usd, note, stopped=turn.stopping, models=list(dict.fromkeys(answered)))
            self.shell.user_ns["_claude"] = run
            turn._ended()

    def _client_for(self, args: argparse.Namespace, turn: Turn) -> ClaudeClient:
        """The live client if it fits this cell's flags, else a new one going on with the
        conversation (``--new``, ``--resume`` and ``--continue`` choose another)."""
        base = self.options
        # bypassPermissions is taken only at a CLI's start (a live one answers bypass_not_launched):
        # such a cell gets a new CLI of the conversation, and the next cell without it another
        bypass = (args.permission_mode or base.permission_mode) == "bypassPermissions"
        key = (args.cwd, args.allowed_tools, args.max_budget_usd, args.kernel_tools, args.allow_kernel_exec, bypass)
        fresh = args.new or args.resume or args.continue_
        with self._lock:
            client = self.client
            if client is not None and (fresh or key != self._key or client._session is None or client._session.closed):
                self._stop_cli(interrupt=False)
                client = None
            if fresh:
                # "Always allow" was given for the conversation it was asked in: another one
                # (--new, --resume, --continue) starts without those rules
                self._always.clear()
            if client is not None:
                # A cell without --model / --permission-mode is back to the base options' ones
                # (an earlier cell's bypassPermissions must not carry over unseen).
                model = args.model or base.model
                if model != self._live.get("model"):
                    client.set_model(model)
                    self._live["model"] = model
                mode = args.permission_mode or base.permission_mode or "default"
                if mode != self._live.get("permission_mode"):
                    client.set_permission_mode(mode)
                    self._live["permission_mode"] = mode
                return client
            changes: dict[str, Any] = {"include_partial_messages": True, "can_use_tool": self._can_use_tool}
            if base.stderr is None:  # the CLI's standard error said once, in the cell (see _said_on_stderr)
                changes["stderr"] = self._on_stderr
            if args.model:
                changes["model"] = args.model
            if args.permission_mode:
                changes["permission_mode"] = args.permission_mode
            if args.cwd:
                changes["cwd"] = args.cwd
            # the user's own rules (the cell's, else the base options'), then the notebook's:
            # what "Always allow" added (carried to a new CLI of the conversation) and the kernel tools
            mine = [t.strip() for t in args.allowed_tools.split(",") if t.strip()] if args.allowed_tools else list(base.allowed_tools)
            ours = sorted(self._always)
            if args.max_budget_usd is not None:
                changes["max_budget_usd"] = args.max_budget_usd
            if args.kernel_tools:
                loop = getattr(getattr(self.shell, "kernel", None), "io_loop", None)
                run_on = on_main_thread(getattr(loop, "asyncio_loop", None)) if args.allow_kernel_exec else None
                changes["mcp_servers"] = {**(base.mcp_servers if isinstance(base.mcp_servers, dict) else {}),
                                          "kernel": kernel_server(self.shell.user_ns, run_on, self._approve_code)}  # fmt: skip
                # run_code asks the buttons itself, every run, whatever the permission mode (a
                # rule or bypassPermissions would let the CLI skip can_use_tool): allowed here,
                # so it is not asked twice.
                ours += ["mcp__kernel__list_variables", "mcp__kernel__read_variable", "mcp__kernel__run_code"]
            if args.allowed_tools or ours:
                changes["allowed_tools"] = [*mine, *ours]
            if args.new:
                self.session_id = None
            elif args.resume:
                changes["resume"] = args.resume
            elif args.continue_:
                changes["continue_conversation"] = True
            elif self.session_id:
                changes["resume"] = self.session_id  # a new CLI, the same conversation
            options = dataclasses.replace(base, **changes)
            if options.permission_mode == "bypassPermissions" and refused_as_root(options):
                raise _NotStarted(_unasked(options))  # (the CLI's own refusal speaks of flags the cell never had)
            client = ClaudeClient(options)
            # The SDK's warning that can_use_tool is skipped speaks of options and callbacks, with
            # a file path, in pink: here it is said once, in the notebook's words, in the cell.
            told = _unasked(dataclasses.replace(options, allowed_tools=mine))
            if told is not None and told not in self._told:
                self._told.add(told)
                turn.view.note(told)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CanUseToolShadowedWarning)
                client.connect()
            self.client, self._key = client, key
            self._live = {"model": args.model or base.model, "permission_mode": args.permission_mode or base.permission_mode or "default"}
            return client

    def _on_stderr(self, line: str) -> None:
        # (a lock of its own: the CLI's stderr reader must never wait for _lock, which a cell holds
        # while the CLI starts; a full stderr pipe would stop the CLI and the start with it)
        with self._stderr_lock:
            if len(self._stderr) < 50:
                self._stderr.append(without_ansi(line))

    def _said_on_stderr(self, note: str | None) -> str | None:
        """What the CLI wrote on its standard error during the turn, as one note; ``None`` when
        it wrote nothing or the turn's error note says it already (it was shown twice: the note,
        then a pink copy)."""
        with self._stderr_lock:
            lines, self._stderr = [line for line in self._stderr if line.strip()], []
        if not lines or (note is not None and all(line.strip() in note for line in lines)):
            return None
        return "Claude Code said on its standard error:\n\n" + "\n".join(f"    {line}" for line in lines)

    def _can_use_tool(self, tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext) -> Any:
        # "Always allow" adds the allow rules the CLI itself suggests for this call (2.1.330: the
        # exact command, say ``Bash(touch a.txt)``), for this session only, and the button names
        # them; the CLI's other suggestions (a permission mode, a directory) are not taken. With
        # no such suggestion there is no "Always allow": it would have to allow the whole tool.
        rules = [r for u in context.suggestions if u.type == "addRules" and u.behavior == "allow" for r in (u.rules or [])]
        scope = ", ".join(_rule_text(r) for r in rules)
        turn = self.turn
        if turn is not None:
            turn.view.wait_for_tool(context.tool_use_id)
        decision = self._ask(tool_name, tool_input, context.decision_reason, always=scope or None)
        if decision == "allow":
            return PermissionResultAllow()
        if decision == "always" and rules:
            self._always.update(_rule_text(r) for r in rules)
            update = PermissionUpdate(type="addRules", rules=rules, behavior="allow", destination="session")
            return PermissionResultAllow(updated_permissions=[update])
        return PermissionResultDeny(message=_REFUSED[decision], interrupt=decision == "stop")

    def _approve_code(self, code: str) -> str | None:
        """The kernel's ``run_code`` asks before each run (no "Always allow"): ``None`` to run,
        else why not."""
        decision = self._ask("mcp__kernel__run_code", {"code": code}, None, always=None)
        return None if decision == "allow" else _REFUSED[decision]

    def _ask(self, tool_name: str, tool_input: dict[str, Any], reason: str | None, always: str | None) -> str:
        """Show the buttons in the running turn's cell and wait for a click: "allow",
        "always" (offered when ``always`` names the rules it adds), "deny", "stop" (the turn
        is stopping) or "unseen" (no ipywidgets)."""
        from ._clicks import available

        turn = self.turn
        if turn is None or turn.stopping:
            return "stop"
        apart = available(turn.view.out.kernel)
        if turn.plain and not apart:  # no click could reach the kernel before the turn ends: said, not hung
            turn.view.note(f"{MARK_FAILED} **Denied, not asked:** {code_span(tool_summary(tool_name, tool_input))}: approval "
                                   "buttons cannot be clicked while this cell waits in plain code (`%autoawait off`) in this "
                                   "kernel; `%autoawait on` to be asked.")  # fmt: skip
            return "held"
        try:
            approval = Approval(turn.view.out, tool_name, tool_input, reason, always=always, held=_HELD if turn.background else None)
        except ImportError:
            return "unseen"
        turn.approvals.append(approval)
        return approval.wait()

    # ------------------------------------------------------------------ stopping

    def _stop_cli(self, interrupt: bool) -> None:
        """Stop the live CLI: after an interrupt it answered within :data:`STOP_WAIT` (so
        the transcript keeps the turn), or at once."""
        with self._lock:
            client, self.client, self._key = self.client, None, None
        if client is None:
            return
        session = client._session
        if session is not None and not session.closed:
            if interrupt:
                session.interrupt_turn(drain=False, timeout=STOP_WAIT)
            session.close(abort=True)
        client.disconnect()

    def kernel_stopping(self, restart: bool) -> None:
        """The kernel shuts down or restarts (its shutdown request, on the kernel's control
        thread, while its outputs still reach the notebook): a turn under way is stopped and
        says so, then the CLI is stopped."""
        turn = self.unfinished()
        if turn is not None:
            turn.stop_note = (f"{MARK_STOPPED} Stopped: the kernel restarted. A new kernel starts a new conversation; "
                              "`%%claude --continue` goes on with this one." if restart
                              else f"{MARK_STOPPED} Stopped: the kernel shut down.")  # fmt: skip
            turn.stop()
        self.close()

    def close(self) -> None:
        """Stop the CLI (the kernel is shutting down or the extension unloads)."""
        turn = self.turn
        if turn is not None and not turn.done.is_set():
            turn.stopping = True
            for approval in list(turn.approvals):
                approval.decide("stop")
        self._stop_cli(interrupt=False)


def _rule_text(rule: PermissionRuleValue) -> str:
    """A permission rule as the CLI writes it: ``Tool`` or ``Tool(content)``."""
    return f"{rule.tool_name}({rule.rule_content})" if rule.rule_content else rule.tool_name
