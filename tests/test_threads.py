"""``claude_sdkurl.threads``: tasks, task groups, ``wait_for`` and ``gather`` on threads, with
cooperative cancellation at ``sleep``, task waits and the SDK's message reads (``query()``,
``receive_messages()``), each compared with what the asyncio original does."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from claude_sdkurl import ClaudeAgentOptions, ClaudeClient, HookMatcher, query
from claude_sdkurl.testing import FakeCLI, MockTransport
from claude_sdkurl.threads import CancelledError, Task, TaskGroup, create_task, gather, sleep, wait_for


def test_a_task_runs_at_once_and_gives_its_value_or_its_error() -> None:
    started = threading.Event()
    task = create_task(lambda: (started.set(), 42)[1], name="answer")
    assert started.wait(2) and task.result() == 42 and task.done() and not task.cancelled()
    assert task.get_name() == "answer" and task.exception() is None and "answer done" in repr(task)
    failing = create_task(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failing.result()
    assert isinstance(failing.exception(), ZeroDivisionError)
    coroutine = asyncio.sleep(0)
    with pytest.raises(TypeError, match="not coroutine"):
        create_task(coroutine)  # type: ignore[arg-type]  # as a port finished by hand might pass
    coroutine.close()
    blocked = threading.Event()
    slow = create_task(blocked.wait)
    with pytest.raises(TimeoutError):
        slow.result(timeout=0.05)
    blocked.set()
    assert slow.result() is True


def test_cancel_stops_a_sleeping_task_at_once_and_is_delivered_once() -> None:
    seen: list[str] = []

    def timer() -> str:
        try:
            sleep(30)
        except CancelledError:
            seen.append("cancelled")
            sleep(0.01)  # cleanup may wait: the cancel was delivered once
            raise
        return "slept"

    task = create_task(timer)
    time.sleep(0.05)
    began = time.monotonic()
    assert task.cancel() is True
    with pytest.raises(CancelledError):
        task.result()
    assert time.monotonic() - began < 1.0 and seen == ["cancelled"] and task.cancelled()
    assert task.cancel() is False  # over already
    with pytest.raises(CancelledError):
        task.exception()
    assert not isinstance(CancelledError(), Exception)  # as asyncio's: `except Exception` does not swallow it


def test_a_cancel_before_the_first_wait_is_seen_there() -> None:
    go = threading.Event()

    def body() -> str:
        go.wait()  # not a cancel point
        sleep(5)
        return "ran"

    task = create_task(body)
    task.cancel()
    go.set()
    with pytest.raises(CancelledError):
        task.result(timeout=2)


def test_a_task_that_catches_its_cancel_ends_normally() -> None:
    def stubborn() -> str:
        try:
            sleep(30)
        except CancelledError:
            return "caught"
        return "slept"

    task = create_task(stubborn)
    time.sleep(0.02)
    task.cancel()
    assert task.result(timeout=2) == "caught" and not task.cancelled()


def test_wait_for_returns_the_value_or_cancels_at_the_timeout() -> None:
    assert wait_for(lambda: "fast", timeout=2) == "fast"
    ended = threading.Event()

    def slow() -> None:
        try:
            sleep(30)
        finally:
            ended.set()

    began = time.monotonic()
    with pytest.raises(TimeoutError):
        wait_for(slow, timeout=0.2)
    assert ended.is_set() and 0.15 < time.monotonic() - began < 1.5  # the call was stopped before raising
    with pytest.raises(ZeroDivisionError):
        wait_for(lambda: 1 / 0, timeout=2)


def test_a_task_group_waits_for_all_and_stops_the_rest_when_one_fails() -> None:
    with TaskGroup() as tg:
        one = tg.create_task(lambda: 1)
        tg.start_soon(lambda a, b: a + b, 1, 2)  # anyio's and trio's form
        nested: list[Task[int]] = []
        tg.create_task(lambda: nested.append(tg.create_task(lambda: 7)))  # a task may add tasks
    assert one.result() == 1 and nested[0].result() == 7

    stopped = threading.Event()

    def long() -> None:
        try:
            sleep(30)
        except CancelledError:
            stopped.set()
            raise

    def bad() -> None:
        sleep(0.05)
        raise ValueError("bad item")

    began = time.monotonic()
    with pytest.raises(ExceptionGroup) as raised:  # noqa: F821 (3.11+)
        with TaskGroup() as tg:
            tg.create_task(long)
            tg.create_task(bad)
    assert [type(e) for e in raised.value.exceptions] == [ValueError]
    assert stopped.is_set() and time.monotonic() - began < 2

    async def asyncio_form() -> None:  # the same program on asyncio gives the same group
        async def along() -> None:
            await asyncio.sleep(30)

        async def abad() -> None:
            await asyncio.sleep(0.05)
            raise ValueError("bad item")

        async with asyncio.TaskGroup() as atg:
            atg.create_task(along())
            atg.create_task(abad())

    with pytest.raises(ExceptionGroup) as theirs:  # noqa: F821
        asyncio.run(asyncio_form())
    assert [type(e) for e in theirs.value.exceptions] == [ValueError] and theirs.value.message == raised.value.message


def test_a_task_group_whose_block_raises_cancels_its_tasks() -> None:
    stopped = threading.Event()

    def long() -> None:
        try:
            sleep(30)
        finally:
            stopped.set()

    with pytest.raises(KeyError):
        with TaskGroup() as tg:
            tg.create_task(long)
            raise KeyError("body")
    assert stopped.is_set()
    with TaskGroup() as tg:
        t = tg.create_task(long)
        tg.cancel_scope.cancel()  # anyio's / trio's way to stop a group
    assert t.cancelled()
    with pytest.raises(RuntimeError, match="not active"):
        tg.create_task(lambda: None)


def test_cancelling_the_task_that_waits_on_a_group_cancels_the_group() -> None:
    inner_stopped = threading.Event()

    def inner() -> None:
        try:
            sleep(30)
        finally:
            inner_stopped.set()

    def outer() -> None:
        with TaskGroup() as tg:
            tg.create_task(inner)

    task = create_task(outer)
    time.sleep(0.05)
    task.cancel()
    with pytest.raises(CancelledError):
        task.result(timeout=2)
    assert inner_stopped.is_set()


def test_gather_waits_for_tasks_made_earlier_and_raises_the_first_error() -> None:
    a, b = create_task(lambda: "a"), create_task(lambda: (sleep(0.05), "b")[1])
    assert gather(a, b, lambda: "c") == ["a", "b", "c"]
    bad = create_task(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        gather(create_task(lambda: sleep(0.05)), bad)
    results = gather(create_task(lambda: 1), create_task(lambda: 1 / 0), return_exceptions=True)
    assert results[0] == 1 and isinstance(results[1], ZeroDivisionError)


# ------------------------------------------------------------------ the SDK's cancel points


def _answer_second_prompt_late(message: dict[str, Any], cli: FakeCLI) -> None:
    if message["type"] == "user":
        cli.turn("pong")


def test_a_reader_task_cancelled_in_receive_messages_loses_nothing() -> None:
    # streaming_mode.py's concurrent_responses: a reader task is cancelled while it waits.
    with ClaudeClient(transport=MockTransport(_answer_second_prompt_late)) as client:
        seen: list[str] = []

        def reader() -> None:
            for m in client.receive_messages():
                seen.append(type(m).__name__)

        task = create_task(reader)
        client.query("one")
        deadline = time.monotonic() + 5
        while "ResultMessage" not in seen and time.monotonic() < deadline:
            time.sleep(0.01)
        began = time.monotonic()
        task.cancel()
        with pytest.raises(CancelledError):
            task.result(timeout=2)
        assert time.monotonic() - began < 1.0 and task.cancelled()
        # the client is still usable, and the next turn reaches the next reader whole
        client.query("two")
        names = [type(m).__name__ for m in client.receive_response(timeout=5)]
        assert names[-1] == "ResultMessage" and "AssistantMessage" in names


def test_a_cancelled_task_stops_its_query_turn_as_a_break_does() -> None:
    interrupted = threading.Event()

    def slow_cli(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "control_request" and message["request"]["subtype"] == "interrupt":
            cli.respond(message)
            interrupted.set()
            cli.result("stopped", subtype="error_during_execution", is_error=True)
        # a user prompt is never answered: the turn runs until stopped

    def run() -> list[Any]:
        # a hook keeps the input open through the turn (as the official SDK), so the interrupt is a request
        hooks: dict[Any, Any] = {"PreToolUse": [HookMatcher(hooks=[lambda data, tool_use_id, context: {}])]}
        return list(query("hi", ClaudeAgentOptions(hooks=hooks), transport=MockTransport(slow_cli)))

    task = create_task(run)
    time.sleep(0.3)
    task.cancel()
    with pytest.raises(CancelledError):
        task.result(timeout=3)
    assert interrupted.is_set()


def test_outside_a_task_nothing_is_cancellable_and_sleep_sleeps() -> None:
    began = time.monotonic()
    sleep(0.05)
    sleep(-1)  # returns at once, as asyncio.sleep(-1) does (time.sleep raises)
    assert time.monotonic() - began >= 0.05
    assert [type(m).__name__ for m in query("hi", transport=MockTransport(_answer_second_prompt_late))][-1] == "ResultMessage"


def test_gather_of_calls_raises_the_first_error_while_the_slow_ones_still_run() -> None:
    """As asyncio.gather: the first exception reaches the caller as soon as it is raised, not
    after the other calls end (they run on to their end)."""
    release = threading.Event()
    ended: list[str] = []

    def slow() -> str:
        release.wait(30)
        ended.append("slow")
        return "slow"

    def broken() -> str:
        raise ValueError("first")

    try:
        with pytest.raises(ValueError, match="first"):
            gather(slow, broken, slow)
        assert ended == []  # raised while both slow calls were still running
    finally:
        release.set()
    deadline = time.monotonic() + 10
    while len(ended) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ended == ["slow", "slow"]  # and they ran on to their end


def test_current_task_is_the_running_task_or_a_cancellable_handle_of_the_thread() -> None:
    from claude_sdkurl._engine.cancel import enter
    from claude_sdkurl.threads import ThreadHandle, current_task

    seen: list[Any] = []
    task = create_task(lambda: seen.append(current_task()))
    task.result()
    assert seen == [task]  # inside a task: that task

    results: list[str] = []

    def thread_body() -> None:  # a plain thread, as a server's worker or the ported main()
        me = current_task()
        assert isinstance(me, ThreadHandle) and not me.done()
        create_task(lambda: (sleep(0.1), me.cancel()))
        try:
            sleep(30)
            results.append("slept")
        except CancelledError:
            results.append("cancelled")
        sleep(0.01)  # delivered once: the thread goes on
        results.append(f"went on, cancelling={me.cancelling()}")
        enter(None)

    worker = threading.Thread(target=thread_body)
    worker.start()
    worker.join(30)
    assert results == ["cancelled", "went on, cancelling=1"]


def test_a_task_groups_start_returns_what_its_task_says_once_started() -> None:
    """anyio's and trio's ``start``: the task runs on; ``start`` returns the value it gave
    ``task_status.started()``; a task that ends or fails before saying so raises there."""
    went_on = threading.Event()

    def serve(port: int, *, task_status: Any) -> None:
        task_status.started(f"listening on {port}")
        went_on.wait(5)

    def quits(*, task_status: Any) -> None:
        return None

    def breaks(*, task_status: Any) -> None:
        raise ValueError("no port")

    with TaskGroup() as tg:
        assert tg.start(serve, 8765) == "listening on 8765"
        went_on.set()  # (the task was still running)
    with pytest.raises(BaseException) as ended:
        with TaskGroup() as tg:
            tg.start(quits)
    assert "task_status.started()" in str(ended.value) or any("task_status.started()" in str(e) for e in getattr(ended.value, "exceptions", []))
    with pytest.raises(BaseException) as failed:
        with TaskGroup() as tg:
            tg.start(breaks)
    errors = getattr(failed.value, "exceptions", [failed.value])
    assert any(isinstance(e, ValueError) and str(e) == "no port" for e in errors)
