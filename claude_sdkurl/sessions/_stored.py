"""Sessions in a :class:`~claude_sdkurl.types.SessionStore`: the disk functions' twins,
and the import of a local session into a store.

Plain functions (the official SDK's are ``async``); the store's methods are
called through :mod:`claude_sdkurl._engine.storecall`, so they may be plain or ``async def``. Each
answers as its disk twin does for the same transcript: entries are put into the
shape of a file (:func:`._text.as_jsonl`) for a listing row, and fed to
:mod:`._chain` as they are for messages. The store key's ``project_key`` is
:func:`project_key_for_directory` of ``directory`` (default: the current one).

Listing a project: with ``list_session_summaries()`` (a store that folds
:func:`fold_session_summary` on append), one call gives the rows; a session
``list_sessions()`` reports without a record, or with an older one than its
mtime, is loaded instead, only if it falls on the requested page. Without it,
every session is loaded, at most 16 at a time; a session whose load fails is
listed with an empty summary rather than failing the listing.
"""

from __future__ import annotations

import json
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

from ..types import ForkSessionResult, SDKSessionInfo, SessionKey, SessionMessage, SessionStore, SessionStoreEntry
from . import _chain, _edits, _text
from .._engine import paths as _paths
from .._engine import storecall as _storecall
from ._local import newest_first
from ._summary import summary_to_info

logger = logging.getLogger("claude_sdkurl.sessions")

PARALLEL_LOADS = 16  # store.load() calls at once while listing
IMPORT_BATCH = 500  # entries per append when importing (the mirror's batch size too)
IMPORT_BATCH_BYTES = 1 << 20


def _key(directory: str | None, session_id: str, subpath: str | None = None) -> SessionKey:
    key: SessionKey = {"project_key": _paths.project_key_for_directory(directory), "session_id": session_id}
    if subpath is not None:
        key["subpath"] = subpath
    return key


def _load(store: SessionStore, key: SessionKey) -> Any:
    return _storecall.call(store.load, key)


# ---------------------------------------------------------------- listing


def _rows_by_loading(
    store: SessionStore, listed: list[tuple[str, int]], directory: str | None, project_path: str
) -> list[SDKSessionInfo]:
    """Rows for ``(session id, mtime)`` pairs, each from a load of the session."""

    def row(sid: str, mtime: int) -> SDKSessionInfo | None:
        try:
            entries = _load(store, _key(directory, sid))
        except Exception:  # the store is user code: this row says nothing, the others stand
            return SDKSessionInfo(session_id=sid, summary="", last_modified=mtime)
        if not entries:
            return None
        return _text.info_from_ends(sid, _text.ends_of_entries(entries, mtime), project_path)

    if len(listed) <= 1:
        found = [row(*pair) for pair in listed]
    else:
        with ThreadPoolExecutor(min(PARALLEL_LOADS, len(listed)), thread_name_prefix="claude-sdkurl-store-load") as pool:
            found = list(pool.map(lambda pair: row(*pair), listed))
    return [r for r in found if r is not None]


def _listing(store: SessionStore, project_key: str) -> list[tuple[str, int]]:
    return [(e["session_id"], e["mtime"]) for e in _storecall.call(store.list_sessions, project_key)]


def list_sessions_from_store(
    session_store: SessionStore,
    directory: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[SDKSessionInfo]:
    """The sessions of a project in ``session_store``, newest first (see the module doc for
    what is loaded). ``ValueError`` when the store has neither ``list_session_summaries()``
    nor ``list_sessions()``; ``include_worktrees`` has no meaning here."""
    project_path = _paths.real_path(str(directory) if directory is not None else ".")
    project_key = _paths.project_dir_name(project_path)
    can_list = _storecall.implements(session_store, "list_sessions")
    if _storecall.implements(session_store, "list_session_summaries"):
        try:
            records = _storecall.call(session_store.list_session_summaries, project_key)
        except NotImplementedError:
            pass
        else:
            return _page_from_records(session_store, records, can_list, directory, project_path, limit, offset)
    if not can_list:
        raise ValueError(
            "session_store implements neither list_session_summaries() nor "
            "list_sessions() -- cannot list sessions. Provide a store with at "
            "least one of those methods."
        )
    return newest_first(_rows_by_loading(session_store, _listing(session_store, project_key), directory, project_path), limit, offset)


def _page_from_records(
    store: SessionStore,
    records: list[Any],
    can_list: bool,
    directory: str | None,
    project_path: str,
    limit: int | None,
    offset: int,
) -> list[SDKSessionInfo]:
    """A page of rows from summary records, filling in (by loading) the sessions that have
    no record or a stale one. Without ``list_sessions()`` those cannot be known: only
    recorded sessions are listed."""
    listed = _listing(store, _paths.project_dir_name(project_path)) if can_list else None
    if listed is None:
        logger.debug("list_session_summaries without list_sessions: sessions with no summary record are not listed")
    current = dict(listed or [])
    slots: list[tuple[int, str, SDKSessionInfo | None]] = []  # (mtime, session id, row or None: load it)
    recorded: set[str] = set()
    for record in records:
        sid = record["session_id"]
        if listed is not None and (sid not in current or record["mtime"] < current[sid]):
            continue  # gone from the store, or stale: loaded below if listed
        recorded.add(sid)
        row = summary_to_info(record, project_path)
        if row is not None:
            slots.append((record["mtime"], sid, row))
    slots += [(mtime, sid, None) for sid, mtime in listed or [] if sid not in recorded]
    slots.sort(key=lambda slot: slot[0], reverse=True)
    if offset > 0:
        slots = slots[offset:]
    if limit is not None and limit > 0:
        slots = slots[:limit]
    missing = [(sid, mtime) for mtime, sid, row in slots if row is None]
    loaded = {r.session_id: r for r in _rows_by_loading(store, missing, directory, project_path)} if missing else {}
    rows = [row if row is not None else loaded.get(sid) for _, sid, row in slots]
    return [r for r in rows if r is not None]


def get_session_info_from_store(
    session_store: SessionStore,
    session_id: str,
    directory: str | None = None,
) -> SDKSessionInfo | None:
    """One session's listing row from the store (its mtime: the last entry's timestamp),
    ``None`` when it is missing, invalid, a sidechain or has nothing to show."""
    if not _paths.is_session_id(session_id):
        return None
    entries = _load(session_store, _key(directory, session_id))
    if not entries:
        return None
    project_path = _paths.real_path(str(directory) if directory is not None else ".")
    return _text.info_from_ends(session_id, _text.ends_of_entries(entries), project_path)


# ---------------------------------------------------------------- reading


def get_session_messages_from_store(
    session_store: SessionStore,
    session_id: str,
    directory: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[SessionMessage]:
    """A session's conversation from the store, as :func:`get_session_messages` reads it
    from disk."""
    if not _paths.is_session_id(session_id):
        return []
    entries = _load(session_store, _key(directory, session_id))
    if not entries:
        return []
    return _chain.session_messages([e for e in entries if _chain.counts(e)], limit, offset)


def list_subagents_from_store(
    session_store: SessionStore,
    session_id: str,
    directory: str | None = None,
) -> list[str]:
    """The subagent ids under a session in the store (its ``subagents/.../agent-<id>``
    subkeys, each id once). ``ValueError`` for a store without ``list_subkeys()``."""
    if not _paths.is_session_id(session_id):
        return []
    if not _storecall.implements(session_store, "list_subkeys"):
        raise ValueError(
            "session_store does not implement list_subkeys() -- cannot list "
            "subagents. Provide a store with a list_subkeys() method."
        )
    ids: dict[str, None] = {}
    for subpath in _storecall.call(session_store.list_subkeys, _key(directory, session_id)):
        last = subpath.rpartition("/")[2]
        if subpath.startswith("subagents/") and last.startswith("agent-"):
            ids.setdefault(last[len("agent-") :])
    return list(ids)


def get_subagent_messages_from_store(
    session_store: SessionStore,
    session_id: str,
    agent_id: str,
    directory: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[SessionMessage]:
    """A subagent's conversation from the store. Its subkey is found through
    ``list_subkeys()`` when the store has it (a workflow's subagents are nested), else taken
    as ``subagents/agent-<id>``; the parent ids come from its ``agent_metadata`` entry."""
    if not _paths.is_session_id(session_id) or not agent_id:
        return []
    wanted = f"agent-{agent_id}"
    subpath: str | None = f"subagents/{wanted}"
    if _storecall.implements(session_store, "list_subkeys"):
        subkeys = _storecall.call(session_store.list_subkeys, _key(directory, session_id))
        subpath = next((s for s in subkeys if s.startswith("subagents/") and s.rpartition("/")[2] == wanted), None)
        if subpath is None:
            return []
    entries = _load(session_store, _key(directory, session_id, subpath))
    meta, lines = _paths.split_metadata(entries or [])
    if not lines:
        return []
    tool_use_id, parent_agent = _paths.spawned_by(meta)
    return _chain.subagent_messages([e for e in lines if _chain.counts(e)], limit, offset, tool_use_id, parent_agent)


# ---------------------------------------------------------------- changing


def _append_stamped(store: SessionStore, directory: str | None, entry: dict[str, Any]) -> None:
    """Append a title or tag entry with a fresh uuid and timestamp (stores key on the uuid)."""
    stamped = {**entry, "uuid": str(uuid.uuid4()), "timestamp": _edits.now_iso()}
    _storecall.call(store.append, _key(directory, entry["sessionId"]), [cast(SessionStoreEntry, stamped)])


def rename_session_via_store(
    session_store: SessionStore,
    session_id: str,
    title: str,
    directory: str | None = None,
) -> None:
    """:func:`rename_session` on a store: a ``custom-title`` entry appended."""
    _append_stamped(session_store, directory, _edits.title_entry(session_id, title))


def tag_session_via_store(
    session_store: SessionStore,
    session_id: str,
    tag: str | None,
    directory: str | None = None,
) -> None:
    """:func:`tag_session` on a store: a ``tag`` entry appended (``None`` clears)."""
    _append_stamped(session_store, directory, _edits.tag_entry(session_id, tag))


def delete_session_via_store(
    session_store: SessionStore,
    session_id: str,
    directory: str | None = None,
) -> None:
    """Delete a session from the store; nothing happens with a store that has no
    ``delete()`` (an append-only one). Whether its subagents go too is the store's rule
    (:class:`InMemorySessionStore` and ours remove them)."""
    _edits.check_session_id(session_id)
    if _storecall.implements(session_store, "delete"):
        _storecall.call(session_store.delete, _key(directory, session_id))


def fork_session_via_store(
    session_store: SessionStore,
    session_id: str,
    directory: str | None = None,
    up_to_message_id: str | None = None,
    title: str | None = None,
) -> ForkSessionResult:
    """:func:`fork_session` on a store: the source is loaded, the fork appended under a new
    session id. Every entry is rewritten (uuids, session id, ``forkedFrom``), so a copy in
    the storage layer would not do. ``FileNotFoundError`` when the source is not stored."""
    _edits.check_session_id(session_id)
    if up_to_message_id:
        _edits.check_session_id(up_to_message_id, "up_to_message_id")
    entries = _load(session_store, _key(directory, session_id))
    if not entries:
        raise FileNotFoundError(f"Session {session_id} not found")
    transcript, replacements = _edits.fork_parts(list(entries), session_id)
    fork_id, forked = _edits.fork_entries(
        transcript, replacements, session_id, up_to_message_id, title, lambda: _source_title(list(entries))
    )
    copies = [json.loads(json.dumps(e)) for e in forked]  # nothing shared with the source's objects
    _storecall.call(session_store.append, _key(directory, fork_id), copies)
    return ForkSessionResult(session_id=fork_id)


def _source_title(entries: list[Any]) -> str | None:
    """The title a fork derives from stored entries: the last ``customTitle``, else the last
    ``aiTitle``, else the first prompt (found as the head scan finds it)."""
    for name in ("customTitle", "aiTitle"):
        values = [e[name] for e in entries if isinstance(e, dict) and isinstance(e.get(name), str) and e[name]]
        if values:
            return str(values[-1])
    return _text.first_prompt("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in entries)) or None


# ---------------------------------------------------------------- import


def import_session_to_store(
    session_id: str,
    store: SessionStore,
    *,
    directory: str | None = None,
    include_subagents: bool = True,
    batch_size: int = IMPORT_BATCH,
) -> None:
    """Copy a local session (and, unless ``include_subagents=False``, its subagents with
    their sidecars as ``agent_metadata`` entries) into ``store``, ``batch_size`` entries
    (or 1 MiB) per ``append()``. The key is the one the live mirror uses (the project
    directory the file was found in), so the copy resumes as a mirrored session would.
    A line that is not a JSON object is skipped with a warning (the official import stops
    there). Stores that skip known uuids make a second import harmless.
    ``ValueError`` for an invalid id, ``FileNotFoundError`` when it is not on disk."""
    _edits.check_session_id(session_id)
    transcript = _paths.find_transcript(session_id, directory)
    if transcript is None:
        raise FileNotFoundError(f"Session {session_id} not found")
    size = batch_size if batch_size > 0 else IMPORT_BATCH
    main: SessionKey = {"project_key": transcript.parent.name, "session_id": session_id}
    _copy_file(transcript, main, store, size)
    if not include_subagents:
        return
    session_dir = transcript.with_suffix("")
    for path in _jsonl_files(session_dir / "subagents"):
        *dirs, name = path.relative_to(session_dir).parts
        key: SessionKey = {**main, "subpath": "/".join([*dirs, name[: -len(".jsonl")]])}
        _copy_file(path, key, store, size)
        meta = _paths.read_sidecar(path)
        if meta is not None:  # "type" last: the sidecar's own keys cannot hide it
            _storecall.call(store.append, key, [cast(SessionStoreEntry, {**meta, "type": "agent_metadata"})])


def _copy_file(path: Path, key: SessionKey, store: SessionStore, size: int) -> None:
    batch: list[SessionStoreEntry] = []
    held = 0
    bad = 0
    with path.open(encoding="utf-8", errors="replace") as lines:
        for raw in lines:
            raw = raw.rstrip("\n")
            if not raw:
                continue
            try:
                entry = json.loads(raw)
            except ValueError:
                entry = None
            if not isinstance(entry, dict):
                bad += 1
                continue
            batch.append(cast(SessionStoreEntry, entry))
            held += len(raw)
            if len(batch) >= size or held >= IMPORT_BATCH_BYTES:
                _storecall.call(store.append, key, batch)
                batch, held = [], 0
    if batch:
        _storecall.call(store.append, key, batch)
    if bad:
        logger.warning("import_session_to_store: skipped %d corrupt line(s) of %s", bad, path)


def _jsonl_files(root: Path) -> list[Path]:
    """Every ``*.jsonl`` under ``root``, by name, directory by directory."""
    try:
        children = sorted(root.iterdir(), key=lambda p: p.name)
    except OSError:
        return []
    found: list[Path] = []
    for child in children:
        if child.is_dir():
            found += _jsonl_files(child)
        elif child.is_file() and child.name.endswith(".jsonl"):
            found.append(child)
    return found
