"""Bind a session to a running IDE, as the CLI's own ``/ide`` does and as Companion does.

::

    with ClaudeClient(options) as client:
        lock = client.bind_ide()          # the live IDE whose workspace holds options.cwd
        client.query("Which file is open in my editor?")
        ...
        client.unbind_ide()

An IDE with the Claude Code integration writes ``<config>/ide/<port>.lock`` (``~/.claude`` or
``CLAUDE_CONFIG_DIR``): JSON with its ``pid``, ``workspaceFolders``, ``ideName``, ``transport``
(``"ws"``/``"sse"``) or ``useWebSocket``, and ``authToken``. :func:`ide_lockfiles` reads them,
skipping files that do not parse and IDEs whose process is gone (the files are left alone: they
are the IDE's). Binding sends ``mcp_set_servers`` with the session's current dynamic MCP servers
(its ``mcp_servers`` option and what was set since) plus an ``ide`` entry: ``ws-ide`` at
``ws://127.0.0.1:<port>`` when the IDE speaks WebSocket, else ``sse-ide`` at
``http://127.0.0.1:<port>``, ``scope: "dynamic"``. Unbinding sends the same map without ``ide``.

Which CLIs take it (measured): 2.1.120 connects to the IDE (``X-Claude-Code-Ide-Authorization``
carries the lockfile's token; the IDE is told ``ide_connected``); 2.1.330 refuses the entry
("IDE transports are registered by the CLI itself"): :class:`IdeBindingRefused`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._errors import ClaudeSDKError

IDE_KEY = "ide"


@dataclass(frozen=True)
class IdeLock:
    """One running IDE, from its lockfile."""

    port: int
    """The port the IDE's extension listens on (127.0.0.1)."""
    pid: int
    """The IDE's process id."""
    ide_name: str
    """The IDE's name (``Visual Studio Code``, ...)."""
    workspace_folders: tuple[str, ...]
    """The folders open in it."""
    websocket: bool
    """Whether it speaks WebSocket (else SSE)."""
    auth_token: str | None
    """The token its extension asks for, if any."""
    path: str
    """The lockfile read."""

    def holds(self, folder: str | os.PathLike[str] | None) -> bool:
        """Whether ``folder`` is inside one of this IDE's workspace folders."""
        if folder is None:
            return False
        target = Path(folder).resolve()
        for workspace in self.workspace_folders:
            try:
                target.relative_to(Path(workspace).resolve())
                return True
            except ValueError:
                continue
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    except OSError:
        return False
    return True


def ide_dir(env: dict[str, str] | None = None) -> Path:
    """Where IDEs leave their lockfiles for the CLI that ``env`` (else this process) configures."""
    env = dict(os.environ) if env is None else {**os.environ, **env}
    config = env.get("CLAUDE_CONFIG_DIR") or str(Path(env.get("HOME") or Path.home()) / ".claude")
    return Path(config) / "ide"


def ide_lockfiles(cwd: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None) -> list[IdeLock]:
    """The running IDEs, those whose workspace holds ``cwd`` first (newest lockfile first
    within each group). Lockfiles that do not parse and IDEs whose pid is gone are skipped."""
    found: list[tuple[float, IdeLock]] = []
    folder = ide_dir(env)
    try:
        paths = list(folder.glob("*.lock"))
    except OSError:
        return []
    for path in paths:
        try:
            port = int(path.stem)
            data = json.loads(path.read_text())
            mtime = path.stat().st_mtime
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or not 0 < port < 65536:
            continue
        pid = data.get("pid")
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or not _alive(pid):
            continue
        folders = data.get("workspaceFolders")
        lock = IdeLock(
            port=port,
            pid=pid,
            ide_name=str(data.get("ideName") or "IDE"),
            workspace_folders=tuple(str(f) for f in folders) if isinstance(folders, list) else (),
            websocket=data.get("useWebSocket") is True or data.get("transport") == "ws",
            auth_token=data.get("authToken") if isinstance(data.get("authToken"), str) else None,
            path=str(path),
        )
        found.append((mtime, lock))
    found.sort(key=lambda item: (not item[1].holds(cwd), -item[0]))
    return [lock for _, lock in found]


def ide_server(lock: IdeLock) -> dict[str, Any]:
    """The ``ide`` entry of ``mcp_set_servers`` for ``lock``."""
    server: dict[str, Any] = {
        "type": "ws-ide" if lock.websocket else "sse-ide",
        "url": f"{'ws' if lock.websocket else 'http'}://127.0.0.1:{lock.port}",
        "ideName": lock.ide_name,
        "scope": "dynamic",
    }
    if lock.auth_token:
        server["authToken"] = lock.auth_token
    return server


def dynamic_servers(mcp_servers: Any) -> dict[str, Any]:
    """The dynamic MCP servers a session starts with, from its ``mcp_servers`` option (a map,
    or the path or text of a JSON config), as the CLI is told of them: in-process servers by
    name and type only."""
    if not mcp_servers:
        return {}
    if isinstance(mcp_servers, dict):
        return {name: ({k: v for k, v in config.items() if k != "instance"} if isinstance(config, dict) else config)
                for name, config in mcp_servers.items()}  # fmt: skip
    text = str(mcp_servers)
    try:
        data = json.loads(text) if text.lstrip().startswith("{") else json.loads(Path(text).read_text())
    except (OSError, ValueError):
        return {}
    servers = data.get("mcpServers", data) if isinstance(data, dict) else {}
    return dict(servers) if isinstance(servers, dict) else {}


def bound(servers: dict[str, Any], lock: IdeLock) -> dict[str, Any]:
    """``servers`` with the ``ide`` entry for ``lock`` (the others kept as they are)."""
    return {**{k: v for k, v in servers.items() if k != IDE_KEY}, IDE_KEY: ide_server(lock)}


def unbound(servers: dict[str, Any]) -> dict[str, Any]:
    """``servers`` without the ``ide`` entry."""
    return {k: v for k, v in servers.items() if k != IDE_KEY}


class NoIdeError(LookupError):
    """No running IDE was found to bind to (none has a live lockfile, or none on that port)."""


class IdeBindingRefused(ClaudeSDKError):
    """The CLI did not take the ``ide`` entry. Measured: 2.1.120 takes it (as the notes say of
    2.1.112); 2.1.330 answers ``Ignored: IDE transports are registered by the CLI itself, not
    mcp_set_servers``. The CLI's words are in the message; the other servers stay as they were."""


def choose(cwd: Any, env: dict[str, str] | None, port: int | None = None) -> IdeLock:
    """The IDE to bind: the one on ``port``, else the first of :func:`ide_lockfiles`."""
    locks = ide_lockfiles(cwd, env)
    if port is not None:
        locks = [lock for lock in locks if lock.port == port]
    if not locks:
        where = ide_dir(env)
        raise NoIdeError(f"no running IDE{'' if port is None else f' on port {port}'} has a lockfile in {where}")
    return locks[0]


__all__ = ["IdeBindingRefused", "IdeLock", "NoIdeError", "bound", "choose", "dynamic_servers", "ide_dir", "ide_lockfiles", "ide_server", "unbound"]
