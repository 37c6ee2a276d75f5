"""A :class:`SessionStore` in Redis (redis-py: ``pip install 'claude-sdkurl[redis]'``), and
:class:`RedisConversationStore`, where ``Conversations`` keep their keys and leases.

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
from collections.abc import Collection
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
from .conversations import ConversationStore

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


# KEYS: the lease (its value the holder, expiring), the wanted mark, the conversation's hash.
# ARGV: the owner, the lease's milliseconds, then the owners it replaces (known to be gone).
_ACQUIRE = """
local holder = redis.call('GET', KEYS[1])
local sid = redis.call('HGET', KEYS[3], 'session_id')
local gone = false
for i = 3, #ARGV do
  if holder == ARGV[i] then gone = true end
end
if not holder or holder == ARGV[1] or gone then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  redis.call('DEL', KEYS[2])
  return {1, sid}
end
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
end
return {0, sid}
"""
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, redis.call('EXISTS', KEYS[2])}
end
return {0, 0}
"""
_RECORD = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('HSET', KEYS[2], 'session_id', ARGV[2])
  return 1
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
end
return 0
"""


class RedisConversationStore(ConversationStore):
    """Conversations' keys and leases in Redis, for processes on many machines (see
    :mod:`claude_sdkurl.stores.conversations`). Per conversation, under ``prefix`` and the
    JSON of (namespace, key): a hash with its session id, the lease (a key whose value is the
    holder, expiring after ``ttl`` on the server's clock) and the wanted mark (expiring too, so a
    waiter that went away leaves none behind). Each change is one Lua script: atomic.

    Args:
        url: a ``redis://`` URL, or a ``redis.Redis`` client (then ``close()`` leaves it open).
        prefix: the first part of every key this store writes.
    """

    def __init__(self, url: str | Any = "redis://127.0.0.1:6379/0", *, prefix: str = "claude-conversations") -> None:
        self._client: Any = redis.Redis.from_url(url) if isinstance(url, str) else url
        self._own = isinstance(url, str)
        self.prefix = prefix
        self._acquire, self._renew = self._client.register_script(_ACQUIRE), self._client.register_script(_RENEW)
        self._record, self._release = self._client.register_script(_RECORD), self._client.register_script(_RELEASE)

    def __repr__(self) -> str:
        return f"RedisConversationStore(prefix={self.prefix!r})"

    def close(self) -> None:
        if self._own:
            self._client.close()

    def _keys(self, namespace: str, key: str) -> tuple[str, str, str]:
        name = json.dumps([namespace, key], separators=(",", ":"))
        return f"{self.prefix}:lease:{name}", f"{self.prefix}:wanted:{name}", f"{self.prefix}:c:{name}"

    def acquire(self, namespace: str, key: str, owner: str, ttl: float, replaces: Collection[str] = ()) -> tuple[bool, str | None]:
        answer = self._acquire(keys=list(self._keys(namespace, key)), args=[owner, max(1, int(ttl * 1000)), *map(str, replaces)])
        session_id = _text(answer[1]) if len(answer) > 1 and answer[1] else None  # (a nil ends a Lua table)
        return bool(answer[0]), session_id

    def renew(self, namespace: str, owner: str, keys: list[str], ttl: float) -> tuple[set[str], set[str]]:
        held: set[str] = set()
        wanted: set[str] = set()
        for key in keys:
            lease, mark, _ = self._keys(namespace, key)
            ours, asked = self._renew(keys=[lease, mark], args=[owner, max(1, int(ttl * 1000))])
            if ours:
                held.add(key)
                if asked:
                    wanted.add(key)
        return held, wanted

    def record(self, namespace: str, key: str, owner: str, session_id: str) -> bool:
        lease, _, data = self._keys(namespace, key)
        return bool(self._record(keys=[lease, data], args=[owner, session_id]))

    def release(self, namespace: str, key: str, owner: str) -> None:
        lease, _, _ = self._keys(namespace, key)
        self._release(keys=[lease], args=[owner])

    def session_id(self, namespace: str, key: str) -> str | None:
        _, _, data = self._keys(namespace, key)
        value = self._client.hget(data, "session_id")
        return _text(value) if value else None


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


__all__ = ["RedisConversationStore", "RedisSessionStore"]
