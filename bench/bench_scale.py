"""Many sessions: claude_sdkurl (threads) vs the official SDK (asyncio.gather), in one process
and across worker processes.

    .venv/bin/pip install -q -e '.[bench]' && .venv/bin/python bench/bench_scale.py \\
        [--sessions 1,8,32] [--turns 5] [--repeat 3] [--workers 1,2]

For N concurrent clients on the same CLI binary and the same mock API (in a process of its
own), each doing T turns, spread over W worker processes (W=1: all in this process), it prints
the median over ``--repeat`` alternating runs (ours, official, ours, ...) of: aggregate turns/s,
CPU per turn of the SDK's processes (user+sys of the worker processes only, not the CLIs'),
threads per session and RSS per session in the worker processes, with the ratio
ours/official (above 1.0 is better for turns/s, below 1.0 for the rest). The point is the shape
as N grows: per-session overhead should stay flat (no lock convoy, no quadratic bookkeeping),
and throughput should not fall behind the official SDK's. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import resource
import statistics
import sys
import threading
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import claude_agent_sdk as official  # noqa: E402
from bench_vs_official import Env, RemoteAPI  # noqa: E402

import claude_sdkurl as ours  # noqa: E402
from claude_sdkurl.testing import STDIO_CLI_VERSION, install_cli  # noqa: E402

KEYS = ("turns/s", "cpu ms/turn", "threads/session", "rss MiB/session")


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


def ours_many(e: Env, n: int, turns: int, start: Any) -> dict[str, float]:
    """``n`` clients on threads; ``start()`` is called once all are connected (the timing starts).
    The timing ends when the last client's last turn is over, before any disconnect (as for the
    official SDK below)."""
    sample = Sample()
    base_threads, base_rss = threading.active_count(), _rss_mib()
    connected, finished = threading.Barrier(n + 1), threading.Barrier(n + 1)

    def one(i: int) -> None:
        with ours.ClaudeClient(e.ours()) as client:
            connected.wait()
            for t in range(turns):
                client.query(f"session {i} turn {t}")
                for _ in client.receive_response():
                    pass
                sample.take()
            finished.wait()

    workers = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for w in workers:
        w.start()
    connected.wait()
    start()
    cpu0, t0 = _cpu(), time.perf_counter()
    finished.wait()
    wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
    for w in workers:
        w.join()
    return _figures(n, turns, wall, cpu, sample, base_threads, base_rss)


def official_many(e: Env, n: int, turns: int, start: Any) -> dict[str, float]:
    sample = Sample()
    base_threads, base_rss = threading.active_count(), _rss_mib()

    async def run() -> dict[str, float]:
        clients = [official.ClaudeSDKClient(e.theirs()) for _ in range(n)]
        await asyncio.gather(*(c.connect() for c in clients))

        async def one(i: int, client: Any) -> None:
            for t in range(turns):
                await client.query(f"session {i} turn {t}")
                async for _ in client.receive_response():
                    pass
                sample.take()

        start()
        cpu0, t0 = _cpu(), time.perf_counter()
        await asyncio.gather(*(one(i, c) for i, c in enumerate(clients)))
        figures = _figures(n, turns, time.perf_counter() - t0, _cpu() - cpu0, sample, base_threads, base_rss)
        await asyncio.gather(*(c.disconnect() for c in clients))
        return figures

    return asyncio.run(run())


def _figures(n: int, turns: int, wall: float, cpu: float, sample: Sample, threads0: int, rss0: float) -> dict[str, float]:
    return {
        "turns/s": n * turns / wall,
        "cpu ms/turn": cpu * 1000 / (n * turns),
        "threads/session": (sample.threads - threads0) / n,
        "rss MiB/session": (sample.rss - rss0) / n,
        "wall": wall,
        "cpu": cpu,
        "ended": time.time(),  # for the workers: when the last turn was over (the same clock in every process)
    }


def _worker(which: str, cli: str, api_url: str, n: int, turns: int, barrier: Any, out: Any) -> None:
    e = Env(cli, _Url(api_url))
    run = ours_many if which == "ours" else official_many
    out.put(run(e, n, turns, barrier.wait))


class _Url:
    def __init__(self, url: str) -> None:
        self.url = url


def measure(which: str, e: Env, api: RemoteAPI, n: int, turns: int, workers: int) -> dict[str, float]:
    if workers == 1:
        return (ours_many if which == "ours" else official_many)(e, n, turns, lambda: None)
    ctx = mp.get_context("spawn")
    shares = [k for k in (n // workers + (1 if i < n % workers else 0) for i in range(workers)) if k]
    barrier, out = ctx.Barrier(len(shares) + 1), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(which, e.cli, api.url, k, turns, barrier, out)) for k in shares]
    for p in procs:
        p.start()
    barrier.wait()  # every worker has its clients connected
    t0 = time.time()
    parts = [out.get() for _ in procs]
    wall = max(p["ended"] for p in parts) - t0  # to the end of the last turn, not of the disconnects
    for p in procs:
        p.join()
    total = n * turns
    return {
        "turns/s": total / wall,
        "cpu ms/turn": sum(p["cpu"] for p in parts) * 1000 / total,
        "threads/session": sum(p["threads/session"] * k for p, k in zip(parts, shares)) / n,
        "rss MiB/session": sum(p["rss MiB/session"] * k for p, k in zip(parts, shares)) / n,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", default="1,8,32")
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", default="1")
    args = ap.parse_args()
    cli = str(install_cli(STDIO_CLI_VERSION))
    api = RemoteAPI()
    try:
        e = Env(cli, api)
        print(
            f"claude_sdkurl {ours.__version__} vs claude-agent-sdk {official.__version__}; CLI {STDIO_CLI_VERSION}, "
            f"{args.turns} turns each, median of {args.repeat} alternating runs"
        )
        for workers in (int(x) for x in args.workers.split(",")):
            for n in (int(x) for x in args.sessions.split(",")):
                runs: dict[str, list[dict[str, float]]] = {"ours": [], "official": []}
                for _ in range(args.repeat):
                    for which in ("ours", "official"):
                        runs[which].append(measure(which, e, api, n, args.turns, workers))
                for key in KEYS:
                    mine = statistics.median(r[key] for r in runs["ours"])
                    theirs = statistics.median(r[key] for r in runs["official"])
                    ratio = mine / theirs if theirs else float("nan")
                    print(
                        f"W={workers} N={n:<3} {key:<16} ours {mine:9.2f}  official {theirs:9.2f}  ratio {ratio:5.2f}x",
                        flush=True,
                    )
    finally:
        api.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
