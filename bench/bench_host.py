"""The session host (``python -m claude_sdkurl.host``), measured on the real CLI 2.1.330 and the
mock model, each ratio against a turn on a live in-process conversation in the same run:

* the hop: a turn sent through the host from this process, beside the same turn in-process;
* any worker: one conversation's messages sent in turn from 4 worker processes attached to the
  host, beside the same 4 workers without a host (each message a hand-over: stop, wake);
* a deploy: every worker restarted, the first message of each conversation (the host's CLIs
  stayed live), beside the same without a host (each a wake from the transcript);
* a client on the host: turns (200 streamed deltas each) of a live ``ClaudeClient`` whose CLI the
  host started (``host.spawner()``), beside the same client's CLI started in-process; and with
  the host's page (``--relay``) watched by 0 and 10 ``/ws`` frontends: what watching costs the
  turn, and this process's CPU per turn (the watching is the host's);
* any worker, the tail: ``--spread`` messages of one live conversation from 4 workers through the
  host, p50 and p99 against as many live in-process turns;
* a host restart: the host SIGKILLed and started again (its CLIs die with it), the first message
  of a conversation it held, against a wake in-process (``hibernate()``, then a message), each
  ``--restarts`` times (the new host takes its predecessor's leases over; before, each waited
  out the 30 s lease);
* with ``--webapp``: ``examples/webapp.py`` under gunicorn, 16 users x 3 messages, requests per
  second, 16 live CLIs for the machine in every setting: 4 workers attached to a host, 4 workers
  and 1 worker in-process (``bench_outlive.web_app``).

    .venv/bin/pip install -q -e '.[test]' && .venv/bin/python bench/bench_host.py [--rounds 12]

Nothing here is a test.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from claude_sdkurl import ClaudeAgentOptions, Conversations, ResultMessage, host  # noqa: E402
from claude_sdkurl.testing import STDIO_CLI_VERSION, MockMessagesAPI, Reply, install_cli, offline_env, text  # noqa: E402

WORKER = ROOT / "tests" / "conversation_worker.py"


def turn(chats: Conversations, key: str, prompt: str) -> float:
    t0 = time.perf_counter()
    [m for m in chats.send(key, prompt) if isinstance(m, ResultMessage)]
    return time.perf_counter() - t0


class Worker:
    def __init__(self, settings: dict[str, Any]) -> None:
        self.proc = subprocess.Popen([sys.executable, str(WORKER), json.dumps(settings)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=ROOT)  # fmt: skip
        assert json.loads(self.proc.stdout.readline()) == {"ready": True}  # type: ignore[union-attr]

    def send(self, key: str, prompt: str) -> float:
        t0 = time.perf_counter()
        self.proc.stdin.write(json.dumps([key, prompt]) + "\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]
        answer = json.loads(self.proc.stdout.readline())  # type: ignore[union-attr]
        assert "error" not in answer, answer
        return time.perf_counter() - t0

    def stop(self) -> None:
        self.proc.stdin.close()  # type: ignore[union-attr]
        self.proc.wait(60)


def p50(values: list[float]) -> float:
    return statistics.median(values) * 1000


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))] * 1000


def tail_of_four_workers(options: ClaudeAgentOptions, settings: dict[str, Any], home: Path, count: int) -> None:
    """4 workers on one live conversation through the host, against live in-process turns, the
    two taking turns in blocks so that drift of the machine falls on both."""
    sock = home / "tail" / "host.sock"
    host_proc, _ = start_host(sock)
    workers = [Worker({**settings, "host": str(sock)}) for _ in range(4)]
    live: list[float] = []
    spread: list[float] = []
    try:
        with Conversations(options, store=home / "tail.sqlite3") as chats:
            turn(chats, "tail-here", "hello")
            workers[0].send("tail-hosted", "hello")
            for block in range(0, count, 10):
                live += [turn(chats, "tail-here", f"again {i}") for i in range(block, min(count, block + 10))]
                spread += [workers[i % 4].send("tail-hosted", f"from worker {i % 4}, #{i}") for i in range(block, min(count, block + 10))]
    finally:
        for w in workers:
            w.stop()
        os.killpg(host_proc.pid, signal.SIGTERM)
        host_proc.wait(60)
    print(f"one live conversation from 4 workers through the host, {count} messages: p50 {p50(spread):.0f} ms "
          f"({p50(spread) / p50(live):.2f}x a live in-process turn's {p50(live):.0f} ms), p99 {p99(spread):.0f} ms "
          f"({p99(spread) / p99(live):.2f}x its p99 {p99(live):.0f} ms; {p99(spread) / p50(live):.2f}x its p50)")  # fmt: skip


def restart_against_wake(options: ClaudeAgentOptions, home: Path, restarts: int) -> None:
    """The first message after the host is SIGKILLed and started again, against a wake in-process
    (the two taking turns, so that drift of the machine falls on both)."""
    woke: list[float] = []
    after: list[float] = []
    sock = home / "restart" / "host.sock"
    host_proc, _ = start_host(sock)
    try:
        with Conversations(options, store=home / "wake.sqlite3") as chats:
            hosted = Conversations(options, host=sock)
            turn(chats, "wake", "hello")
            turn(hosted, "restart", "hello")
            for i in range(restarts):
                chats.hibernate("wake")
                woke.append(turn(chats, "wake", f"after hibernating {i}"))
                os.killpg(host_proc.pid, signal.SIGKILL)
                host_proc.wait(60)
                host_proc, _ = start_host(sock)  # (ready: it answers; not timed)
                after.append(turn(hosted, "restart", f"after restart {i}"))
    finally:
        os.killpg(host_proc.pid, signal.SIGTERM)
        host_proc.wait(60)
    print(f"after a host restart (SIGKILL, started again), the first message: p50 {p50(after):.0f} ms, max {max(after) * 1000:.0f} ms "
          f"({p50(after) / p50(woke):.2f}x a wake in-process, p50 {p50(woke):.0f} ms; max {max(after) / max(woke):.2f}x its "
          f"{max(woke) * 1000:.0f} ms), "
          f"{restarts} restarts; the lease is 30 s")  # fmt: skip


def start_host(sock: Path, *flags: str) -> tuple[subprocess.Popen[str], str | None]:
    """A host process at ``sock``; with ``--relay``, its page's ``/ws`` address too."""
    import urllib.parse

    host = subprocess.Popen([sys.executable, "-m", "claude_sdkurl.host", "--socket", str(sock), *flags], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE if flags else subprocess.DEVNULL, text=True, start_new_session=True)  # fmt: skip
    assert "session host at" in host.stdout.readline()  # type: ignore[union-attr]
    if not flags:
        return host, None
    url = urllib.parse.urlsplit(host.stderr.readline().split("watch at ", 1)[1].strip())  # type: ignore[union-attr]
    return host, f"ws://{url.netloc}/ws?token={urllib.parse.parse_qs(url.query)['token'][0]}"


@contextlib.contextmanager
def watching(script: str, ws: str, count: int) -> Iterator[None]:
    """``count`` frontends of the host's page (``script``: a process of their own), while inside."""
    if not count:
        yield
        return
    frontends = subprocess.Popen([sys.executable, "-W", "ignore", "-c", script, ws, str(count)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert frontends.stdout is not None and frontends.stdout.readline().strip() == "ready"
        yield
    finally:
        frontends.kill()
        frontends.wait()


def stop_hosts(*hosts: subprocess.Popen[str]) -> None:
    for process in hosts:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(60)


def clients_on_the_host(cli: Path, home: Path, api_url: str, rounds: int, count: int) -> None:
    from bench_relay import CPU, WATCHERS, turns

    reply_options = ClaudeAgentOptions(cli_path=str(cli), env=offline_env(api_url, home), cwd=str(home / "work"),
                                       include_partial_messages=True)  # fmt: skip
    plain, watched = home / "plain" / "host.sock", home / "watched" / "host.sock"
    host_plain, _ = start_host(plain)
    host_watched, ws = start_host(watched, "--relay", "127.0.0.1:0")
    assert ws is not None
    settings = {"in-process": reply_options,
                "on the host": dataclasses.replace(reply_options, spawn_claude_code_process=host.spawner(plain)),
                "on the host, page with 0 frontends": dataclasses.replace(reply_options, spawn_claude_code_process=host.spawner(watched)),
                "on the host, page with 10 frontends": dataclasses.replace(reply_options, spawn_claude_code_process=host.spawner(watched))}  # fmt: skip
    took: dict[str, list[float]] = {name: [] for name in settings}
    try:
        for _ in range(rounds):  # the settings take turns, so drift of the machine falls on all
            for name, options in settings.items():
                with watching(WATCHERS, ws, 10 if "10 frontends" in name else 0):
                    took[name] += turns(options, count, name)
    finally:
        stop_hosts(host_plain, host_watched)
    base = p50(took["in-process"])
    print(f"a live ClaudeClient, {rounds} x {count} turns of 200 streamed deltas per setting (p50 wall; this process's CPU per turn):")
    for name in settings:
        print(f"  {name:36s} {p50(took[name]):7.1f} ms  ({p50(took[name]) / base:.3f}x in-process)   CPU {CPU[name] / rounds * 1000:5.1f} ms")
    watched0 = p50(took["on the host, page with 0 frontends"])
    print(f"  watching with 10 frontends adds {(p50(took['on the host, page with 10 frontends']) / watched0 - 1) * 100:+.1f} % "
          f"to a turn against the page with none, {(p50(took['on the host, page with 10 frontends']) / base - 1) * 100:+.1f} % "
          "against in-process")  # fmt: skip


RAW_WATCHERS = """
import base64, os, selectors, socket, sys, urllib.parse
url, n = urllib.parse.urlsplit(sys.argv[1]), int(sys.argv[2])
chosen = selectors.DefaultSelector()
for _ in range(n):
    s = socket.create_connection((url.hostname, url.port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET {url.path}?{url.query} HTTP/1.1\\r\\nHost: {url.netloc}\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n"
               f"Sec-WebSocket-Key: {key}\\r\\nSec-WebSocket-Version: 13\\r\\n\\r\\n").encode())
    head = b""
    while b"\\r\\n\\r\\n" not in head:
        head += s.recv(4096)
    assert head.startswith(b"HTTP/1.1 101"), head[:200]
    chosen.register(s, selectors.EVENT_READ)
print("ready", flush=True)
while True:
    for key, _ in chosen.select():
        if not key.fileobj.recv(1 << 16):
            chosen.unregister(key.fileobj)
"""  # frontends that read everything and parse nothing (a browser elsewhere costs this machine nothing)


def host_cpu(pid: int) -> float:
    """The CPU seconds of process ``pid`` (every thread; not its children: the CLIs)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def page_on_the_host(cli: Path, home: Path, api_url: str, rounds: int, count: int) -> None:
    """Turns of a conversation on the host (``Conversations(host=...)``, 200 streamed deltas a
    turn) on a host without a page, on one serving its page (``--relay``) with no frontend, and
    with 10 ``/ws`` frontends reading everything: each setting's p50 wall per turn and the host
    process's CPU per turn (its own threads: the CLI's is apart), the settings taking turns."""
    options = ClaudeAgentOptions(cli_path=str(cli), env=offline_env(api_url, home), cwd=str(home / "work"), include_partial_messages=True)
    plain_sock, watched_sock = home / "pplain" / "host.sock", home / "pwatched" / "host.sock"
    plain, _ = start_host(plain_sock)
    watched, ws = start_host(watched_sock, "--relay", "127.0.0.1:0")
    assert ws is not None
    settings = {"no page": (plain, plain_sock, 0), "page, no frontend": (watched, watched_sock, 0),
                "page, 10 frontends": (watched, watched_sock, 10)}  # fmt: skip
    took: dict[str, list[float]] = {name: [] for name in settings}
    cpu: dict[str, float] = dict.fromkeys(settings, 0.0)
    load = os.getloadavg()[0]
    try:
        chats = {name: Conversations(options, host=sock) for name, (_, sock, _) in settings.items()}
        for name, chat in chats.items():
            turn(chat, name, "warm up")
        for _ in range(rounds):
            for name, (process, _, frontends) in settings.items():
                with watching(RAW_WATCHERS, ws, frontends):
                    time.sleep(0.5 if frontends else 0)  # (each frontend's first page of the session's history read)
                    before = host_cpu(process.pid)
                    took[name] += [turn(chats[name], name, f"turn {i}") for i in range(count)]
                    cpu[name] += host_cpu(process.pid) - before
    finally:
        stop_hosts(plain, watched)
    print(f"a conversation on the host, {rounds} x {count} turns of 200 streamed deltas per setting (load average "
          f"{load:.1f} before, {os.getloadavg()[0]:.1f} after):")  # fmt: skip
    none = p50(took["page, no frontend"]), cpu["page, no frontend"] / (rounds * count) * 1000
    for name in settings:
        per_turn = cpu[name] / (rounds * count) * 1000
        print(f"  {name:20s} p50 {p50(took[name]):6.1f} ms ({(p50(took[name]) / none[0] - 1) * 100:+5.1f} % of the page with none)   "
              f"host CPU {per_turn:5.1f} ms a turn ({(per_turn / none[1] - 1) * 100:+5.1f} %)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--webapp", action="store_true", help="also examples/webapp.py under gunicorn (needs flask, gunicorn)")
    parser.add_argument("--clients-only", action="store_true", help="only the ClaudeClient on the host")
    parser.add_argument("--spread", type=int, default=100, help="messages of the 4-worker tail (p99)")
    parser.add_argument("--restarts", type=int, default=6, help="host restarts against as many wakes")
    parser.add_argument("--bounds-only", action="store_true", help="only the 4-worker tail and the restart")
    parser.add_argument("--page-only", action="store_true", help="only a conversation on the host with its page watched")
    args = parser.parse_args()
    cli = install_cli(STDIO_CLI_VERSION)
    if args.page_only:
        reply = Reply([{"type": "text", "text": "word " * 200}], chunk=5)
        with MockMessagesAPI(lambda request: reply) as api, tempfile.TemporaryDirectory() as d:
            (Path(d) / "work").mkdir()
            page_on_the_host(cli, Path(d), api.url, rounds=3, count=max(5, args.rounds))
        return
    with MockMessagesAPI(lambda r: text(f"echo: {r.last_user_text()}")) as api, tempfile.TemporaryDirectory() as d:
        home = Path(d)
        (home / "work").mkdir()
        options = ClaudeAgentOptions(cli_path=str(cli), env=offline_env(api.url, home), cwd=str(home / "work"))
        settings = {"cli": str(cli), "env": options.env, "cwd": str(home / "work"), "allowed_tools": []}
        tail_of_four_workers(options, settings, home, args.spread)
        restart_against_wake(options, home, args.restarts)
    if args.bounds_only:
        return
    if True:  # (first: the rest take minutes)
        reply = Reply([{"type": "text", "text": "word " * 200}], chunk=5)
        with MockMessagesAPI(lambda request: reply) as api, tempfile.TemporaryDirectory() as d:
            (Path(d) / "work").mkdir()
            clients_on_the_host(cli, Path(d), api.url, rounds=3, count=max(5, args.rounds))
        if args.clients_only:
            return
    with MockMessagesAPI(lambda r: text(f"echo: {r.last_user_text()}")) as api, tempfile.TemporaryDirectory() as d:
        home = Path(d)
        (home / "work").mkdir()
        options = ClaudeAgentOptions(cli_path=str(cli), env=offline_env(api.url, home), cwd=str(home / "work"))
        with Conversations(options, store=home / "inproc.sqlite3") as chats:
            turn(chats, "base", "hello")
            live = [turn(chats, "base", f"again {i}") for i in range(args.rounds)]
        print(f"a live in-process turn: p50 {p50(live):.0f} ms")

        sock = home / "host" / "host.sock"
        host = subprocess.Popen([sys.executable, "-m", "claude_sdkurl.host", "--socket", str(sock)], stdout=subprocess.PIPE,
                                text=True, start_new_session=True)  # fmt: skip
        try:
            assert "session host at" in host.stdout.readline()  # type: ignore[union-attr]
            hosted = Conversations(options, host=sock)
            turn(hosted, "hop", "hello")
            hop = [turn(hosted, "hop", f"again {i}") for i in range(args.rounds)]
            print(f"the hop: a turn through the host p50 {p50(hop):.0f} ms ({p50(hop) / p50(live):.2f}x in-process)")

            settings = {"cli": str(cli), "env": options.env, "cwd": str(home / "work"), "allowed_tools": []}
            for label, extra in (("with a host", {"host": str(sock)}), ("without a host", {"store": str(home / "workers.sqlite3")})):
                workers = [Worker({**settings, **extra}) for _ in range(4)]
                workers[0].send("shared", "hello")
                spread = [workers[i % 4].send("shared", f"from worker {i % 4}, #{i}") for i in range(1, args.rounds + 1)]
                for u in range(4):
                    workers[u].send(f"user{u}", "I am here")
                for w in workers:
                    w.stop()
                again = [Worker({**settings, **extra}) for _ in range(4)]  # a deploy: every worker new
                after = [again[u].send(f"user{u}", "after the deploy") for u in range(4)]
                for w in again:
                    w.stop()
                print(f"{label}: one conversation from 4 workers p50 {p50(spread):.0f} ms ({p50(spread) / p50(live):.2f}x a live turn); "
                      f"after every worker restarted, first message p50 {p50(after):.0f} ms ({p50(after) / p50(live):.2f}x)")  # fmt: skip
        finally:
            os.killpg(host.pid, signal.SIGTERM)
            host.wait(60)
        if args.webapp:
            from bench_outlive import web_app

            web_app(cli, api, budget=16)  # (the same live CLIs for the machine in every setting)


if __name__ == "__main__":
    main()
