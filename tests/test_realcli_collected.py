"""Issue 69, item 6, with the real CLI (2.1.330, stdio: spares need it): a connected client and a
spare pool with a spare parked, dropped without being closed, are collected by refcounting alone
(the cycle collector off), warn naming where they were made, and their CLI processes end."""

from __future__ import annotations

import os
import threading
import time
import warnings
import weakref
from pathlib import Path

import pytest

from claude_sdkurl import ClaudeAgentOptions, ClaudeClient, SparePool
from claude_sdkurl.testing import MockMessagesAPI, offline_env

from .servers import alive
from .test_collected import no_cycle_collector  # noqa: F401  (the fixture: warnings caught, the cycle collector off)

pytestmark = pytest.mark.realcli


@pytest.fixture
def options(cli_paths: dict[str, Path], api: MockMessagesAPI, home: Path) -> ClaudeAgentOptions:
    return ClaudeAgentOptions(cli_path=str(cli_paths["stdio"]), env=offline_env(api.url, home), cwd=str(home / "work"), transport="stdio")


def _ended(pid: int) -> bool:
    deadline = time.monotonic() + 30
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    while any(t.name == "claude-sdkurl-collected" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def test_a_client_and_a_pool_dropped_open_stop_their_clis(options: ClaudeAgentOptions, no_cycle_collector: list[warnings.WarningMessage]) -> None:
    caught = no_cycle_collector
    client = ClaudeClient(options)
    client.connect()
    pid = client.session.cli_pid
    assert pid is not None and alive(pid)
    gone = weakref.ref(client)
    del client
    assert gone() is None and _ended(pid)

    pool = SparePool(1, options)
    deadline = time.monotonic() + 60
    while (pool.stats["started"] < 1 or any(t.is_alive() for t in pool._threads)) and not pool.errors and time.monotonic() < deadline:
        time.sleep(0.05)  # (the thread that started the spare holds the pool until it ends)
    [spare] = pool._parked
    spare_pid = spare.pid()
    assert spare_pid is not None and alive(spare_pid)
    dropped = weakref.ref(pool)
    del pool, spare
    assert len([w for w in caught if issubclass(w.category, ResourceWarning)]) == 2  # warned at once, by refcounting: nothing else held the pool
    assert _ended(spare_pid)
    assert dropped() is None  # (its close ran on a thread of its own, then it went)
    warned = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert [w.split(" made at ")[0] for w in warned] == ["ClaudeClient", "SparePool"], warned
    assert all(f" made at {__file__}:" in w for w in warned) and os.path.exists(__file__)
