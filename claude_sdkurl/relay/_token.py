"""A relay token kept in a file, so that a restarted program keeps its page's link (and a tab
left open reconnects by itself): read when the file is there, made when it is not."""

from __future__ import annotations

import os
import secrets
import stat
import tempfile
from pathlib import Path

from ._errors import RelayError

MIN_LENGTH = 16


def token_from_file(path: str | os.PathLike[str]) -> str:
    """The token in ``path``, or a new random one written there (0600, made under a temporary
    name and linked into place: two programs starting at once agree on one). Raises
    :class:`RelayError` for a file that is a link or not a regular file, belongs to another
    user, can be read or written by others, or holds no usable token."""
    where = Path(path)
    for _ in range(2):
        try:
            fd = os.open(where, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            try:
                made = _make(where)
            except OSError as e:
                raise RelayError(f"the relay's token file {where} cannot be made: {e.strerror or e}") from e
            if made is not None:
                return made
            continue  # another program made it first: read it
        except OSError as e:
            raise RelayError(f"the relay's token file {where} cannot be read (a link is refused): {e.strerror or e}") from e
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise RelayError(f"the relay's token file {where} is not a regular file")
            if info.st_uid != os.geteuid():
                raise RelayError(f"the relay's token file {where} belongs to another user")
            if info.st_mode & 0o077:
                raise RelayError(f"the relay's token file {where} can be read or written by others (chmod 600 it)")
            text = os.read(fd, 4096).decode("utf-8", "replace").strip()
        finally:
            os.close(fd)
        if len(text) < MIN_LENGTH or any(c.isspace() or not c.isprintable() for c in text):
            raise RelayError(f"the relay's token file {where} holds no token of {MIN_LENGTH} characters or more")
        return text
    raise RelayError(f"the relay's token file {where} kept changing")  # pragma: no cover - made and removed twice over


def _make(where: Path) -> str | None:
    """Write a new token to ``where`` if nothing is there (``None``: something is now)."""
    token = secrets.token_urlsafe(24)
    fd, temporary = tempfile.mkstemp(prefix=f".{where.name}.", dir=where.parent)  # (0600)
    try:
        with os.fdopen(fd, "w") as out:
            out.write(token + "\n")
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(temporary, where)  # in place whole, or not at all; never over another's
        except FileExistsError:
            return None
        return token
    finally:
        os.unlink(temporary)
