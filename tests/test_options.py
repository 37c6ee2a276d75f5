"""Options: flags as the official SDK builds them, clear errors for bad or unsupported values."""

from __future__ import annotations

import json
import os
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
from claude_sdkurl._cli import build_args, build_env, find_cli, parse_version, supports_websocket
from claude_sdkurl._launch import check_options
from claude_sdkurl.mcp import create_sdk_mcp_server


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


class _AppendLoadOnly:
    """The two required SessionStore methods and nothing else."""

    def append(self, key: object, entries: object) -> None: ...

    def load(self, key: object) -> None: ...


def test_a_session_store_takes_stdio_on_any_cli(tmp_path: Path) -> None:
    from claude_sdkurl._launch import select_transport
    from claude_sdkurl.sessions._paths import cli_projects_dir as projects_dir

    fake = tmp_path / "claude"
    fake.write_text("#!/bin/sh\necho '2.1.120 (Claude Code)'\n")
    fake.chmod(0o755)
    assert select_transport(ClaudeAgentOptions(), str(fake))[0] == "websocket"
    assert select_transport(ClaudeAgentOptions(session_store=InMemorySessionStore()), str(fake))[0] == "stdio"
    # the mirror maps the CLI's file paths to store keys from the CLI's own config dir
    assert projects_dir({"CLAUDE_CONFIG_DIR": "/c", "HOME": "/h"}) == "/c/projects"
    assert projects_dir({"HOME": "/h"}) == "/h/.claude/projects"


@pytest.mark.parametrize(
    ("options", "error"),
    [
        (ClaudeAgentOptions(session_store=object()), TypeError),  # type: ignore[arg-type]
        (ClaudeAgentOptions(session_store=InMemorySessionStore(), transport="websocket"), UnsupportedOptionError),
        (ClaudeAgentOptions(session_store=InMemorySessionStore(), enable_file_checkpointing=True), ValueError),
        (ClaudeAgentOptions(session_store=_AppendLoadOnly(), continue_conversation=True), ValueError),
        (ClaudeAgentOptions(session_store=InMemorySessionStore(), session_store_flush="often"), ValueError),  # type: ignore[arg-type]
        (ClaudeAgentOptions(session_store=InMemorySessionStore(), load_timeout_ms=0), ValueError),
        (ClaudeAgentOptions(transport="carrier-pigeon"), ValueError),  # type: ignore[arg-type]
        (ClaudeAgentOptions(control_timeout=0), ValueError),
        (ClaudeAgentOptions(env={"A": 1}), TypeError),  # type: ignore[dict-item]
        (ClaudeAgentOptions(skills=["a(b)"]), ValueError),
        (ClaudeAgentOptions(plugins=[{"type": "remote", "path": "x"}]), ValueError),  # type: ignore[list-item]
        (ClaudeAgentOptions(hooks={"PreToolUse": [HookMatcher(hooks=["nope"])]}), TypeError),  # type: ignore[list-item]
    ],
)
def test_bad_options_fail_before_any_process(options: ClaudeAgentOptions, error: type, tmp_path: Path) -> None:
    with pytest.raises(error):
        list(query("hi", dataclasses.replace(options, cli_path=str(tmp_path / "never-run"))))


def test_a_missing_cwd_is_refused_only_where_the_cli_runs_here(tmp_path: Path) -> None:
    """As the official SDK, which checks the directory when it spawns the CLI: a custom
    transport or a spawner may run the CLI where that directory exists."""
    from claude_sdkurl import CLIConnectionError, query
    from claude_sdkurl._launch import plan_launch
    from claude_sdkurl.testing import MockTransport

    missing = tmp_path / "missing"
    check_options(ClaudeAgentOptions(cwd=missing))  # no longer an option check
    with pytest.raises(CLIConnectionError, match="Working directory does not exist"):
        plan_launch(ClaudeAgentOptions(cwd=missing))
    plan = plan_launch(ClaudeAgentOptions(cwd=missing, spawn_claude_code_process=["ssh", "box", "--"]))
    assert plan.cwd == str(missing)
    replies = list(query("hi", ClaudeAgentOptions(cwd=missing), transport=MockTransport(lambda m, cli: cli.turn("ok") if m["type"] == "user" else None)))
    assert replies[-1].result == "ok"  # type: ignore[union-attr]


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
    with pytest.raises(CLINotFoundError, match="not executable"):
        find_cli(fake)
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
    import sys

    prewarm_module = sys.modules["claude_sdkurl.prewarm"]
    assert prewarm_module.warm_turn_obstacle(ClaudeAgentOptions()) is None
    assert prewarm_module.warm_turn_obstacle(ClaudeAgentOptions(**overrides)) is not None  # type: ignore[arg-type]
    # hooks for other events do not stand in the way
    other = ClaudeAgentOptions(hooks={"PreToolUse": [HookMatcher(hooks=[lambda *a: {}])]})
    assert prewarm_module.warm_turn_obstacle(other) is None


SKILL_NAMES = ["ok", "plugin:skill", "a*b", "x[v2]", "a?", " lead", "trail ", "a,b", "a(b)", "\x01x", "\ufeffx", "*",
               "p:*", "p *", "/cmd", "a\\\\b", "a\\", "a\\b", "\ud800x", "", "  ", 5]  # fmt: skip


@pytest.mark.parametrize("name", SKILL_NAMES, ids=repr)
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
