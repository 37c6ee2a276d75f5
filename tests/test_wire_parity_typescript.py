"""The TypeScript column of the wire parity: for each option and method we took from the
TypeScript SDK 0.3.333, what it adds to the CLI's command line, environment and
``initialize`` request, and the control request each method writes, compared with what the
TypeScript SDK itself writes for the same call, by machine.

Both SDKs run against the recording stand-in CLI of ``test_wire_parity`` (Node runs the
TypeScript SDK, installed by the test session). The two SDKs build their base command lines
differently (``--flag=value`` against ``--flag value``, their entry points), so what is compared
is each option's *difference* from a run without it, flags split into (flag, value) pairs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import claude_sdkurl as ours

from .test_wire_parity import RECORDER, read_recording
from .typescript_sdk import typescript_sdk

NODE_SCRIPT = r"""
import { readFileSync } from 'node:fs';
import { query } from '@anthropic-ai/claude-agent-sdk';
const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));
for (const c of spec) {
  const opts = { ...c.options, pathToClaudeCodeExecutable: c.cli, env: { ...process.env, RECORD_TO: c.record } };
  if (c.dialog) opts.onUserDialog = async () => ({ behavior: 'cancelled' });
  if (!c.method) {
    for await (const m of query({ prompt: 'hello', options: opts })) { }
    continue;
  }
  let release; const gate = new Promise((r) => { release = r; });
  async function* input() { await gate; }
  const q = query({ prompt: input(), options: opts });
  const consume = (async () => { try { for await (const m of q) { } } catch (e) { } })();
  await q.initializationResult();
  await q[c.method](...c.args);
  release(); q.close(); await consume;
}
"""

# name -> (our options, TypeScript's options); "MCP" stands for one external stdio server
OPTION_CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "agent": ({"agent": "reviewer"}, {"agent": "reviewer"}),
    "permission-prompts": ({"permission_prompts": "none"}, {"permissionPrompts": "none"}),
    "persist-session": ({"persist_session": False}, {"persistSession": False}),
    "title": ({"title": "Quarterly"}, {"title": "Quarterly"}),
    "tool-aliases": ({"tool_aliases": {"Shell": "Bash"}}, {"toolAliases": {"Shell": "Bash"}}),
    "plan-mode-instructions": ({"plan_mode_instructions": "plan well"}, {"planModeInstructions": "plan well"}),
    "prompt-suggestions": ({"prompt_suggestions": True}, {"promptSuggestions": True}),
    "agent-progress-summaries": ({"agent_progress_summaries": True}, {"agentProgressSummaries": True}),
    "managed-settings": ({"managed_settings": {"permissions": {"deny": ["Bash"]}}},
                         {"managedSettings": {"permissions": {"deny": ["Bash"]}}}),
    "project-config-root": ({"project_config_root": "/srv/checkout"}, {"projectConfigRoot": "/srv/checkout"}),
    "skip-permissions": ({"allow_dangerously_skip_permissions": True}, {"allowDangerouslySkipPermissions": True}),
    "debug": ({"debug": True}, {"debug": True}),
    "debug-file": ({"debug_file": "/tmp/claude-debug.log"}, {"debugFile": "/tmp/claude-debug.log"}),
    "tool-config": ({"tool_config": {"ask_user_question": {"preview_format": "html"}}},
                    {"toolConfig": {"askUserQuestion": {"previewFormat": "html"}}}),
    "per-task-stop": ({"per_task_stop_affordance": True}, {"perTaskStopAffordance": True}),
    "dialogs": ({"supported_dialog_kinds": ["refusal_fallback_prompt"], "on_user_dialog": "DIALOG"},
                {"supportedDialogKinds": ["refusal_fallback_prompt"], "dialog": True}),
    "mcp-default": ({"mcp_servers": "MCP"}, {"mcpServers": "MCP"}),  # (0.3.333: in initialize)
    "mcp-initialize": ({"mcp_servers": "MCP", "mcp_servers_delivery": "initialize"},
                       {"mcpServers": "MCP", "mcpServersDelivery": "initialize"}),
    "mcp-argv": ({"mcp_servers": "MCP", "mcp_servers_delivery": "argv"},
                 {"mcpServers": "MCP", "mcpServersDelivery": "argv"}),
    "plugin-initialize": ({"plugins": "PLUGINS", "plugin_delivery": "initialize"},
                          {"plugins": "PLUGINS", "pluginDelivery": "initialize"}),
}  # fmt: skip

# our method and arguments -> TypeScript's method and arguments
METHOD_CASES: list[tuple[str, tuple[Any, ...], str, list[Any]]] = [
    ("set_mcp_permission_mode_override", ("srv", "auto"), "setMcpPermissionModeOverride", ["srv", "auto"]),
    ("set_mcp_permission_mode_override", ("srv", None), "setMcpPermissionModeOverride", ["srv", None]),
    ("update_settings", ("localSettings", {"outputStyle": "x"}), "updateSettings", ["localSettings", {"outputStyle": "x"}]),
    ("get_usage", (), "usage_EXPERIMENTAL_MAY_CHANGE_DO_NOT_RELY_ON_THIS_API_YET", []),
    ("get_usage", (True,), "usage_EXPERIMENTAL_MAY_CHANGE_DO_NOT_RELY_ON_THIS_API_YET", [{"skipBehaviors": True}]),
    ("read_file", ("a.txt",), "readFile", ["a.txt"]),
    ("read_file", ("a.bin", 100, "base64"), "readFile", ["a.bin", {"maxBytes": 100, "encoding": "base64"}]),
    ("reload_plugins", (), "reloadPlugins", []),
    ("reload_plugins", (True, ["/p"], True), "reloadPlugins", [{"holdOnCacheImpact": True, "addPlugins": ["/p"], "refuseIfBusy": True}]),
    ("reload_skills", (), "reloadSkills", []),
    ("reload_output_styles", (), "reloadOutputStyles", []),
    ("rewind_files", ("u-1", True), "rewindFiles", ["u-1", {"dryRun": True}]),
    ("rewind_files", ("u-1",), "rewindFiles", ["u-1"]),
    ("seed_read_state", ("/f", 1700000000000), "seedReadState", ["/f", 1700000000000]),
    ("read_mcp_resource", ("srv", "ui://x"), "readMcpResource", ["srv", "ui://x"]),
    ("background_tasks", (), "backgroundTasks", []),
    ("background_tasks", ("toolu_1",), "backgroundTasks", ["toolu_1"]),
    ("get_context_usage", ("summary",), "getContextUsage", [{"detail": "summary"}]),
    ("set_max_thinking_tokens", (1000, "summarized"), "setMaxThinkingTokens", [1000, "summarized"]),
    ("set_max_thinking_tokens", (None,), "setMaxThinkingTokens", [None]),
]  # fmt: skip


@pytest.fixture(scope="module")
def node_env(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The Node script, in a folder whose node_modules holds the TypeScript SDK, and the recorder."""
    if shutil.which("node") is None:
        pytest.fail("node is needed for the TypeScript column (it comes with npm)")
    package = typescript_sdk()
    folder = tmp_path_factory.mktemp("tswire")
    (folder / "node_modules").symlink_to(package.parent.parent)
    (folder / "run.mjs").write_text(NODE_SCRIPT)
    recorder = folder / "claude"
    answer = '"commands": [], "models": [], '
    recorder.write_text(RECORDER.format(python=sys.executable).replace(answer, answer + '"mcp_servers_applied": True, "plugins_applied": True, '))
    recorder.chmod(0o755)
    return folder, recorder


def _concrete(values: dict[str, Any], tmp: Path, typescript: bool) -> dict[str, Any]:
    out = dict(values)
    for key, value in values.items():
        if value == "MCP":
            out[key] = {"ext": {"type": "stdio", "command": "echo", "args": ["x"], "env": {"TOKEN": "secret"}}}
        elif value == "PLUGINS":
            out[key] = [{"type": "local", "path": str(tmp / "plug-a")}, {"type": "local", "path": str(tmp / "plug-b")}]
        elif value == "DIALOG":
            out[key] = lambda dialog: {"behavior": "cancelled"}
    return out


_read = read_recording


def _run_typescript(node_env: tuple[Path, Path], specs: list[dict[str, Any]]) -> None:
    folder, recorder = node_env
    for spec in specs:
        spec["cli"] = str(recorder)
    spec_file = folder / "spec.json"
    spec_file.write_text(json.dumps(specs))
    done = subprocess.run(["node", str(folder / "run.mjs"), str(spec_file)], cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def _ours(recorder: Path, record: Path, values: dict[str, Any], method: tuple[str, tuple[Any, ...]] | None = None) -> None:
    options = ours.ClaudeAgentOptions(cli_path=str(recorder), env={"RECORD_TO": str(record)}, transport="stdio", **values)
    if method is None:
        list(ours.query("hello", options))
        return
    with ours.ClaudeClient(options) as client:
        getattr(client, method[0])(*method[1])


def _pairs(argv: list[str]) -> list[tuple[str, str | None]]:
    """A command line as (flag, value) pairs, ``--a=b`` and ``--a b`` alike."""
    pairs: list[tuple[str, str | None]] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token.startswith("--") and "=" in token:
            flag, _, value = token.partition("=")
            pairs.append((flag, value))
        elif token.startswith("--") and i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            pairs.append((token, argv[i + 1]))
            i += 1
        else:
            pairs.append((token, None))
        i += 1
    # a JSON value is compared as JSON (the official Python SDK, whose --mcp-config we keep,
    # writes it with spaces; TypeScript without)
    return [(f, json.dumps(json.loads(v), sort_keys=True)) if v and v[:1] in "{[" else (f, v) for f, v in pairs]


def _delta(seen: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    init = next(f["request"] for f in seen["frames"] if f.get("type") == "control_request")
    base_init = next(f["request"] for f in base["frames"] if f.get("type") == "control_request")
    argv = sorted(set(_pairs(seen["argv"])) - set(_pairs(base["argv"])), key=str)
    if ("--mcp-config", None) in argv:
        argv.remove(("--mcp-config", None))
    env = {k: v for k, v in seen["env"].items() if base["env"].get(k) != v}
    fields = {k: v for k, v in init.items() if base_init.get(k) != v and k != "hooks"}
    return {"argv": argv, "env": env, "initialize": fields}


def _mcp_config(argv: list[str]) -> Any:
    pairs = dict((f, v) for f, v in _pairs(argv) if f == "--mcp-config")
    return json.loads(pairs["--mcp-config"]) if pairs.get("--mcp-config") else None


def test_each_typescript_option_adds_what_typescript_adds(node_env: tuple[Path, Path], tmp_path: Path) -> None:
    folder, recorder = node_env
    names = ["defaults", *OPTION_CASES]
    specs = []
    for name in names:
        values = {} if name == "defaults" else _concrete(OPTION_CASES[name][1], tmp_path, True)
        dialog = values.pop("dialog", False)
        specs.append({"options": values, "record": str(tmp_path / f"ts-{name}.jsonl"), "dialog": dialog})
    _run_typescript(node_env, specs)
    ts_base = _read(tmp_path / "ts-defaults.jsonl")
    _ours(recorder, tmp_path / "ours-defaults.jsonl", {})
    our_base = _read(tmp_path / "ours-defaults.jsonl")
    differences = {}
    for name, (mine, _) in OPTION_CASES.items():
        _ours(recorder, tmp_path / f"ours-{name}.jsonl", _concrete(mine, tmp_path, False))
        seen_ours, seen_ts = _read(tmp_path / f"ours-{name}.jsonl"), _read(tmp_path / f"ts-{name}.jsonl")
        a, b = _delta(seen_ours, our_base), _delta(seen_ts, ts_base)
        assert a["argv"] or a["env"] or a["initialize"], f"{name}: the option changed nothing of ours"
        if a != b:
            differences[name] = {"ours": a, "typescript": b}
        assert _mcp_config(seen_ours["argv"]) == _mcp_config(seen_ts["argv"]), name
    assert differences == {}


@pytest.mark.parametrize(("method", "args", "ts_method", "ts_args"), METHOD_CASES, ids=[f"{m}{a}" for m, a, _, _ in METHOD_CASES])
def test_each_typescript_method_writes_what_typescript_writes(
    node_env: tuple[Path, Path], tmp_path: Path, method: str, args: tuple[Any, ...], ts_method: str, ts_args: list[Any]
) -> None:
    folder, recorder = node_env
    _run_typescript(node_env, [{"options": {}, "record": str(tmp_path / "ts.jsonl"), "method": ts_method, "args": ts_args}])
    _ours(recorder, tmp_path / "ours.jsonl", {}, (method, args))

    def requests(seen: dict[str, Any]) -> list[dict[str, Any]]:
        return [f["request"] for f in seen["frames"] if f.get("type") == "control_request" and f["request"]["subtype"] != "initialize"]

    mine, theirs = requests(_read(tmp_path / "ours.jsonl")), requests(_read(tmp_path / "ts.jsonl"))
    assert len(theirs) == 1 and mine == theirs
