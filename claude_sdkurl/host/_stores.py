"""The stores a session host is given by URL (``--store``, ``--session-store``): one policy,
which URL opens which store. The part after ``#`` names the table (PostgreSQL) or the key prefix
(Redis), so that several deployments can share a database; the drivers are the stores' extras
(``claude-sdkurl[postgres]``, ``[redis]``), imported only when such a URL is given."""

from __future__ import annotations

from typing import Any


def _split(url: str) -> tuple[str, str | None]:
    where, hash_, name = url.partition("#")
    return where, (name if hash_ else None)


def conversation_store(url: str) -> Any:
    """The conversations' keys and leases at ``url``: ``postgresql://``/``postgres://``,
    ``redis://``/``rediss://``, or a SQLite file's path (returned as is: ``Conversations`` opens
    it). :class:`ValueError` for a URL of another kind."""
    where, name = _split(url)
    if where.startswith(("postgresql://", "postgres://")):
        from ..stores.postgres import PostgresConversationStore

        return PostgresConversationStore(where, table=name) if name else PostgresConversationStore(where)
    if where.startswith(("redis://", "rediss://")):
        from ..stores.redis import RedisConversationStore

        return RedisConversationStore(where, prefix=name) if name else RedisConversationStore(where)
    if "://" in where:
        raise ValueError(f"a conversation store is postgresql://, redis:// or a SQLite file, not {where.split('://')[0]}://")
    return url


def session_store(url: str) -> Any:
    """The transcripts' store at ``url``: ``postgresql://`` or ``redis://`` (see :func:`conversation_store`)."""
    where, name = _split(url)
    if where.startswith(("postgresql://", "postgres://")):
        from ..stores.postgres import PostgresSessionStore

        return PostgresSessionStore(where, table=name) if name else PostgresSessionStore(where)
    if where.startswith(("redis://", "rediss://")):
        from ..stores.redis import RedisSessionStore

        return RedisSessionStore(where, prefix=name) if name else RedisSessionStore(where)
    raise ValueError("a session store is postgresql://... or redis://... (the CLI's own files need no flag)")
