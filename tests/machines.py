"""The service managers a deployment recipe is written for, emulated on this machine with real
processes: a systemd unit (``examples/deploy/*.service``) and a Compose file
(``examples/deploy/compose.yaml``) are read, and their commands run as each manager would run
them, so a test starts the session host exactly as the recipe does.

A :class:`Box` is a machine (systemd) or a container (Compose) of its own: a mount namespace
(``unshare --mount``, held by a sleeping process) where ``/run``, ``/var/lib``, ``/srv``,
``/home`` and ``/tmp`` are fresh (tmpfs, as a booted machine's ``/run`` is: ``/run/user`` there
but nobody logged in, so no ``/run/user/<uid>``), the application's checkout at ``/srv/app``
(read-only), and the Python and the CLI that this checkout's venv uses reachable by any user at
the paths they have here. The network is this machine's: 127.0.0.1 reaches the mock model (and
every port a recipe names is mapped to a free one: the machine is shared). Each command runs
through ``nsenter`` and ``setpriv`` as the user the recipe names, with the environment the
manager would give it and nothing of ours. No systemd runs here (it is not PID 1) and no docker
engine: what they would do with the file's values is done here, step by step, and a directive
this emulation does not know fails the test rather than being skipped.

Needs root (it is here, in the test session and in CI).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "examples" / "deploy"
APP = "/srv/app"  # where the recipes have the application (its venv at /srv/app/.venv)
SYSTEMD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"  # what systemd gives a service
FRESH = ("/run", "/var/lib", "/srv", "/home", "/tmp")


def _top_closed_ancestor(path: Path) -> Path | None:
    """The highest folder above ``path`` that other users cannot enter (``/root``), if any."""
    for parent in reversed(path.parents):
        if parent != Path("/") and not os.stat(parent).st_mode & 0o001:
            return parent
    return None


class Box:
    """A mount namespace of its own (see the module doc); :meth:`close` ends it and every
    process started in it."""

    def __init__(self, binds: dict[str, Path] | None = None, needs: tuple[Path, ...] = ()) -> None:
        self.holder = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sleep", "3600"], start_new_session=True)
        self.procs: list[subprocess.Popen[Any]] = []
        try:
            self._lay_out(binds or {}, needs)
        except BaseException:
            self.close()
            raise

    def root(self, script: str) -> None:
        """Run ``script`` (sh) as root in the box."""
        done = subprocess.run(["nsenter", "--target", str(self.holder.pid), "--mount", "--", "sh", "-ec", script], capture_output=True,
                              text=True, timeout=60)  # fmt: skip
        assert done.returncode == 0, f"{script}\n{done.stderr}"

    def _lay_out(self, binds: dict[str, Path], needs: tuple[Path, ...]) -> None:
        deadline = time.monotonic() + 10
        mine = os.readlink("/proc/self/ns/mnt")
        while os.readlink(f"/proc/{self.holder.pid}/ns/mnt") == mine:  # (unshare has not switched yet)
            assert time.monotonic() < deadline and self.holder.poll() is None, "unshare --mount did not start"
            time.sleep(0.01)
        # what the box's users must run from, under a folder only root enters here (/root): that
        # folder is fresh in the box, with just these in it
        closed = {top for top in map(_top_closed_ancestor, needs) if top is not None}
        wanted = {APP: ROOT, **{str(path): path for path in needs if _top_closed_ancestor(path) is not None}, **binds}
        # every source is held in /srv/.stage first: a fresh /tmp or /home would hide it
        steps = ["mount -t tmpfs -o mode=0755 tmpfs /srv"]
        for n, source in enumerate(wanted.values()):
            steps += [f"mkdir -p /srv/.stage/{n}", f"mount --bind {shlex.quote(str(source))} /srv/.stage/{n}"]
        steps += [f"mount -t tmpfs -o mode=0755 tmpfs {shlex.quote(str(p))}" for p in (*(f for f in FRESH if f != "/srv"), *closed)]
        steps += ["chmod 1777 /tmp", "mkdir -m 0755 /run/user"]
        for n, inside in enumerate(wanted):
            steps += [f"mkdir -p {shlex.quote(inside)}", f"mount --move /srv/.stage/{n} {shlex.quote(inside)}"]
        steps.append(f"mount -o remount,bind,ro {APP}")
        self.root("\n".join(steps))

    def start(self, argv: list[str], *, user: str, env: dict[str, str], cwd: str, log: Path) -> subprocess.Popen[Any]:
        """``argv`` in the box as ``user`` (``name`` with its groups, or ``uid:gid``), with
        exactly ``env``, in ``cwd``; its output to ``log``. Its pid is the command's own."""
        if ":" in user:
            uid, gid = user.split(":")
            who = ["--reuid", uid, "--regid", gid, "--clear-groups"]
        else:
            who = ["--reuid", user, "--regid", user, "--init-groups"]
        out = open(log, "ab")  # noqa: SIM115 - the child has it; closed here once started
        try:
            proc = subprocess.Popen(["nsenter", "--target", str(self.holder.pid), "--mount", "--", "setpriv", *who, "--",
                                     "env", "-i", "--chdir", cwd, *(f"{k}={v}" for k, v in env.items()), *argv],
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        finally:
            out.close()
        self.procs.append(proc)
        return proc

    def exists(self, path: str) -> bool:
        return subprocess.run(["nsenter", "--target", str(self.holder.pid), "--mount", "--", "test", "-e", path]).returncode == 0

    def stat(self, path: str) -> tuple[int, int, int]:
        """``(mode & 0o7777, uid, gid)`` of ``path`` in the box."""
        done = subprocess.run(["nsenter", "--target", str(self.holder.pid), "--mount", "--", "stat", "-c", "%a %u %g", path],
                              capture_output=True, text=True, timeout=30)  # fmt: skip
        assert done.returncode == 0, done.stderr
        mode, uid, gid = done.stdout.split()
        return int(mode, 8), int(uid), int(gid)

    def read(self, path: str) -> str:
        done = subprocess.run(["nsenter", "--target", str(self.holder.pid), "--mount", "--", "cat", path], capture_output=True,
                              text=True, timeout=30)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    def stop(self, proc: subprocess.Popen[Any], sig: int = signal.SIGTERM) -> None:
        """``proc`` and its process group: ``sig``, then SIGKILL after 20 s."""
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, sig)
                proc.wait(20)
            except subprocess.TimeoutExpired:
                pass
            except ProcessLookupError:
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(20)

    def close(self) -> None:
        for proc in reversed(self.procs):
            self.stop(proc)
        self.holder.kill()
        self.holder.wait(20)


# ---------------------------------------------------------------------- systemd


#: what the emulation does with each directive of a unit; any other fails the test
KNOWN = {"Unit": {"Description", "After", "Wants"}, "Install": {"WantedBy"},
         "Service": {"User", "Group", "RuntimeDirectory", "RuntimeDirectoryMode", "RuntimeDirectoryPreserve", "StateDirectory", "Environment", "EnvironmentFile",
                     "WorkingDirectory", "ExecStart", "Restart", "KillMode"}}  # fmt: skip


def read_unit(path: Path) -> dict[str, dict[str, list[str]]]:
    """A unit file's settings: ``{section: {key: [values, in order]}}`` (a key may repeat)."""
    unit: dict[str, dict[str, list[str]]] = {}
    section = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            unit.setdefault(section, {})
            continue
        assert section and "=" in line and not line.endswith("\\"), f"{path.name}: {raw!r}"
        key, _, value = (part.strip() for part in line.partition("="))
        assert key in KNOWN.get(section, set()), \
            f"{path.name}: the emulation does not know [{section}] {key}= (add what systemd does with it to tests/machines.py)"  # fmt: skip
        assert "%" not in value and "$" not in value, f"{path.name}: specifiers and variables are not emulated: {raw!r}"
        unit[section].setdefault(key, []).append(value)
    return unit


def one(unit: dict[str, dict[str, list[str]]], key: str, default: str | None = None) -> str:
    values = unit["Service"].get(key)
    if not values:
        assert default is not None, f"the unit has no {key}="
        return default
    assert len(values) == 1, (key, values)
    return values[0]


def systemd_restart(box: Box, unit: dict[str, dict[str, list[str]]]) -> None:
    """What systemd does to a service's ``RuntimeDirectory=`` between its process ending (a crash)
    and ``Restart=`` starting it again: removed, unless ``RuntimeDirectoryPreserve=`` is ``restart``
    or ``yes`` (then kept as it is; :func:`systemd_service` then makes it again with its mode)."""
    if one(unit, "RuntimeDirectoryPreserve", "no") in ("restart", "yes"):
        return
    for name in unit["Service"].get("RuntimeDirectory", []):
        box.root(f"rm -rf /run/{name}")


def systemd_service(box: Box, unit: dict[str, dict[str, list[str]]], *, user: str, env_file: dict[str, str], log: Path,
                    argv: list[str] | None = None) -> subprocess.Popen[Any]:  # fmt: skip
    """Start the unit's service in ``box`` as systemd would: its ``RuntimeDirectory=`` made
    under ``/run`` (``RuntimeDirectoryMode=``, default 0755) and its ``StateDirectory=`` under
    ``/var/lib`` (0755), both owned by ``User=``/``Group=``; then ``ExecStart=`` (or ``argv``,
    the same with its ports mapped) as that user with systemd's environment: ``PATH``, the
    account's ``HOME``/``USER``/``LOGNAME``/``SHELL``, ``RUNTIME_DIRECTORY``,
    ``STATE_DIRECTORY``, then ``Environment=``, then ``EnvironmentFile=`` (whose content is
    ``env_file``: the file is the deployer's; it wins over ``Environment=``, as in systemd), in
    ``WorkingDirectory=`` (default ``/``). ``user`` is the account made for the test in place
    of ``User=`` (the same for ``Group=``)."""
    import pwd

    account = pwd.getpwnam(user)
    service = unit["Service"]
    assert one(unit, "Group", one(unit, "User")) == one(unit, "User"), "the emulation maps one account"
    env = {"PATH": SYSTEMD_PATH, "HOME": account.pw_dir, "USER": user, "LOGNAME": user, "SHELL": account.pw_shell}
    for key, base in (("RuntimeDirectory", "/run"), ("StateDirectory", "/var/lib")):
        for name in service.get(key, []):
            assert "/" not in name, name
            mode = one(unit, "RuntimeDirectoryMode", "0755") if key == "RuntimeDirectory" else "0755"
            box.root(f"install -d -m {mode} -o {account.pw_uid} -g {account.pw_gid} {base}/{name}")
            env[key.upper().replace("DIRECTORY", "_DIRECTORY")] = f"{base}/{name}"
    for value in service.get("Environment", []):
        for assignment in shlex.split(value):
            key, _, val = assignment.partition("=")
            env[key] = val
    for value in service.get("EnvironmentFile", []):
        assert value.lstrip("-").startswith("/etc/"), value
        env.update(env_file)
    command = shlex.split(one(unit, "ExecStart"))
    assert command[0].startswith("/"), "ExecStart= needs an absolute path"
    return box.start(argv if argv is not None else command, user=user, env=env, cwd=one(unit, "WorkingDirectory", "/"), log=log)


def make_account(prefix: str = "csk") -> str:
    """A system account of its own for a test (no home, no login shell, no login session): its name."""
    name = f"{prefix}{os.getpid() % 100000}{os.urandom(2).hex()}"
    subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin",
                    "--user-group", name], check=True, capture_output=True, timeout=60)  # fmt: skip
    return name


def remove_account(name: str) -> None:
    """Every process of the account killed, then the account removed."""
    import pwd

    uid = pwd.getpwnam(name).pw_uid
    kill_uid(uid)
    subprocess.run(["userdel", name], capture_output=True, timeout=60)


def kill_uid(uid: int) -> None:
    """SIGKILL every live process of ``uid`` (a test's service user: what it started too)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    os.kill(int(entry), signal.SIGKILL)
            except OSError:
                pass


# ---------------------------------------------------------------------- Compose


def compose_order(services: dict[str, Any]) -> list[str]:
    """The services in the order Compose starts them (``depends_on`` first)."""
    done: list[str] = []

    def visit(name: str, trail: tuple[str, ...] = ()) -> None:
        assert name not in trail, f"a cycle: {trail}"
        if name in done:
            return
        needs = services[name].get("depends_on") or []
        for other in needs if isinstance(needs, list) else list(needs):
            visit(other, (*trail, name))
        done.append(name)

    for name in services:
        visit(name)
    return done


def volume_binds(service: dict[str, Any], volumes: dict[str, Path]) -> dict[str, Path]:
    """A service's ``volumes:`` (``name:/path``) as the box's binds."""
    binds = {}
    for spec in service.get("volumes") or []:
        name, _, inside = spec.partition(":")
        assert name in volumes and inside.startswith("/") and ":" not in inside, f"only named volumes are emulated: {spec}"
        binds[inside] = volumes[name]
    return binds


def python_needs() -> tuple[Path, ...]:
    """What a process of this checkout's venv runs from: the Python it was made from."""
    return (Path(os.path.realpath(sys.base_prefix)),)
