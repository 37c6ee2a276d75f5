"""A batch behind a rate-limit window: claude_sdkurl's run_batch against the same batch driven by
the official SDK with asyncio.gather (a semaphore for the concurrency), in one run, on the same
CLI binary and mock API.

    .venv/bin/pip install -q -e '.[bench]' && .venv/bin/python bench/bench_limits.py [--items 16] [--concurrency 4] [--window 20]

For ``--window`` seconds from its first request the mock answers 429 with ``retry-after: 120``
(the CLI then gives up at once: measured; ``--retry-after 10``: it waits and retries by itself,
holding its process), then answers. Printed for each side: items lost
(not answered at the end), wall time, API requests during the window, and CLI-seconds held
during the window (CLI processes alive, sampled every 0.1 s). The official SDK has no batch
retry of its own (its ``query()`` raises or ends on the error result), so its lost items are
what a program gets without writing its own pause-and-resume. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import claude_agent_sdk as official

from claude_sdkurl import ClaudeAgentOptions
from claude_sdkurl.batch import RetryPolicy, run_batch
from claude_sdkurl.testing import STDIO_CLI_VERSION, MockMessagesAPI, Reply, install_cli, offline_env, text


class Window:
    def __init__(self, seconds: float, retry_after: str = "120") -> None:
        self.seconds = seconds
        self.retry_after = retry_after
        self.began: float | None = None
        self.limited = 0
        self.lock = threading.Lock()

    def __call__(self, request: Any) -> Reply:
        now = time.monotonic()
        with self.lock:
            self.began = self.began or now
            limited = now - self.began < self.seconds
            self.limited += limited
        if limited:
            return Reply(status=429, error_type="rate_limit_error", error_message="rate limited", headers={"retry-after": self.retry_after})
        return text(f"answer to {request.last_user_text()}")


def clis_alive() -> int:
    me = str(os.getpid())
    count = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    command = f.read()
            except OSError:
                continue
            if fields[1] == me and b"claude" in command:
                count += 1
    return count


def measure(side: str, items: int, concurrency: int, seconds: float, cli: str, retry_after: str = "120") -> dict[str, float]:
    window = Window(seconds, retry_after)
    held = [0.0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            if window.began is not None and time.monotonic() - window.began < seconds:
                held[0] += 0.1 * clis_alive()
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    with MockMessagesAPI(window) as api, tempfile.TemporaryDirectory() as home:
        (Path(home) / "work").mkdir()
        env, cwd = offline_env(api.url, Path(home)), str(Path(home) / "work")
        prompts = [f"item {i}" for i in range(items)]
        sampler.start()
        t0 = time.monotonic()
        if side == "ours":
            result = run_batch(prompts, ClaudeAgentOptions(cli_path=cli, env=env, cwd=cwd), max_concurrency=concurrency,
                               retry=RetryPolicy(first_wait=1.0, max_wait=4.0))  # fmt: skip
            answered = sum(1 for i in result.items if i.ok)
        else:
            answered = asyncio.run(_official(prompts, official.ClaudeAgentOptions(cli_path=cli, env=env, cwd=cwd), concurrency))
        wall = time.monotonic() - t0
        stop.set()
        sampler.join()
    return {"lost": items - answered, "wall s": wall, "requests in window": window.limited, "CLI-s held in window": held[0]}


async def _official(prompts: list[str], options: Any, concurrency: int) -> int:
    gate = asyncio.Semaphore(concurrency)

    async def one(prompt: str) -> bool:
        async with gate:
            try:
                async for message in official.query(prompt=prompt, options=options):
                    if isinstance(message, official.ResultMessage):
                        return not message.is_error
            except Exception:
                return False
        return False

    return sum(await asyncio.gather(*(one(p) for p in prompts)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--retry-after", default="120", help="the 429s' retry-after; under about 60 the CLI waits and retries by itself")
    args = parser.parse_args()
    cli = str(install_cli(STDIO_CLI_VERSION))
    rows = {side: measure(side, args.items, args.concurrency, args.window, cli, args.retry_after) for side in ("ours", "official")}
    print(f"{args.items} items, concurrency {args.concurrency}, a {args.window:g} s window of 429 (retry-after: {args.retry_after})")
    for key in rows["ours"]:
        print(f"{key:<24} ours {rows['ours'][key]:8.1f}   official {rows['official'][key]:8.1f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
