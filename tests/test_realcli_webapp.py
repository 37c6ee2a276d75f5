"""``examples/webapp.py`` (Flask) and ``examples/django_app.py`` (Django) served by a real WSGI
server, gunicorn with threads and several worker processes, on the real CLI 2.1.330 and the mock
model: many users at once over few CLIs, each answer streamed as server-sent events, each user's
conversation whole whichever worker serves it and across a restart; bad user ids refused before
anything starts; a browser that goes away mid-answer; the server stopped with nothing left behind."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from claude_sdkurl.testing import MockMessagesAPI, Reply, offline_env, text
from claude_sdkurl.testing.mock_api import RecordedRequest

from .servers import free_port
from .test_notebook_magic import clis_with

pytestmark = pytest.mark.realcli

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MAX_LIVE, SPARES = 3, 2


def answer(request: RecordedRequest) -> Reply:
    said = request.last_user_text()
    if said.startswith("slow"):
        return Reply([{"type": "text", "text": "word " * 400}], chunk=10, delay=0.05)
    return text(f"echo: {said} " + "and more " * 10, chunk=12, delay=0.01)


class Server:
    def __init__(self, cli: Path, api: MockMessagesAPI, home: Path, workers: int = 1, threads: int = 24, spares: int = SPARES,
                 app: str = "webapp:app", extra_env: dict[str, str] | None = None) -> None:  # fmt: skip
        self.port = free_port()
        self.home = home
        env = {**os.environ, **offline_env(api.url, home), "CLAUDE_SDKURL_LIVE": "1", "CLAUDE_SDKURL_CLI": str(cli),
               "MAX_LIVE": str(MAX_LIVE), "SPARES": str(spares), "WORKSPACES": str(home / "ws"), **(extra_env or {})}  # fmt: skip
        (home / "ws").mkdir(exist_ok=True)
        self.log = open(home / "gunicorn.log", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "-k", "gthread", "--threads", str(threads), "-w", str(workers),
                                      "-b", f"127.0.0.1:{self.port}", "--timeout", "300", "--graceful-timeout", "10",
                                      "--chdir", str(EXAMPLES), app],
                                     env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if self.get("/stats")[0] == 200 and len(self.worker_pids()) == workers:
                    return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise AssertionError(f"gunicorn did not serve: {(home / 'gunicorn.log').read_text()[-3000:]}")

    def get(self, path: str) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def chat(self, user: str, prompt: str, leave_after: int | None = None) -> tuple[str, list[str], dict | None]:
        """The streamed text, each event's kind, and the ``done`` event's data."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        conn.request("GET", f"/chat/{urllib.parse.quote(user, safe='')}?prompt={urllib.parse.quote(prompt)}")
        response = conn.getresponse()
        assert response.status == 200 and response.getheader("Content-Type", "").startswith("text/event-stream")
        said, kinds, done, kind = "", [], None, "message"
        try:
            while True:
                line = response.fp.readline().decode()
                if not line:
                    break
                line = line.rstrip("\n")
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    data = json.loads(line[6:])
                    kinds.append(kind)
                    if kind == "message":
                        said += data["text"]
                    elif kind == "done":
                        done = data
                        break
                    elif kind == "failed":
                        break
                    kind = "message"
                    if leave_after is not None and len(kinds) >= leave_after:
                        break
        finally:
            conn.close()
        return said, kinds, done

    def _processes(self) -> list[tuple[int, bytes, int, str]]:
        """This test's processes (its HOME): (pid, command line, parent, folder)."""
        found = []
        for pid in clis_with(self.home):
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read()
                parent = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
                folder = os.readlink(f"/proc/{pid}/cwd")
            except (OSError, ValueError):
                continue
            found.append((pid, cmd, parent, folder))
        return found

    def worker_pids(self) -> list[int]:
        """The gunicorn master's live children, found by their parent: with ``setproctitle``
        installed (mutmut brings it) gunicorn rewrites its workers' command line and environment,
        so they no longer show this test's HOME."""
        from .conftest import children_of

        return sorted(children_of(self.proc.pid))

    def worker_pid(self) -> int | None:
        pids = self.worker_pids()
        return pids[0] if pids else None

    def cli_folders(self) -> list[str]:
        """The folder of each of the server's live CLIs (a conversation's is its user's workspace)."""
        workers = set(self.worker_pids())
        return [folder for _, cmd, parent, folder in self._processes() if parent in workers and b"--output-format" in cmd]

    def clis(self) -> int:
        return len(self.cli_folders())

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.log.close()


@pytest.fixture
def server(cli_paths: dict[str, Path], api: MockMessagesAPI, home: Path):  # type: ignore[no-untyped-def]
    api.responder = answer
    s = Server(cli_paths["stdio"], api, home)
    try:
        yield s
    finally:
        s.stop()


QUESTION = re.compile(r"user-\d+ question \d+")


def user_texts(request: RecordedRequest) -> list[str]:
    """The users' questions in a request's history, in order: each user message's, found in any
    of its text (the CLI may carry a message as a reminder around it: a prompt that reached it
    while it was busy is kept as a queued command and replayed in that form after a resume)."""
    out = []
    for message in request.messages():
        if message.get("role") == "user":
            content = message.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
            found = [q for b in blocks if b.get("type") == "text" for q in QUESTION.findall(b.get("text", ""))]
            out += list(dict.fromkeys(found))  # once per message, in order
    return out


Answers = dict[tuple[str, int], tuple[str, list[str], "dict | None"]]


def browse_all(server: Server, users: list[str], messages: range) -> tuple[Answers, float]:
    """Each user's browser on a thread of its own, sending its messages one after the other:
    every answer (the text, the events' kinds, the ``done`` data) by (user, n), and the seconds
    it all took. The first error a browser met is raised."""
    results: Answers = {}
    errors: list[BaseException] = []

    def browse(user: str) -> None:
        try:
            for n in messages:
                results[(user, n)] = server.chat(user, f"{user} question {n}")
        except BaseException as e:
            errors.append(e)

    started = time.monotonic()
    threads = [threading.Thread(target=browse, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join(900)
    assert not errors, errors[:3]
    return results, time.monotonic() - started


def sampling(probe: Callable[[], int]) -> tuple[dict[str, int], Callable[[], None]]:
    """Calls ``probe`` every 50 ms on a thread until the returned stop is called: the largest
    value it gave (``most``) and how many times it was called (``samples``)."""
    seen = {"most": 0, "samples": 0}
    done = threading.Event()

    def run() -> None:
        while not done.wait(0.05):
            seen["most"] = max(seen["most"], probe())
            seen["samples"] += 1

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def stop() -> None:
        done.set()
        thread.join(5)

    return seen, stop


@contextlib.contextmanager
def session_host(*flags: str, env: dict[str, str] | None = None) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A session host process on a socket in a folder of its own, and that socket; killed with its
    group (its CLIs) at the end, its folder removed."""
    base = Path(tempfile.mkdtemp(prefix="claude-sdkurl-webhost-"))
    sock = base / "host" / "host.sock"
    host = subprocess.Popen([sys.executable, "-m", "claude_sdkurl.host", "--socket", str(sock), *flags], env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip
    try:
        assert host.stdout is not None and "session host at" in host.stdout.readline()
        yield host, sock
    finally:
        os.killpg(host.pid, signal.SIGKILL)
        host.wait(60)
        if host.stdout is not None:
            host.stdout.close()
        shutil.rmtree(base, ignore_errors=True)


def test_four_worker_processes_share_every_conversation(cli_paths: dict[str, Path], api: MockMessagesAPI, home: Path) -> None:
    """gunicorn with 4 worker processes (prefork), as WSGI apps are deployed: 24 users, 3
    messages each, every one landing on whichever worker accepts it. Every answer is right,
    every model request carries exactly its conversation's history in order, and never are two
    CLIs on one conversation at once, in any worker (sampled from /proc every 50 ms). (50 users
    took 70 s of a loaded run, issue 58: 24 are still six a worker and 72 hand-overs' worth.)"""
    api.responder = answer
    server = Server(cli_paths["stdio"], api, home, workers=4, threads=8, spares=0)

    def most_in_one_folder() -> int:
        folders = [f for f in server.cli_folders() if "/ws/" in f]
        return max([0, *(folders.count(f) for f in folders)])

    seen, stop = sampling(most_in_one_folder)
    try:
        results, took = browse_all(server, [f"user-{i}" for i in range(24)], range(3))
    finally:
        stop()
        server.stop()
    assert len(results) == 72
    for (user, n), (said, _, done) in results.items():
        assert said == f"echo: {user} question {n} " + "and more " * 10, said
        assert done is not None and done["error"] is False
    for request in api.message_requests():  # each conversation whole, in order, and only its own
        said = user_texts(request)
        user = said[-1].split()[0]
        # (seen twice under a loaded whole run, never alone: a request with a later question only;
        # what the request was, for the next look: its model, tools, messages, system prompt's head)
        shape = (request.body.get("model"), "tools" in request.body, len(request.body.get("messages", [])),
                 str(request.body.get("system"))[-300:], json.dumps(request.messages())[:3000])  # fmt: skip
        assert said == [f"{user} question {n}" for n in range(int(said[-1].split()[-1]) + 1)], (said, shape)
    assert len(api.message_requests()) == 72  # no turn lost, none twice
    assert seen["most"] == 1 and seen["samples"] > 20, seen
    assert len({done["worker"] for _, _, done in results.values() if done}) >= 2  # the requests did spread over the workers
    print(f"72 answers for 24 users over 4 workers in {took:.1f} s ({72 / took:.1f} requests/s)")


def test_with_a_session_host_four_workers_reach_the_same_live_clis_and_a_restart_stops_none(
    cli_paths: dict[str, Path], api: MockMessagesAPI, home: Path
) -> None:
    """Issue 55: the same web app with ``SESSION_HOST``, gunicorn with 4 workers, a session host
    process owning the CLIs. 20 users x 3 messages; between the second and the third, one
    worker SIGKILLed and then the whole gunicorn restarted. Every answer right, every request
    with exactly its history, every CLI the host's (none in a worker), and the same CLIs before
    and after the restart: no conversation was woken again."""
    api.responder = answer
    server: Server | None = None
    with session_host("--max-live", "24", env={**offline_env(api.url, home), "CLAUDE_SDKURL_CLI": str(cli_paths["stdio"])}) as (host, sock):
        try:
            server = Server(cli_paths["stdio"], api, home, workers=4, threads=8, spares=0, extra_env={"SESSION_HOST": str(sock)})
            users = [f"user-{i}" for i in range(20)]
            first, _ = browse_all(server, users, range(2))

            def host_clis() -> set[int]:
                return {pid for pid, cmd, parent, _ in server._processes() if parent == host.pid and b"--output-format" in cmd}  # type: ignore[union-attr]

            before = host_clis()
            assert len(before) == 20 and server.clis() == 0  # every CLI the host's, none in a worker
            os.kill(server.worker_pid() or 0, signal.SIGKILL)
            server.stop()
            server = Server(cli_paths["stdio"], api, home, workers=4, threads=8, spares=0, extra_env={"SESSION_HOST": str(sock)})
            last, _ = browse_all(server, users, range(2, 3))
            assert host_clis() == before  # the deploy stopped none: the same 20 CLIs, live all along
        finally:
            if server is not None:
                server.stop()
    results = {**first, **last}
    assert len(results) == 60
    for (user, n), (said, _, done) in results.items():
        assert said == f"echo: {user} question {n} " + "and more " * 10, said
        assert done is not None and done["error"] is False
    for request in api.message_requests():
        said = user_texts(request)
        user = said[-1].split()[0]
        assert said == [f"{user} question {n}" for n in range(int(said[-1].split()[-1]) + 1)], said
    assert len(api.message_requests()) == 60
    assert len({done["worker"] for _, _, done in results.values() if done}) >= 2  # the requests did spread over the workers
    deadline = time.monotonic() + 60
    while clis_with(home) and time.monotonic() < deadline:  # the host killed: its CLIs go with it
        time.sleep(0.2)
    assert clis_with(home) == []


def test_many_users_at_once_over_few_clis(server: Server, api: MockMessagesAPI, home: Path) -> None:
    seen, stop = sampling(server.clis)
    try:
        results, took = browse_all(server, [f"user-{i}" for i in range(16)], range(2))
    finally:
        stop()
    most = {"clis": seen["most"]}
    for (user, n), (said, kinds, done) in results.items():
        assert said == f"echo: {user} question {n} " + "and more " * 10, said
        assert kinds.count("message") >= 3 and kinds[-1] == "done"  # streamed in pieces, then the end
        assert done is not None and done["error"] is False and done["cost"] > 0
    for request in api.message_requests():  # each conversation whole, and only its own
        said = user_texts(request)
        user = said[-1].split()[0]
        assert said == [f"{user} question {n}" for n in range(int(said[-1].split()[-1]) + 1)], said
    stats = json.loads(server.get("/stats")[1])
    assert most["clis"] <= MAX_LIVE + SPARES, most  # live conversations plus parked spares
    assert stats["spares"].get("claimed", 0) >= 1 and stats["conversations"]["started"] == 16, stats
    print(f"32 answers for 16 users in {took:.1f} s ({32 / took:.1f} requests/s), at most {most['clis']} CLIs, {stats}")


def test_bad_user_ids_and_prompts_are_refused_before_anything_starts(server: Server, home: Path) -> None:
    before = sorted(p.name for p in (home / "ws").iterdir())
    for path in ("/chat/..%2F..%2Fetc?prompt=hi", "/chat/a%20b?prompt=hi", "/chat/%2E%2E?prompt=hi", "/chat/ok", f"/chat/{'x' * 65}?prompt=hi"):
        status, _ = server.get(path)
        assert status in (400, 404), (path, status)
    assert sorted(p.name for p in (home / "ws").iterdir()) == before
    assert json.loads(server.get("/stats")[1])["conversations"] == {}


def test_a_browser_gone_mid_answer_leaves_the_conversation_whole(server: Server, api: MockMessagesAPI) -> None:
    said, kinds, done = server.chat("user-1", "user-1 question 0")
    assert done is not None
    partial, kinds, done = server.chat("user-1", "slow answer please", leave_after=2)
    assert done is None and len(kinds) == 2
    deadline = time.monotonic() + 20
    while json.loads(server.get("/stats")[1])["conversations"].get("hibernated", 0) < 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    said, kinds, done = server.chat("user-1", "user-1 question 1")
    assert done is not None and said.startswith("echo: user-1 question 1")
    assert user_texts(api.message_requests()[-1]) == ["user-1 question 0", "user-1 question 1"]


def test_stopping_the_server_leaves_no_cli(server: Server, home: Path) -> None:
    assert server.chat("user-1", "user-1 question 0")[2] is not None
    assert server.clis() >= 1
    server.stop()
    deadline = time.monotonic() + 10
    while clis_with(home) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert clis_with(home) == []


def test_a_django_app_with_four_workers_loses_no_conversation_to_a_restart(cli_paths: dict[str, Path], api: MockMessagesAPI,
                                                                           home: Path) -> None:  # fmt: skip
    """``examples/django_app.py`` (sync views, a streaming response) under gunicorn with 4 worker
    processes: 20 users send a message, the server is restarted (every worker and CLI gone), each
    sends another: every conversation is found, and the model sees both messages, in order."""
    api.responder = answer
    users = [f"user-{i}" for i in range(20)]

    def round_of(server: Server, n: int) -> list[tuple[str, str, dict | None]]:
        results, _ = browse_all(server, users, range(n, n + 1))
        return [(user, said, done) for (user, _), (said, _, done) in results.items()]

    server = Server(cli_paths["stdio"], api, home, workers=4, threads=4, spares=0, app="django_app:application")
    try:
        assert server.get("/chat/..%2Fetc?prompt=hi")[0] in (400, 404)
        before = round_of(server, 0)
    finally:
        server.stop()
    deadline = time.monotonic() + 10
    while clis_with(home) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert clis_with(home) == []  # the restart is whole: no worker, no CLI left
    server = Server(cli_paths["stdio"], api, home, workers=4, threads=4, spares=0, app="django_app:application")
    try:
        after = round_of(server, 1)
    finally:
        server.stop()
    sessions = {user: done["session"] for user, _, done in before if done}
    for user, said, done in after:
        assert said == f"echo: {user} question 1 " + "and more " * 10 and done is not None
        assert done["session"] == sessions[user]  # the same conversation, resumed
    last = {}
    for request in api.message_requests():
        said = user_texts(request)
        last[said[-1].split()[0]] = said
    assert last == {u: [f"{u} question 0", f"{u} question 1"] for u in users}
    assert len(api.message_requests()) == 40
    assert len({done["worker"] for _, _, done in before + after if done}) >= 2


def test_the_offline_example_with_a_host_keeps_every_conversation_answering_through_a_deploy(cli_paths: dict[str, Path],
                                                                                              api: MockMessagesAPI, home: Path) -> None:  # fmt: skip
    """Issue 68, item 2: ``examples/webapp.py`` as the deployment page walks it through, in its
    default offline mode (each worker its own demo mock model) with ``SESSION_HOST``, 2 workers,
    3 users; then a deploy (every worker new, each with a mock of its own), and two more messages
    each. Each host CLI pointed at the mock of the worker that sent its conversation's first
    message, gone with that worker: after the deploy every conversation hung 150-208 s and
    answered "API Error: Connection refused". Now a newer worker's options reach the next turn
    (a restart with the history): every answer the demo model's, each conversation in its one
    session."""
    from claude_sdkurl.testing.cli import CACHE_ENV, cache_dir

    users = [f"user-{i}" for i in range(3)]
    server: Server | None = None
    with session_host() as (_, sock):
        demo = {"SESSION_HOST": str(sock), "CLAUDE_SDKURL_LIVE": "0", CACHE_ENV: str(cache_dir())}  # the example's own default
        try:
            server = Server(cli_paths["stdio"], api, home, workers=2, threads=4, spares=0, extra_env=demo)
            first, _ = browse_all(server, users, range(1))
            server.stop()
            server = Server(cli_paths["stdio"], api, home, workers=2, threads=4, spares=0, extra_env=demo)  # the deploy
            later, _ = browse_all(server, users, range(1, 3))
        finally:
            if server is not None:
                server.stop()
    results = {**first, **later}
    assert len(results) == 9
    for (user, n), (said, _, done) in sorted(results.items()):
        assert done is not None and done["error"] is False and said == "pong", (user, n, said, done)
    for user in users:
        assert len({results[(user, n)][2]["session"] for n in range(3)}) == 1  # type: ignore[index]
    assert api.message_requests() == []  # (the demo's own mocks answered, not this test's)
