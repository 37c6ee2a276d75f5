"""The concurrency recipes of the guide (docs/guide/concurrency.md), executed as written, on the real CLIs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import ResultMessage
from claude_sdkurl.testing import MockMessagesAPI, text

from .conftest import OptionsFactory

pytestmark = pytest.mark.realcli

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide" / "concurrency.md"


def recipe(name: str) -> str:
    found = re.findall(r"<!-- recipe: ([\w-]+) -->\n```python\n(.*?)```", GUIDE.read_text(), re.S)
    blocks = dict(found)
    assert name in blocks, f"the guide has no recipe {name!r} (has {sorted(blocks)})"
    return blocks[name]


def run(name: str, **given: Any) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": f"recipe_{name}", **given}
    exec(compile(recipe(name), f"concurrency.md:{name}", "exec"), namespace)
    return namespace


def test_timeout_recipe(make_options: OptionsFactory, api: MockMessagesAPI, capsys: pytest.CaptureFixture[str]) -> None:
    api.enqueue(text("slow " * 200, delay=0.05, chunk=5), text("brief"))
    ns = run("timeout", options=make_options(), prompt="Summarise", seconds=0.5)
    assert isinstance(ns["answer"], ResultMessage) and ns["answer"].result == "brief"
    printed = capsys.readouterr().out
    assert "ResultMessage" not in printed  # the first turn timed out before its result


def test_reader_thread_recipe(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    api.enqueue(text("word " * 400, delay=0.02, chunk=8))
    ns = run("reader-thread", options=make_options(include_partial_messages=True), prompt="Talk", seconds=30)
    assert not ns["reader"].is_alive()
    assert isinstance(ns["seen"][-1], ResultMessage)


def test_gather_recipe(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    ns = run("gather", options=make_options(), prompts=["one", "two", "three"])
    assert ns["answers"] == ["pong", "pong", "pong"]
    assert sorted(r.last_user_text() for r in api.message_requests()) == ["one", "three", "two"]


def test_query_timeout_recipe(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    api.enqueue(text("slow " * 200, delay=0.05, chunk=5))
    ns = run("query-timeout", options=make_options(), prompt="Summarise", seconds=0.5)
    assert ns["messages"] is None  # and the leak check: no CLI, thread or descriptor left


def test_timer_task_recipe(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    api.enqueue(text("slow " * 200, delay=0.05, chunk=5), text("quick"))
    slow = run("timer-task", options=make_options(), prompt="Talk at length", seconds=1.0)
    assert slow["results"][-1].subtype == "error_during_execution"  # the timer interrupted it
    assert not slow["timer"].cancelled()
    fast = run("timer-task", options=make_options(), prompt="Be quick", seconds=30)
    assert fast["results"][-1].result == "quick" and fast["timer"].cancelled()  # stopped asleep, not after 30 s
