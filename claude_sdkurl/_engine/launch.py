"""The launch plan: everything a session needs from the options, computed once.

The options' launch fields are read here on the way down: checked
(:func:`check_options`, every rule in one place), then turned into the CLI's
argv and environment (``cli``), the transport to use, the ``initialize``
request, the hook-callback table (:func:`hooks_config`), the in-process MCP
servers, and, with a session store, the resumed session written out from the
store (``_engine.resume``) and where the CLI's transcripts are for the mirror.
The session gets a :class:`LaunchPlan` and does not look at those fields again;
the control handlers get the plan too (the callbacks are read from
``plan.options``). What the session itself still reads from its options: the
per-call knobs ``control_timeout``, ``callback_timeout`` and ``verbatim_prompts``
(once, when it is made), and ``session_store_flush`` for the mirror.
:func:`make_transport` builds the transport from the plan; :func:`launch` does both (and
asks the tapes), for :meth:`Session.start <claude_sdkurl._engine.session.Session.start>` and for a
one-shot query, which has the CLI's process started before it loads the session's modules.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import cli as _cli
from .._errors import CLIConnectionError, UnsupportedOptionError
from .limits import DEFAULT_MAX_LINE
from .log import get_logger
from .run import ceiling_ms
from .transport import StdioTransport, Transport
from .transport import taps
from .transport.spawn import Spawner, as_spawner
from .carried import sizes_before
from .paths import cli_projects_dir
from ..types import ClaudeAgentOptions

if TYPE_CHECKING:
    from .resume import Materialized

logger = get_logger("claude_sdkurl.launch")

INITIALIZE_TIMEOUT = 60.0
ExtraHooks = dict[str, tuple[str, Callable[..., Any]]]

GUARD_EVENTS = frozenset({"PreToolUse", "PermissionRequest"})
"""Hook events that decide whether a tool call runs: a hook of these that raises or does not
answer in time denies the call (:func:`claude_sdkurl._engine.control.failure_answer`), unless its
matcher says ``on_failure="continue"``."""

DEFAULT_HOOK_TIMEOUT = 600.0
"""Seconds a hook callback with no timeout of its own (no ``HookMatcher.timeout``, no
``callback_timeout``) may run before the CLI is answered without it: the CLI's own default for
its command hooks (10 minutes), so a hook moved from the settings into Python keeps its bound.
The CLI sets none on an SDK's hook callbacks: without this, one that hangs hangs the turn."""

HOOK_TIMEOUT_BLOCKS_VERSION = (2, 1, 330)
"""The oldest CLI seen to deny a guarded tool call whose hook passed its matcher's ``timeout``
(2.1.120 answers the hook itself with "no opinion", and the tool runs). An older CLI is not told
a guard's timeout: the session keeps it, and denies the call (see :func:`hook_table`)."""


@dataclasses.dataclass(frozen=True)
class HookSpec:
    """What the session needs of one hook callback: its event, the seconds it may take before
    the CLI is answered without it, and whether a failure denies the call it guards."""

    event: str
    timeout: float | None  # the matcher's; None: callback_timeout or DEFAULT_HOOK_TIMEOUT
    fails_closed: bool


@dataclasses.dataclass(frozen=True)
class LaunchPlan:
    """What to start and what to tell it (see the module doc)."""

    options: ClaudeAgentOptions
    transport: str  # "websocket", "stdio", or "custom" for a transport given by the caller
    cli: str | None  # None with a custom transport
    cli_version: tuple[int, int, int] | None
    args: list[str]  # the CLI's flags, without the binary
    env: dict[str, str]
    cwd: str | None
    initialize: dict[str, Any]  # the initialize control request
    initialize_timeout: float
    hook_callbacks: dict[str, Callable[..., Any]]  # callback id -> hook callback
    sdk_mcp_servers: dict[str, Any]  # server name -> SdkMcpServer
    bidirectional: bool  # callbacks may be asked: the CLI's input stays open until the run is over
    ceiling_ms: int  # see _run.ceiling_ms
    max_line: int  # the longest line or message accepted from the CLI
    projects_dir: str | None  # where the CLI keeps transcripts (for the session-store mirror)
    # resume/continue from options.session_store: the store's copy of the session in a temporary
    # config dir the CLI is pointed at (``options`` above are already repointed); the session
    # removes it once the CLI is gone.
    materialized: Materialized | None = None
    # options.spawn_claude_code_process as a function: the CLI runs where it says, over stdio.
    spawner: Spawner | None = None
    # resume/continue: the size of each transcript the CLI may load, taken before it starts, so
    # what the session had cost is read as the CLI found it (see _engine/carried.py)
    transcripts_before: dict[str, int] | None = None
    # callback id -> its event, timeout and failure rule (see HookSpec)
    hook_specs: dict[str, HookSpec] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Launch:
    """A planned launch and the transport that carries it, not started yet; with ``spawn``
    a local CLI's process already boots (its output waits in the pipe until the session
    starts the transport)."""

    plan: LaunchPlan
    transport: Transport

    def discard(self) -> None:
        """Undo a launch no session took over: stop its CLI, remove its resumed copy."""
        try:
            self.transport.abort()
        finally:
            if self.plan.materialized is not None:
                self.plan.materialized.cleanup()


def launch(
    options: ClaudeAgentOptions,
    transport: Transport | None = None,
    extra_hooks: ExtraHooks | None = None,
    *,
    spawn: bool = False,
) -> Launch:
    """Plan the launch (:func:`plan_launch`) and make its transport (:func:`make_transport`).

    ``transport``: one given by the caller, used as it is. Otherwise a tape may stand
    in for the CLI (``transport.taps``: then no CLI is looked for), or record the one
    made. ``spawn`` starts a local CLI's process at once (stdio), so that what the caller
    still has to do before it talks to the CLI (a one-shot query loads the session's own
    modules) runs while the CLI boots; :meth:`Launch.discard` stops it if nothing takes
    the launch over.
    """
    if transport is None:
        transport = taps.replacement(options)
    plan = plan_launch(options, transport is not None, extra_hooks)
    if transport is None:
        made = make_transport(plan)
        try:
            if spawn and isinstance(made, StdioTransport):
                made.spawn()
            transport = taps.wrapped(made, plan)  # (a tape recording listens)
        except BaseException:
            Launch(plan, made).discard()
            raise
    return Launch(plan, transport)


def cwd_problem(cwd: str | os.PathLike[str] | None) -> str | None:
    """Why the CLI cannot start in ``cwd`` here, in the official SDK's words (``None``: it can):
    a folder that does not exist, or a path that is not a folder (the official SDK's spawn fails
    with the operating system's ``NotADirectoryError``)."""
    if cwd is None or Path(cwd).is_dir():
        return None
    if not Path(cwd).exists():
        return f"Working directory does not exist: {cwd}"
    import errno

    reason = NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), os.fspath(cwd))
    return f"Failed to start Claude Code: {reason}"


def plan_launch(
    options: ClaudeAgentOptions, custom_transport: bool = False, extra_hooks: ExtraHooks | None = None
) -> LaunchPlan:
    """Check ``options`` and compute the plan; raises the typed errors of a bad option or a missing CLI.

    ``extra_hooks`` adds hook callbacks of the SDK's own beside the user's
    (see :func:`hooks_config`).
    """
    check_options(options)
    materialized = None
    if options.session_store is not None and not custom_transport:  # the official skips it for a custom one
        from .resume import materialize, repoint  # a store's area: loaded by a run that has one

        materialized = materialize(options)  # SessionStoreError within load_timeout_ms
        if materialized is not None:
            options = repoint(options, materialized)
    try:
        return _plan(options, custom_transport, extra_hooks, materialized)
    except BaseException:
        if materialized is not None:
            materialized.cleanup()
        raise


def check_options(options: ClaudeAgentOptions) -> None:
    """Every check of the options, before anything starts: :class:`UnsupportedOptionError`
    for what we cannot honour, ``TypeError``/``ValueError`` for values of the wrong shape
    or combinations that cannot work, :class:`CLIConnectionError` for a missing ``cwd``."""
    _check_store_options(options)
    if options.spawn_claude_code_process is not None and options.transport == "websocket":
        raise UnsupportedOptionError(
            "spawn_claude_code_process runs the CLI over stdio: transport='websocket' would need it to reach our 127.0.0.1"
        )
    if options.transport not in ("auto", "websocket", "stdio"):
        raise ValueError(f"transport must be 'auto', 'websocket' or 'stdio', not {options.transport!r}")
    if not (isinstance(options.control_timeout, (int, float)) and options.control_timeout > 0):
        raise ValueError("control_timeout must be a positive number of seconds")
    if options.callback_timeout is not None and not (
        isinstance(options.callback_timeout, (int, float)) and options.callback_timeout > 0
    ):
        raise ValueError("callback_timeout must be None or a positive number of seconds")
    if options.max_buffer_size is not None and not (isinstance(options.max_buffer_size, int) and options.max_buffer_size > 0):
        raise ValueError("max_buffer_size must be a positive number of bytes")
    if options.can_use_tool is not None and options.permission_prompt_tool_name is not None:
        raise ValueError("can_use_tool and permission_prompt_tool_name are mutually exclusive")
    for key, value in options.env.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"options.env must map str to str, got {key!r}: {value!r}")
    _check_skills(options.skills)
    _check_typescript_options(options)
    for plugin in options.plugins:
        if plugin.get("type") != "local":
            raise ValueError(f"Unsupported plugin type: {plugin.get('type')!r}")


def _check_typescript_options(options: ClaudeAgentOptions) -> None:
    """The rules TypeScript applies to its options at intake, with its words where it has them."""
    if options.permission_prompts not in (None, "host", "none"):
        raise ValueError(f"permission_prompts must be 'host' or 'none', not {options.permission_prompts!r}")
    if options.mcp_servers_delivery not in (None, "argv", "initialize"):
        raise ValueError("Invalid mcp_servers_delivery. Expected 'argv' or 'initialize'.")
    if options.plugin_delivery not in ("argv", "initialize"):
        raise ValueError("Invalid plugin_delivery. Expected 'argv' or 'initialize'.")
    if options.supported_dialog_kinds and options.on_user_dialog is None:
        raise ValueError(
            "supported_dialog_kinds requires an on_user_dialog callback -- declaring dialog kinds without a "
            "handler would park dialogs nothing can answer. Provide on_user_dialog, or omit supported_dialog_kinds."
        )
    if options.session_store is not None and options.persist_session is False:
        raise ValueError(
            "session_store cannot be used with persist_session=False -- the storage adapter requires local "
            "writes to mirror"
        )
    if options.mcp_servers_delivery == "initialize" and options.transport == "websocket":
        raise UnsupportedOptionError("mcp_servers_delivery='initialize' needs transport='stdio': a --sdk-url launch reads no initialize at start")
    if options.plugin_delivery == "initialize" and options.transport == "websocket":
        raise UnsupportedOptionError("plugin_delivery='initialize' needs transport='stdio': a --sdk-url launch reads no initialize at start")


# In a Skill(name) rule of --allowedTools: the CLI splits that value on commas and spaces
# outside parentheses and knows no escapes, so these characters cannot ride in a name.
_SKILL_FORBIDDEN = re.compile(r"[(),\x00-\x1f\x7f-\x9f\ufeff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


# What makes a skill name refused, in the order the official SDK tests it, with its words.
_SKILL_RULES: list[tuple[Callable[[str], object], str]] = [
    (_SURROGATE.search, "contains a surrogate code point, which can never match a skill the CLI discovered."),
    (lambda n: n != n.strip(), "leading or trailing whitespace can never match — the Skill tool trims the invoked name."),
    (_SKILL_FORBIDDEN.search, "parentheses, commas, control characters, and byte-order marks are not allowed. Names "
     "match the skill's directory name, or 'plugin:skill' for plugin-qualified skills."),
    (lambda n: n == "*", "use skills=\"all\" to enable every skill."),
    (lambda n: n.endswith((":*", " *")), "wildcard-suffix names are not allowed; list each skill by its exact name."),
    (lambda n: n.startswith("/"), "skill names may not start with '/'. The skills option takes the canonical name, not "
     "the slash-command form."),
    (lambda n: "\\\\" in n, "consecutive backslashes are not allowed — the per-rule parser collapses them, so the rule "
     "would name a different skill."),
    (lambda n: n.endswith("\\"), "names may not end with an unpaired backslash."),
]  # fmt: skip


def _check_skills(skills: Any) -> None:
    """``skills``: ``"all"`` or a list of names that make a ``Skill(name)`` rule the CLI reads
    as that one skill (the official SDK's rules and texts: a name that could never match is
    refused here rather than silently granting nothing)."""
    if skills is None or skills == "all":
        return
    if not isinstance(skills, list):
        hint = f" Did you mean [{skills!r}]?" if isinstance(skills, str) else ""
        raise TypeError(f'ClaudeAgentOptions.skills must be a list of skill names or "all", got {skills!r}.{hint}')
    for name in skills:
        if not isinstance(name, str):
            raise TypeError(f"Skill names must be strings, got {type(name).__name__}: {name!r}")
        if not name.strip():
            raise ValueError("Skill names must be non-empty strings")
        why = next((text for refused, text in _SKILL_RULES if refused(name)), None)
        if why is not None:
            raise ValueError(f"Invalid skill name {name!r}: {why}")


def _check_store_options(options: ClaudeAgentOptions) -> None:
    """The ``session_store`` rules: the official SDK's two (``continue_conversation`` needs
    ``list_sessions()`` unless ``resume`` says which session; no file checkpointing, which is
    local only) and ours (the required methods, the flush mode, the load time-out, and stdio:
    the CLI sends no ``transcript_mirror`` frames over ``--sdk-url``)."""
    store = options.session_store
    if store is None:
        return
    from .storecall import implements  # (a store's area: loaded by a run that has one)

    if options.continue_conversation and options.resume is None and not implements(store, "list_sessions"):
        raise ValueError(
            "continue_conversation with session_store requires the store to "
            "implement list_sessions()"
        )
    if options.enable_file_checkpointing:
        raise ValueError(
            "session_store cannot be combined with enable_file_checkpointing "
            "(checkpoints are local-disk only and would diverge from the "
            "mirrored transcript)"
        )
    for method in ("append", "load"):
        if not callable(getattr(store, method, None)):
            raise TypeError(f"session_store has no {method}() method; see the SessionStore protocol")
    if options.transport == "websocket":
        raise UnsupportedOptionError(
            "session_store needs transport='stdio' (or 'auto'): Claude Code does not send transcript_mirror "
            "frames over --sdk-url (measured on 2.1.120)"
        )
    if options.session_store_flush not in ("batched", "eager"):
        raise ValueError(f"session_store_flush must be 'batched' or 'eager', not {options.session_store_flush!r}")
    if not (isinstance(options.load_timeout_ms, (int, float)) and options.load_timeout_ms > 0):
        raise ValueError("load_timeout_ms must be a positive number of milliseconds")


PERMISSION_PROMPTS_VERSION = (2, 1, 330)  # the oldest CLI measured to know --permission-prompts (2.1.120 does not)


def unattended(options: ClaudeAgentOptions) -> ClaudeAgentOptions:
    """``options`` for a run nobody watches (a batch item, a server's conversation): with no
    ``can_use_tool`` and no ``permission_prompt_tool_name``, ``permission_prompts="none"``, so
    whatever would ask is denied at once and said so to the model (TypeScript's option). Left
    as it is when the caller chose, or when the CLI is too old to know the flag (or elsewhere)."""
    if (
        options.can_use_tool is not None
        or options.permission_prompt_tool_name is not None
        or options.permission_prompts is not None
        or options.spawn_claude_code_process is not None
    ):
        return options
    try:
        version = _cli.cli_version(_cli.find_cli(options.cli_path))
    except Exception:  # no CLI here: the launch itself will say so
        return options
    if version is None or version < PERMISSION_PROMPTS_VERSION:
        return options
    return dataclasses.replace(options, permission_prompts="none")


def hooks_config(
    options: ClaudeAgentOptions, extra: dict[str, tuple[str, Callable[..., Any]]] | None = None
) -> tuple[dict[str, Any] | None, dict[str, Callable[..., Any]]]:
    """The ``hooks`` value for ``initialize`` and the callback-id registry behind it (the
    ``hook_callback`` handler looks callbacks up there by id).

    ``extra`` maps a hook event to one internal ``(callback_id, callback)`` of
    the SDK's own (see :mod:`claude_sdkurl.prewarm`), registered after the
    user's hooks for that event.
    """
    config, registry, _ = hook_table(options, extra)
    return config, registry


def hook_table(
    options: ClaudeAgentOptions, extra: dict[str, tuple[str, Callable[..., Any]]] | None = None,
    old_cli: bool = False,
) -> tuple[dict[str, Any] | None, dict[str, Callable[..., Any]], dict[str, HookSpec]]:  # fmt: skip
    """:func:`hooks_config`, and each callback's :class:`HookSpec`. For an ``old_cli`` (older than
    :data:`HOOK_TIMEOUT_BLOCKS_VERSION`) a guard's matcher is sent without its ``timeout`` (the
    session keeps it: that CLI would let the call run when the time is up)."""
    config: dict[str, Any] = {}
    registry: dict[str, Callable[..., Any]] = {}
    specs: dict[str, HookSpec] = {}
    for event, matchers in (options.hooks or {}).items():
        if not matchers:
            continue
        entries = []
        for matcher in matchers:
            ids = []
            fails_closed = event in GUARD_EVENTS and matcher.on_failure != "continue"
            for callback in matcher.hooks:
                if not callable(callback):
                    raise TypeError(f"hook for {event} is not callable: {callback!r}")
                callback_id = f"hook_{len(registry)}"
                registry[callback_id] = callback
                specs[callback_id] = HookSpec(str(event), matcher.timeout, fails_closed)
                ids.append(callback_id)
            entry: dict[str, Any] = {"matcher": matcher.matcher, "hookCallbackIds": ids}
            if matcher.timeout is not None and not (fails_closed and old_cli):
                entry["timeout"] = matcher.timeout
            if matcher.on_failure is not None:
                entry["onFailure"] = matcher.on_failure
            entries.append(entry)
        config[event] = entries
    for extra_event, (callback_id, callback) in (extra or {}).items():
        registry[callback_id] = callback
        specs[callback_id] = HookSpec(extra_event, None, extra_event in GUARD_EVENTS)
        config.setdefault(extra_event, []).append({"matcher": None, "hookCallbackIds": [callback_id]})
    return config or None, registry, specs


def _plan(
    options: ClaudeAgentOptions,
    custom_transport: bool,
    extra_hooks: ExtraHooks | None,
    materialized: Materialized | None,
) -> LaunchPlan:
    hooks, callbacks, specs = hook_table(options, extra_hooks)  # (checked before anything starts)
    servers = sdk_servers(options)
    spawner = as_spawner(options.spawn_claude_code_process)
    if custom_transport:
        transport, cli, version, args, env = "custom", None, None, [], {}
        options = mcp_delivery(options, transport, None)
    elif spawner is not None and not getattr(spawner, "runs_here", False):
        # The CLI is not here to look at: its path is as the far side sees it, its version unknown.
        cli = str(options.cli_path) if options.cli_path is not None else "claude"
        transport, version = "stdio", None
        options = mcp_delivery(options, transport, None)
        args = _cli.build_args(options)
        env = _cli.build_env(options)
    else:
        # Only a CLI started on this machine needs the directory here (the official SDK checks it
        # when it spawns): a custom transport or a spawner may run the CLI somewhere else. A
        # spawner that ``runs_here`` (a session host) starts it here, and talks over stdio as
        # any spawner's.
        problem = cwd_problem(options.cwd)
        if problem is not None:
            raise CLIConnectionError(problem)
        cli = _cli.find_cli(options.cli_path)
        transport, version = ("stdio", None) if spawner is not None else select_transport(options, cli)
        options = mcp_delivery(options, transport, version, cli if spawner is not None else None)
        args = _cli.build_args(options)
        env = _cli.build_env(options)
    if version is not None and version < HOOK_TIMEOUT_BLOCKS_VERSION:
        hooks = hook_table(options, extra_hooks, old_cli=True)[0]
    projects_dir = cli_projects_dir(env or options.env)
    return LaunchPlan(
        options=options,
        transport=transport,
        cli=cli,
        cli_version=version,
        args=args,
        env=env,
        cwd=str(options.cwd) if options.cwd is not None else None,
        initialize=initialize_request(options, hooks),
        initialize_timeout=max(initialize_timeout(), options.control_timeout),
        hook_callbacks=callbacks,
        hook_specs=specs,
        sdk_mcp_servers=servers,
        bidirectional=bool(hooks or servers or options.can_use_tool or options.on_elicitation or options.on_user_dialog),
        ceiling_ms=ceiling_ms(options.env),
        max_line=options.max_buffer_size or DEFAULT_MAX_LINE,
        projects_dir=projects_dir,
        materialized=materialized,
        spawner=spawner,
        transcripts_before=sizes_before(projects_dir, options.resume) if options.resume or options.continue_conversation else None,
    )


def mcp_delivery(
    options: ClaudeAgentOptions, transport: str, version: tuple[int, int, int] | None, cli: str | None = None
) -> ClaudeAgentOptions:
    """``options`` with ``mcp_servers_delivery`` decided for this CLI when it has external MCP
    servers (else as they are). Unset: ``"initialize"`` (TypeScript 0.3.333's default: the
    servers' ``env`` and ``headers`` off the command line) over stdio to a CLI that reads them
    there, or whose version is not known here (one started elsewhere: TypeScript sends them so
    too, and a CLI too old for the flag exits saying so); ``"argv"`` to one that cannot
    (2.1.120 over the WebSocket, or older than 2.1.326), and with a transport of the caller's
    own, whose command line is not ours to build (as the official SDK). ``"initialize"`` asked
    of a CLI that cannot read it is refused: it would run without its servers, or with their
    secrets on the command line. ``cli``: a local binary whose version is to be asked only if
    it matters (a session host's spawner runs the CLI here)."""
    chosen = options.mcp_servers_delivery
    if chosen == "argv" or not _cli.external_mcp_servers(options):
        return options
    if version is None and cli is not None:
        version = _cli.cli_version(cli)
    reads = transport == "stdio" and (version is None or version >= _cli.MCP_INITIALIZE_VERSION)
    if chosen is None:
        return dataclasses.replace(options, mcp_servers_delivery="initialize" if reads else "argv")
    if not reads and transport != "custom":
        raise UnsupportedOptionError(
            f"mcp_servers_delivery='initialize' needs Claude Code {_cli.format_version(_cli.MCP_INITIALIZE_VERSION)} "
            f"or newer over stdio; this is {_cli.format_version(version)} over {transport}. Use a newer CLI, or "
            "mcp_servers_delivery='argv', which puts the servers' env and headers on its command line"
        )
    return options


def select_transport(options: ClaudeAgentOptions, cli: str) -> tuple[str, tuple[int, int, int] | None]:
    """``"websocket"`` or ``"stdio"`` for this CLI, honouring a forced choice."""
    version = _cli.cli_version(cli)
    choice = options.transport
    if choice == "auto":
        # The CLI sends transcript_mirror frames over stdio only (2.1.120 measured), so a
        # session store takes stdio whatever the version.
        ws = _cli.supports_websocket(version) and options.session_store is None
        return ("websocket" if ws else "stdio"), version
    if choice == "websocket" and version is not None and not _cli.supports_websocket(version):
        logger.warning(
            "transport='websocket' forced on Claude Code %s, which refuses --sdk-url to 127.0.0.1 after %s; trying anyway",
            _cli.format_version(version),
            _cli.format_version(_cli.LAST_WEBSOCKET_VERSION),
        )
    return choice, version


def make_transport(plan: LaunchPlan) -> Transport:
    """The transport the plan names, not started."""
    opts = plan.options
    assert plan.cli is not None
    if plan.transport == "websocket":
        from .transport.websocket import WebSocketTransport  # imported for the CLIs that need it

        return WebSocketTransport(
            plan.cli, plan.args, plan.env, plan.cwd, on_stderr=opts.stderr, user=opts.user, max_size=plan.max_line
        )
    return StdioTransport(
        [plan.cli, *plan.args],
        plan.env,
        plan.cwd,
        on_stderr=opts.stderr,
        user=opts.user,
        spawner=plan.spawner,
        sdk_env=sdk_env(plan.env) if plan.spawner is not None else None,
    )


def sdk_env(env: dict[str, str]) -> dict[str, str]:
    """What ``env`` (the CLI's) adds to or changes in this process's environment: what a CLI
    started elsewhere needs on top of its own."""
    return {k: v for k, v in env.items() if os.environ.get(k) != v}


def initialize_request(options: ClaudeAgentOptions, hooks: dict[str, Any] | None) -> dict[str, Any]:
    """The ``initialize`` control request, field for field as the official SDK sends it."""
    request: dict[str, Any] = {"subtype": "initialize", "hooks": hooks}
    if options.agents:
        request["agents"] = agents_wire(options.agents)
    sp = options.system_prompt
    kind = sp.get("type") if isinstance(sp, dict) else None
    if kind == "preset" and isinstance(sp.get("exclude_dynamic_sections"), bool):  # type: ignore[union-attr]
        request["excludeDynamicSections"] = sp.get("exclude_dynamic_sections")  # type: ignore[union-attr]
    if kind in ("preset", "custom") and isinstance(sp.get("snapshot"), bool):  # type: ignore[union-attr]
        request["systemPromptSnapshot"] = sp.get("snapshot")  # type: ignore[union-attr]
    if isinstance(options.skills, list):
        request["skills"] = options.skills
    if options.forward_subagent_text:
        request["forwardSubagentText"] = True
    # TypeScript's initialize fields (its names, sent only when set, as it does)
    for key, value in (
        ("planModeInstructions", options.plan_mode_instructions),
        ("toolAliases", options.tool_aliases),
        ("title", options.title),
        ("promptSuggestions", options.prompt_suggestions),
        ("agentProgressSummaries", options.agent_progress_summaries),
        ("supportedDialogKinds", options.supported_dialog_kinds),
        ("perTaskStopAffordance", options.per_task_stop_affordance),
    ):
        if value is not None:
            request[key] = value
    if options.plugin_delivery == "initialize" and options.plugins:
        request["plugins"] = [dict(p) for p in options.plugins]
    if _cli.awaits_initialize(options) and options.mcp_servers_delivery == "initialize":
        request["mcpServers"] = _cli.external_mcp_servers(options)
    return request


def initialize_timeout() -> float:
    """Seconds to wait for ``initialize``: ``CLAUDE_CODE_STREAM_CLOSE_TIMEOUT`` (ms), at least 60."""
    try:
        seconds = int(os.environ["CLAUDE_CODE_STREAM_CLOSE_TIMEOUT"]) / 1000.0
    except (KeyError, ValueError):
        return INITIALIZE_TIMEOUT
    return max(seconds, INITIALIZE_TIMEOUT)


def sdk_servers(options: ClaudeAgentOptions) -> dict[str, Any]:
    """The in-process MCP servers of ``options.mcp_servers``, by name."""
    servers: dict[str, Any] = {}
    if isinstance(options.mcp_servers, dict):
        for name, config in options.mcp_servers.items():
            if isinstance(config, dict) and config.get("type") == "sdk":
                instance = config.get("instance")
                if instance is None or not hasattr(instance, "handle"):
                    raise TypeError(f"SDK MCP server {name!r} has no usable 'instance'; use create_sdk_mcp_server()")
                servers[name] = instance
    return servers


def agents_wire(agents: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``options.agents`` as ``initialize`` (and a spare's claim) send them."""
    return {name: {k: v for k, v in _agent_dict(agent).items() if v is not None} for name, agent in agents.items()}


def _agent_dict(agent: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(agent) and not isinstance(agent, type):
        return dataclasses.asdict(agent)
    return dict(agent)
