"""A stand-in CLI for the session host's tests without the real one (a Python script speaking the
stdio protocol), and a host process to run it in. Each user message's text says what the turn
does:

* ``ask``: asks ``can_use_tool`` for ``Bash`` and answers with the decision it got (its behavior
  and message, as JSON);
* ``slow N``: one assistant message, ``N`` seconds of silence (a long tool call), then the result;
* ``exit``: writes ``broken on purpose`` to standard error and exits 3 mid-turn;
* anything else: the session's prompts so far, ``" | "``-joined (the history it was resumed with,
  read from its log, then this one).

Every prompt is appended to ``$STANDIN_LOG`` as a JSON line ``[pid, session id, prompt]``, so a test
sees what ran, where, and that nothing ran twice.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from claude_sdkurl import ClaudeAgentOptions

STANDIN = r'''#!{python}
import json, os, sys, time, uuid
if "--version" in sys.argv:
    print("2.1.330 (Claude Code)")
    sys.exit(0)
log = os.environ["STANDIN_LOG"]
resumed = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--resume=")]
sid = resumed[0] if resumed else str(uuid.uuid4())

def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()

def said():
    try:
        return [p for _, s, p in map(json.loads, open(log)) if s == sid]
    except OSError:
        return []

def result(text):
    out({{"type": "assistant", "message": {{"model": "m", "content": [{{"type": "text", "text": text}}]}}, "session_id": sid, "uuid": uuid.uuid4().hex}})
    out({{"type": "result", "subtype": "success", "duration_ms": 1, "duration_api_ms": 1, "is_error": False, "num_turns": 1, "session_id": sid, "result": text, "uuid": uuid.uuid4().hex}})

def read():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)

while True:
    msg = read()
    if msg["type"] == "control_request" and msg["request"]["subtype"] == "initialize":
        out({{"type": "control_response", "response": {{"subtype": "success", "request_id": msg["request_id"], "response": {{}}}}}})
        continue
    if msg["type"] == "control_request":
        out({{"type": "control_response", "response": {{"subtype": "success", "request_id": msg["request_id"], "response": {{}}}}}})
        continue
    if msg["type"] != "user":
        continue
    content = msg["message"]["content"]
    prompt = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
    with open(log, "a") as f:
        f.write(json.dumps([os.getpid(), sid, prompt]) + "\n")
    out({{"type": "system", "subtype": "init", "session_id": sid, "uuid": uuid.uuid4().hex}})
    if prompt == "ask":
        out({{"type": "control_request", "request_id": "ask-1", "request": {{"subtype": "can_use_tool", "tool_name": "Bash", "input": {{"command": "touch x"}}, "tool_use_id": "t1"}}}})
        while True:
            answer = read()
            if answer["type"] == "control_response":
                break
        response = answer["response"].get("response") or {{}}
        result(json.dumps({{"behavior": response.get("behavior"), "message": response.get("message")}}))
    elif prompt.startswith("slow "):
        out({{"type": "assistant", "message": {{"model": "m", "content": [{{"type": "text", "text": "working"}}]}}, "session_id": sid, "uuid": uuid.uuid4().hex}})
        time.sleep(float(prompt.split()[1]))
        result("done")
    elif prompt == "exit":
        sys.stderr.write("broken on purpose\n")
        sys.stderr.flush()
        sys.exit(3)
    else:
        result(" | ".join(said()))
'''


def standin(folder: Path) -> dict[str, Any]:
    """Write the stand-in CLI into ``folder``: ``{"cli", "log", "env", "cwd"}`` for its options."""
    cli = folder / "claude"
    cli.write_text(STANDIN.format(python=sys.executable))
    cli.chmod(0o755)
    (folder / "home").mkdir(exist_ok=True)
    (folder / "work").mkdir(exist_ok=True)
    log = folder / "ran.jsonl"
    return {"cli": str(cli), "log": log, "env": {"STANDIN_LOG": str(log), "HOME": str(folder / "home")}, "cwd": str(folder / "work")}


def options_for(setup: dict[str, Any], **kw: Any) -> ClaudeAgentOptions:
    return ClaudeAgentOptions(cli_path=setup["cli"], env=setup["env"], cwd=setup["cwd"], transport="stdio", **kw)


def ran(setup: dict[str, Any]) -> list[list[Any]]:
    """``[pid, session id, prompt]`` of every prompt the stand-ins were given, in order."""
    log: Path = setup["log"]
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


class HostProcess:
    """``python -m claude_sdkurl.host`` at ``sock``: :meth:`stop` (the tests' finalizers call it)
    ends it and everything of its process group."""

    def __init__(self, sock: Path, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "claude_sdkurl.host", "--socket", str(sock), *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert "session host at" in line, (line, self.proc.stderr.read() if self.proc.poll() is not None and self.proc.stderr else "")

    def stop(self) -> None:
        try:
            os.kill(self.proc.pid, signal.SIGCONT)  # (one frozen by its test)
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(60)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
