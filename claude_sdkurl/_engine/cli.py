"""Finding the Claude Code CLI, learning its version, and building its argv and environment.

The argv and environment builders are pure functions of (already checked)
options; discovery looks at the file system, and :func:`cli_version` runs the
binary once per path and caches the answer. Which flag each option needs is
known here too (:data:`FLAG_OPTIONS`), to name the option when an old CLI
refuses its flag. Option checks live with the launch plan (``launch``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from .._errors import CLIConnectionError, CLINotFoundError
from .._files import replace_whole
from .log import get_logger
from .._version import OFFICIAL_SDK_VERSION
from ..types import ClaudeAgentOptions

logger = get_logger("claude_sdkurl.cli")

CLI_PATH_ENV = "CLAUDE_SDKURL_CLI"
"""Environment variable naming the CLI to use when ``cli_path`` is not set."""

LAST_WEBSOCKET_VERSION = (2, 1, 120)
"""The newest CLI whose ``--sdk-url ws://127.0.0.1`` works (2.1.121 refuses non-Anthropic hosts)."""

MCP_INITIALIZE_VERSION = (2, 1, 326)
"""The oldest CLI that reads external MCP servers from ``initialize`` (``--await-initialize``),
as the TypeScript SDK 0.3.333 says; 2.1.120 knows no such flag (measured), 2.1.330 and later do."""

VERSION_CACHE_ENV = "CLAUDE_SDKURL_VERSION_CACHE"
"""Environment variable naming the file where CLI versions are kept across programs (default:
``$XDG_CACHE_HOME/claude_sdkurl/cli-versions.json``, else under ``~/.cache``); empty: no file."""

VERSION_CACHE_ENTRIES = 64  # binaries the file remembers (the oldest answer goes first)
_VERSION_CACHE_MAX_BYTES = 1 << 16  # a larger file is not ours to read: ignored, then replaced

_VERSION_RE = re.compile(r"(\d+)\.(\d+)\.(\d+)")
_version_cache: dict[tuple[str, float, int], tuple[int, int, int] | None] = {}
_version_lock = threading.Lock()


def find_cli(cli_path: str | Path | None = None) -> str:
    """Locate the CLI: ``cli_path``, then ``$CLAUDE_SDKURL_CLI``, then ``PATH``, then the usual
    install places, then the CLIs this package installed (:func:`installed_clis`, the newest
    first), then the official SDK's bundled binary. Which one and why is logged at debug level."""
    if cli_path is not None:
        path = Path(cli_path)
        if not path.is_file():
            raise CLINotFoundError("Claude Code not found at cli_path", str(cli_path))
        if not os.access(path, os.X_OK):
            raise CLINotFoundError("Claude Code at cli_path is not executable", str(cli_path))
        return _found(str(path), "cli_path")
    env_path = os.environ.get(CLI_PATH_ENV)
    if env_path:
        if not Path(env_path).is_file():
            raise CLINotFoundError(f"Claude Code not found at ${CLI_PATH_ENV}", env_path)
        return _found(env_path, f"${CLI_PATH_ENV}")
    import shutil  # (only to look on PATH: with its archive modules, 2 ms of every launch otherwise)

    found = shutil.which("claude")
    if found:
        return _found(found, "PATH")
    home = Path.home()
    for candidate in (
        home / ".npm-global/bin/claude",
        Path("/usr/local/bin/claude"),
        home / ".local/bin/claude",
        home / "node_modules/.bin/claude",
        home / ".yarn/bin/claude",
        home / ".claude/local/claude",
    ):
        if candidate.is_file():
            return _found(str(candidate), "a usual install place")
    ours = installed_clis()
    if ours:
        return _found(str(ours[0]), f"the CLIs claude_sdkurl installed in {cli_cache_dir()}")
    bundled = _official_bundled_cli()
    if bundled:
        return _found(bundled, "the official SDK's bundled CLI")
    raise CLINotFoundError(
        "Claude Code not found. Install it with:\n"
        "  npm install -g @anthropic-ai/claude-code\n"
        "or pass ClaudeAgentOptions(cli_path='/path/to/claude'), "
        f"or set ${CLI_PATH_ENV}."
    )


def _found(path: str, where: str) -> str:
    logger.debug("using Claude Code at %s (from %s)", path, where)
    return path


CLI_CACHE_ENV = "CLAUDE_SDKURL_CLI_CACHE"
"""Environment variable naming the folder where ``claude_sdkurl.testing.install_cli`` installs
CLIs (default: ``~/.cache/claude_sdkurl/cli``), one npm prefix per version."""

_PLACEHOLDER_BYTES = 1_000_000  # npm leaves a small placeholder where postinstall did not run


def cli_cache_dir() -> Path:
    """Where this package installs CLIs (see :data:`CLI_CACHE_ENV`)."""
    env = os.environ.get(CLI_CACHE_ENV)
    return Path(env) if env else Path.home() / ".cache" / "claude_sdkurl" / "cli"


def binaries_in(prefix: Path) -> list[Path]:
    """The native Claude Code binaries an npm prefix holds (the CLI's platform package's, the
    TypeScript SDK's platform package's, then the wrapper package's copy), placeholders left out;
    nothing is run."""
    import glob

    modules = prefix / "node_modules" / "@anthropic-ai"
    candidates = [Path(p) for pattern in ("claude-code-*", "claude-agent-sdk-*") for p in sorted(glob.glob(str(modules / pattern / "claude")))]
    candidates.append(modules / "claude-code" / "bin" / "claude.exe")
    found = []
    for path in candidates:
        try:
            if path.is_file() and path.stat().st_size >= _PLACEHOLDER_BYTES and os.access(path, os.X_OK):
                found.append(path)
        except OSError:
            continue
    return found


def installed_clis() -> list[Path]:
    """The CLIs this package installed (:func:`cli_cache_dir`, a folder per version), the newest
    version first; an install still being staged is left out."""
    try:
        entries = list(cli_cache_dir().iterdir())
    except OSError:
        return []
    versions = []
    for entry in entries:
        named = _VERSION_RE.fullmatch(entry.name)  # (a staged install is ".<version>-<random>")
        if named is None:
            continue
        version = (int(named.group(1)), int(named.group(2)), int(named.group(3)))
        binaries = binaries_in(entry)
        if binaries:
            versions.append((version, binaries[0]))
    return [binary for _, binary in sorted(versions, reverse=True)]


def _official_bundled_cli() -> str | None:
    """The CLI shipped inside an installed ``claude_agent_sdk`` wheel, if any."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("claude_agent_sdk")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    bundled = Path(spec.origin).parent / "_bundled" / "claude"
    return str(bundled) if bundled.is_file() else None


def parse_version(text: str) -> tuple[int, int, int] | None:
    """``"2.1.120 (Claude Code)"`` -> ``(2, 1, 120)``."""
    m = _VERSION_RE.search(text)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def _version_file() -> Path | None:
    setting = os.environ.get(VERSION_CACHE_ENV)
    if setting is not None:
        return Path(setting) if setting else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "claude_sdkurl" / "cli-versions.json"


def _read_versions(path: Path) -> dict[str, tuple[int, int, int]]:
    """The file's well-formed entries; anything else (missing, torn, too large, not ours) is
    nothing: the binary is asked instead."""
    try:
        with open(path, "rb") as f:
            raw = f.read(_VERSION_CACHE_MAX_BYTES + 1)
        data = json.loads(raw) if len(raw) <= _VERSION_CACHE_MAX_BYTES else None
    except (OSError, ValueError):
        return {}
    entries = data.get("versions") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        return {}
    return {k: (v[0], v[1], v[2]) for k, v in entries.items()
            if isinstance(k, str) and isinstance(v, list) and len(v) == 3
            and all(type(n) is int and 0 <= n < 1_000_000 for n in v)}  # fmt: skip


def _write_versions(path: Path, entries: dict[str, tuple[int, int, int]]) -> None:
    """Replace the file with ``entries`` at once (a private temporary file renamed over it): a
    write cut short (a full disk, ``RLIMIT_FSIZE``) leaves the old file whole; any failure is
    only logged (the cost is one ``--version`` run per program)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        replace_whole(path, json.dumps({"versions": {k: list(v) for k, v in entries.items()}}))
    except OSError as e:
        logger.debug("could not keep CLI versions in %s: %s", path, e)


def cli_version(cli: str, timeout: float = 30.0) -> tuple[int, int, int] | None:
    """Run ``cli --version``, once per binary: the answer is kept for this process (per path,
    mtime and size) and, across programs, in a small file (see :data:`VERSION_CACHE_ENV`) keyed by
    the binary's identity (path, device, inode, size, modification and change times, so a binary
    replaced in place, even with its times set back, is asked again)."""
    try:
        st = os.stat(cli)
        key = (os.path.realpath(cli), st.st_mtime, st.st_size)
    except OSError as e:
        raise CLINotFoundError("Claude Code not found", cli) from e
    with _version_lock:
        if key in _version_cache:
            return _version_cache[key]
    shared = _version_file()
    identity = f"{key[0]}|{st.st_dev}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}"
    if shared is not None:
        known = _read_versions(shared).get(identity)
        if known is not None:
            with _version_lock:
                _version_cache[key] = known
            return known
    try:
        out = subprocess.run(
            [cli, "--version"],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CLIConnectionError(f"Could not run {cli} --version: {e}") from e
    version = parse_version(out.stdout)
    if version is None:
        logger.warning("could not read a version from %s --version: %r", cli, out.stdout[:200])
    with _version_lock:
        _version_cache[key] = version
    if shared is not None and version is not None:
        entries = _read_versions(shared)
        entries.pop(identity, None)
        entries[identity] = version  # the newest last; the oldest go past the bound
        _write_versions(shared, dict(list(entries.items())[-VERSION_CACHE_ENTRIES:]))
    return version


def supports_websocket(version: tuple[int, int, int] | None) -> bool:
    """Whether ``--sdk-url ws://127.0.0.1`` can work with this CLI version."""
    return version is not None and version <= LAST_WEBSOCKET_VERSION


def format_version(version: tuple[int, int, int] | None) -> str:
    return "unknown" if version is None else ".".join(map(str, version))


def _settings_value(options: ClaudeAgentOptions) -> str | None:
    settings = options.settings
    if options.sandbox is None:
        return settings
    obj: dict[str, Any] = {}
    try:
        if settings is not None:
            text = settings.strip()
            if not (text.startswith("{") and text.endswith("}")):
                text = (Path(options.cwd or "") / text).read_text(encoding="utf-8-sig")
            obj = json.loads(text)
        obj["sandbox"] = options.sandbox
    except (OSError, ValueError, TypeError) as e:
        raise CLIConnectionError(f"Failed to load settings: {e}") from e
    return json.dumps(obj)


def build_args(options: ClaudeAgentOptions) -> list[str]:
    """The CLI flags for ``options``, as the official SDK builds them (without the binary)."""
    o = options
    args = ["--output-format", "stream-json", "--verbose"]
    sp = o.system_prompt
    if sp is None:
        args += ["--system-prompt", ""]
    elif isinstance(sp, str):
        args += ["--system-prompt", sp]
    elif sp.get("type") == "file":
        args += ["--system-prompt-file", sp["path"]]  # type: ignore[typeddict-item]
    elif sp.get("type") == "custom":
        args += ["--system-prompt", sp["prompt"]]  # type: ignore[typeddict-item]
    elif sp.get("type") == "preset" and "append" in sp:
        args += ["--append-system-prompt", sp["append"]]  # type: ignore[typeddict-item]
    if o.tools is not None:
        args += ["--tools", ",".join(o.tools) if isinstance(o.tools, list) else "default"]

    allowed = list(o.allowed_tools)
    sources = list(o.setting_sources) if o.setting_sources is not None else None
    if o.skills is not None:
        if o.skills == "all":
            if "Skill" not in allowed:
                allowed.append("Skill")
        else:
            allowed += [f"Skill({s})" for s in o.skills if f"Skill({s})" not in allowed]
        if sources is None:
            sources = ["user", "project"]
    if allowed:
        args += ["--allowedTools", ",".join(allowed)]
    if o.max_turns:
        args += ["--max-turns", str(o.max_turns)]
    if o.max_budget_usd is not None:
        args += ["--max-budget-usd", str(o.max_budget_usd)]
    if o.disallowed_tools:
        args += ["--disallowedTools", ",".join(o.disallowed_tools)]
    if o.task_budget is not None:
        args += ["--task-budget", str(o.task_budget["total"])]
    if o.model:
        args += ["--model", o.model]
    if o.fallback_model:
        args += ["--fallback-model", o.fallback_model]
    if o.betas:
        args += ["--betas", ",".join(o.betas)]
    if o.permission_prompt_tool_name:
        args += ["--permission-prompt-tool", o.permission_prompt_tool_name]
    elif o.can_use_tool is not None:
        args += ["--permission-prompt-tool", "stdio"]
    if o.permission_mode:
        args += ["--permission-mode", o.permission_mode]
    if o.continue_conversation:
        args.append("--continue")
    if o.resume:
        args.append(f"--resume={o.resume}")
    if o.session_id:
        args.append(f"--session-id={o.session_id}")
    settings = _settings_value(o)
    if settings:
        args += ["--settings", settings]
    for d in o.add_dirs:
        args += ["--add-dir", str(d)]
    if o.mcp_servers:
        if isinstance(o.mcp_servers, dict):
            servers: dict[str, Any] = {}
            for name, config in o.mcp_servers.items():
                if isinstance(config, dict) and config.get("type") == "sdk":
                    servers[name] = {k: v for k, v in config.items() if k != "instance"}
                else:
                    servers[name] = config
            if servers and o.mcp_servers_delivery == "initialize":
                # the external ones go in ``initialize``; in-process ones stay here (TypeScript's split)
                servers = {n: c for n, c in servers.items() if c.get("type") == "sdk"}
            if servers:
                args += ["--mcp-config", json.dumps({"mcpServers": servers})]
        else:
            args += ["--mcp-config", str(o.mcp_servers)]
    if o.include_partial_messages:
        args.append("--include-partial-messages")
    if o.include_hook_events:
        args.append("--include-hook-events")
    if o.strict_mcp_config:
        args.append("--strict-mcp-config")
    if o.fork_session:
        args.append("--fork-session")
    if o.resume_session_at:
        args.append(f"--resume-session-at={o.resume_session_at}")
    if o.resume_drops_turn is not None:
        args.append(f"--resume-drops-turn={o.resume_drops_turn}")
    if o.session_store is not None:
        args.append("--session-mirror")
    if sources is not None:
        args.append(f"--setting-sources={','.join(sources)}")
    if o.plugin_delivery != "initialize":
        for plugin in o.plugins:
            args += ["--plugin-dir", plugin["path"]]
    args += _typescript_args(o)
    for flag, value in o.extra_args.items():
        if value is None:
            args.append(f"--{flag}")
        elif str(value).startswith("-"):
            args.append(f"--{flag}={value}")
        else:
            args += [f"--{flag}", str(value)]
    if o.thinking is not None:
        t = o.thinking
        if t["type"] == "adaptive":
            args += ["--thinking", "adaptive"]
        elif t["type"] == "enabled":
            args += ["--max-thinking-tokens", str(t["budget_tokens"])]
        elif t["type"] == "disabled":
            args += ["--thinking", "disabled"]
        if t["type"] != "disabled" and "display" in t:
            args += ["--thinking-display", t["display"]]
    elif o.max_thinking_tokens is not None:
        args += ["--max-thinking-tokens", str(o.max_thinking_tokens)]
    if o.effort is not None:
        args += ["--effort", o.effort]
    if isinstance(o.output_format, dict) and o.output_format.get("type") == "json_schema":
        schema = o.output_format.get("schema")
        if schema is not None:
            args += ["--json-schema", json.dumps(schema)]
    args += ["--input-format", "stream-json"]
    return args


def _typescript_args(o: ClaudeAgentOptions) -> list[str]:
    """The flags of the options TypeScript has and the official Python SDK has not (the
    TypeScript SDK 0.3.333's flags, in our ``--flag value`` form)."""
    args: list[str] = []
    if o.agent:
        args += ["--agent", o.agent]
    if o.debug_file:
        args += ["--debug-file", str(o.debug_file)]
    elif o.debug:
        args.append("--debug")
    if o.permission_prompts:
        args += ["--permission-prompts", o.permission_prompts]
    if o.allow_dangerously_skip_permissions:
        args.append("--allow-dangerously-skip-permissions")
    if o.project_config_root is not None:
        args += ["--project-config-root", str(o.project_config_root)]
    if awaits_initialize(o):
        args.append("--await-initialize")
    if o.persist_session is False:
        args.append("--no-session-persistence")
    if o.managed_settings:
        args += ["--managed-settings", json.dumps(o.managed_settings, separators=(",", ":"))]
    return args


def external_mcp_servers(o: ClaudeAgentOptions) -> dict[str, Any]:
    """The MCP servers of ``o.mcp_servers`` the CLI runs or dials itself (not the in-process
    ones), by name; none when ``mcp_servers`` is a config file's path."""
    if not isinstance(o.mcp_servers, dict):
        return {}
    return {n: c for n, c in o.mcp_servers.items() if not (isinstance(c, dict) and c.get("type") == "sdk")}


def awaits_initialize(o: ClaudeAgentOptions) -> bool:
    """Whether the CLI must read MCP servers or plugins from ``initialize`` before it starts."""
    return (o.plugin_delivery == "initialize" and bool(o.plugins)) or (
        o.mcp_servers_delivery == "initialize" and bool(external_mcp_servers(o))
    )


def build_env(options: ClaudeAgentOptions, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The CLI's environment, as the official SDK builds it: ours minus ``CLAUDECODE``,
    ``CLAUDE_CODE_ENTRYPOINT=sdk-py``, then ``options.env``, then the SDK's own variables, then ``extra``."""
    env = {k: v for k, v in os.environ.items() if k != "CLAUDECODE"}
    env["CLAUDE_CODE_ENTRYPOINT"] = "sdk-py"
    env.pop("CLAUDE_CODE_SESSION_ACCESS_TOKEN", None)
    env.update(options.env)
    env["CLAUDE_AGENT_SDK_VERSION"] = OFFICIAL_SDK_VERSION
    env.pop("CLAUDE_AGENT_SDK_DERIVED_CLIENT_APP", None)
    # The CLI then reports its session state (frames marked sdk_host_only, hidden from the
    # user), which tells when a run with background work is over (see _run.py).
    if not any(k.upper() == "CLAUDE_CODE_SDK_READS_SESSION_STATE" for k in env):
        env["CLAUDE_CODE_SDK_READS_SESSION_STATE"] = "1"
    if options.client_app is not None:
        env["CLAUDE_AGENT_SDK_CLIENT_APP"] = options.client_app
    if options.enable_file_checkpointing:
        env["CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING"] = "true"
    if options.cwd is not None:
        env["PWD"] = str(options.cwd)
    question = (options.tool_config or {}).get("ask_user_question") or {}
    if question.get("preview_format"):
        env["CLAUDE_CODE_QUESTION_PREVIEW_FORMAT"] = question["preview_format"]
    _add_trace_context(env, options.env)
    if extra:
        env.update(extra)
    return env


def _add_trace_context(env: dict[str, str], chosen: dict[str, str]) -> None:
    """With an OpenTelemetry span active here (``opentelemetry-api`` installed, optional), hand
    the CLI its W3C context (``TRACEPARENT``, ``TRACESTATE``) so the CLI's own spans join the
    caller's trace, as the official SDK does. A context inherited from our environment is
    dropped first (an old ``TRACESTATE`` must not pair with a new ``TRACEPARENT``); what
    ``options.env`` sets is left alone. Without a span, or without the package, nothing.

    A program that never imported OpenTelemetry cannot have a span or baggage set, so the
    package (35 ms to import) is not loaded for it: the question is asked only once the
    program has loaded ``opentelemetry.context`` (itself, or through an auto-instrumentation)."""
    if "opentelemetry.context" not in sys.modules:
        return
    try:
        from opentelemetry import propagate
    except ImportError:
        return
    carrier: dict[str, str] = {}
    try:
        propagate.inject(carrier)
    except Exception as error:  # tracing is best effort: it never stops a launch
        logger.debug("could not read the OpenTelemetry context: %s", error)
        return
    if "traceparent" not in carrier:  # no span (a baggage-only carrier keeps what is inherited)
        return
    if "TRACESTATE" not in chosen:  # (an inherited TRACEPARENT is overwritten just below)
        env.pop("TRACESTATE", None)
    for key, value in carrier.items():
        if key.upper() not in chosen:
            env[key.upper()] = value


# Flags the SDK adds for an option; named when a CLI too old for them refuses them.
FLAG_OPTIONS = {
    "--session-mirror": "session_store",
    "--task-budget": "task_budget",
    "--effort": "effort",
    "--agent": "agent",
    "--permission-prompts": "permission_prompts",
    "--no-session-persistence": "persist_session",
    "--project-config-root": "project_config_root",
    "--await-initialize": (
        "mcp_servers_delivery (its default sends MCP servers over stdin to a CLI started elsewhere, whose version "
        "is not known here: set mcp_servers_delivery='argv' for an older one, which puts the servers' env and "
        "headers on its command line) or plugin_delivery"
    ),
    "--managed-settings": "managed_settings",
    "--debug-file": "debug_file",
}
_UNKNOWN_FLAG = re.compile(r"unknown option '(--[\w-]+)")


def unknown_flag(stderr_tail: str) -> str | None:
    """The flag a CLI refused as unknown (``error: unknown option '--x'``), if it did."""
    found = _UNKNOWN_FLAG.search(stderr_tail)
    return found.group(1) if found else None


MINIMUM_VERSION = (2, 0, 0)
VERBATIM_PROMPTS_VERSION = (2, 1, 248)  # the first CLI that honours client_composed


def init_version_warnings(init: dict[str, Any], cli: str | None, verbatim: bool) -> list[str]:
    """What to warn about the CLI, from its first ``system/init`` message (as the official SDK
    does, in its words): a CLI too old to report its version, and ``verbatim_prompts`` on a
    CLI that ignores it."""
    reported = init.get("claude_code_version")
    found = re.match(r"(\d{1,9})\.(\d{1,9})\.(\d{1,9})", str(reported))
    version = tuple(int(part) for part in found.groups()) if found else None
    warnings = []
    if version is None:
        warnings.append(
            f"Claude Code at {cli} is too old to report its version, and may be unsupported in the Agent SDK. "
            f"Minimum required version is {format_version(MINIMUM_VERSION)}. Some features may not work correctly."
        )
    if verbatim and (version is None or version < VERBATIM_PROMPTS_VERSION):
        warnings.append(
            f"verbatim_prompts is enabled, but Claude Code version {reported or 'unknown'} at {cli} ignores it: "
            "prompts will still have @path mentions expanded and slash commands dispatched. "
            f"Claude Code {format_version(VERBATIM_PROMPTS_VERSION)} or later is required."
        )
    return warnings
