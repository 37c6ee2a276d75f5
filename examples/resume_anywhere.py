"""A conversation started on one machine and resumed on another, through a session store.

Offline: the real Claude Code CLI against the project's mock Messages API; the two
"machines" are two HOME directories that share nothing but the store (a SQLite file
here; PostgresSessionStore or RedisSessionStore across real machines).

    .venv/bin/python examples/resume_anywhere.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from claude_sdkurl import ClaudeAgentOptions, ResultMessage, get_session_messages_from_store, list_sessions_from_store, query
from claude_sdkurl.stores import SQLiteSessionStore
from claude_sdkurl.testing import STDIO_CLI_VERSION, MockMessagesAPI, install_cli, offline_env, text


def main() -> int:
    version = sys.argv[1] if len(sys.argv) > 1 else STDIO_CLI_VERSION
    cli = str(install_cli(version))
    with MockMessagesAPI() as api, tempfile.TemporaryDirectory() as root:
        project = Path(root, "project")  # the same project path on both machines: the store key
        project.mkdir()
        store = SQLiteSessionStore(Path(root, "sessions.db"))

        def machine(name: str, **kw: object) -> ClaudeAgentOptions:
            home = Path(root, name)
            home.mkdir(exist_ok=True)
            return ClaudeAgentOptions(cli_path=cli, env=offline_env(api.url, home), cwd=str(project), session_store=store, **kw)  # type: ignore[arg-type]

        api.enqueue(text("Noted: the launch code is 4-8-15."))
        for m in query("Remember the launch code 4-8-15.", machine("machine-a")):
            if isinstance(m, ResultMessage):
                session_id = m.session_id
                print(f"machine A: {m.result}  (session {session_id[:8]}, mirrored to {store.path})")

        (latest,) = list_sessions_from_store(store, directory=str(project))
        print(f"the store lists: {latest.summary!r}, {len(get_session_messages_from_store(store, session_id, str(project)))} messages")

        api.enqueue(text("The launch code was 4-8-15."))
        for m in query("What was the launch code?", machine("machine-b", resume=session_id)):
            if isinstance(m, ResultMessage):
                print(f"machine B: {m.result}")
        seen = json.dumps(api.message_requests()[-1].body["messages"])
        print("machine B's request carried machine A's turn:", "4-8-15" in seen and "Remember the launch code" in seen)
        print("machine B has no transcript of its own:", not list(Path(root, "machine-b").rglob("*.jsonl")))
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
