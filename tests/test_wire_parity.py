"""What each SDK puts on the wire, compared field by field, by machine.

One recording stand-in CLI (a Python script; not a real CLI, whose behaviour the
real-CLI tests cover) writes down its command line, its environment and every
frame it receives, and answers as a CLI would. Both SDKs run one turn against it
for each entry of :data:`CASES` (every ``ClaudeAgentOptions`` field set at least
once) and for each client method that sends a control request, and what they
sent must be equal, but for :data:`ALLOWED`, the differences the
migration table (docs/guide/porting.md) names.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

import claude_agent_sdk as official
import pytest

import claude_sdkurl as ours

RECORDER = r'''#!{python}
import json, os, sys
if "--version" in sys.argv:
    print("2.1.330 (Claude Code)")
    sys.exit(0)
log = open(os.environ["RECORD_TO"], "a")
def note(kind, value):
    log.write(json.dumps({{"kind": kind, "value": value}}) + "\n")
    log.flush()
note("argv", sys.argv[1:])
note("env", dict(os.environ))
def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    note("frame", msg)
    if msg["type"] == "control_request":
        answer = {{}}
        if msg["request"]["subtype"] == "initialize":
            answer = {{"commands": [], "models": [], "hook_on_failure_supported": True, "hooks_applied": True}}
            if "mcpServers" in msg["request"]:
                answer["mcp_servers_applied"] = True
        out({{"type": "control_response", "response": {{"subtype": "success", "request_id": msg["request_id"], "response": answer}}}})
    elif msg["type"] == "user":
        out({{"type": "system", "subtype": "init", "session_id": "s", "uuid": "u0", "claude_code_version": "2.1.330"}})
        out({{"type": "result", "subtype": "success", "duration_ms": 1, "duration_api_ms": 1, "is_error": False,
              "num_turns": 1, "session_id": "s", "result": "ok", "uuid": "u1"}})
'''


def _tool_handler(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": []}


def cases(tmp: Path) -> dict[str, dict[str, Any]]:
    """Option sets, by name: each field of ClaudeAgentOptions at least once (both SDKs
    get the same values; callables and servers are built per SDK by :func:`build`)."""
    return {
        "defaults": {},
        "tools-list": {"tools": ["Read", "Bash"]},
        "tools-preset": {"tools": {"type": "preset", "preset": "claude_code"}},
        # (lists of two or more, so a wrong separator shows)
        "allowed-disallowed": {"allowed_tools": ["Read", "Bash(ls:*)"], "disallowed_tools": ["Write", "Edit"]},
        "system-prompt-text": {"system_prompt": "be brief"},
        "system-prompt-preset": {"system_prompt": {"type": "preset", "preset": "claude_code", "append": "more", "exclude_dynamic_sections": True}},
        "system-prompt-file": {"system_prompt": {"type": "file", "path": "prompt.md"}},
        "system-prompt-custom": {"system_prompt": {"type": "custom", "prompt": "mine"}},
        "system-prompt-preset-plain": {"system_prompt": {"type": "preset", "preset": "claude_code"}},
        "mcp-external": {"mcp_servers": {"ext": {"type": "stdio", "command": "echo", "args": ["x"]}}, "strict_mcp_config": True},
        "mcp-sdk": {"mcp_servers": "SDK"},
        "mcp-path": {"mcp_servers": "/etc/mcp.json"},
        "permission": {"permission_mode": "acceptEdits", "permission_prompt_tool_name": "mcp__perm__ask"},
        "continue": {"continue_conversation": True},
        "resume-fork": {"resume": "11111111-1111-4111-8111-111111111111", "fork_session": True,
                        "resume_session_at": "22222222-2222-4222-8222-222222222222", "resume_drops_turn": True},  # fmt: skip
        "session-id": {"session_id": "33333333-3333-4333-8333-333333333333"},
        "limits": {"max_turns": 3, "max_budget_usd": 0.5, "task_budget": {"total": 1000}},
        "models": {"model": "claude-x", "fallback_model": "claude-y", "betas": ["context-1m-2025-08-07", "other-beta"]},
        "cwd-dirs": {"cwd": str(tmp), "add_dirs": [str(tmp / "extra"), "rel/dir"]},
        "settings": {"settings": '{"a": 1}', "setting_sources": ["user", "project"]},
        "sandbox": {"sandbox": {"enabled": True, "autoAllowBashIfSandboxed": True}, "settings": '{"b": 2}'},
        "env-extra": {"env": {"MY_VAR": "1"}, "extra_args": {"debug-to-stderr": None, "some-flag": "v"}},
        "buffer-user": {"max_buffer_size": 4 * 1024 * 1024},
        "callbacks": {"can_use_tool": "CALLBACK", "hooks": "HOOKS", "stderr": "STDERR"},
        "streaming": {"include_partial_messages": True, "include_hook_events": True, "forward_subagent_text": True, "verbatim_prompts": True},
        "agents": {"agents": "AGENTS"},
        "skills-all": {"skills": "all", "allowed_tools": ["Skill", "Read"]},
        "skills-list": {"skills": ["pdf", "plugin:review"], "allowed_tools": ["Read", "Skill(pdf)"]},
        "plugins": {"plugins": [{"type": "local", "path": str(tmp)}]},
        "thinking-tokens": {"max_thinking_tokens": 2048},
        "thinking-adaptive": {"thinking": {"type": "adaptive"}, "effort": "high"},
        "thinking-enabled": {"thinking": {"type": "enabled", "budget_tokens": 4096, "display": "summarized"}},
        "thinking-disabled": {"thinking": {"type": "disabled", "display": "summarized"}},
        "output-format": {"output_format": {"type": "json_schema", "schema": {"type": "object", "properties": {}}}},
        "checkpointing": {"enable_file_checkpointing": True},
        "client-app": {"client_app": "my-app/1.0"},
        "store": {"session_store": "STORE", "session_store_flush": "eager", "load_timeout_ms": 5000},
        "debug-stderr": {"debug_stderr": "DEBUG"},
        "user": {"user": None},
    }


def build(sdk: Any, values: dict[str, Any], script: Path, record: Path) -> Any:
    kw = dict(values)
    for key, value in list(kw.items()):
        if value == "CALLBACK":
            kw[key] = lambda name, data, context: sdk.PermissionResultAllow()
        elif value == "HOOKS":
            kw[key] = {"PreToolUse": [sdk.HookMatcher(matcher="Bash", hooks=[lambda i, t, c: {}], timeout=5)]}
        elif value == "STDERR":
            kw[key] = lambda line: None
        elif value == "DEBUG":
            kw[key] = sys.stderr
        elif value == "SDK":
            kw[key] = {"calc": sdk.create_sdk_mcp_server("calc", tools=[sdk.tool("add", "Add", {"a": int})(_async_or_plain(sdk))])}
        elif value == "AGENTS":
            kw[key] = {"helper": sdk.AgentDefinition(description="helps", prompt="you help", tools=["Read"], model="sonnet")}
        elif value == "STORE":
            kw[key] = sdk.InMemorySessionStore()
    env = {**kw.pop("env", {}), "RECORD_TO": str(record)}
    options = sdk.ClaudeAgentOptions(cli_path=str(script), env=env, **kw)
    if sdk is ours:
        options = ours.ClaudeAgentOptions(**{**{f: getattr(options, f) for f in _fields(ours)}, "transport": "stdio"})
    return options


def _async_or_plain(sdk: Any) -> Any:
    if sdk is ours:
        return _tool_handler

    async def handler(args: dict[str, Any]) -> dict[str, Any]:
        return _tool_handler(args)

    return handler


def _fields(sdk: Any) -> list[str]:
    import dataclasses

    return [f.name for f in dataclasses.fields(sdk.ClaudeAgentOptions)]


# The SDK-managed environment: what either SDK adds to or changes in the inherited one.
def sdk_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if os.environ.get(k) != v and k != "RECORD_TO"}


#: Fields of ours a case sets beside the official ones, by case (the migration table names why).
OURS_TOO = {
    # The official SDK puts external MCP servers on --mcp-config; ours sends them in initialize
    # where the CLI reads them there (TypeScript's default: their env and headers off the command
    # line; see test_by_default_external_mcp_servers_go_in_initialize). "argv" is the official's.
    "mcp-external": {"mcp_servers_delivery": "argv"},
}

#: The differences the migration table (docs/guide/porting.md) names, as (where, what) -> reason.
ALLOWED = {
    # The recorder's path to this file differs only by the run's temporary directory.
    ("env", "CLAUDE_CONFIG_DIR"): "a resume from a store is written to a temporary directory of its own",
}


def record(sdk: Any, options: Any, tmp: Path, run: Any) -> dict[str, Any]:
    path = Path(options.env["RECORD_TO"])
    path.unlink(missing_ok=True)
    run(sdk, options)
    return read_recording(path)


def read_recording(path: Path) -> dict[str, Any]:
    """What the recorder wrote down: its argv, the SDK-managed part of its env, every frame."""
    seen: dict[str, Any] = {"frames": []}
    for line in path.read_text().splitlines():
        item = json.loads(line)
        if item["kind"] == "frame":
            seen["frames"].append(item["value"])
        else:
            seen[item["kind"]] = item["value"]
    seen["env"] = sdk_env(seen["env"])
    return seen


def one_turn(sdk: Any, options: Any) -> None:
    if sdk is ours:
        list(ours.query("hello", options))
    else:

        async def run() -> None:
            async for _ in official.query(prompt="hello", options=options):
                pass

        asyncio.run(run())


def normalise(seen: dict[str, Any]) -> dict[str, Any]:
    """Values that differ by nature between two runs: request ids, uuids, the temporary
    resume directory, the CLI's own path."""
    frames = []
    for frame in seen["frames"]:
        frame = json.loads(json.dumps(frame))
        frame.pop("request_id", None)
        frame.pop("uuid", None)
        if frame.get("type") == "control_response":
            frame["response"].pop("request_id", None)
        frames.append(frame)
    env = {k: v for k, v in seen["env"].items() if (("env", k) not in ALLOWED)}
    return {"argv": seen["argv"], "env": env, "frames": frames}


@pytest.fixture
def recorder(tmp_path: Path) -> Path:
    script = tmp_path / "claude"
    script.write_text(RECORDER.format(python=sys.executable))
    script.chmod(0o755)
    return script


CASE_NAMES = list(cases(Path("/nonexistent")).keys())


@pytest.mark.parametrize("case", CASE_NAMES)
def test_both_sdks_put_the_same_on_the_wire(case: str, recorder: Path, tmp_path: Path) -> None:
    values = cases(tmp_path)[case]
    (tmp_path / "prompt.md").write_text("from a file")
    (tmp_path / "extra").mkdir()
    options = dataclasses.replace(build(ours, values, recorder, tmp_path / "rec"), **OURS_TOO.get(case, {}))
    mine = normalise(record(ours, options, tmp_path, one_turn))
    theirs = normalise(record(official, build(official, values, recorder, tmp_path / "rec"), tmp_path, one_turn))
    assert mine["argv"] == theirs["argv"]
    assert mine["env"] == theirs["env"]
    assert mine["frames"] == theirs["frames"]


def test_by_default_external_mcp_servers_go_in_initialize(recorder: Path, tmp_path: Path) -> None:
    """The one difference of the default (issue 72): no ``--mcp-config`` for external servers but
    ``--await-initialize`` at the end of the flags, the servers in ``initialize`` instead; all else
    as the official SDK sends it."""
    values = cases(tmp_path)["mcp-external"]
    mine = normalise(record(ours, build(ours, values, recorder, tmp_path / "rec"), tmp_path, one_turn))
    theirs = normalise(record(official, build(official, values, recorder, tmp_path / "rec"), tmp_path, one_turn))
    at = theirs["argv"].index("--mcp-config")
    assert json.loads(theirs["argv"][at + 1]) == {"mcpServers": values["mcp_servers"]}
    without = theirs["argv"][:at] + theirs["argv"][at + 2 :]
    assert mine["argv"] == without[: without.index("--input-format")] + ["--await-initialize"] + without[without.index("--input-format") :]
    assert mine["env"] == theirs["env"]
    (init,) = [f for f in mine["frames"] if f.get("request", {}).get("subtype") == "initialize"]
    assert init["request"].pop("mcpServers") == values["mcp_servers"]
    assert mine["frames"] == theirs["frames"]


def test_every_option_field_is_in_a_case() -> None:
    """The matrix covers the whole official ClaudeAgentOptions (a new field fails here)."""
    covered = {key for values in cases(Path("/nonexistent")).values() for key in values}
    missing = set(_fields(official)) - covered - {"cli_path"}  # cli_path: the recorder, every case
    assert missing == set()


CONTROL_CALLS = [
    ("interrupt", ()),
    ("set_permission_mode", ("plan",)),
    ("set_model", ("claude-z",)),
    ("set_model", (None,)),
    ("rewind_files", ("44444444-4444-4444-8444-444444444444",)),
    ("reconnect_mcp_server", ("ext",)),
    ("toggle_mcp_server", ("ext", False)),
    ("stop_task", ("task-1",)),
    ("get_mcp_status", ()),
    ("get_context_usage", ()),
]


@pytest.mark.parametrize(("method", "args"), CONTROL_CALLS, ids=[f"{m}{a}" for m, a in CONTROL_CALLS])
def test_client_control_requests_are_the_same(method: str, args: tuple[Any, ...], recorder: Path, tmp_path: Path) -> None:
    def run(sdk: Any, options: Any) -> None:
        if sdk is ours:
            with ours.ClaudeSDKClient(options) as client:
                getattr(client, method)(*args)
        else:

            async def go() -> None:
                async with official.ClaudeSDKClient(options) as client:
                    await getattr(client, method)(*args)

            asyncio.run(go())

    mine = normalise(record(ours, build(ours, {}, recorder, tmp_path / "rec"), tmp_path, run))
    theirs = normalise(record(official, build(official, {}, recorder, tmp_path / "rec"), tmp_path, run))
    assert mine["frames"] == theirs["frames"]
    assert mine["argv"] == theirs["argv"] and mine["env"] == theirs["env"]


def test_the_comparison_sees_one_changed_flag_and_one_changed_field(recorder: Path, tmp_path: Path) -> None:
    """The check can fail: one flag or one initialize field changed is a difference."""
    base = normalise(record(ours, build(ours, {"max_turns": 3}, recorder, tmp_path / "rec"), tmp_path, one_turn))
    other = normalise(record(ours, build(ours, {"max_turns": 4}, recorder, tmp_path / "rec"), tmp_path, one_turn))
    assert base["argv"] != other["argv"]
    changed = normalise(record(ours, build(ours, {"forward_subagent_text": True}, recorder, tmp_path / "rec"), tmp_path, one_turn))
    assert changed["frames"][0] != normalise(record(ours, build(ours, {}, recorder, tmp_path / "rec"), tmp_path, one_turn))["frames"][0]
