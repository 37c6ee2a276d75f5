"""Drift: run a wire tape's session again on another CLI and say which frames changed.

The program's side comes from the tape (its ``initialize``, prompts and answers to the CLI's
requests, in order); the model's answers too (the assistant messages on the tape, served by
:class:`~claude_sdkurl.testing.MockMessagesAPI`). What the new CLI writes is compared with
what the old one wrote: message kinds that appear or vanish, fields of a kind that appear or
vanish, and the answers to the program's control requests whose fields changed. The same
check tells when a new CLI breaks parity.
"""

from __future__ import annotations

import collections
import json
import queue
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ._format import Tape, load

_STDIO_FLAGS = ["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"]


def _replies(tape: Tape) -> list[Any]:
    """The model's answers on the tape, one per API call (consecutive assistant frames of one
    message id are one answer)."""
    from ..testing import Reply

    answers: list[Any] = []
    last_id = None
    for frame in tape.reads():
        if frame.get("type") != "assistant":
            continue
        message = frame.get("message") or {}
        blocks = [b for b in message.get("content") or [] if isinstance(b, dict)]
        if message.get("id") is not None and message.get("id") == last_id and answers:
            answers[-1].blocks.extend(blocks)
        else:
            answers.append(Reply(blocks=list(blocks)))
        last_id = message.get("id")
    return answers


def _argv(tape: Tape) -> list[str]:
    recorded = [str(a) for a in tape.header.get("argv") or []]
    if not recorded or "--sdk-url" in " ".join(recorded):
        recorded = [*_STDIO_FLAGS, "--permission-prompt-tool", "stdio"]
    return recorded


def _switches(tape: Tape) -> dict[str, str]:
    """The SDK's own environment switches the tape was recorded with (not the entry point:
    the new run is ours too)."""
    recorded = tape.header.get("env") or {}
    return {str(k): str(v) for k, v in recorded.items() if isinstance(v, str)}


def rerun(tape: Tape, cli: str, timeout: float = 120.0) -> list[dict[str, Any]]:
    """The frames ``cli`` writes when the tape's program and model drive it again."""
    from ..testing import MockMessagesAPI, offline_env

    with MockMessagesAPI() as api, tempfile.TemporaryDirectory(prefix="claude-sdkurl-drift-") as home:
        (Path(home) / "work").mkdir()
        for reply in _replies(tape):
            api.enqueue(reply)
        process = subprocess.Popen([cli, *_argv(tape)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, cwd=Path(home) / "work",
                                   env={**offline_env(api.url, home), **_switches(tape)})  # fmt: skip
        assert process.stdin is not None and process.stdout is not None
        frames: list[dict[str, Any]] = []
        arrived: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()

        def read() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                try:
                    frame = json.loads(line)
                except ValueError:
                    continue
                if isinstance(frame, dict):
                    frames.append(frame)
                    arrived.put(frame)
            arrived.put(None)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        deadline = time.monotonic() + timeout
        seen: list[dict[str, Any]] = []
        waiting: dict[str, collections.deque[str]] = collections.defaultdict(collections.deque)  # CLI requests by subtype
        recorded_requests: dict[str, str] = {}

        def until(check: Any) -> None:
            while not check():
                item = arrived.get(timeout=max(0.1, deadline - time.monotonic()))
                if item is None:
                    return
                seen.append(item)
                if item.get("type") == "control_request":
                    waiting[str((item.get("request") or {}).get("subtype"))].append(str(item.get("request_id")))

        try:
            results = 0
            for entry in tape.entries:
                frame = entry.frame or {}
                if entry.dir == "read":
                    if frame.get("type") == "result":
                        results += 1
                    elif frame.get("type") == "control_request":
                        recorded_requests[str(frame.get("request_id"))] = str((frame.get("request") or {}).get("subtype"))
                    continue
                if entry.dir == "end":
                    break
                if entry.end_input:
                    process.stdin.close()
                    continue
                kind = frame.get("type")
                if kind == "user":
                    until(lambda: sum(1 for f in seen if f.get("type") == "result") >= results)
                elif kind == "control_response":
                    subtype = recorded_requests.get(str((frame.get("response") or {}).get("request_id")), "")
                    until(lambda: bool(waiting[subtype]))
                    if not waiting[subtype]:
                        continue
                    frame = json.loads(json.dumps(frame))
                    frame["response"]["request_id"] = waiting[subtype].popleft()
                process.stdin.write((json.dumps(frame) + "\n").encode())
                process.stdin.flush()
                if kind == "control_request":
                    rid = frame.get("request_id")
                    until(lambda: any(f.get("type") == "control_response" and (f.get("response") or {}).get("request_id") == rid for f in seen))
            until(lambda: sum(1 for f in seen if f.get("type") == "result") >= results)
            if not process.stdin.closed:  # (a program that closed the session without ending its input first)
                process.stdin.close()
            process.wait(timeout=max(1.0, deadline - time.monotonic()))
        except (queue.Empty, subprocess.TimeoutExpired, BrokenPipeError, OSError):
            pass
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            reader.join(5.0)
        return frames


def _kind(frame: dict[str, Any]) -> str:
    subtype = frame.get("subtype") if frame.get("type") in ("system", "result") else None
    if frame.get("type") == "control_response":
        return "control_response"
    return f"{frame.get('type')}/{subtype}" if subtype else str(frame.get("type"))


def compare(old: list[dict[str, Any]], new: list[dict[str, Any]], old_tape: Tape | None = None) -> dict[str, Any]:
    """What changed from ``old`` frames to ``new``: kinds, fields per kind, control answers."""
    old_kinds = collections.Counter(_kind(f) for f in old)
    new_kinds = collections.Counter(_kind(f) for f in new)
    fields: dict[str, dict[str, list[str]]] = {}
    for kind in sorted(set(old_kinds) & set(new_kinds)):
        before = set().union(*(f.keys() for f in old if _kind(f) == kind))
        after = set().union(*(f.keys() for f in new if _kind(f) == kind))
        if before != after:
            fields[kind] = {"added": sorted(after - before), "removed": sorted(before - after)}
    answers: dict[str, dict[str, list[str]]] = {}
    if old_tape is not None:
        asked = {str(e.frame.get("request_id")): str((e.frame.get("request") or {}).get("subtype"))
                 for e in old_tape.entries if e.dir == "write" and e.frame and e.frame.get("type") == "control_request"}  # fmt: skip
        def keys_by_subtype(frames: list[dict[str, Any]]) -> dict[str, set[str]]:
            out: dict[str, set[str]] = {}
            for f in frames:
                response = f.get("response") or {}
                subtype = asked.get(str(response.get("request_id")))
                if f.get("type") == "control_response" and subtype and isinstance(response.get("response"), dict):
                    out.setdefault(subtype, set()).update(response["response"].keys())
            return out
        before_answers, after_answers = keys_by_subtype(old), keys_by_subtype(new)
        for subtype in sorted(set(before_answers) & set(after_answers)):
            if before_answers[subtype] != after_answers[subtype]:
                answers[subtype] = {"added": sorted(after_answers[subtype] - before_answers[subtype]),
                                    "removed": sorted(before_answers[subtype] - after_answers[subtype])}  # fmt: skip
    return {
        "new_kinds": sorted(set(new_kinds) - set(old_kinds)),
        "gone_kinds": sorted(set(old_kinds) - set(new_kinds)),
        "fields": fields,
        "control_answers": answers,
    }


def drift(tape_path: str | Path, cli: str) -> dict[str, Any]:
    """Run the tape at ``tape_path`` again on ``cli``; the changes (see :func:`compare`), with
    ``changed`` true when there are any."""
    tape = load(tape_path)
    new = rerun(tape, cli)
    report = compare(tape.reads(), new, tape)
    report["changed"] = any(report[k] for k in ("new_kinds", "gone_kinds", "fields", "control_answers"))
    report["tape"] = str(tape_path)
    report["recorded_on"] = tape.header.get("cli")
    return report
