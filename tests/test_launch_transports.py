"""The launch plan reaches the process: on each transport, a stand-in CLI (a Python script, not
the real CLI, whose behaviour the real-CLI tests cover) reports the directory it runs in, an
environment variable and its arguments, writes a line on stderr, and can send a line longer
than ``max_buffer_size``. Fast enough to run under mutation testing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import sys
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import ClaudeAgentOptions, ClaudeSDKClient, CLIJSONDecodeError, ResultMessage, query
from claude_sdkurl.spawn import SpawnOptions

STAND_IN = r'''#!{python}
import json, os, sys
if "--version" in sys.argv:
    print("{version} (Claude Code)")
    sys.exit(0)
sys.stderr.write("stand-in says hello\n")
sys.stderr.flush()
report = {{"cwd": os.getcwd(), "probe": os.environ.get("PROBE"), "argv": sys.argv[1:], "uid": os.getuid()}}

def answer(msg, send):
    if msg["type"] == "control_request" and msg["request"]["subtype"] == "initialize":
        send({{"type": "control_response", "response": {{"subtype": "success", "request_id": msg["request_id"], "response": {{}}}}}})
    elif msg["type"] == "user":
        text = json.dumps(report) if msg["message"]["content"] != "big" else "x" * 5000
        send({{"type": "result", "subtype": "success", "duration_ms": 1, "duration_api_ms": 1, "is_error": False,
              "num_turns": 1, "session_id": "s", "result": text, "uuid": os.urandom(8).hex()}})

if "--sdk-url" in sys.argv:
    from websockets.sync.client import connect
    token = os.read(int(os.environ["CLAUDE_CODE_WEBSOCKET_AUTH_FILE_DESCRIPTOR"]), 4096).decode()
    url = sys.argv[sys.argv.index("--sdk-url") + 1]
    with connect(url, additional_headers={{"Authorization": "Bearer " + token}}, compression=None) as ws:
        send = lambda obj: ws.send(json.dumps(obj) + "\n")
        try:
            for frame in ws:
                for line in frame.splitlines():
                    if line.strip():
                        answer(json.loads(line), send)
        except Exception:
            pass
else:
    def send(obj):
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()
    for line in sys.stdin:
        answer(json.loads(line), send)
'''

VERSIONS = {"websocket": "2.1.120", "stdio": "2.1.330"}


def stand_in(tmp_path: Path, transport: str) -> Path:
    script = tmp_path / "claude"
    script.write_text(STAND_IN.format(python=sys.executable, version=VERSIONS[transport]))
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("transport", ["websocket", "stdio"])
def test_directory_environment_arguments_and_stderr_reach_the_cli(transport: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    lines: list[str] = []
    options = ClaudeAgentOptions(cli_path=stand_in(tmp_path, transport), cwd=work, env={"PROBE": "p1"}, max_turns=3, stderr=lines.append)
    [result] = [m for m in query("report", options) if isinstance(m, ResultMessage)]
    report = json.loads(result.result or "")
    assert report["cwd"] == str(work) and report["probe"] == "p1"
    assert report["argv"][report["argv"].index("--max-turns") + 1] == "3"
    assert ("--sdk-url" in report["argv"]) is (transport == "websocket")
    assert "stand-in says hello" in lines


@pytest.mark.parametrize("transport", ["websocket", "stdio"])
def test_max_buffer_size_bounds_what_the_cli_sends(transport: str, tmp_path: Path) -> None:
    options = ClaudeAgentOptions(cli_path=stand_in(tmp_path, transport), max_buffer_size=1000)
    with pytest.raises(CLIJSONDecodeError):
        list(query("big", options))
    roomy = ClaudeAgentOptions(cli_path=stand_in(tmp_path, transport), max_buffer_size=10_000)
    assert len([m for m in query("big", roomy) if isinstance(m, ResultMessage)][0].result or "") == 5000


def test_a_spawner_function_gets_what_a_local_cli_would(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALREADY_HERE", "same")
    work = tmp_path / "work"
    work.mkdir()
    asked: list[SpawnOptions] = []

    def spawner(spawn: SpawnOptions) -> Any:
        asked.append(spawn)
        return subprocess.Popen(
            [spawn.command, *spawn.args], cwd=spawn.cwd, env=spawn.env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip

    cli = stand_in(tmp_path, "stdio")
    lines: list[str] = []
    options = ClaudeAgentOptions(
        cli_path=cli, cwd=work, env={"PROBE": "p2", "ALREADY_HERE": "same"}, spawn_claude_code_process=spawner, stderr=lines.append
    )
    [result] = [m for m in query("report", options) if isinstance(m, ResultMessage)]
    assert json.loads(result.result or "")["probe"] == "p2"
    [spawn] = asked
    assert spawn.command == str(cli) and spawn.cwd == str(work) and "--input-format" in spawn.args
    assert spawn.sdk_env["PROBE"] == "p2" and "ALREADY_HERE" not in spawn.sdk_env  # only what differs from here
    assert spawn.env["ALREADY_HERE"] == "same" and spawn.sdk_env["CLAUDE_CODE_ENTRYPOINT"] == "sdk-py"
    assert "stand-in says hello" in lines


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/usr/bin/python3"), reason="running the CLI as another user needs root")
def test_the_cli_runs_as_options_user() -> None:
    """``user``: the CLI process runs as that user (stdio; a stand-in on the system Python, which
    the other user can run)."""
    import pwd

    shared = Path(tempfile.mkdtemp(prefix="claude-sdkurl-user-"))
    try:
        shared.chmod(0o755)
        script = shared / "claude"
        script.write_text(STAND_IN.format(python="/usr/bin/python3", version=VERSIONS["stdio"]))
        script.chmod(0o755)
        options = ClaudeAgentOptions(cli_path=script, cwd=shared, user="nobody", transport="stdio")
        [result] = [m for m in query("report", options) if isinstance(m, ResultMessage)]
        assert json.loads(result.result or "")["uid"] == pwd.getpwnam("nobody").pw_uid
    finally:
        shutil.rmtree(shared)


# ---------------------------------------------------------------------- a query's early launch
# query() starts a local CLI's process before it makes its session (whose modules load while the
# CLI boots, issue 33): whatever fails between the two must not leave that CLI behind.


def one_query(program: str, options: ClaudeAgentOptions) -> list[Any]:
    if program == "query":
        return list(query("report", options))
    with ClaudeSDKClient(options) as client:
        client.query("report")
        return list(client.receive_response())


@pytest.mark.parametrize("program", ["query", "client"])
@pytest.mark.parametrize("failure", [RuntimeError("no session"), KeyboardInterrupt()])
def test_a_launch_no_session_takes_over_is_stopped(
    program: str, failure: BaseException, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session fails to be made (an error, Ctrl-C) with the CLI already started, by
    ``query()`` or a client's connect: the error comes out and the CLI is stopped, its pipes and
    stderr reader gone (the autouse ``no_leaks`` fixture checks processes, threads and descriptors)."""
    from claude_sdkurl._engine import session as _session

    from .conftest import child_pids

    seen: list[list[int]] = []

    def failing_init(self: Any, *args: Any, **kwargs: Any) -> None:
        seen.append(child_pids())
        raise failure

    monkeypatch.setattr(_session.Session, "__init__", failing_init)
    with pytest.raises(type(failure)):
        one_query(program, ClaudeAgentOptions(cli_path=stand_in(tmp_path, "stdio")))
    assert len(seen) == 1 and len(seen[0]) == 1, seen  # the CLI ran while the session was being made
    assert child_pids() == []


@pytest.mark.parametrize("program", ["query", "client"])
def test_a_failing_session_start_stops_the_launch_it_took_over(program: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The session took the launch over and then failed (its transport refused to start): the
    session's own close stops the CLI."""
    from claude_sdkurl._engine.transport import StdioTransport

    def refuse(self: Any, callbacks: Any) -> None:
        raise OSError("no threads left")

    monkeypatch.setattr(StdioTransport, "start", refuse)
    with pytest.raises(OSError, match="no threads left"):
        one_query(program, ClaudeAgentOptions(cli_path=stand_in(tmp_path, "stdio")))


@pytest.mark.parametrize("how", ["close", "abort"])
def test_a_spawned_stdio_transport_closed_before_it_starts_releases_everything(how: str, tmp_path: Path) -> None:
    """``spawn()`` without ``start()``: closing stops the process at once (it was told nothing, so
    no 5 s grace), closes both pipes and joins the stderr reader. A second ``spawn()`` starts no
    second process."""
    import time

    from claude_sdkurl._engine.transport import StdioTransport

    transport = StdioTransport([sys.executable, "-c", "import time; time.sleep(60)"], dict(os.environ))
    transport.spawn()
    process = transport.process
    assert process is not None
    transport.spawn()
    assert transport.process is process
    began = time.monotonic()
    getattr(transport, how)()
    assert time.monotonic() - began < 4.0  # a graceful close would have waited 5 s for an exit
    assert process.popen.returncode is not None
    assert process.popen.stdin.closed and process.popen.stdout.closed
    assert not process._stderr_thread.is_alive()
