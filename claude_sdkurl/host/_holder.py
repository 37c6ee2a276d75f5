"""Whose leases a session host holds, and how a restarted host knows which leases were its dead
predecessor's, so that it takes them over at once instead of waiting them out.

A host's conversations hold their leases under an owner name that says where the host serves:
``host:<machine name>:<machine id>:<socket's real path>:<pid>:<random>``. Beside the socket, in
the host's private directory, ``<socket>.holder`` (0600, written whole and renamed) records the
serving host's owner name, its process (pid, start time, boot) and the predecessors it had
proved gone. A host that starts holds the socket's lock, so the host recorded there is gone; it
still checks, before it takes anything over:

* the record is a JSON object whose owner names (its own and its predecessors') begin with this
  host's own ``host:<machine>:<id>:<path>:``: a name of another machine's host, another socket's,
  or a holder in a worker's process is never taken, whatever the record says;
* the recorded process is not running (the same pid with the same start time, this boot): a lock
  file deleted under a running host must not make a second host its heir;
* every CLI the predecessor started is stopped: each CLI's lease fence (a process of its own,
  see :func:`claude_sdkurl._engine.transport.process.fence_cli`) kills it the moment its holder
  dies and then exits; the new host waits until no fence of the predecessor's is left (at most
  ``wait`` seconds, the fences' own bound; past it nothing of the predecessor's is taken over).

A record that is missing, torn, or fails a check makes the host take nothing over (it logs why):
leases are then waited out as before. Leases of every other holder are untouched (the store's
``acquire(..., replaces=...)`` takes a lease from a listed owner only).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import time
from pathlib import Path
from typing import Any

from .._engine.log import get_logger
from .._engine.transport.process import fences_of

logger = get_logger("claude_sdkurl.host")

KEPT = 8  # predecessors a record names (each one proved gone by its successor)


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def identity(sock: Path) -> str:
    """What every owner name of a host serving at ``sock`` on this machine begins with."""
    machine = _read("/etc/machine-id") or _read("/var/lib/dbus/machine-id") or "-"
    return f"host:{socket.gethostname()}:{machine[:32]}:{os.path.realpath(sock)}:"


def start_time(pid: int) -> str | None:
    """The process's start time (clock ticks after boot, from ``/proc``), ``None`` if it is gone
    or ended (a zombie: its parent has not read its exit yet, it runs nothing)."""
    stat = _read(f"/proc/{pid}/stat")
    try:
        fields = stat.rsplit(")", 1)[1].split() if stat else []
        return fields[19] if fields and fields[0] != "Z" else None
    except IndexError:
        return None


def boot_id() -> str | None:
    return _read("/proc/sys/kernel/random/boot_id")


def record_path(sock: Path) -> Path:
    return sock.parent / f"{sock.name}.holder"


def succeed(sock: Path, wait: float) -> tuple[str, list[str]]:
    """Called by a host holding ``sock``'s lock: ``(its owner name, the owner names whose leases
    it takes over)``, after recording itself as the socket's holder (see the module doc)."""
    prefix = identity(sock)
    me = f"{prefix}{os.getpid()}:{secrets.token_hex(8)}"
    heirs = _predecessors(record_path(sock), prefix, wait)
    record = {"owner": me, "pid": os.getpid(), "start": start_time(os.getpid()), "boot": boot_id(), "predecessors": heirs[:KEPT]}
    where = record_path(sock)
    staged = where.with_name(f"{where.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(staged, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(record, f)
        os.replace(staged, where)
    except OSError as e:  # nothing recorded: this host's successor waits its leases out
        logger.warning("the host could not record itself at %s (%s): a host restarted after it waits out its leases", where, e)
    return me, heirs[:KEPT]


def _predecessors(where: Path, prefix: str, wait: float) -> list[str]:
    text = _read(str(where))
    if text is None or not os.path.isdir("/proc"):  # (without /proc: no fences, no proof that its CLIs are gone)
        return []
    try:
        old: Any = json.loads(text)
    except ValueError:
        logger.warning("the host record %s is not JSON: no lease is taken over", where)
        return []
    if not isinstance(old, dict) or not isinstance(old.get("owner"), str) or not isinstance(old.get("pid"), int):
        logger.warning("the host record %s is not a host's record: no lease is taken over", where)
        return []
    named = [old["owner"], *(p for p in old.get("predecessors") or [] if isinstance(p, str))]
    foreign = [n for n in named if not n.startswith(prefix) or n.count(":") != prefix.count(":") + 1]
    if foreign:
        logger.warning("the host record %s names holders that are not this socket's hosts (%s): no lease is taken over", where,
                       ", ".join(foreign))  # fmt: skip
        return []
    pid = old["pid"]
    same_boot = old.get("boot") is not None and old.get("boot") == boot_id()
    if same_boot and start_time(pid) is not None and start_time(pid) == old.get("start"):
        logger.warning("the host recorded at %s (pid %d) still runs: no lease is taken over", where, pid)
        return []
    if same_boot:  # its CLIs' fences stop them as it dies, then leave
        deadline = time.monotonic() + wait
        while fences_of(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        if fences_of(pid):
            logger.warning("CLIs of the host before this one (pid %d) are still fenced after %g s: its leases are waited out", pid, wait)
            return named[1:]  # (those before it were proved gone by it)
    return named
