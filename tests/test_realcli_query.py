"""query() end to end on the REAL Claude Code CLI, through both transports.

``transport`` is parametrised: "websocket" runs CLI 2.1.120 over --sdk-url,
"stdio" runs the pinned current CLI over its pipes. Nothing here is mocked but
the Anthropic API (the project's MockMessagesAPI).
"""

from __future__ import annotations

import json
import os
import signal
import stat
import time
from pathlib import Path

import pytest

from claude_sdkurl import (
    AssistantMessage,
    CLIJSONDecodeError,
    CLINotFoundError,
    ProcessError,
    ReceiveTimeoutError,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    query,
)
from claude_sdkurl.testing import MockMessagesAPI, Reply, text, tool_use

from .conftest import kill_cli, local_entries, OptionsFactory, with_the_newest_cli

pytestmark = pytest.mark.realcli


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    with_the_newest_cli(metafunc)  # the stdio tests run on the newest CLI (2.1.333) as well


def test_text_turn(make_options: OptionsFactory, api: MockMessagesAPI, transport: str) -> None:
    api.enqueue(text("hello from the mock"))
    messages = list(query("hello", make_options()))
    kinds = [type(m).__name__ for m in messages]
    assert kinds == ["SystemMessage", "AssistantMessage", "ResultMessage"], kinds
    init, assistant, result = messages
    assert isinstance(init, SystemMessage) and init.subtype == "init"
    assert init.data["session_id"] == result.session_id
    assert isinstance(assistant, AssistantMessage)
    assert assistant.content == [TextBlock("hello from the mock")]
    assert assistant.raw["type"] == "assistant"
    # the mock saw exactly the prompt we sent
    [request] = api.message_requests()
    assert request.last_user_text() == "hello"
    assert request.body["stream"] is True


def test_result_fields(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    api.enqueue(text("forty-two", delay=0.4, chunk=5))  # two deltas: the model call takes >= 0.8 s
    started = time.monotonic()
    result = list(query("what is the answer?", make_options()))[-1]
    wall_ms = (time.monotonic() - started) * 1000
    assert isinstance(result, ResultMessage)
    assert result.subtype == "success"
    assert result.is_error is False
    assert result.num_turns == 1
    assert result.result == "forty-two"
    assert result.stop_reason == "end_turn"
    assert isinstance(result.duration_ms, int) and isinstance(result.duration_api_ms, int)
    assert 800 <= result.duration_api_ms <= result.duration_ms <= wall_ms
    assert isinstance(result.total_cost_usd, float) and result.total_cost_usd > 0
    assert result.usage is not None and result.usage["input_tokens"] == 10
    assert result.model_usage and all("costUSD" in v for v in result.model_usage.values())
    assert result.permission_denials == []
    assert result.uuid


def test_streaming_events(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    words = "the quick brown fox jumps over the lazy dog"
    api.enqueue(Reply([{"type": "text", "text": words}], chunk=4))
    messages = list(query("stream please", make_options(include_partial_messages=True)))
    events = [m for m in messages if isinstance(m, StreamEvent)]
    kinds = [e.event["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    deltas = [e.event["delta"]["text"] for e in events if e.event["type"] == "content_block_delta"]
    assert len(deltas) == len(range(0, len(words), 4))
    assert "".join(deltas) == words
    assert all(e.session_id and e.uuid for e in events)
    # the assembled assistant message arrives too, before the stream finishes
    assistant = next(m for m in messages if isinstance(m, AssistantMessage))
    assert assistant.content == [TextBlock(words)]
    assert isinstance(messages[-1], ResultMessage)


def test_two_turn_prompt_iterable(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    api.enqueue(text("first answer"), text("second answer"))

    def prompts():
        yield {"type": "user", "message": {"role": "user", "content": "first question"}}
        yield {"type": "user", "message": {"role": "user", "content": "second question"}}

    messages = list(query(prompts(), make_options()))
    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert [r.result for r in results] == ["first answer", "second answer"]
    assert results[0].session_id == results[1].session_id
    first, second = api.message_requests()
    assert first.last_user_text() == "first question"
    # the second request carries the whole conversation so far
    texts = [m for m in second.messages() if m["role"] == "assistant"]
    assert texts and second.last_user_text() == "second question"


def test_breaking_out_early_stops_the_cli(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    api.enqueue(Reply([{"type": "text", "text": "x" * 400}], chunk=10, delay=0.05))
    it = query("long answer", make_options(include_partial_messages=True))
    for message in it:
        if isinstance(message, StreamEvent):
            break
    it.close()  # what a `break` in a for loop plus garbage collection amounts to
    # the no_leaks fixture asserts the CLI process and every thread are gone


def test_cli_missing(tmp_path: Path) -> None:
    from claude_sdkurl import ClaudeAgentOptions

    with pytest.raises(CLINotFoundError) as info:
        list(query("hi", ClaudeAgentOptions(cli_path=str(tmp_path / "no-such-claude"))))
    assert "no-such-claude" in str(info.value)


def test_cli_crash_mid_turn(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    # The model's reply makes the real CLI crash (SIGSEGV: Bun prints a crash report).
    api.enqueue(Reply([{"type": "text", "text": "never"}], on_start=lambda: kill_cli(signal.SIGSEGV)))
    started = time.monotonic()
    seen = []
    with pytest.raises(ProcessError) as info:
        for message in query("crash please", make_options()):
            seen.append(message)
    assert time.monotonic() - started < 20
    err = info.value
    assert err.exit_code is not None and err.exit_code < 0  # died of a signal (Bun re-raises after its report)
    assert err.stderr and "Segmentation fault" in err.stderr
    assert any(isinstance(m, SystemMessage) for m in seen)  # what came before the crash was delivered


@pytest.mark.parametrize("with_callback", [True, False])
def test_process_error_carries_the_cli_stderr_with_or_without_a_callback(
    make_options: OptionsFactory, with_callback: bool, capfd: pytest.CaptureFixture[str]
) -> None:
    """The CLI refuses a settings file that does not exist and exits 1: ``ProcessError.stderr``
    holds its words either way; a ``stderr`` callback gets them too, and then they are not
    passed on to our standard error (without one they are, as an inherited stderr would)."""
    lines: list[str] = []
    options = make_options(settings="/nonexistent/settings.json", **({"stderr": lines.append} if with_callback else {}))
    with pytest.raises(ProcessError) as info:
        list(query("hi", options))
    assert info.value.exit_code == 1
    assert "Settings file not found: /nonexistent/settings.json" in (info.value.stderr or "")
    passed_on = capfd.readouterr().err
    if with_callback:
        assert any("Settings file not found" in line for line in lines)
        assert "Settings file not found" not in passed_on
    else:
        assert "Settings file not found" in passed_on


def test_large_assistant_message(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    size = 20 * 1024 * 1024
    big = ("0123456789abcdef" * (size // 16))[:size]
    api.enqueue(Reply([{"type": "text", "text": big}], chunk=1024 * 1024))
    messages = list(query("send me 20 MiB", make_options()))
    assistant = next(m for m in messages if isinstance(m, AssistantMessage))
    assert isinstance(assistant.content[0], TextBlock)
    assert len(assistant.content[0].text) == size
    assert assistant.content[0].text == big
    assert messages[-1].result == big


def _wrapper(tmp_path: Path, body: str) -> str:
    script = tmp_path / "claude-wrapper"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_max_buffer_size_bounds_what_the_cli_sends(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    """A message larger than ``max_buffer_size`` is a typed error, at once; the same message
    under a larger bound goes through."""
    api.enqueue(text("x" * 300_000), text("x" * 300_000))
    with pytest.raises(CLIJSONDecodeError, match="exceeded maximum buffer size of 65536 bytes"):  # as the official SDK says
        list(query("big", make_options(max_buffer_size=64 * 1024), timeout=30))
    messages = list(query("big", make_options(max_buffer_size=1024 * 1024), timeout=30))
    assert isinstance(messages[-1], ResultMessage) and len(messages[-1].result or "") == 300_000


@pytest.mark.parametrize("transport", ["stdio"])
def test_malformed_line_mid_turn(
    make_options: OptionsFactory, api: MockMessagesAPI, cli_paths: dict, tmp_path: Path, transport: str
) -> None:
    # The real CLI's stdout passes through a filter that corrupts the stream just before the
    # assistant message: the SDK must raise CLIJSONDecodeError, stop everything, and not hang.
    real = cli_paths["stdio"]
    wrapper = _wrapper(tmp_path, f'"{real}" "$@" | sed -u \'/"type":"assistant"/i {{"type": broken\'\n')
    started = time.monotonic()
    seen = []
    with pytest.raises(CLIJSONDecodeError) as info:
        for message in query("hello", make_options(cli_path=wrapper)):
            seen.append(message)
    assert time.monotonic() - started < 20
    assert "broken" in info.value.line
    assert [type(m).__name__ for m in seen] == ["SystemMessage"]
    assert os.path.exists(wrapper)


@pytest.mark.realcli
def test_an_unknown_resume_id_is_a_result_error_on_both_transports(make_options: OptionsFactory, transport: str) -> None:
    """An unknown ``resume`` id: the CLI exits before the session starts. Over stdio it says so
    in an error result, a ``ResultError`` (as in the official SDK); 2.1.120 says it on stderr
    before it would connect to the WebSocket, which was an ``ExitedBeforeConnectingError`` that
    ``except ResultError`` missed (issue 72): now a ``ResultError`` with the same fields, and
    still what it was (a ``ProcessError`` and a ``CLIConnectionError``)."""
    from claude_sdkurl import CLIConnectionError, ResultError
    from claude_sdkurl._errors import ExitedBeforeConnectingError

    unknown = "0f0e0d0c-0000-4000-8000-00000000dead"
    with pytest.raises(ResultError) as failed:
        list(query("hi", make_options(resume=unknown)))
    error = failed.value
    assert error.exit_code not in (0, None) and isinstance(error, ProcessError)
    assert (error.subtype, error.errors, error.session_id) == ("error_during_execution", [f"No conversation found with session ID: {unknown}"], unknown)
    assert str(error).startswith(f"Claude Code returned an error result: No conversation found with session ID: {unknown}")
    assert isinstance(error, (ExitedBeforeConnectingError, CLIConnectionError)) is (transport == "websocket")


@pytest.mark.realcli
@pytest.mark.parametrize("transport", ["stdio"])
def test_connecting_again_starts_a_new_cli_and_stops_the_old(make_options: OptionsFactory, api: MockMessagesAPI, transport: str) -> None:
    """As the official client, a second connect() works; unlike it, the first CLI is stopped."""
    from claude_sdkurl import ClaudeClient

    from .conftest import child_pids

    client = ClaudeClient(make_options())
    client.connect()
    first = set(child_pids())
    client.connect()
    client.query("again")
    assert isinstance(list(client.receive_response())[-1], ResultMessage)
    assert not first & set(child_pids())  # the first CLI is gone
    client.disconnect()


def test_query_timeout_is_honoured_with_a_tool_running(make_options: OptionsFactory, api: MockMessagesAPI, transport: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    # Issue 19: the timeout, not the CLI's own exit, bounds the call. With a Bash tool running,
    # 2.1.330 takes about 1.4 s to exit after stdin's EOF (4.4 s for timeout=3 before);
    # answered the interrupt, it is now stopped at once, its transcript already written. The
    # cause is asserted (the session closed with abort, after the interrupt), the time only
    # bounded: under load the quiet machine's 3.2 s was 3.9-4.2 s.
    from claude_sdkurl._engine.session import Session

    closes: list[bool] = []
    close = Session.close

    def recorded(self: Session, abort: bool = False) -> None:
        closes.append(abort)
        close(self, abort)

    monkeypatch.setattr(Session, "close", recorded)
    api.enqueue(tool_use("Bash", {"command": "python3 -c 'import time; time.sleep(30)'"}), text("never"))
    options = make_options(allowed_tools=["Bash"])
    began = time.monotonic()
    seen = []
    with pytest.raises(ReceiveTimeoutError):
        for m in query("run it", options, timeout=3):
            seen.append(m)
    took = time.monotonic() - began
    print(f"the call ended {took:.2f} s after it began (timeout=3)")
    assert 3.0 <= took < 20  # not before the timeout; never the tool's 30 s
    assert closes[:1] == [True], closes  # stopped at once, not given the exit grace
    if transport == "stdio":  # over --sdk-url 2.1.120 writes the interruption to no transcript
        entries = local_entries(options, seen[0].data["session_id"])
        said = [json.dumps(e["message"]["content"]) for e in entries if e.get("type") == "user"]
        assert "[Request interrupted by user" in said[-1]
