"""Conversations that outlive their process, measured on the real CLI 2.1.330 and the mock model:

* the lease: how long a message waits for a conversation another holder (another ``Conversations``
  on the same SQLite store, as another worker process would be) keeps live and idle, p50 and p99,
  beside a turn on a live conversation (no hand-over);
* a wake after a restart: the first message of each conversation in a new ``Conversations`` (a
  CLI started with ``resume``) beside a turn on a live one;
* the web app (``examples/webapp.py``) under gunicorn, 16 users x 3 messages, requests per
  second, every setting with the same budget of live CLIs for the whole machine (``--budget``,
  16 by default: each user's CLI can stay live): 1 worker x 16 threads in-process (``MAX_LIVE``
  the budget), 4 workers x 4 threads in-process (``MAX_LIVE`` a quarter of it each), and 4 workers
  attached to a session host (``--max-live`` the budget); the settings in one run, the machine's
  load average printed with the figures.

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


def webapp(cli: Path, api: MockMessagesAPI, workers: int, threads: int, users: int, messages: int, host: bool = False,
           budget: int = 16) -> float:  # fmt: skip
    """Requests a second; ``budget``: the live CLIs of the whole machine (the host's ``--max-live``;
    without a host, ``MAX_LIVE`` of each worker is its share); ``host``: the workers attach to a
    session host (``SESSION_HOST``)."""
    assert budget % workers == 0, (budget, workers)
    home = Path(tempfile.mkdtemp(prefix="bench-webapp-"))
    (home / "ws").mkdir()
    port = free_port()
    env = {**os.environ, **offline_env(api.url, home), "CLAUDE_SDKURL_LIVE": "1", "CLAUDE_SDKURL_CLI": str(cli),
           "MAX_LIVE": str(budget // workers), "SPARES": "0", "WORKSPACES": str(home / "ws")}  # fmt: skip
    hosting = None
    if host:
        sock = home / "host" / "host.sock"
        hosting = subprocess.Popen([sys.executable, "-m", "claude_sdkurl.host", "--socket", str(sock), "--max-live", str(budget)],
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
        import shutil

        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--budget", type=int, default=16, help="live CLIs for the whole machine in each web-app setting (default 16)")
    parser.add_argument("--webapp-only", action="store_true", help="only the web-app figure")
    args = parser.parse_args()
    cli = install_cli(STDIO_CLI_VERSION)
    with MockMessagesAPI(lambda r: text(f"echo: {r.last_user_text()}")) as api, tempfile.TemporaryDirectory() as d:
        home = Path(d)
        (home / "work").mkdir()
        options = ClaudeAgentOptions(cli_path=str(cli), env=offline_env(api.url, home), cwd=str(home / "work"))
        if not args.webapp_only:
            leases(options, home / "leases.sqlite3", args.rounds)
            restart(options, home / "restart.sqlite3", args.rounds)
        web_app(cli, api, args.budget)


def web_app(cli: Path, api: MockMessagesAPI, budget: int) -> None:
    """The web-app figure: the three settings, each with ``budget`` live CLIs for the machine."""
    settings = {"1 worker x 16 threads, in-process": (1, 16, False), "4 workers x 4 threads, in-process": (4, 4, False),
                "4 workers x 4 threads, a session host": (4, 4, True)}  # fmt: skip
    load = os.getloadavg()
    rates = {name: webapp(cli, api, workers=w, threads=t, users=16, messages=3, host=h, budget=budget)
             for name, (w, t, h) in settings.items()}  # fmt: skip
    base = rates["1 worker x 16 threads, in-process"]
    print(f"web app, 16 users x 3 messages, {budget} live CLIs for the machine in each setting "
          f"(load average {load[0]:.1f} before, {os.getloadavg()[0]:.1f} after):")  # fmt: skip
    for name, rate in rates.items():
        print(f"  {name:40s} {rate:5.2f} requests/s ({rate / base:.2f}x one worker)")


if __name__ == "__main__":
    main()
