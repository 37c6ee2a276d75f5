"""The launch plan: everything a session needs from the options, computed once.

The options are read here, and only here, on the way down: checked, then turned
into the CLI's argv and environment, the transport to use, the ``initialize``
request, the hook-callback table and the in-process MCP servers. The session
gets a :class:`LaunchPlan` and does not look at the options' launch fields
again; :func:`make_transport` builds the transport from the plan. New launch
concerns (a spawner, a session store) belong in the plan.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import _cli
from ._control import hooks_config
from ._protocol import DEFAULT_MAX_LINE
from ._resume import MaterializedResume, apply_materialized_options, materialize_resume_session
from ._run import ceiling_ms
from ._sessionpaths import _get_projects_dir
from ._transport import StdioTransport, Transport, WebSocketTransport
from ._transport.spawn import Spawner, as_spawner
from .types import ClaudeAgentOptions

logger = logging.getLogger("claude_sdkurl.launch")

INITIALIZE_TIMEOUT = 60.0
ExtraHooks = dict[str, tuple[str, Callable[..., Any]]]


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
    materialized: MaterializedResume | None = None
    # options.spawn_claude_code_process as a function: the CLI runs where it says, over stdio.
    spawner: Spawner | None = None


def plan_launch(
    options: ClaudeAgentOptions, custom_transport: bool = False, extra_hooks: ExtraHooks | None = None
) -> LaunchPlan:
    """Check ``options`` and compute the plan; raises the typed errors of a bad option or a missing CLI.

    ``extra_hooks`` adds hook callbacks of the SDK's own beside the user's
    (see :func:`claude_sdkurl._control.hooks_config`).
    """
    _cli.check_options(options)
    materialized = None
    if options.session_store is not None and not custom_transport:  # the official skips it for a custom one
        materialized = materialize_resume_session(options)  # SessionStoreError within load_timeout_ms
        if materialized is not None:
            options = apply_materialized_options(options, materialized)
    try:
        return _plan(options, custom_transport, extra_hooks, materialized)
    except BaseException:
        if materialized is not None:
            materialized.cleanup()
        raise


def _plan(
    options: ClaudeAgentOptions,
    custom_transport: bool,
    extra_hooks: ExtraHooks | None,
    materialized: MaterializedResume | None,
) -> LaunchPlan:
    hooks, callbacks = hooks_config(options, extra_hooks)
    servers = sdk_servers(options)
    spawner = as_spawner(options.spawn_claude_code_process)
    if custom_transport:
        transport, cli, version, args, env = "custom", None, None, [], {}
    elif spawner is not None:
        # The CLI is not here to look at: its path is as the far side sees it, its version unknown.
        cli = str(options.cli_path) if options.cli_path is not None else "claude"
        transport, version = "stdio", None
        args = _cli.build_args(options)
        env = _cli.build_env(options)
    else:
        cli = _cli.find_cli(options.cli_path)
        transport, version = select_transport(options, cli)
        args = _cli.build_args(options)
        env = _cli.build_env(options)
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
        sdk_mcp_servers=servers,
        bidirectional=bool(hooks or servers or options.can_use_tool or options.on_elicitation),
        ceiling_ms=ceiling_ms(options.env),
        max_line=options.max_buffer_size or DEFAULT_MAX_LINE,
        projects_dir=projects_dir(env or options.env),
        materialized=materialized,
        spawner=spawner,
    )


def projects_dir(env: dict[str, str]) -> str:
    """The CLI's transcript directory with environment ``env``: ``$CLAUDE_CONFIG_DIR/projects``,
    else ``$HOME/.claude/projects``. (The official SDK ignores a ``HOME`` in ``options.env``
    here, and its mirror then drops every frame of such a CLI.)"""
    home = env.get("HOME")
    if home and not env.get("CLAUDE_CONFIG_DIR"):
        return str(Path(unicodedata.normalize("NFC", home)) / ".claude" / "projects")
    return str(_get_projects_dir(env))


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
        logger.info("transport='websocket' forced on CLI %s; trying anyway", _cli.format_version(version))
    return choice, version


def make_transport(plan: LaunchPlan) -> Transport:
    """The transport the plan names, not started."""
    opts = plan.options
    assert plan.cli is not None
    if plan.transport == "websocket":
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
        request["agents"] = {
            name: {k: v for k, v in _agent_dict(agent).items() if v is not None} for name, agent in options.agents.items()
        }
    sp = options.system_prompt
    if isinstance(sp, dict):
        if isinstance(sp.get("exclude_dynamic_sections"), bool):
            request["excludeDynamicSections"] = sp.get("exclude_dynamic_sections")
        if isinstance(sp.get("snapshot"), bool):
            request["systemPromptSnapshot"] = sp.get("snapshot")
    if isinstance(options.skills, list):
        request["skills"] = options.skills
    if options.forward_subagent_text:
        request["forwardSubagentText"] = True
    return request


def initialize_timeout() -> float:
    """Seconds to wait for ``initialize``: ``CLAUDE_CODE_STREAM_CLOSE_TIMEOUT`` (ms), at least 60."""
    try:
        ms = int(os.environ.get("CLAUDE_CODE_STREAM_CLOSE_TIMEOUT", "60000"))
    except ValueError:
        ms = 60000
    return max(ms / 1000.0, INITIALIZE_TIMEOUT)


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


def _agent_dict(agent: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(agent) and not isinstance(agent, type):
        return dataclasses.asdict(agent)
    return dict(agent)
