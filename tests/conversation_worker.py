"""A worker process of the tests of conversations that outlive their process: one
``Conversations`` over the store named in its arguments; each line of its standard input is a
JSON ``[key, prompt]``, answered on standard output as one JSON line (the result's text and
session id, or the error), after a ``ready`` line. The settings name the CLI, its environment
and folder, the store (a SQLite path, or ``kind:where`` as tests/test_conversation_store.py
opens them), a PostgreSQL session store (``url#table``) and the lease's times.

    python tests/conversation_worker.py SETTINGS_JSON
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

from claude_sdkurl import ClaudeAgentOptions, Conversations, ResultMessage


def main() -> None:
    settings = json.loads(sys.argv[1])
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.test_conversation_store import open_store

    store = open_store(settings["store"]) if ":" in settings.get("store", "") else settings.get("store")
    session_store = None
    if settings.get("session_store"):  # "url#table": transcripts in PostgreSQL, as machines share them
        from claude_sdkurl.stores.postgres import PostgresSessionStore

        url, _, table = settings["session_store"].rpartition("#")
        session_store = PostgresSessionStore(url, table=table)
    can_use_tool = None
    if settings.get("can_use_tool") == "block":  # says it was asked, then never answers (the test kills it)

        def can_use_tool(tool_name: str, tool_input: dict, context: object) -> object:
            print(json.dumps({"asked": tool_name, "input": tool_input}), flush=True)
            threading.Event().wait()

    elif settings.get("can_use_tool") == "allow":
        from claude_sdkurl import PermissionResultAllow

        def can_use_tool(tool_name: str, tool_input: dict, context: object) -> object:
            print(json.dumps({"asked": tool_name, "input": tool_input}), flush=True)
            return PermissionResultAllow()

    options = ClaudeAgentOptions(cli_path=settings["cli"], env=settings["env"], cwd=settings["cwd"],
                                 allowed_tools=settings.get("allowed_tools", ["Bash"]), session_store=session_store,
                                 can_use_tool=can_use_tool)  # fmt: skip
    if settings.get("host"):  # the CLIs live in a session host (python -m claude_sdkurl.host)
        chats = Conversations(options, host=settings["host"])
    else:
        chats = Conversations(options, store=store, lease_ttl=settings.get("lease_ttl", 30.0),
                              lease_wait=settings.get("lease_wait", 300.0), idle_timeout=settings.get("idle_timeout", 300.0))  # fmt: skip
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        key, prompt = json.loads(line)
        try:
            result = [m for m in chats.send(key, prompt) if isinstance(m, ResultMessage)][-1]
            print(json.dumps({"key": key, "text": result.result, "session_id": result.session_id}), flush=True)
        except Exception as e:  # noqa: BLE001 - the test reads the error's type
            print(json.dumps({"key": key, "error": type(e).__name__, "message": str(e)}), flush=True)
    print(json.dumps({"stats": dict(chats.stats)}), flush=True)
    chats.close()


if __name__ == "__main__":
    main()
