"""Issue 69, item 7: what a newcomer reads. Errors of callbacks logged with their type and
traceback; progress without a terminal as plain lines; money shown rounded; ``--version`` on
every command; one spelling of each flag (``--cli-path``); errors of the command line in its own
words; "Not logged in" naming ``ANTHROPIC_API_KEY``; the standalone relay's help saying how it
differs from ``relay.serve()``. No real CLI: stand-ins where a CLI is needed."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import claude_sdkurl
from claude_sdkurl import ClaudeAgentOptions, ClaudeClient, ResultError, ResultMessage, create_sdk_mcp_server, query, tool
from claude_sdkurl.testing import FakeCLI, MockTransport

PACKAGE = Path(claude_sdkurl.__file__).parent
COMMANDS = sorted("claude_sdkurl" + ("." + ".".join(p.parent.relative_to(PACKAGE).parts) if p.parent != PACKAGE else "")
                  for p in PACKAGE.rglob("__main__.py"))  # fmt: skip


# --------------------------------------------------------------------------- callbacks' errors


def test_an_mcp_tool_that_raises_is_logged_with_its_type_and_traceback(caplog: pytest.LogCaptureFixture) -> None:
    @tool("lookup", "Look a key up", {"key": str})
    def lookup(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": {"a": "1"}[args["key"]]}]}

    server = create_sdk_mcp_server("kv", tools=[lookup])
    with caplog.at_level(logging.WARNING):
        reply = server["instance"].handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                           "params": {"name": "lookup", "arguments": {"key": "b"}}})  # fmt: skip
    assert reply is not None and reply["result"]["isError"] is True  # the model is told, as before
    [record] = [r for r in caplog.records if "raised" in r.getMessage()]
    assert record.getMessage() == "tool lookup raised: KeyError: 'b'"
    assert record.exc_info is not None and record.exc_info[0] is KeyError


def test_a_prompt_stream_that_raises_is_logged_with_its_type_and_traceback(caplog: pytest.LogCaptureFixture) -> None:
    def prompts() -> Any:
        yield {"type": "user", "message": {"role": "user", "content": "hi"}}
        raise LookupError("no more prompts")

    def handler(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "user":
            cli.turn("pong")

    with caplog.at_level(logging.ERROR, logger="claude_sdkurl.client"):
        client = ClaudeClient(transport=MockTransport(handler))
        try:
            client.connect(prompts())
            assert isinstance(list(client.receive_response())[-1], ResultMessage)
        finally:
            client.disconnect()
    [record] = [r for r in caplog.records if "prompt stream failed" in r.getMessage()]
    assert record.getMessage() == "prompt stream failed; closing the CLI's input: LookupError: no more prompts"
    assert record.exc_info is not None and record.exc_info[0] is LookupError


# --------------------------------------------------------------------------- progress in a log file


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _batch_progress(stderr: io.StringIO, monkeypatch: pytest.MonkeyPatch) -> str:
    from claude_sdkurl.batch._item import BatchProgress
    from claude_sdkurl.batch._progress import _reporter

    monkeypatch.setattr(sys, "stderr", stderr)
    report = _reporter(True, 2)
    assert report is not None
    for elapsed, done, running in ((0.0, 0, 2), (1.0, 0, 2), (2.0, 0, 2), (2.5, 1, 1), (3.0, 1, 1), (4.0, 2, 0)):
        report(BatchProgress(done=done, total=2, running=running, failed=0, cost_usd=0.001 * done, elapsed=elapsed))
    return stderr.getvalue()


def test_batch_progress_into_a_log_file_is_plain_lines_one_per_change(monkeypatch: pytest.MonkeyPatch) -> None:
    written = _batch_progress(io.StringIO(), monkeypatch)
    assert "\r" not in written
    assert written.splitlines() == [
        "[..............................] 0/2, 2 running, 0 failed, $0.0000, 0 s",
        "[###############...............] 1/2, 1 running, 0 failed, $0.0010, 2 s",
        "[##############################] 2/2, 0 running, 0 failed, $0.0020, 4 s",
    ]


def test_batch_progress_on_a_terminal_is_one_line_redrawn(monkeypatch: pytest.MonkeyPatch) -> None:
    written = _batch_progress(_Terminal(), monkeypatch)
    assert written.count("\r") == 6 and written.endswith("2/2, 0 running, 0 failed, $0.0020, 4 s\n")


def test_eval_progress_into_a_log_file_is_plain_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    from claude_sdkurl.evals._run import _line

    for stderr, plain in ((io.StringIO(), True), (_Terminal(), False)):
        monkeypatch.setattr(sys, "stderr", stderr)
        _line(1, 2, 1)
        _line(2, 2, 1)
        if plain:
            assert stderr.getvalue().splitlines() == ["evals [###############...............] 1/2 · 1 passed",
                                                      "evals [##############################] 2/2 · 1 passed"]  # fmt: skip
        else:
            assert stderr.getvalue().count("\r") == 2 and "\n" not in stderr.getvalue()


# --------------------------------------------------------------------------- money


def test_the_ledger_shows_money_rounded() -> None:
    """The traces guide's example printed 0.00014000000000000001: sums of the CLI's figures."""
    from claude_sdkurl.ledger import CostLedger

    ledger = CostLedger()
    for run, cost in ((1, 0.1), (2, 0.2)):
        ledger.record(run, ResultMessage(subtype="success", duration_ms=1, duration_api_ms=1, is_error=False, num_turns=1,
                                        session_id=f"s{run}", total_cost_usd=cost,
                                        model_usage={"m": {"costUSD": cost, "inputTokens": 1, "outputTokens": 1}}))  # fmt: skip
    assert 0.1 + 0.2 != 0.3 and repr(ledger.total_cost_usd) == "0.3"
    assert repr(ledger.by_model()["m"]["cost_usd"]) == "0.3"
    ledger.record(1, ResultMessage(subtype="success", duration_ms=1, duration_api_ms=1, is_error=False, num_turns=2,
                                  session_id="s1", total_cost_usd=0.3))  # fmt: skip
    assert [repr(t) for t in ledger.runs[0].turns] == ["0.1", "0.2"]  # 0.3 - 0.1 is 0.19999999999999998


def test_the_ledgers_estimated_shares_show_rounded() -> None:
    """Six calls with a sixth each of $0.10 sum to 0.09999999999999999 unrounded."""
    from claude_sdkurl import AssistantMessage, ToolUseBlock
    from claude_sdkurl.ledger import CostLedger

    ledger = CostLedger()
    for n in range(6):
        ledger.record(1, AssistantMessage(content=[ToolUseBlock(id=f"t{n}", name="Bash", input={})], model="m", message_id=f"msg{n}",
                                          usage={"input_tokens": 1, "output_tokens": 0}))  # fmt: skip
    ledger.record(1, ResultMessage(subtype="success", duration_ms=1, duration_api_ms=1, is_error=False, num_turns=1, session_id="s",
                                   total_cost_usd=0.1, model_usage={"m": {"costUSD": 0.1}}))  # fmt: skip
    assert repr(ledger.by_subagent()["main"]["cost_usd"]) == repr(ledger.by_tool()["Bash"]["cost_usd"]) == "0.1"


# --------------------------------------------------------------------------- the commands


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_says_its_version(command: str) -> None:
    done = subprocess.run([sys.executable, "-m", command, "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"python -m {command} (claude_sdkurl {claude_sdkurl.__version__}, the claude-agent-sdk " \
                          f"{claude_sdkurl._version.OFFICIAL_SDK_VERSION} surface)\n"  # fmt: skip


def test_the_commands_are_the_ones_documented() -> None:
    assert COMMANDS == ["claude_sdkurl", "claude_sdkurl.evals", "claude_sdkurl.host", "claude_sdkurl.port",
                        "claude_sdkurl.relay", "claude_sdkurl.tapes"]  # fmt: skip


def _cli(tmp_path: Path, version: str, refusal: str = "") -> Path:
    """A stand-in for the CLI: its version, and the refusal a CLI after 2.1.120 gives --sdk-url."""
    cli = tmp_path / "claude"
    cli.write_text(f"#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{version} (Claude Code)'; exit 0; fi\n"
                   f"echo '{refusal}' >&2\nexit 1\n")  # fmt: skip
    cli.chmod(0o755)
    return cli


def test_tapes_drift_takes_cli_path_and_still_the_old_cli(tmp_path: Path) -> None:
    from claude_sdkurl.tapes import __main__ as tapes

    seen: list[str] = []
    helps = subprocess.run([sys.executable, "-m", "claude_sdkurl.tapes", "drift", "--help"], capture_output=True, text=True, timeout=60)
    assert "--cli-path CLI_PATH" in helps.stdout and "--cli " not in helps.stdout and "--cli CLI" not in helps.stdout
    original = tapes.drift
    try:
        tapes.drift = lambda path, cli: seen.append(cli) or {"recorded_on": "x", "changed": False, "new_kinds": [], "gone_kinds": [],
                                                             "fields": {}, "control_answers": {}}  # type: ignore[assignment]  # fmt: skip
        assert tapes.main(["drift", "t.jsonl", "--cli-path", "/a/claude"]) == 0
        assert tapes.main(["drift", "t.jsonl", "--cli", "/b/claude"]) == 0
    finally:
        tapes.drift = original
    assert seen == ["/a/claude", "/b/claude"]
    missing = subprocess.run([sys.executable, "-m", "claude_sdkurl.tapes", "drift", "t.jsonl"], capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "the following arguments are required: --cli-path" in missing.stderr


def test_every_command_that_takes_the_cli_spells_it_cli_path() -> None:
    for command in COMMANDS:
        if command == "claude_sdkurl.tapes":
            command_args = ["drift", "--help"]
        else:
            command_args = ["--help"]
        helped = subprocess.run([sys.executable, "-m", command, *command_args], capture_output=True, text=True, timeout=60)
        assert helped.returncode == 0, (command, helped.stderr)
        flags = {word.strip(",[]") for word in helped.stdout.split() if word.startswith("--")}
        assert not any(f.startswith("--cli") and f != "--cli-path" for f in flags), (command, flags)


def test_the_query_commands_errors_speak_of_its_flags(tmp_path: Path) -> None:
    cli = _cli(tmp_path, "2.1.330", "Error: --sdk-url only accepts Anthropic hosts")
    forced = subprocess.run([sys.executable, "-m", "claude_sdkurl", "hi", "--transport", "websocket", "--cli-path", str(cli)],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert forced.returncode == 2
    assert "use --transport stdio or --transport auto" in forced.stderr and "transport='" not in forced.stderr, forced.stderr
    missing = subprocess.run([sys.executable, "-m", "claude_sdkurl", "hi", "--cli-path", str(tmp_path / "nowhere")],
                             capture_output=True, text=True, timeout=120)  # fmt: skip
    assert missing.returncode == 2
    assert missing.stderr == f"error: Claude Code not found at --cli-path: {tmp_path / 'nowhere'}\n"


def test_the_in_command_words_translation() -> None:
    from claude_sdkurl.__main__ import _in_command_words, _parser

    parser = _parser()
    said = _in_command_words("use transport='stdio' or 'auto'; or pass ClaudeAgentOptions(cli_path='/path/to/claude'), "
                             "or set $CLAUDE_SDKURL_CLI; cwd='x' does not exist; max_turns=3; not_a_flag='y'", parser)  # fmt: skip
    assert said == ("use --transport stdio or --transport auto; or pass --cli-path /path/to/claude, or set $CLAUDE_SDKURL_CLI; "
                    "--cwd x does not exist; --max-turns 3; not_a_flag='y'")  # fmt: skip


# --------------------------------------------------------------------------- login, relay


def test_not_logged_in_names_the_api_key() -> None:
    """What 2.1.330 answers with no login and no key (measured): the error says both ways in."""
    error = ResultError.from_result({"type": "result", "subtype": "success", "is_error": True,
                                     "result": "Not logged in · Please run /login"}, exit_code=1)  # fmt: skip
    assert str(error) == ("Claude Code returned an error result: Not logged in · Please run /login (log in by running "
                          "`claude` once, or set ANTHROPIC_API_KEY in the environment or in ClaudeAgentOptions(env=...)) "
                          "(exit code: 1)")  # fmt: skip
    assert error.result == "Not logged in · Please run /login"  # the CLI's words, unchanged
    other = ResultError.from_result({"type": "result", "subtype": "success", "is_error": True, "result": "Overloaded"}, exit_code=1)
    assert "ANTHROPIC_API_KEY" not in str(other)


def test_the_standalone_relays_help_says_how_it_differs_from_serve() -> None:
    helped = subprocess.run([sys.executable, "-m", "claude_sdkurl.relay", "--help"], capture_output=True, text=True, timeout=60)
    text = " ".join(helped.stdout.split())
    assert "relay.serve()" in text and "a CLI you start yourself" in text and "your program's own sessions" in text


def test_query_and_client_still_run_as_before() -> None:
    """(what the changes above must not touch)"""
    messages = list(query("hi", ClaudeAgentOptions(), transport=MockTransport(lambda m, cli: cli.turn("pong") if m["type"] == "user" else None)))
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "pong"
