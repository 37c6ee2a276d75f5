"""Issue 69: a newcomer's first steps, on the real CLI. Right after the quickstart, the README's
first query, its offline form and its first conversation run as written, with no ``claude`` on
``PATH`` and no ``$CLAUDE_SDKURL_CLI``: the lookup finds the CLI the quickstart installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from claude_sdkurl.testing import WEBSOCKET_CLI_VERSION, MockMessagesAPI, offline_env

from .test_docs import ROOT, code_blocks

pytestmark = pytest.mark.realcli


def _path_without_claude() -> str:
    kept = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and not os.access(os.path.join(d, "claude"), os.X_OK)]
    return os.pathsep.join(kept)


def test_the_readmes_first_query_and_conversation_run_after_the_quickstart(cli_paths: dict[str, Path], api: MockMessagesAPI,
                                                                         home: Path) -> None:  # fmt: skip
    # What the quickstart (examples/offline_quickstart.py, install_cli) leaves under a HOME: the
    # WebSocket CLI in ~/.cache/claude_sdkurl/cli/<version>, an npm prefix (here: the suite's own)
    quickstart = cli_paths["websocket"]
    prefix = next(p for p in quickstart.parents if p.name == WEBSOCKET_CLI_VERSION)
    cache = home / ".cache" / "claude_sdkurl" / "cli"
    cache.mkdir(parents=True)
    (cache / WEBSOCKET_CLI_VERSION).symlink_to(prefix, target_is_directory=True)
    blocks = [b for b in code_blocks(ROOT / "README.md") if b.mark == "<!-- run -->"]
    first_query, offline, conversation = blocks[:3]
    assert "MockMessagesAPI(" in offline.code and "ClaudeClient(" in conversation.code
    script = home / "work" / "readme.py"
    script.write_text("\n".join(b.code for b in (first_query, offline, conversation)))
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_SDKURL_CLI", "CLAUDE_SDKURL_CLI_CACHE")}
    env.update(offline_env(api.url, home), PATH=_path_without_claude())  # (the account: the mock, by the environment)
    done = subprocess.run([sys.executable, str(script)], cwd=home / "work", env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("pong ($") and lines[1] == "4 (1 call to the mock)" and lines[2:] == ["pong", "pong"], lines
    # the README's own query and conversation reached the mock through the CLI the quickstart installed
    agents = {r.headers.get("User-Agent", "") for r in api.message_requests()}
    assert len(api.message_requests()) == 3 and all(WEBSOCKET_CLI_VERSION in a for a in agents), agents
