"""The relay's page as a person uses it (issue 71), without a CLI: what survives a restart, the
states and what waits, and every new way the page steers a session, hostile cases first.

Sessions are the stand-in transports of tests/test_relay.py wrapped by the relay's tap (the
real-CLI and browser side is tests/test_relay_console_browser.py). Each decision applies to
exactly what was shown: an edited input is what runs, and only an input shown whole can be
edited; "Always allow" adds exactly one rule the CLI suggested, for the session only; a model
or a new session only as the deployer allows; a read-only page does none of it.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import ClaudeAgentOptions, relay
from claude_sdkurl.relay import _launch, _server
from claude_sdkurl.types import PermissionResultAllow, PermissionResultDeny, PermissionRuleValue, PermissionUpdate, ToolPermissionContext
from tests.test_relay import TOKEN, frontend, permission_request, read_until, served, status_of, waiting_for, watched  # noqa: F401

SUGGESTIONS = [  # the first three as CLI 2.1.330 suggests them for a Bash call (measured); none but the first is ever offered
    {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "touch a.txt"}], "behavior": "allow", "destination": "localSettings"},
    {"type": "addDirectories", "directories": ["/srv/work"], "destination": "session"},
    {"type": "setMode", "mode": "bypassPermissions", "destination": "session"},
    {"type": "replaceRules", "rules": [{"toolName": "Bash"}], "behavior": "allow", "destination": "session"},
    {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "touch b.txt"}], "behavior": "deny", "destination": "session"},
]
OFFERED = {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "touch a.txt"}], "behavior": "allow", "destination": "session"}


def get(port: int, path: str, headers: dict[str, str]) -> tuple[int, str]:
    """A plain GET: its status and body."""
    lines = [f"GET {path} HTTP/1.1", *[f"{k}: {v}" for k, v in headers.items()], "Connection: close"]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.decode("latin-1").partition("\r\n\r\n")
    return int(head.split(" ", 2)[1]), body


def page_op(page: Any, op: dict[str, Any], timeout: float = 20.0) -> dict[str, Any]:
    op.setdefault("id", f"t{time.monotonic_ns()}")
    page.send(json.dumps(op))
    return read_until(page, lambda f: f.get("k") == "done" and f.get("id") == op["id"] and not f.get("finished"), timeout)[-1]


def ask_on_thread(tool_use_id: str, tool_input: dict[str, Any], suggestions: list[dict[str, Any]] = ()) -> tuple[threading.Thread, list[Any]]:  # type: ignore[assignment]
    """relay.ask() as the session's worker calls it, with the CLI's suggestions."""
    answers: list[Any] = []
    updates = [PermissionUpdate(type=s["type"], rules=[PermissionRuleValue(r["toolName"], r.get("ruleContent")) for r in s.get("rules") or []] or None,
                                behavior=s.get("behavior"), mode=s.get("mode"), directories=s.get("directories"), destination=s.get("destination"))
               for s in suggestions]  # fmt: skip
    callback = relay.ask()
    thread = threading.Thread(target=lambda: answers.append(
        callback("Bash", tool_input, ToolPermissionContext(tool_use_id=tool_use_id, suggestions=updates))))  # fmt: skip
    thread.start()
    return thread, answers


def request(inner: Any, request_id: str, tool_use_id: str, tool_input: dict[str, Any], suggestions: list[dict[str, Any]] = ()) -> None:  # type: ignore[assignment]
    inner.emit({"type": "control_request", "request_id": request_id, "request": {
        "subtype": "can_use_tool", "tool_name": "Bash", "input": tool_input, "tool_use_id": tool_use_id,
        "permission_suggestions": list(suggestions)}})  # fmt: skip


# ---------------------------------------------------------------- restarts


def test_ping_answers_only_with_the_token_and_this_host_and_origin(served: relay.Relay) -> None:
    """The page asks /ping whether it may come back after the connection dropped: it needs the
    token (query, bearer or this port's cookie), this relay's Host, no foreign Origin; it says
    which run of the relay answers, the same as the page's hello."""
    port, host = served.port, {"Host": f"127.0.0.1:{served.port}"}
    assert get(port, "/ping", host)[0] == 401
    assert get(port, "/ping?token=" + "x" * 27, host)[0] == 401
    assert get(port, "/ping", {**host, "Cookie": f"claude_sdkurl_relay_1={TOKEN}"})[0] == 401  # another port's cookie
    assert get(port, f"/ping?token={TOKEN}", {"Host": f"evil.example:{port}"})[0] == 403
    assert get(port, f"/ping?token={TOKEN}", {**host, "Origin": "http://evil.example"})[0] == 403
    assert status_of(port, f"/ping?token={TOKEN}", host) == 404  # not a WebSocket
    status, body = get(port, "/ping", {**host, "Cookie": f"claude_sdkurl_relay_{port}={TOKEN}"})
    assert status == 200 and json.loads(body) == {"ok": True, "instance": served.hub.instance}
    with frontend(served, "/events") as page:
        assert json.loads(page.recv(timeout=10))["instance"] == served.hub.instance


def test_a_token_file_keeps_the_token_across_restarts_and_unsafe_files_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    where = tmp_path / "relay.token"
    with relay.serve(port=0, announce=False, token_file=where) as first:
        token, instance, port = first.token, first.hub.instance, first.port
    assert oct(where.stat().st_mode & 0o777) == "0o600" and where.read_text().strip() == token and len(token) >= 16
    with relay.serve(port=port, announce=False, token_file=where) as second:  # the program restarted
        assert second.token == token and second.hub.instance != instance
        status, body = get(port, f"/ping?token={token}", {"Host": f"127.0.0.1:{port}"})
        assert status == 200 and json.loads(body)["instance"] == second.hub.instance
    assert not [p for p in tmp_path.iterdir() if p.name != "relay.token"]  # no temporary left
    monkeypatch.setenv(relay.ENV, f"127.0.0.1:{port}")
    monkeypatch.setenv(relay.ENV_TOKEN_FILE, str(where))
    started = relay.from_environment()
    assert started is not None and started.token == token
    started.close()

    os.chmod(where, 0o640)
    with pytest.raises(relay.RelayError, match="read or written by others"):
        relay.serve(port=0, announce=False, token_file=where)
    os.chmod(where, 0o600)
    link = tmp_path / "link.token"
    link.symlink_to(where)
    with pytest.raises(relay.RelayError, match="a link is refused"):
        relay.serve(port=0, announce=False, token_file=link)
    short = tmp_path / "short.token"
    short.write_text("tooshort\n")
    short.chmod(0o600)
    with pytest.raises(relay.RelayError, match="no token of 16"):
        relay.serve(port=0, announce=False, token_file=short)
    spaced = tmp_path / "spaced.token"
    spaced.write_text("a token with spaces in it\n")
    spaced.chmod(0o600)
    with pytest.raises(relay.RelayError, match="no token of 16"):
        relay.serve(port=0, announce=False, token_file=spaced)
    (tmp_path / "folder.token").mkdir(mode=0o700)
    with pytest.raises(relay.RelayError, match="not a regular file"):
        relay.serve(port=0, announce=False, token_file=tmp_path / "folder.token")
    with pytest.raises(relay.RelayError, match="cannot be made"):
        relay.serve(port=0, announce=False, token_file=tmp_path / "missing" / "relay.token")
    with pytest.raises(relay.RelayError, match="not both"):
        relay.serve(port=0, announce=False, token_file=where, token=TOKEN)
    assert relay.current() is None


def test_the_commands_take_a_token_file_and_refuse_an_unsafe_one(tmp_path: Path) -> None:
    """``python -m claude_sdkurl.relay --token-file`` and the host's ``--relay-token-file``: an
    unsafe file stops the command with the reason (exit 2), before anything listens."""
    import subprocess
    import sys

    unsafe = tmp_path / "shared.token"
    unsafe.write_text("a-token-anyone-here-can-read-0123\n")
    unsafe.chmod(0o644)
    relay_cmd = subprocess.run([sys.executable, "-m", "claude_sdkurl.relay", "--port", "0", "--token-file", str(unsafe)],
                               capture_output=True, text=True, timeout=60)  # fmt: skip
    assert relay_cmd.returncode == 2 and "read or written by others" in relay_cmd.stderr, relay_cmd.stderr
    both = subprocess.run([sys.executable, "-m", "claude_sdkurl.relay", "--token", TOKEN, "--token-file", str(unsafe)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert both.returncode == 2 and "not both" in both.stderr
    host = subprocess.run([sys.executable, "-m", "claude_sdkurl.host", "--socket", str(tmp_path / "h" / "host.sock"), "--relay", "127.0.0.1:0",
                           "--relay-token-file", str(unsafe)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "HOME": str(tmp_path)})  # fmt: skip
    assert host.returncode == 2 and "read or written by others" in host.stderr, host.stderr


def test_two_programs_making_the_token_file_at_once_agree_on_one(tmp_path: Path) -> None:
    from claude_sdkurl.relay._token import token_from_file

    where = tmp_path / "relay.token"
    barrier = threading.Barrier(8)
    got: list[str] = []

    def make() -> None:
        barrier.wait()
        got.append(token_from_file(where))

    threads = [threading.Thread(target=make) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(got) == 8 and len(set(got)) == 1 and where.read_text().strip() == got[0]


# ---------------------------------------------------------------- states, and what waits


def listing(page: Any, want: Any) -> dict[str, Any]:
    """The page's listing of the one session once ``want(row)`` holds."""
    frames = read_until(page, lambda f: f.get("k") in ("sessions", "hello") and f["sessions"] and want(f["sessions"][-1]))
    return dict(frames[-1]["sessions"][-1])


@pytest.mark.relay(steer=True)
def test_a_session_reads_idle_running_waiting_parked_and_interrupted_as_it_goes(served: relay.Relay) -> None:
    inner, outer = watched()
    prompt = json.dumps({"type": "user", "message": {"role": "user", "content": "go"}, "session_id": ""}) + "\n"
    with frontend(served, "/events") as page:
        inner.emit({"type": "system", "subtype": "init", "session_id": "st", "model": "m"})
        assert listing(page, lambda r: r["session_id"] == "st")["state"] == "idle"  # alive, no turn under way
        outer.send(prompt)
        assert listing(page, lambda r: r["state"] != "idle")["state"] == "running"
        thread, answers = ask_on_thread("toolu_w", {"command": "make"})
        request(inner, "req-w", "toolu_w", {"command": "make"})
        row = listing(page, lambda r: r["state"] != "running")
        assert (row["state"], row["waiting"]) == ("waiting", 1)
        assert served.hub.decide("req-w", True, shown=("Bash", {"command": "make"})) is None
        thread.join(10)
        assert listing(page, lambda r: r["state"] != "waiting")["state"] == "running"
        inner.emit({"type": "result", "subtype": "success", "is_error": False, "session_id": "st", "num_turns": 3,
                    "total_cost_usd": 0.25, "usage": {"input_tokens": 100, "cache_read_input_tokens": 50, "output_tokens": 7}})  # fmt: skip
        row = listing(page, lambda r: r["state"] != "running")
        assert (row["state"], row["turns"], row["tokens"], row["cost_usd"]) == ("idle", 3, 157, 0.25)  # the result's own count of turns
        outer.send(prompt)
        inner.emit({"type": "assistant", "session_id": "st", "parent_tool_use_id": None,
                    "message": {"id": "m1", "content": [], "usage": {"input_tokens": 900, "cache_creation_input_tokens": 100, "output_tokens": 20}}},
                   {"type": "assistant", "session_id": "st", "parent_tool_use_id": "toolu_sub",  # a subagent's: its own context
                    "message": {"id": "m2", "content": [], "usage": {"input_tokens": 99999}}},
                   {"type": "result", "subtype": "success", "is_error": False, "session_id": "st", "num_turns": 1,
                    "terminal_reason": "tool_deferred", "modelUsage": {"m": {"contextWindow": 200000}, "a-subagents": {"contextWindow": 1000000}}})  # fmt: skip
        row = listing(page, lambda r: r["state"] not in ("running", "idle"))
        assert (row["state"], row["turns"], row["context_tokens"], row["context_window"]) == ("parked", 4, 1020, 200000)
        outer.send(prompt)
        assert listing(page, lambda r: r["state"] != "parked")["state"] == "running"
        outer.send(json.dumps({"type": "control_request", "request_id": "i1", "request": {"subtype": "interrupt"}}) + "\n")
        inner.emit({"type": "result", "subtype": "error_during_execution", "is_error": True, "session_id": "st", "num_turns": 1})
        assert listing(page, lambda r: r["state"] != "running")["state"] == "interrupted"
        outer.send(prompt)
        inner.emit({"type": "result", "subtype": "success", "is_error": False, "session_id": "st", "terminal_reason": "tool_deferred"})
        assert listing(page, lambda r: r["turns"] == 6)["state"] == "parked"
        inner.exit(0)
        row = listing(page, lambda r: not r["alive"])
    assert row["state"] == "parked"  # ended with its call parked: not merely "ended"
    assert isinstance(answers[0], PermissionResultAllow)


def test_a_turn_the_cli_starts_itself_reads_running_and_bad_counts_are_not_taken(served: relay.Relay) -> None:
    """The CLI wakes a turn of its own (a background task's notice) with no prompt written: its
    session_state_changed says so; a result with no prompt to answer never makes the count
    negative; a num_turns that is no count adds one turn."""
    inner, outer = watched()
    with frontend(served, "/events") as page:
        inner.emit({"type": "system", "subtype": "init", "session_id": "own"},
                   {"type": "system", "subtype": "session_state_changed", "state": "running", "session_id": "own"})  # fmt: skip
        assert listing(page, lambda r: r["session_id"] == "own" and r["state"] != "idle")["state"] == "running"
        for turns in (True, -4, "7", None):
            inner.emit({"type": "result", "subtype": "success", "is_error": False, "session_id": "own", "num_turns": turns})
        assert listing(page, lambda r: r["turns"] == 4)["state"] == "idle"
        outer.send(json.dumps({"type": "user", "message": {"role": "user", "content": "go"}, "session_id": ""}) + "\n")
        assert listing(page, lambda r: r["state"] != "idle")["state"] == "running"  # the earlier results did not eat this prompt
        inner.emit({"type": "system", "subtype": "session_state_changed", "state": "idle", "session_id": "own"})
        assert listing(page, lambda r: r["turns"] == 4)["state"] == "running"  # (a late "idle" of the last turn: the prompt waits)


def test_a_run_that_resumes_a_session_says_so(served: relay.Relay) -> None:
    """A resumed run's earlier turns are in the store: the page asks for them (issue 71, item 1)."""
    for args, resumed in ((["--resume=11111111-2222-4333-8444-555555555555"], True), (["--resume", "x"], True), (["--continue"], True),
                          (["--resume-session-at=u1", "--print"], False), ([], False)):  # fmt: skip
        _, outer = watched(args=args)
        assert outer.watched.resumed is resumed and outer.watched.public()["resumed"] is resumed, args  # type: ignore[attr-defined]


def test_a_parked_call_reaches_an_open_page_when_the_turn_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parked while the page is open (issue 71, item 2): the relay reads the stored sessions
    again when a turn ends, and tells the page; without a turn, within CATALOG_SECONDS."""
    from claude_sdkurl.relay._catalog import Catalog

    calls = {"n": 0, "parked": []}

    def listing_(self: Catalog, fresh: bool = False) -> tuple[list[Any], list[Any]]:
        calls["n"] += 1
        return [], list(calls["parked"])

    monkeypatch.setattr(Catalog, "listing", listing_)
    monkeypatch.setattr(_server, "CATALOG_SECONDS", 60.0)  # only a turn's end can bring it now
    with relay.serve(port=0, announce=False, steer=True, token=TOKEN + "2", options=ClaudeAgentOptions()) as here:
        with frontend(here, "/events", token=TOKEN + "2") as page:
            assert read_until(page, lambda f: f.get("k") == "stored")[-1]["parked"] == []
            inner, _ = watched()
            inner.emit({"type": "system", "subtype": "init", "session_id": "pk"})
            calls["parked"] = [{"session_id": "pk", "tool_use_id": "toolu_p", "tool_name": "Bash", "input": {}}]
            began = time.monotonic()
            inner.emit({"type": "result", "subtype": "success", "is_error": False, "session_id": "pk", "terminal_reason": "tool_deferred"})
            got = read_until(page, lambda f: f.get("k") == "stored" and f["parked"], timeout=30)[-1]
            assert got["parked"][0]["tool_use_id"] == "toolu_p" and time.monotonic() - began < 30
            before = calls["n"]
            time.sleep(0.5)
            assert calls["n"] == before  # nothing read again between turns (the interval is 60 s here)


# ---------------------------------------------------------------- decisions: shown, edited, always


@pytest.mark.relay(steer=True)
def test_an_edited_input_is_what_runs_and_only_an_input_shown_whole_may_be_edited(served: relay.Relay, monkeypatch: pytest.MonkeyPatch) -> None:
    inner, _ = watched({"DEPLOY_TOKEN": "s3cr3t-deploy-value"})
    inner.emit({"type": "system", "subtype": "init", "session_id": "ed"})
    with frontend(served, "/events") as page:
        thread, answers = ask_on_thread("toolu_e", {"command": "rm -rf build"})
        request(inner, "req-e", "toolu_e", {"command": "rm -rf build"})
        waiting_for(served, "req-e")
        shown = {"op": "decide", "id": "req-e", "allow": True, "tool_name": "Bash", "input": {"command": "rm -rf build"}}
        for bad, why in (({"edited": "rm -rf /"}, "JSON object"), ({"edited": ["x"]}, "JSON object"),
                         ({"edited": {"command": "ls"}, "allow": False}, "only an allow"),
                         ({"edited": {"command": "ls"}, "always": OFFERED}, "not both"),
                         ({"edited": {"command": "ls"}, "input": {"command": "rm -rf /"}}, "not the call that was shown")):  # fmt: skip
            assert why in str(page_op(page, {**shown, **bad})["error"]), bad
        assert answers == []  # still waiting
        assert page_op(page, {**shown, "edited": {"command": "rm -rf build/cache"}})["error"] is None
        thread.join(10)
        assert isinstance(answers[0], PermissionResultAllow) and answers[0].updated_input == {"command": "rm -rf build/cache"}
        assert answers[0].updated_permissions is None
        # an input with a secret in it is shown scrubbed: allowed or denied as it is, never edited
        thread, answers = ask_on_thread("toolu_s", {"command": "deploy --token s3cr3t-deploy-value"})
        request(inner, "req-s", "toolu_s", {"command": "deploy --token s3cr3t-deploy-value"})
        waiting_for(served, "req-s")
        asks = read_until(page, lambda f: f.get("k") == "asks" and f["asks"])[-1]["asks"]
        assert asks[0]["input"] == {"command": "deploy --token <scrubbed>"} and asks[0]["editable"] is False
        assert "s3cr3t-deploy-value" not in json.dumps(asks)
        decided = {"op": "decide", "id": "req-s", "allow": True, "tool_name": "Bash"}
        assert "not the call that was shown" in page_op(page, {**decided, "input": {"command": "deploy --token s3cr3t-deploy-value"}})["error"]
        assert "holds a secret" in page_op(page, {**decided, "input": asks[0]["input"], "edited": {"command": "deploy --token <scrubbed>"}})["error"]
        assert page_op(page, {**decided, "input": asks[0]["input"]})["error"] is None  # as shown
        thread.join(10)
    assert isinstance(answers[0], PermissionResultAllow) and answers[0].updated_input is None  # the call as the CLI asked it


@pytest.mark.relay(steer=True)
def test_always_allow_adds_exactly_the_rule_shown_for_the_session_and_nothing_else(served: relay.Relay) -> None:
    inner, _ = watched({"API_SECRET": "hidden-secret-value-9"})
    inner.emit({"type": "system", "subtype": "init", "session_id": "al"})
    with frontend(served, "/events") as page:
        thread, answers = ask_on_thread("toolu_a", {"command": "touch a.txt"}, SUGGESTIONS)
        request(inner, "req-a", "toolu_a", {"command": "touch a.txt"}, SUGGESTIONS)
        waiting_for(served, "req-a")
        asks = read_until(page, lambda f: f.get("k") == "asks" and f["asks"])[-1]["asks"]
        assert asks[0]["always"] == [OFFERED]  # the rule, for this session; never a settings file, a mode or a folder
        shown = {"op": "decide", "id": "req-a", "allow": True, "tool_name": "Bash", "input": {"command": "touch a.txt"}}
        forged = [
            {**OFFERED, "rules": [{"toolName": "Bash"}]},  # every Bash command
            {**OFFERED, "rules": [{"toolName": "Bash", "ruleContent": "touch *"}]},
            {**OFFERED, "destination": "localSettings"},  # the CLI's own suggestion, written to a file
            {**OFFERED, "destination": "userSettings"},
            {**OFFERED, "behavior": "deny"},
            {**OFFERED, "rules": OFFERED["rules"] * 2},
            {"type": "setMode", "mode": "bypassPermissions", "destination": "session"},
            {"type": "addDirectories", "directories": ["/"], "destination": "session"},
            "Bash(touch a.txt)",
        ]
        for rule in forged:
            assert "not one the CLI suggested" in str(page_op(page, {**shown, "always": rule})["error"]), rule
        assert "only an allow" in page_op(page, {**shown, "allow": False, "always": OFFERED})["error"]
        assert answers == []
        assert page_op(page, {**shown, "always": OFFERED})["error"] is None
        thread.join(10)
        assert isinstance(answers[0], PermissionResultAllow) and answers[0].updated_input is None
        assert answers[0].updated_permissions == [PermissionUpdate(type="addRules", rules=[PermissionRuleValue("Bash", "touch a.txt")],
                                                                   behavior="allow", destination="session")]  # fmt: skip
        # a suggestion whose rule holds a secret cannot be shown whole: not offered
        secret = [{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "curl -H hidden-secret-value-9"}],
                   "behavior": "allow", "destination": "session"}]  # fmt: skip
        thread, answers = ask_on_thread("toolu_b", {"command": "curl"}, secret)
        request(inner, "req-b", "toolu_b", {"command": "curl"}, secret)
        waiting_for(served, "req-b")
        asks = read_until(page, lambda f: f.get("k") == "asks" and f["asks"])[-1]["asks"]
        assert asks[0]["always"] == [] and "hidden-secret-value-9" not in json.dumps(asks)
        assert "not one the CLI suggested" in page_op(page, {**shown, "id": "req-b", "input": {"command": "curl"}, "always": secret[0]})["error"]
        assert page_op(page, {**shown, "id": "req-b", "input": {"command": "curl"}, "allow": False})["error"] is None
        thread.join(10)
    assert isinstance(answers[0], PermissionResultDeny)


def test_a_read_only_page_decides_edits_switches_and_starts_nothing(served: relay.Relay, tmp_path: Path) -> None:  # noqa: F811
    inner, _ = watched()
    inner.emit({"type": "system", "subtype": "init", "session_id": "ro"})
    request(inner, "req-r", "toolu_r", {"command": "ls"}, SUGGESTIONS)
    assert served.hub.drain()
    (key,) = served.hub.sessions
    with frontend(served, "/events") as page:
        read_until(page, lambda f: f.get("k") == "hello")
        shown = {"op": "decide", "id": "req-r", "allow": True, "tool_name": "Bash", "input": {"command": "ls"}}
        for op in ({**shown, "edited": {"command": "ls -la"}}, {**shown, "always": OFFERED},
                   {"op": "model", "session": key, "model": "claude-haiku-4-5"}):  # fmt: skip
            assert "read-only" in str(page_op(page, op)["error"]), op
        assert "lets no session be started" in page_op(page, {"op": "new_session", "cwd": str(tmp_path)})["error"]
    assert [json.loads(line)["type"] for line in inner.sent] == []  # nothing reached the CLI


def test_a_read_only_relay_offers_no_new_session_and_refuses_one(tmp_path: Path) -> None:
    with relay.serve(port=0, announce=False, token=TOKEN + "3", new_sessions=relay.NewSessions(ClaudeAgentOptions(), (str(tmp_path),))) as ro:
        with frontend(ro, "/events", token=TOKEN + "3") as page:
            assert read_until(page, lambda f: f.get("k") == "hello")[-1]["new_sessions"] is None  # not offered
            assert "read-only" in page_op(page, {"op": "new_session", "cwd": str(tmp_path)})["error"]


# ---------------------------------------------------------------- the model


@pytest.mark.relay(steer=True, models=("claude-sonnet-4-5", "claude-haiku-4-5"))
def test_a_model_switch_is_one_the_deployer_allows_and_the_cli_took(served: relay.Relay) -> None:
    inner, _ = watched()
    inner.emit({"type": "system", "subtype": "init", "session_id": "md", "model": "claude-opus-4-5"})
    assert served.hub.drain()
    (key,) = served.hub.sessions
    with frontend(served, "/events") as page:
        assert read_until(page, lambda f: f.get("k") == "hello")[-1]["models"] == ["claude-sonnet-4-5", "claude-haiku-4-5"]
        for forged in ("claude-opus-4-5", "default", "", None, ["claude-haiku-4-5"]):  # not allowed here: nothing sent
            assert "not a model this relay offers" in str(page_op(page, {"op": "model", "session": key, "model": forged})["error"]), forged
        assert inner.sent == []
        page.send(json.dumps({"op": "model", "session": key, "model": "claude-haiku-4-5", "id": "m1"}))
        deadline = time.monotonic() + 10
        while not inner.sent and time.monotonic() < deadline:
            time.sleep(0.01)
        (sent,) = [json.loads(line) for line in inner.sent]
        assert sent["request"] == {"subtype": "set_model", "model": "claude-haiku-4-5"}
        inner.emit({"type": "control_response", "response": {"subtype": "error", "request_id": sent["request_id"], "error": "no such model"}})
        refused = read_until(page, lambda f: f.get("k") == "done" and f.get("id") == "m1")[-1]
        assert "the CLI refused claude-haiku-4-5: no such model" in refused["error"]
        assert served.hub.session(key).model == "claude-opus-4-5"  # type: ignore[union-attr]
        page.send(json.dumps({"op": "model", "session": key, "model": "claude-sonnet-4-5", "id": "m2"}))
        while len(inner.sent) < 2 and time.monotonic() < deadline + 10:
            time.sleep(0.01)
        inner.emit({"type": "control_response", "response": {"subtype": "success", "request_id": json.loads(inner.sent[1])["request_id"]}})
        assert read_until(page, lambda f: f.get("k") == "done" and f.get("id") == "m2")[-1]["error"] is None
        assert served.hub.session(key).model == "claude-sonnet-4-5"  # type: ignore[union-attr]


@pytest.mark.relay(steer=True)
def test_without_a_list_the_models_are_those_the_cli_offers(served: relay.Relay) -> None:
    inner, outer = watched()
    outer.send(json.dumps({"type": "control_request", "request_id": "init1", "request": {"subtype": "initialize"}}) + "\n")
    inner.emit({"type": "control_response", "response": {"subtype": "success", "request_id": "init1", "response": {
        "models": [{"value": "default", "displayName": "Default"}, {"value": "haiku", "displayName": "Haiku"}, {"displayName": "no value"}]}}},
        {"type": "system", "subtype": "init", "session_id": "cm", "model": "claude-opus-4-5"})  # fmt: skip
    assert served.hub.drain()
    (key,) = served.hub.sessions
    with frontend(served, "/events") as page:
        assert read_until(page, lambda f: f.get("k") == "hello")[-1]["sessions"][0]["models"] == ["default", "haiku"]
        assert "not a model" in str(page_op(page, {"op": "model", "session": key, "model": "claude-opus-4-1"})["error"])
        page.send(json.dumps({"op": "model", "session": key, "model": "haiku", "id": "h"}))
        deadline = time.monotonic() + 10
        while len(inner.sent) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert [json.loads(line)["request"] for line in inner.sent] == [{"subtype": "initialize"}, {"subtype": "set_model", "model": "haiku"}]



@pytest.mark.relay(steer=True, models=("claude-sonnet-4-5",))
def test_the_deployers_list_wins_over_the_models_the_cli_offers(served: relay.Relay) -> None:
    """A session whose CLI offers more models than ``serve(models=)`` lists: the page may switch
    to the listed ones only (the CLI's own offer is no permission); nothing is sent otherwise."""
    inner, outer = watched()
    outer.send(json.dumps({"type": "control_request", "request_id": "init2", "request": {"subtype": "initialize"}}) + "\n")
    inner.emit({"type": "control_response", "response": {"subtype": "success", "request_id": "init2", "response": {
        "models": [{"value": "claude-sonnet-4-5"}, {"value": "claude-opus-4-5"}, {"value": "haiku"}]}}},
        {"type": "system", "subtype": "init", "session_id": "dl", "model": "claude-sonnet-4-5"})  # fmt: skip
    assert served.hub.drain()
    (key,) = served.hub.sessions
    assert served.hub.session(key).models  # type: ignore[union-attr]  # the CLI did offer its list
    with frontend(served, "/events") as page:
        read_until(page, lambda f: f.get("k") == "hello")
        for offered_by_the_cli_only in ("claude-opus-4-5", "haiku"):
            answer = page_op(page, {"op": "model", "session": key, "model": offered_by_the_cli_only})
            assert "not a model this relay offers" in str(answer["error"]), answer
    assert [json.loads(line)["request"] for line in inner.sent] == [{"subtype": "initialize"}]  # no set_model


# ---------------------------------------------------------------- new sessions from the page


class StubClient:
    """In place of ClaudeClient for the launcher's own rules (the real start is in the browser
    test): it connects at once and receives until it is disconnected."""

    made: list[StubClient] = []

    def __init__(self, options: Any) -> None:
        self.options = options
        self.gone = threading.Event()
        self.prompts: list[str] = []
        StubClient.made.append(self)

    def connect(self) -> None:
        key = (self.options.env or {}).get("SERVICE_API_KEY")
        if key and "fail" in str(self.options.cwd):
            raise RuntimeError(f"the CLI said: bad key {key}")

    def query(self, prompt: str) -> None:
        self.prompts.append(prompt)

    def receive_messages(self, timeout: float | None = None) -> Any:
        from claude_sdkurl import ReceiveTimeoutError

        if not self.gone.wait(timeout):
            raise ReceiveTimeoutError(timeout or 0.0)
        return iter(())

    def disconnect(self) -> None:
        self.gone.set()


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "projects"
    (root / "alpha" / "sub").mkdir(parents=True)
    (root / "note.txt").write_text("not a folder")
    (tmp_path / "outside").mkdir()
    (root / "escape").symlink_to(tmp_path / "outside")  # inside by name, outside once resolved
    (root / "inward").symlink_to(root / "alpha")  # a link that stays inside
    StubClient.made = []
    monkeypatch.setattr("claude_sdkurl.client.ClaudeClient", StubClient)
    return root


def test_a_new_sessions_folder_and_options_are_only_what_the_deployer_allows(roots: Path, tmp_path: Path) -> None:
    base = ClaudeAgentOptions(model="claude-sonnet-4-5", env={"HOME": str(tmp_path)})
    allowed = relay.NewSessions(base, (str(roots),), models=("claude-sonnet-4-5", "claude-haiku-4-5"),
                                permission_modes=("default", "acceptEdits"), max_live=2)  # fmt: skip
    with relay.serve(port=0, announce=False, steer=True, token=TOKEN, new_sessions=allowed) as here:
        with frontend(here, "/events") as page:
            hello = read_until(page, lambda f: f.get("k") == "hello")[-1]
            assert hello["new_sessions"] == {"roots": [os.path.realpath(roots)], "models": ["claude-sonnet-4-5", "claude-haiku-4-5"],
                                             "permission_modes": ["default", "acceptEdits"]}  # fmt: skip
            refused = [
                ({"cwd": str(roots / ".." / "outside")}, "not inside an allowed root"),
                ({"cwd": "../outside"}, "not inside an allowed root"),
                ({"cwd": "alpha/../../outside"}, "not inside an allowed root"),
                ({"cwd": str(roots / "escape")}, "not inside an allowed root"),  # a link out
                ({"cwd": "escape"}, "not inside an allowed root"),
                ({"cwd": "/"}, "not inside an allowed root"),
                ({"cwd": str(roots) + "-evil"}, "not inside an allowed root"),  # a sibling sharing the prefix
                ({"cwd": str(roots / "note.txt")}, "is not a folder"),
                ({"cwd": str(roots / "missing")}, "is not a folder"),
                ({"cwd": "alpha\x00/../../outside"}, "not a folder name"),
                ({"cwd": ""}, "needs a folder"),
                ({"cwd": 7}, "needs a folder"),
                ({"cwd": "alpha", "model": "claude-opus-4-5"}, "not one this relay allows"),
                ({"cwd": "alpha", "permission_mode": "bypassPermissions"}, "not one this relay allows"),
                ({"cwd": "alpha", "env": {"ANTHROPIC_BASE_URL": "http://evil"}}, "not env"),
                ({"cwd": "alpha", "cli_path": "/bin/sh"}, "not cli_path"),
                ({"cwd": "alpha", "allowed_tools": ["Bash"]}, "not allowed_tools"),
                ({"cwd": "alpha", "prompt": ["not", "text"]}, "is text"),
            ]
            for op, why in refused:
                answer = page_op(page, {"op": "new_session", **op})
                assert why in str(answer["error"]), (op, answer)
            assert StubClient.made == []  # nothing started
            started = page_op(page, {"op": "new_session", "cwd": "inward/sub", "model": "claude-haiku-4-5",
                                     "permission_mode": "acceptEdits", "prompt": "hello"})  # fmt: skip
            assert started["error"] is None
            assert page_op(page, {"op": "new_session", "cwd": str(roots / "alpha")})["error"] is None
            assert "2 sessions started from the page run already" in page_op(page, {"op": "new_session", "cwd": "alpha"})["error"]
            deadline = time.monotonic() + 10
            while len(StubClient.made) < 2 or not StubClient.made[0].prompts and time.monotonic() < deadline:
                time.sleep(0.01)
            first = StubClient.made[0].options
            assert first.cwd == os.path.realpath(roots / "alpha" / "sub")  # resolved: no link left to swap
            assert (first.model, first.permission_mode, first.env) == ("claude-haiku-4-5", "acceptEdits", base.env)
            assert first.can_use_tool is not None  # its calls wait for a person on the page
            assert StubClient.made[0].prompts == ["hello"] and StubClient.made[1].options.model == "claude-sonnet-4-5"
            assert "was not started from the page" in page_op(page, {"op": "end", "session": "s1"})["error"]
    assert all(c.gone.is_set() for c in StubClient.made)  # the relay's close ended them


def test_a_page_session_left_idle_is_closed_after_its_idle_timeout(roots: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_launch, "CHECK_SECONDS", 0.05)
    allowed = relay.NewSessions(ClaudeAgentOptions(), (str(roots),), idle_timeout=0.5)
    with relay.serve(port=0, announce=False, steer=True, token=TOKEN, new_sessions=allowed) as here:
        with frontend(here, "/events") as page:
            began = time.monotonic()
            assert page_op(page, {"op": "new_session", "cwd": "alpha"})["error"] is None
            deadline = time.monotonic() + 30
            while not (StubClient.made and StubClient.made[0].gone.is_set()) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert StubClient.made[0].gone.is_set() and time.monotonic() - began >= 0.5  # closed, and not before its time


def test_why_a_new_session_failed_to_start_reaches_the_page_scrubbed(roots: Path) -> None:
    (roots / "fail").mkdir()
    options = ClaudeAgentOptions(env={"SERVICE_API_KEY": "k-4b1d-secret-value"})
    with relay.serve(port=0, announce=False, steer=True, token=TOKEN, new_sessions=relay.NewSessions(options, (str(roots),))) as here:
        with frontend(here, "/events") as page:
            page.send(json.dumps({"op": "new_session", "cwd": "fail", "id": "f1"}))
            failed = read_until(page, lambda f: f.get("k") == "done" and f.get("id") == "f1" and f.get("finished"))[-1]
    assert failed["session"] is None and failed["error"] == "the session did not start: RuntimeError: the CLI said: bad key <scrubbed>"


def test_new_sessions_needs_absolute_roots_and_a_positive_cap() -> None:
    with pytest.raises(ValueError, match="roots"):
        relay.NewSessions(ClaudeAgentOptions(), ())
    with pytest.raises(ValueError, match="roots"):
        relay.NewSessions(ClaudeAgentOptions(), ("relative/path",))
    with pytest.raises(ValueError, match="max_live"):
        relay.NewSessions(ClaudeAgentOptions(), ("/tmp",), max_live=0)
    assert _launch.resolved_inside("/tmp", ("/tmp",))[0] == os.path.realpath("/tmp")


def test_a_root_named_through_a_link_holds_the_folders_inside_what_it_leads_to(roots: Path, tmp_path: Path) -> None:
    (tmp_path / "via").symlink_to(roots)
    assert _launch.resolved_inside("alpha", (str(tmp_path / "via"),)) == (os.path.realpath(roots / "alpha"), None)
    assert "not inside" in str(_launch.resolved_inside(str(tmp_path / "outside"), (str(tmp_path / "via"),))[1])


# ---------------------------------------------------------------- a resumed run's earlier turns


def test_a_resumed_runs_earlier_turns_are_those_written_before_it_started(tmp_path: Path) -> None:
    from claude_sdkurl._engine import paths
    from claude_sdkurl.relay._catalog import Catalog

    work = tmp_path / "work"
    work.mkdir()
    options = ClaudeAgentOptions(cwd=str(work), env={"HOME": str(tmp_path)})
    session_id = "11111111-2222-4333-8444-555555555555"
    folder = Path(paths.cli_projects_dir(options.env)) / paths.project_dir_name(paths.real_path(str(work)))
    folder.mkdir(parents=True)
    entries, parent = [], None
    for i, (kind, when) in enumerate([("user", "2026-01-01T10:00:00.000Z"), ("assistant", "2026-01-01T10:00:01.000Z"),
                                      ("user", "2026-01-01T11:00:00.000Z"), ("assistant", "2026-01-01T11:00:02.500Z")]):  # fmt: skip
        uuid = f"0000000{i}-0000-4000-8000-000000000000"
        entries.append({"type": kind, "uuid": uuid, "parentUuid": parent, "timestamp": when, "sessionId": session_id,
                        "message": {"role": kind, "content": f"{kind} {i}"}})  # fmt: skip
        parent = uuid
    (folder / f"{session_id}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    catalog = Catalog(options, lambda text: text, True, lambda _id: False)
    import datetime

    resumed_at = datetime.datetime(2026, 1, 1, 11, 0, 0, tzinfo=datetime.timezone.utc).timestamp()
    lines = catalog.transcript(session_id, resumed_at)
    assert [json.loads(raw)["message"]["content"] for _, _, raw in lines or []] == ["user 0", "assistant 1"]
    assert len(catalog.transcript(session_id) or []) == 4
    assert catalog.transcript(session_id, resumed_at + 3600) is not None and len(catalog.transcript(session_id, resumed_at + 3600) or []) == 4
    with relay.serve(port=0, announce=False, steer=True, token=TOKEN, options=options) as here:  # as the page asks for them
        with frontend(here, "/events") as page:
            read_until(page, lambda f: f.get("k") == "stored")
            page.send(json.dumps({"op": "history", "session": f"stored:{session_id}", "before": resumed_at, "for": "s7"}))
            answer = read_until(page, lambda f: f.get("k") == "history")[-1]
            assert answer["for"] == "s7" and len(answer["lines"]) == 2  # for the live run s7, above its own lines
            page.send(json.dumps({"op": "history", "session": f"stored:{session_id}", "before": "soon", "for": 7}))
            answer = read_until(page, lambda f: f.get("k") == "history")[-1]
            assert answer["for"] is None and len(answer["lines"]) == 4  # not a time, not a key: the whole, for the stored row


def test_a_secret_with_a_quote_in_it_is_scrubbed_from_what_a_page_is_shown() -> None:
    """A secret value with a character JSON escapes (a quote, a backslash) is scrubbed from the
    input a page is shown: each string is scrubbed before the whole is written as JSON."""
    from claude_sdkurl.relay._hub import shown_value

    secret = 'pa"ss\\word-0123'
    shown = shown_value({"command": f"login {secret}", "nested": [{"token": "abcdefgh12345678"}]}, {secret})
    assert shown == {"command": "login <scrubbed>", "nested": [{"token": "<scrubbed>"}]}


def test_with_no_models_listed_a_new_session_runs_the_options_own_model_only(roots: Path, tmp_path: Path) -> None:
    """``NewSessions`` without ``models``: the page may name the options' own model or none,
    never another (a pricier model, a bogus name for the CLI)."""
    base = ClaudeAgentOptions(model="claude-sonnet-4-5", env={"HOME": str(tmp_path)})
    with relay.serve(port=0, announce=False, steer=True, token=TOKEN, new_sessions=relay.NewSessions(base, (str(roots),))) as here:
        with frontend(here, "/events") as page:
            assert read_until(page, lambda f: f.get("k") == "hello")[-1]["new_sessions"]["models"] == ["claude-sonnet-4-5"]
            for other in ("claude-opus-4-5", "default", "x" * 300):
                answer = page_op(page, {"op": "new_session", "cwd": "alpha", "model": other})
                assert "not one this relay allows" in str(answer["error"]), (other, answer)
            assert StubClient.made == []  # nothing started
            assert page_op(page, {"op": "new_session", "cwd": "alpha", "model": "claude-sonnet-4-5"})["error"] is None
            assert page_op(page, {"op": "new_session", "cwd": "alpha"})["error"] is None
            deadline = time.monotonic() + 10
            while len(StubClient.made) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert [c.options.model for c in StubClient.made] == ["claude-sonnet-4-5", "claude-sonnet-4-5"]
