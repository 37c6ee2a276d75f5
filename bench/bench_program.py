"""What a whole one-query program costs: ours, against the same work driven by hand over stdio
with no SDK, and the official SDK's program, each a fresh Python process, paired runs in turn.

    .venv/bin/pip install -e '.[bench]' && .venv/bin/python bench/bench_program.py [--runs 8]

Each program starts Python, imports its SDK (none for the hand-driven one), starts the CLI
2.1.330 against the mock Messages API (in a process of its own), sends one prompt, reads to the
result and exits. The hand-driven program starts the CLI with our command line and environment
(``--system-prompt ""`` and the SDK's variables, as the official SDK has them), so that the CLI's
own work is the same in both. Prints medians and the ratios (ours / by hand is the SDK's own cost: the goal
is at most 1.1x). Nothing here is a test: numbers vary with the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from _remote import remote_mock_api

from claude_sdkurl import ClaudeAgentOptions
from claude_sdkurl._engine.launch import plan_launch
from claude_sdkurl.testing import STDIO_CLI_VERSION, install_cli, offline_env

OURS = """
from claude_sdkurl import ClaudeAgentOptions, ResultMessage, query
for m in query("hi", ClaudeAgentOptions()):
    if isinstance(m, ResultMessage):
        print(m.result)
"""

THEIRS = """
import anyio
from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query
async def main():
    async for m in query(prompt="hi", options=ClaudeAgentOptions(cli_path=__import__("os").environ["CLAUDE_SDKURL_CLI"])):
        if isinstance(m, ResultMessage):
            print(m.result)
anyio.run(main)
"""

# The same command line and environment as ours (the plan of ClaudeAgentOptions(), handed over
# in BY_HAND_ARGS and BY_HAND_ENV): the CLI does the same work, the difference is the SDK's own.
BY_HAND = """
import json, os, subprocess
p = subprocess.Popen([os.environ["CLAUDE_SDKURL_CLI"], *json.loads(os.environ["BY_HAND_ARGS"])],
                     env={**os.environ, **json.loads(os.environ["BY_HAND_ENV"])}, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
p.stdin.write(b'{"type":"control_request","request_id":"r1","request":{"subtype":"initialize"}}\\n')
for line in p.stdout:
    if b'"control_response"' in line:
        break
p.stdin.write((json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}, "parent_tool_use_id": None,
                           "session_id": ""}) + "\\n").encode())
for line in p.stdout:
    if b'"type":"result"' in line:
        print(json.loads(line)["result"])
        break
p.stdin.close()
p.wait()
"""


def timed(code: str, env: dict[str, str], cwd: str) -> float:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    took = time.perf_counter() - t0
    if done.returncode != 0 or "pong" not in done.stdout:
        raise SystemExit(f"a program failed: {done.stderr[-1500:]}")
    return took * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=8)
    args = parser.parse_args()
    with remote_mock_api() as url:
        with tempfile.TemporaryDirectory() as home:
            os.mkdir(os.path.join(home, "work"))
            env = {**os.environ, **offline_env(url, home), "CLAUDE_SDKURL_CLI": str(install_cli(STDIO_CLI_VERSION))}
            # An installed package has its bytecode (pip compiles it); a shell that sets
            # PYTHONDONTWRITEBYTECODE would have ours compiled from source in every run.
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            plan = plan_launch(ClaudeAgentOptions(env=env), False, None)
            env["BY_HAND_ARGS"] = json.dumps(plan.args)
            env["BY_HAND_ENV"] = json.dumps({k: v for k, v in plan.env.items() if env.get(k) != v})
            cwd = os.path.join(home, "work")
            programs = {"ours": OURS, "by hand (no SDK)": BY_HAND, "official": THEIRS}
            for code in programs.values():  # warm the disk cache, the version file, the bytecode
                timed(code, env, cwd)
            times: dict[str, list[float]] = {name: [] for name in programs}
            for _ in range(args.runs):
                for name, code in programs.items():
                    times[name].append(timed(code, env, cwd))
    med = {name: statistics.median(xs) for name, xs in times.items()}
    print(f"one-query program, CLI {STDIO_CLI_VERSION}, {args.runs} paired runs (ms: min / median / max)")
    for name, xs in times.items():
        print(f"  {name:18s} {min(xs):7.0f} {med[name]:7.0f} {max(xs):7.0f}")
    pairs = [a / b for a, b in zip(times["ours"], times["by hand (no SDK)"])]
    print(f"  ours / by hand: {med['ours'] / med['by hand (no SDK)']:.2f}x (median of the paired ratios "
          f"{statistics.median(pairs):.2f}x)   ours / official: {med['ours'] / med['official']:.2f}x")


if __name__ == "__main__":
    main()
