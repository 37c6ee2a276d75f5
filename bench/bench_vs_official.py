"""claude_sdkurl vs the official claude-agent-sdk, same CLI binary, same mock API, one run.

    .venv/bin/pip install -e '.[bench]' && .venv/bin/python bench/bench_vs_official.py [--quick]

Prints min/median/max for each measure and the ratio ours/official of the medians
(below 1.0: we are faster). Peak RSS is measured in a child process per SDK.
The mock Messages API runs in a process of its own, as the real API is remote:
in this process its threads would compete for the GIL with the SDK measured.
Nothing here is a test: numbers vary with the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import claude_agent_sdk as official

import claude_sdkurl as ours
from claude_sdkurl._engine.protocol import Protocol
from claude_sdkurl.testing import (
    STDIO_CLI_VERSION,
    WEBSOCKET_CLI_VERSION,
    MockMessagesAPI,
    RecordedRequest,
    Reply,
    install_cli,
    offline_env,
    text,
)

STREAM_PROMPT = "stream"  # answered with 20,000 stream events (one character each)
BIG_PROMPT = "big"  # answered with one 10 MiB text block


def responder(request: RecordedRequest) -> Reply:
    prompt = request.last_user_text()
    if prompt == STREAM_PROMPT:
        return Reply([{"type": "text", "text": "x" * 20_000}], chunk=1)
    if prompt == BIG_PROMPT:
        return Reply([{"type": "text", "text": "y" * (10 * 1024 * 1024)}], chunk=1024 * 1024)
    return text("pong")


def api_child() -> None:
    """Run in a subprocess: serve the mock API until stdin closes."""
    with MockMessagesAPI(responder) as api:
        print(api.url, flush=True)
        sys.stdin.read()


class RemoteAPI:
    """The mock API in a child process."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--api-child"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)

ROWS: list[tuple[str, list[float], list[float] | None, str]] = []


def stats(xs: list[float]) -> str:
    return f"{min(xs):9.2f} {statistics.median(xs):9.2f} {max(xs):9.2f}"


def record(name: str, mine: list[float], theirs: list[float] | None, unit: str = "ms") -> None:
    ROWS.append((name, mine, theirs, unit))
    ratio = f"{statistics.median(mine) / statistics.median(theirs):6.2f}x" if theirs else "     -"
    print(f"{name:<46} ours {stats(mine)}  official {stats(theirs) if theirs else ' ' * 29}  ratio {ratio} [{unit}]", flush=True)


class Env:
    def __init__(self, cli: str, api: RemoteAPI) -> None:
        self.cli = cli
        self.home = tempfile.mkdtemp(prefix="bench-home-")
        os.makedirs(os.path.join(self.home, "work"), exist_ok=True)
        self.env = offline_env(api.url, self.home)
        self.cwd = os.path.join(self.home, "work")

    def ours(self, **kw: Any) -> ours.ClaudeAgentOptions:
        return ours.ClaudeAgentOptions(cli_path=self.cli, env=self.env, cwd=self.cwd, **kw)

    def theirs(self, **kw: Any) -> official.ClaudeAgentOptions:
        return official.ClaudeAgentOptions(cli_path=self.cli, env=self.env, cwd=self.cwd, **kw)


# ----------------------------------------------------------------------------- drivers


def ours_query(prompt: str, options: ours.ClaudeAgentOptions) -> tuple[float, float, int]:
    t0 = time.perf_counter()
    first = None
    n = 0
    for _ in ours.query(prompt, options):
        n += 1
        if first is None:
            first = time.perf_counter() - t0
    return first or 0.0, time.perf_counter() - t0, n


def official_query(prompt: str, options: official.ClaudeAgentOptions) -> tuple[float, float, int]:
    async def run() -> tuple[float, float, int]:
        t0 = time.perf_counter()
        first = None
        n = 0
        async for _ in official.query(prompt=prompt, options=options):
            n += 1
            if first is None:
                first = time.perf_counter() - t0
        return first or 0.0, time.perf_counter() - t0, n

    return asyncio.run(run())


def ours_turns(options: ours.ClaudeAgentOptions, turns: int) -> list[float]:
    out = []
    with ours.ClaudeClient(options) as client:
        for i in range(turns + 1):
            t0 = time.perf_counter()
            client.query(f"turn {i}")
            for _ in client.receive_response():
                pass
            if i:  # the first turn warms caches
                out.append((time.perf_counter() - t0) * 1000)
    return out


def official_turns(options: official.ClaudeAgentOptions, turns: int) -> list[float]:
    async def run() -> list[float]:
        out = []
        async with official.ClaudeSDKClient(options) as client:
            for i in range(turns + 1):
                t0 = time.perf_counter()
                await client.query(f"turn {i}")
                async for _ in client.receive_response():
                    pass
                if i:
                    out.append((time.perf_counter() - t0) * 1000)
        return out

    return asyncio.run(run())


def raw_cli_turns(e: Env, turns: int) -> list[float]:
    """The CLI driven by hand over stdio: the floor any SDK adds to."""
    p = subprocess.Popen(
        [e.cli, "--output-format", "stream-json", "--verbose", "--input-format", "stream-json", "--system-prompt", ""],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **e.env},
        cwd=e.cwd,
        bufsize=0,
    )
    assert p.stdin and p.stdout
    out = []
    p.stdin.write(b'{"type":"control_request","request_id":"r1","request":{"subtype":"initialize"}}\n')
    for line in p.stdout:
        if b'"control_response"' in line:
            break
    for i in range(turns + 1):
        t0 = time.perf_counter()
        msg = {"type": "user", "message": {"role": "user", "content": f"turn {i}"}, "parent_tool_use_id": None, "session_id": ""}
        p.stdin.write((json.dumps(msg) + "\n").encode())
        for line in p.stdout:
            if b'"type":"result"' in line:
                break
        if i:
            out.append((time.perf_counter() - t0) * 1000)
    p.stdin.close()
    p.wait(10)
    return out


# ----------------------------------------------------------------------------- measures


def startup(e: Env, label: str, runs: int) -> None:
    mine = [ours_query("hi", e.ours()) for _ in range(runs)]
    theirs = [official_query("hi", e.theirs()) for _ in range(runs)]
    record(f"[{label}] query() -> first message", [m[0] * 1000 for m in mine], [t[0] * 1000 for t in theirs])
    record(f"[{label}] query() -> ResultMessage", [m[1] * 1000 for m in mine], [t[1] * 1000 for t in theirs])


def prewarmed(e: Env, label: str, runs: int) -> None:
    options = e.ours()
    mine = []
    with ours.prewarm(options):
        for _ in range(runs):
            time.sleep(1.0)  # the pool refills behind each query
            mine.append(ours_query("hi", options)[0] * 1000)
    theirs = [official_query("hi", e.theirs())[0] * 1000 for _ in range(runs)]
    record(f"[{label}] prewarmed query() -> first message", mine, theirs)


def per_turn(e: Env, label: str, turns: int) -> None:
    mine = ours_turns(e.ours(), turns)
    theirs = official_turns(e.theirs(), turns)
    raw = raw_cli_turns(e, turns)
    record(f"[{label}] per-turn latency (client)", mine, theirs)
    record(f"[{label}] per-turn latency ours vs raw CLI", mine, raw)


def throughput(e: Env, label: str, runs: int) -> None:
    mine, theirs = [], []
    for _ in range(runs):
        mine.append(ours_query(STREAM_PROMPT, e.ours(include_partial_messages=True))[1] * 1000)
        theirs.append(official_query(STREAM_PROMPT, e.theirs(include_partial_messages=True))[1] * 1000)
    record(f"[{label}] turn of 20,000 stream_events", mine, theirs)
    mine, theirs = [], []
    for _ in range(runs):
        mine.append(ours_query(BIG_PROMPT, e.ours())[1] * 1000)
        try:
            theirs.append(official_query(BIG_PROMPT, e.theirs(max_buffer_size=64 * 1024 * 1024))[1] * 1000)
        except Exception as exc:  # pragma: no cover - report, do not hide
            print(f"  official SDK failed on a 10 MiB message: {exc!r}")
    record(f"[{label}] turn with a 10 MiB assistant message", mine, theirs or None)


def overhead(lines: list[str], rounds: int = 5) -> None:
    """Cost per message of turning a line into a typed message, against json.loads alone."""
    from claude_agent_sdk._internal.message_parser import parse_message as official_parse

    def timed(fn: Callable[[], None]) -> float:
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) / len(lines) * 1e6

    def bare() -> None:
        for line in lines:
            json.loads(line)

    def mine() -> None:
        p = Protocol()
        feed = p.receive_data
        for line in lines:
            feed(line)

    def theirs() -> None:
        for line in lines:
            official_parse(json.loads(line))

    b = [timed(bare) for _ in range(rounds)]
    m = [timed(mine) for _ in range(rounds)]
    t = [timed(theirs) for _ in range(rounds)]
    record("per message: ours vs bare json.loads", m, b, "µs")
    record("per message: ours vs official parse", m, t, "µs")


def capture_lines(e: Env) -> list[str]:
    return [json.dumps(m.raw) + "\n" for m in ours.query(STREAM_PROMPT, e.ours(include_partial_messages=True))]


def rss_child(which: str, cli: str, api_url: str) -> None:
    """Run in a subprocess: one 10 MiB turn with ``which`` SDK, then print peak RSS (MiB)."""
    home = tempfile.mkdtemp()
    os.makedirs(os.path.join(home, "work"))
    kw = {"cli_path": cli, "env": offline_env(api_url, home), "cwd": os.path.join(home, "work")}
    if which == "ours":
        list(ours.query(BIG_PROMPT, ours.ClaudeAgentOptions(**kw)))
    else:
        official_query(BIG_PROMPT, official.ClaudeAgentOptions(max_buffer_size=64 * 1024 * 1024, **kw))
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec, so a child would report its parent's peak.
    with open("/proc/self/status") as f:
        hwm_kib = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    print(hwm_kib / 1024)


def peak_rss(e: Env, api: RemoteAPI, label: str, runs: int) -> None:
    result: dict[str, list[float]] = {"ours": [], "official": []}
    for _ in range(runs):
        for which in result:
            out = subprocess.run(
                [sys.executable, __file__, "--rss-child", which, e.cli, api.url], capture_output=True, text=True
            )
            result[which].append(float(out.stdout.strip().splitlines()[-1]))
    record(f"[{label}] peak RSS, 10 MiB turn", result["ours"], result["official"], "MiB")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--rss-child", nargs=3, metavar=("WHICH", "CLI", "API"))
    ap.add_argument("--api-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.api_child:
        api_child()
        return 0
    if args.rss_child:
        rss_child(*args.rss_child)
        return 0
    runs = 3 if args.quick else 7
    turns = 10 if args.quick else 30
    print(f"claude_sdkurl {ours.__version__} vs claude-agent-sdk {official.__version__}; runs={runs}, turns={turns}")
    api = RemoteAPI()
    try:
        for version, label in ((STDIO_CLI_VERSION, f"stdio {STDIO_CLI_VERSION}"), (WEBSOCKET_CLI_VERSION, f"ws {WEBSOCKET_CLI_VERSION}")):
            e = Env(str(install_cli(version)), api)
            startup(e, label, runs)
            prewarmed(e, label, runs)
            per_turn(e, label, turns)
            throughput(e, label, max(2, runs // 2))
            peak_rss(e, api, label, 2)
        overhead(capture_lines(Env(str(install_cli(STDIO_CLI_VERSION)), api)))
    finally:
        api.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
