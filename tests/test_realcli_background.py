"""A turn that starts a background subagent, on the real CLI 2.1.330, with ``query()`` of both
SDKs on the same mock model: the same messages in the same order, the same results and costs.
(2.1.330 gives a turn's result as soon as the turn ends while its input is open, and after the
background work and the turn it wakes once its input is closed, as the official SDK's is from
the start: ours closes it when background work starts. Before, ours gave the first result first,
at a lower cost.)"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import ClaudeAgentOptions, query
from claude_sdkurl.testing import NEWEST_CLI_VERSION, MockMessagesAPI, offline_env, text, tool_use

pytestmark = pytest.mark.realcli


def _answer(request: Any) -> Any:
    said = request.last_user_text()
    if "do the side job" in said and not request.tool_results():
        # the background work outlives the turn that started it, as this test is about: without
        # the wait, a loaded machine could serve it first and the CLI then orders its messages
        # otherwise (seen twice in CI with a 2 s wait: a race of the mock's two replies under load,
        # not of the SDKs: the official run then had the subagent's message before the result)
        return text("side job done", on_start=lambda: time.sleep(5.0))
    if request.tool_results():
        return text("started it")
    if said != "go":
        return text("it finished")  # the turn the background task's notification wakes
    return tool_use("Agent", {"description": "side job", "prompt": "do the side job", "subagent_type": "general-purpose",
                              "run_in_background": True})  # fmt: skip


def _shape(messages: list[Any]) -> list[tuple[Any, ...]]:
    return [(type(m).__name__, getattr(m, "subtype", None), getattr(m, "result", None), getattr(m, "total_cost_usd", None))
            for m in messages]  # fmt: skip


@pytest.mark.parametrize("slow_reader", [False, True], ids=["", "slow-reader"])
def test_a_background_subagent_turn_gives_what_the_official_sdk_gives(
    cli_paths: Any, api: MockMessagesAPI, tmp_path: Path, slow_reader: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``slow_reader``: this process reads the line that announces the background work 2 s late
    (a busy machine). Ours used to close the CLI's input only once it had read that line, so the
    CLI, its turn over by then, gave the first result before the subagent's report (issue 61:
    the official ``agents.py`` example lost the report 2 runs in 3 when it stopped at the first
    result); ours closes it after the prompt now, as the official SDK does. Fails on the old code."""
    import claude_agent_sdk as official

    if slow_reader:
        from claude_sdkurl._engine.session import Session

        reading = Session._on_data

        def late(self: Session, data: bytes | str) -> None:
            if b"background_tasks_changed" in (data if isinstance(data, bytes) else data.encode()):
                time.sleep(2.0)
            reading(self, data)

        monkeypatch.setattr(Session, "_on_data", late)
    api.responder = _answer
    shapes = []
    for side in ("official", "ours"):
        home = tmp_path / side
        (home / "work").mkdir(parents=True)
        env, cwd, cli = offline_env(api.url, home), str(home / "work"), str(cli_paths["stdio"])
        if side == "ours":
            messages = list(query("go", ClaudeAgentOptions(cli_path=cli, env=env, cwd=cwd)))
        else:

            async def run() -> list[Any]:
                return [m async for m in official.query(prompt="go", options=official.ClaudeAgentOptions(cli_path=cli, env=env, cwd=cwd))]

            messages = asyncio.run(run())
        shapes.append(_shape(messages))
    assert shapes[0] == shapes[1]
    results = [s for s in shapes[1] if s[0] == "ResultMessage"]
    assert [r[2] for r in results] == ["started it", "it finished"]
    assert results[0][3] == results[1][3]  # the first result carries the woken turn's cost too, as there


def _agents_answer(request: Any) -> Any:
    """The official ``agents.py`` example's shape: a subagent (run in the background by 2.1.330
    and later without being asked) that answers at once, as a fast real model may."""
    said = request.last_user_text()
    if said.startswith("side job"):
        return text("side job done")  # the subagent
    if request.tool_results():
        return text("started it")
    if said.startswith("Use the"):
        return tool_use("Agent", {"description": "side job", "prompt": "side job: review", "subagent_type": "code-reviewer"})
    return text("it finished")  # the turn the subagent's notification wakes


def _main_line(messages: list[Any]) -> list[tuple[Any, ...]]:
    """The parent conversation's messages but its results: what the subagent says and the task
    notices about it may come before or after the parent's own next message (the CLI's two
    requests race, for either SDK); the parent's order may not differ."""
    return [s[:3] for m, s in zip(messages, _shape(messages))
            if getattr(m, "parent_tool_use_id", None) is None and not s[0].startswith("Task")
            and s[1] != "background_tasks_changed" and s[0] != "ResultMessage"]  # fmt: skip


@pytest.mark.parametrize("version", ["2.1.330", NEWEST_CLI_VERSION])
def test_a_fast_background_subagent_reports_before_the_first_result_as_with_the_official_sdk(
    version: str, api: MockMessagesAPI, tmp_path: Path
) -> None:
    """Issue 61: ours used to close the input when background work started, a race with the
    turn's end that a fast subagent lost: the first result came before the subagent's report,
    so a loop that stops at the first ResultMessage lost the report, which the official SDK's
    (its input closed after the prompt) always keeps. Where the subagent ends before the parent's
    turn, 2.1.330 gives the first result before the turn it wakes, for both SDKs (seen 1 run in
    5 of the official one): so the rule checked is "the report before the first result", not
    "both results last". Five runs of each SDK in a row."""
    import claude_agent_sdk as official

    from claude_sdkurl import AgentDefinition
    from claude_sdkurl.testing import install_cli

    api.responder = _agents_answer
    cli = str(install_cli(version))
    agent = {"description": "Reviews code", "prompt": "You are a code reviewer.", "tools": ["Read"]}
    runs: dict[str, list[list[Any]]] = {"official": [], "ours": []}
    for n in range(5):
        for side in ("official", "ours"):
            home = tmp_path / f"{side}-{n}"
            (home / "work").mkdir(parents=True)
            env, cwd = offline_env(api.url, home), str(home / "work")
            if side == "ours":
                options = ClaudeAgentOptions(cli_path=cli, env=env, cwd=cwd, agents={"code-reviewer": AgentDefinition(**agent)})
                runs[side].append(list(query("Use the code-reviewer agent", options)))
            else:
                theirs = official.ClaudeAgentOptions(cli_path=cli, env=env, cwd=cwd,
                                                     agents={"code-reviewer": official.AgentDefinition(**agent)})  # fmt: skip

                async def run() -> list[Any]:
                    return [m async for m in official.query(prompt="Use the code-reviewer agent", options=theirs)]

                runs[side].append(asyncio.run(run()))
    for n, (mine, theirs) in enumerate(zip(runs["ours"], runs["official"])):
        for side, messages in (("official", theirs), ("ours", mine)):
            kinds = [type(m).__name__ for m in messages]
            first = kinds.index("ResultMessage")
            said = [b.text for m in messages[:first] if type(m).__name__ == "AssistantMessage" for b in m.content if hasattr(b, "text")]
            assert "TaskNotificationMessage" in kinds[:first] and "side job done" in said, (side, n, kinds)
            assert kinds[-1] == "ResultMessage", (side, n, kinds)
        # the same messages (the first result's cost follows the same race: with the woken turn's
        # cost when it ran first, without it otherwise)
        # Under two CPU burners the CLI once ran no woken turn for ours (one result: the notice
        # taken into the turn under way, it seems; the official run beside it had two), so the
        # runs are compared only where the CLI took the same course for both
        if [type(m).__name__ for m in mine].count("ResultMessage") == [type(m).__name__ for m in theirs].count("ResultMessage"):
            assert sorted(repr(s[:3]) for s in _shape(mine)) == sorted(repr(s[:3]) for s in _shape(theirs)), n
            assert _main_line(mine) == _main_line(theirs), n  # the parent's in the same order
