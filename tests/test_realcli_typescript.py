"""The TypeScript SDK's methods and options (those the official Python SDK lacks), each on the
real CLI 2.1.330 and the newest (2.1.333, which the TypeScript SDK 0.3.333 bundles) against the
mock model, asserting what they do, not only what they send. A method the CLI does not know fails with a typed error naming its version (2.1.120).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import (
    AgentDefinition,
    ClaudeAgentOptions,
    ClaudeClient,
    PermissionDeniedMessage,
    ResultMessage,
    UnsupportedControlRequestError,
    UserMessage,
    list_sessions,
    query,
)
from claude_sdkurl.testing import (
    NEWEST_CLI_VERSION,
    WEBSOCKET_CLI_VERSION,
    MockMessagesAPI,
    install_cli,
    offline_env,
    text,
    tool_use,
)

pytestmark = pytest.mark.realcli

VERSIONS = ["2.1.330", NEWEST_CLI_VERSION]


@pytest.fixture(scope="module", params=VERSIONS)
def cli(request: pytest.FixtureRequest) -> tuple[str, Path]:
    return str(request.param), install_cli(str(request.param))


@pytest.fixture
def make(cli: tuple[str, Path], api: MockMessagesAPI, home: Path) -> Any:
    def options(**overrides: Any) -> ClaudeAgentOptions:
        env = offline_env(api.url, home)
        env.update(overrides.pop("env", {}))
        kw: dict[str, Any] = {"cli_path": str(cli[1]), "env": env, "cwd": str(home / "work"), "transport": "stdio"}
        kw.update(overrides)
        return ClaudeAgentOptions(**kw)

    return options


def _turn(client: ClaudeClient, prompt: str) -> list[Any]:
    client.query(prompt)
    return list(client.receive_response(timeout=120))


def _system_text(request: Any) -> str:
    system = request.body.get("system")
    return json.dumps(system) if system is not None else ""


# ------------------------------------------------------------------ methods


def test_read_file_returns_the_files_bytes(make: Any, home: Path) -> None:
    (home / "work" / "notes.txt").write_bytes(b"line one\nline two \xe2\x82\xac\n")
    (home / "work" / "blob.bin").write_bytes(bytes(range(256)))
    with ClaudeClient(make()) as client:
        answer = client.read_file("notes.txt")
        assert answer is not None and answer["contents"] == "line one\nline two €\n"
        binary = client.read_file("blob.bin", encoding="base64")
        import base64

        assert binary is not None and base64.b64decode(binary["contents"]) == bytes(range(256))
        assert client.read_file("missing.txt") is None  # refused or missing: None, as TypeScript


def test_update_settings_changes_what_get_settings_answers(make: Any, home: Path) -> None:
    with ClaudeClient(make()) as client:
        assert client.get_settings()["effective"].get("outputStyle") is None
        client.update_settings("localSettings", {"outputStyle": "Explanatory"})
        assert client.get_settings()["effective"]["outputStyle"] == "Explanatory"
    written = json.loads((home / "work" / ".claude" / "settings.local.json").read_text())
    assert written["outputStyle"] == "Explanatory"  # through the CLI's own writer, into the file


def test_initialize_answer_and_its_parts(make: Any) -> None:
    agents = {"checker": AgentDefinition(description="checks things", prompt="You check.")}
    with ClaudeClient(make(agents=agents)) as client:
        info = client.initialization_result()
        assert client.supported_commands() == info["commands"] and info["commands"]
        assert client.supported_models() == info["models"]
        assert "checker" in [a["name"] for a in client.supported_agents()]
        assert client.account_info()["apiKeySource"] == "ANTHROPIC_API_KEY"


def test_reinitialize_sends_initialize_again(make: Any, control_calls: list[tuple[str, str]]) -> None:
    with ClaudeClient(make()) as client:
        first = client.initialization_result()
        again = client.reinitialize()
        assert again["pid"] == first["pid"] and client.initialization_result() is again
        _turn(client, "still there?")
    assert [c for c in control_calls if c[0] == "initialize"] == [("initialize", "answered")] * 2


def test_context_usage_summary(make: Any) -> None:
    with ClaudeClient(make()) as client:
        _turn(client, "hi")
        usage = client.get_context_usage(detail="summary")
        assert usage["categories"] and usage["totalTokens"] > 0


def test_get_usage_counts_the_calls_served(make: Any, api: MockMessagesAPI) -> None:
    api.enqueue(text("one"), text("two"))
    with ClaudeClient(make()) as client:
        results = [_turn(client, "a")[-1], _turn(client, "b")[-1]]
        usage = client.get_usage(skip_behaviors=True)
    served = api.message_requests()
    assert len(served) == 2
    # the session's totals are those of the two calls the mock served: its input tokens per call
    # (Reply.input_tokens, 10) twice, and the cost the CLI's results report, counted once
    model_usage = next(iter(usage["session"]["model_usage"].values()))
    assert model_usage["inputTokens"] == 2 * 10
    assert usage["session"]["total_cost_usd"] == pytest.approx(results[-1].total_cost_usd)
    assert 0 < results[0].total_cost_usd < results[-1].total_cost_usd
    assert usage["rate_limits_available"] is False and usage["rate_limits"] is None  # an API key: no plan windows


def test_reloads_answer(make: Any, home: Path) -> None:
    styles = home / ".claude" / "output-styles"
    with ClaudeClient(make()) as client:
        before = client.reload_output_styles()["available_output_styles"]
        styles.mkdir(parents=True)
        (styles / "pirate.md").write_text("---\nname: Pirate\ndescription: talks like one\n---\nArr.\n")
        after = client.reload_output_styles()["available_output_styles"]
        assert "Pirate" not in before and "Pirate" in after  # written while the session ran
        assert isinstance(client.reload_skills()["skills"], list)
        assert isinstance(client.reload_plugins()["commands"], list)


def test_rewind_files_dry_run_changes_no_file(make: Any, api: MockMessagesAPI, home: Path) -> None:
    target = home / "work" / "story.txt"
    target.write_text("first\n")
    api.enqueue(
        tool_use("Read", {"file_path": str(target)}),
        tool_use("Write", {"file_path": str(target), "content": "second\n"}),
        text("written"),
    )
    options = make(enable_file_checkpointing=True, permission_mode="acceptEdits", extra_args={"replay-user-messages": None})
    with ClaudeClient(options) as client:
        messages = _turn(client, "rewrite the story")
        assert target.read_text() == "second\n"
        first_user = next(m for m in messages if isinstance(m, UserMessage) and m.uuid)
        preview = client.rewind_files(first_user.uuid, dry_run=True)
        assert preview["canRewind"] is True and str(target) in json.dumps(preview)
        assert target.read_text() == "second\n"  # a dry run changes nothing
        client.rewind_files(first_user.uuid)
        assert target.read_text() == "first\n"


def test_seed_read_state_is_accepted(make: Any, api: MockMessagesAPI, home: Path) -> None:
    # (2.1.330 lets an Edit through without an earlier Read, so the seed's effect cannot be
    # shown here: this only shows the CLI takes it and the edit after it works)
    target = home / "work" / "plan.txt"
    target.write_text("old plan\n")
    api.enqueue(tool_use("Edit", {"file_path": str(target), "old_string": "old", "new_string": "new"}), text("edited"))
    with ClaudeClient(make(permission_mode="acceptEdits")) as client:
        client.seed_read_state(str(target), target.stat().st_mtime * 1000)
        _turn(client, "edit it")
    assert target.read_text() == "new plan\n"


MCP_SERVER = r'''
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if mid is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "serverInfo": {"name": "res", "version": "1"},
                  "capabilities": {"resources": {}, "tools": {}}}
    elif method == "resources/list":
        result = {"resources": [{"uri": "ui://widget/card", "name": "card", "mimeType": "text/html"}]}
    elif method == "resources/read":
        result = {"contents": [{"uri": msg["params"]["uri"], "mimeType": "text/html", "text": "<b>CARD-7</b>"}]}
    elif method == "tools/list":
        result = {"tools": []}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}) + "\n")
    sys.stdout.flush()
'''


def _mcp_server(home: Path) -> dict[str, Any]:
    script = home / "res_server.py"
    script.write_text(MCP_SERVER)
    return {"res": {"type": "stdio", "command": sys.executable, "args": [str(script)]}}


def _wait_connected(client: ClaudeClient, name: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = {s["name"]: s["status"] for s in client.mcp_server_status()}
        if status.get(name) == "connected":
            return
        time.sleep(0.2)
    raise AssertionError(f"{name} never connected: {status}")


def test_read_mcp_resource_reads_a_servers_resource(make: Any, home: Path) -> None:
    with ClaudeClient(make(mcp_servers=_mcp_server(home))) as client:
        _wait_connected(client, "res")
        answer = client.read_mcp_resource("res", "ui://widget/card")
    assert answer["contents"][0]["text"] == "<b>CARD-7</b>"


def test_mcp_servers_delivery_argv_still_puts_them_on_the_command_line(make: Any, home: Path) -> None:
    """The default (``initialize``, the servers off the command line) is shown on these CLIs by
    ``tests/test_realcli_mcp.py``; ``"argv"`` still gives TypeScript's old default."""
    options = make(mcp_servers=_mcp_server(home), mcp_servers_delivery="argv")
    with ClaudeClient(options) as client:
        plan = client.session.plan
        assert plan is not None and "--mcp-config" in plan.args and "--await-initialize" not in plan.args
        assert "mcpServers" not in plan.initialize and client.initialization_result().get("mcp_servers_applied") is not True
        _wait_connected(client, "res")
        with open(f"/proc/{client.initialization_result()['pid']}/cmdline", "rb") as f:
            assert b"res_server.py" in f.read()  # the server's command line is on the CLI's


def test_mcp_permission_mode_override(make: Any) -> None:
    with ClaudeClient(make()) as client:
        answer = client.set_mcp_permission_mode_override("not-connected", "default")
        assert "not-connected" in answer.get("warning", "")
        assert client.set_mcp_permission_mode_override("not-connected", None) is not None


def test_thinking_display_is_sent_only_when_given(make: Any, api: MockMessagesAPI) -> None:
    with ClaudeClient(make()) as client:
        client.set_max_thinking_tokens(4000, thinking_display="summarized")
        client.set_max_thinking_tokens(None)
        _turn(client, "hi")
    assert api.message_requests()  # the session goes on after both


def test_stream_input_sends_more_turns(make: Any, api: MockMessagesAPI) -> None:
    api.enqueue(text("first answer"), text("second answer"))
    with ClaudeClient(make()) as client:
        client.stream_input(
            {"type": "user", "message": {"role": "user", "content": p}, "parent_tool_use_id": None} for p in ("A1", "B2")
        )
        results = []
        for message in client.receive_messages(timeout=120):
            if isinstance(message, ResultMessage):
                results.append(message)
                if len(api.message_requests()) == 2 and len(results) >= 1 and "B2" in json.dumps(api.message_requests()[-1].body):
                    break
    assert "B2" in json.dumps(api.message_requests()[-1].body)


def test_background_tasks_moves_a_running_bash(make: Any, api: MockMessagesAPI, home: Path) -> None:
    api.enqueue(tool_use("Bash", {"command": "sleep 40; echo late", "description": "wait"}), text("moved on"))
    with ClaudeClient(make(allowed_tools=["Bash"])) as client:
        client.query("wait for it")
        t0 = time.monotonic()
        moved = False
        while time.monotonic() - t0 < 30 and not moved:
            time.sleep(0.5)
            moved = client.background_tasks()
        assert moved is True
        messages = list(client.receive_response(timeout=60))
        assert time.monotonic() - t0 < 35  # the turn ended long before the sleep would have
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "moved on"
    assert "background" in json.dumps(api.message_requests()[1].tool_results()).lower()


def test_a_method_the_cli_lacks_names_its_version(api: MockMessagesAPI, home: Path) -> None:
    cli = install_cli(WEBSOCKET_CLI_VERSION)
    options = ClaudeAgentOptions(cli_path=str(cli), env=offline_env(api.url, home), cwd=str(home / "work"))
    with ClaudeClient(options) as client:
        with pytest.raises(UnsupportedControlRequestError) as caught:
            client.get_usage()
        assert caught.value.subtype == "get_usage" and "2.1.120" in str(caught.value)
        _turn(client, "the session goes on")


# ------------------------------------------------------------------ options


def test_permission_prompts_none_denies_without_asking(make: Any, api: MockMessagesAPI, home: Path) -> None:
    api.enqueue(tool_use("Bash", {"command": "touch asked.txt", "description": "touch"}), text("denied, fine"))
    asked: list[str] = []

    def ask(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        asked.append(name)
        raise AssertionError("never asked")

    messages = list(query("touch it", make(permission_prompts="none", can_use_tool=ask)))
    assert asked == [] and not (home / "work" / "asked.txt").exists()
    sent = api.message_requests()[1].tool_results()[0]
    assert sent["is_error"] is True
    denied = [m for m in messages if isinstance(m, PermissionDeniedMessage)]
    result = messages[-1]
    assert isinstance(result, ResultMessage) and (denied or result.permission_denials)


def test_agent_option_runs_the_named_agent(make: Any, api: MockMessagesAPI) -> None:
    agents = {"reviewer": AgentDefinition(description="reviews", prompt="You are REVIEWER-Q7.")}
    list(query("review", make(agents=agents, agent="reviewer")))
    assert "REVIEWER-Q7" in _system_text(api.message_requests()[0])


def test_title_names_the_session(make: Any, home: Path) -> None:
    messages = list(query("hi", make(title="Quarterly numbers")))
    session_id = messages[-1].session_id
    [row] = [s for s in list_sessions(str(home / "work")) if s.session_id == session_id] if False else [None]
    transcript = next(Path(home, ".claude", "projects").glob(f"*/{session_id}.jsonl")).read_text()
    assert "Quarterly numbers" in transcript


def test_persist_session_false_writes_no_transcript(make: Any, home: Path) -> None:
    messages = list(query("hi", make(persist_session=False)))
    assert isinstance(messages[-1], ResultMessage) and messages[-1].subtype == "success"
    assert list(Path(home, ".claude", "projects").glob(f"*/{messages[-1].session_id}.jsonl")) == []
    kept = list(query("hi", make()))
    assert len(list(Path(home, ".claude", "projects").glob(f"*/{kept[-1].session_id}.jsonl"))) == 1


def test_managed_settings_outrank_the_flag_layer(make: Any, api: MockMessagesAPI, home: Path) -> None:
    api.enqueue(tool_use("Bash", {"command": "touch allowed.txt", "description": "touch"}), text("done"))
    options = make(
        settings=json.dumps({"permissions": {"allow": ["Bash"]}}),
        managed_settings={"permissions": {"deny": ["Bash"]}},
    )
    with ClaudeClient(options) as client:
        sources = [s["source"] for s in client.get_settings()["sources"]]
        assert "policySettings" in sources
        _turn(client, "touch it")
    assert not (home / "work" / "allowed.txt").exists()  # the policy's deny wins over the flag's allow
    assert api.message_requests()[1].tool_results()[0]["is_error"] is True


def test_debug_file_is_written(make: Any, home: Path) -> None:
    log = home / "debug.log"
    list(query("hi", make(debug_file=str(log))))
    assert log.is_file() and log.stat().st_size > 0


# ------------------------------------------------------------------ unattended runs


def test_a_batch_with_no_callback_denies_prompts_at_once(make: Any, api: MockMessagesAPI, home: Path) -> None:
    from claude_sdkurl.batch import run_batch

    api.enqueue(tool_use("Bash", {"command": "touch batch.txt", "description": "touch"}), text("could not"))
    result = run_batch(["touch it"], make(), max_concurrency=1)
    [item] = result.items
    assert item.error is None
    assert not (home / "work" / "batch.txt").exists()
    denied = api.message_requests()[1].tool_results()[0]
    # denied at once, in the words of --permission-prompts none (not the CLI's plain refusal)
    assert denied["is_error"] is True and "no approval surface" in json.dumps(denied)


def test_unattended_sets_permission_prompts_none_only_when_nothing_answers(cli: tuple[str, Path]) -> None:
    from claude_sdkurl._engine.launch import unattended

    plain = ClaudeAgentOptions(cli_path=str(cli[1]))
    assert unattended(plain).permission_prompts == "none"
    assert unattended(plain).can_use_tool is None and plain.permission_prompts is None  # a copy
    asked = ClaudeAgentOptions(cli_path=str(cli[1]), can_use_tool=lambda *a: None)
    assert unattended(asked) is asked
    tool = ClaudeAgentOptions(cli_path=str(cli[1]), permission_prompt_tool_name="mcp__x__y")
    assert unattended(tool) is tool
    chosen = ClaudeAgentOptions(cli_path=str(cli[1]), permission_prompts="host")
    assert unattended(chosen).permission_prompts == "host"
    old = ClaudeAgentOptions(cli_path=str(install_cli(WEBSOCKET_CLI_VERSION)))
    assert unattended(old) is old  # 2.1.120 does not know the flag: nothing added


def test_tool_aliases_let_the_model_call_a_tool_by_another_name(make: Any, api: MockMessagesAPI) -> None:
    for aliases, ran in (({"Shell": "Bash"}, True), (None, False)):
        api.enqueue(tool_use("Shell", {"command": "echo ALIASED", "description": "x"}), text("done"))
        list(query("run it", make(tool_aliases=aliases, allowed_tools=["Bash"])))
        answer = api.message_requests()[-1].tool_results()[0]
        assert (answer["content"] == "ALIASED") is ran, answer


def test_plan_mode_instructions_reach_the_model_in_plan_mode(make: Any, api: MockMessagesAPI) -> None:
    list(query("plan it", make(permission_mode="plan", plan_mode_instructions="PLAN-RULE-77")))
    assert "PLAN-RULE-77" in json.dumps(api.message_requests()[0].body)


def test_plugins_delivered_in_initialize_load(make: Any, home: Path) -> None:
    plugin = home / "plug"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / "commands").mkdir()
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "plugx", "version": "1.0.0"}))
    (plugin / "commands" / "greetx.md").write_text("---\ndescription: greets\n---\nSay hi\n")
    with ClaudeClient(make(plugins=[{"type": "local", "path": str(plugin)}], plugin_delivery="initialize")) as client:
        plan = client.session.plan
        assert plan is not None and "--plugin-dir" not in plan.args  # off the command line
        assert client.initialization_result()["plugins_applied"] is True
        assert "plugx:greetx" in [c["name"] for c in client.supported_commands()]


def test_project_config_root_supplies_the_project_settings(make: Any, home: Path) -> None:
    root = home / "checkout"
    (root / ".claude").mkdir(parents=True)
    (root / ".claude" / "settings.json").write_text(json.dumps({"outputStyle": "Explanatory"}))
    with ClaudeClient(make()) as client:
        assert client.get_settings()["effective"].get("outputStyle") is None
    with ClaudeClient(make(project_config_root=str(root))) as client:
        assert client.get_settings()["effective"]["outputStyle"] == "Explanatory"


# ------------------------------------------------------------------ the official methods, shown too


def test_apply_flag_settings_changes_what_get_settings_answers(make: Any) -> None:
    with ClaudeClient(make()) as client:
        client.apply_flag_settings({"outputStyle": "Concise"})
        assert client.get_settings()["effective"]["outputStyle"] == "Concise"
        client.apply_flag_settings({"outputStyle": None})  # None clears the key from the flag layer
        assert client.get_settings()["effective"].get("outputStyle") is None


def _status(client: ClaudeClient) -> dict[str, str]:
    return {s["name"]: s["status"] for s in client.mcp_server_status()}


def _until(check: Any, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_mcp_servers_toggled_reconnected_and_replaced(make: Any, home: Path) -> None:
    server = _mcp_server(home)
    with ClaudeClient(make(mcp_servers=server)) as client:
        _wait_connected(client, "res")
        client.toggle_mcp_server("res", False)
        _until(lambda: _status(client).get("res") == "disabled")
        client.toggle_mcp_server("res", True)
        _until(lambda: _status(client).get("res") == "connected")
        client.reconnect_mcp_server("res")
        _until(lambda: _status(client).get("res") == "connected")
        answer = client.set_mcp_servers({"res2": server["res"]})
        assert "res2" in answer.get("added", [])
        _until(lambda: _status(client).get("res2") == "connected")
        assert client.read_mcp_resource("res2", "ui://widget/card")["contents"][0]["text"] == "<b>CARD-7</b>"


def test_stop_task_stops_a_background_bash(make: Any, api: MockMessagesAPI, home: Path) -> None:
    api.enqueue(
        tool_use("Bash", {"command": "sleep 60", "description": "wait", "run_in_background": True}),
        text("started it"),
    )
    with ClaudeClient(make(allowed_tools=["Bash"])) as client:
        client.query("start it")
        started = None
        for message in client.receive_messages(timeout=120):
            if getattr(message, "subtype", None) == "task_started":
                started = message
            if isinstance(message, ResultMessage):
                break
        assert started is not None
        client.stop_task(started.task_id)
        ended = next(m for m in client.receive_messages(timeout=60) if getattr(m, "subtype", None) == "task_notification")
        assert ended.task_id == started.task_id and ended.status in ("stopped", "killed", "failed")


def test_close_stops_the_cli(make: Any) -> None:
    client = ClaudeClient(make())
    client.connect()
    pid = client.initialization_result()["pid"]
    client.close()
    _until(lambda: not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower(), 20)
