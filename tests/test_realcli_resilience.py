"""Faults, reconnects and large data on the REAL CLI.

Each fault must end in a typed error or a clean continuation, quickly, with nothing
leaked (the autouse no_leaks fixture checks threads, processes and descriptors).
"""

from __future__ import annotations

import _thread
import base64
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import (
    AssistantMessage,
    ClaudeClient,
    CLIConnectionError,
    PermissionResultAllow,
    ResultError,
    ResultMessage,
    StreamEvent,
    TextBlock,
    ToolPermissionContext,
    UserMessage,
    create_sdk_mcp_server,
    query,
    tool,
)
from claude_sdkurl._engine.transport.websocket import WebSocketTransport
from claude_sdkurl.testing import MockMessagesAPI, Reply, text, tool_use

from .conftest import NEWEST_CLI_VERSION, STDIO_CLI_VERSION, OptionsFactory, child_pids, local_entries

pytestmark = pytest.mark.realcli

SLOW = Reply([{"type": "text", "text": "tick " * 40}], chunk=5, delay=0.05)  # ~2 s of streaming
TOUCH = "touch probe_touched.txt && echo hi"


def _uuids(messages: list[Any]) -> list[str]:
    return [m.uuid for m in messages if getattr(m, "uuid", None)]


def _wait(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.02)


# ---------------------------------------------------------------------- reconnects (WebSocket)


@pytest.mark.parametrize("transport", ["websocket"])
def test_reconnect_between_turns_delivers_each_message_once(
    make_options: OptionsFactory, api: MockMessagesAPI, transport: str
) -> None:
    with ClaudeClient(make_options()) as client:
        ws = client.session._transport
        assert isinstance(ws, WebSocketTransport)
        client.query("one")
        messages = list(client.receive_response())
        ws.drop_connection(1011)
        _wait(lambda: ws.connections == 2)
        client.query("two")
        messages += list(client.receive_response())
        # the CLI replayed turn one on the new connection; none of it came through twice
        _wait(lambda: client.session._protocol.duplicates >= 3)
        assert len(_uuids(messages)) == len(set(_uuids(messages)))
        assert [m.result for m in messages if isinstance(m, ResultMessage)] == ["pong", "pong"]


@pytest.mark.parametrize("transport", ["websocket"])
def test_drop_mid_turn_loses_nothing(make_options: OptionsFactory, api: MockMessagesAPI, transport: str) -> None:
    api.enqueue(SLOW)
    with ClaudeClient(make_options(include_partial_messages=True)) as client:
        ws = client.session._transport
        client.query("talk")
        messages = []
        for message in client.receive_response():
            messages.append(message)
            if len(messages) == 6:
                ws.drop_connection(1011)
        assert ws.connections == 2
        assert len(_uuids(messages)) == len(set(_uuids(messages)))
        assistant = [m for m in messages if isinstance(m, AssistantMessage)]
        assert assistant[-1].content == [TextBlock("tick " * 40)]
        deltas = "".join(
            m.event["delta"]["text"]
            for m in messages
            if isinstance(m, StreamEvent) and m.event["type"] == "content_block_delta"
        )
        assert deltas == "tick " * 40  # every streamed delta arrived, once
        assert messages[-1].subtype == "success"


@pytest.mark.parametrize("transport", ["websocket"])
def test_answer_sent_during_a_drop_reaches_the_cli(
    make_options: OptionsFactory, api: MockMessagesAPI, home: Path, transport: str
) -> None:
    api.enqueue(tool_use("Bash", {"command": TOUCH, "description": "touch"}))
    holder: dict[str, Any] = {}

    def allow_after_drop(name: str, tool_input: dict[str, Any], ctx: ToolPermissionContext) -> PermissionResultAllow:
        ws = holder["ws"]
        ws.drop_connection(1011)
        time.sleep(0.1)  # answer while the CLI is away: the line waits for the reconnect
        return PermissionResultAllow()

    with ClaudeClient(make_options(can_use_tool=allow_after_drop)) as client:
        holder["ws"] = client.session._transport
        client.query("touch it")
        messages = list(client.receive_response())
    assert (home / "work" / "probe_touched.txt").exists()
    assert messages[-1].subtype == "success"
    assert api.message_requests()[-1].tool_results()[0]["content"] == "hi"


@pytest.mark.parametrize("transport", ["websocket"])
def test_second_connection_refused_while_first_alive(make_options: OptionsFactory, transport: str) -> None:
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    with ClaudeClient(make_options()) as client:
        ws = client.session._transport
        with pytest.raises(InvalidStatus) as info:
            with connect(ws.url, additional_headers={"Authorization": f"Bearer {ws._token}"}, open_timeout=5):
                pass
        assert info.value.response.status_code == 409
        client.query("still mine?")
        assert list(client.receive_response())[-1].result == "pong"
        assert ws.connections == 1


@pytest.mark.parametrize("transport", ["websocket"])
def test_cli_refused_at_upgrade_fails_fast(
    make_options: OptionsFactory, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    original = WebSocketTransport.__init__

    def wrong_token(self: WebSocketTransport, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self._expected_auth = b"Bearer not-what-the-cli-has"

    monkeypatch.setattr(WebSocketTransport, "__init__", wrong_token)
    started = time.monotonic()
    with pytest.raises(CLIConnectionError, match="before connecting"):
        list(query("hi", make_options()))
    assert time.monotonic() - started < 5  # the CLI exits at once on a refused upgrade


# ---------------------------------------------------------------------- callbacks


def test_hanging_callback_times_out(make_options: OptionsFactory, api: MockMessagesAPI, home: Path) -> None:
    api.enqueue(tool_use("Bash", {"command": TOUCH, "description": "touch"}))
    release = threading.Event()

    def hang(*args: Any) -> PermissionResultAllow:
        release.wait(30)
        return PermissionResultAllow()

    started = time.monotonic()
    try:
        messages = list(query("touch it", make_options(can_use_tool=hang, callback_timeout=1.0)))
    finally:
        release.set()
    assert time.monotonic() - started < 8
    sent = api.message_requests()[-1].tool_results()[0]
    assert sent["is_error"] is True and "did not answer within 1 s" in str(sent["content"])
    assert not (home / "work" / "probe_touched.txt").exists()
    assert messages[-1].subtype == "success"


# ---------------------------------------------------------------------- Ctrl-C


def _conversation(options: Any, session_id: str) -> list[tuple[str, str]]:
    """(type, text) of each user/assistant entry of the session's transcript."""
    out = []
    for e in local_entries(options, session_id):
        if e.get("type") in ("user", "assistant"):
            content = e["message"]["content"]
            out.append((e["type"], content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)))
    return out


# The stop mid-turn of a query() depends on how each CLI takes SIGINT: run it on every CLI.
_ON_EVERY_CLI = pytest.mark.parametrize(
    ("transport", "stdio_cli_version"),
    [("websocket", STDIO_CLI_VERSION), ("stdio", STDIO_CLI_VERSION), ("stdio", NEWEST_CLI_VERSION)],
    ids=["websocket", "stdio", f"stdio-{NEWEST_CLI_VERSION}"],
)


def _interrupt_calls(transport: str) -> list[tuple[str, str]]:
    """The control requests a stop mid-turn sends: an ``interrupt`` over WebSocket, whose input
    stays open; none on stdio, whose input is closed after the prompt as the official SDK's is
    (the CLI gets SIGINT, what Ctrl-C in its terminal sends)."""
    return [("initialize", "answered")] + ([("interrupt", "answered")] if transport == "websocket" else [])


def _assert_stopped_politely(options: Any, seen: list[Any]) -> None:
    """The interrupt reached the CLI, which ended the turn itself before it was stopped: its
    transcript (what a later ``resume`` sees) keeps the partial answer and the interruption.
    A CLI stopped by SIGTERM instead (what a close gives a CLI whose input is closed, as on
    stdio after the prompt) leaves only the prompt there (measured)."""
    session_id = next(m.data["session_id"] for m in seen if getattr(m, "subtype", None) == "init")
    entries = _conversation(options, session_id)
    assert entries[0] == ("user", "talk")
    assert entries[1][0] == "assistant" and entries[1][1].startswith("tick"), entries
    assert entries[2] == ("user", "[Request interrupted by user]"), entries


@_ON_EVERY_CLI
def test_keyboard_interrupt_in_query_sends_interrupt_then_stops(
    make_options: OptionsFactory, api: MockMessagesAPI, control_calls: list[tuple[str, str]], ctrl_c: None, transport: str
) -> None:
    api.enqueue(SLOW)
    started = time.monotonic()
    timer = threading.Timer(0.2, _thread.interrupt_main)  # what Ctrl-C does
    options = make_options(include_partial_messages=True)
    seen: list[Any] = []
    with pytest.raises(KeyboardInterrupt):
        for message in query("talk", options):
            seen.append(message)
            if isinstance(message, StreamEvent) and message.event["type"] == "content_block_delta":
                if not timer.is_alive() and not timer.finished.is_set():
                    timer.start()
    timer.join()
    assert time.monotonic() - started < 5
    assert control_calls == _interrupt_calls(transport)
    _wait(lambda: not child_pids(), 3)
    _assert_stopped_politely(options, seen)


@_ON_EVERY_CLI
def test_breaking_out_mid_turn_interrupts_then_stops(
    make_options: OptionsFactory, api: MockMessagesAPI, control_calls: list[tuple[str, str]], transport: str
) -> None:
    api.enqueue(SLOW)
    started = time.monotonic()
    options = make_options(include_partial_messages=True)
    seen: list[Any] = []
    for message in query("talk", options):
        seen.append(message)
        if isinstance(message, StreamEvent) and message.event["type"] == "content_block_delta":
            break
    assert time.monotonic() - started < 5
    assert control_calls == _interrupt_calls(transport)
    assert child_pids() == []  # stopped by the time the loop is left
    _assert_stopped_politely(options, seen)


def test_keyboard_interrupt_leaves_client_usable(make_options: OptionsFactory, api: MockMessagesAPI, ctrl_c: None) -> None:
    api.enqueue(SLOW, text("fresh turn"))
    with ClaudeClient(make_options(include_partial_messages=True)) as client:
        client.query("talk")
        timer = threading.Timer(0.5, _thread.interrupt_main)
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            for _ in client.receive_response():
                pass
        timer.join()
        client.query("again")
        results = [m for m in client.receive_response() if isinstance(m, ResultMessage)]
        assert [r.result for r in results] == ["fresh turn"]


# ---------------------------------------------------------------------- process lifetime


def test_interpreter_exit_with_live_client_stops_the_cli(make_options: OptionsFactory, tmp_path: Path) -> None:
    options = make_options()
    script = tmp_path / "leaky.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import os, sys
            from claude_sdkurl import ClaudeClient, ClaudeAgentOptions
            client = ClaudeClient(ClaudeAgentOptions(cli_path={options.cli_path!r}, env={options.env!r},
                                                     cwd={options.cwd!r}, transport={options.transport!r}))
            client.connect()
            print(client.session._transport.process.pid, flush=True)
            # no disconnect(): the interpreter just exits
            """
        )
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    pid = int(out.stdout.split()[0])
    with pytest.raises(ProcessLookupError):
        import os

        os.kill(pid, 0)


# ---------------------------------------------------------------------- leaks under load


def test_sequential_queries_leak_nothing(make_options: OptionsFactory, transport: str) -> None:
    """60 queries one after another over stdio, 40 over the WebSocket (100 each took 143 s of a
    loaded run, issue 58; a leak of one a query shows in either): no thread, descriptor or
    process left."""
    import gc
    import os

    options = make_options()
    list(query("warm up", options))
    gc.collect()
    threads, fds = set(threading.enumerate()), len(os.listdir("/proc/self/fd"))
    for i in range(60 if transport == "stdio" else 40):
        result = list(query(f"q{i}", options))[-1]
        assert isinstance(result, ResultMessage) and result.result == "pong"
    gc.collect()
    # none left that was not there before (one of the warm-up's still ending then may be gone:
    # under two CPU burners the count fell from 4 to 3, which is no leak). The mock API's thread
    # that served the last CLI's connection ends when it sees that connection closed: a moment
    # after the CLI, on a loaded machine (CI saw one); a leak stays past the 10 s given here
    deadline = time.monotonic() + 10
    while ([t for t in threading.enumerate() if t not in threads] or len(os.listdir("/proc/self/fd")) > fds) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [t.name for t in threading.enumerate() if t not in threads] == []
    assert len(os.listdir("/proc/self/fd")) <= fds
    assert child_pids() == []


def test_8_concurrent_clients_in_threads(make_options: OptionsFactory) -> None:
    options = make_options()
    results: dict[int, list[str]] = {}
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            with ClaudeClient(options) as client:
                got = []
                for turn in range(2):
                    client.query(f"client {n} turn {turn}")
                    got += [m.result for m in client.receive_response() if isinstance(m, ResultMessage)]
                results[n] = got
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    assert results == {n: ["pong", "pong"] for n in range(8)}


# ---------------------------------------------------------------------- large data


def test_50_mib_each_way(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    size = 50 * 1024 * 1024
    # host -> CLI: the CLI parses a 50 MiB prompt whole; with --replay-user-messages it echoes
    # back exactly what it read (what it then does with a prompt that size is its own business)
    big_in = ("ZYXWVUTSRQPONMLK" * (size // 16))[:size]
    echoed = []
    try:
        for m in query(big_in, make_options(extra_args={"replay-user-messages": None})):
            if isinstance(m, UserMessage) and m.content == big_in:
                echoed.append(m)
    except ResultError as e:  # 2.1.330 refuses a prompt that size after reading it whole; 2.1.120 compacts it
        assert "Prompt is too long" in str(e)
    assert len(echoed) == 1
    # CLI -> host: a 50 MiB assistant message arrives whole
    big_out = ("abcdefghijklmnop" * (size // 16))[:size]
    api.enqueue(Reply([{"type": "text", "text": big_out}], chunk=4 * 1024 * 1024))
    messages = list(query("send it back", make_options()))
    assistant = next(m for m in messages if isinstance(m, AssistantMessage))
    assert assistant.content[0].text == big_out
    assert messages[-1].result == big_out


@tool("screenshot", "Returns an image", {})
def screenshot(args: dict[str, Any]) -> dict[str, Any]:
    # a 3 MB "PNG" (4 MB of base64): the API's image limit is 5 MB, which the CLI enforces
    data = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(3_000_000)).decode()
    return {"content": [{"type": "image", "data": data, "mimeType": "image/png"}]}


def test_image_sized_tool_result(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    api.enqueue(tool_use("mcp__media__screenshot", {}))
    options = make_options(
        mcp_servers={"media": create_sdk_mcp_server("media", tools=[screenshot])},
        allowed_tools=["mcp__media__screenshot"],
    )
    messages = list(query("take a screenshot", options))
    sent = api.message_requests()[-1].tool_results()[0]
    images = [b for b in sent["content"] if b.get("type") == "image"]
    assert images and len(images[0]["source"]["data"]) == len(screenshot.handler({})["content"][0]["data"])
    assert messages[-1].subtype == "success"


def test_stopped_cli_blocks_no_public_call(make_options: OptionsFactory, transport: str) -> None:
    """Regression (both transports): with the CLI stopped, a large query() blocked in its write
    holding the lock interrupt() and disconnect() needed; all three hung until the CLI was killed."""
    import signal as _signal

    from claude_sdkurl import ControlRequestTimeoutError

    from .conftest import cli_pid

    client = ClaudeClient(make_options(control_timeout=1.0))
    client.connect()
    pid = cli_pid()
    os.kill(pid, _signal.SIGSTOP)
    # The bug hung each call until the CLI was killed (for ever); the bounds are for a machine at
    # load 20 and more (1.06 s was seen for the query under two burners and a parallel run, with
    # 1.0 allowed), and the times are printed.
    try:
        t0 = time.monotonic()
        client.query("x" * (20 * 1024 * 1024))  # far more than a pipe or a socket buffer holds
        queried = time.monotonic() - t0
        with pytest.raises(ControlRequestTimeoutError):
            client.interrupt()
        interrupted = time.monotonic() - t0
        t1 = time.monotonic()
        client.disconnect()  # SIGKILL at once for a stopped CLI
        disconnected = time.monotonic() - t1
        print(f"query {queried:.2f} s, interrupt's timeout by {interrupted:.2f} s, disconnect {disconnected:.2f} s")
        assert queried < 10.0 and interrupted < 15.0 and disconnected < 10.0
    finally:
        try:
            os.kill(pid, _signal.SIGKILL)
        except ProcessLookupError:
            pass
        client.disconnect()  # (a failing run: its threads end here, not in the next test)
