"""The spawner behind ``ClaudeAgentOptions(spawn_claude_code_process=...)``: what it does for
users, and how the environment travels, is said in :mod:`claude_sdkurl.spawn`."""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import subprocess
from collections.abc import Callable, Sequence
from typing import IO, Any, Protocol

from ..log import get_logger

logger = get_logger("claude_sdkurl.spawn")


@dataclasses.dataclass
class SpawnOptions:
    """What the SDK would start, handed to a spawner.

    ``env`` is the whole environment a local CLI would get (this process's,
    then ``options.env``, then the SDK's own variables); ``sdk_env`` only what
    the SDK and ``options.env`` add to this process's: what a CLI on another
    machine needs, on top of its own login environment.
    """

    command: str
    """The program to run (the CLI's binary)."""
    args: list[str]
    """Its arguments."""
    cwd: str | None
    """The working folder, or ``None``."""
    env: dict[str, str]
    """The whole environment a CLI started here would get."""
    sdk_env: dict[str, str]
    """Only what the SDK and ``options.env`` add: what a CLI on another machine needs besides its own."""


class SpawnedProcess(Protocol):
    """A started CLI, as ``subprocess.Popen`` is one: ``stdin``/``stdout`` are binary OS pipes
    (they must have ``fileno()``); ``stderr`` may be ``None``; ``wait(timeout)`` raises
    ``subprocess.TimeoutExpired`` when it runs out."""

    stdin: IO[bytes] | None
    stdout: IO[bytes] | None
    stderr: IO[bytes] | None
    pid: int

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def send_signal(self, sig: int) -> None: ...


Spawner = Callable[[SpawnOptions], SpawnedProcess]
"""A function that starts the CLI from a :class:`SpawnOptions` and returns its process
(``ClaudeAgentOptions.spawn_claude_code_process``). One with a true ``runs_here`` attribute starts
it on this machine (a session host's): the CLI is then found, and ``cwd`` checked, as for a CLI
started here; for any other, the command is ``cli_path`` or ``claude`` as the far side sees it."""

_BOOTSTRAP = r"""m=$1; shift
s=
while IFS= read -r l; do
  [ "$l" = "$m" ] && break
  s="$s$l
"
done
eval "$s"
# Watch the channel: when the process that started us (sshd's session) is gone, the
# connection is, and the CLI would otherwise run on to the end of its turn.
if [ -d /proc/$$ ]; then alive() { [ -d /proc/$1 ]; }
elif ps -p $$ >/dev/null 2>&1; then alive() { ps -p $1 >/dev/null 2>&1; }
else exec "$@"
fi
p=$PPID
exec 3<&0
"$@" <&3 3<&- &
c=$!
exec 3<&- 0</dev/null
trap 'kill -TERM $c 2>/dev/null' HUP INT TERM
while alive $c; do
  if ! alive $p; then
    kill -TERM $c 2>/dev/null; sleep 2; kill -KILL $c 2>/dev/null; break
  fi
  sleep 0.5 2>/dev/null || sleep 1
done
wait $c
"""
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
REMOTE_SHELL_PROGRAMS = {"ssh", "autossh", "mosh"}  # these join the remote command into one shell string


def env_block(env: dict[str, str], cwd: str | None, marker: str) -> bytes:
    """``export`` lines (and a ``cd``) for the bootstrap, ended by ``marker``."""
    lines = []
    for key, value in env.items():
        if not _NAME.match(key):
            logger.warning("not passing environment variable %r to the spawned CLI: not a shell name", key)
            continue
        lines.append(f"export {key}={shlex.quote(value)}")
    if cwd is not None:
        lines.append(f"cd {shlex.quote(cwd)} || exit 126")
    lines.append(marker)
    return ("\n".join(lines) + "\n").encode("utf-8")


def command_prefix_spawner(prefix: Sequence[str], *, remote_shell: bool | None = None) -> Spawner:
    """A spawner that runs ``prefix + [the CLI and its flags]``, e.g. ``["ssh", "box", "--"]``.

    ``remote_shell``: the prefix hands the rest to a shell as one string (ssh
    does): then the far command is quoted into one argument. Default: true for
    ``ssh``, ``autossh`` and ``mosh``, false otherwise (``docker exec -i``,
    ``kubectl exec -i ... --``, ``podman exec -i``, ``sudo -u``, which pass an argv on).
    The CLI's path is ``cli_path`` as seen on the far side (default ``claude``
    on its ``PATH``); ``cwd`` is changed to there.
    """
    prefix = list(prefix)
    if not prefix or not all(isinstance(p, str) for p in prefix):
        raise TypeError("a spawn command prefix is a non-empty list of strings, e.g. ['ssh', 'host', '--']")
    if remote_shell is None:
        remote_shell = os.path.basename(prefix[0]) in REMOTE_SHELL_PROGRAMS

    def spawn(options: SpawnOptions) -> SpawnedProcess:
        marker = f"__claude_sdkurl_env_end_{os.urandom(8).hex()}__"
        far = ["sh", "-c", _BOOTSTRAP, "claude-sdkurl-bootstrap", marker, options.command, *options.args]
        argv = [*prefix, shlex.join(far)] if remote_shell else [*prefix, *far]
        popen = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
            start_new_session=True,  # its own group: stopping it stops what it started here
        )
        try:
            assert popen.stdin is not None
            popen.stdin.write(env_block(options.sdk_env, options.cwd, marker))
        except OSError:
            pass  # it died at once: the transport sees that and reports its stderr
        popen._claude_sdkurl_own_group = True  # type: ignore[attr-defined]
        return popen

    return spawn


def as_spawner(value: Any) -> Spawner | None:
    """``options.spawn_claude_code_process`` as a spawner (a prefix list is turned into one)."""
    if value is None or callable(value):
        return value  # type: ignore[no-any-return]
    if isinstance(value, (list, tuple)):
        return command_prefix_spawner(value)
    raise TypeError(
        "spawn_claude_code_process must be a function (SpawnOptions) -> process, or a command prefix "
        f"such as ['ssh', 'host', '--'], not {type(value).__name__}"
    )
