"""Whose turn the CLI answers when a relay frontend writes into a session (issue 60, items 1
and 2): the relay's tap cuts what it reads after each result and tells the session where
someone else's turn begins and ends, however the CLI's output is cut into chunks.

Hostile: a result's mark cut in two, its newline in the next chunk, a chunk a byte long, two
results in one chunk, an answer that quotes a result line, an interrupt while nothing runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from claude_sdkurl import relay
from claude_sdkurl._engine.transport import TransportCallbacks, taps

from .test_relay import StandIn, plan

OWN = {"type": "user", "message": {"role": "user", "content": "mine"}, "parent_tool_use_id": None, "session_id": ""}


def line(**frame: Any) -> bytes:
    return (json.dumps(frame, separators=(",", ":")) + "\n").encode()


def turn(said: str) -> bytes:
    """A turn as 2.1.330 writes it (its result line does not begin with its type)."""
    return (line(type="assistant", message={"content": [{"type": "text", "text": said}]}, session_id="s")
            + line(duration_ms=1, is_error=False, type="result", subtype="success", result=said, session_id="s"))


@pytest.fixture
def served() -> Iterator[relay.Relay]:
    with relay.serve(port=0, steer=True, announce=False) as r:
        yield r


def watched(served: relay.Relay) -> tuple[StandIn, Any, list[tuple[str, bytes]]]:
    inner = StandIn()
    outer = taps.wrapped(inner, plan())
    heard: list[tuple[str, bytes]] = []  # ("data", bytes) and ("outside", kind), in order
    outer.start(TransportCallbacks(on_data=lambda d: heard.append(("data", d if isinstance(d, bytes) else d.encode())),
                                   on_exit=lambda code, err: None, on_outside=lambda kind: heard.append(("outside", kind.encode()))))  # fmt: skip
    return inner, outer, heard


def owners(heard: list[tuple[str, bytes]]) -> list[tuple[str, str]]:
    """Each whole line read, with whose turn the session was told it belonged to."""
    now, partial, out = "own", b"", []
    for kind, data in heard:
        if kind == "outside":
            assert partial == b"", "told of a change of turn in the middle of a line"
            now = "theirs" if data == b"turn" else now if data == b"interrupt" else "own"
            continue
        partial += data
        *lines, partial = partial.split(b"\n")
        out += [(now, json.loads(raw).get("result") or json.loads(raw)["type"]) for raw in lines]
    return out


def split_every(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize("size", [1, 2, 7, 15, 16, 17, 40, 10_000])
def test_someone_elses_turn_is_told_apart_however_the_output_is_cut(served: relay.Relay, size: int) -> None:
    inner, outer, heard = watched(served)
    outer.send(json.dumps(OWN) + "\n")
    assert served.hub.drain(10)
    session = outer.watched
    assert served.hub.message(session, "from the page") is None  # queued behind the session's own
    outer.send(json.dumps(OWN) + "\n")
    assert served.hub.message(session, "and again") is None
    outer.send(json.dumps(OWN) + "\n")
    assert served.hub.message(session, "last") is None
    quoting = 'the line was {"type":"result","result":"x"}'  # a quoted result line: escaped, not a result
    nested = line(type="result", subtype="success", result="two", session_id="s", extra={"type": "result"})  # one result, two marks
    stream = turn("one") + turn("page") + turn(quoting) + line(type="assistant", message={}, session_id="s") + nested
    stream += turn("three") + turn("four")
    for chunk in split_every(stream, size):
        inner.callbacks.on_data(chunk)  # type: ignore[union-attr]
    assert b"".join(d for k, d in heard if k == "data") == stream  # every byte, in order, once
    assert owners(heard) == [("own", "assistant"), ("own", "one"), ("theirs", "assistant"), ("theirs", "page"),
                             ("own", "assistant"), ("own", quoting), ("theirs", "assistant"), ("theirs", "two"),
                             ("own", "assistant"), ("own", "three"), ("theirs", "assistant"), ("theirs", "four")]  # fmt: skip


def test_two_results_in_one_chunk_and_only_the_sessions_own_turns(served: relay.Relay) -> None:
    inner, outer, heard = watched(served)
    for _ in range(3):
        outer.send(json.dumps(OWN) + "\n")
    inner.callbacks.on_data(turn("a") + turn("b"))  # type: ignore[union-attr]
    inner.callbacks.on_data(turn("c"))  # type: ignore[union-attr]
    assert [k for k, _ in heard] == ["data", "data"]  # nothing to tell, nothing cut
    assert served.hub.message(outer.watched, "late") is None
    inner.callbacks.on_data(turn("late"))  # type: ignore[union-attr]
    assert owners(heard)[-2:] == [("theirs", "assistant"), ("theirs", "late")]


def test_an_interrupt_is_the_sessions_turn_only_while_one_runs(served: relay.Relay) -> None:
    inner, outer, heard = watched(served)
    assert served.hub.interrupt(outer.watched) is None  # nothing asked: nothing to mark
    assert ("outside", b"interrupt") not in heard
    outer.send(json.dumps(OWN) + "\n")
    assert served.hub.interrupt(outer.watched) is None
    assert heard[-1] == ("outside", b"interrupt")
    assert any('"subtype": "interrupt"' in sent for sent in inner.sent)



def test_a_clients_default_session_id_is_the_sessions_own_on_ws(served: relay.Relay) -> None:
    """Issue 59, item 6: ClaudeClient.query() writes session_id "default" (as the official SDK
    does); the relay passed it on, so a frontend of the notes opened a stray "default" tab with
    every client's prompts and no session's tab showed its own."""
    from .test_relay import frontend, read_until

    with frontend(served, token=served.token) as ws:
        inner, outer, _ = watched(served)
        inner.callbacks.on_data(line(type="system", subtype="init", session_id="real-id"))  # type: ignore[union-attr]
        outer.send(json.dumps({**OWN, "session_id": "default"}) + "\n")
        got = read_until(ws, lambda f: f.get("type") == "user")
    assert got[-1]["session_id"] == "real-id"


def test_a_session_ended_by_an_interrupt_is_interrupted_not_failed(served: relay.Relay) -> None:
    """Issue 59, item 6: a turn the page (or the program) interrupted ended the session's row as
    "failed"; a session whose last turn was interrupted is "interrupted"; a real error stays
    "failed"."""
    inner, outer, _ = watched(served)
    inner.callbacks.on_data(line(type="system", subtype="init", session_id="s"))  # type: ignore[union-attr]
    outer.send(json.dumps(OWN) + "\n")
    assert served.hub.interrupt(outer.watched) is None
    inner.callbacks.on_data(line(type="result", subtype="error_during_execution", is_error=True, session_id="s"))  # type: ignore[union-attr]
    inner.exit(0)
    assert served.hub.drain(10)
    assert outer.watched.state == "interrupted" and outer.watched.error is None
    inner, outer, _ = watched(served)
    inner.callbacks.on_data(line(type="system", subtype="init", session_id="t"))  # type: ignore[union-attr]
    outer.send(json.dumps(OWN) + "\n")
    inner.callbacks.on_data(line(type="result", subtype="error_max_turns", is_error=True, session_id="t"))  # type: ignore[union-attr]
    inner.exit(0)
    assert served.hub.drain(10)
    assert outer.watched.state == "failed" and outer.watched.error == "error_max_turns"
