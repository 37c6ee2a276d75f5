"""A model tape's path mapping without a CLI (issue 70, item 17): a replayed answer names this
run's temporary folders, not the recording's, for every layout an eval makes, its default one
first (``claude-sdkurl-eval-*`` in the temporary folder, named at the end of a line of the CLI's
system prompt)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import ClaudeAgentOptions
from claude_sdkurl.evals import Attempt, Target, Task, run_eval
from claude_sdkurl.tapes._model import as_ours, path_map
from claude_sdkurl.testing import MockMessagesAPI
from claude_sdkurl.testing.mock_api import tool_use

# the CLI's system prompt names its folder at the end of a line (2.1.330's "<env>" section)
CLI_SYSTEM = "You are Claude Code.\n<env>\nWorking directory: {cwd}\nIs directory a git repo: No\nPlatform: linux\n</env>"


def request(cwd: str, prompt: str = "write the reply") -> dict[str, Any]:
    return {"model": "m", "max_tokens": 10, "stream": True, "system": [{"type": "text", "text": CLI_SYSTEM.format(cwd=cwd)}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}]}  # fmt: skip


@pytest.mark.parametrize(("recording", "replay", "mapped"), [
    ("/tmp/claude-sdkurl-eval-ab12cd34", "/tmp/claude-sdkurl-eval-zz98yy76", None),  # the default layout
    ("/tmp/claude-sdkurl-eval-ab12cd3x", "/tmp/claude-sdkurl-eval-zz98yy7x", None),  # their names end alike
    ("/tmp/claude-sdkurl-eval-ab12cd34", "/tmp/claude-sdkurl-eval-q_1", None),  # of other lengths
    ("/tmp/claude-sdkurl-eval-rec123/work", "/tmp/claude-sdkurl-eval-rep98765/work",
     ("/tmp/claude-sdkurl-eval-rec123", "/tmp/claude-sdkurl-eval-rep98765")),  # a folder inside
    ("/tmp/pytest-of-me/pytest-3/test_x0/ws", "/tmp/pytest-of-me/pytest-41/test_x0/ws",
     ("/tmp/pytest-of-me/pytest-3", "/tmp/pytest-of-me/pytest-41")),  # pytest's
])  # fmt: skip
def test_each_layout_maps_the_recordings_folder_to_this_runs(recording: str, replay: str, mapped: tuple[str, str] | None) -> None:
    """The folder named at the end of a line of the system prompt, in a sentence (a full stop,
    a comma, a bracket) and in a file's path maps to the replay's, to the end of the folder's
    name; the folders the two share below it are not in the pair."""
    prompt = f"Work in {recording}. Its files ({recording}/a.txt, {recording}/outbox/) are yours ({recording}), {recording}, {recording}"
    pairs = path_map(request(recording, prompt), request(replay, prompt.replace(recording, replay)))
    assert pairs == [mapped or (recording, replay)]
    answer = json.dumps({"input": {"file_path": f"{recording}/outbox/reply.txt"}, "text": f"wrote {recording}."})
    assert as_ours(answer, pairs) == json.dumps({"input": {"file_path": f"{replay}/outbox/reply.txt"}, "text": f"wrote {replay}."})


def test_a_path_split_between_streamed_deltas_is_still_mapped() -> None:
    """The API streams a tool call's input in pieces: the recording's folder cut between two
    pieces is this run's once put together; the pieces keep their number, other events stay."""
    recording, replay = "/tmp/claude-sdkurl-eval-ab12cd34", "/tmp/claude-sdkurl-eval-zz98yy76-longer"
    whole = json.dumps({"file_path": f"{recording}/outbox/reply.txt", "content": "hi"})
    cuts = [0, 5, 30, 31, 44, len(whole)]  # inside "/tmp/claude-sdkurl-eval-ab12cd34", twice
    deltas = [{"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": whole[a:b]}}
              for a, b in zip(cuts, cuts[1:])]
    start = {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Write", "input": {}}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {"id": "msg_1", "content": []}}, start, *deltas,
                                    {"type": "content_block_stop", "index": 0}, {"type": "message_stop"}]  # fmt: skip
    served = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    pairs = path_map(request(recording), request(replay))
    assert pairs == [(recording, replay)]
    out = as_ours(served, pairs)
    data = [json.loads(line[6:]) for line in out.split("\n") if line.startswith("data: ")]
    pieces = [d["delta"]["partial_json"] for d in data if d["type"] == "content_block_delta"]
    assert len(pieces) == len(cuts) - 1 and json.loads("".join(pieces)) == {"file_path": f"{replay}/outbox/reply.txt", "content": "hi"}
    assert [d["type"] for d in data] == [e["type"] for e in events] and recording not in out
    assert as_ours(served, []) == served  # nothing to map: the bytes as recorded


def test_a_split_path_in_a_later_block_is_mapped_after_a_block_with_nothing_to_map() -> None:
    """A text block with no path first, then a tool call whose input has the folder cut between
    deltas: the unchanged block is passed over, the later one still mapped (a probe's survivor:
    the loop stopped at the first block with nothing to map)."""
    recording, replay = "/tmp/claude-sdkurl-eval-ab12cd34", "/tmp/claude-sdkurl-eval-zz98yy76"
    whole = json.dumps({"file_path": f"{recording}/outbox/reply.txt"})
    text = [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}} for piece in ("I will ", "write it.")]
    tool = [{"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": whole[a:b]}}
            for a, b in ((0, 20), (20, len(whole)))]  # fmt: skip
    events = [{"type": "message_start", "message": {"id": "msg_1", "content": []}}, *text, *tool, {"type": "message_stop"}]
    served = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    out = as_ours(served, path_map(request(recording), request(replay)))
    data = [json.loads(line[6:]) for line in out.split("\n") if line.startswith("data: ")]
    assert "".join(d["delta"].get("text", "") for d in data if d.get("index") == 0) == "I will write it."
    assert json.loads("".join(d["delta"]["partial_json"] for d in data if d.get("index") == 1)) == {"file_path": f"{replay}/outbox/reply.txt"}


def test_a_folder_mapped_as_ours_is_not_mapped_again() -> None:
    """One pass: two attempts' folders swapped between recording and replay (a's now b's, b's
    now c's) each land once; a's is not taken on to c's."""
    pairs = [("/tmp/claude-sdkurl-eval-a", "/tmp/claude-sdkurl-eval-b"), ("/tmp/claude-sdkurl-eval-b", "/tmp/claude-sdkurl-eval-c")]
    assert as_ours("/tmp/claude-sdkurl-eval-a/x /tmp/claude-sdkurl-eval-b/y", pairs) == "/tmp/claude-sdkurl-eval-b/x /tmp/claude-sdkurl-eval-c/y"


def test_the_machines_temporary_folder_elsewhere_is_a_temporary_path(tmp_path: Path) -> None:
    """With TMPDIR outside /tmp an eval's workspaces are made there: matched as temporary paths
    (a replay's folder differs from the recording's) and mapped."""
    if not Path("/dev/shm").is_dir():
        pytest.skip("no folder outside /tmp to take as TMPDIR")
    elsewhere = tempfile.mkdtemp(dir="/dev/shm", prefix="claude-sdkurl-test-")
    try:
        code = ("from claude_sdkurl.tapes._model import normalised_request, path_map; import tempfile, json; t = tempfile.gettempdir();"
                "a, b = t + '/claude-sdkurl-eval-ab12cd34', t + '/claude-sdkurl-eval-zz98yy76';"
                "print(json.dumps([normalised_request('in ' + a + '\\nx'), path_map('in ' + a + '\\nx', 'in ' + b + '\\nx'), t]))")  # fmt: skip
        env = {**os.environ, "TMPDIR": elsewhere}
        said = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True).stdout
        normal, pairs, where = json.loads(said)
        assert where == elsewhere and normal == "in <tmp>\nx"
        assert pairs == [[f"{elsewhere}/claude-sdkurl-eval-ab12cd34", f"{elsewhere}/claude-sdkurl-eval-zz98yy76"]]
    finally:
        os.rmdir(elsewhere)


def test_an_eval_replays_its_tape_into_each_attempts_own_default_workspace(tmp_path: Path) -> None:
    """The repro of issue 70, item 17, without a CLI: a program that asks the model as the CLI
    does (its folder at the end of a system prompt's line) and writes where the answer's Write
    says, by absolute path; run_eval with its default workspaces records a tape, then replays
    it: both pass, and the replay wrote nothing into the recording's folders."""
    folders: list[str] = []

    def program(prompt: str, options: ClaudeAgentOptions) -> list[Any]:
        assert options.cwd is not None
        folders.append(str(options.cwd))
        headers = {"Content-Type": "application/json"}
        for line in options.env.get("ANTHROPIC_CUSTOM_HEADERS", "").splitlines():
            name, value = line.split(": ", 1)
            headers[name] = value
        body = json.dumps(request(str(options.cwd), prompt)).encode()
        asked = urllib.request.Request(f"{options.env['ANTHROPIC_BASE_URL']}/v1/messages", data=body, headers=headers)
        with urllib.request.urlopen(asked, timeout=30) as answer:
            served = answer.read().decode()
        data = [json.loads(line[6:]) for line in served.split("\n") if line.startswith("data: ")]
        write = json.loads("".join(d["delta"]["partial_json"] for d in data if d.get("delta", {}).get("type") == "input_json_delta"))
        Path(write["file_path"]).parent.mkdir(parents=True, exist_ok=True)
        Path(write["file_path"]).write_text(write["content"])
        return []

    def replied(attempt: Attempt) -> str | None:
        assert attempt.workspace is not None
        reply = Path(attempt.workspace) / "outbox" / "reply.txt"
        return None if reply.is_file() and reply.read_text() == "done" else "outbox/reply.txt cannot be read"

    def model(r: Any) -> Any:  # the model writes by absolute path, into the folder the system prompt names
        where = json.dumps(r.body).split("Working directory: ", 1)[1].split("\\n", 1)[0]
        return tool_use("Write", {"file_path": f"{where}/outbox/reply.txt", "content": "done"})

    tasks, targets, tape = [Task("reply", "write the reply to outbox/reply.txt", checks=[replied])], [Target("p", program=program)], tmp_path / "t.jsonl"
    with MockMessagesAPI(model) as api:
        recorded = run_eval(tasks, targets, runs=2, tape=tape, record_from=api.url, keep_workspaces=True)
    try:
        assert [a.passed for a in recorded.attempts] == [True, True], recorded.summary()
        assert all(Path(f).name.startswith("claude-sdkurl-eval-") and Path(f).parent == Path(tempfile.gettempdir()) for f in folders)
        before = {f: sorted(p.name for p in Path(f, "outbox").iterdir()) for f in folders}
        for f in folders:
            (Path(f) / "outbox" / "reply.txt").unlink()
        replayed = run_eval(tasks, targets, runs=2, tape=tape)
        assert [a.passed for a in replayed.attempts] == [True, True], replayed.summary()
        assert before == {f: ["reply.txt"] for f in folders[:2]}
        assert [list(Path(f, "outbox").iterdir()) for f in folders[:2]] == [[], []]  # nothing written back into the recording's
        assert len(set(folders)) == 4
    finally:
        import shutil

        for f in folders[:2]:
            shutil.rmtree(f, ignore_errors=True)
