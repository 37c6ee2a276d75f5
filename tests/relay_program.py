"""An unchanged program for tests/test_realcli_relay.py: it knows nothing of the relay (the test
sets CLAUDE_SDKURL_RELAY in its environment). After a line on standard input it runs three
sessions at once, on threads, and prints each result.

argv: cli_path transport api_url home
"""

from __future__ import annotations

import sys
import threading

from claude_sdkurl import ClaudeAgentOptions, ResultMessage, query
from claude_sdkurl.testing import offline_env


def main() -> None:
    cli, transport, api_url, home = sys.argv[1:5]
    options = ClaudeAgentOptions(cli_path=cli, transport=transport, env=offline_env(api_url, home), cwd=home,
                                 include_partial_messages=True)  # fmt: skip
    sys.stdin.readline()
    results: dict[str, str] = {}

    def run(name: str) -> None:
        for message in query(f"say the name {name}", options):
            if isinstance(message, ResultMessage):
                results[name] = f"{message.session_id} {message.result}"

    threads = [threading.Thread(target=run, args=(name,)) for name in ("alpha", "bravo", "charlie")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name in sorted(results):
        print(name, results[name], flush=True)


if __name__ == "__main__":
    main()
