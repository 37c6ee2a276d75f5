"""Two machines behind nginx (``examples/deploy/nginx.conf``), measured on the real CLI 2.1.330
and the mock model: each machine a session host (a home of its own, ``--store`` and
``--session-store`` on one PostgreSQL) and ``examples/webapp.py`` under gunicorn (2 workers)
attached to it; Debian's nginx in front.

* a message through nginx with the recipe's consistent ``hash`` on the conversation's key,
  beside the same message sent straight to the machine that holds the conversation (a live turn
  on that machine), the two taking turns, user after user: p50 and p99, and their ratio;
* the same through nginx without the ``hash`` (round robin: each message on the other machine
  than the last, a hand-over each), on a user of its own.

    .venv/bin/pip install -q -e '.[test]' && .venv/bin/python bench/bench_machines.py [--rounds 8]

Starts PostgreSQL and nginx as the tests do (``tests/servers.py``; installed from Debian's
packages when missing, as root). Nothing here is a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from claude_sdkurl.testing import STDIO_CLI_VERSION, MockMessagesAPI, install_cli, offline_env  # noqa: E402

from tests.servers import NginxServer, PostgresServer, free_port  # noqa: E402
from tests.test_realcli_service_recipes import DEPLOY, chat, echo, machine_host, nginx_site, stop_machines  # noqa: E402
from tests.test_realcli_webapp import Server  # noqa: E402


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] * 1000


def timed(port: int, user: str, prompt: str) -> tuple[float, int]:
    """Seconds for one message to the web app at ``port`` (to its last event) and the worker's pid."""
    t0 = time.perf_counter()
    _, done = chat(port, user, prompt)
    took = time.perf_counter() - t0
    assert done is not None and not done["error"], done
    return took, int(done["worker"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8, help="messages per user and setting")
    parser.add_argument("--users", type=int, default=4)
    args = parser.parse_args()
    cli = install_cli(STDIO_CLI_VERSION)
    recipe = (DEPLOY / "nginx.conf").read_text()
    assert recipe.count("    hash $conversation consistent;\n") == 1
    round_robin = recipe.replace("    hash $conversation consistent;\n", "")
    pg = PostgresServer().start()
    base = Path(tempfile.mkdtemp(prefix="bench-mach-"))
    hosts: dict[str, subprocess.Popen[str]] = {}
    servers: dict[str, Server] = {}
    balancers: list[NginxServer] = []
    try:
        with MockMessagesAPI(echo) as api:
            tag = f"{os.getpid()}"
            shared = ("--store", f"{pg.url}#bconv_{tag}", "--session-store", f"{pg.url}#bsess_{tag}", "--lease-ttl", "10")
            (base / "ws").mkdir()
            for name in ("a", "b"):
                home = base / f"home-{name}"
                home.mkdir()
                hosts[name] = machine_host(name, base, home, {**offline_env(api.url, home), "CLAUDE_SDKURL_CLI": str(cli)}, shared)
                servers[name] = Server(cli, api, home, workers=2, threads=8, spares=0,
                                       extra_env={"SESSION_HOST": str(base / name / "host.sock"), "WORKSPACES": str(base / "ws")})  # fmt: skip
            upstreams = {f"machine-{n}": s.port for n, s in servers.items()}
            sticky_port, rr_port = free_port(), free_port()
            balancers.append(NginxServer(nginx_site(recipe, sticky_port, upstreams)).start(sticky_port))
            balancers.append(NginxServer(nginx_site(round_robin, rr_port, upstreams)).start(rr_port))
            workers = {n: set(s.worker_pids()) for n, s in servers.items()}

            def machine(pid: int) -> str:
                return next(n for n, pids in workers.items() if pid in pids)

            load = os.getloadavg()[0]
            users = [f"user-{i}" for i in range(args.users)]
            owner = {user: machine(timed(sticky_port, user, f"{user} question 0")[1]) for user in users}
            direct: list[float] = []
            through: list[float] = []
            n = 1
            for r in range(args.rounds):  # the two settings take turns, user after user, each first every other round
                for user in users:
                    for setting in ("direct", "nginx") if r % 2 == 0 else ("nginx", "direct"):
                        took, pid = timed(servers[owner[user]].port if setting == "direct" else sticky_port, user, f"{user} question {n}")
                        assert machine(pid) == owner[user], f"{setting}: the conversation is on the other machine"
                        (direct if setting == "direct" else through).append(took)
                        n += 1
            handed: list[float] = []
            movers = ["mover"]  # (one at a time: round robin then sends each of its messages to the other machine)
            for user in movers:
                timed(rr_port, user, f"{user} question 0")
            last = None
            for i in range(1, 2 * args.rounds + 1):
                for user in movers:
                    took, pid = timed(rr_port, user, f"{user} question {i}")
                    assert machine(pid) != last, "round robin sent two messages in a row to one machine"
                    last = machine(pid)
                    handed.append(took)
            after = os.getloadavg()[0]
            live = statistics.median(direct)
            print(f"two machines behind nginx, {len(users)} users x {args.rounds} messages a setting (load average {load:.1f} before, "
                  f"{after:.1f} after; {', '.join(f'{u}: {m}' for u, m in owner.items())}):")  # fmt: skip
            print(f"  straight to the machine that holds it (a live turn there)  p50 {live * 1000:6.0f} ms  p99 {pct(direct, 0.99):6.0f} ms")
            print(f"  through nginx, hash on the key (the recipe)                p50 {statistics.median(through) * 1000:6.0f} ms  "
                  f"p99 {pct(through, 0.99):6.0f} ms  ({statistics.median(through) / live:.2f}x a live turn)")
            print(f"  through nginx, round robin (no hash: a hand-over a message) p50 {statistics.median(handed) * 1000:6.0f} ms  "
                  f"p99 {pct(handed, 0.99):6.0f} ms  ({statistics.median(handed) / live:.2f}x a live turn)")
    finally:
        stop_machines(balancers, servers, hosts)
        pg.stop()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
