"""A :class:`SessionStore` in Redis (redis-py: ``pip install 'claude-sdkurl[redis]'``).

Keys, under ``prefix`` (JSON-encoded key parts, so no project key or subpath can
collide with another):

* ``<prefix>:e:<key>``: a list, the transcript's entries as JSON text in append order;
* ``<prefix>:u:<key>``: a set of the ``uuid`` values already in it (an entry
  whose uuid is there is skipped, so a retried mirror batch lands once);
* ``<prefix>:m:<project>``: a hash, session id -> write time (ms, the server's clock);
* ``<prefix>:s:<project>``: a hash, session id -> folded summary (JSON);
* ``<prefix>:k:<project, session>``: a set of the session's subpaths.

An ``append`` is one optimistic transaction (``WATCH`` the session's write time
and summary, fold, ``MULTI``/``EXEC``; retried if another writer got there
first), so the summary never misses a batch. Many processes on many machines
may share the server.
"""

from __future__ import annotations

import json
from typing import Any

from ..sessions import fold_session_summary
from ..types import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
)
from ._common import ConnectedStore, entry_uuid

try:
    import redis
except ImportError as e:  # pragma: no cover - depends on the install
    raise ImportError("RedisSessionStore needs redis-py: pip install 'claude-sdkurl[redis]'") from e

# KEYS: entries list, uuid set. ARGV: uuid-or-"" and entry JSON, in pairs. Returns entries added.
_APPEND = """
local n = 0
for i = 1, #ARGV, 2 do
  local u = ARGV[i]
  if u == '' or redis.call('SADD', KEYS[2], u) == 1 then
    redis.call('RPUSH', KEYS[1], ARGV[i + 1])
    n = n + 1
  end
end
return n
"""


class RedisSessionStore(ConnectedStore):
    """Session transcripts in Redis.

    Args:
        url: a ``redis://`` URL, or a ``redis.Redis`` client (then ``close()`` leaves it open).
        prefix: the first part of every key this store writes.
    """

    def __init__(self, url: str | Any = "redis://127.0.0.1:6379/0", *, prefix: str = "claude-sessions") -> None:
        self._client: Any
        if isinstance(url, str):
            self._client = redis.Redis.from_url(url)
            self._own = True
        else:
            self._client = url
            self._own = False
        self.prefix = prefix
        self._append_script = self._client.register_script(_APPEND)

    def close(self) -> None:
        if self._own:
            self._client.close()

    def __repr__(self) -> str:
        return f"RedisSessionStore(prefix={self.prefix!r})"

    def _k(self, kind: str, *parts: str) -> str:
        return f"{self.prefix}:{kind}:{json.dumps(list(parts), separators=(',', ':'))}"

    def _stream_keys(self, key: SessionKey | SessionListSubkeysKey, subpath: str) -> tuple[str, str]:
        parts = (key["project_key"], key["session_id"], subpath)
        return self._k("e", *parts), self._k("u", *parts)

    # ------------------------------------------------------------------ SessionStore

    def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        if not entries:
            return
        pk, sid, sub = key["project_key"], key["session_id"], key.get("subpath") or ""
        entries_key, uuids_key = self._stream_keys(key, sub)
        mtimes_key, summaries_key, subkeys_key = self._k("m", pk), self._k("s", pk), self._k("k", pk, sid)
        args: list[str] = []
        for e in entries:
            args += [entry_uuid(e) or "", json.dumps(e, separators=(",", ":"))]
        while True:
            with self._client.pipeline() as pipe:
                try:
                    pipe.watch(mtimes_key, summaries_key)
                    seconds, micros = pipe.time()
                    now = int(seconds) * 1000 + int(micros) // 1000
                    field = sid if not sub else json.dumps([sid, sub])
                    last = pipe.hget(mtimes_key, field)
                    mtime = max(now, int(last) + 1) if last is not None else now
                    folded = None
                    if not sub:
                        raw = pipe.hget(summaries_key, sid)
                        prev: SessionSummaryEntry | None = None if raw is None else json.loads(raw)
                        folded = fold_session_summary(prev, key, entries)
                        folded["mtime"] = mtime
                    pipe.multi()
                    self._append_script(keys=[entries_key, uuids_key], args=args, client=pipe)
                    pipe.hset(mtimes_key, field, mtime)
                    if folded is not None:
                        pipe.hset(summaries_key, sid, json.dumps(folded))
                    else:
                        pipe.sadd(subkeys_key, sub)
                    pipe.execute()
                    return
                except redis.WatchError:
                    continue  # another writer of this project moved first: read again

    def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        entries_key, _ = self._stream_keys(key, key.get("subpath") or "")
        raw = self._client.lrange(entries_key, 0, -1)
        return [json.loads(r) for r in raw] if raw else None

    def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        mtimes = self._client.hgetall(self._k("m", project_key))
        out: list[SessionStoreListEntry] = []
        for field, mtime in mtimes.items():
            name = _text(field)
            if not name.startswith("["):  # subagent fields are [session, subpath]
                out.append({"session_id": name, "mtime": int(mtime)})
        return out

    def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        raw = self._client.hgetall(self._k("s", project_key))
        return [json.loads(v) for v in raw.values()]

    def delete(self, key: SessionKey) -> None:
        pk, sid, sub = key["project_key"], key["session_id"], key.get("subpath")
        mtimes_key, subkeys_key = self._k("m", pk), self._k("k", pk, sid)
        if sub:
            with self._client.pipeline() as pipe:
                pipe.delete(*self._stream_keys(key, sub))
                pipe.hdel(mtimes_key, json.dumps([sid, sub]))
                pipe.srem(subkeys_key, sub)
                pipe.execute()
            return
        subs = [_text(s) for s in self._client.smembers(subkeys_key)]
        with self._client.pipeline() as pipe:
            pipe.delete(*self._stream_keys(key, ""), subkeys_key)
            for s in subs:
                pipe.delete(*self._stream_keys(key, s))
            pipe.hdel(mtimes_key, sid, *[json.dumps([sid, s]) for s in subs])
            pipe.hdel(self._k("s", pk), sid)
            pipe.execute()

    def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        return sorted(_text(s) for s in self._client.smembers(self._k("k", key["project_key"], key["session_id"])))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


__all__ = ["RedisSessionStore"]
