"""Run a real Claude Code CLI offline against the project's mock Messages API.

No account or network beyond npm is needed: the CLI is installed once into
~/.cache/claude_sdkurl/cli, the "model" is claude_sdkurl.testing.MockMessagesAPI.
With a real account, drop the mock and the env and just call query(...).
"""

from __future__ import annotations

import sys
import tempfile

from claude_sdkurl import AssistantMessage, ClaudeAgentOptions, ResultMessage, TextBlock, query
from claude_sdkurl.testing import WEBSOCKET_CLI_VERSION, MockMessagesAPI, install_cli, offline_env, text


def main() -> int:
    version = sys.argv[1] if len(sys.argv) > 1 else WEBSOCKET_CLI_VERSION
    print(f"installing / locating Claude Code {version} ...", flush=True)
    cli = install_cli(version)
    with MockMessagesAPI() as api, tempfile.TemporaryDirectory() as home:
        api.enqueue(text("Hello from a real Claude Code CLI, driven synchronously!"))
        options = ClaudeAgentOptions(cli_path=str(cli), env=offline_env(api.url, home), cwd=home)
        for message in query("Say hello", options):
            if isinstance(message, AssistantMessage):
                for block in message.content:
                    if isinstance(block, TextBlock):
                        print("Claude:", block.text)
            elif isinstance(message, ResultMessage):
                print(f"done: {message.subtype}, {message.duration_ms} ms, ${message.total_cost_usd:.6f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
