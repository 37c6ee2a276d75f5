"""What the stores with a connection (SQLite, PostgreSQL, Redis) share."""

from __future__ import annotations

from typing import Any

from typing_extensions import Self

from ..types import SessionStore


class ConnectedStore(SessionStore):
    """A store holding a connection: ``close()`` it, or use it as a context manager."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def entry_uuid(entry: Any) -> str | None:
    """An entry's ``uuid``, the key a store skips a repeated entry by (``None``: always kept)."""
    uuid = entry.get("uuid") if isinstance(entry, dict) else None
    return uuid if isinstance(uuid, str) and uuid else None
