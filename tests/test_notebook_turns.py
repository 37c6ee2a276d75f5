"""A ``%%claude`` cell's turn without a kernel or a CLI: a fake client's messages through the
notebook agent's turn thread (``NotebookAgent._run``), and what the cell makes of them."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

from claude_sdkurl._engine.session import OUTSIDE
from claude_sdkurl.notebook._agent import CellRun, NotebookAgent, Turn
from claude_sdkurl.types import AssistantMessage, Message, ResultMessage, TextBlock


class View:
    """What a turn shows, kept (the cell's outputs need IPython and a kernel)."""

    def __init__(self) -> None:
        self.theirs: list[list[Message]] = []  # each outside turn shown, apart
        self.finished: list[float | None] = []

    def outside(self, messages: list[Message]) -> None:
        self.theirs.append(list(messages))

    def waiting(self, what: str) -> None:
        pass

    def add(self, message: Message) -> None:
        pass

    def note(self, text: str) -> None:
        pass

    def finish(self, result: ResultMessage | None, turn_cost: float | None, *args: Any, **kwargs: Any) -> None:
        self.finished.append(turn_cost)


class Client:
    """A live CLI's client as the turn uses it: it is asked, then its messages are read."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages
        self.asked: list[Any] = []

    def query(self, prompt: Any) -> None:
        self.asked.append(prompt)

    def receive_messages(self) -> Iterator[Message]:
        yield from self.messages


def said(text: str, *, theirs: bool = False) -> AssistantMessage:
    message = AssistantMessage(content=[TextBlock(text=text)], model="claude-test")
    if theirs:
        setattr(message, OUTSIDE, "turn")
    return message


def result(total: float, text: str, *, theirs: bool = False) -> ResultMessage:
    message = ResultMessage(subtype="success", duration_ms=1, duration_api_ms=1, is_error=False, num_turns=1, session_id="s1",
                            total_cost_usd=total, result=text)  # fmt: skip
    if theirs:
        setattr(message, OUTSIDE, "turn")
    return message


def cell(agent: NotebookAgent, prompt: str, messages: list[Message]) -> tuple[CellRun, View]:
    view = View()
    turn = Turn(agent, CellRun(prompt=prompt), view, background=False)  # type: ignore[arg-type]
    client = Client(messages)
    agent._client_for = lambda args, turn: client  # type: ignore[method-assign,assignment,return-value]
    agent._run(turn, argparse.Namespace(), prompt, [])
    assert turn.done.is_set() and client.asked == [prompt]
    return turn.run, view


def test_the_cell_after_a_page_message_counts_only_its_own_turns_cost() -> None:
    """Issue 70, item 16: the CLI's cost is a running total; a turn asked for on the relay's
    page, answered before this cell's own (marked ``outside``), moved it on. Its cost is the
    page turn's, not this cell's: the cell's cost is its result's total less the page turn's,
    and the cell after it counts from there too."""
    agent = NotebookAgent(shell=type("Shell", (), {"user_ns": {}})())
    try:
        first, _ = cell(agent, "one", [said("first"), result(0.10, "first")])
        assert first.cost_usd == 0.10
        page: list[Message] = [said("from the page", theirs=True), result(0.25, "from the page", theirs=True)]
        second, view = cell(agent, "two", [*page, said("second"), result(0.40, "second")])
        assert second.cost_usd == 0.15 and view.finished == [0.15]  # 0.40 - 0.25, not 0.40 - 0.10
        assert [[type(m).__name__ for m in shown] for shown in view.theirs] == [["AssistantMessage", "ResultMessage"]]
        assert second.text == "second" and second.result is not None and second.result.result == "second"
        third, _ = cell(agent, "three", [said("third"), result(0.45, "third")])
        assert third.cost_usd == 0.05
    finally:
        agent.close()
