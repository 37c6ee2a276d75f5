"""Conversations that outlive their process, measured on the real CLI 2.1.330 and the mock model:

* the lease: how long a message waits for a conversation another holder (another ``Conversations``
  on the same SQLite store, as another worker process would be) keeps live and idle, p50 and p99,
  beside a turn on a live conversation (no hand-over);
* a wake after a restart: the first message of each conversation in a new ``Conversations`` (a
  CLI started with ``resume``) beside a turn on a live one;
* the web app (``examples/webapp.py``) under gunicorn: 4 worker processes x 4 threads against 1
  worker x 16 threads, 16 users x 3 messages, requests per second.

    .venv/bin/pip install -q -e '.[test]' && .venv/bin/python bench/bench_outlive.py [--rounds 10]

Nothing here is a test.
"""

from __future__ import annotations

import argparse
import http.client
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from claude_sdkurl import ClaudeAgentOptions, Conversations, ResultMessage  # noqa: E402
from claude_sdkurl.testing import STDIO_CLI_VERSION, MockMessagesAPI, install_cli, offline_env, text  # noqa: E402


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def turn(chats: Conversations, key: str, prompt: str) -> float:
    t0 = time.perf_counter()
    [m for m in chats.send(key, prompt) if isinstance(m, ResultMessage)]
    return time.perf_counter() - t0


def leases(options: ClaudeAgentOptions, store: Path, rounds: int) -> None:
    a, b = Conversations(options, store=store), Conversations(options, store=store)
    waits: list[float] = []

    def timed(chats: Conversations) -> None:
        original = chats._lease

        def lease(conversation, wait):  # type: ignore[no-untyped-def]
            t0 = time.perf_counter()
            original(conversation, wait)
            waits.append(time.perf_counter() - t0)

        chats._lease = lease  # type: ignore[method-assign]

    try:
        turn(a, "alice", "hello")
        live = [turn(a, "alice", f"again {i}") for i in range(rounds)]
        timed(a)
        timed(b)
        handed = [turn(b if i % 2 == 0 else a, "alice", f"over {i}") for i in range(rounds)]
    finally:
        a.close()
        b.close()
    print(f"lease wait for a conversation idle in another holder: p50 {statistics.median(waits) * 1000:.0f} ms, "
          f"p99 {pct(waits, 0.99) * 1000:.0f} ms ({len(waits)} hand-overs)")  # fmt: skip
    print(f"turn on a live conversation: p50 {statistics.median(live) * 1000:.0f} ms; "
          f"turn handed over (wait + wake): p50 {statistics.median(handed) * 1000:.0f} ms, p99 {pct(handed, 0.99) * 1000:.0f} ms")


def restart(options: ClaudeAgentOptions, store: Path, users: int) -> None:
    with Conversations(options, store=store, max_live=users) as first:
        for u in range(users):
            turn(first, f"user{u}", "I am here")
        live = [turn(first, f"user{u}", "still here") for u in range(users)]
    with Conversations(options, store=store, max_live=users) as second:
        woken = [turn(second, f"user{u}", "after the restart") for u in range(users)]
        assert second.stats["woken"] == users
    print(f"after a restart, the first message of each of {users} conversations (a wake): p50 "
          f"{statistics.median(woken) * 1000:.0f} ms, p90 {pct(woken, 0.9) * 1000:.0f} ms; a live turn p50 "
          f"{statistics.median(live) * 1000:.0f} ms")  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def webapp(cli: Path, api: MockMessagesAPI, workers: int, threads: int, users: int, messages: int, host: bool = False) -> float:
    """Requests a second; ``host``: the workers attach to a session host (``SESSION_HOST``)."""
    home = Path(tempfile.mkdtemp(prefix="bench-webapp-"))
    (home / "ws").mkdir()
    port = free_port()
    env = {**os.environ, **offline_env(api.url, home), "CLAUDE_SDKURL_LIVE": "1", "CLAUDE_SDKURL_CLI": str(cli),
           "MAX_LIVE": "4", "SPARES": "0", "WORKSPACES": str(home / "ws")}  # fmt: skip
    hosting = None
    if host:
        sock = home / "host" / "host.sock"
        hosting = subprocess.Popen([sys.executable, "-m", "claude_sdkurl.host", "--socket", str(sock), "--max-live", str(users)],
                                   env=env, stdout=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
        assert hosting.stdout is not None and "session host at" in hosting.stdout.readline()
        env["SESSION_HOST"] = str(sock)
    server = subprocess.Popen([sys.executable, "-m", "gunicorn", "-k", "gthread", "--threads", str(threads), "-w", str(workers),
                               "-b", f"127.0.0.1:{port}", "--chdir", str(ROOT / "examples"), "webapp:app"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/stats")
                if conn.getresponse().status == 200:
                    break
            except OSError:
                time.sleep(0.2)
        time.sleep(2.0)  # every worker up

        def chat(user: str) -> None:
            for n in range(messages):
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
                conn.request("GET", f"/chat/{user}?prompt={urllib.parse.quote(f'{user} question {n}')}")
                body = conn.getresponse().read()
                assert b"event: done" in body, body[-300:]

        t0 = time.perf_counter()
        pool = [threading.Thread(target=chat, args=(f"user-{u}",)) for u in range(users)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        return users * messages / (time.perf_counter() - t0)
    finally:
        os.killpg(server.pid, 15)
        server.wait(60)
        if hosting is not None:
            os.killpg(hosting.pid, 15)
            hosting.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    cli = install_cli(STDIO_CLI_VERSION)
    with MockMessagesAPI(lambda r: text(f"echo: {r.last_user_text()}")) as api, tempfile.TemporaryDirectory() as d:
        home = Path(d)
        (home / "work").mkdir()
        options = ClaudeAgentOptions(cli_path=str(cli), env=offline_env(api.url, home), cwd=str(home / "work"))
        leases(options, home / "leases.sqlite3", args.rounds)
        restart(options, home / "restart.sqlite3", args.rounds)
        four = webapp(cli, api, workers=4, threads=4, users=16, messages=3)
        one = webapp(cli, api, workers=1, threads=16, users=16, messages=3)
        print(f"web app, 16 users x 3 messages: 4 workers x 4 threads {four:.2f} requests/s, 1 worker x 16 threads "
              f"{one:.2f} requests/s ({four / one:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
