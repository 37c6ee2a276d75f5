"""What the relay keeps and for how long (issue 56, items 2 and 3): history capped in bytes per
session and in total, ended sessions' lines let go once nobody could still come for them, a
frontend that takes nothing let go while sessions are idle, and a flood of silent sockets that
cannot fill the program's stderr with warnings.

Hostile first: sessions that stream megabytes and end with nobody watching, a frontend that never
reads while nothing else happens, two hundred connections that never finish their handshake.
"""

from __future__ import annotations

import gc
import json
import logging
import socket
import threading
import time
import tracemalloc
from typing import Any

import pytest

from claude_sdkurl import relay
from claude_sdkurl.relay import _hub

from claude_sdkurl._engine.transport import TransportCallbacks, taps

from .test_relay import StandIn, frontend, plan, read_until, served, watched  # noqa: F401 (served is a fixture)


def said_and_ended(served: relay.Relay, megabytes: float, line_bytes: int = 30_000) -> Any:
    """:func:`big_session`, once the relay has taken all of it: the relay's record of it."""
    big_session(megabytes, line_bytes)
    assert served.hub.drain(60)
    return list(served.hub.sessions.values())[-1]


def big_session(megabytes: float, line_bytes: int = 30_000) -> Any:
    """A stand-in session that said about ``megabytes`` of tool output, then ended (the session's
    side keeps none of it: what stays is the relay's)."""
    inner = StandIn()
    taps.wrapped(inner, plan()).start(TransportCallbacks(on_data=lambda data: None, on_exit=lambda code, err: None))
    inner.emit({"type": "system", "subtype": "init", "session_id": f"big-{id(inner)}"})
    payload = "z" * line_bytes
    for i in range(int(megabytes * 1_000_000 / line_bytes)):
        inner.emit({"type": "user", "session_id": "x", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": payload}]}})
    inner.emit({"type": "result", "subtype": "success", "is_error": False, "session_id": "x"})
    inner.exit(0)
    return inner


def test_twenty_ended_sessions_of_three_megabytes_keep_no_more_than_the_total_cap(served: relay.Relay, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_hub, "HISTORY_BYTES", 1_000_000)
    monkeypatch.setattr(_hub, "TOTAL_HISTORY_BYTES", 4_000_000)
    hub = served.hub
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(20):
            big_session(3)
            assert hub.drain(60)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    sessions = list(hub.sessions.values())
    assert len(sessions) == 20 and all(s.state == "ended" for s in sessions)
    # each session within its own cap, all of them within the total (what the hub counts) ...
    assert all(s.history_bytes <= 1_000_000 for s in sessions)
    assert sum(s.history_bytes for s in sessions) <= 4_000_000
    assert hub.history_bytes == sum(s.history_bytes for s in sessions)
    # ... and what the process holds (not the hub's own arithmetic): 60 MB said, under 8 MB kept
    assert kept < 8_000_000, kept
    # the newest sessions keep their last lines; the oldest were let go first, whole
    assert sessions[-1].history and sessions[0].history_bytes == 0
    last = hub.history(sessions[-1].key)
    assert last is not None and json.loads(last[-1][2])["type"] == "result"


def test_a_session_longer_than_its_cap_keeps_its_newest_lines_and_a_page_is_told_what_was_let_go(served: relay.Relay, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_hub, "HISTORY_BYTES", 200_000)
    session = said_and_ended(served, 1, line_bytes=10_000)
    assert 150_000 < session.history_bytes <= 200_000
    seqs = [seq for seq, _, _ in session.history]
    assert seqs == list(range(seqs[0], session.seq + 1)) and seqs[0] > 1  # the newest, in order, no gap
    assert session.history_dropped == seqs[0] - 1
    with frontend(served, "/events") as page:
        read_until(page, lambda f: f.get("k") == "hello")
        page.send(json.dumps({"op": "history", "session": session.key}))
        got = read_until(page, lambda f: f.get("k") == "history")[-1]
    assert got["dropped"] == seqs[0] - 1
    assert [n for n, _, _ in got["lines"]] == seqs


def test_an_ended_sessions_lines_are_let_go_when_nobody_watched_it_for_the_keep_time(served: relay.Relay, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_hub, "ENDED_KEEP_SECONDS", 1.0)
    monkeypatch.setattr(_hub, "HOUSEKEEPING_SECONDS", 0.1)
    session = said_and_ended(served, 0.2)
    assert session.history_bytes > 0  # kept at first: a page may still come for it
    deadline = time.monotonic() + 30
    while session.history_bytes and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session.history_bytes == 0 and not session.history and served.hub.history_bytes == 0
    # still listed, with what the page needs to say so
    assert session.public()["lines_released"] is True and session.public()["state"] == "ended"


def test_a_watched_ended_session_keeps_its_lines_while_a_page_is_open(served: relay.Relay, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_hub, "ENDED_KEEP_SECONDS", 2.0)
    monkeypatch.setattr(_hub, "HOUSEKEEPING_SECONDS", 0.1)
    with frontend(served, "/events") as page:
        read_until(page, lambda f: f.get("k") == "hello")
        session = said_and_ended(served, 0.2)
        time.sleep(4.0)  # two keep times with a page open
        assert session.history_bytes > 0
    left = time.monotonic()
    deadline = left + 30  # the page gone: the keep time counts from then, not from the session's end
    while session.history_bytes and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session.history_bytes == 0
    assert time.monotonic() - left > 1.5


def test_a_frontend_that_takes_nothing_is_let_go_while_every_session_is_idle(served: relay.Relay, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_hub, "STUCK_SECONDS", 1.0)
    monkeypatch.setattr(_hub, "HOUSEKEEPING_SECONDS", 0.1)
    stuck = frontend(served, ping_interval=None, close_timeout=1)
    stuck.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        inner, _ = watched()
        inner.emit({"type": "system", "subtype": "init", "session_id": "s"})
        big = {"type": "stream_event", "session_id": "s", "event": {"delta": {"type": "text_delta", "text": "y" * 50_000}}}
        for _ in range(100):  # enough to fill the socket's buffers, far from the frontend's own bound
            inner.emit(big)
        assert served.hub.drain(60)
        # the session says nothing more: only the relay's own watch can let the frontend go
        deadline = time.monotonic() + 30
        while served.hub.frontends and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not served.hub.frontends
    finally:
        stuck.close()


def test_a_frontend_that_reads_slowly_is_not_let_go(served: relay.Relay, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_hub, "STUCK_SECONDS", 1.0)
    monkeypatch.setattr(_hub, "HOUSEKEEPING_SECONDS", 0.05)
    monkeypatch.setattr(_hub, "COALESCE_SECONDS", 0.3)  # each line waits 0.3 s in the queue: the watch sees it there
    with frontend(served, max_size=None) as slow:
        inner, _ = watched()
        inner.emit({"type": "system", "subtype": "init", "session_id": "s"})
        for i in range(4):  # a line after a pause longer than the stuck time: idle is not stuck
            time.sleep(1.5)
            inner.emit({"type": "stream_event", "session_id": "s", "event": {"n": i}})
            read_until(slow, lambda f, i=i: f.get("event", {}).get("n") == i, 20)
        time.sleep(2.0)  # idle, nothing queued: not stuck
        assert len(served.hub.frontends) == 1


def test_two_hundred_silent_sockets_print_one_warning_not_two_hundred(served: relay.Relay, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="claude_sdkurl")
    sockets = []
    try:
        for _ in range(200):
            sockets.append(socket.create_connection(("127.0.0.1", served.port), timeout=10))
        # the relay still answers a real frontend
        with frontend(served) as ws:
            ws.ping().wait(10)
    finally:
        for s in sockets:
            s.close()
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING and "handshake" in r.getMessage()]
    assert 1 <= len(warned) <= 2, [r.getMessage() for r in warned]
    assert "dropping the oldest" in warned[0].getMessage()


def test_running_sessions_over_the_total_give_up_their_oldest_lines_the_biggest_first(served: relay.Relay,
                                                                                      monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """No session has ended: the total is kept by taking the oldest lines of the session that keeps
    the most, each keeping its newest; a session forgotten from the listing takes its bytes along."""
    monkeypatch.setattr(_hub, "HISTORY_BYTES", 10_000_000)
    monkeypatch.setattr(_hub, "TOTAL_HISTORY_BYTES", 300_000)
    hub = served.hub
    big, _ = watched()
    small, _ = watched()
    for inner, size, count in ((big, 40_000, 10), (small, 1_000, 20)):
        inner.emit({"type": "system", "subtype": "init", "session_id": f"s{size}"})
        for i in range(count):
            inner.emit({"type": "user", "session_id": "x", "message": {"role": "user", "content": f"{i}:" + "z" * size}})
    assert hub.drain(60)
    first, second = list(hub.sessions.values())[-2:]
    assert hub.history_bytes <= 300_000 and hub.history_bytes == first.history_bytes + second.history_bytes
    assert second.history_dropped == 0 and len(second.history) == 21  # the small one untouched
    assert first.history_dropped > 0 and json.loads(first.history[-1][2])["message"]["content"].startswith("9:")
    # one line bigger than the whole total: kept alone (the newest line of a session always is)
    one, _ = watched()
    one.emit({"type": "user", "session_id": "x", "message": {"role": "user", "content": "y" * 400_000}})
    assert hub.drain(60)
    assert len(list(hub.sessions.values())[-1].history) == 1


def test_sessions_forgotten_from_the_listing_take_their_bytes_along(served: relay.Relay, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_hub, "KEEP_ENDED", 2)
    for _ in range(5):
        big_session(0.1)
        assert served.hub.drain(60)
    watched()  # a new session makes the hub forget the oldest ended ones
    assert served.hub.drain(60)
    assert len([s for s in served.hub.sessions.values() if not s.running]) == 2
    assert served.hub.history_bytes == sum(s.history_bytes for s in served.hub.sessions.values())


def test_a_session_whose_lines_were_all_let_go_says_how_many(served: relay.Relay, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_hub, "ENDED_KEEP_SECONDS", 0.2)
    monkeypatch.setattr(_hub, "HOUSEKEEPING_SECONDS", 0.1)
    session = said_and_ended(served, 0.05)
    deadline = time.monotonic() + 30
    while not session.lines_released and time.monotonic() < deadline:
        time.sleep(0.05)
    with frontend(served, "/events") as page:
        read_until(page, lambda f: f.get("k") == "hello")
        page.send(json.dumps({"op": "history", "session": session.key}))
        got = read_until(page, lambda f: f.get("k") == "history")[-1]
    assert got["lines"] == [] and got["dropped"] == session.seq > 0


# ---------------------------------------------------------------- the hub's one writer (issue 68)


def _lines(n: int) -> list[bytes]:
    """A session's init, then ``n`` numbered stream events."""
    init = json.dumps({"type": "system", "subtype": "init", "session_id": "w"}) + "\n"
    return [init.encode()] + [(json.dumps({"type": "stream_event", "session_id": "w", "event": {"n": i}}) + "\n").encode()
                              for i in range(n)]


def test_what_was_fed_before_a_drain_is_queued_when_it_returns() -> None:
    """What the hub's thread offers is staged and queued once per batch of its inbox; a drain (and
    so a flush: a program's last lines) handled in the middle of a batch queues what came before
    it first, so the flush waits for it to be written. The batch is laid out here whole: lines,
    the drain's mark, then 3,000 more lines that take the hub's thread a while."""
    hub = _hub.Hub()
    sent: list[bytes] = []
    try:
        front = _hub.Frontend("notes", sent.append, lambda: None)
        hub.join(front)
        session, other = hub.add_session("stdio", lambda line: None), hub.add_session("stdio", lambda line: None)
        assert hub.drain(30)
        marked = threading.Event()
        with hub._inbox_ready:
            hub._inbox.extend([("data", session, "cli", b"".join(_lines(300))), ("mark", marked),
                               ("data", other, "cli", b"".join(_lines(3000)))])  # fmt: skip
            hub._inbox_ready.notify()
        assert marked.wait(30)
        with front._lock:  # the init and the 300 lines: queued, being written or written
            held = len(front._queue) + len(_frames(b"".join(sent)))
            assert held >= 301 or front._sending, held
        hub.flush(30)
        got = [json.loads(frame[2:] if frame[1] < 126 else frame[4:]) for frame in _frames(b"".join(sent))]
        assert [f["event"]["n"] for f in got if f.get("type") == "stream_event"][:300] == list(range(300))
    finally:
        hub.close()


def _frames(data: bytes) -> list[bytes]:
    """Server frames (unmasked, text) cut apart."""
    out, i = [], 0
    while i < len(data):
        size, head = data[i + 1] & 0x7F, 2
        if size == 126:
            size, head = int.from_bytes(data[i + 2:i + 4], "big"), 4
        elif size == 127:
            size, head = int.from_bytes(data[i + 2:i + 10], "big"), 10
        out.append(data[i:i + head + size])
        i += head + size
    return out


def test_frontends_the_shared_writer_serves_get_every_line_in_order_and_a_full_one_gets_a_thread_of_its_own() -> None:
    """Two frontends written by the hub's one writer: one takes everything at once, one takes
    a few bytes of each write only (a socket that is full): the first is never given a thread,
    the second is, and writes what the shared writer could not before anything else; both get
    every line, whole and in order."""
    hub = _hub.Hub()
    fast: list[bytes] = []
    slow: list[bytes] = []

    def take_some(data: bytes) -> int:
        slow.append(data[:7])
        return 7

    try:
        quick = _hub.Frontend("notes", fast.append, lambda: None, try_send=lambda data: fast.append(data) or len(data))
        full = _hub.Frontend("notes", slow.append, lambda: None, try_send=take_some)
        hub.join(quick)
        hub.join(full)
        session = hub.add_session("stdio", lambda line: None)
        for chunk in _lines(1000):  # (more than one write takes: WRITE_BATCH)
            hub.feed(session, "cli", chunk)
        hub.flush(30)
        for written in (fast, slow):
            got = [json.loads(f[2:]) for f in _frames(b"".join(written))]
            assert [f["event"]["n"] for f in got if f.get("type") == "stream_event"] == list(range(1000))
        assert not quick.thread.is_alive() and quick.thread.ident is None  # never needed one
        assert full.thread.ident is not None  # the socket was full: a writer of its own
    finally:
        hub.close()


def test_a_frontend_given_a_thread_before_it_was_started_is_started_once() -> None:
    """The shared writer can find a frontend's socket full before ``Hub.join`` has started the
    frontend (its first listing is queued under the hub's lock): the frontend's thread, started
    there, is not started again."""
    hub = _hub.Hub()
    sent: list[bytes] = []
    try:
        front = _hub.Frontend("notes", sent.append, lambda: None, try_send=lambda data: 0)
        front.writer = hub.writer
        front.offer('{"type": "status", "text": "hello"}')
        assert front.write_shared() is False  # the socket took nothing: a thread of its own, started
        front.start()  # (as Hub.join does next)
        deadline = time.monotonic() + 10
        while not sent and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sent and sent[0].endswith(b'"hello"}')  # written whole by its own thread
        front.close()
        front.join()
    finally:
        hub.close()
