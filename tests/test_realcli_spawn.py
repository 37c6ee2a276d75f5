"""``spawn_claude_code_process``: the REAL CLI on the far side of a REAL ssh channel (an
sshd the test session starts on 127.0.0.1 with throw-away keys), callbacks here."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import (
    AssistantMessage,
    CanUseToolShadowedWarning,
    ClaudeAgentOptions,
    ClaudeClient,
    CLINotFoundError,
    HookMatcher,
    PermissionResultAllow,
    ProcessError,
    ResultMessage,
    StreamEvent,
    TextBlock,
    UnsupportedOptionError,
    create_sdk_mcp_server,
    query,
    tool,
)
from claude_sdkurl.spawn import SpawnOptions, command_prefix_spawner
from claude_sdkurl.testing import MockMessagesAPI, Reply, install_cli, offline_env, text, tool_use

from .conftest import child_pids, processes
from .servers import SSHServer

pytestmark = pytest.mark.realcli

VERSIONS = ["2.1.120", "2.1.330"]


@pytest.fixture(scope="session")
def sshd() -> Iterator[SSHServer]:
    server = SSHServer().start()
    try:
        yield server
    finally:
        server.stop()


def _processes_with(needle: bytes, where: str) -> list[int]:
    """Live processes of this machine whose ``where`` (cmdline or environ) contains ``needle``."""
    return processes(where, lambda data: needle in data)


def _of_this_test(pids: list[int], marker: str) -> list[int]:
    """Of ``pids``, this test's: this process's descendants (the ssh client) and those with the
    test's marker in their environment (the far CLI and its shell, under the sshd). Of the whole
    machine, the key's search once found another test's helper, run beside the suite, with the
    mock's key on its command line."""
    ours = _descendants(os.getpid()) | set(_processes_with(marker.encode(), "environ"))
    return [pid for pid in pids if pid in ours]


def _descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    children.setdefault(int(f.read().rsplit(")", 1)[1].split()[1]), []).append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo += children.get(pid, [])
    return found


def remote_options(
    version: str, api: MockMessagesAPI, home: Path, sshd: SSHServer, marker: str, **kw: Any
) -> ClaudeAgentOptions:
    env = offline_env(api.url, home)
    env["CLAUDE_SDKURL_TEST_MARKER"] = marker  # reaches the far side through stdin only
    return ClaudeAgentOptions(
        cli_path=str(install_cli(version)),  # the path on the far side (the same machine here)
        env=env,
        cwd=str(home / "work"),
        spawn_claude_code_process=sshd.ssh_command,
        **kw,
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_remote_cli_with_local_permissions_hooks_and_tools(
    version: str, api: MockMessagesAPI, home: Path, sshd: SSHServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = f"marker-{os.urandom(6).hex()}"
    # set here too, to another value: what options.env changes must travel, not only what it adds
    monkeypatch.setenv("CLAUDE_SDKURL_TEST_CHANGED", "local-value")
    asked: list[str] = []
    hooked: list[str] = []
    on_command_lines: list[list[int]] = []

    def can_use_tool(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        asked.append(name)
        return PermissionResultAllow()

    def pre_tool_use(data: Any, tool_use_id: Any, context: Any) -> dict[str, Any]:
        hooked.append(data["tool_name"])
        # while the far CLI runs: is the secret environment on any command line of this machine?
        on_command_lines.append(_processes_with(marker.encode(), "cmdline") +
                                _of_this_test(_processes_with(b"sk-ant-test-key", "cmdline"), marker))  # fmt: skip
        return {}

    @tool("add", "Add two numbers", {"a": int, "b": int})
    def add(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": f"sum={args['a'] + args['b']} pid={os.getpid()}"}]}

    api.enqueue(
        tool_use("Bash", {"command": "pwd; echo marker=$CLAUDE_SDKURL_TEST_MARKER changed=$CLAUDE_SDKURL_TEST_CHANGED"}),
        tool_use("mcp__calc__add", {"a": 2, "b": 3}),
        text("all done"),
    )
    options = remote_options(
        version, api, home, sshd, marker,
        can_use_tool=can_use_tool,
        hooks={"PreToolUse": [HookMatcher(hooks=[pre_tool_use])]},
        mcp_servers={"calc": create_sdk_mcp_server("calc", tools=[add])},
        allowed_tools=["mcp__calc__add"],
    )  # fmt: skip
    options.env["CLAUDE_SDKURL_TEST_CHANGED"] = "remote-value"
    with pytest.warns(CanUseToolShadowedWarning):  # allowed_tools lets the MCP tool through unasked, as meant here
        messages = list(query("use the tools", options))
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "all done"
    results = [str(r.get("content")) for r in api.message_requests()[1].tool_results()]
    assert f"{home / 'work'}" in results[0] and f"marker={marker}" in results[0]  # cwd and environment arrived
    assert "changed=remote-value" in results[0]
    tool_result = str(api.message_requests()[2].tool_results()[0].get("content"))
    assert f"sum=5 pid={os.getpid()}" in tool_result  # the SDK MCP tool ran in this process
    assert asked == ["Bash"] and "Bash" in hooked and "mcp__calc__add" in hooked
    assert on_command_lines and all(found == [] for found in on_command_lines)


def test_interrupt_over_ssh(api: MockMessagesAPI, home: Path, sshd: SSHServer) -> None:
    api.enqueue(Reply([{"type": "text", "text": "word " * 200}], chunk=5, delay=0.05), text("after interrupt"))
    options = remote_options("2.1.330", api, home, sshd, "m", include_partial_messages=True)
    with ClaudeClient(options) as client:
        client.query("talk slowly")
        deltas = 0
        messages = []
        for message in client.receive_response():
            messages.append(message)
            if isinstance(message, StreamEvent) and message.event["type"] == "content_block_delta":
                deltas += 1
                if deltas == 3:
                    client.interrupt()
        assert isinstance(messages[-1], ResultMessage) and messages[-1].subtype == "error_during_execution"
        assert deltas < 100
        client.query("still there?")
        assert [m.result for m in client.receive_response() if isinstance(m, ResultMessage)] == ["after interrupt"]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_killed_channel_is_a_typed_error_and_leaves_no_process(
    version: str, api: MockMessagesAPI, home: Path, sshd: SSHServer
) -> None:
    marker = f"marker-{os.urandom(6).hex()}"
    api.enqueue(Reply([{"type": "text", "text": "word " * 400}], chunk=5, delay=0.05))
    options = remote_options(version, api, home, sshd, marker, include_partial_messages=True)
    remote: list[int] = []
    with ClaudeClient(options) as client:
        client.query("talk slowly")
        started = None
        with pytest.raises(ProcessError):
            for message in client.receive_messages():
                if isinstance(message, StreamEvent) and started is None:
                    remote[:] = _processes_with(marker.encode(), "environ")  # the far CLI (and its shell)
                    (channel,) = child_pids()  # the local ssh client
                    os.kill(channel, signal.SIGKILL)
                    started = time.monotonic()
        assert started is not None and time.monotonic() - started < 2.0
    assert remote, "found the far CLI by the marker in its environment"
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and _processes_with(marker.encode(), "environ"):
        time.sleep(0.1)
    assert _processes_with(marker.encode(), "environ") == [], "the far CLI went away with its channel"


def test_a_cli_missing_on_the_far_side_is_cli_not_found(api: MockMessagesAPI, home: Path, sshd: SSHServer) -> None:
    options = ClaudeAgentOptions(
        cli_path="/nowhere/claude", env=offline_env(api.url, home), cwd=str(home / "work"),
        spawn_claude_code_process=sshd.ssh_command,
    )  # fmt: skip
    started = time.monotonic()
    with pytest.raises(CLINotFoundError, match="not found"):
        list(query("hi", options))
    assert time.monotonic() - started < 10


def test_a_spawner_function_and_an_argv_prefix(api: MockMessagesAPI, home: Path) -> None:
    """The TypeScript-shaped form: a function gets SpawnOptions and returns a process; and a
    prefix that passes an argv on (as ``docker exec -i box`` does) rather than a shell string."""
    got: list[SpawnOptions] = []

    def spawn(o: SpawnOptions) -> subprocess.Popen[bytes]:
        got.append(o)
        return subprocess.Popen(
            [o.command, *o.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=o.env, cwd=o.cwd
        )

    base = dict(cli_path=str(install_cli("2.1.330")), env=offline_env(api.url, home), cwd=str(home / "work"))
    results = [m for m in query("hi", ClaudeAgentOptions(**base, spawn_claude_code_process=spawn)) if isinstance(m, ResultMessage)]
    assert results[0].result == "pong"
    (o,) = got
    assert o.command == base["cli_path"] and "--input-format" in o.args and o.cwd == base["cwd"]
    assert o.sdk_env["ANTHROPIC_BASE_URL"] == api.url and o.sdk_env["CLAUDE_CODE_ENTRYPOINT"] == "sdk-py"
    assert "PATH" not in o.sdk_env and o.env["PATH"] == os.environ["PATH"]

    nice = ClaudeAgentOptions(**base, spawn_claude_code_process=["nice", "-n", "1"])
    messages = list(query("hi", nice))
    assert any(isinstance(m, AssistantMessage) and m.content == [TextBlock("pong")] for m in messages)


def test_spawner_option_errors(api: MockMessagesAPI, home: Path) -> None:
    base = dict(env=offline_env(api.url, home), cwd=str(home / "work"))
    with pytest.raises(UnsupportedOptionError, match="stdio"):
        list(query("hi", ClaudeAgentOptions(**base, transport="websocket", spawn_claude_code_process=["ssh", "h", "--"])))
    with pytest.raises(TypeError, match="spawn_claude_code_process"):
        list(query("hi", ClaudeAgentOptions(**base, spawn_claude_code_process="ssh host")))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        command_prefix_spawner([])

    def broken(o: SpawnOptions) -> Any:
        raise OSError("no such box")

    from claude_sdkurl import CLIConnectionError

    with pytest.raises(CLIConnectionError, match="no such box"):
        list(query("hi", ClaudeAgentOptions(**base, spawn_claude_code_process=broken)))
    assert api.message_requests() == [] and child_pids() == []


def test_a_dropped_channel_fails_only_its_batch_item(api: MockMessagesAPI, home: Path, sshd: SSHServer) -> None:
    from claude_sdkurl.batch import RetryPolicy, run_batch

    def drop_the_channel() -> None:
        time.sleep(0.3)
        for pid in child_pids():  # one item at a time: the only ssh client is this item's
            os.kill(pid, signal.SIGKILL)

    slow = Reply([{"type": "text", "text": "word " * 200}], chunk=5, delay=0.05)
    slow.on_start = lambda: threading.Thread(target=drop_the_channel, daemon=True).start()
    api.responder = lambda r: slow if r.last_user_text() == "slow" else text(f"answer to {r.last_user_text()}")
    options = remote_options("2.1.330", api, home, sshd, "m")
    result = run_batch(["s0", "slow", "s2"], options, max_concurrency=1, retry=RetryPolicy(first_wait=0.1, max_wait=0.2, max_retries=2))
    assert [i.text for i in result.succeeded] == ["answer to s0", "answer to s2"]
    [failed] = result.failed
    # a dropped channel is a transient fault: run again (dropped again each time here), then named
    assert failed.prompt == "slow" and failed.fault == "transient" and failed.attempts == 3
    assert failed.error is not None and failed.error.startswith("RetriesExhausted: 3 runs; the last: ProcessError")
    [alone] = run_batch(["slow"], options, retry=None).items  # without a policy: failed at once
    assert alone.attempts == 1 and alone.error is not None and alone.error.startswith("ProcessError")
