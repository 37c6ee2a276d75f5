"""Many sessions in one process: claude_sdkurl (threads) vs the official SDK (asyncio.gather).

    .venv/bin/pip install -q -e '.[bench]' && .venv/bin/python bench/bench_scale.py [--sessions 1,8,32] [--turns 5]

For N concurrent clients on the same CLI binary and the same mock API (in a process of its
own), each doing T turns, it prints: aggregate turns/s, our process's CPU per turn (user+sys
of this process only, not the CLIs'), threads of our process per session, and RSS of our
process per session, with the ratio ours/official for each (below 1.0: ours is cheaper, except
turns/s, where above 1.0 is better). The point is the shape as N grows: per-session overhead
should stay flat (no lock convoy, no quadratic bookkeeping). Nothing here is a test.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import threading
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import claude_agent_sdk as official  # noqa: E402
from bench_vs_official import Env, RemoteAPI  # noqa: E402

import claude_sdkurl as ours  # noqa: E402
from claude_sdkurl.testing import STDIO_CLI_VERSION, install_cli  # noqa: E402


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Sample:
    def __init__(self) -> None:
        self.threads = 0
        self.rss = 0.0

    def take(self) -> None:
        self.threads = max(self.threads, threading.active_count())
        self.rss = max(self.rss, _rss_mib())


def ours_many(e: Env, n: int, turns: int) -> dict[str, float]:
    sample = Sample()
    base_threads, base_rss = threading.active_count(), _rss_mib()
    barrier = threading.Barrier(n + 1)

    def one(i: int) -> None:
        with ours.ClaudeClient(e.ours()) as client:
            barrier.wait()
            for t in range(turns):
                client.query(f"session {i} turn {t}")
                for _ in client.receive_response():
                    pass
                sample.take()

    workers = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for w in workers:
        w.start()
    barrier.wait()  # every client connected: time the turns only
    cpu0, t0 = _cpu(), time.perf_counter()
    for w in workers:
        w.join()
    wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
    return {
        "turns/s": n * turns / wall,
        "cpu ms/turn": cpu * 1000 / (n * turns),
        "threads/session": (sample.threads - base_threads) / n,
        "rss MiB/session": (sample.rss - base_rss) / n,
    }


def official_many(e: Env, n: int, turns: int) -> dict[str, float]:
    sample = Sample()
    base_threads, base_rss = threading.active_count(), _rss_mib()

    async def run() -> tuple[float, float]:
        clients = [official.ClaudeSDKClient(e.theirs()) for _ in range(n)]
        await asyncio.gather(*(c.connect() for c in clients))

        async def one(i: int, client: Any) -> None:
            for t in range(turns):
                await client.query(f"session {i} turn {t}")
                async for _ in client.receive_response():
                    pass
                sample.take()

        cpu0, t0 = _cpu(), time.perf_counter()
        await asyncio.gather(*(one(i, c) for i, c in enumerate(clients)))
        wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
        await asyncio.gather(*(c.disconnect() for c in clients))
        return wall, cpu

    wall, cpu = asyncio.run(run())
    return {
        "turns/s": n * turns / wall,
        "cpu ms/turn": cpu * 1000 / (n * turns),
        "threads/session": (sample.threads - base_threads) / n,
        "rss MiB/session": (sample.rss - base_rss) / n,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", default="1,8,32")
    ap.add_argument("--turns", type=int, default=5)
    args = ap.parse_args()
    cli = str(install_cli(STDIO_CLI_VERSION))
    api = RemoteAPI()
    try:
        e = Env(cli, api)
        print(f"claude_sdkurl {ours.__version__} vs claude-agent-sdk {official.__version__}; CLI {STDIO_CLI_VERSION}, {args.turns} turns each")
        for n in (int(x) for x in args.sessions.split(",")):
            mine = ours_many(e, n, args.turns)
            theirs = official_many(e, n, args.turns)
            for key in mine:
                ratio = mine[key] / theirs[key] if theirs[key] else float("nan")
                print(f"N={n:<3} {key:<16} ours {mine[key]:9.2f}  official {theirs[key]:9.2f}  ratio {ratio:5.2f}x", flush=True)
    finally:
        api.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
