"""When a conversation's lease fence may let its CLI run to (issue 70, items 5 and 6), without a
CLI: a store that answers as slowly as the test says, a clock that moves only when the test (or
the store) moves it, a fence that notes what it is told. The fence fires ``FENCE_SHARE`` of a
lease after the last confirmed renewal, counted from when that renewal was sent, never from when
the store answered nor from the end of the whole lease. The real fence process and a frozen
holder: tests/test_realcli_conversations_outlive.py and tests/test_host_takeover.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from claude_sdkurl import ClaudeAgentOptions, Conversations
from claude_sdkurl import conversations as module
from claude_sdkurl.conversations import FENCE_SHARE, _Conversation
from claude_sdkurl.stores.conversations import ConversationStore

TTL = 10.0  # the lease: the fence's share of it is 6 s


class Clock:
    """``time.monotonic`` for the conversations module: it moves when told."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class SlowStore(ConversationStore):
    """Holds every lease for whoever asks; each call takes ``delay`` seconds of the clock."""

    def __init__(self, clock: Clock) -> None:
        self.clock, self.delay, self.renewals = clock, 0.0, 0

    def acquire(self, namespace: str, key: str, owner: str, ttl: float, replaces: Any = ()) -> tuple[bool, str | None]:
        self.clock.now += self.delay
        return True, None

    def renew(self, namespace: str, owner: str, keys: list[str], ttl: float) -> tuple[set[str], set[str]]:
        self.clock.now += self.delay
        self.renewals += 1
        return set(keys), set()

    def record(self, namespace: str, key: str, owner: str, session_id: str) -> bool:
        return True

    def release(self, namespace: str, key: str, owner: str) -> None:
        pass

    def session_id(self, namespace: str, key: str) -> str | None:
        return None


class Fence:
    """Notes each allowance it is given (seconds from now, the clock's now)."""

    def __init__(self) -> None:
        self.allowed: list[float] = []

    def allow(self, seconds: float) -> None:
        self.allowed.append(seconds)

    def release(self) -> None:
        pass


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(module, "time", SimpleNamespace(monotonic=clock, time=time.time, sleep=time.sleep))
    return clock


@pytest.fixture
def pool(clock: Clock) -> Iterator[Conversations]:
    chats = Conversations(ClaudeAgentOptions(), store=SlowStore(clock), lease_ttl=TTL, lease_wait=0)
    yield chats
    chats.close()


def held(confirmed: float) -> tuple[_Conversation, Fence]:
    fence = Fence()
    return _Conversation(key="k", options=ClaudeAgentOptions(), namespace="ns", leased=True, confirmed=confirmed, fence=fence), fence


def test_the_fences_share_is_after_the_holders_own_rule_and_before_the_lease_runs_out() -> None:
    assert 0.5 < FENCE_SHARE < 1.0 and FENCE_SHARE == 0.6


def test_a_confirmed_renewal_lets_the_cli_run_the_share_of_a_lease_from_when_it_was_sent(pool: Conversations, clock: Clock) -> None:
    """Issue 70, 5: a renewal sent at 102, read at 103: the fence may wait until 102 + 6 (3 s
    from 105, when it is told), not until the lease (112) runs out; an older renewal read later
    takes nothing back nor gives more; a renewal that says the lease is lost tells it nothing."""
    conversation, fence = held(confirmed=100.0)
    clock.now = 105.0
    assert pool._verdict(conversation, {"k"}, set(), sent=102.0) is None
    assert conversation.confirmed == 102.0
    assert fence.allowed == [pytest.approx(102.0 + 6.0 - 105.0)]
    assert pool._verdict(conversation, {"k"}, {"k"}, sent=101.0) == "yielded"  # sent before the last confirmed one
    assert conversation.confirmed == 102.0
    assert fence.allowed == [pytest.approx(3.0), pytest.approx(3.0)]
    assert pool._verdict(conversation, set(), set(), sent=104.0) == "lost"
    assert conversation.confirmed == 102.0 and len(fence.allowed) == 2


def test_the_fence_a_cli_starts_with_is_counted_from_when_its_lease_was_asked_for(pool: Conversations, clock: Clock,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Issues 70, 5 and 6: the lease asked for at 100, the store answering at 104 (slow), the CLI
    up at 107: its fence is told 100 + 6 - 107 = -1, so the least it takes (it fires at once),
    not the 6 s of a lease confirmed when the store answered or the CLI came up."""
    started: list[tuple[int, float]] = []

    class Client:
        def __init__(self, options: ClaudeAgentOptions) -> None:
            self._session = SimpleNamespace(cli_pid=4242)

        def connect(self) -> None:
            clock.now += 3.0  # the CLI takes 3 s to start

        def disconnect(self) -> None:
            pass

    monkeypatch.setattr(module, "ClaudeClient", Client)
    monkeypatch.setattr(module, "fence_cli", lambda pid, seconds: started.append((pid, seconds)) or Fence())
    pool.store.delay = 4.0  # type: ignore[attr-defined]
    conversation = _Conversation(key="k", options=ClaudeAgentOptions(), namespace="ns")
    pool._lease(conversation, 0)
    assert conversation.leased and conversation.confirmed == 100.0 and clock.now == 104.0
    pool._start(conversation)
    assert started == [(4242, pytest.approx(100.0 + 6.0 - 107.0))]
    # and a quick store, a quick CLI: the whole share, from the asking
    pool._stop(conversation)
    pool.store.delay = 0.5  # type: ignore[attr-defined]
    clock.now = 200.0
    pool._lease(conversation, 0)
    assert conversation.confirmed == 200.0
    pool._start(conversation)
    assert started[1] == (4242, pytest.approx(200.0 + 6.0 - 203.5))
    pool._stop(conversation)


def test_a_renewal_after_a_turn_is_counted_from_when_it_was_sent(pool: Conversations, clock: Clock) -> None:
    """Issue 70, 6: the renewal after a turn sent at 100 and answered at 104: the fence may
    wait 2 s more (100 + 6), not 6 (a slow store must not stretch a frozen holder's CLI)."""
    conversation, fence = held(confirmed=90.0)
    pool.store.delay = 4.0  # type: ignore[attr-defined]
    pool._yield_if_wanted(conversation)
    assert clock.now == 104.0 and conversation.confirmed == 100.0
    assert fence.allowed == [pytest.approx(2.0)]


def test_the_keepers_renewal_is_counted_from_when_it_was_sent(pool: Conversations, clock: Clock) -> None:
    """Issue 70, 6, the keeper thread's own renewals (each on a thread of its own): each takes
    the store 4 s, so each confirmed renewal lets the fence wait 2 s, never 6."""
    conversation, fence = held(confirmed=100.0)
    pool.store.delay = 4.0  # type: ignore[attr-defined]
    with pool._cond:
        pool._conversations["k"] = conversation
    deadline = time.monotonic() + 30
    while len(fence.allowed) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    with pool._cond:
        del pool._conversations["k"]
        conversation.leased = False
    assert len(fence.allowed) >= 2 and pool.store.renewals >= 2  # type: ignore[attr-defined]
    assert fence.allowed[:2] == [pytest.approx(2.0), pytest.approx(2.0)]
    assert not conversation.lost  # (confirmed each time: nothing stopped)


class FailingStore(SlowStore):
    """Answers every renewal with an error (a store down)."""

    def renew(self, namespace: str, owner: str, keys: list[str], ttl: float) -> tuple[set[str], set[str]]:
        self.renewals += 1
        raise OSError("the store is down")


def test_a_holder_that_cannot_renew_stops_its_cli_half_a_lease_after_the_last_confirmed_renewal(clock: Clock) -> None:
    """The holder's own rule, before the fence's: renewals failing, the CLI is stopped once
    more than half a lease (5 s) has gone by since the last confirmed renewal was sent, not
    before, and not only when the whole lease has run out."""
    store = FailingStore(clock)
    chats = Conversations(ClaudeAgentOptions(), store=store, lease_ttl=TTL, lease_wait=0)
    try:
        conversation, fence = held(confirmed=100.0)
        clock.now = 104.9
        with chats._cond:
            chats._conversations["k"] = conversation
        deadline = time.monotonic() + 30
        while store.renewals < 3 and not conversation.lost and time.monotonic() < deadline:
            time.sleep(0.02)
        assert store.renewals >= 3 and not conversation.lost and conversation.leased  # 4.9 s: kept
        clock.now = 105.1
        deadline = time.monotonic() + 15
        while not conversation.lost and time.monotonic() < deadline:
            time.sleep(0.02)
        assert conversation.lost and not conversation.leased and chats.stats["lost"] == 1  # 5.1 s: stopped
        assert fence.allowed == []  # (nothing confirmed: the fence was never told more)
    finally:
        chats.close()


def test_the_fence_process_fires_when_the_time_it_was_last_given_runs_out() -> None:
    """The fence itself (another process): given 60 s at the start, then told 0.5 s, it kills
    the CLI about 0.5 s later, not 60 s later; told nothing more, it does not wait for more."""
    import subprocess

    from claude_sdkurl._engine.transport.process import fence_cli

    cli = subprocess.Popen(["sleep", "300"], start_new_session=True)
    fence = None
    try:
        fence = fence_cli(cli.pid, 60)
        assert fence is not None
        time.sleep(0.3)
        assert cli.poll() is None  # within its 60 s
        began = time.monotonic()
        fence.allow(0.5)
        assert cli.wait(30) == -9  # SIGKILL, from the fence
        print(f"fenced off {time.monotonic() - began:.2f} s after being told 0.5 s")
        assert time.monotonic() - began >= 0.4  # not before the time it was given
    finally:
        if fence is not None:
            fence.release()
        if cli.poll() is None:
            cli.kill()
        cli.wait()
