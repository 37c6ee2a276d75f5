"""The deployment recipes of docs/guide/deployment.md (``examples/deploy/``), started as their
service manager would start them, on the real CLI 2.1.330 and the mock model (issue 68).

* systemd: the host's and the web app's units, as a system account with no login session (no
  ``/run/user/<uid>``, no ``XDG_RUNTIME_DIR``), each directory made as systemd makes it;
* Compose: the volumes as Docker makes them (root's, 0755), the services in ``depends_on`` order
  as the file's user, in containers of their own sharing the volumes;
* more than one machine: nginx (Debian's package) with the recipe's consistent ``hash`` in front
  of two machines (a host and a gunicorn each, homes of their own, one PostgreSQL): a key's
  messages stay on its machine, and when that machine is killed the other goes on with the whole
  history.

No systemd or docker engine runs here: ``tests/machines.py`` does what each would do with the
file's values (and fails on a directive it does not know); every process is real.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl.testing import MockMessagesAPI, offline_env, text
from claude_sdkurl.testing.mock_api import RecordedRequest

from .machines import APP, DEPLOY, Box, compose_order, kill_uid, make_account, one, python_needs, read_unit, remove_account, \
    systemd_restart, systemd_service, volume_binds  # fmt: skip
from .servers import free_port

pytestmark = pytest.mark.realcli

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide" / "deployment.md"
QUESTION = re.compile(r"(\S+) question (\d+)")


#: each recipe of the guide (``<!-- recipe: NAME -->``) and the file of examples/deploy/ it is
RECIPES = {"systemd-host": "claude-host.service", "systemd-web": "claude-web.service", "compose": "compose.yaml",
           "nginx": "nginx.conf"}  # fmt: skip


def run(name: str) -> Path:
    """The file of recipe ``name``, which the guide must show word for word (the page shows
    what the tests run)."""
    blocks = dict(re.findall(r"<!-- recipe: ([\w-]+) -->\n```\w*\n(.*?)```", GUIDE.read_text(), re.S))
    assert name in blocks, f"the deployment guide has no recipe {name!r} (has {sorted(blocks)})"
    file = DEPLOY / RECIPES[name]
    assert blocks[name] == file.read_text(), f"docs/guide/deployment.md shows another {file.name} than examples/deploy/ has"
    return file


def questions(request: RecordedRequest) -> list[str]:
    """The test's questions a model request carries, in order."""
    found: list[str] = []
    for message in request.messages():
        if message.get("role") != "user":
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            if block.get("type") == "text":
                found += [m.group(0) for m in QUESTION.finditer(block.get("text", "")) if m.group(0) not in found]
    return found


def conditions(service: dict[str, Any]) -> dict[str, str]:
    """A Compose service's ``depends_on``: each service it waits for, and for what."""
    needs = service.get("depends_on") or {}
    return {other: needs[other]["condition"] for other in needs} if isinstance(needs, dict) else dict.fromkeys(needs, "service_started")


def echo(request: RecordedRequest) -> Any:
    said = questions(request)
    return text(f"heard: {' | '.join(said)}" if said else "heard nothing")


def chat(port: int, user: str, prompt: str, timeout: float = 180) -> tuple[str, dict[str, Any] | None]:
    """One message to the web app (``examples/webapp.py``) at ``port``: the streamed text and the
    ``done`` event's data (``None`` when it ended otherwise)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", f"/chat/{urllib.parse.quote(user, safe='')}?prompt={urllib.parse.quote(prompt)}")
        response = conn.getresponse()
        body = response.read().decode()
        assert response.status == 200, (response.status, body[-500:])
    finally:
        conn.close()
    said, done, kind = "", None, "message"
    for line in body.splitlines():
        if line.startswith("event: "):
            kind = line[7:]
        elif line.startswith("data: "):
            data = json.loads(line[6:])
            if kind == "message":
                said += data["text"]
            elif kind == "done":
                done = data
            elif kind == "failed":
                raise AssertionError(f"the web app said: {data}")
            kind = "message"
    return said, done


def wait_for(check: Any, seconds: float, what: str, log: Path | None = None) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    tail = log.read_text(errors="replace")[-3000:] if log is not None and log.exists() else ""
    raise AssertionError(f"{what}: not within {seconds} s\n{tail}")


def serving(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=5) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if int(open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return found


def cli_children(pid: int) -> list[int]:
    """The CLIs ``pid`` started (their command line has the stream-json flags)."""
    out = []
    for child in children(pid):
        try:
            if b"--output-format" in open(f"/proc/{child}/cmdline", "rb").read():
                out.append(child)
        except OSError:
            continue
    return out


def mapped(command: list[str], ports: dict[str, str]) -> list[str]:
    """``command`` with each address of ``ports`` replaced (the machine is shared: a fixed port may be taken)."""
    out = [ports.get(word, word) for word in command]
    assert sum(a != b for a, b in zip(out, command)) == len(ports), (command, ports)
    return out


def flag(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def uid_of(pid: int) -> int:
    return os.stat(f"/proc/{pid}").st_uid


def environ(pid: int) -> dict[str, str]:
    raw = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
    return dict(item.decode().partition("=")[::2] for item in raw if b"=" in item)


# ---------------------------------------------------------------------- systemd


def test_the_systemd_units_start_as_written_for_an_account_with_no_login_session(cli_paths: dict[str, Path], api: MockMessagesAPI,
                                                                                 tmp_path: Path) -> None:  # fmt: skip
    """The two units of the guide, as systemd starts them, for a system account made here (no
    home, no login: no ``/run/user/<uid>``): the host's socket in its ``RuntimeDirectory=``
    (0700, the account's), the page's address with its token in ``relay.url`` there (0600), the
    web unit's ``SESSION_HOST`` that socket; two messages through the web app are answered by a
    CLI of the host's (the account's), the second with the first in its history; stopped, the
    host removes the page's address. systemd's own parser reads both units without a word."""
    api.responder = echo
    host_unit, web_unit = read_unit(run("systemd-host")), read_unit(run("systemd-web"))
    assert one(host_unit, "User") == one(web_unit, "User")  # the socket admits only its own user's processes
    host_command, web_command = shlex.split(one(host_unit, "ExecStart")), shlex.split(one(web_unit, "ExecStart"))
    sock = Path(flag(host_command, "--socket"))
    assert sock.parent == Path("/run") / one(host_unit, "RuntimeDirectory")  # the socket where systemd makes the folder
    assert f"SESSION_HOST={sock}" in web_unit["Service"]["Environment"]
    account = make_account()
    import pwd

    uid, gid = pwd.getpwnam(account).pw_uid, pwd.getpwnam(account).pw_gid
    cli = Path(cli_paths["stdio"])
    box = None
    try:
        box = Box(needs=(*python_needs(), cli.parent))
        checked = subprocess.run(["nsenter", "--target", str(box.holder.pid), "--mount", "--", "systemd-analyze", "verify", "--man=no",
                                  f"{APP}/examples/deploy/claude-host.service", f"{APP}/examples/deploy/claude-web.service"],
                                 capture_output=True, text=True, timeout=60)  # fmt: skip
        assert checked.returncode == 0 and checked.stderr.strip() == "", checked.stderr
        assert not box.exists(f"/run/user/{uid}") and box.exists("/run/user")  # nobody logged in as the account
        # the deployer's /etc/claude-host.env: the model's address and key (here the mock's), and the CLI
        env_file = {**{k: v for k, v in offline_env(api.url, "/unused").items() if k != "HOME"}, "CLAUDE_SDKURL_CLI": str(cli)}
        relay = free_port()
        host_log = tmp_path / "host.log"
        # the unit's command, its port mapped; and leases of 600 s (the unit's are 30 s), so that a
        # restarted host that waited out its predecessor's lease instead of taking it over would
        # leave the message after the crash below unanswered within the chat's 180 s
        host_argv = [*mapped(host_command, {"127.0.0.1:8765": f"127.0.0.1:{relay}"}), "--lease-ttl", "600"]
        host = systemd_service(box, host_unit, user=account, env_file=env_file, log=host_log, argv=host_argv)
        wait_for(lambda: "session host at" in host_log.read_text() or host.poll() is not None, 60, "the host's start", host_log)
        assert host.poll() is None, host_log.read_text()
        assert uid_of(host.pid) == uid and "XDG_RUNTIME_DIR" not in environ(host.pid)
        assert box.stat(str(sock.parent)) == (0o700, uid, gid)
        page = sock.parent / "relay.url"
        assert box.stat(str(page)) == (0o600, uid, gid)
        url = box.read(str(page)).strip()
        assert re.fullmatch(rf"http://127\.0\.0\.1:{relay}/\?token=\S{{16,}}", url), url
        with urllib.request.urlopen(url, timeout=30) as answer:  # the address opens the page
            assert answer.status == 200 and b"<html" in answer.read().lower()
        port = free_port()
        web_log = tmp_path / "web.log"
        web = systemd_service(box, web_unit, user=account, env_file={}, log=web_log,
                              argv=mapped(web_command, {"127.0.0.1:8000": f"127.0.0.1:{port}"}))  # fmt: skip
        wait_for(lambda: serving(port) or web.poll() is not None, 90, "the web app's start", web_log)
        assert web.poll() is None, web_log.read_text()[-3000:]
        said, done = chat(port, "alice", "alice question 0")
        assert said == "heard: alice question 0" and done is not None and not done["error"], (said, done)
        clis = cli_children(host.pid)
        assert len(clis) == 1 and uid_of(clis[0]) == uid  # the host's CLI, the account's
        assert not any(cli_children(worker) for worker in children(web.pid))  # none in a worker
        said, done = chat(port, "alice", "alice question 1")
        assert said == "heard: alice question 0 | alice question 1", said  # the same conversation, on the same CLI
        assert cli_children(host.pid) == clis
        assert len(api.message_requests()) == 2
        # the host crashes; systemd (Restart=on-failure) starts it again, the runtime folder kept
        # (RuntimeDirectoryPreserve=restart), so the new host finds its predecessor's record and takes
        # the conversation's lease over at once: the next message is a wake with the whole history
        os.kill(host.pid, signal.SIGKILL)
        host.wait(timeout=30)
        systemd_restart(box, host_unit)
        assert box.exists(f"{sock}.holder")
        host_log.write_text("")
        host = systemd_service(box, host_unit, user=account, env_file=env_file, log=host_log, argv=host_argv)
        wait_for(lambda: "session host at" in host_log.read_text() or host.poll() is not None, 60, "the host's restart", host_log)
        said, done = chat(port, "alice", "alice question 2")
        assert said == "heard: alice question 0 | alice question 1 | alice question 2", (said, host_log.read_text()[-2000:])
        assert len(api.message_requests()) == 3 and "waits out" not in host_log.read_text() and "waited out" not in host_log.read_text()
        box.stop(web)
        box.stop(host)  # systemctl stop: SIGTERM
        assert host.returncode == 0, host_log.read_text()[-2000:]
        assert not box.exists(str(page)) and not box.exists(str(sock))  # the token opens nothing any more
    finally:
        if box is not None:
            box.close()
        kill_uid(uid)
        remove_account(account)


# ---------------------------------------------------------------------- Compose


def test_the_compose_file_starts_as_written_on_fresh_root_owned_volumes(cli_paths: dict[str, Path], api: MockMessagesAPI,
                                                                       tmp_path: Path) -> None:  # fmt: skip
    """The guide's Compose file, as Compose runs it: each named volume a fresh folder, root's,
    0755 (what Docker makes); each service in a container of its own (its volumes mounted where
    the file says, its ``user:``, ``environment:`` over ``env_file:``), in ``depends_on`` order,
    each condition waited for (a one-shot's exit 0, a health check). Before the volumes' owner
    has run, the host refuses the volume (exit 2, naming the folder); after, it makes its private
    folder inside it (0700, the user's), the web app's workers find the socket there, and two
    messages are answered by the host's CLI with the history whole."""
    import yaml

    api.responder = echo
    compose = yaml.safe_load(run("compose").read_text())
    services, order = compose["services"], compose_order(compose["services"])
    assert order.index("host") < order.index("web")
    volumes = {name: tmp_path / f"volume-{name}" for name in compose["volumes"]}
    for folder in volumes.values():
        folder.mkdir()
        os.chown(folder, 0, 0)
        folder.chmod(0o755)  # a fresh named volume
    cli = Path(cli_paths["stdio"])
    image_env = {"PATH": f"{APP}/.venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}  # the image's ENV
    workdir = f"{APP}/examples"  # the image's WORKDIR: webapp.py there
    env_file = {**{k: v for k, v in offline_env(api.url, "/unused").items() if k != "HOME"}, "CLAUDE_SDKURL_CLI": str(cli)}
    boxes: list[Box] = []
    users: set[int] = set()

    def container(name: str) -> tuple[Box, dict[str, str], str]:
        service = services[name]
        assert service.get("image") == services["host"]["image"], "one image for all"
        box = Box(volume_binds(service, volumes), needs=(*python_needs(), cli.parent))
        boxes.append(box)
        env = {**image_env, "HOSTNAME": name, "HOME": "/"}  # (an account the image does not know: HOME is /)
        for file in service.get("env_file") or []:
            assert file == "claude.env", file
            env.update(env_file)  # the deployer's file: the model's address and key (here the mock's), the CLI
        env.update({k: str(v) for k, v in (service.get("environment") or {}).items()})
        user = str(service.get("user", "root"))
        if user != "root":
            users.add(int(user.split(":")[0]))
        return box, env, "0:0" if user == "root" else user

    try:
        host_service = services["host"]
        host_command = shlex.split(host_service["command"])
        sock = Path(flag(host_command, "--socket"))
        # the host on the volume as Docker made it, before the owner's one-shot: refused, and why
        box, env, user = container("host")
        refused = box.start(host_command, user=user, env=env, cwd=workdir, log=tmp_path / "refused.log")
        assert refused.wait(120) == 2
        said = (tmp_path / "refused.log").read_text()
        assert str(sock.parent) in said and "Permission denied" in said, said
        box.close()
        boxes.remove(box)
        started: dict[str, tuple[subprocess.Popen[Any], Box, dict[str, str], str]] = {}
        for name in order:
            service = services[name]
            box, env, user = container(name)
            for other, condition in conditions(service).items():  # what Compose waits for before it starts this one
                if condition == "service_completed_successfully":
                    assert started[other][0].wait(60) == 0, (tmp_path / f"{other}.log").read_text()
                elif condition == "service_healthy":  # the health check, run in that container until it passes
                    test = services[other]["healthcheck"]["test"]
                    assert test[0] == "CMD", test
                    _, other_box, other_env, other_user = started[other]
                    wait_for(lambda: other_box.start(test[1:], user=other_user, env=other_env, cwd=workdir,
                                                     log=tmp_path / "health.log").wait(30) == 0, 90,
                             f"{other}'s health check", tmp_path / f"{other}.log")  # fmt: skip
                else:
                    assert condition == "service_started", condition
            command = shlex.split(service["command"])
            if name == "web":  # the container's port 8000 is published on 127.0.0.1: here, a free port of this machine
                assert service["ports"] == ["127.0.0.1:8000:8000"], service["ports"]
                port = free_port()
                command = mapped(command, {"0.0.0.0:8000": f"127.0.0.1:{port}"})
            started[name] = (box.start(command, user=user, env=env, cwd=workdir, log=tmp_path / f"{name}.log"), box, env, user)
        host, host_box = started["host"][0], started["host"][1]
        web = started["web"][0]
        wait_for(lambda: serving(port) or web.poll() is not None, 90, "the web app's start", tmp_path / "web.log")
        assert web.poll() is None and host.poll() is None, (tmp_path / "web.log").read_text()[-3000:]
        uid, gid = (int(x) for x in host_service["user"].split(":"))
        assert host_box.stat(str(sock.parent.parent)) == (0o755, uid, gid)  # the volume: given to the user, still 0755
        assert host_box.stat(str(sock.parent)) == (0o700, uid, gid)  # the host's own folder inside it
        said, done = chat(port, "alice", "alice question 0")
        assert said == "heard: alice question 0" and done is not None and not done["error"], (said, done)
        clis = cli_children(host.pid)
        assert len(clis) == 1 and uid_of(clis[0]) == uid
        said, _ = chat(port, "alice", "alice question 1")
        assert said == "heard: alice question 0 | alice question 1", said
        assert cli_children(host.pid) == clis and len(api.message_requests()) == 2
        # the CLI's transcript is on the shared home volume, where a restarted host finds it
        assert list((volumes["claude-home"] / ".claude" / "projects").rglob("*.jsonl"))
    finally:
        for box in reversed(boxes):
            box.close()
        for uid in users:
            kill_uid(uid)


# ---------------------------------------------------------------------- two machines behind nginx


def nginx_site(recipe_text: str, listen: int, upstreams: dict[str, int]) -> str:
    """The recipe's site with this machine's addresses: nginx on ``listen``, each ``machine-X:8000``
    on 127.0.0.1's ``upstreams[X]`` (each replaced exactly once)."""
    site = recipe_text
    for name, port in {"listen 80;": listen, **upstreams}.items():
        old = name if name.startswith("listen") else f"{name}:8000"
        new = f"listen 127.0.0.1:{port};" if name.startswith("listen") else f"127.0.0.1:{port}"
        assert site.count(old) == 1, (old, site)
        site = site.replace(old, new)
    return site


def machine_host(name: str, base: Path, home: Path, env: dict[str, str], shared: tuple[str, ...]) -> subprocess.Popen[str]:
    """A machine's session host, as the guide's command for more than one machine starts it."""
    sock = base / name / "host.sock"
    host = subprocess.Popen([sys.executable, "-m", "claude_sdkurl.host", "--socket", str(sock), "--max-live", "16", *shared],
                            env={**os.environ, **env, "HOME": str(home)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)  # fmt: skip
    assert host.stdout is not None
    line = host.stdout.readline()
    assert "session host at" in line, line + host.stdout.read() if host.poll() is not None else line
    return host


def host_clis_by_folder(host: subprocess.Popen[str]) -> dict[str, int]:
    """The host's CLIs, by their working folder (a user's workspace)."""
    found = {}
    for pid in cli_children(host.pid):
        try:
            found[os.readlink(f"/proc/{pid}/cwd")] = pid
        except OSError:
            continue
    return found


def stop_machines(balancers: list[Any], servers: dict[str, Any], hosts: dict[str, subprocess.Popen[str]]) -> None:
    """nginx first, then each machine's gunicorn, then its host (SIGTERM; SIGKILL after 30 s)."""
    for balancer in balancers:
        balancer.stop()
    for server in servers.values():
        server.stop()
    for host in hosts.values():
        try:
            os.killpg(host.pid, signal.SIGTERM)
            host.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(host.pid, signal.SIGKILL)
            host.wait(30)
        except ProcessLookupError:
            host.wait(30)
        if host.stdout is not None:
            host.stdout.close()


def test_two_machines_behind_nginx_keep_each_conversation_on_one_machine_and_the_other_takes_over(
    cli_paths: dict[str, Path], api: MockMessagesAPI, postgres_url: str, tmp_path: Path
) -> None:
    """The guide's nginx site (Debian's nginx) in front of two machines, each a session host (a
    home of its own) and a gunicorn with 3 workers attached to it, one PostgreSQL for the
    conversations' leases and transcripts. Two messages for each user: every message of a user on
    one machine, answered by one CLI of that machine's host all along (no hand-over: the CLIs by
    workspace, unchanged between the messages, none on the other machine). Then one machine's
    gunicorn and host SIGKILLed: each of its users' next message goes to the other machine, whose
    host takes the conversation over with its whole history (the model is sent every earlier
    message), while the other machine's users stay on their live CLIs. Every message reached the
    model once."""
    from .servers import NginxServer
    from .test_realcli_webapp import Server

    api.responder = echo
    cli = cli_paths["stdio"]
    tag = f"{os.getpid()}_{time.monotonic_ns()}"
    shared = ("--store", f"{postgres_url}#conv_{tag}", "--session-store", f"{postgres_url}#sess_{tag}", "--lease-ttl", "10")
    base = Path(tempfile.mkdtemp(prefix="csk-nginx-"))  # (short: a socket's path is at most 107 bytes)
    workspaces = tmp_path / "ws"  # the application's folder, at the same path on both machines
    workspaces.mkdir()
    hosts: dict[str, subprocess.Popen[str]] = {}
    servers: dict[str, Server] = {}
    nginx = None
    try:
        for name in ("a", "b"):
            home = tmp_path / f"machine-{name}"
            home.mkdir()
            env = {**offline_env(api.url, home), "CLAUDE_SDKURL_CLI": str(cli)}
            hosts[name] = machine_host(name, base, home, env, shared)
            servers[name] = Server(cli, api, home, workers=3, threads=8, spares=0,
                                   extra_env={"SESSION_HOST": str(base / name / "host.sock"), "WORKSPACES": str(workspaces)})  # fmt: skip
        port = free_port()
        nginx = NginxServer(nginx_site(run("nginx").read_text(), port, {f"machine-{n}": s.port for n, s in servers.items()})).start(port)

        def machine_of(done: dict[str, Any] | None) -> str:
            assert done is not None and not done["error"], done
            found = [n for n, s in servers.items() if done["worker"] in s.worker_pids()]
            assert len(found) == 1, (done, {n: s.worker_pids() for n, s in servers.items()})
            return found[0]

        def round_of(users: list[str], n: int) -> dict[str, str]:
            """Each user's message ``n`` through nginx (the users at once): the machine that served it."""
            import concurrent.futures

            def one_user(user: str) -> str:
                said, done = chat(port, user, f"{user} question {n}")
                assert said == "heard: " + " | ".join(f"{user} question {i}" for i in range(n + 1)), (user, said)
                return machine_of(done)

            with concurrent.futures.ThreadPoolExecutor(len(users)) as pool:
                return dict(zip(users, pool.map(one_user, users)))

        users = [f"user-{i}" for i in range(6)]
        first = round_of(users, 0)
        while len(set(first.values())) < 2 and len(users) < 16:  # the hash may put the first few on one machine
            more = [f"user-{len(users) + i}" for i in range(2)]
            first.update(round_of(more, 0))
            users += more
        assert len(set(first.values())) == 2, first  # both machines have users
        before = {n: host_clis_by_folder(h) for n, h in hosts.items()}
        second = round_of(users, 1)
        assert second == first  # sticky: each user's messages on one machine
        after = {n: host_clis_by_folder(h) for n, h in hosts.items()}
        assert after == before  # the same CLIs: no hand-over, no wake
        for user, machine in first.items():
            other = "b" if machine == "a" else "a"
            assert str(workspaces / user) in after[machine] and str(workspaces / user) not in after[other], (user, after)
        assert len(api.message_requests()) == 2 * len(users)
        # one machine gone at once: its gunicorn (every worker) and its host, SIGKILL
        gone = first[users[0]]
        stays = "b" if gone == "a" else "a"
        os.killpg(servers[gone].proc.pid, signal.SIGKILL)
        os.killpg(hosts[gone].pid, signal.SIGKILL)
        servers[gone].proc.wait(30)
        hosts[gone].wait(30)
        from .test_notebook_magic import clis_with

        wait_for(lambda: not clis_with(tmp_path / f"machine-{gone}"), 60, "the killed machine's CLIs to end")
        third = round_of(users, 2)  # each answer heard all three questions (round_of checks)
        assert set(third.values()) == {stays}, third
        last = {n: host_clis_by_folder(h) for n, h in hosts.items() if n == stays}[stays]
        for user, machine in first.items():
            if machine == stays:
                assert last[str(workspaces / user)] == after[stays][str(workspaces / user)]  # still the same live CLI
            else:
                assert str(workspaces / user) in last  # taken over by the machine that stays
        requests = api.message_requests()
        assert len(requests) == 3 * len(users)  # nothing ran twice, nothing was lost
        for user in users:  # what the model was sent for each user's third message: the whole conversation
            sent = [questions(r) for r in requests if questions(r) and questions(r)[-1] == f"{user} question 2"]
            assert sent == [[f"{user} question {i}" for i in range(3)]], (user, sent)
        print(f"{len(users)} users: {sum(m == gone for m in first.values())} taken over from the killed machine")
    finally:
        stop_machines([nginx] if nginx is not None else [], servers, hosts)
        import shutil

        shutil.rmtree(base, ignore_errors=True)
