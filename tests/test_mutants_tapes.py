"""Model tapes' matching (``tapes/_model.py``) line by line, for what mutation testing found
unpinned (``tools/mutation_score.py --area tapes``): what a request is normalised to, the loose
form without background notices, the recording's folders mapped to this run's, the cut around a
difference, and a tape file that is not one. No CLI, no server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from claude_sdkurl.tapes._format import TapeError
from claude_sdkurl.tapes._model import (FORMAT, _around_difference, _first_prompt, _is_notice, _key, _load, _only_notices, _save,
                                        _tool_results_only, loose_request, normalised_request, path_map)  # fmt: skip

NOTICE = "<system-reminder>[SYSTEM NOTIFICATION - NOT USER INPUT] <task-notification>done</task-notification></system-reminder>"


def test_every_volatile_part_of_a_request_becomes_a_placeholder() -> None:
    body = {"metadata": {"user_id": "u"}, "system": [{"text": (
        "toolu_01ABc srvtoolu_9 msg_1 req_9 2026-11-28T21:52:03.900Z 2026-11-28 21:52:03 day 2026-11-28 /tmp/x/y "
        "/var/folders/ab/c /private/var/d deadbeefdeadbeef 8d2b1c3e-0000-4000-8000-000000000001 <duration_ms>1234 "
        "abc12 /home/u/p")}], "n": 3, "none": None, "nested": {"metadata": 1, "keep": ["/home/u"]}}  # fmt: skip
    assert normalised_request(body, home="/home/u") == {"system": [{"text": (
        "<id> <id> <id> <id> <date> <date> day <date> <tmp> <tmp> <tmp> <hex> <uuid> <duration_ms><ms> abc12 ~/p")}],
        "n": 3, "none": None, "nested": {"keep": ["~"]}}  # fmt: skip
    assert normalised_request("/ and /x", home="/") == "/ and /x"  # a home of "/" is not replaced
    assert normalised_request("a /r/p b", home="") == "a /r/p b"
    assert normalised_request(f"{Path.home()}/x") == "~/x"  # the default home is ours
    assert "<duration_ms>12" not in normalised_request("<duration_ms>12")
    assert normalised_request("deadbeefdead but deadbeefdea") == "<hex> but deadbeefdea"  # 12 hex digits or more
    assert _key("POST", "/v1/messages", {"a": "msg_1", "b": 1}) == ("POST", "/v1/messages", '{"a": "<id>", "b": 1}')


def test_a_notice_is_known_in_both_of_its_forms_and_only_with_all_three_marks() -> None:
    assert _is_notice(NOTICE) and _is_notice({"type": "text", "text": NOTICE})
    assert not _is_notice({"type": "tool_result", "text": NOTICE})
    assert not _is_notice(" " + NOTICE)
    assert not _is_notice(NOTICE.replace("[SYSTEM NOTIFICATION - NOT USER INPUT]", ""))
    assert not _is_notice(NOTICE.replace("<task-notification>", ""))
    assert not _is_notice(None) and not _is_notice({"type": "text"})
    assert _only_notices({"role": "user", "content": NOTICE})
    assert _only_notices({"role": "user", "content": [{"type": "text", "text": NOTICE}, NOTICE]})
    assert not _only_notices({"role": "assistant", "content": NOTICE})
    assert not _only_notices({"role": "user", "content": []})
    assert not _only_notices({"role": "user", "content": [NOTICE, {"type": "text", "text": "hi"}]})
    assert _tool_results_only({"content": [{"type": "tool_result"}, {"type": "tool_result"}]})
    assert not _tool_results_only({"content": []}) and not _tool_results_only({"content": "x"})
    assert not _tool_results_only({"content": [{"type": "tool_result"}, {"type": "text"}]})
    assert not _tool_results_only({"content": ["tool_result"]})


def test_the_loose_form_drops_notices_and_the_turns_they_woke() -> None:
    user = {"role": "user", "content": "go"}
    answer = {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}
    notice = {"role": "user", "content": NOTICE}
    woke = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1"}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]}
    mixed = {"role": "user", "content": [{"type": "text", "text": "more"}, {"type": "text", "text": NOTICE}]}
    last = {"role": "user", "content": "and now"}
    body = {"model": "m", "messages": [user, answer, notice, woke, result, "odd", mixed, answer, last]}
    assert loose_request(body) == {"model": "m", "messages": [user, answer, "odd",
                                                              {"role": "user", "content": [{"type": "text", "text": "more"}]},
                                                              answer, last]}  # fmt: skip
    # the woken turn ends at the first message that is neither the model's nor a tool result
    body = {"messages": [notice, woke, user, answer, last]}
    assert loose_request(body) == {"messages": [user, answer, last]}
    assert loose_request({"messages": [user, notice]}) == {"woken_by": [{"type": "text", "text": NOTICE}]}
    listed = {"role": "user", "content": [{"type": "text", "text": NOTICE}]}
    assert loose_request({"x": 1, "messages": [user, listed]}) == {"x": 1, "woken_by": listed["content"]}
    assert loose_request({"messages": []}) == {"messages": []}
    assert loose_request("text") == "text"
    assert loose_request({"messages": [last]}) == {"messages": [last]}


def test_the_recordings_folders_map_to_this_runs() -> None:
    recorded = {"a": "/tmp/claude-sdkurl-eval-abc/work/x.txt", "b": "/tmp/same/f"}
    asked = {"a": "/tmp/claude-sdkurl-eval-xyz9/work/x.txt", "b": "/tmp/same/f"}
    assert path_map(recorded, asked) == [("/tmp/claude-sdkurl-eval-abc", "/tmp/claude-sdkurl-eval-xyz9")]
    assert path_map(["/tmp/r/a", "/tmp/r/b"], ["/tmp/q/a"]) == []  # they do not pair up
    assert path_map(["/tmp/rec/one/x", "/tmp/rec/x"], ["/tmp/new/one/x", "/tmp/other/x"]) == [("/tmp/rec", "/tmp/new")]
    assert path_map(["/tmp/a", "/tmp/bb/z/f"], ["/tmp/c", "/tmp/dd/z/f"]) == [("/tmp/bb", "/tmp/dd"), ("/tmp/a", "/tmp/c")]
    assert path_map(["/tmp/abc"], ["/tmp/abc"]) == []
    assert path_map(["/tmp/ab/f"], ["/tmp/xab/f"]) == [("/tmp/ab", "/tmp/xab")]  # to the end of the segment
    assert path_map(["/tmp/ab-1/f"], ["/tmp/ab-22/f"]) == [("/tmp/ab-1", "/tmp/ab-22")]
    assert path_map(["x /var/folders/q/r"], ["x /var/folders/s/r"]) == [("/var/folders/q", "/var/folders/s")]


def test_a_long_difference_is_cut_around_where_it_is() -> None:
    a, b = "a" * 150 + "X" + "b" * 100, "a" * 150 + "Y" + "b" * 100
    cut_a, cut_b = _around_difference(a, b)
    assert cut_a == "…" + a[125:225] + "…" and cut_b == "…" + b[125:225] + "…"
    assert _around_difference("short", "other") == ("short", "other")
    assert _around_difference("a" * 100, "b" * 100) == ("a" * 100, "b" * 100)  # at the width exactly: whole
    assert _around_difference("a" * 50 + "X", "a" * 150) == ("…" + "a" * 25 + "X", "…" + "a" * 100 + "…")
    assert _around_difference("X" + "a" * 200, "Y" + "a" * 200) == ("X" + "a" * 99 + "…", "Y" + "a" * 99 + "…")
    assert _around_difference("a" * 101, "a" * 101) == ("…" + "a" * 25, "…" + "a" * 25)  # no difference: cut at the end
    assert _around_difference("a" * 120, "b", width=10) == ("a" * 10 + "…", "b")


def test_the_first_prompt_and_a_tape_file_that_is_not_one(tmp_path: Path) -> None:
    assert _first_prompt({"messages": [{"content": "hi"}, {"content": "no"}]}) == "hi"
    assert _first_prompt({"messages": []}) is None and _first_prompt({"messages": ["x"]}) is None and _first_prompt("x") is None
    path = tmp_path / "t" / "tape.jsonl"
    _save(path, [{"n": 1}, {"n": 2}])
    head = json.loads(path.read_text().splitlines()[0])
    assert head["tape"] == FORMAT and head["exchanges"] == 2
    assert _load(path) == [{"n": 1}, {"n": 2}]
    path.write_text(path.read_text() + "\n  \n")
    assert _load(path) == [{"n": 1}, {"n": 2}]
    for text in ("", json.dumps({"tape": "other/1"}) + "\n"):
        path.write_text(text)
        with pytest.raises(TapeError, match="is not a model tape"):
            _load(path)
    with pytest.raises(TapeError, match="cannot read"):
        _load(tmp_path / "missing.jsonl")


# ---------------------------------------------------------------------- the proxy itself, without a CLI

import threading  # noqa: E402
import urllib.error  # noqa: E402
import urllib.request  # noqa: E402
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer  # noqa: E402

from claude_sdkurl.tapes._model import ATTEMPT_HEADER, ModelTapeMiss, model_tape  # noqa: E402


@pytest.fixture
def upstream():
    """A stand-in Messages API on 127.0.0.1 that answers each POST with what it was asked."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # noqa: ANN002
            pass

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            data = json.dumps({"echo": body["messages"][-1]["content"], "path": self.path}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("request-id", "req_1")
            self.send_header("x-other", "dropped")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/base"
    server.shutdown()
    server.server_close()
    thread.join(10)


def post(url: str, content: str, attempt: str | None = None) -> tuple[int, dict, dict]:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": content}]}).encode()
    headers = {"Content-Type": "application/json", **({ATTEMPT_HEADER: attempt} if attempt else {})}
    request = urllib.request.Request(url + "/v1/messages", data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, dict(answer.headers), json.loads(answer.read())
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read())


def test_a_tape_records_then_replays_each_answer_once_and_names_a_miss(tmp_path: Path, upstream: str) -> None:
    path = tmp_path / "model.jsonl"
    with model_tape(path, upstream=upstream) as tape:
        assert tape.env() == {"ANTHROPIC_BASE_URL": tape.url} and tape.url.startswith("http://127.0.0.1:")
        assert post(tape.url, "one /tmp/rec-abc/f.txt")[2] == {"echo": "one /tmp/rec-abc/f.txt", "path": "/base/v1/messages"}
        post(tape.url, "two", attempt="A")
        post(tape.url, "two", attempt="B")
    kept = _load(path)
    assert [e["request"]["body"]["messages"][0]["content"] for e in kept] == ["one /tmp/rec-abc/f.txt", "two", "two"]
    assert [e.get("attempt") for e in kept] == [None, "A", "B"]
    assert {k.lower() for k in kept[0]["response"]["headers"]} == {"content-type", "request-id"}
    with model_tape(path) as tape:
        with urllib.request.urlopen(urllib.request.Request(tape.url, method="HEAD"), timeout=30) as head:
            assert head.status == 200
        status, _, served = post(tape.url, "one /tmp/rec-xyz9/f.txt")  # this run's folder
        assert status == 200 and served["echo"] == "one /tmp/rec-xyz9/f.txt"  # the recording's folder mapped
        assert post(tape.url, "two", attempt="B")[2]["echo"] == "two"
        assert tape.used == {0, 2}  # the asking run's own exchange first
        assert post(tape.url, "two")[2]["echo"] == "two" and tape.used == {0, 1, 2}
        assert tape.misses == []
    with pytest.raises(ModelTapeMiss, match="2 request"):
        with model_tape(path) as tape:
            status, _, error = post(tape.url, "three")
            assert status == 400 and error["error"]["type"] == "invalid_request_error"
            assert error["error"]["message"].startswith("model tape miss: POST /v1/messages: $.messages[0].content is 'three'")
            for _ in range(3):
                post(tape.url, "two")
            assert tape.misses == ["POST /v1/messages: $.messages[0].content is 'three', the tape has 'two'",
                                   "POST /v1/messages: $.messages[0].content is 'two', the tape has 'one <tmp>'"]  # the nearest left
