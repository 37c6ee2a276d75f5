"""Where an external MCP server's ``env`` and ``headers`` go (issue 72), the hostile cases first.

By default, as in the TypeScript SDK 0.3.333, in ``initialize``: off the CLI's command line
(``/proc/<pid>/cmdline``, readable by every user of the machine), on every CLI that reads them
there (2.1.326 and later over stdio); on the command line only where the CLI cannot read them
(2.1.120, the WebSocket CLI) or when asked (``mcp_servers_delivery="argv"``). A CLI that does
not say it took them ends the session; and what now travels in ``initialize`` reaches no one
who watches the wire: the relay's frontends, a tape on disk. Stand-in CLIs here (a script that
prints a version); the real CLIs' command lines are read in ``tests/test_realcli_mcp.py``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import CLIConnectionError, ClaudeAgentOptions, ResultMessage, UnsupportedOptionError, query
from claude_sdkurl._engine.launch import plan_launch
from claude_sdkurl.mcp import create_sdk_mcp_server
from claude_sdkurl.tapes._scrub import Scrubber
from claude_sdkurl.testing import FakeCLI, MockTransport

ENV_SECRET = "env-s3cret-Zq81vX"
HEADER_SECRET = "hdr-s3cret-Lp02wY"
SHORT_SECRET = "Qx7"  # too short for any scrub by value: only where it stands can take it out
SECRETS = (ENV_SECRET, HEADER_SECRET, SHORT_SECRET)


def servers() -> dict[str, Any]:
    return {
        "db": {"type": "stdio", "command": "db-mcp", "args": ["--ro"], "env": {"DB_PASS": ENV_SECRET, "PIN": SHORT_SECRET}},
        "web": {"type": "http", "url": "https://mcp.example/x", "headers": {"X-Api-Key": HEADER_SECRET}},
        "calc": create_sdk_mcp_server("calc", tools=[]),
    }


def stand_in(tmp_path: Path, version: str) -> Path:
    cli = tmp_path / f"claude-{version}"
    cli.write_text(f"#!/bin/sh\necho '{version} (Claude Code)'\n")
    cli.chmod(0o755)
    return cli


def leaked(args: list[str]) -> list[str]:
    return [a for a in args if any(s in a for s in SECRETS)]


def mcp_config(args: list[str]) -> dict[str, Any]:
    return json.loads(args[args.index("--mcp-config") + 1])["mcpServers"]  # type: ignore[no-any-return]


def external() -> dict[str, Any]:
    return {name: config for name, config in servers().items() if name != "calc"}


# ---------------------------------------------------------------- where they go


@pytest.mark.parametrize("version", ["2.1.326", "2.1.330", "2.1.333"])
def test_by_default_a_cli_that_reads_them_in_initialize_gets_none_on_its_command_line(tmp_path: Path, version: str) -> None:
    plan = plan_launch(ClaudeAgentOptions(cli_path=stand_in(tmp_path, version), mcp_servers=servers()))
    assert plan.transport == "stdio" and plan.options.mcp_servers_delivery == "initialize"
    assert leaked(plan.args) == [] and "--await-initialize" in plan.args
    assert mcp_config(plan.args) == {"calc": {"type": "sdk", "name": "calc"}}  # the in-process one stays (TypeScript's split)
    assert plan.initialize["mcpServers"] == external()


def test_a_cli_that_cannot_read_them_there_gets_them_on_its_command_line_as_before(tmp_path: Path) -> None:
    """2.1.120 knows no ``--await-initialize`` (measured); TypeScript 0.3.333 names 2.1.326 as
    the oldest that reads them. The servers must still work there: on ``--mcp-config``."""
    for version, transport, wire in (("2.1.120", "auto", "websocket"), ("2.1.120", "stdio", "stdio"),
                                     ("2.1.325", "stdio", "stdio")):  # fmt: skip
        plan = plan_launch(ClaudeAgentOptions(cli_path=stand_in(tmp_path, version), mcp_servers=servers(), transport=transport))
        assert plan.transport == wire and plan.options.mcp_servers_delivery == "argv", version
        assert mcp_config(plan.args) == {**external(), "calc": {"type": "sdk", "name": "calc"}}
        assert "--await-initialize" not in plan.args and "mcpServers" not in plan.initialize


def test_asking_for_initialize_of_a_cli_that_cannot_read_it_is_refused(tmp_path: Path) -> None:
    for version, transport in (("2.1.120", "auto"), ("2.1.120", "stdio"), ("2.1.325", "stdio"), ("2.1.330", "websocket")):
        options = ClaudeAgentOptions(cli_path=stand_in(tmp_path, version), mcp_servers=servers(), transport=transport,
                                     mcp_servers_delivery="initialize")  # fmt: skip
        with pytest.raises(UnsupportedOptionError, match="mcp_servers_delivery='initialize' needs"):
            plan_launch(options)
    assert plan_launch(ClaudeAgentOptions(cli_path=stand_in(tmp_path, "2.1.326"), mcp_servers=servers(),
                                          mcp_servers_delivery="initialize")).initialize["mcpServers"] == external()  # fmt: skip


def test_argv_is_still_there_when_asked(tmp_path: Path) -> None:
    plan = plan_launch(ClaudeAgentOptions(cli_path=stand_in(tmp_path, "2.1.333"), mcp_servers=servers(), mcp_servers_delivery="argv"))
    assert mcp_config(plan.args)["db"]["env"]["DB_PASS"] == ENV_SECRET
    assert "--await-initialize" not in plan.args and "mcpServers" not in plan.initialize


def test_a_cli_started_elsewhere_gets_them_in_initialize(tmp_path: Path) -> None:
    """Its version is not known here; TypeScript sends them in ``initialize`` to such a CLI too.
    With a command prefix the argv is on two command lines (``ssh``'s here, the CLI's there)."""
    plan = plan_launch(ClaudeAgentOptions(mcp_servers=servers(), spawn_claude_code_process=["ssh", "box", "--"]))
    assert plan.cli_version is None and leaked(plan.args) == [] and plan.initialize["mcpServers"] == external()


class _HereSpawner:
    """A spawner that starts the CLI on this machine (as the session host's does): not called here."""

    runs_here = True

    def __call__(self, spawn: Any) -> Any:
        raise AssertionError("only planned")


def test_a_cli_a_spawner_starts_here_is_asked_its_version(tmp_path: Path) -> None:
    for version, where in (("2.1.120", "argv"), ("2.1.330", "initialize")):
        options = ClaudeAgentOptions(cli_path=stand_in(tmp_path, version), mcp_servers=servers(), spawn_claude_code_process=_HereSpawner())
        plan = plan_launch(options)
        assert plan.transport == "stdio" and plan.options.mcp_servers_delivery == where, version


def test_nothing_changes_without_an_external_server_or_with_a_transport_of_the_callers(tmp_path: Path) -> None:
    sdk_only = ClaudeAgentOptions(cli_path=stand_in(tmp_path, "2.1.330"), mcp_servers={"calc": servers()["calc"]})
    plan = plan_launch(sdk_only)
    assert plan.options is sdk_only and "--await-initialize" not in plan.args and "mcpServers" not in plan.initialize
    path = plan_launch(ClaudeAgentOptions(cli_path=stand_in(tmp_path, "2.1.330"), mcp_servers="/etc/mcp.json"))
    assert path.args[path.args.index("--mcp-config") + 1] == "/etc/mcp.json"  # a file: nothing on the line
    # a transport of the caller's builds its own command line: initialize carries nothing it did not ask for
    custom = plan_launch(ClaudeAgentOptions(mcp_servers=servers()), custom_transport=True)
    assert custom.options.mcp_servers_delivery == "argv" and "mcpServers" not in custom.initialize


def test_an_unknown_delivery_is_refused_with_typescripts_words() -> None:
    with pytest.raises(ValueError, match="Invalid mcp_servers_delivery. Expected 'argv' or 'initialize'."):
        plan_launch(ClaudeAgentOptions(mcp_servers_delivery="stdin"), custom_transport=True)  # type: ignore[arg-type]


# ---------------------------------------------------------------- the CLI must say it took them


def _answering(applied: Any) -> MockTransport:
    def handler(msg: dict[str, Any], cli: FakeCLI) -> None:
        if msg["type"] == "control_request" and msg["request"]["subtype"] == "initialize":
            answer: dict[str, Any] = {"commands": [], "models": [], "claude_code_version": "2.1.300"}
            if applied is not None:
                answer["mcp_servers_applied"] = applied
            cli.respond(msg, answer)
        elif msg["type"] == "user":
            cli.turn("ok")

    return MockTransport(handler)


@pytest.mark.parametrize("applied", [None, "yes", 1])
def test_a_cli_that_does_not_say_it_took_them_ends_the_session_before_the_prompt(applied: Any) -> None:
    transport = _answering(applied)
    with pytest.raises(CLIConnectionError, match=r"This Claude Code \(version 2.1.300\) is too old to read MCP servers"):
        list(query("hi", ClaudeAgentOptions(mcp_servers=servers(), mcp_servers_delivery="initialize"), transport=transport))
    assert [m for m in transport.cli.sent if m["type"] == "user"] == []  # no prompt was sent


def test_a_cli_that_says_it_did_not_take_them_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="claude_sdkurl.session"):
        messages = list(query("hi", ClaudeAgentOptions(mcp_servers=servers(), mcp_servers_delivery="initialize"),
                              transport=_answering(False)))  # fmt: skip
    assert isinstance(messages[-1], ResultMessage)
    assert "did not load the MCP servers sent in the initialize request" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="claude_sdkurl.session"):
        list(query("hi", ClaudeAgentOptions(mcp_servers=servers(), mcp_servers_delivery="initialize"), transport=_answering(True)))
    assert "MCP servers" not in caplog.text


def test_a_session_without_them_in_initialize_is_not_asked_whether_it_took_them() -> None:
    messages = list(query("hi", ClaudeAgentOptions(mcp_servers=servers()), transport=_answering(None)))  # (custom: argv)
    assert isinstance(messages[-1], ResultMessage)


# ---------------------------------------------------------------- no copy for those who watch


def _initialize_line() -> str:
    request = {"subtype": "initialize", "hooks": None, "mcpServers": external()}
    return json.dumps({"type": "control_request", "request_id": "r1", "request": request})


def test_a_tape_keeps_no_mcp_servers_env_or_headers_values() -> None:
    scrubber = Scrubber(home="/nonexistent-home")
    frame = scrubber.frame(json.loads(_initialize_line()))
    shown = json.dumps(frame)
    assert not any(s in shown for s in SECRETS), shown
    db = frame["request"]["mcpServers"]["db"]
    assert db["env"] == {"DB_PASS": "<scrubbed>", "PIN": "<scrubbed>"} and db["command"] == "db-mcp" and db["args"] == ["--ro"]
    assert frame["request"]["mcpServers"]["web"] == {"type": "http", "url": "https://mcp.example/x", "headers": {"X-Api-Key": "<scrubbed>"}}
    # a tape's header keeps the argv: an argv delivery's --mcp-config value, and mcp_set_servers' servers
    argv = scrubber.frame(["--mcp-config", json.dumps({"mcpServers": external()}), "--verbose"])
    assert not any(s in json.dumps(argv) for s in SECRETS) and argv[2] == "--verbose"
    later = scrubber.frame({"type": "control_request", "request": {"subtype": "mcp_set_servers", "servers": external()}})
    assert not any(s in json.dumps(later) for s in SECRETS)
    # the CLI's status answer echoes a server's config
    status = scrubber.frame({"mcpServers": [{"name": "db", "status": "connected", "config": external()["db"]}]})
    assert ENV_SECRET not in json.dumps(status)


def test_the_relay_shows_no_mcp_servers_env_or_headers_values() -> None:
    from claude_sdkurl.relay._hub import scrub

    for line in (_initialize_line(), json.dumps({"mcpServers": [{"name": "web", "config": external()["web"]}]})):
        shown = scrub(line, literals=set())
        assert not any(s in shown for s in SECRETS), shown
        assert "<scrubbed>" in shown
    plain = '{"type":"assistant","message":{"content":[{"type":"text","text":"url and env, headers"}]}}'
    assert scrub(plain, literals=set()) == plain  # a line that is no server's configuration: as it came
