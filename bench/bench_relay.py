"""What watching costs: the relay (claude_sdkurl.relay) measured on the real CLI 2.1.330 and the
mock model.

* time per turn of one ``ClaudeClient`` (a reply of 200 streamed deltas) with no relay, and with
  the relay serving 0, 1 and 10 ``/ws`` frontends that read everything, as ratios to no relay;
* the page's time from a line reaching the relay to its text being on screen (headless Chromium,
  a MutationObserver in the page), p50 and p95;
* memory per frontend: the process's RSS with 100 idle ``/ws`` frontends, less with none, / 100;
* the scrub's CPU per streamed delta, line by line and across the stream (``--scrub-only``: that alone).

    .venv/bin/pip install -q -e '.[test]' && .venv/bin/python bench/bench_relay.py [--turns 30]

Nothing here is a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from claude_sdkurl import ClaudeAgentOptions, ClaudeClient, relay  # noqa: E402
from claude_sdkurl.testing import STDIO_CLI_VERSION, MockMessagesAPI, Reply, install_cli, offline_env  # noqa: E402


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


CPU: dict[Any, float] = {}  # this process's CPU seconds per turn, by setting


def turns(options: ClaudeAgentOptions, count: int, setting: Any = None) -> list[float]:
    """``count`` turns of a live client (after one to warm up): their times; this process's CPU
    per turn is added to ``CPU[setting]``."""
    took = []
    with ClaudeClient(options) as client:
        client.query("warm up")
        list(client.receive_response())
        cpu = time.process_time()
        for i in range(count):
            start = time.perf_counter()
            client.query(f"turn {i}")
            list(client.receive_response())
            took.append(time.perf_counter() - start)
        CPU[setting] = CPU.get(setting, 0.0) + (time.process_time() - cpu) / count
    return took


WATCHERS = """
import sys, threading
from websockets.sync.client import connect
url, n = sys.argv[1], int(sys.argv[2])
sockets = [connect(url, max_size=None) for _ in range(n)]
def drain(ws):
    try:
        while True:
            ws.recv()
    except Exception:
        pass
for ws in sockets:
    threading.Thread(target=drain, args=(ws,), daemon=True).start()
print("ready", flush=True)
sys.stdin.read()
"""


def watchers(r: relay.Relay, n: int) -> subprocess.Popen[str]:
    """``n`` frontends that read everything, in a process of their own (as a browser would be)."""
    process = subprocess.Popen([sys.executable, "-c", WATCHERS, r.ws_url, str(n)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + 10
    while len(r.hub.frontends) < n and time.monotonic() < deadline:
        time.sleep(0.01)
    return process


def page_latency(r: relay.Relay, samples: int) -> list[float]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    from claude_sdkurl._engine.transport import TransportCallbacks
    from claude_sdkurl._engine.transport import taps

    from tests.test_relay import StandIn, plan

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        inner = StandIn()
        outer = taps.wrapped(inner, plan())
        outer.start(TransportCallbacks(on_data=lambda data: None, on_exit=lambda code, err: None))
        inner.emit({"type": "system", "subtype": "init", "session_id": "bench", "model": "m"})
        driver.get(r.url)
        time.sleep(2)
        driver.execute_script("""
            window.lags = [];
            new MutationObserver(records => { for (const r of records) for (const n of r.addedNodes) {
                const m = (n.textContent || "").match(/ts=(\\d+\\.\\d+)/); if (m) window.lags.push(performance.timeOrigin + performance.now() - Number(m[1]));
            } }).observe(document.getElementById("transcript"), {childList: true, subtree: true});""")
        for _ in range(samples):
            stamp = time.time() * 1000
            inner.emit({"type": "assistant", "session_id": "bench", "message": {"content": [{"type": "text", "text": f"ts={stamp:.3f}"}]}})
            time.sleep(0.05)
        time.sleep(1)
        return [float(x) for x in driver.execute_script("return window.lags;")]
    finally:
        driver.quit()


def scrub_cost(deltas: int = 20_000) -> None:
    """The stream scrub's CPU per streamed delta (no CLI): each line of a 5-character-delta text
    stream through the session's StreamScrub, against the per-line scrub alone and against
    nothing, with two secret values of the session's environment to look for."""
    from claude_sdkurl.relay._hub import scrub
    from claude_sdkurl.relay._stream_scrub import StreamScrub

    literals = {"correct-horse-battery", "hunter22-and-more"}
    text = ("word " * 4 + "sk-ant-api03-Zq7xW2vB9nM4kL8pR1tY6uI3oE5aS0dF " + "word " * 40) * (deltas * 5 // 250 + 1)
    lines = [json.dumps({"type": "stream_event", "session_id": "s", "parent_tool_use_id": None, "event": {
        "type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text[i:i + 5]}}})
        for i in range(0, deltas * 5, 5)]  # fmt: skip

    def per_line(work: Any) -> float:
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for line in lines:
                work(line)
            best = min(best, (time.perf_counter() - start) / len(lines))
        return best * 1e6

    stream = StreamScrub(lambda t: scrub(t, literals), literals)
    nothing = per_line(lambda line: None)
    line_scrub = per_line(lambda line: scrub(line, literals))
    both = per_line(lambda line: [scrub(out, literals) for out in stream.lines(line)])
    print(f"  scrub per streamed delta (best of 5, {len(lines)} deltas, a key every 250 characters): per line "
          f"{line_scrub - nothing:.1f} us, across the stream and per line {both - nothing:.1f} us")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=15, help="turns per session")
    parser.add_argument("--rounds", type=int, default=3, help="sessions per setting, the settings taking turns")
    parser.add_argument("--scrub-only", action="store_true", help="only the scrub's CPU per delta (no CLI)")
    args = parser.parse_args()
    if args.scrub_only:
        scrub_cost()
        return
    cli = install_cli(STDIO_CLI_VERSION)
    reply = Reply([{"type": "text", "text": "word " * 200}], chunk=5)
    with tempfile.TemporaryDirectory() as home, MockMessagesAPI(lambda request: reply) as api:
        options = ClaudeAgentOptions(cli_path=str(cli), env=offline_env(api.url, home), cwd=home, include_partial_messages=True)
        print(f"claude_sdkurl relay, CLI {STDIO_CLI_VERSION} over stdio, {args.rounds} x {args.turns} turns of 200 streamed "
              "deltas per setting\n")
        configs: list[int | None] = [None, 0, 1, 10]
        took: dict[int | None, list[float]] = {c: [] for c in configs}
        for _ in range(args.rounds):  # the settings take turns, so drift of the machine falls on all
            for config in configs:
                if config is None:
                    took[config] += turns(options, args.turns, config)
                    continue
                with relay.serve(port=0, announce=False) as r:
                    process = watchers(r, config)
                    try:
                        took[config] += turns(options, args.turns, config)
                    finally:
                        process.kill()
                        process.wait()
        base, watched = statistics.median(took[None]), statistics.median(took[0])
        print("  (wall time per turn, median; this process's CPU per turn, mean; the frontends run in another "
              "process on the same machine)")
        print(f"  no relay             {base * 1000:7.1f} ms   CPU {CPU[None] / args.rounds * 1000:5.1f} ms")
        for config in configs[1:]:
            median = statistics.median(took[config])
            print(f"  relay, {config:2d} frontends  {median * 1000:7.1f} ms   CPU {CPU[config] / args.rounds * 1000:5.1f} ms   "
                  f"x{median / base:.3f} of no relay, x{median / watched:.3f} of the relay with none")
        with relay.serve(port=0, announce=False) as r:
            lags = sorted(page_latency(r, 60))
            if lags:
                print(f"\n  page: line in -> text on screen  p50 {statistics.median(lags):.1f} ms   "
                      f"p95 {lags[int(0.95 * (len(lags) - 1))]:.1f} ms   ({len(lags)} lines)")
            before = rss_kb()
            process = watchers(r, 100)
            time.sleep(2)
            after = rss_kb()
            print(f"  memory: {(after - before) / 100:.0f} KiB per idle /ws frontend (this process's RSS, 100 frontends "
                  "in another process)")
            process.kill()
            process.wait()
    scrub_cost()
    print(json.dumps({"base_ms": round(base * 1000, 1)}))


if __name__ == "__main__":
    main()
