"""Real database servers for the session-store tests: PostgreSQL and Redis on 127.0.0.1.

Found on the machine (PATH, ``/usr/lib/postgresql/*/bin``) or installed from
Debian's packages when missing and we may (root with apt-get); otherwise the
tests that need them fail, naming what is missing: never a fake server.

The servers daemonise (``pg_ctl start``, ``redis-server --daemonize yes``), so
they are not children of the test process (whose leak check counts children),
and are stopped when the test session ends.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any


class ServerUnavailable(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def log_tail(path: Path) -> str:
    try:
        return path.read_text()[-2000:]
    except OSError:
        return ""


def stop_daemon(pidfile: Path, root: Path) -> None:
    """SIGTERM the daemon named in ``pidfile``, wait (bounded) for it to go, remove ``root``."""
    try:
        pid = int(pidfile.read_text().strip())
        os.kill(pid, 15)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}"):
            time.sleep(0.05)
    except (OSError, ValueError):
        pass
    finally:
        shutil.rmtree(root, ignore_errors=True)


def start_detached(argv: list[str], env: dict[str, str], log: Path, pidfile: Path, url: str, seconds: float, name: str,
                   stop: Any) -> None:  # fmt: skip
    """Start ``argv`` in its own session, not a child of the test process (``setsid``, the shell
    exits), its pid in ``pidfile``; wait for ``url`` to answer 200, else ``stop()`` and
    :class:`ServerUnavailable` with the log's tail."""
    command = " ".join(shlex.quote(a) for a in argv)
    subprocess.run(["sh", "-c", f'setsid {command} > "{log}" 2>&1 < /dev/null & echo $! > "{pidfile}"'], env=env, check=True, timeout=30)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    tail = log_tail(log)
    stop()
    raise ServerUnavailable(f"{name} did not answer at {url}: {tail}")


def _apt_install(package: str) -> None:
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise ServerUnavailable(f"{package} is not installed and cannot be installed here (needs root and apt-get)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    done = subprocess.run(["apt-get", "install", "-y", "-q", package], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True)
        done = subprocess.run(["apt-get", "install", "-y", "-q", package], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise ServerUnavailable(f"apt-get install {package} failed: {done.stderr[-2000:]}")


def _postgres_bindir() -> Path | None:
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb"):
        return Path(os.path.realpath(on_path)).parent
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def descendants(pids: list[int]) -> list[int]:
    """``pids`` and every live process below them (children, their children...), parents first."""
    parent_of: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent_of[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, level = list(pids), list(pids)
    while level:
        level = [pid for pid, parent in parent_of.items() if parent in level and pid not in found]
        found += level
    return found


class PostgresServer:
    """``initdb`` + ``pg_ctl start`` in a temporary directory; trust auth on 127.0.0.1 only."""

    def __init__(self) -> None:
        bindir = _postgres_bindir()
        if bindir is None:
            _apt_install("postgresql")
            bindir = _postgres_bindir()
        if bindir is None:
            raise ServerUnavailable("PostgreSQL's pg_ctl/initdb not found after installing")
        self.bindir = bindir
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="claude-sdkurl-pg-"))
        self.data = self.root / "data"
        self.user = "postgres"
        self._as_user: dict[str, object] = {}
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root: run it as the postgres account
            import pwd

            pw = pwd.getpwnam("postgres")
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            self._as_user = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}

    def _run(self, *args: str) -> None:
        done = subprocess.run(
            [str(self.bindir / args[0]), *args[1:]],
            capture_output=True,
            text=True,
            cwd=self.root,
            timeout=120,
            **self._as_user,  # type: ignore[arg-type]
        )
        if done.returncode != 0:
            raise ServerUnavailable(f"{args[0]} failed: {done.stdout[-1000:]} {done.stderr[-2000:]}")

    def start(self) -> PostgresServer:
        self._run("initdb", "-D", str(self.data), "-U", self.user, "--auth=trust", "-E", "UTF8", "--no-sync")
        self.resume()
        return self

    def pause(self) -> None:
        """Stop the server, keeping its data (an outage: :meth:`resume` brings it back)."""
        self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "fast", "-w")

    def resume(self) -> None:
        opts = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c fsync=off -c full_page_writes=off"
        self._run("pg_ctl", "start", "-D", str(self.data), "-w", "-t", "60", "-l", str(self.root / "log"), "-o", opts)

    def freeze(self) -> None:
        """SIGSTOP the server and every backend (a store that stops answering without refusing:
        a partition, a VM paused): a call to it hangs. :meth:`thaw` undoes it."""
        self._signal_all(signal.SIGSTOP)

    def thaw(self) -> None:
        self._signal_all(signal.SIGCONT)

    def _signal_all(self, sig: int) -> None:
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        for pid in descendants([postmaster]):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/postgres"

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():  # (not when paused)
                self.thaw()  # a frozen server would not heed pg_ctl
                self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "immediate", "-w")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


class RedisServer:
    """``redis-server --daemonize yes`` on 127.0.0.1, no persistence."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            _apt_install("redis-server")
            binary = shutil.which("redis-server")
        if binary is None:
            raise ServerUnavailable("redis-server not found after installing")
        self.binary = binary
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="claude-sdkurl-redis-"))
        self.pidfile = self.root / "redis.pid"

    def start(self) -> RedisServer:
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        args += ["--daemonize", "yes", "--pidfile", str(self.pidfile), "--dir", str(self.root)]
        args += ["--logfile", str(self.root / "log")]
        subprocess.run(args, check=True, timeout=30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                time.sleep(0.05)
        raise ServerUnavailable(f"redis-server did not answer on port {self.port}: {self._log()}")

    def _log(self) -> str:
        return log_tail(self.root / "log")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        stop_daemon(self.pidfile, self.root)


class NginxServer:
    """Debian's nginx (installed when missing and we may) on 127.0.0.1, in the foreground as a
    child of its starter (``daemon off``), with a main configuration of its own in a temporary
    directory (its pid, logs and temporary files there) that includes ``site``: a site's
    configuration, as Debian's ``/etc/nginx/nginx.conf`` includes ``conf.d/*.conf`` in its
    ``http`` block. Stopped by :meth:`stop` (SIGQUIT, then SIGKILL)."""

    def __init__(self, site: str) -> None:
        binary = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
        if binary is None:
            _apt_install("nginx")
            binary = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
            if binary is not None:  # the package starts its own server on port 80 unless policy-rc.d says no: stop it
                subprocess.run([binary, "-s", "quit"], capture_output=True, timeout=30)
        if binary is None:
            raise ServerUnavailable("nginx not found after installing")
        self.binary = binary
        self.root = Path(tempfile.mkdtemp(prefix="claude-sdkurl-nginx-"))
        self.root.chmod(0o755)  # (its workers run as an unprivileged user)
        (self.root / "site.conf").write_text(site)
        temp = "\n".join(f"    {kind}_temp_path {self.root / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        (self.root / "nginx.conf").write_text(
            f"daemon off;\nworker_processes 1;\npid {self.root / 'nginx.pid'};\nerror_log {self.root / 'error.log'} info;\n"
            f"events {{ worker_connections 512; }}\nhttp {{\n    access_log {self.root / 'access.log'};\n{temp}\n"
            f"    include {self.root / 'site.conf'};\n}}\n"
        )
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, port: int) -> NginxServer:
        """Start, and wait (bounded) for ``port`` on 127.0.0.1 to accept."""
        conf = ["-p", str(self.root), "-c", str(self.root / "nginx.conf"), "-e", str(self.root / "error.log")]
        checked = subprocess.run([self.binary, "-t", *conf], capture_output=True, text=True, timeout=60)
        if checked.returncode != 0:
            self.stop()
            raise ServerUnavailable(f"nginx -t: {checked.stderr}")
        self.proc = subprocess.Popen([self.binary, *conf], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return self
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.05)
        tail = log_tail(self.root / "error.log")
        self.stop()
        raise ServerUnavailable(f"nginx did not listen on {port}: {tail}")

    def log(self) -> str:
        return log_tail(self.root / "error.log")

    def stop(self) -> None:
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.send_signal(signal.SIGQUIT)  # a graceful stop: the connections under way end first
                try:
                    self.proc.wait(15)
                except subprocess.TimeoutExpired:
                    pass
            if self.proc is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(15)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


class SSHServer:
    """A real OpenSSH ``sshd`` on 127.0.0.1 (a free port), with a throw-away host key and a
    throw-away client key authorised for the current user; daemonised, stopped at the end.

    ``ssh_command`` is the client prefix (``["ssh", "-i", key, ..., "user@127.0.0.1", "--"]``)."""

    def __init__(self) -> None:
        sshd = shutil.which("sshd") or ("/usr/sbin/sshd" if os.path.exists("/usr/sbin/sshd") else None)
        if sshd is None:
            _apt_install("openssh-server")
            sshd = "/usr/sbin/sshd" if os.path.exists("/usr/sbin/sshd") else shutil.which("sshd")
        if sshd is None or shutil.which("ssh") is None:
            raise ServerUnavailable("OpenSSH's sshd/ssh not found after installing")
        self.sshd = os.path.realpath(sshd)
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="claude-sdkurl-sshd-"))
        self.pidfile = self.root / "sshd.pid"
        import pwd

        self.user = pwd.getpwuid(os.geteuid()).pw_name

    def start(self) -> SSHServer:
        r = self.root
        for name in ("host_key", "client_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(r / name)], check=True, timeout=30)
        (r / "authorized_keys").write_text((r / "client_key.pub").read_text())
        (r / "authorized_keys").chmod(0o600)
        Path("/run/sshd").mkdir(exist_ok=True)  # privilege separation directory sshd insists on
        (r / "sshd_config").write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {r / 'host_key'}\nPidFile {self.pidfile}\n"
            f"AuthorizedKeysFile {r / 'authorized_keys'}\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n"
            "MaxStartups 64\nMaxSessions 64\nLogLevel ERROR\n"
        )
        done = subprocess.run([self.sshd, "-f", str(r / "sshd_config"), "-E", str(r / "log")], capture_output=True, text=True)
        if done.returncode != 0:
            raise ServerUnavailable(f"sshd failed to start: {done.stderr}")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            probe = subprocess.run([*self.ssh_command, "true"], capture_output=True, text=True, timeout=30)
            if probe.returncode == 0:
                return self
            time.sleep(0.1)
        raise ServerUnavailable(f"ssh to the test sshd fails: {probe.stderr} {self._log()}")

    def _log(self) -> str:
        return log_tail(self.root / "log")

    @property
    def ssh_command(self) -> list[str]:
        return [
            "ssh", "-q", "-i", str(self.root / "client_key"), "-p", str(self.port),
            "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes",
            "-o", "ServerAliveInterval=1", "-o", "ServerAliveCountMax=2",
            f"{self.user}@127.0.0.1", "--",
        ]  # fmt: skip

    def stop(self) -> None:
        stop_daemon(self.pidfile, self.root)


PHOENIX_VERSION = "20.26.1"


class PhoenixServer:
    """Arize Phoenix, a real OTLP trace receiver users run, on 127.0.0.1: ``phoenix serve``
    from its own virtual environment under ``~/.cache/claude_sdkurl/phoenix`` (made from the
    package index when missing: about a minute), its data in a temporary directory. Started
    detached (``setsid``, the shell exits), so it is not a child of the test process."""

    def __init__(self) -> None:
        self.venv = Path.home() / ".cache" / "claude_sdkurl" / f"phoenix-{PHOENIX_VERSION}"
        self.binary = self.venv / "bin" / "phoenix"
        if not self.binary.exists():
            subprocess.run([sys.executable, "-m", "venv", str(self.venv)], check=True, timeout=120)
            done = subprocess.run([str(self.venv / "bin" / "pip"), "install", "-q", f"arize-phoenix=={PHOENIX_VERSION}"],
                                  capture_output=True, text=True, timeout=900)  # fmt: skip
            if done.returncode != 0 or not self.binary.exists():
                shutil.rmtree(self.venv, ignore_errors=True)
                raise ServerUnavailable(f"pip install arize-phoenix=={PHOENIX_VERSION} failed: {done.stderr[-2000:]}")
        self.port, self.grpc_port = free_port(), free_port()
        self.root = Path(tempfile.mkdtemp(prefix="claude-sdkurl-phoenix-"))
        self.pidfile = self.root / "phoenix.pid"

    def start(self) -> PhoenixServer:
        env = {**os.environ, "PHOENIX_WORKING_DIR": str(self.root), "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(self.port),
               "PHOENIX_GRPC_PORT": str(self.grpc_port), "PHOENIX_TELEMETRY_ENABLED": "false"}  # fmt: skip
        start_detached([str(self.binary), "serve"], env, self.root / "log", self.pidfile, f"{self.url}/healthz", 120, "phoenix", self.stop)
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def spans(self, project: str) -> list[dict[str, Any]]:
        """Every span Phoenix holds for ``project`` (its REST API)."""
        found: list[dict[str, Any]] = []
        cursor = None
        while True:
            query = f"?limit=1000{'&cursor=' + cursor if cursor else ''}"
            try:
                with urllib.request.urlopen(f"{self.url}/v1/projects/{project}/spans{query}", timeout=10) as answer:
                    page = json.load(answer)
            except urllib.error.HTTPError as error:
                if error.code == 404:  # no span has reached the project yet
                    return found
                raise
            found += page["data"]
            cursor = page.get("next_cursor")
            if not cursor:
                return found

    def stop(self) -> None:
        stop_daemon(self.pidfile, self.root)


def chromium() -> tuple[str, str]:
    """Debian's headless browser and its driver (``/usr/bin/chromium``, ``/usr/bin/chromedriver``),
    installed from Debian's packages when missing and we may; else :class:`ServerUnavailable`
    naming what is missing."""
    wanted = {"chromium": "/usr/bin/chromium", "chromium-driver": "/usr/bin/chromedriver"}
    for package, path in wanted.items():
        if not os.path.exists(path):
            _apt_install(package)
    missing = [f"{path} (Debian package {package})" for package, path in wanted.items() if not os.path.exists(path)]
    if missing:
        raise ServerUnavailable(f"the browser stack is missing: {', '.join(missing)}")
    if not os.path.exists(EMOJI_FONT):  # for screenshots as a person sees them (else ✅ ⏹ are boxes); the DOM checks need none
        with contextlib.suppress(ServerUnavailable):
            _apt_install("fonts-noto-color-emoji")
    return wanted["chromium"], wanted["chromium-driver"]


EMOJI_FONT = "/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf"


class BrowserSteps:
    """A browser test's steps as a person would follow them: numbered screenshots in ``folder``
    (a run's own: older ones removed) and bounded waits that leave a screenshot when they fail."""

    def __init__(self, driver: Any, folder: Path) -> None:
        self.d = driver
        self.folder = folder
        self.step = 0
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.png"):
            old.unlink()

    def shot(self, name: str) -> None:
        self.step += 1
        self.d.save_screenshot(str(self.folder / f"{self.step:02d}-{name}.png"))

    def wait(self, check: Callable[[], Any], timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                value = check()
            except Exception:  # the page redrew under us: look again
                value = None
            if value:
                return value
            time.sleep(0.05)
        self.shot("timeout")
        raise AssertionError(f"{what}: not seen in the browser within {timeout} s (screenshot {self.step:02d}-timeout.png)")


class JupyterLabServer:
    """JupyterLab (from the package index, the test extra) on 127.0.0.1 with a token, serving
    ``root``; started detached (``setsid``) so it and its kernels are not children of the test
    process; its settings and workspaces in a temporary directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.token = os.urandom(12).hex()
        self.state = Path(tempfile.mkdtemp(prefix="claude-sdkurl-jupyterlab-"))
        self.pidfile = self.state / "lab.pid"
        self.log = self.state / "log"

    def start(self) -> JupyterLabServer:
        env = {**os.environ, "JUPYTERLAB_SETTINGS_DIR": str(self.state / "settings"),
               "JUPYTERLAB_WORKSPACES_DIR": str(self.state / "workspaces"), "JUPYTER_RUNTIME_DIR": str(self.state / "runtime")}  # fmt: skip
        args = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
                f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}", "--LabApp.news_url=None",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                # the notebook's JupyterLab extension from this checkout (an editable install
                # does not put it under share/jupyter/labextensions, as a wheel does)
                f"--LabApp.extra_labextensions_path={str(Path(__file__).resolve().parent.parent / 'claude_sdkurl' / 'notebook' / 'labextensions')}"]  # fmt: skip
        if os.geteuid() == 0:
            args.append("--allow-root")
        start_detached(args, env, self.log, self.pidfile, f"{self.url}/api/status?token={self.token}", 90, "JupyterLab", self.stop)
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        stop_daemon(self.pidfile, self.state)
