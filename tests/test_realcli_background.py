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
from claude_sdkurl.testing import MockMessagesAPI, offline_env, text, tool_use

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


def test_a_background_subagent_turn_gives_what_the_official_sdk_gives(cli_paths: Any, api: MockMessagesAPI, tmp_path: Path) -> None:
    import claude_agent_sdk as official

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
