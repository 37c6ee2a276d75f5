"""Options: flags as the official SDK builds them, clear errors for bad or unsupported values."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import dataclasses
from typing import Any
import pytest

from claude_sdkurl import (
    ClaudeAgentOptions,
    CLINotFoundError,
    HookMatcher,
    InMemorySessionStore,
    UnsupportedOptionError,
    query,
)
from claude_sdkurl._engine.cli import build_args, build_env, find_cli, parse_version, supports_websocket
from claude_sdkurl._engine.launch import check_options
from claude_sdkurl.mcp import create_sdk_mcp_server


def executable(path: Path, text: str) -> Path:
    """``text`` as an executable file at ``path``: a stand-in CLI written in sh."""
    path.write_text(text)
    path.chmod(0o755)
    return path


def flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def test_every_official_field_exists() -> None:
    official = [
        "tools", "allowed_tools", "system_prompt", "mcp_servers", "strict_mcp_config", "permission_mode",
        "continue_conversation", "resume", "session_id", "max_turns", "max_budget_usd", "disallowed_tools",
        "model", "fallback_model", "betas", "permission_prompt_tool_name", "cwd", "cli_path", "settings",
        "add_dirs", "env", "extra_args", "max_buffer_size", "debug_stderr", "stderr", "can_use_tool", "hooks",
        "user", "include_partial_messages", "include_hook_events", "forward_subagent_text", "verbatim_prompts",
        "fork_session", "resume_session_at", "resume_drops_turn", "agents", "setting_sources", "skills",
        "sandbox", "plugins", "max_thinking_tokens", "thinking", "effort", "output_format",
        "enable_file_checkpointing", "session_store", "session_store_flush", "load_timeout_ms", "task_budget",
        "client_app",
    ]  # fmt: skip
    names = {f.name for f in dataclasses.fields(ClaudeAgentOptions)}
    assert set(official) <= names


def test_defaults_match_the_official_command() -> None:
    args = build_args(ClaudeAgentOptions())
    assert args[:3] == ["--output-format", "stream-json", "--verbose"]
    assert flag(args, "--system-prompt") == ""
    assert args[-2:] == ["--input-format", "stream-json"]


def test_flags() -> None:
    server = create_sdk_mcp_server("calc")
    args = build_args(
        ClaudeAgentOptions(
            system_prompt={"type": "preset", "preset": "claude_code", "append": "Be brief."},
            tools=["Read", "Bash"],
            allowed_tools=["Read"],
            disallowed_tools=["Write"],
            max_turns=3,
            model="claude-opus-4-1",
            permission_mode="acceptEdits",
            resume="-evil",
            mcp_servers={"calc": server, "ext": {"type": "http", "url": "http://x"}},
            include_partial_messages=True,
            extra_args={"debug-to-stderr": None, "foo": "-bar"},
            thinking={"type": "enabled", "budget_tokens": 500},
            effort="low",
            output_format={"type": "json_schema", "schema": {"type": "object"}},
            setting_sources=["user"],
            can_use_tool=lambda *a: None,
        )
    )
    assert flag(args, "--append-system-prompt") == "Be brief."
    assert flag(args, "--tools") == "Read,Bash"
    assert flag(args, "--allowedTools") == "Read"
    assert flag(args, "--disallowedTools") == "Write"
    assert flag(args, "--max-turns") == "3"
    assert flag(args, "--model") == "claude-opus-4-1"
    assert flag(args, "--permission-mode") == "acceptEdits"
    assert "--resume=-evil" in args  # a dash-leading value cannot become a flag
    mcp = json.loads(flag(args, "--mcp-config"))
    assert mcp == {"mcpServers": {"calc": {"type": "sdk", "name": "calc"}, "ext": {"type": "http", "url": "http://x"}}}
    assert "--include-partial-messages" in args
    assert "--debug-to-stderr" in args and "--foo=-bar" in args
    assert flag(args, "--max-thinking-tokens") == "500"
    assert flag(args, "--effort") == "low"
    assert json.loads(flag(args, "--json-schema")) == {"type": "object"}
    assert "--setting-sources=user" in args
    assert flag(args, "--permission-prompt-tool") == "stdio"
    assert "--session-mirror" not in args
    with_store = build_args(ClaudeAgentOptions(session_store=InMemorySessionStore(), resume_drops_turn="x"))
    assert with_store.index("--session-mirror") == with_store.index("--resume-drops-turn=x") + 1  # the official's place


def test_skills_and_sandbox() -> None:
    args = build_args(ClaudeAgentOptions(skills=["pdf"], sandbox={"enabled": True}, settings='{"a": 1}'))
    assert flag(args, "--allowedTools") == "Skill(pdf)"
    assert "--setting-sources=user,project" in args
    assert json.loads(flag(args, "--settings")) == {"a": 1, "sandbox": {"enabled": True}}


def test_env() -> None:
    os.environ["CLAUDECODE"] = "1"
    try:
        env = build_env(ClaudeAgentOptions(env={"X": "1"}, cwd="/tmp", client_app="app/1"))
    finally:
        del os.environ["CLAUDECODE"]
    assert "CLAUDECODE" not in env and env["X"] == "1" and env["PWD"] == "/tmp"
    assert env["CLAUDE_AGENT_SDK_CLIENT_APP"] == "app/1"
    assert env["CLAUDE_CODE_ENTRYPOINT"] == "sdk-py"


def test_env_what_is_dropped_added_and_overridden(monkeypatch: pytest.MonkeyPatch) -> None:
    from claude_sdkurl._version import OFFICIAL_SDK_VERSION

    monkeypatch.setenv("CLAUDE_CODE_SESSION_ACCESS_TOKEN", "secret")
    monkeypatch.setenv("CLAUDE_AGENT_SDK_DERIVED_CLIENT_APP", "parent")
    monkeypatch.setenv("CLAUDE_CODE_ENTRYPOINT", "cli")
    monkeypatch.setenv("KEEP_ME", "1")
    monkeypatch.delenv("CLAUDE_CODE_SDK_READS_SESSION_STATE", raising=False)
    env = build_env(ClaudeAgentOptions(env={"CLAUDE_AGENT_SDK_VERSION": "9", "A": "options"}), {"A": "extra", "B": "extra"})
    assert "CLAUDE_CODE_SESSION_ACCESS_TOKEN" not in env and "CLAUDE_AGENT_SDK_DERIVED_CLIENT_APP" not in env
    assert env["KEEP_ME"] == "1" and env["CLAUDE_CODE_ENTRYPOINT"] == "sdk-py"
    assert env["CLAUDE_AGENT_SDK_VERSION"] == OFFICIAL_SDK_VERSION  # the SDK's own, over options.env
    assert env["A"] == "extra" and env["B"] == "extra"  # extra comes last
    assert env["CLAUDE_CODE_SDK_READS_SESSION_STATE"] == "1"
    assert "CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING" not in env
    assert env.get("PWD") == os.environ.get("PWD")  # without cwd, inherited as is
    assert "CLAUDE_AGENT_SDK_CLIENT_APP" not in env
    user_set = build_env(ClaudeAgentOptions(env={"claude_code_sdk_reads_session_state": "0"}, enable_file_checkpointing=True))
    assert "CLAUDE_CODE_SDK_READS_SESSION_STATE" not in user_set  # any spelling the user chose is left alone
    assert user_set["CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING"] == "true"


class _AppendLoadOnly:
    """The two required SessionStore methods and nothing else."""

    def append(self, key: object, entries: object) -> None: ...

    def load(self, key: object) -> None: ...


def test_a_session_store_takes_stdio_on_any_cli(tmp_path: Path) -> None:
    from claude_sdkurl._engine.launch import select_transport
    from claude_sdkurl._engine.paths import cli_projects_dir as projects_dir

    fake = executable(tmp_path / "claude", "#!/bin/sh\necho '2.1.120 (Claude Code)'\n")
    assert select_transport(ClaudeAgentOptions(), str(fake))[0] == "websocket"
    assert select_transport(ClaudeAgentOptions(session_store=InMemorySessionStore()), str(fake))[0] == "stdio"
    # the mirror maps the CLI's file paths to store keys from the CLI's own config dir
    assert projects_dir({"CLAUDE_CONFIG_DIR": "/c", "HOME": "/h"}) == "/c/projects"
    assert projects_dir({"HOME": "/h"}) == "/h/.claude/projects"


class _NoLoad:
    def append(self, key: Any, entries: Any) -> None: ...


@pytest.mark.parametrize(
    ("options", "error", "text"),
    [
        (ClaudeAgentOptions(session_store=object()), TypeError, "session_store has no append() method; see the SessionStore protocol"),  # type: ignore[arg-type]
        (ClaudeAgentOptions(session_store=_NoLoad()), TypeError, "session_store has no load() method"),  # type: ignore[arg-type]
        (ClaudeAgentOptions(session_store=InMemorySessionStore(), transport="websocket"), UnsupportedOptionError, "session_store needs transport='stdio' (or 'auto'): Claude Code does not send transcript_mirror frames over --sdk-url (measured on 2.1.120)"),
        (ClaudeAgentOptions(session_store=InMemorySessionStore(), enable_file_checkpointing=True), ValueError, "session_store cannot be combined with enable_file_checkpointing (checkpoints are local-disk only and would diverge from the mirrored transcript)"),
        (ClaudeAgentOptions(session_store=_AppendLoadOnly(), continue_conversation=True), ValueError, "continue_conversation with session_store requires the store to implement list_sessions()"),
        (ClaudeAgentOptions(session_store=InMemorySessionStore(), session_store_flush="often"), ValueError, "session_store_flush must be 'batched' or 'eager', not 'often'"),  # type: ignore[arg-type]
        (ClaudeAgentOptions(session_store=InMemorySessionStore(), load_timeout_ms=0), ValueError, "load_timeout_ms must be a positive number of milliseconds"),
        (ClaudeAgentOptions(session_store=InMemorySessionStore(), load_timeout_ms="5"), ValueError, "load_timeout_ms must be"),  # type: ignore[arg-type]
        (ClaudeAgentOptions(spawn_claude_code_process=["ssh", "h"], transport="websocket"), UnsupportedOptionError, "spawn_claude_code_process runs the CLI over stdio: transport='websocket' would need it to reach our 127.0.0.1"),
        (ClaudeAgentOptions(transport="carrier-pigeon"), ValueError, "transport must be 'auto', 'websocket' or 'stdio', not 'carrier-pigeon'"),  # type: ignore[arg-type]
        (ClaudeAgentOptions(control_timeout=0), ValueError, "control_timeout must be a positive number of seconds"),
        (ClaudeAgentOptions(control_timeout="1"), ValueError, "control_timeout must be"),  # type: ignore[arg-type]
        (ClaudeAgentOptions(callback_timeout=0), ValueError, "callback_timeout must be None or a positive number of seconds"),
        (ClaudeAgentOptions(callback_timeout="1"), ValueError, "callback_timeout must be"),  # type: ignore[arg-type]
        (ClaudeAgentOptions(max_buffer_size=0), ValueError, "max_buffer_size must be a positive number of bytes"),
        (ClaudeAgentOptions(can_use_tool=lambda *a: None, permission_prompt_tool_name="stdio"), ValueError, "can_use_tool and permission_prompt_tool_name are mutually exclusive"),
        (ClaudeAgentOptions(env={"A": 1}), TypeError, "options.env must map str to str, got 'A': 1"),  # type: ignore[dict-item]
        (ClaudeAgentOptions(env={2: "x"}), TypeError, "options.env must map str to str, got 2: 'x'"),  # type: ignore[dict-item]
        (ClaudeAgentOptions(skills=["a(b)"]), ValueError, "Invalid skill name 'a(b)': parentheses, commas"),
        (ClaudeAgentOptions(skills="pdf"), TypeError, 'ClaudeAgentOptions.skills must be a list of skill names or "all", got \'pdf\'. Did you mean [\'pdf\']?'),  # type: ignore[arg-type]
        (ClaudeAgentOptions(skills=("pdf",)), TypeError, "ClaudeAgentOptions.skills must be a list of skill names or \"all\", got ('pdf',)."),  # type: ignore[arg-type]
        (ClaudeAgentOptions(skills=[3]), TypeError, "Skill names must be strings, got int: 3"),  # type: ignore[list-item]
        (ClaudeAgentOptions(skills=[" "]), ValueError, "Skill names must be non-empty strings"),
        (ClaudeAgentOptions(plugins=[{"type": "remote", "path": "x"}]), ValueError, "Unsupported plugin type: 'remote'"),  # type: ignore[list-item]
        (ClaudeAgentOptions(hooks={"PreToolUse": [HookMatcher(hooks=["nope"])]}), TypeError, "hook for PreToolUse is not callable: 'nope'"),  # type: ignore[list-item]
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, ClaudeAgentOptions) else value.__name__ if isinstance(value, type) else "text",
)  # fmt: skip
def test_bad_options_fail_before_any_process(options: ClaudeAgentOptions, error: type, text: str, tmp_path: Path) -> None:
    with pytest.raises(error) as raised:
        list(query("hi", dataclasses.replace(options, cli_path=str(tmp_path / "never-run"))))
    assert str(raised.value).startswith(text)
    assert type(raised.value) is error


def test_a_missing_cwd_is_refused_only_where_the_cli_runs_here(tmp_path: Path) -> None:
    """As the official SDK, which checks the directory when it spawns the CLI: a custom
    transport or a spawner may run the CLI where that directory exists."""
    from claude_sdkurl import CLIConnectionError, query
    from claude_sdkurl._engine.launch import plan_launch
    from claude_sdkurl.testing import MockTransport

    missing = tmp_path / "missing"
    check_options(ClaudeAgentOptions(cwd=missing))  # no longer an option check
    with pytest.raises(CLIConnectionError, match="Working directory does not exist"):
        plan_launch(ClaudeAgentOptions(cwd=missing))
    plan = plan_launch(ClaudeAgentOptions(cwd=missing, spawn_claude_code_process=["ssh", "box", "--"]))
    assert plan.cwd == str(missing)
    replies = list(query("hi", ClaudeAgentOptions(cwd=missing), transport=MockTransport(lambda m, cli: cli.turn("ok") if m["type"] == "user" else None)))
    assert replies[-1].result == "ok"  # type: ignore[union-attr]


@pytest.mark.parametrize("where", ["missing", "a-file"])
def test_a_cwd_that_is_no_folder_fails_in_the_official_sdks_words(tmp_path: Path, where: str) -> None:
    """A folder that does not exist, and a file given as the folder: the same error type and
    text as the official SDK's (a file was "does not exist" here before)."""
    import asyncio

    import claude_agent_sdk as official

    from claude_sdkurl import query

    cwd = tmp_path / where
    if where == "a-file":
        cwd.write_text("a file\n")
    cli = executable(tmp_path / "claude", "#!/bin/sh\necho '2.1.330 (Claude Code)'\n")

    async def theirs() -> BaseException:
        try:
            async for _ in official.query(prompt="hi", options=official.ClaudeAgentOptions(cwd=cwd, cli_path=cli)):
                pass
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            return e
        raise AssertionError("the official SDK started in a folder that is not one")

    expected = asyncio.run(theirs())
    with pytest.raises(Exception) as ours:
        list(query("hi", ClaudeAgentOptions(cwd=cwd, cli_path=cli)))
    assert (type(ours.value).__name__, str(ours.value)) == (type(expected).__name__, str(expected))
    assert ("does not exist" if where == "missing" else "Not a directory") in str(expected)


def test_options_the_official_sdk_accepts(tmp_path: Path) -> None:
    """``continue_conversation`` with ``resume`` (both flags go to the CLI) and a small
    ``max_buffer_size`` are accepted, as there."""
    both = ClaudeAgentOptions(continue_conversation=True, resume="session-123", max_buffer_size=10)
    check_options(both)
    args = build_args(both)
    assert "--continue" in args and "--resume=session-123" in args
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError, match="max_buffer_size"):
            check_options(ClaudeAgentOptions(max_buffer_size=bad))  # type: ignore[arg-type]


def test_query_rejects_bad_prompt_types_at_once() -> None:
    with pytest.raises(TypeError):
        query(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        query(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        query("x", options={"model": "y"})  # type: ignore[arg-type]


def test_find_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(CLINotFoundError):
        find_cli(tmp_path / "absent")
    fake = tmp_path / "claude"
    fake.write_text("#!/bin/sh\necho '2.1.120 (Claude Code)'\n")
    with pytest.raises(CLINotFoundError) as not_executable:
        find_cli(fake)
    assert str(not_executable.value) == f"Claude Code at cli_path is not executable: {fake}"
    assert not_executable.value.cli_path == str(fake)  # type: ignore[attr-defined]
    fake.chmod(0o755)
    assert find_cli(fake) == str(fake)
    monkeypatch.setenv("CLAUDE_SDKURL_CLI", str(fake))
    assert find_cli() == str(fake)
    monkeypatch.delenv("CLAUDE_SDKURL_CLI")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_cli() == str(fake)


def test_versions() -> None:
    assert parse_version("2.1.120 (Claude Code)") == (2, 1, 120)
    assert parse_version("garbage") is None
    assert supports_websocket((2, 1, 120)) and supports_websocket((2, 0, 9))
    assert not supports_websocket((2, 1, 121)) and not supports_websocket(None)


@pytest.mark.parametrize(
    "overrides",
    [
        {"hooks": {"UserPromptSubmit": [HookMatcher(hooks=[lambda *a: {}])]}},
        {"setting_sources": ["user"]},
        {"skills": "all"},
        {"settings": '{"hooks": {}}'},
        {"plugins": [{"type": "local", "path": "/x"}]},
        {"extra_args": {"plugin-dir": "/x"}},
        {"include_hook_events": True},
        {"session_store": InMemorySessionStore()},
    ],
)
def test_warm_turn_is_skipped_where_another_hook_could_see_it(overrides: dict[str, object]) -> None:
    import importlib

    prewarm_module = importlib.import_module("claude_sdkurl.prewarm")  # (the package's name "prewarm" is the function)
    assert prewarm_module.warm_turn_obstacle(ClaudeAgentOptions()) is None
    assert prewarm_module.warm_turn_obstacle(ClaudeAgentOptions(**overrides)) is not None  # type: ignore[arg-type]
    # hooks for other events do not stand in the way
    other = ClaudeAgentOptions(hooks={"PreToolUse": [HookMatcher(hooks=[lambda *a: {}])]})
    assert prewarm_module.warm_turn_obstacle(other) is None


SKILL_NAMES = ["ok", "plugin:skill", "a*b", "x[v2]", "a?", " lead", "trail ", "a,b", "a(b)", "\x01x", "\ufeffx", "*",
               "p:*", "p *", "/cmd", "a\\\\b", "a\\", "a\\b", "\ud800x", "", "  ", 5]  # fmt: skip


# ids a command line can name (mutmut runs tests by id): no quotes, spaces or escapes
@pytest.mark.parametrize("name", SKILL_NAMES, ids=[f"name{i}" for i in range(len(SKILL_NAMES))])
def test_skill_names_are_checked_as_the_official_checks_them(name: object) -> None:
    """Same names accepted, same refused with the same error class and text."""
    from claude_agent_sdk._internal.transport import subprocess_cli as official

    def outcome(check: Any) -> Any:
        try:
            check()
        except Exception as error:
            return type(error).__name__, str(error)
        return None

    ours_ = outcome(lambda: check_options(ClaudeAgentOptions(skills=[name])))  # type: ignore[list-item]
    assert ours_ == outcome(lambda: official._validate_skill_name(name))
    if ours_ is None:
        args = build_args(ClaudeAgentOptions(skills=[name]))  # type: ignore[list-item]
        assert f"Skill({name})" in args[args.index("--allowedTools") + 1]


def test_skills_must_be_a_list_or_all() -> None:
    with pytest.raises(TypeError, match=r"Did you mean \['pdf'\]"):
        check_options(ClaudeAgentOptions(skills="pdf"))  # type: ignore[arg-type]


def test_find_cli_order_and_its_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """cli_path, then $CLAUDE_SDKURL_CLI, then PATH, then the usual install places (in order),
    then the official package's bundled binary; each miss says what was looked for."""
    from claude_sdkurl._engine import cli as _cli

    monkeypatch.delenv("CLAUDE_SDKURL_CLI", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(_cli, "_official_bundled_cli", lambda: None)
    with pytest.raises(CLINotFoundError) as missing:
        find_cli()
    assert str(missing.value) == (
        "Claude Code not found. Install it with:\n  npm install -g @anthropic-ai/claude-code\n"
        "or pass ClaudeAgentOptions(cli_path='/path/to/claude'), or set $CLAUDE_SDKURL_CLI."
    )
    order = [tmp_path / ".npm-global/bin/claude", Path("/usr/local/bin/claude"), tmp_path / ".local/bin/claude"]
    order += [tmp_path / "node_modules/.bin/claude", tmp_path / ".yarn/bin/claude", tmp_path / ".claude/local/claude"]
    places = [".claude/local/claude", ".yarn/bin/claude", "node_modules/.bin/claude", ".local/bin/claude", ".npm-global/bin/claude"]
    for place in places:  # from the last choice to the first: each new one wins
        (tmp_path / place).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / place).write_text("")
        assert find_cli() == str(next(p for p in order if p.is_file()))
    # /usr/local/bin/claude comes between the first choice and the others
    is_file = Path.is_file
    monkeypatch.setattr(Path, "is_file", lambda self: str(self) == "/usr/local/bin/claude" or is_file(self))
    (tmp_path / ".npm-global/bin/claude").unlink()
    assert find_cli() == "/usr/local/bin/claude"
    (tmp_path / ".npm-global/bin/claude").write_text("")
    monkeypatch.setattr(Path, "is_file", is_file)
    monkeypatch.setattr(_cli, "_official_bundled_cli", lambda: "/bundled/claude")
    for place in places:
        (tmp_path / place).unlink(missing_ok=True)
    assert find_cli() == "/bundled/claude"
    monkeypatch.setenv("CLAUDE_SDKURL_CLI", str(tmp_path / "nowhere"))
    with pytest.raises(CLINotFoundError, match=r"^Claude Code not found at \$CLAUDE_SDKURL_CLI") as env_missing:
        find_cli()
    assert env_missing.value.cli_path == str(tmp_path / "nowhere")  # type: ignore[attr-defined]
    with pytest.raises(CLINotFoundError) as absent:
        find_cli(str(tmp_path / "absent"))
    assert str(absent.value) == f"Claude Code not found at cli_path: {tmp_path / 'absent'}"
    assert absent.value.cli_path == str(tmp_path / "absent")  # type: ignore[attr-defined]


def test_the_official_packages_bundled_cli_is_found() -> None:
    import claude_agent_sdk

    from claude_sdkurl._engine.cli import _official_bundled_cli

    bundled = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    assert _official_bundled_cli() == (str(bundled) if bundled.is_file() else None)
    assert bundled.is_file()  # the pinned wheel ships one


def test_no_bundled_cli_without_the_official_package_or_its_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.machinery
    import importlib.util

    from claude_sdkurl._engine.cli import _official_bundled_cli

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert _official_bundled_cli() is None
    (tmp_path / "pkg").mkdir()
    spec = importlib.machinery.ModuleSpec("claude_agent_sdk", None, origin=str(tmp_path / "pkg" / "__init__.py"))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: spec)
    assert _official_bundled_cli() is None  # a package without _bundled/claude
    (tmp_path / "pkg" / "_bundled").mkdir()
    (tmp_path / "pkg" / "_bundled" / "claude").write_text("")
    assert _official_bundled_cli() == str(tmp_path / "pkg" / "_bundled" / "claude")


def test_cli_version_runs_the_binary_once_per_file(tmp_path: Path) -> None:
    from claude_sdkurl import CLIConnectionError
    from claude_sdkurl._engine.cli import cli_version, format_version

    runs = tmp_path / "runs"
    cli = executable(tmp_path / "claude", f"#!/bin/sh\necho x >> {runs}\necho '2.1.120 (Claude Code)'\n")
    assert cli_version(str(cli)) == (2, 1, 120)
    assert cli_version(str(cli)) == (2, 1, 120)
    assert runs.read_text().count("x") == 1  # cached
    cli.write_text(f"#!/bin/sh\necho x >> {runs}\necho 'no version here'\n")  # a new file: asked again
    assert cli_version(str(cli)) is None
    assert runs.read_text().count("x") == 2
    with pytest.raises(CLINotFoundError) as absent:
        cli_version(str(tmp_path / "absent"))
    assert str(absent.value) == f"Claude Code not found: {tmp_path / 'absent'}"
    assert absent.value.cli_path == str(tmp_path / "absent")  # type: ignore[attr-defined]
    slow = executable(tmp_path / "slow", "#!/bin/sh\nsleep 5\n")
    with pytest.raises(CLIConnectionError, match=f"^Could not run {slow} --version"):
        cli_version(str(slow), timeout=0.2)
    assert format_version((2, 1, 120)) == "2.1.120" and format_version(None) == "unknown"


def test_cli_version_warns_with_what_it_read_and_never_shares_our_stdin(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from claude_sdkurl._engine.cli import cli_version

    chatty = executable(tmp_path / "chatty", "#!/bin/sh\nprintf 'v%.0s' $(seq 300)\nexit 1\n")  # 300 "v"s, no version
    assert cli_version(str(chatty)) is None
    assert [r.getMessage() for r in caplog.records] == [f"could not read a version from {chatty} --version: {'v' * 200!r}"]
    # the version run reads nothing of ours: its stdin is empty even when ours holds data
    reader = executable(tmp_path / "reader", '#!/bin/sh\ndata=$(cat)\necho "2.1.${#data} (Claude Code)"\n')
    read_end, write_end = os.pipe()
    os.write(write_end, b"ours")
    os.close(write_end)
    saved = os.dup(0)
    try:
        os.dup2(read_end, 0)
        assert cli_version(str(reader)) == (2, 1, 0)
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(read_end)


def test_unknown_flag_is_read_from_the_cli_stderr() -> None:
    from claude_sdkurl._engine.cli import unknown_flag

    assert unknown_flag("boot\nerror: unknown option '--session-mirror'\nbye") == "--session-mirror"
    assert unknown_flag("error: unknown option '--x_y-2' (did you mean...)") == "--x_y-2"
    assert unknown_flag("error: something else") is None


def test_sdk_env_is_what_the_cli_needs_on_top_of_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    from claude_sdkurl._engine.launch import sdk_env

    monkeypatch.setenv("SAME", "1")
    monkeypatch.setenv("CHANGED", "old")
    monkeypatch.delenv("NEW", raising=False)
    assert sdk_env({"SAME": "1", "CHANGED": "new", "NEW": "n"}) == {"CHANGED": "new", "NEW": "n"}


def test_hooks_become_callback_ids_in_order() -> None:
    from claude_sdkurl._engine.launch import hooks_config

    def a(*args: Any) -> dict[str, Any]:
        return {}

    def b(*args: Any) -> dict[str, Any]:
        return {}

    def warm(*args: Any) -> dict[str, Any]:
        return {}

    assert hooks_config(ClaudeAgentOptions()) == (None, {})
    assert hooks_config(ClaudeAgentOptions(hooks={"Stop": []})) == (None, {})
    options = ClaudeAgentOptions(
        hooks={
            "PreToolUse": [HookMatcher(matcher="Bash", hooks=[a, b], timeout=5), HookMatcher(hooks=[b], on_failure="block")],
            "Stop": [],
            "PostToolUse": [HookMatcher(matcher="Write", hooks=[a])],
        }
    )
    config, registry = hooks_config(options, {"PreToolUse": ("warm_0", warm), "SessionStart": ("warm_1", warm)})
    assert config == {
        "PreToolUse": [
            {"matcher": "Bash", "hookCallbackIds": ["hook_0", "hook_1"], "timeout": 5},
            {"matcher": None, "hookCallbackIds": ["hook_2"], "onFailure": "block"},
            {"matcher": None, "hookCallbackIds": ["warm_0"]},
        ],
        "PostToolUse": [{"matcher": "Write", "hookCallbackIds": ["hook_3"]}],
        "SessionStart": [{"matcher": None, "hookCallbackIds": ["warm_1"]}],
    }
    assert registry == {"hook_0": a, "hook_1": b, "hook_2": b, "hook_3": a, "warm_0": warm, "warm_1": warm}


def test_initialize_request_fields() -> None:
    from claude_sdkurl import AgentDefinition
    from claude_sdkurl._engine.launch import initialize_request

    assert initialize_request(ClaudeAgentOptions(), None) == {"subtype": "initialize", "hooks": None}
    options = ClaudeAgentOptions(
        agents={
            "typed": AgentDefinition(description="d", prompt="p", tools=["Read"]),
            "plain": {"description": "d2", "prompt": "p2", "model": None},  # type: ignore[dict-item]
        },
        skills=["pdf"],
        forward_subagent_text=True,
        system_prompt={"type": "custom", "text": "x", "snapshot": True},  # type: ignore[typeddict-unknown-key]
    )
    request = initialize_request(options, {"Stop": []})
    assert request["hooks"] == {"Stop": []}
    assert request["agents"]["typed"]["tools"] == ["Read"] and "model" not in request["agents"]["typed"]
    assert request["agents"]["plain"] == {"description": "d2", "prompt": "p2"}  # None values left out
    assert request["skills"] == ["pdf"] and request["forwardSubagentText"] is True
    assert request["systemPromptSnapshot"] is True and "excludeDynamicSections" not in request
    assert "skills" not in initialize_request(ClaudeAgentOptions(skills="all"), None)
    assert "forwardSubagentText" not in initialize_request(ClaudeAgentOptions(forward_subagent_text=False), None)
    preset = {"type": "preset", "preset": "claude_code", "snapshot": "yes", "exclude_dynamic_sections": "no"}
    assert initialize_request(ClaudeAgentOptions(system_prompt=preset), None) == {"subtype": "initialize", "hooks": None}  # type: ignore[arg-type]
    assert initialize_request(ClaudeAgentOptions(system_prompt={"type": "file", "path": "p", "snapshot": True}), None) == {  # type: ignore[typeddict-unknown-key]
        "subtype": "initialize", "hooks": None
    }  # fmt: skip


def test_the_launch_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from claude_sdkurl._engine.launch import plan_launch
    from claude_sdkurl._engine.protocol import DEFAULT_MAX_LINE

    monkeypatch.setenv("CLAUDE_CODE_STREAM_CLOSE_TIMEOUT", "90000")
    monkeypatch.delenv("CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS", raising=False)
    custom = plan_launch(ClaudeAgentOptions(cwd=tmp_path, control_timeout=120), custom_transport=True)
    assert (custom.transport, custom.cli, custom.cli_version, custom.args, custom.env) == ("custom", None, None, [], {})
    assert custom.cwd == str(tmp_path) and custom.initialize_timeout == 120
    assert custom.max_line == DEFAULT_MAX_LINE and custom.ceiling_ms == 600_000 and not custom.bidirectional
    quick = plan_launch(ClaudeAgentOptions(control_timeout=5, max_buffer_size=1000, env={"CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS": "9"}), custom_transport=True)
    assert quick.initialize_timeout == 90 and quick.max_line == 1000 and quick.ceiling_ms == 9 and quick.cwd is None

    def callback(*args: Any) -> Any:
        return None

    server = create_sdk_mcp_server("s", tools=[])
    for bidirectional in (
        {"hooks": {"Stop": [HookMatcher(hooks=[callback])]}},
        {"can_use_tool": callback},
        {"on_elicitation": callback},
        {"mcp_servers": {"s": server}},
    ):
        plan = plan_launch(ClaudeAgentOptions(**bidirectional), custom_transport=True)
        assert plan.bidirectional, bidirectional
    assert plan.sdk_mcp_servers == {"s": server["instance"]}

    spawned = plan_launch(ClaudeAgentOptions(spawn_claude_code_process=["ssh", "box", "--"], env={"K": "v"}))
    assert (spawned.transport, spawned.cli, spawned.cli_version) == ("stdio", "claude", None)
    assert spawned.args == build_args(spawned.options) and spawned.env["K"] == "v" and spawned.spawner is not None
    named = plan_launch(ClaudeAgentOptions(spawn_claude_code_process=["ssh", "box", "--"], cli_path="/opt/claude"))
    assert named.cli == "/opt/claude"

    fake = executable(tmp_path / "claude", "#!/bin/sh\necho '2.1.330 (Claude Code)'\n")
    local = plan_launch(ClaudeAgentOptions(cli_path=fake, env={"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}))
    assert (local.transport, local.cli, local.cli_version) == ("stdio", str(fake), (2, 1, 330))
    assert local.projects_dir == str(tmp_path / "cfg" / "projects") and local.spawner is None
    assert local.args == build_args(local.options) and local.env == build_env(local.options)
    # the CLI's config dir as the CLI will see it: inherited here, or from options.env with a custom transport
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "inherited"))
    assert plan_launch(ClaudeAgentOptions(cli_path=fake)).projects_dir == str(tmp_path / "inherited" / "projects")
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    chosen = plan_launch(ClaudeAgentOptions(env={"CLAUDE_CONFIG_DIR": "/c"}), custom_transport=True)
    assert chosen.projects_dir == "/c/projects"

    # the SDK's own hooks (prewarm) join the user's, and make the session bidirectional
    warm = plan_launch(ClaudeAgentOptions(), custom_transport=True, extra_hooks={"UserPromptSubmit": ("warm_0", callback)})
    assert warm.initialize["hooks"] == {"UserPromptSubmit": [{"matcher": None, "hookCallbackIds": ["warm_0"]}]}
    assert warm.hook_callbacks == {"warm_0": callback} and warm.bidirectional

    # resuming from a store: the stored session is written out for the CLI, which is pointed at it
    store = InMemorySessionStore()
    sid = "11111111-1111-4111-8111-111111111111"
    entry = {"type": "user", "uuid": "22222222-2222-4222-8222-222222222222", "sessionId": sid, "message": {"role": "user", "content": "hi"}}
    from claude_sdkurl._engine.paths import project_key_for_directory

    store.append({"project_key": project_key_for_directory(str(tmp_path)), "session_id": sid}, [entry])
    # the written-out session goes under tmp_path: a mutant that forgets to remove it (mutation
    # testing runs this test against thousands) leaves nothing in the machine's /tmp
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    resumed = plan_launch(ClaudeAgentOptions(cli_path=fake, cwd=tmp_path, session_store=store, resume=sid))
    try:
        assert resumed.materialized is not None and resumed.materialized.resume_session_id == sid
        assert resumed.env["CLAUDE_CONFIG_DIR"] == str(resumed.materialized.config_dir)
        assert f"--resume={sid}" in resumed.args
    finally:
        if resumed.materialized is not None:
            resumed.materialized.cleanup()
    # a custom transport resumes nothing from the store (as the official SDK)
    custom_store = plan_launch(ClaudeAgentOptions(cwd=tmp_path, session_store=store, resume=sid), custom_transport=True)
    assert custom_store.materialized is None and custom_store.options.resume == sid


def test_sdk_servers_need_their_instance() -> None:
    from claude_sdkurl._engine.launch import sdk_servers

    server = create_sdk_mcp_server("s", tools=[])
    external = {"type": "stdio", "command": "x"}
    assert sdk_servers(ClaudeAgentOptions(mcp_servers={"s": server, "e": external})) == {"s": server["instance"]}  # type: ignore[dict-item]
    assert sdk_servers(ClaudeAgentOptions(mcp_servers="/path/to/config.json")) == {}
    for broken in ({"type": "sdk", "name": "b"}, {"type": "sdk", "name": "b", "instance": object()}):
        with pytest.raises(TypeError, match=r"^SDK MCP server 'b' has no usable 'instance'; use create_sdk_mcp_server\(\)$"):
            sdk_servers(ClaudeAgentOptions(mcp_servers={"b": broken}))  # type: ignore[dict-item]


def test_a_forced_transport_is_kept(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from claude_sdkurl._engine.launch import select_transport

    fake = executable(tmp_path / "claude", "#!/bin/sh\necho '2.1.330 (Claude Code)'\n")
    assert select_transport(ClaudeAgentOptions(), str(fake)) == ("stdio", (2, 1, 330))
    assert select_transport(ClaudeAgentOptions(transport="stdio"), str(fake)) == ("stdio", (2, 1, 330))
    assert caplog.records == []
    assert select_transport(ClaudeAgentOptions(transport="websocket"), str(fake)) == ("websocket", (2, 1, 330))
    assert [r.getMessage() for r in caplog.records] == [
        "transport='websocket' forced on Claude Code 2.1.330, which refuses --sdk-url to 127.0.0.1 after 2.1.120; trying anyway"
    ]
    old = executable(tmp_path / "old", "#!/bin/sh\necho '2.1.120 (Claude Code)'\n")
    caplog.clear()
    assert select_transport(ClaudeAgentOptions(transport="websocket"), str(old)) == ("websocket", (2, 1, 120))
    assert select_transport(ClaudeAgentOptions(transport="stdio"), str(old)) == ("stdio", (2, 1, 120))
    assert caplog.records == []


def test_system_prompt_flags() -> None:
    def prompt_flags(system_prompt: Any) -> list[str]:
        args = build_args(ClaudeAgentOptions(system_prompt=system_prompt))
        assert args[:3] == ["--output-format", "stream-json", "--verbose"] and args[-2:] == ["--input-format", "stream-json"]
        return args[3:-2]

    assert prompt_flags(None) == ["--system-prompt", ""]
    assert prompt_flags("be brief") == ["--system-prompt", "be brief"]
    assert prompt_flags({"type": "file", "path": "/p.md"}) == ["--system-prompt-file", "/p.md"]
    assert prompt_flags({"type": "custom", "prompt": "mine"}) == ["--system-prompt", "mine"]
    assert prompt_flags({"type": "preset", "preset": "claude_code", "append": "more"}) == ["--append-system-prompt", "more"]
    assert prompt_flags({"type": "preset", "preset": "claude_code"}) == []


def test_settings_with_a_sandbox(tmp_path: Path) -> None:
    """With ``sandbox``, the settings (inline JSON, or a file relative to cwd, BOM or not) are
    read and the sandbox added; a file that cannot be read is a typed error naming the cause."""
    from claude_sdkurl import CLIConnectionError

    sandbox = {"enabled": True}

    def settings_flag(**kw: Any) -> Any:
        args = build_args(ClaudeAgentOptions(sandbox=sandbox, **kw))  # type: ignore[arg-type]
        return json.loads(flag(args, "--settings"))

    assert settings_flag() == {"sandbox": sandbox}
    assert settings_flag(settings=' {"model": "m"} ') == {"model": "m", "sandbox": sandbox}
    (tmp_path / "s.json").write_text('{"theme": "dark"}', encoding="utf-8-sig")  # with a byte-order mark
    assert settings_flag(settings="s.json", cwd=tmp_path) == {"theme": "dark", "sandbox": sandbox}
    (tmp_path / "odd}").write_text('{"a": 1}')  # a file name that ends like JSON is still a file
    assert settings_flag(settings="odd}", cwd=tmp_path) == {"a": 1, "sandbox": sandbox}
    (tmp_path / "half.json").write_text('{"theme": "dark"')
    with pytest.raises(CLIConnectionError, match="^Failed to load settings: "):
        settings_flag(settings="half.json", cwd=tmp_path)
    with pytest.raises(CLIConnectionError, match=r"^Failed to load settings: \[Errno 2\]"):
        settings_flag(settings="absent.json", cwd=tmp_path)
    assert flag(build_args(ClaudeAgentOptions(settings="s.json")), "--settings") == "s.json"  # no sandbox: as given


def test_settings_file_without_cwd_is_read_from_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "here.json").write_text('{"x": 1}')
    args = build_args(ClaudeAgentOptions(sandbox={"enabled": True}, settings="here.json"))  # type: ignore[typeddict-item]
    assert json.loads(flag(args, "--settings")) == {"x": 1, "sandbox": {"enabled": True}}


def test_an_mcp_entry_that_is_not_a_dict_is_passed_through() -> None:
    args = build_args(ClaudeAgentOptions(mcp_servers={"odd": ["x"]}))  # type: ignore[dict-item]
    assert json.loads(flag(args, "--mcp-config")) == {"mcpServers": {"odd": ["x"]}}


def test_values_at_the_edge_of_the_option_checks() -> None:
    """The smallest values the checks accept, each transport name, and what completes a refused message."""
    for transport in ("auto", "websocket", "stdio"):
        check_options(ClaudeAgentOptions(transport=transport))  # type: ignore[arg-type]
    check_options(ClaudeAgentOptions(control_timeout=0.5, callback_timeout=0.5, max_buffer_size=1))
    check_options(ClaudeAgentOptions(session_store=InMemorySessionStore(), load_timeout_ms=1))
    # continue with a store that can list its sessions: fine
    check_options(ClaudeAgentOptions(session_store=InMemorySessionStore(), continue_conversation=True))
    with pytest.raises(TypeError) as raised:
        check_options(ClaudeAgentOptions(skills=("pdf",)))  # type: ignore[arg-type]
    assert str(raised.value) == "ClaudeAgentOptions.skills must be a list of skill names or \"all\", got ('pdf',)."
