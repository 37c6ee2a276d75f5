"""The command-line entry point and display helpers, with the real CLI where it matters."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from claude_sdkurl import ResultMessage, query
from claude_sdkurl.display import stream_text
from claude_sdkurl.testing import MockMessagesAPI, Reply, error, text

from .conftest import OptionsFactory


def _run_main(args: list[str], env: dict[str, str], cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "claude_sdkurl", *args],
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, **env},
        cwd=cwd,
    )


@pytest.mark.realcli
def test_main_prints_streamed_answer(make_options: OptionsFactory, api: MockMessagesAPI, transport: str) -> None:
    api.enqueue(Reply([{"type": "text", "text": "streamed hello"}], chunk=3))
    o = make_options()
    out = _run_main(["say hi", "--cli-path", str(o.cli_path), "--cwd", str(o.cwd), "--transport", transport], o.env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "streamed hello"
    assert "[success" in out.stderr


@pytest.mark.realcli
@pytest.mark.parametrize("transport", ["stdio"])
def test_main_json_mode(make_options: OptionsFactory, api: MockMessagesAPI, transport: str) -> None:
    import json

    o = make_options()
    out = _run_main(["hi", "--json", "--cli-path", str(o.cli_path), "--cwd", str(o.cwd)], o.env)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [d["type"] for d in lines] == ["system", "assistant", "result"]


@pytest.mark.realcli
@pytest.mark.parametrize("transport", ["stdio"])
def test_main_explains_a_refused_login(make_options: OptionsFactory, api: MockMessagesAPI, transport: str) -> None:
    api.responder = lambda request: error(401, "authentication_error", "invalid x-api-key")
    o = make_options()
    out = _run_main(["hi", "--cli-path", str(o.cli_path), "--cwd", str(o.cwd)], o.env)
    assert out.returncode == 1
    assert "not logged in" in out.stderr


@pytest.mark.realcli
@pytest.mark.parametrize("version", ["2.1.120", "2.1.330"])
def test_main_explains_a_cli_that_is_not_logged_in(version: str, tmp_path: Path) -> None:
    """A new user's first run: an empty HOME, no key. The CLI answers "Not logged in" with an
    error result; we print the login hint and exit 1 (no traceback)."""
    from claude_sdkurl.testing import install_cli

    (tmp_path / "work").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_CODE_", "CLAUDE_CONFIG"))}
    env.update(HOME=str(tmp_path), DISABLE_AUTOUPDATER="1", DISABLE_TELEMETRY="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
    out = subprocess.run(
        [sys.executable, "-m", "claude_sdkurl", "hi", "--cli-path", str(install_cli(version)), "--cwd", str(tmp_path / "work")],
        capture_output=True, text=True, timeout=90, env=env,
    )  # fmt: skip
    assert "Traceback" not in out.stderr, out.stderr
    assert out.returncode == 1, out.stderr
    assert "not logged in or its API key was refused" in out.stderr


def test_main_cli_missing(tmp_path: Path) -> None:
    out = _run_main(["hi", "--cli-path", str(tmp_path / "nope")], {})
    assert out.returncode == 2
    assert "Claude Code not found" in out.stderr


@pytest.mark.realcli
def test_stream_text_to_a_file(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    api.enqueue(Reply([{"type": "text", "text": "one two three"}], chunk=2))
    buf = io.StringIO()
    result = stream_text(query("count", make_options(include_partial_messages=True)), file=buf)
    assert isinstance(result, ResultMessage) and result.result == "one two three"
    assert buf.getvalue() == "one two three\n"
    # without partial messages the text still shows, message by message
    api.enqueue(text("whole"))
    buf = io.StringIO()
    stream_text(query("again", make_options()), file=buf)
    assert buf.getvalue() == "whole\n"


def test_reprs() -> None:
    from claude_sdkurl._engine.parse import parse_message

    result = parse_message(
        {
            "type": "result",
            "subtype": "success",
            "duration_ms": 1500,
            "duration_api_ms": 900,
            "is_error": False,
            "num_turns": 2,
            "session_id": "s",
            "total_cost_usd": 0.0123,
            "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 5},
        }
    )
    md = result._repr_markdown_()
    # As code: JupyterLab renders text between two $ as math.
    assert "| cost (session so far) | `$0.0123` |" in md and "| tokens (this turn) | 105 in / 20 out |" in md
    assert "| time (this turn) | 1.50 s |" in md and "| API time (session so far) | 0.90 s |" in md
    assert not hasattr(result, "_repr_html_")  # JupyterLab would prefer HTML over the Markdown
    assistant = parse_message(
        {
            "type": "assistant",
            "message": {
                "model": "m",
                "content": [
                    {"type": "text", "text": "<b>hi</b>"},
                    {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "ls"}},
                ],
            },
        }
    )
    md = assistant._repr_markdown_()
    assert "<summary>⚙ <code>Bash ls</code></summary>" in md  # folded: the input shows when opened
    assert "&lt;b>hi&lt;/b>" in md and "<b>" not in md  # the model's HTML is shown, never obeyed
    assert assistant.content[1]._repr_markdown_().startswith("<details><summary>⚙ <code>Bash ls</code>")


@pytest.mark.realcli
def test_works_inside_a_running_event_loop(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    """As in Jupyter: a loop is running in this thread; no nest_asyncio needed."""
    import asyncio

    from claude_sdkurl import ClaudeAgentOptions, HookMatcher

    async def hook(hook_input: dict, tool_use_id: str | None, ctx: dict) -> dict:
        await asyncio.sleep(0)  # an async callback, while the caller's loop is busy
        return {}

    async def main() -> list:
        assert asyncio.get_running_loop()
        options = make_options(hooks={"UserPromptSubmit": [HookMatcher(hooks=[hook])]})
        assert isinstance(options, ClaudeAgentOptions)
        return list(query("hi from a loop", options))

    messages = asyncio.run(main())
    assert messages[-1].result == "pong"
