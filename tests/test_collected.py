"""Issue 69, item 6: a client, a query or a spare pool collected without being closed stops its
CLI and says so with a ``ResourceWarning`` naming where it was made, as ``subprocess.Popen`` and
files do; one closed properly says nothing. Refcounting alone reaches them (no thread holds a
client or a pool): these tests run with the cycle collector off. On a fake CLI; the real CLI's
processes: tests/test_realcli_collected.py."""

from __future__ import annotations

import gc
import logging
import threading
import time
import warnings
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import ClaudeAgentOptions, ClaudeClient, ResultMessage, SparePool, query
from claude_sdkurl.testing import FakeCLI, MockTransport

HERE = Path(__file__).name


def _turns(message: dict[str, Any], cli: FakeCLI) -> None:
    if message["type"] == "user":
        cli.turn("pong")


def _talks(message: dict[str, Any], cli: FakeCLI) -> None:
    """A turn that is never over: an assistant message, no result."""
    if message["type"] == "user":
        cli.emit({"type": "assistant", "message": {"id": "m", "model": "x", "role": "assistant",
                                                   "content": [{"type": "text", "text": "thinking..."}]},
                  "parent_tool_use_id": None, "session_id": "s", "uuid": "u"})  # fmt: skip


@pytest.fixture
def no_cycle_collector() -> Iterator[list[warnings.WarningMessage]]:
    """Warnings caught (all shown), the cycle collector off: what is collected is collected by
    refcounting, at once."""
    was = gc.isenabled()
    gc.disable()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield caught
    finally:
        if was:
            gc.enable()


def _resource_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]


def _collected_threads_done() -> None:
    deadline = time.monotonic() + 10
    while any(t.name == "claude-sdkurl-collected" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.02)


def _line_of(text: str) -> int:
    lines = Path(__file__).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


def test_a_connected_client_dropped_stops_its_cli_and_names_where_it_was_made(no_cycle_collector: list[warnings.WarningMessage]) -> None:
    transport = MockTransport(_turns)
    client = ClaudeClient(transport=transport)  # the client made here
    client.connect()
    client.query("hi")
    next(iter(client.receive_messages()))
    gone = weakref.ref(client)
    del client
    assert gone() is None  # refcounting reached it: nothing of the session holds the client
    _collected_threads_done()
    made = _line_of("# the client made here")
    assert _resource_warnings(no_cycle_collector) == [
        f"ClaudeClient made at {__file__}:{made} was not closed: its Claude Code CLI is stopped now. "
        "Write `with ClaudeClient(...) as client:`, or call disconnect()."
    ]
    assert transport._thread is not None and not transport._thread.is_alive()  # the fake CLI was told to stop


def test_a_query_dropped_mid_way_stops_its_cli_and_names_where_it_was_made(no_cycle_collector: list[warnings.WarningMessage]) -> None:
    transport = MockTransport(_talks)
    messages = query("hi", transport=transport)  # the query made here
    next(messages)
    del messages  # its CLI stopped here, on this thread, as a generator's finally always ran
    assert transport._thread is not None and not transport._thread.is_alive()
    made = _line_of("# the query made here")
    assert _resource_warnings(no_cycle_collector) == [
        f"query() made at {__file__}:{made} was not closed: its Claude Code CLI is stopped now. "
        "Read it to its end, call .close(), or write `with query(...) as messages:`."
    ]


def test_a_client_still_connecting_in_the_background_is_collected_once_connected(no_cycle_collector: list[warnings.WarningMessage]) -> None:
    """prewarm()'s thread holds the client while it connects; then nothing does."""
    transport = MockTransport(_turns)
    client = ClaudeClient(transport=transport).prewarm()
    gone = weakref.ref(client)
    del client
    deadline = time.monotonic() + 10
    while gone() is not None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert gone() is None
    _collected_threads_done()
    [warning] = _resource_warnings(no_cycle_collector)
    assert warning.startswith(f"ClaudeClient made at {__file__}:") and transport._thread is not None
    transport._thread.join(5)
    assert not transport._thread.is_alive()


def test_what_is_closed_properly_or_never_started_says_nothing(no_cycle_collector: list[warnings.WarningMessage]) -> None:
    with ClaudeClient(transport=MockTransport(_turns)) as client:
        client.query("hi")
        list(client.receive_response())
    del client
    closed = ClaudeClient(transport=MockTransport(_turns))
    closed.connect()
    closed.disconnect()
    del closed
    never = ClaudeClient(transport=MockTransport(_turns))
    del never
    assert isinstance(list(query("hi", transport=MockTransport(_turns)))[-1], ResultMessage)  # to its end
    early = query("hi", transport=MockTransport(_talks))
    next(early)
    early.close()
    del early
    with query("hi", transport=MockTransport(_talks)) as messages:
        next(messages)
    del messages
    unstarted = query("hi", transport=MockTransport(_turns))
    del unstarted
    with ClaudeClient(transport=MockTransport(_turns)) as client:
        client.query("hi")
        next(iter(client.receive_response()))  # a receive iterator dropped mid-way is the client's
        list(client.receive_response())
    del client
    _collected_threads_done()
    assert _resource_warnings(no_cycle_collector) == []


def test_a_spare_pool_dropped_open_is_closed_and_names_where_it_was_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                         no_cycle_collector: list[warnings.WarningMessage]) -> None:  # fmt: skip
    """A pool whose spares cannot start (no CLI here) is still open: dropped, it is closed. Its
    ``errors`` keep the failure, whose traceback holds the frame that started the spare, and so
    the pool: a cycle, which the cycle collector reaches (a pool whose spares started has none:
    tests/test_realcli_collected.py drops one with the collector off)."""
    from claude_sdkurl._engine import spares as _spares

    # (pytest keeps each log record, the failure in its arguments: not logged here)
    monkeypatch.setattr(logging.getLogger("claude_sdkurl.prewarm"), "disabled", True)
    options = ClaudeAgentOptions(cli_path=str(tmp_path / "no-claude"), env={"HOME": str(tmp_path)})
    pool = SparePool(1, options)  # the pool made here
    deadline = time.monotonic() + 10
    while pool._starting and time.monotonic() < deadline:  # its start thread holds it, briefly
        time.sleep(0.02)
    assert pool.errors
    gone = weakref.ref(pool)
    del pool
    deadline = time.monotonic() + 10
    while gone() is not None and time.monotonic() < deadline:  # (the start thread's last lines)
        gc.collect()
        time.sleep(0.02)
    assert gone() is None
    _collected_threads_done()
    made = _line_of("# the pool made here")
    assert _resource_warnings(no_cycle_collector) == [
        f"SparePool made at {__file__}:{made} was not closed: its Claude Code CLI is stopped now. "
        "Write `with SparePool(...) as pool:`, or call close()."
    ]
    assert [ref for ref in _spares._pools if ref() is not None] == []  # no open pool left to take from
    with SparePool(1, options) as kept:
        pass
    del kept
    assert len(_resource_warnings(no_cycle_collector)) == 1


def test_a_pool_whose_claimed_session_has_not_answered_yet_is_still_collectable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                                no_cycle_collector: list[warnings.WarningMessage]) -> None:  # fmt: skip
    """A claim leaves a refill with the claimed session (run at its first answer) and on a timer:
    neither holds the pool, which its program may drop while the session goes on."""
    monkeypatch.setattr(logging.getLogger("claude_sdkurl.prewarm"), "disabled", True)

    class Claimed:
        waiters: list[Any] = []

        def when_answering(self, fn: Any) -> None:
            self.waiters.append(fn)

    session = Claimed()
    pool = SparePool(1, ClaudeAgentOptions(cli_path=str(tmp_path / "no-claude"), env={"HOME": str(tmp_path)}))
    deadline = time.monotonic() + 10
    while pool._starting and time.monotonic() < deadline:
        time.sleep(0.02)
    pool.errors.clear()  # (the failed start's traceback holds the pool: see the test above)
    pool._refill_later(session)  # type: ignore[arg-type]
    timers = list(pool._refills)
    gone = weakref.ref(pool)
    del pool
    for timer in timers:
        timer.cancel()
        timer.join(5)
    deadline = time.monotonic() + 10
    while gone() is not None and time.monotonic() < deadline:  # the start thread's last lines
        time.sleep(0.02)
    assert gone() is None
    _collected_threads_done()
    assert len(_resource_warnings(no_cycle_collector)) == 1
    session.waiters[0]()  # the session answers later: its refill finds no pool, and does nothing
