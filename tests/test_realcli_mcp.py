"""In-process SDK MCP tools called by the REAL CLI, both transports."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from claude_sdkurl import ClaudeClient, ResultMessage, create_sdk_mcp_server, query, tool
from claude_sdkurl.testing import MockMessagesAPI, text, tool_use

from .conftest import OptionsFactory, with_the_newest_cli

pytestmark = pytest.mark.realcli


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    with_the_newest_cli(metafunc)  # the stdio tests run on the newest CLI (2.1.333) as well

calls: list[Any] = []


@tool("add", "Add two numbers", {"a": float, "b": float})
def add(args: dict[str, Any]) -> dict[str, Any]:
    calls.append(("add", threading.current_thread().name))
    return {"content": [{"type": "text", "text": str(args["a"] + args["b"])}]}


@tool("explode", "Always raises", {"type": "object", "properties": {}})
async def explode(args: dict[str, Any]) -> dict[str, Any]:
    raise ValueError("kaboom")


slow_started, slow_ended = threading.Event(), threading.Event()


@tool("slow", "Takes a while", {"seconds": float})
def slow(args: dict[str, Any]) -> dict[str, Any]:
    slow_started.set()
    time.sleep(args["seconds"])
    slow_ended.set()
    return {"content": [{"type": "text", "text": "finally"}]}


@tool("shout", "Upper-cases", {"s": str})
def shout(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": args["s"].upper()}]}


def _options(make_options: OptionsFactory, **servers: Any) -> Any:
    allowed = [f"mcp__{name}__{t}" for name, cfg in servers.items() for t in cfg["instance"].tools]
    return make_options(mcp_servers=servers, allowed_tools=allowed)


def test_model_calls_sdk_tool(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    calls.clear()
    api.enqueue(tool_use("mcp__calc__add", {"a": 2, "b": 3}))
    messages = list(query("add 2 and 3", _options(make_options, calc=create_sdk_mcp_server("calc", tools=[add]))))
    assert calls and calls[0][0] == "add"
    assert calls[0][1].startswith("claude-sdkurl-callback")  # ran on the worker, not the reader
    # the result reached the model's next request
    sent = api.message_requests()[-1].tool_results()[0]
    assert sent["content"] == [{"type": "text", "text": "5"}]
    assert isinstance(messages[-1], ResultMessage) and messages[-1].subtype == "success"


def test_raising_tool_is_an_error_result(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    api.enqueue(tool_use("mcp__calc__explode", {}))
    messages = list(query("explode", _options(make_options, calc=create_sdk_mcp_server("calc", tools=[explode]))))
    sent = api.message_requests()[-1].tool_results()[0]
    assert sent.get("is_error") is True
    assert "kaboom" in str(sent["content"])
    assert messages[-1].subtype == "success"  # the session went on


def test_slow_tool_does_not_block_the_session(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    slow_started.clear()
    slow_ended.clear()
    api.enqueue(tool_use("mcp__calc__slow", {"seconds": 2}))
    options = _options(make_options, calc=create_sdk_mcp_server("calc", tools=[slow]))
    with ClaudeClient(options) as client:
        client.query("be slow")
        # while the tool sleeps on a worker, control requests still get through
        assert slow_started.wait(30)
        status = client.get_mcp_status()
        assert not slow_ended.is_set()  # answered while the tool was still running
        assert [s["name"] for s in status["mcpServers"]] == ["calc"]
        messages = list(client.receive_response())
    assert api.message_requests()[-1].tool_results()[0]["content"] == [{"type": "text", "text": "finally"}]
    assert messages[-1].subtype == "success"


def test_two_servers(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    api.enqueue(tool_use("mcp__calc__add", {"a": 1.5, "b": 2}), tool_use("mcp__text__shout", {"s": "hey"}), text("both done"))
    options = _options(
        make_options,
        calc=create_sdk_mcp_server("calc", tools=[add]),
        text=create_sdk_mcp_server("text", tools=[shout]),
    )
    messages = list(query("use both", options))
    first, second = api.message_requests()[1:3]
    assert first.tool_results()[0]["content"] == [{"type": "text", "text": "3.5"}]
    assert second.tool_results()[0]["content"] == [{"type": "text", "text": "HEY"}]
    assert messages[-1].result == "both done"


class _HttpMcpServer:
    """An MCP server over streamable HTTP on 127.0.0.1 that answers only a request carrying its
    ``X-Api-Key`` (403 otherwise): it connects only if the server's ``headers`` reached the CLI."""

    def __init__(self, key: str) -> None:
        import json
        import socketserver
        from http.server import BaseHTTPRequestHandler

        keys: list[str | None] = []
        self.keys = keys

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, status: int, body: Any = None) -> None:
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802
                msg = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                keys.append(self.headers.get("X-Api-Key"))
                if self.headers.get("X-Api-Key") != key:
                    return self._answer(403, {"error": "forbidden"})
                if "id" not in msg:
                    return self._answer(202)
                results = {"initialize": {"protocolVersion": msg.get("params", {}).get("protocolVersion", "2025-06-18"),
                                          "capabilities": {"tools": {}}, "serverInfo": {"name": "web", "version": "1"}},
                           "tools/list": {"tools": []}, "ping": {}}  # fmt: skip
                if msg.get("method") in results:
                    return self._answer(200, {"jsonrpc": "2.0", "id": msg["id"], "result": results[msg["method"]]})
                self._answer(200, {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}})

            def do_GET(self) -> None:  # noqa: N802
                self._answer(405)  # no server-sent stream

            def do_DELETE(self) -> None:  # noqa: N802
                self._answer(200)

        # (not http.server's HTTPServer: its bind asks DNS for this host's name, seconds offline)
        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/mcp"
        self._thread = threading.Thread(target=self._server.serve_forever, name="test-http-mcp", daemon=True)

    def __enter__(self) -> _HttpMcpServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)


def _command_lines() -> dict[int, str]:
    """Every process's command line on this machine, as any of its users can read it."""
    import os

    lines = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    lines[int(entry)] = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            except OSError:
                pass
    return lines


def test_external_servers_work_and_their_secrets_stay_off_the_command_line(
    make_options: OptionsFactory, api: MockMessagesAPI, transport: str
) -> None:
    """Issue 72: by default an external server's ``env`` and ``headers`` go in ``initialize``
    (TypeScript 0.3.333's default), so no process on the machine shows them on its command line,
    which every user can read; the servers get them and work. 2.1.120 (WebSocket) cannot read
    them there: it gets them on ``--mcp-config`` as before, and its servers work too."""
    import secrets
    import sys
    from pathlib import Path

    env_secret, header_secret = f"env-{secrets.token_hex(8)}", f"hdr-{secrets.token_hex(8)}"
    script = Path(__file__).parent / "fixtures" / "echo_mcp_server.py"
    api.enqueue(tool_use("mcp__ext__echo", {"text": "hello"}))
    with _HttpMcpServer(header_secret) as web:
        options = make_options(
            mcp_servers={
                "ext": {"type": "stdio", "command": sys.executable, "args": [str(script)], "env": {"ECHO_SUFFIX": env_secret}},
                "web": {"type": "http", "url": web.url, "headers": {"X-Api-Key": header_secret}},
                "calc": create_sdk_mcp_server("calc", tools=[add]),
            },
            allowed_tools=["mcp__ext__echo"],
        )
        with ClaudeClient(options) as client:
            client.query("echo hello")
            messages = list(client.receive_response(timeout=120))
            shown = [(pid, line) for pid, line in _command_lines().items() if env_secret in line or header_secret in line]
    echoed = api.message_requests()[-1].tool_results()[0]["content"]
    assert echoed == [{"type": "text", "text": f"external says hello {env_secret}"}]  # the env reached the server
    init = messages[0]
    assert {s["name"]: s["status"] for s in init.data["mcp_servers"]} == {"ext": "connected", "calc": "connected", "web": "connected"}
    assert header_secret in web.keys  # and the headers
    if transport == "websocket":  # on the command line, as the migration table says
        assert len(shown) == 1 and str(options.cli_path) in shown[0][1] and header_secret in shown[0][1]
    else:
        assert shown == []
