"""A synchronous web application that serves many users from a few Claude Code CLIs.

Flask, no asyncio: each request runs on a server thread. Every user has a workspace folder and one
conversation (``claude_sdkurl.Conversations``: at most ``MAX_LIVE`` CLIs; an idle conversation
hibernates and wakes with its whole history); a ``SparePool`` keeps CLIs started so that a
user's first message does not wait for one. Answers stream to the browser as server-sent events.

    pip install 'claude-sdkurl' flask gunicorn
    cd examples && gunicorn -k gthread --threads 8 -w 4 -b 127.0.0.1:8000 webapp:app

Several worker processes, as WSGI apps are deployed: a user's messages may land on any of them,
and a restart loses nothing. Each conversation's session and the lease on it (which worker holds a
CLI for it now) are kept in a SQLite file in the CLI's config directory, shared by the workers;
the transcripts are where the CLI writes them (``WORKSPACES`` must be one folder for all of them:
the default is ``~/.cache/claude-webapp``). On more than one machine, give ``Conversations`` a
PostgreSQL or Redis store and the options a shared ``session_store``. Open http://127.0.0.1:8000/.
Offline by default: a real CLI against the bundled mock model (``DemoEnvironment``); with
``CLAUDE_SDKURL_LIVE=1`` the CLIs use your own login, or whatever ``ANTHROPIC_*`` variables the
server's environment has. ``MAX_LIVE``, ``SPARES`` and ``WORKSPACES`` (a folder) tune it.

With ``SESSION_HOST`` (a socket path, or ``auto``: started on demand) the CLIs live in a session
host (``python -m claude_sdkurl.host``) instead of the workers: a message reaches its
conversation's live CLI whichever worker takes it, and a deploy stops none; a deploy whose
options differ reaches each conversation at its next message (the offline demo's do: each worker
has a mock model of its own, so a CLI restarts with its history, pointed at a live one, when a
worker newer than its last sends to it).
See docs/guide/deployment.md.
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

from flask import Flask, Response, abort, request

from claude_sdkurl import ClaudeAgentOptions, Conversations, ResultMessage, SparePool, StreamEvent
from claude_sdkurl.testing import DemoEnvironment

USER = re.compile(r"[A-Za-z0-9_-]{1,64}")  # a user id is a name, never a path

workspaces = Path(os.environ.get("WORKSPACES") or Path.home() / ".cache" / "claude-webapp")  # one for every worker
workspaces.mkdir(mode=0o700, parents=True, exist_ok=True)
demo = DemoEnvironment(home=workspaces / ".demo-home")  # offline unless CLAUDE_SDKURL_LIVE=1 (one HOME for every worker)
base = demo.options(include_partial_messages=True, allowed_tools=["Read"])
spares = SparePool(int(os.environ.get("SPARES", "2")), base) if os.environ.get("SPARES") != "0" and not os.environ.get("SESSION_HOST") else None
if os.environ.get("SESSION_HOST"):  # the CLIs live in a session host: every worker reaches the same live ones
    from claude_sdkurl import host

    where = host.ensure() if os.environ["SESSION_HOST"] == "auto" else os.environ["SESSION_HOST"]
    conversations = Conversations(base, host=where)
else:
    conversations = Conversations(base, max_live=int(os.environ.get("MAX_LIVE", "4")), idle_timeout=120)
atexit.register(conversations.close)
if spares is not None:
    atexit.register(spares.close)

app = Flask(__name__)

PAGE = """<!doctype html><meta charset="utf-8"><title>Claude</title>
<form id="f"><input id="u" value="alice" size="10"> <input id="p" size="60" placeholder="Ask Claude"> <button>Send</button></form>
<pre id="out" style="white-space: pre-wrap"></pre>
<script>
document.getElementById("f").onsubmit = (e) => {
  e.preventDefault();
  const out = document.getElementById("out"), user = document.getElementById("u").value;
  const source = new EventSource(`/chat/${encodeURIComponent(user)}?prompt=${encodeURIComponent(document.getElementById("p").value)}`);
  out.textContent += "\\n> ";
  source.onmessage = (m) => { out.textContent += JSON.parse(m.data).text; };
  source.addEventListener("done", (m) => { out.textContent += `  (${JSON.parse(m.data).cost})`; source.close(); });
  source.addEventListener("failed", () => source.close());
};
</script>"""


@app.get("/")
def page() -> str:
    return PAGE


def _events(user: str, prompt: str) -> Iterator[str]:
    options = dataclasses.replace(base, cwd=str(workspaces / user))
    streamed = False
    try:
        for message in conversations.send(user, prompt, options):
            if isinstance(message, StreamEvent):
                delta = message.event.get("delta") or {}
                if message.event.get("type") == "content_block_delta" and delta.get("type") == "text_delta":
                    streamed = True
                    yield f"data: {json.dumps({'text': delta.get('text', '')})}\n\n"
            elif isinstance(message, ResultMessage):
                if not streamed and message.result:
                    yield f"data: {json.dumps({'text': message.result})}\n\n"
                done = {"cost": message.total_cost_usd, "session": message.session_id, "error": message.is_error,
                        "worker": os.getpid()}
                yield f"event: done\ndata: {json.dumps(done)}\n\n"
    except Exception as e:  # said to the browser; the conversation hibernates and goes on next time
        yield f"event: failed\ndata: {json.dumps({'error': type(e).__name__})}\n\n"


@app.get("/chat/<user>")
def chat(user: str) -> Response:
    prompt = request.args.get("prompt", "").strip()
    if not USER.fullmatch(user) or not prompt or len(prompt) > 20_000:
        abort(400)
    (workspaces / user).mkdir(mode=0o700, exist_ok=True)
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return Response(_events(user, prompt), mimetype="text/event-stream", headers=headers)


@app.get("/stats")
def stats() -> dict[str, object]:
    return {"live": conversations.live(), "conversations": dict(conversations.stats), "spares": dict(spares.stats) if spares else {},
            "worker": os.getpid()}


if __name__ == "__main__":  # Flask's own threaded server, for a quick look
    app.run(host="127.0.0.1", port=8000, threaded=True)
