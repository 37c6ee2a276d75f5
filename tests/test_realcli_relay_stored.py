"""The relay's page beyond the live sessions (issue 59, items 3 and 4), on the real CLI 2.1.330:
given the program's options, it lists the sessions they would resume and the calls parked in
them, decides a parked call exactly once for what it showed, and continues a stored session.
Hostile cases first: forged and path-like ids, a call shown otherwise than the session has it,
a call decided by code first, two pages at once, a read-only relay, no token."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import ResultMessage, query, relay
from claude_sdkurl.approvals import approve, decision_of, deny, list_parked, parked
from claude_sdkurl.testing import MockMessagesAPI
from tests.test_realcli_approvals import _decision_files, _options, responder, runs
from tests.test_relay import TOKEN, frontend, read_until, status_of

pytestmark = pytest.mark.realcli


def _park(options: Any, prompt: str) -> Any:
    waiting = parked([m for m in query(prompt, options) if isinstance(m, ResultMessage)][-1])
    assert waiting is not None
    return waiting


def _parked(cli_paths: Any, api: MockMessagesAPI, home: Path, tmp_path: Path, prompt: str) -> tuple[Path, Any, Any]:
    """A call parked by ``prompt``: (the log its command would append to, the options, the Parked)."""
    log = tmp_path / "ran.log"
    api.responder = responder(log)
    options = _options(cli_paths, api, home)
    return log, options, _park(options, prompt)


def _ask(page: Any, op: dict[str, Any], timeout: float = 60.0) -> dict[str, Any]:
    """Send one page operation; its ``done`` answer (the first, not the run's end)."""
    op.setdefault("id", f"t{time.monotonic_ns()}")
    page.send(json.dumps(op))
    frames = read_until(page, lambda f: f.get("k") == "done" and f.get("id") == op["id"] and not f.get("finished"), timeout)
    return frames[-1]


def _finished(page: Any, op_id: str, timeout: float = 120.0) -> dict[str, Any]:
    return read_until(page, lambda f: f.get("k") == "done" and f.get("id") == op_id and f.get("finished"), timeout)[-1]


def _stored(page: Any) -> dict[str, Any]:
    page.send(json.dumps({"op": "stored", "fresh": True}))
    return read_until(page, lambda f: f.get("k") == "stored", 60)[-1]


def _shown(waiting: Any, **changes: Any) -> dict[str, Any]:
    op = {"op": "decide_parked", "session_id": waiting.session_id, "tool_use_id": waiting.tool_use_id,
          "tool_name": waiting.tool_name, "input": waiting.tool_input, "allow": True}  # fmt: skip
    op.update(changes)
    return op


def test_a_parked_call_is_listed_and_forged_tampered_or_second_decisions_use_up_nothing(
    cli_paths: Any, api: MockMessagesAPI, home: Path, tmp_path: Path
) -> None:
    log, options, waiting = _parked(cli_paths, api, home, tmp_path, "item 5")
    served_before = len(api.message_requests())
    with relay.serve(port=0, announce=False, steer=True, token=TOKEN, options=options) as served:
        with frontend(served, "/events") as page:
            listing = read_until(page, lambda f: f.get("k") == "stored", 60)[-1]
            (shown,) = listing["parked"]
            assert (shown["session_id"], shown["tool_use_id"], shown["tool_name"], shown["input"]) == (
                waiting.session_id, waiting.tool_use_id, "Bash", waiting.tool_input)  # fmt: skip
            assert shown["parked_at"]  # when the CLI recorded the deferral
            assert [s["session_id"] for s in listing["stored"]] == [waiting.session_id]

            forged = [
                _shown(waiting, tool_use_id="toolu_mock_99"),  # well formed, not in the session
                _shown(waiting, tool_use_id="../../../../tmp/owned"),
                _shown(waiting, tool_use_id=str(tmp_path / "owned")),
                _shown(waiting, session_id="../" + waiting.session_id),
                _shown(waiting, session_id="00000000-0000-4000-8000-000000000000"),
                _shown(waiting, input={"command": "echo harmless"}),  # not what the session would run
                _shown(waiting, tool_name="Write"),
                _shown(waiting, input="rm -rf /"),  # not even an input
            ]
            for op in forged:
                answer = _ask(page, op)
                assert answer["error"], op
            assert not (tmp_path / "owned").exists() and not Path("/tmp/owned").exists()
            assert _decision_files(home) == []  # nothing claimed ...
            assert len(api.message_requests()) == served_before and runs(log) == []  # ... nothing resumed, nothing ran
            for key in ("stored:../../../etc/passwd", "stored:" + str(home), "stored:00000000-0000-4000-8000-000000000000"):
                page.send(json.dumps({"op": "history", "session": key}))
                answer = read_until(page, lambda f: f.get("k") == "history" and f.get("s") == key, 30)[-1]
                assert answer["lines"] == [] and answer["error"] == "no such stored session"

            # The call as shown: decided once. Two pages at once: one wins, the other is told.
            with frontend(served, "/events") as other:
                read_until(other, lambda f: f.get("k") == "stored", 60)
                ops = [dict(_shown(waiting), id="first"), dict(_shown(waiting, allow=False), id="second")]
                answers: dict[str, dict[str, Any]] = {}
                threads = [threading.Thread(target=lambda p=p, op=op: answers.update({op["id"]: _ask(p, op)}))
                           for p, op in ((page, ops[0]), (other, ops[1]))]  # fmt: skip
                for t in threads:
                    t.start()
                for t in threads:
                    t.join(120)
            errors = sorted((answers["first"]["error"] is None, answers["second"]["error"] is None))
            assert errors == [False, True], answers  # exactly one decision taken
            winner = "first" if answers["first"]["error"] is None else "second"
            loser = str(answers["second" if winner == "first" else "first"]["error"])
            assert "already" in loser or "running now" in loser, loser  # claimed, or the winner's run is resuming it
            assert _finished(page, winner)["error"] is None
            assert runs(log) == ([5] if winner == "first" else [])  # approved: once; denied: never
            assert _ask(page, _shown(waiting))["error"]  # a third decision: refused
            assert _stored(page)["parked"] == []  # decided: no longer waiting
            assert decision_of(waiting, options) == ("allow" if winner == "first" else "deny")
    assert runs(log) == ([5] if winner == "first" else [])


def test_a_call_decided_by_code_first_is_refused_on_the_page_and_never_runs(
    cli_paths: Any, api: MockMessagesAPI, home: Path, tmp_path: Path
) -> None:
    log, options, waiting = _parked(cli_paths, api, home, tmp_path, "item 10")
    claimed = _park(options, "item 20")
    with relay.serve(port=0, announce=False, steer=True, token=TOKEN, options=options) as served:
        with frontend(served, "/events") as page:
            assert len(read_until(page, lambda f: f.get("k") == "stored", 60)[-1]["parked"]) == 2
            run = approve(claimed, options)  # claimed by code; its run not even begun, no result in the session yet
            listed = _stored(page)["parked"]
            assert [p["tool_use_id"] for p in listed] == [waiting.tool_use_id], listed  # a claimed call is not offered
            assert "approved already" in str(_ask(page, _shown(claimed, allow=False))["error"])
            list(run)
            assert runs(log) == [20]
            deny(waiting, options, reason="not today")  # a program decides while the page shows it
            answer = _ask(page, _shown(waiting))  # the page's stale Approve
            assert answer["error"] and ("already" in answer["error"] or "result" in answer["error"])
            assert _stored(page)["parked"] == []
    assert runs(log) == [20]
    assert list_parked(options) == []


def test_a_read_only_relay_or_one_without_options_decides_nothing_and_a_page_needs_the_token(
    cli_paths: Any, api: MockMessagesAPI, home: Path, tmp_path: Path
) -> None:
    log, options, waiting = _parked(cli_paths, api, home, tmp_path, "item 15")
    served_before = len(api.message_requests())
    with relay.serve(port=0, announce=False, steer=False, token=TOKEN, options=options) as served:
        host = {"Host": f"127.0.0.1:{served.port}"}
        assert status_of(served.port, "/events", host) == 401
        assert status_of(served.port, "/events?token=" + "x" * 27, host) == 401
        with frontend(served, "/events") as page:
            listing = read_until(page, lambda f: f.get("k") == "stored", 60)[-1]
            assert len(listing["parked"]) == 1 and listing["resumable"] is False  # shown, not decidable
            assert "read-only" in str(_ask(page, _shown(waiting))["error"])
            assert "read-only" in str(_ask(page, {"op": "continue", "session_id": waiting.session_id, "text": "go on"})["error"])
    with relay.serve(port=0, announce=False, steer=True, token=TOKEN) as served:  # no options
        with frontend(served, "/events") as page:
            assert "no options" in str(_ask(page, _shown(waiting))["error"])
    assert _decision_files(home) == [] and len(api.message_requests()) == served_before and runs(log) == []


def test_a_stored_session_is_read_and_continued_once_at_a_time(cli_paths: Any, api: MockMessagesAPI, home: Path, tmp_path: Path) -> None:
    log = tmp_path / "ran.log"
    api.responder = responder(log)
    options = _options(cli_paths, api, home)
    first = [m for m in query(f"hello there, the relay's token is {TOKEN}", options) if isinstance(m, ResultMessage)][-1]
    with relay.serve(port=0, announce=False, steer=True, token=TOKEN, options=options) as served:
        with frontend(served, "/events") as page:
            listing = read_until(page, lambda f: f.get("k") == "stored", 60)[-1]
            assert [s["key"] for s in listing["stored"]] == [f"stored:{first.session_id}"] and listing["parked"] == []
            key = f"stored:{first.session_id}"
            page.send(json.dumps({"op": "history", "session": key}))
            lines = read_until(page, lambda f: f.get("k") == "history" and f.get("s") == key, 30)[-1]["lines"]
            said = [(d, json.loads(raw)["type"]) for _, d, raw in lines]
            assert said == [("sdk", "user"), ("cli", "assistant")]  # the prompt as sent, the answer as said
            assert TOKEN not in json.dumps(lines) and "the relay's token is <scrubbed>" in json.dumps(lines)  # scrubbed as live lines are
            requests_before = len(api.message_requests())
            going = _ask(page, {"op": "continue", "session_id": first.session_id, "text": "and again", "id": "c1"})
            assert going["error"] is None
            second = _ask(page, {"op": "continue", "session_id": first.session_id, "text": "twice at once"})
            assert "running now" in str(second["error"])  # one run at a time: two would fork the transcript
            assert _finished(page, "c1")["error"] is None
            resumed = api.message_requests()[requests_before:]
            assert resumed and "hello there" in json.dumps(resumed[0].messages()) and "and again" in json.dumps(resumed[0].messages())
            assert "twice at once" not in json.dumps([r.messages() for r in api.message_requests()])
            live = served.hub.by_session_id(first.session_id)
            assert live is not None and live.state == "ended"  # the turn ran here, watched like any other
            assert "not a session id" in str(_ask(page, {"op": "continue", "session_id": "../x", "text": "hi"})["error"])
