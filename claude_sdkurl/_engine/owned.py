"""Folders a process owns while it lives, and the sweep of those whose owner died (a program
killed outright never removes its own): the spares' parking folders and the throw-away config
directories of resumed sessions (which hold a copy of the caller's login).

Each such folder is made as ``<new prefix>XXXX``, gets an ``.owner`` file locked (``flock``: the
kernel lets go of the lock when the process ends, however it ends) and only then is renamed to
``<prefix>XXXX``, so every folder with the prefix has a locked owner from the moment it can be
seen. The sweep removes a ``<prefix>`` folder whose lock it can take, and a half-made one older
than a minute; a folder without an ``.owner`` (made another way) is left alone.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time
from pathlib import Path

OWNER = ".owner"
ABANDONED_AFTER = 60.0  # seconds after which a half-made folder whose maker is gone is removed


def make_owned(parent: Path, prefix: str, new_prefix: str) -> tuple[Path, int]:
    """A new folder ``parent/<prefix>XXXX``, 0700, owned by this process: ``(its path, the owner
    lock's descriptor)``; closing the descriptor (after removing the folder) lets go of it."""
    new = Path(tempfile.mkdtemp(prefix=new_prefix, dir=parent))
    try:
        fd = os.open(new / OWNER, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600)
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, str(os.getpid()).encode())
        owned = parent / (prefix + new.name[len(new_prefix):])
        os.rename(new, owned)
    except BaseException:
        os.close(fd)
        shutil.rmtree(new, ignore_errors=True)
        raise
    return owned, fd


def remove_abandoned(parent: Path, prefix: str, new_prefix: str) -> int:
    """Remove the folders under ``parent`` whose owning process is gone (see the module doc);
    folders of living processes, this one or another, are left alone. How many were removed."""
    removed = 0
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return 0
    for entry in entries:
        if entry.name.startswith(new_prefix):
            try:
                stale = time.time() - entry.stat(follow_symlinks=False).st_mtime > ABANDONED_AFTER
            except OSError:
                continue
            if not stale:
                continue
        elif not entry.name.startswith(prefix):
            continue
        if not entry.is_dir(follow_symlinks=False):
            continue
        try:
            fd = os.open(os.path.join(entry.path, OWNER), os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except FileNotFoundError:
            if not entry.name.startswith(new_prefix):
                continue  # not one of ours as we make them now: left as it is
            fd = None
        except OSError:
            continue
        try:
            if fd is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue  # its owner is alive
            shutil.rmtree(entry.path, ignore_errors=True)
            removed += 1
        finally:
            if fd is not None:
                os.close(fd)
    return removed
