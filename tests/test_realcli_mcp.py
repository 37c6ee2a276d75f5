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


def test_external_stdio_server_passes_through(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    import sys
    from pathlib import Path

    script = Path(__file__).parent / "fixtures" / "echo_mcp_server.py"
    api.enqueue(tool_use("mcp__ext__echo", {"text": "hello"}))
    options = make_options(
        mcp_servers={
            "ext": {"type": "stdio", "command": sys.executable, "args": [str(script)]},
            "calc": create_sdk_mcp_server("calc", tools=[add]),
        },
        allowed_tools=["mcp__ext__echo"],
    )
    messages = list(query("echo hello", options))
    assert api.message_requests()[-1].tool_results()[0]["content"] == [{"type": "text", "text": "external says hello"}]
    init = messages[0]
    assert {s["name"]: s["status"] for s in init.data["mcp_servers"]} == {"ext": "connected", "calc": "connected"}
