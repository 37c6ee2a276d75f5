"""When a run is over (``_run.RunTracker``), step by step: every frame in, the exact effects
out. These are the official SDK's end-of-input rules; a wrong effect here is a session that
closes the CLI's input under a running subagent, or never closes it."""

from __future__ import annotations

from typing import Any

import pytest

from claude_sdkurl._engine.run import CEILING_ENV, DEFAULT_CEILING_MS, RunTracker, ceiling_ms


def result(is_error: bool = False) -> dict[str, Any]:
    return {"type": "result", "subtype": "success", "is_error": is_error}


def state(name: str, host_only: bool = True) -> dict[str, Any]:
    return {"type": "system", "subtype": "session_state_changed", "state": name, "sdk_host_only": host_only}


def task(subtype: str, task_id: Any = "t1", **fields: Any) -> dict[str, Any]:
    return {"type": "system", "subtype": subtype, "task_id": task_id, **fields}


ASSISTANT = {"type": "assistant", "message": {}, "parent_tool_use_id": None}
SUBAGENT = {"type": "assistant", "message": {}, "parent_tool_use_id": "tu1"}
DELTA = {"type": "stream_event", "event": {}, "parent_tool_use_id": None}


def feed(run: RunTracker, *frames: dict[str, Any]) -> list[Any]:
    """Effects of these frames, in order."""
    effects = []
    for frame in frames:
        run.observe(frame)
        effects += run.take_effects()
    return effects


@pytest.mark.parametrize(
    ("options_env", "process_env", "expected"),
    [
        ({}, None, DEFAULT_CEILING_MS),
        ({}, "5", 5),
        ({CEILING_ENV: "7"}, "5", 7),  # options.env wins
        ({CEILING_ENV: "0"}, "5", 0),  # 0: no ceiling
        ({CEILING_ENV: "-1"}, None, DEFAULT_CEILING_MS),
        ({CEILING_ENV: "soon"}, None, DEFAULT_CEILING_MS),
        ({CEILING_ENV: str(2**40)}, None, 2**31 - 1),
        ({CEILING_ENV: str(2**31 - 1)}, None, 2**31 - 1),
    ],
)
def test_ceiling_from_the_environment(
    options_env: dict[str, str], process_env: str | None, expected: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if process_env is None:
        monkeypatch.delenv(CEILING_ENV, raising=False)
    else:
        monkeypatch.setenv(CEILING_ENV, process_env)
    assert ceiling_ms(options_env) == expected


def test_a_fresh_tracker() -> None:
    run = RunTracker()
    assert (run.bidirectional, run.ceiling_ms, run.session_state) == (False, DEFAULT_CEILING_MS, None)
    assert (run.result_received, run.turn_in_progress, run.ended, run.final) == (False, False, False, False)
    assert run.tasks == set() and run.last_error_result is None and run.take_effects() == []


def test_state_frames_decide_with_callbacks() -> None:
    run = RunTracker(bidirectional=True)
    run.prompt_sent()
    assert run.take_effects() == []
    assert feed(run, state("running"), ASSISTANT) == []
    assert run.turn_in_progress and run.session_state == "running"
    # a result while the CLI still says running: not over, but a ceiling is armed (a new
    # generation: a timer armed before is stale)
    generation = run.ceiling_generation
    assert feed(run, result()) == [("arm", generation + 1)]
    generation += 1
    assert run.result_received and not run.turn_in_progress and not run.ended
    # idle after the result: over (the ceiling is cleared first)
    assert feed(run, state("idle")) == ["clear", "ended"]
    assert run.ended and run.ceiling_generation > generation
    # the next prompt reopens it; its first words clear nothing (no ceiling armed)
    run.prompt_sent()
    assert run.take_effects() == ["reopened"] and run.result_received is False
    assert feed(run, DELTA, result()) == ["ended"]  # session_state is idle: the result ends it


def test_idle_before_any_result_ends_nothing_and_running_after_a_result_rearms() -> None:
    run = RunTracker(bidirectional=True)
    assert feed(run, state("idle")) == [] and not run.ended
    assert feed(run, ASSISTANT, result()) == ["ended"]  # idle: the result ends it
    # the CLI goes back to running between turns (a background agent woke it)
    generation = run.ceiling_generation
    assert feed(run, state("running")) == ["reopened", ("arm", generation + 1)]
    assert feed(run, ASSISTANT) == ["clear"]  # a new turn began: no ceiling while it runs
    assert run.turn_in_progress
    generation = run.ceiling_generation
    assert feed(run, result(), state("idle")) == [("arm", generation + 1), "clear", "ended"]


def test_requires_action_holds_the_run_open_without_a_ceiling() -> None:
    run = RunTracker(bidirectional=True)
    assert feed(run, state("running"), ASSISTANT, result()) == [("arm", run.ceiling_generation)]
    assert feed(run, state("requires_action")) == ["clear"]
    assert feed(run, result()) == []  # waiting on the user: neither ended nor armed
    assert not run.ended
    assert feed(run, state("running")) == [("arm", run.ceiling_generation)]


def test_without_callbacks_a_result_ends_the_run_whatever_the_state() -> None:
    run = RunTracker(bidirectional=False)
    assert feed(run, state("running"), ASSISTANT, result()) == ["ended"]
    assert feed(run, state("running")) == ["reopened"]  # no ceiling without callbacks


def test_agent_tasks_hold_the_run_on_a_cli_without_state_frames() -> None:
    run = RunTracker(bidirectional=True)
    feed(run, task("task_started", task_type="local_agent"), task("task_started", "t2", task_type="local_workflow"))
    feed(run, task("task_started", "t3", task_type="local_bash"), task("task_started", 4, task_type="local_agent"))
    feed(run, task("task_started", "", task_type="local_agent"))
    assert run.tasks == {"t1", "t2"}  # only agent and workflow tasks with a string id
    assert feed(run, ASSISTANT, result()) == [] and not run.ended
    feed(run, task("task_updated", "t2", patch={"status": "running"}), task("task_updated", "t2", patch="completed"))
    assert run.tasks == {"t1", "t2"}
    feed(run, task("task_updated", "t2", patch={"status": "killed"}))
    assert run.tasks == {"t1"}
    feed(run, task("task_notification", "t1", status="completed"))
    assert run.tasks == set() and not run.ended  # the follow-up turn ends it, not the notification
    assert feed(run, ASSISTANT, result()) == ["ended"]


def test_a_task_settling_between_turns_rearms_the_ceiling() -> None:
    run = RunTracker(bidirectional=True)
    feed(run, task("task_started", task_type="local_agent"), state("running"), ASSISTANT)
    assert feed(run, result()) == [("arm", run.ceiling_generation)]
    generation = run.ceiling_generation
    assert run.ceiling_fired(generation) is None and run.take_effects() == []  # a task in flight: not yet
    assert feed(run, task("task_notification", status="completed")) == ["clear", ("arm", generation + 1)]
    run.ceiling_fired(generation)  # a stale timer
    assert run.take_effects() == [] and not run.ended
    run.ceiling_fired(generation + 1)
    assert run.take_effects() == ["clear", "ended"] and run.ended


def test_no_ceiling_when_it_is_zero_or_the_run_is_over() -> None:
    run = RunTracker(bidirectional=True)
    feed(run, state("running"), ASSISTANT, result())
    run.ceiling_fired(run.ceiling_generation)
    assert run.take_effects() == ["clear", "ended"]
    assert feed(run, result()) == []  # ended by its ceiling: a late result arms nothing
    run = RunTracker(bidirectional=True, ceiling_ms=0)
    assert feed(run, state("running"), ASSISTANT, result()) == []
    run = RunTracker(bidirectional=True, ceiling_ms=1)
    assert feed(run, state("running"), ASSISTANT, result()) == [("arm", run.ceiling_generation)]


@pytest.mark.parametrize("waiting", ["idle", "requires_action"])
def test_a_task_settling_while_the_cli_waits_arms_no_ceiling(waiting: str) -> None:
    run = RunTracker(bidirectional=True)
    feed(run, task("task_started", task_type="local_agent"), state("running"), ASSISTANT, result())
    run.take_effects()
    feed(run, state(waiting))
    assert feed(run, task("task_notification", status="completed")) == []


def test_the_main_agents_first_streamed_words_reopen_an_ended_run() -> None:
    run = RunTracker(bidirectional=True)
    assert feed(run, ASSISTANT, result()) == ["ended"]  # no state frames yet: the result ends it
    assert feed(run, DELTA) == ["reopened"] and run.turn_in_progress
    assert feed(run, result()) == ["ended"]


def test_subagent_words_do_not_start_a_turn() -> None:
    run = RunTracker(bidirectional=True)
    feed(run, state("running"), ASSISTANT, result())
    assert not run.turn_in_progress
    assert feed(run, SUBAGENT) == []
    assert not run.turn_in_progress


def test_finish_is_final() -> None:
    run = RunTracker(bidirectional=True)
    feed(run, state("running"), ASSISTANT, result())
    run.take_effects()
    run.finish()
    assert run.take_effects() == ["clear", "ended"] and run.final and run.ended
    assert feed(run, ASSISTANT, state("running")) == []  # nothing reopens it
    run.prompt_sent()
    assert run.take_effects() == [] and run.ended
    run.finish()
    assert run.take_effects() == []


def test_what_is_hidden_and_the_last_error_result() -> None:
    run = RunTracker(bidirectional=True)
    assert run.observe(state("running")) is True
    assert run.observe(state("running", host_only=False)) is False
    assert run.observe({**state("running"), "sdk_host_only": "yes"}) is False
    assert run.observe(ASSISTANT) is False and run.observe(result()) is False
    failed = result(is_error=True)
    run.observe(failed)
    assert run.last_error_result is failed
    run.observe(state("idle"))  # a state frame does not hide it
    assert run.last_error_result is failed
    run.observe({"type": "system", "subtype": "init"})
    assert run.last_error_result is None
    run.observe(failed)
    run.observe(result())
    assert run.last_error_result is None
