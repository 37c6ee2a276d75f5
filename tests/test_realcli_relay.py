"""The relay (claude_sdkurl.relay) with the real CLIs (2.1.120 over WebSocket, 2.1.330 over stdio)
and the mock model: an unchanged program watched through CLAUDE_SDKURL_RELAY by a frontend written
from the protocol notes alone; a secret of the CLI's env in a tool result; a person deciding,
interrupting and writing from frontends; the standalone relay a hand-started CLI dials; an IDE
bound and unbound.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

from claude_sdkurl import ClaudeClient, PermissionResultAllow, ResultMessage, relay
from claude_sdkurl.testing import MockMessagesAPI, Reply, offline_env
from claude_sdkurl.testing.mock_api import RecordedRequest, text, tool_use
from tests.conftest import TRANSPORTS, OptionsFactory
from tests.servers import free_port

pytestmark = [pytest.mark.realcli]

TOKEN = "realcli-relay-token-0123456789"
ROOT = Path(__file__).parent.parent


def dial(url: str, seconds: float = 30.0, **kw: Any) -> ClientConnection:
    """A WebSocket to ``url`` once something listens there."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return connect(url, open_timeout=10, max_size=None, **kw)
        except (OSError, TimeoutError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def frames_until(ws: ClientConnection, done: Any, seconds: float = 120.0) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + seconds
    while True:
        got.append(json.loads(ws.recv(timeout=max(0.1, deadline - time.monotonic()))))
        if done(got):
            return got


# ---------------------------------------------------------------- a frontend from the notes alone


class NotesFrontend:
    """agents-ui's tab routing as the notes' "Session rotation" and "Disconnect handling" describe
    it, and nothing else: one connection, its four maps, a tab per ``session_id``."""

    CONTENT = {"assistant", "user", "result", "stream_event"}

    def __init__(self) -> None:
        self.connection = "relay"
        self.agents: dict[str, dict[str, Any]] = {}
        self.connection_agent: dict[str, str] = {}  # claudeConnectionAgentIds
        self.session_agent: dict[str, str] = {}  # claudeSessionAgentIds
        self.agent_session: dict[str, str] = {}  # claudeSessionIds
        self.owned: dict[str, set[str]] = {}  # claudeConnectionOwnedAgents
        self._new()

    def _new(self) -> str:
        agent = f"agent{len(self.agents) + 1}"
        self.agents[agent] = {"status": "connected", "content": []}
        self.owned.setdefault(self.connection, set()).add(agent)
        self.connection_agent[self.connection] = agent
        return agent

    def _use(self, agent: str, session_id: str) -> str:
        self.session_agent[session_id] = agent
        self.agent_session[agent] = session_id
        self.connection_agent[self.connection] = agent
        return agent

    def _rotate(self, session_id: str) -> str:
        agent = self.session_agent.get(session_id)
        if agent is not None:
            if self.agents[agent]["status"] != "disconnected":
                return self._use(agent, session_id)  # 1. found and alive: same tab
            del self.session_agent[session_id]  # found but disconnected: stale
        current = self.connection_agent[self.connection]
        if self.agent_session.get(current) == session_id:
            return self._use(current, session_id)  # 2. the current agent owns it
        if current not in self.agent_session and not self.agents[current]["content"] \
                and self.agents[current]["status"] != "disconnected":  # fmt: skip
            return self._use(current, session_id)  # 3. a fresh placeholder
        return self._use(self._new(), session_id)  # 4. a new tab

    def receive(self, frame: dict[str, Any]) -> None:
        if frame.get("type") == "status":
            if frame.get("text") == "claude code disconnected":
                for agent in self.owned.get(self.connection, ()):
                    self.agents[agent]["status"] = "disconnected"
                self.session_agent.clear()
            return
        session_id = frame.get("session_id")
        agent = self._rotate(session_id) if isinstance(session_id, str) and session_id else self.connection_agent[self.connection]
        if frame.get("type") in self.CONTENT:
            self.agents[agent]["content"].append(frame)

    def tabs(self) -> dict[str, list[dict[str, Any]]]:
        """session_id -> that tab's content, for tabs that have a session."""
        return {self.agent_session[a]: v["content"] for a, v in self.agents.items() if a in self.agent_session}


def name_reply(request: RecordedRequest) -> Reply:
    words = request.last_user_text().split()
    return text(f"I am {words[-1] if words else 'nobody'}.")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_unchanged_program_shows_a_notes_frontend_each_session_as_its_own_tab(
    cli_paths: dict[str, Path], api: MockMessagesAPI, home: Path, transport: str
) -> None:
    api.responder = name_reply
    port = free_port()
    env = {**os.environ, "CLAUDE_SDKURL_RELAY": f"127.0.0.1:{port}", "CLAUDE_SDKURL_RELAY_TOKEN": TOKEN,
           "PYTHONPATH": str(ROOT)}  # fmt: skip
    program = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "relay_program.py"), str(cli_paths[transport]), transport, api.url, str(home)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    frontend = NotesFrontend()
    try:
        with dial(f"ws://127.0.0.1:{port}/ws?token={TOKEN}") as ws:
            assert program.stdin is not None
            program.stdin.write("go\n")
            program.stdin.flush()

            def over(got: list[dict[str, Any]]) -> bool:
                results = [i for i, f in enumerate(got) if f.get("type") == "result"]
                return len(results) == 3 and got[-1].get("text") == "claude code disconnected"

            frames = frames_until(ws, over)
        out, err = program.communicate(timeout=120)
    finally:
        program.kill()
    assert program.returncode == 0, err
    assert "claude_sdkurl relay: watch at http://127.0.0.1:" in err  # the token's link, printed once
    assert err.count("watch at") == 1
    for frame in frames:
        frontend.receive(frame)
    printed = {line.split()[0]: line.split()[1] for line in out.splitlines()}
    tabs = frontend.tabs()
    assert set(tabs) == set(printed.values())  # one tab per session, named by its session_id
    for name, session_id in printed.items():
        said = [b.get("text") for f in tabs[session_id] if f["type"] == "assistant" for b in f["message"]["content"]]
        assert said == [f"I am {name}."], (name, said)  # nothing of another session in its tab
        assert [f["type"] for f in tabs[session_id]][-1] == "result", tabs[session_id][-3:]
    assert all(agent["status"] == "disconnected" for agent in frontend.agents.values())
    # the lines both ways: the program's prompts reach the frontend too
    prompts = [f for f in frames if f.get("type") == "user" and f.get("message", {}).get("content") == "say the name alpha"]
    assert len(prompts) == 1


# ---------------------------------------------------------------- secrets


def env_then_done(request: RecordedRequest) -> Reply:
    if request.tool_results():
        return text("listed")
    return tool_use("Bash", {"command": "env | sort"})


def allow_all(name: str, data: dict[str, Any], context: Any) -> PermissionResultAllow:
    return PermissionResultAllow()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_secret_of_the_cli_env_in_a_tool_result_never_reaches_a_frontend(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    api.responder = env_then_done
    key, deploy = "sk-ant-api03-" + secrets.token_hex(16), secrets.token_hex(12)
    options = make_options(env={"ANTHROPIC_API_KEY": key, "DEPLOY_TOKEN": deploy}, can_use_tool=allow_all)
    with relay.serve(port=0, announce=False, token=TOKEN) as served:
        with dial(served.ws_url) as ws, dial(f"ws://127.0.0.1:{served.port}/events?token={TOKEN}") as page:
            with ClaudeClient(options) as client:
                client.query("list the environment")
                messages = list(client.receive_response())
            frames = frames_until(ws, lambda got: got[-1].get("text") == "claude code disconnected")
            envelopes = frames_until(page, lambda got: any('"type":"result"' in str(e.get("l", "")).replace(" ", "") for e in got))
    # the program itself saw the secret (the tool really printed it): the relay is what hid it
    assert deploy in json.dumps([m.content for m in messages if hasattr(m, "content")], default=str)
    seen = json.dumps(frames) + json.dumps(envelopes)
    assert deploy not in seen and key not in seen
    assert f"DEPLOY_TOKEN=<scrubbed>" in seen


# ---------------------------------------------------------------- a person steering


def steering_model(request: RecordedRequest) -> Reply:
    prompt = request.last_user_text()
    if request.tool_results():
        result = request.tool_results()[-1]
        return text("refused" if result.get("is_error") else "touched")
    if prompt.startswith("touch "):
        return tool_use("Bash", {"command": f"touch {prompt.split()[1]}.txt"})
    if prompt == "a long answer":
        return Reply([{"type": "text", "text": "word " * 400 + "END"}], delay=0.05, chunk=10)
    return text(f"heard: {prompt}")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_person_allows_denies_interrupts_and_writes_from_frontends(make_options: OptionsFactory, api: MockMessagesAPI,
                                                                     home: Path) -> None:  # fmt: skip
    api.responder = steering_model
    options = make_options(can_use_tool=relay.ask(timeout=120), include_partial_messages=True)
    work = home / "work"
    with relay.serve(port=0, announce=False, token=TOKEN, steer=True) as served:
        with dial(served.ws_url) as ws, dial(f"ws://127.0.0.1:{served.port}/events?token={TOKEN}") as page, \
                ClaudeClient(options) as client:  # fmt: skip
            # a notes frontend allows, in agents-ui's format
            client.query("touch allowed")
            asked = frames_until(ws, lambda got: got[-1].get("request", {}).get("subtype") == "can_use_tool")[-1]
            assert asked["request"]["input"] == {"command": "touch allowed.txt"}
            ws.send(json.dumps({"type": "control_response", "request_id": asked["request_id"], "permission": {"allow": True}}))
            assert [m for m in client.receive_response() if isinstance(m, ResultMessage)][0].result == "touched"
            assert (work / "allowed.txt").exists()
            # the page denies, naming what it showed
            client.query("touch denied")
            waiting = frames_until(page, lambda got: got[-1].get("k") == "asks" and "denied" in json.dumps(got[-1]["asks"]))[-1]["asks"][0]
            assert waiting["tool_name"] == "Bash" and waiting["input"] == {"command": "touch denied.txt"}
            page.send(json.dumps({"op": "decide", "id": waiting["id"], "allow": False, "tool_name": "Bash", "input": waiting["input"]}))
            assert [m for m in client.receive_response() if isinstance(m, ResultMessage)][0].result == "refused"
            assert not (work / "denied.txt").exists()
            # too late: that request is gone
            page.send(json.dumps({"op": "decide", "id": waiting["id"], "allow": True, "tool_name": "Bash", "input": waiting["input"]}))
            late = frames_until(page, lambda got: got[-1].get("k") == "done" and got[-1].get("error"))[-1]
            assert "no request" in late["error"]
            # a long turn, interrupted from /ws
            client.query("a long answer")
            started = time.monotonic()
            frames_until(ws, lambda got: got[-1].get("type") == "stream_event" and "word" in json.dumps(got[-1]))
            ws.send(json.dumps({"type": "control_request", "request_id": "stop-1", "request": {"subtype": "interrupt"}}))
            turn = list(client.receive_response())
            assert time.monotonic() - started < 15  # the whole answer takes 40 s of deltas
            assert "END" not in json.dumps([getattr(m, "content", None) for m in turn], default=str)
            # a message from the page starts a turn the program reads
            page.send(json.dumps({"op": "message", "session": served.hub.running_sessions()[0].key, "text": "hello from the page"}))
            results = [m for m in client.receive_response() if isinstance(m, ResultMessage)]
            assert results[-1].result == "heard: hello from the page"


# ---------------------------------------------------------------- the standalone relay


def test_the_standalone_relay_takes_a_hand_started_cli_and_its_frontends(cli_paths: dict[str, Path], api: MockMessagesAPI,
                                                                          home: Path) -> None:  # fmt: skip
    api.responder = steering_model
    port = free_port()
    standalone = subprocess.Popen(
        [sys.executable, "-m", "claude_sdkurl.relay", "--port", str(port), "--steer", "--token", TOKEN],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    cli: subprocess.Popen[str] | None = None
    try:
        with dial(f"ws://127.0.0.1:{port}/ws?token={TOKEN}") as ws:
            env = {**offline_env(api.url, home), "PATH": os.environ["PATH"], "CLAUDE_CODE_SESSION_ACCESS_TOKEN": TOKEN}
            cli = subprocess.Popen(
                [str(cli_paths["websocket"]), "--sdk-url", f"ws://127.0.0.1:{port}/", "--input-format", "stream-json",
                 "--output-format", "stream-json", "--verbose", "--permission-prompt-tool", "stdio"],
                cwd=home / "work", env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            # (connected, or is connected when the CLI came in before this frontend had joined)
            assert frames_until(ws, lambda got: True)[0]["text"] in ("claude code connected", "claude code is connected")
            # the CLI names its session at its first prompt: a frontend writes to the only one running
            ws.send(json.dumps({"type": "user", "message": {"role": "user", "content": "touch standalone"}}))
            first = frames_until(ws, lambda got: got[-1].get("type") == "system" and got[-1].get("subtype") == "init")
            # what came before the session_id was known arrives tagged with it, the relay's initialize first
            assert first[0]["type"] == "control_request" and first[0]["request"]["subtype"] == "initialize"
            assert {f.get("session_id") for f in first} == {first[-1]["session_id"]}
            asked = frames_until(ws, lambda got: got[-1].get("request", {}).get("subtype") == "can_use_tool")[-1]
            ws.send(json.dumps({"type": "control_response", "request_id": asked["request_id"], "permission": {"allow": True}}))
            done = frames_until(ws, lambda got: got[-1].get("type") == "result")
            assert done[-1]["result"] == "touched" and (home / "work" / "standalone.txt").exists()
            cli.terminate()
            frames_until(ws, lambda got: got[-1].get("text") == "claude code disconnected")
    finally:
        if cli is not None:
            cli.kill()
            cli.wait(30)
        standalone.terminate()
        try:
            out, _ = standalone.communicate(timeout=30)
        except subprocess.TimeoutExpired:  # never left behind for the tests after this one
            standalone.kill()
            out, _ = standalone.communicate(timeout=30)
            raise
    assert f"CLAUDE_CODE_SESSION_ACCESS_TOKEN={TOKEN}" in out and "--sdk-url ws://127.0.0.1:" in out
    assert standalone.returncode == 0


def test_the_standalone_relay_refuses_a_cli_without_the_token(cli_paths: dict[str, Path], api: MockMessagesAPI, home: Path) -> None:
    from claude_sdkurl.relay._standalone import StandaloneRelay

    with StandaloneRelay(port=0, token=TOKEN, announce=False) as standalone:
        env = {**offline_env(api.url, home), "PATH": os.environ["PATH"], "CLAUDE_CODE_SESSION_ACCESS_TOKEN": "wrong-token-000000000"}
        cli = subprocess.run(
            [str(cli_paths["websocket"]), "--sdk-url", f"ws://127.0.0.1:{standalone.port}/", "--print", "--input-format",
             "stream-json", "--output-format", "stream-json", "--verbose"],
            cwd=home / "work", env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert standalone.hub.drain()
        assert standalone.hub.sessions == {}  # it never got in
    assert "Unauthorized" in cli.stderr or "401" in cli.stderr or cli.stdout == ""


# ---------------------------------------------------------------- IDE binding


class StandInIde:
    """An IDE's MCP server as the CLI's ``ws-ide`` client meets it: JSON-RPC over a WebSocket on
    127.0.0.1, one tool; it records the upgrade's headers and the methods called."""

    def __init__(self) -> None:
        from websockets.sync.server import serve

        self.headers: list[dict[str, str]] = []
        self.methods: list[str] = []
        self.server = serve(self._handle, "127.0.0.1", 0, subprotocols=["mcp"], process_request=self._look)
        self.port = self.server.socket.getsockname()[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _look(self, connection: Any, request: Any) -> None:
        self.headers.append({k.lower(): v for k, v in request.headers.raw_items()})

    def _handle(self, connection: Any) -> None:
        for raw in connection:
            message = json.loads(raw)
            self.methods.append(message.get("method", ""))
            if "id" not in message:
                continue
            if message.get("method") == "initialize":
                result: dict[str, Any] = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                                          "serverInfo": {"name": "stand-in-ide", "version": "1.0"}}  # fmt: skip
            elif message.get("method") == "tools/list":
                result = {"tools": [{"name": "getDiagnostics", "description": "Diagnostics of the open files",
                                     "inputSchema": {"type": "object", "properties": {}}}]}  # fmt: skip
            else:
                result = {}
            connection.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}))

    def close(self) -> None:
        self.server.shutdown()
        self.thread.join(10)


USER_SERVER = '''
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "mine", "version": "1"}}
    elif m["method"] == "tools/list":
        r = {"tools": []}
    else:
        r = {}
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
'''


def statuses(client: ClaudeClient) -> dict[str, str]:
    return {s["name"]: s["status"] for s in client.mcp_server_status()}


def until(check: Any, seconds: float = 60.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_ide_is_bound_and_unbound_and_the_users_own_server_stays(make_options: OptionsFactory, home: Path,
                                                                     transport: str) -> None:  # fmt: skip
    """2.1.120 binds (the notes' way); 2.1.330 refuses the entry in its own words: a typed error,
    and the user's server untouched."""
    from claude_sdkurl import ide

    work = home / "work"
    locks = home / ".claude" / "ide"
    locks.mkdir(parents=True)
    gone = subprocess.Popen(["true"])
    gone.wait()
    ide_server = StandInIde()
    try:
        (locks / f"{ide_server.port}.lock").write_text(json.dumps({
            "pid": os.getpid(), "workspaceFolders": [str(work)], "ideName": "StandIn", "transport": "ws",
            "runningInWindows": False, "authToken": "ide-auth-token-1234"}))  # fmt: skip
        (locks / "39999.lock").write_text(json.dumps({"pid": gone.pid, "workspaceFolders": [str(work)], "ideName": "Dead",
                                                      "transport": "ws", "authToken": "x"}))  # fmt: skip
        (locks / "40000.lock").write_text("{torn")
        script = home / "mine.py"
        script.write_text(USER_SERVER)
        options = make_options(mcp_servers={"mine": {"type": "stdio", "command": sys.executable, "args": [str(script)]}})
        found = ide.ide_lockfiles(work, options.env)
        assert [lock.ide_name for lock in found] == ["StandIn"]  # the dead IDE pruned, the torn file skipped
        assert (locks / "39999.lock").exists()  # (pruned from the list, the IDE's file left alone)
        with ClaudeClient(options) as client:
            until(lambda: statuses(client).get("mine") == "connected")
            if transport == "stdio":
                with pytest.raises(ide.IdeBindingRefused, match="registered by the CLI itself"):
                    client.bind_ide()
                assert statuses(client) == {"mine": "connected"}
                return
            lock = client.bind_ide()
            assert lock.port == ide_server.port
            now = until(lambda: (s := statuses(client)).get("ide") == "connected" and s)
            assert now.get("mine") == "connected"  # the user's server is kept
            assert "ide_connected" in ide_server.methods and "tools/list" in ide_server.methods
            assert [h.get("x-claude-code-ide-authorization") for h in ide_server.headers] == ["ide-auth-token-1234"]
            client.unbind_ide()
            after = until(lambda: "ide" not in (s := statuses(client)) and s)
            assert after == {"mine": "connected"}
        with pytest.raises(ide.NoIdeError, match="no running IDE on port 1"):
            ide.choose(work, options.env, port=1)
    finally:
        ide_server.close()


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_a_sessions_permission_mode_is_shown_and_changed_from_the_page(make_options: OptionsFactory, api: MockMessagesAPI,
                                                                        home: Path) -> None:  # fmt: skip
    """Issue 59, item 2: the page shows each session's permission mode and, with steering,
    changes it; the next tool call follows it; a mode the CLI refuses is an error on the page,
    not a silent no-op; without steering nothing is sent."""
    api.responder = steering_model
    asked: list[str] = []

    def allow(tool_name: str, tool_input: dict[str, Any], context: Any) -> PermissionResultAllow:
        asked.append(tool_input.get("command", ""))
        return PermissionResultAllow()

    work = home / "work"
    with relay.serve(port=0, announce=False, token=TOKEN, steer=False) as served:
        with dial(f"ws://127.0.0.1:{served.port}/events?token={TOKEN}") as page, ClaudeClient(make_options(can_use_tool=allow)) as client:
            client.query("hello")
            list(client.receive_response())
            key = served.hub.running_sessions()[0].key
            listed = frames_until(page, lambda got: got[-1].get("k") == "sessions" and got[-1]["sessions"][-1].get("permission_mode"))
            assert listed[-1]["sessions"][-1]["permission_mode"] == "default"
            page.send(json.dumps({"op": "mode", "session": key, "mode": "dontAsk"}))
            refused = frames_until(page, lambda got: got[-1].get("k") == "done" and got[-1].get("op") == "mode")[-1]
            assert "read-only" in refused["error"]
    with relay.serve(port=0, announce=False, token=TOKEN, steer=True) as served:
        with dial(f"ws://127.0.0.1:{served.port}/events?token={TOKEN}") as page, ClaudeClient(make_options(can_use_tool=allow)) as client:
            client.query("touch first")
            assert [m for m in client.receive_response() if isinstance(m, ResultMessage)][0].result == "touched"
            assert asked == ["touch first.txt"]
            key = served.hub.running_sessions()[0].key
            for forged in ("sudo", "", None, 7):  # not a mode: refused before anything is sent
                page.send(json.dumps({"op": "mode", "session": key, "mode": forged}))
                answer = frames_until(page, lambda got: got[-1].get("k") == "done" and got[-1].get("op") == "mode")[-1]
                assert "not a permission mode" in answer["error"], answer
            page.send(json.dumps({"op": "mode", "session": key, "mode": "dontAsk"}))
            got = frames_until(page, lambda got: got[-1].get("k") == "done" and got[-1].get("op") == "mode")
            assert got[-1]["error"] is None, got[-1]
            # the listing says so (sent before the answer)
            assert [f["sessions"][-1]["permission_mode"] for f in got if f.get("k") == "sessions"][-1:] == ["dontAsk"]
            client.query("touch second")  # dontAsk: not asked, denied
            assert [m for m in client.receive_response() if isinstance(m, ResultMessage)][0].result == "refused"
            assert asked == ["touch first.txt"] and not (work / "second.txt").exists()
            # a mode this CLI cannot take now (it was not launched to skip permissions): the CLI's refusal on the page
            page.send(json.dumps({"op": "mode", "session": key, "mode": "bypassPermissions"}))
            refused = frames_until(page, lambda got: got[-1].get("k") == "done" and got[-1].get("op") == "mode")[-1]
            assert refused["error"] and "the CLI refused" in refused["error"], refused
            assert served.hub.session(key).permission_mode == "dontAsk"  # type: ignore[union-attr]
