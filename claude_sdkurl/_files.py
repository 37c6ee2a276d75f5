"""Replacing a file whole: the one way this package writes a file it keeps (a scorecard, a tape,
a ported source file, the CLI version cache)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def replace_whole(path: str | os.PathLike[str], data: str | bytes, *, mode: int = 0o600, suffix: str = ".tmp") -> None:
    """Write ``data`` to ``path`` whole or not at all: into a temporary file beside it (created
    0600), flushed to disk, given ``mode``, then renamed over it. A write cut short (a full disk,
    ``RLIMIT_FSIZE``) or any other failure removes the temporary file, leaves ``path`` as it
    was, and raises."""
    path = Path(path)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
