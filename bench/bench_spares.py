"""Spare CLIs and hibernating conversations (issue 33), measured on the real CLI 2.1.330 and the
mock Messages API (in a process of its own). Nothing here is a test: numbers vary with the machine.

    .venv/bin/python bench/bench_spares.py [--runs 6] [--ts /path/with/node_modules] [--cli 2.1.332]

1. First assistant message after a claim vs a cold start, over five folders (ratio of medians).
2. The same claim driven by the TypeScript SDK 0.3.332 (prewarm() + claim(), Node) on the same
   CLI, when ``--ts`` names a folder where ``npm install @anthropic-ai/claude-agent-sdk@0.3.332``
   ran; ours against theirs.
3. A parked spare's resident memory, and the CPU 20 parked spares use in ``--idle`` seconds.
4. Conversations: 100 of them, 10 active at once (max_live=10): wake latency (first answer byte
   after hibernation) p50, all CLIs' resident memory sampled, requests per second. Two loads:
   10 senders with no pause between messages (the machine's capacity: every CPU is busy starting
   CLIs, and the latency is what Little's law makes of it), and 10 users who read each answer
   and think ``--think`` seconds on average (exponential) before their next message, each time
   to one of the 100 conversations at random (``--parts 5``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from claude_sdkurl import AssistantMessage, ClaudeAgentOptions, Conversations, SparePool, StreamEvent, query
from claude_sdkurl.spares import resident_mb
from _remote import remote_mock_api

from claude_sdkurl.testing import STDIO_CLI_VERSION, install_cli, offline_env


def first_message_ms(messages: object) -> float:
    t0 = time.perf_counter()
    took = None
    for m in messages:  # type: ignore[attr-defined]
        if took is None and isinstance(m, (AssistantMessage, StreamEvent)):
            took = (time.perf_counter() - t0) * 1000
    assert took is not None
    return took


def settle(pool: SparePool) -> None:
    """Until the pool has its spare parked, then 0.3 s more."""
    deadline = time.monotonic() + 60
    while not pool._parked and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)


def p50(xs: list[float]) -> float:
    return statistics.median(xs)


def cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except OSError:
            pass
    return total


TS_CLAIM = """
import { prewarm } from "@anthropic-ai/claude-agent-sdk";
const [cli, folders] = [process.argv[2], JSON.parse(process.argv[3])];
const out = [];
for (const cwd of folders) {
  const spare = await prewarm({ options: { pathToClaudeCodeExecutable: cli } });
  await new Promise(r => setTimeout(r, 1500));  // parked, as ours are before a claim
  const t0 = performance.now();
  const q = spare.claim({ prompt: "hi", options: { cwd } });
  let first = null;
  for await (const m of q) { if (first === null && m.type === "assistant") first = performance.now() - t0; }
  out.push(first);
}
console.log(JSON.stringify(out));
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--idle", type=float, default=60.0)
    parser.add_argument("--ts", help="a folder with node_modules/@anthropic-ai/claude-agent-sdk 0.3.332")
    parser.add_argument("--parts", default="12345", help="which measures to run (digits)")
    parser.add_argument("--cli", default=STDIO_CLI_VERSION, help="the CLI version (2.1.330 or later: --await-claim)")
    parser.add_argument("--think", type=float, default=10.0, help="part 5: mean seconds between a user's messages")
    parser.add_argument("--sends", type=int, default=240, help="part 5: messages in all")
    args = parser.parse_args()
    cli = str(install_cli(args.cli))
    with remote_mock_api() as url:
        with tempfile.TemporaryDirectory() as home:
            env = offline_env(url, home)
            host = ClaudeAgentOptions(cli_path=cli, env=env)
            folders = [os.path.join(home, f"project-{i}") for i in range(5)]
            for f in folders:
                os.mkdir(f)
            print(f"CLI {args.cli}, mock model in its own process, {args.runs} rounds over {len(folders)} folders")

            # 1. claim vs cold
            cold: list[float] = []
            claimed: list[float] = []
            with SparePool(1, host) as pool:
                for r in range(args.runs if "1" in args.parts or "2" in args.parts else 0):
                    for f in folders:
                        options = dataclasses.replace(host, cwd=f)
                        unfit = dataclasses.replace(options, max_turns=5)  # not claimable: never takes a spare
                        # each measured on a quiet machine: the previous claim's replacement is
                        # parked (its start-up would slow a cold start as much as a claim)
                        settle(pool)
                        cold.append(first_message_ms(query("hi", unfit)))
                        settle(pool)
                        claimed.append(first_message_ms(pool.query("hi", options)))
                stats = dict(pool.stats)
            if cold:
                print(f"1. first message: cold p50 {p50(cold):.0f} ms, after a claim p50 {p50(claimed):.0f} ms: "
                      f"{p50(claimed) / p50(cold):.2f}x ({stats})")

            # 2. the TypeScript SDK's claim
            if args.ts and "2" in args.parts:
                script = Path(args.ts) / "claim.mjs"
                script.write_text(TS_CLAIM)
                theirs: list[float] = []
                for _ in range(max(1, args.runs // 2)):
                    done = subprocess.run(["node", str(script), cli, json.dumps(folders)], cwd=args.ts, capture_output=True,
                                          text=True, timeout=300, env={**os.environ, **env})  # fmt: skip
                    if done.returncode != 0:
                        print("2. TypeScript SDK failed:", done.stderr[-800:])
                        break
                    theirs += [float(x) for x in json.loads(done.stdout.strip().splitlines()[-1]) if x is not None]
                if theirs:
                    print(f"2. first message after a claim: ours p50 {p50(claimed):.0f} ms, TypeScript SDK 0.3.332 p50 "
                          f"{p50(theirs):.0f} ms: {p50(claimed) / p50(theirs):.2f}x")

            # 3. idle spares: memory and CPU
            if "3" in args.parts:
                with SparePool(20, host) as pool:
                    deadline = time.monotonic() + 180
                    while len(pool._parked) < 20 and time.monotonic() < deadline:
                        time.sleep(0.2)
                    time.sleep(5)  # settled
                    pids = [p for s in pool._parked if (p := s.pid()) is not None]
                    rss = [m for p in pids if (m := resident_mb(p)) is not None]
                    before = cpu_seconds(pids)
                    time.sleep(args.idle)
                    used = cpu_seconds(pids) - before
                print(f"3. a parked spare: {p50(rss):.0f} MiB resident (min {min(rss):.0f}, max {max(rss):.0f}); "
                      f"{len(pids)} parked spares used {used:.2f} CPU-seconds in {args.idle:.0f} s ({100 * used / args.idle:.1f}% of a core)")

            if "5" in args.parts:
                users_thinking(host, folders[0], args.think, args.sends)
            if "4" not in args.parts:
                return
            # 4a. one wake at a time: what a single conversation's wake costs on an idle machine
            single: list[float] = []
            with Conversations(dataclasses.replace(host, cwd=folders[0], include_partial_messages=True), max_live=1,
                               idle_timeout=None) as chats:  # fmt: skip
                for i in range(max(3, args.runs)):
                    first_message_ms(chats.send("a", f"a {i}"))
                    single.append(first_message_ms(chats.send("b", f"b {i}")) if i else 0.0)
                single = [x for x in single if x]
            print(f"4a. a wake, one at a time (max_live=1, two conversations taking turns): p50 {p50(single) / 1000:.2f} s")

            # 4. conversations: 100, 10 active
            wakes: list[float] = []
            memory: list[float] = []
            served = 0
            lock = threading.Lock()
            with Conversations(dataclasses.replace(host, cwd=folders[0], include_partial_messages=True), max_live=10,
                               idle_timeout=None) as chats:  # fmt: skip
                keys = [f"conv-{i}" for i in range(100)]
                plan = [(k, n) for n in range(2) for k in keys]
                random.Random(1).shuffle(plan)
                todo = iter(plan)
                seen: set[str] = set()

                def worker() -> None:
                    nonlocal served
                    while True:
                        with lock:
                            item = next(todo, None)
                            wake = item is not None and item[0] in seen
                            if item is not None:
                                seen.add(item[0])
                        if item is None:
                            return
                        took = first_message_ms(chats.send(item[0], f"{item[0]} {item[1]}"))
                        with lock:
                            served += 1
                            if wake:
                                wakes.append(took)

                stop = threading.Event()

                def sample() -> None:
                    while not stop.is_set():
                        total = 0.0
                        for c in list(chats._conversations.values()):
                            session = getattr(c.client, "_session", None)
                            pid = getattr(getattr(getattr(session, "_transport", None), "process", None), "pid", None)
                            if pid:
                                total += resident_mb(pid) or 0.0
                        memory.append(total)
                        time.sleep(0.5)

                sampler = threading.Thread(target=sample, daemon=True)
                sampler.start()
                t0 = time.monotonic()
                threads = [threading.Thread(target=worker) for _ in range(10)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                took_all = time.monotonic() - t0
                stop.set()
                sampler.join(5)
            print(f"4. 100 conversations, 10 active (max_live=10): wake -> first message p50 {p50(wakes) / 1000:.2f} s "
                  f"(p90 {sorted(wakes)[int(len(wakes) * 0.9)] / 1000:.2f} s), all CLIs' resident memory at most "
                  f"{max(memory):.0f} MiB, {served / took_all:.1f} turns/s")


def users_thinking(host: ClaudeAgentOptions, cwd: str, think: float, sends: int) -> None:
    """Part 5: 10 users at once, each thinking between messages, over 100 conversations."""
    wakes: list[float] = []
    lock = threading.Lock()
    left = [sends]
    rng = random.Random(5)
    with Conversations(dataclasses.replace(host, cwd=cwd, include_partial_messages=True), max_live=10,
                       idle_timeout=None) as chats:  # fmt: skip
        seen: set[str] = set()

        def user(n: int) -> None:
            pause = random.Random(n)
            while True:
                with lock:
                    if left[0] == 0:
                        return
                    left[0] -= 1
                    key = f"conv-{rng.randrange(100)}"
                    known = chats._conversations.get(key)
                    wake = key in seen and (known is None or known.client is None)
                    seen.add(key)
                took = first_message_ms(chats.send(key, f"{key} message"))
                if wake:
                    with lock:
                        wakes.append(took)
                time.sleep(pause.expovariate(1 / think))

        t0 = time.monotonic()
        threads = [threading.Thread(target=user, args=(n,)) for n in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took_all = time.monotonic() - t0
        stats = dict(chats.stats)
    print(f"5. 10 users thinking {think:.0f} s on average between messages, 100 conversations (max_live=10): "
          f"{len(wakes)} wakes, p50 {p50(wakes) / 1000:.2f} s (p90 {sorted(wakes)[int(len(wakes) * 0.9)] / 1000:.2f} s), "
          f"{sends / took_all:.2f} messages/s, {stats}")


if __name__ == "__main__":
    main()
