"""The session helpers on a :class:`SessionStore`: list, read, rename, tag, delete, fork, import.

Plain functions (the official SDK's are ``async``); the store's methods may be
plain or ``async def``. Ported from claude-agent-sdk 0.2.187
(``_internal/sessions.py``, ``session_mutations.py``, ``session_import.py``;
MIT licence, Anthropic PBC), so a store gives the same answers through either
SDK (``tests/test_sessions_parity.py``).
"""

from __future__ import annotations

import json
import logging
import uuid as uuid_mod
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

from .._mirror import MAX_PENDING_BYTES, MAX_PENDING_ENTRIES
from .._sessionpaths import (
    _canonicalize_path,
    _parent_ids_from_agent_metadata,
    _read_agent_metadata_sidecar,
    _sanitize_path,
    _split_agent_metadata,
    _store_implements,
    _validate_uuid,
    call_store,
    project_key_for_directory,
)
from ..types import (
    ForkSessionResult,
    SDKSessionInfo,
    SessionKey,
    SessionMessage,
    SessionStore,
    SessionStoreEntry,
)
from ._disk import (
    _apply_sort_limit_offset,
    _entries_to_jsonl,
    _entries_to_session_messages,
    _entries_to_subagent_messages,
    _filter_transcript_entries,
    _jsonl_to_lite,
    _mtime_from_jsonl_tail,
    _parse_session_info_from_lite,
    _resolve_session_file_path,
)
from ._mutations import (
    _build_fork_lines,
    _derive_title_from_entries,
    _iso_now,
    _partition_fork_entries,
    tag_entry,
    title_entry,
)

logger = logging.getLogger("claude_sdkurl.sessions")

# Upper bound on concurrent ``store.load()`` calls issued by
# ``list_sessions_from_store``. Keeps large project listings from exhausting
# adapter connection pools or tripping backend rate limits.
_STORE_LIST_LOAD_CONCURRENCY = 16


def _load_store_entries_as_jsonl(
    store: SessionStore, session_id: str, directory: str | None
) -> str | None:
    """Load entries from a SessionStore and serialize to a JSONL string.

    Returns ``None`` if the session has no entries.
    """
    project_key = project_key_for_directory(directory)
    key: SessionKey = {"project_key": project_key, "session_id": session_id}
    entries = call_store(store.load, key)
    if not entries:
        return None
    return _entries_to_jsonl(entries)


def _derive_infos_via_load(
    session_store: SessionStore,
    listing: list[Any],
    directory: str | None,
    project_path: str,
) -> list[SDKSessionInfo]:
    """Derive ``SDKSessionInfo`` for each ``listing`` entry via per-session
    ``store.load()`` + lite-parse.

    Loads run concurrently with a fixed bound so large listings don't exhaust
    adapter connection pools or hit backend rate limits; adapter errors degrade
    that row to an empty summary instead of failing the whole list. Sidechain
    and no-summary sessions are dropped.
    """
    settled: list[str | None | Exception] = [None] * len(listing)

    def _load(i: int, sid: str) -> None:
        try:
            settled[i] = _load_store_entries_as_jsonl(session_store, sid, directory)
        except Exception as e:  # noqa: BLE001 - adapter is user code
            settled[i] = e

    if len(listing) == 1:
        _load(0, listing[0]["session_id"])
    elif listing:
        workers = min(_STORE_LIST_LOAD_CONCURRENCY, len(listing))
        with ThreadPoolExecutor(workers, thread_name_prefix="claude-sdkurl-store-load") as pool:
            list(pool.map(_load, range(len(listing)), [e["session_id"] for e in listing]))

    results: list[SDKSessionInfo] = []
    for entry, outcome in zip(listing, settled, strict=True):
        sid = entry["session_id"]
        mtime = entry["mtime"]
        if isinstance(outcome, BaseException):
            results.append(
                SDKSessionInfo(session_id=sid, summary="", last_modified=mtime)
            )
            continue
        if outcome is None:
            continue
        parsed = _parse_session_info_from_lite(
            sid, _jsonl_to_lite(outcome, mtime), project_path
        )
        if parsed is None:
            # Sidechain or no extractable summary — drop, matching the
            # filesystem path.
            continue
        parsed.last_modified = mtime
        results.append(parsed)
    return results


def list_sessions_from_store(
    session_store: SessionStore,
    directory: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[SDKSessionInfo]:
    """List sessions from a :class:`SessionStore`.

    Store-backed counterpart to :func:`list_sessions`. Loads each
    session's entries to derive a real summary via the same lite-parse used
    by the filesystem path, so disk and store paths produce identical
    results for the same transcript content.

    Args:
        session_store: The store to read from. Must implement
            :meth:`SessionStore.list_session_summaries` or
            :meth:`SessionStore.list_sessions` (or both).
        directory: Project directory used to compute the ``project_key``.
            Defaults to the current working directory.
        limit: Maximum number of sessions to return.
        offset: Number of sessions to skip from the start of the sorted
            result set.

    Returns:
        List of ``SDKSessionInfo`` sorted by ``last_modified`` descending.

    Raises:
        ValueError: If ``session_store`` implements neither
            :meth:`SessionStore.list_session_summaries` nor
            :meth:`SessionStore.list_sessions`.

    Note:
        ``include_worktrees`` is a filesystem concept and is not honored on
        the store path — the store operates on a single ``project_key``.

    Note:
        If the store implements ``list_session_summaries``, this is one batch
        summary call plus one cheap ``list_sessions()`` enumeration to
        gap-fill sessions missing a sidecar or whose sidecar is stale
        (``summary.mtime < list_sessions.mtime``) — zero per-session
        ``load()`` calls when sidecars are complete and fresh. Otherwise
        falls back to one ``store.load()`` per session (bounded at 16
        concurrent), which on remote backends with many or large sessions
        can be expensive (e.g., S3 egress, Postgres large-row reads).

        Gap-fill requires ``list_sessions``: if the store implements
        ``list_session_summaries`` but not ``list_sessions``, sessions
        without a sidecar cannot be discovered and will be absent from the
        result.
    """
    project_path = _canonicalize_path(str(directory) if directory is not None else ".")
    project_key = _sanitize_path(project_path)
    has_list_sessions = _store_implements(session_store, "list_sessions")

    # Fast path: if the store maintains incremental summaries, fetch them in
    # one call instead of N per-session load()s.
    if _store_implements(session_store, "list_session_summaries"):
        from ._summary import summary_entry_to_sdk_info

        try:
            summaries = call_store(session_store.list_session_summaries, project_key)
        except NotImplementedError:
            pass
        else:
            # Build a unified slot list. Fresh summaries (mtime >= the
            # session's current mtime from list_sessions) get their info up
            # front; sessions present in list_sessions() but missing OR with a
            # stale sidecar (summary.mtime < known mtime) get a placeholder
            # slot routed through the same gap-fill path so the fold is
            # recomputed from source entries.
            # Summary-backed sidechain/empty sessions are dropped here (free —
            # already determined) so they don't consume offset/limit positions,
            # matching the disk and slow-path filter-then-paginate semantics.
            if has_list_sessions:
                listing = list(call_store(session_store.list_sessions, project_key))
                known_mtimes = {e["session_id"]: e["mtime"] for e in listing}
            else:
                listing = []
                known_mtimes = {}
                logger.debug(
                    "list_session_summaries without list_sessions: gap-fill "
                    "skipped; sessions lacking a sidecar will be omitted"
                )

            slots: list[dict[str, Any]] = []
            fresh_summary_ids: set[str] = set()
            for s in summaries:
                sid = s["session_id"]
                if has_list_sessions:
                    known = known_mtimes.get(sid)
                    if known is None:
                        # Summary for a session list_sessions() no longer
                        # reports — drop it.
                        continue
                    if s["mtime"] < known:
                        # Stale sidecar — let gap-fill re-fold from source.
                        continue
                info = summary_entry_to_sdk_info(s, project_path)
                if info is None:
                    fresh_summary_ids.add(sid)
                    continue
                slots.append({"mtime": s["mtime"], "info": info})
                fresh_summary_ids.add(sid)
            if has_list_sessions:
                slots.extend(
                    {"mtime": e["mtime"], "session_id": e["session_id"], "info": None}
                    for e in listing
                    if e["session_id"] not in fresh_summary_ids
                )

            # Paginate BEFORE per-session load so gap-fill load() count is
            # bounded by page size, not total missing — 500 sessions lacking
            # sidecars with limit=10 issues at most 10 load()s, not 500.
            slots.sort(key=lambda sl: sl["mtime"], reverse=True)
            # Mirror _apply_sort_limit_offset's guards so negative/zero
            # offset and non-positive limit behave identically to the slow
            # and disk paths.
            page = slots[offset:] if offset > 0 else slots
            if limit is not None and limit > 0:
                page = page[:limit]

            to_fill = [sl for sl in page if sl["info"] is None]
            if to_fill:
                filled = _derive_infos_via_load(
                    session_store, to_fill, directory, project_path
                )
                by_sid = {f.session_id: f for f in filled}
                for sl in to_fill:
                    sl["info"] = by_sid.get(sl["session_id"])

            # Gap-fill placeholders that resolved to None (sidechain / no
            # extractable summary after load) are dropped here, AFTER
            # pagination — that case alone can short-page. Summary-backed
            # slots were already pre-filtered above, so a store with complete
            # and fresh sidecars never short-pages; a present-but-stale
            # sidecar is routed through gap-fill (same as a missing one) and
            # can short-page if load() yields no extractable summary.
            return [sl["info"] for sl in page if sl["info"] is not None]

    if not has_list_sessions:
        raise ValueError(
            "session_store implements neither list_session_summaries() nor "
            "list_sessions() -- cannot list sessions. Provide a store with at "
            "least one of those methods."
        )
    # Copy — store.list_sessions() may return a reference to internal state.
    listing = list(call_store(session_store.list_sessions, project_key))
    # Derive a real summary per session by loading its entries and reusing
    # the filesystem path's lite-parse. Filtering (sidechain/empty drop)
    # happens before pagination so ``limit``/``offset`` index the same
    # filtered set as the disk path.
    results = _derive_infos_via_load(
        session_store, listing, directory, project_path
    )
    return _apply_sort_limit_offset(results, limit, offset)


def get_session_info_from_store(
    session_store: SessionStore,
    session_id: str,
    directory: str | None = None,
) -> SDKSessionInfo | None:
    """Read metadata for a single session from a :class:`SessionStore`.

    Store-backed counterpart to :func:`get_session_info`.

    Args:
        session_store: The store to read from.
        session_id: UUID of the session to look up.
        directory: Project directory used to compute the ``project_key``.
            Defaults to the current working directory.

    Returns:
        ``SDKSessionInfo`` for the session, or ``None`` if the session is
        not found, the ``session_id`` is not a valid UUID, the session is
        a sidechain session, or it has no extractable summary.
    """
    if not _validate_uuid(session_id):
        return None
    jsonl = _load_store_entries_as_jsonl(session_store, session_id, directory)
    if jsonl is None:
        return None
    lite = _jsonl_to_lite(jsonl, _mtime_from_jsonl_tail(jsonl))
    project_path = _canonicalize_path(str(directory) if directory is not None else ".")
    return _parse_session_info_from_lite(session_id, lite, project_path)


def get_session_messages_from_store(
    session_store: SessionStore,
    session_id: str,
    directory: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[SessionMessage]:
    """Read a session's conversation messages from a :class:`SessionStore`.

    Store-backed counterpart to :func:`get_session_messages`. Feeds
    ``session_store.load()`` results directly into the chain builder — no
    JSONL round-trip.

    Args:
        session_store: The store to read from.
        session_id: UUID of the session to read.
        directory: Project directory used to compute the ``project_key``.
            Defaults to the current working directory.
        limit: Maximum number of messages to return.
        offset: Number of messages to skip from the start.

    Returns:
        List of ``SessionMessage`` objects in chronological order. Empty
        list if the session is not found or ``session_id`` is invalid.
    """
    if not _validate_uuid(session_id):
        return []
    project_key = project_key_for_directory(directory)
    key: SessionKey = {"project_key": project_key, "session_id": session_id}
    entries = call_store(session_store.load, key)
    if not entries:
        return []
    return _entries_to_session_messages(
        _filter_transcript_entries(entries), limit, offset
    )


def list_subagents_from_store(
    session_store: SessionStore,
    session_id: str,
    directory: str | None = None,
) -> list[str]:
    """List subagent IDs for a session from a :class:`SessionStore`.

    Store-backed counterpart to :func:`list_subagents`.

    Args:
        session_store: The store to read from. Must implement
            :meth:`SessionStore.list_subkeys`.
        session_id: UUID of the parent session.
        directory: Project directory used to compute the ``project_key``.
            Defaults to the current working directory.

    Returns:
        List of subagent ID strings. Empty list if ``session_id`` is
        invalid or the session has no subagents.

    Raises:
        ValueError: If ``session_store`` does not implement
            :meth:`SessionStore.list_subkeys`.
    """
    if not _validate_uuid(session_id):
        return []
    if not _store_implements(session_store, "list_subkeys"):
        raise ValueError(
            "session_store does not implement list_subkeys() -- cannot list "
            "subagents. Provide a store with a list_subkeys() method."
        )
    project_key = project_key_for_directory(directory)
    subkeys = call_store(session_store.list_subkeys, 
        {"project_key": project_key, "session_id": session_id}
    )
    seen: set[str] = set()
    ids: list[str] = []
    for subpath in subkeys:
        if not subpath.startswith("subagents/"):
            continue
        last = subpath.rsplit("/", 1)[-1]
        if last.startswith("agent-"):
            agent_id = last[len("agent-") :]
            if agent_id not in seen:
                seen.add(agent_id)
                ids.append(agent_id)
    return ids


def get_subagent_messages_from_store(
    session_store: SessionStore,
    session_id: str,
    agent_id: str,
    directory: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[SessionMessage]:
    """Read a subagent's conversation messages from a :class:`SessionStore`.

    Store-backed counterpart to :func:`get_subagent_messages`.
    Subagents may live at ``subagents/agent-<id>`` or nested under
    ``subagents/workflows/<runId>/agent-<id>``. Scans subkeys when the
    store implements :meth:`SessionStore.list_subkeys`; otherwise tries
    the direct path. ``parent_tool_use_id`` / ``parent_agent_id`` are taken
    from the subagent's ``agent_metadata`` entry in the store (``None`` if
    absent).

    Args:
        session_store: The store to read from.
        session_id: UUID of the parent session.
        agent_id: ID of the subagent.
        directory: Project directory used to compute the ``project_key``.
            Defaults to the current working directory.
        limit: Maximum number of messages to return.
        offset: Number of messages to skip from the start.

    Returns:
        List of ``SessionMessage`` objects in chronological order. Empty
        list if the session/subagent is not found.
    """
    if not _validate_uuid(session_id):
        return []
    if not agent_id:
        return []
    project_key = project_key_for_directory(directory)

    subpath = f"subagents/agent-{agent_id}"
    if _store_implements(session_store, "list_subkeys"):
        subkeys = call_store(session_store.list_subkeys, 
            {"project_key": project_key, "session_id": session_id}
        )
        target = f"agent-{agent_id}"
        match = next(
            (
                sk
                for sk in subkeys
                if sk.startswith("subagents/") and sk.rsplit("/", 1)[-1] == target
            ),
            None,
        )
        if match is None:
            return []
        subpath = match

    key: SessionKey = {
        "project_key": project_key,
        "session_id": session_id,
        "subpath": subpath,
    }
    entries = call_store(session_store.load, key)
    if not entries:
        return []

    # The synthetic agent_metadata entry (the store's copy of the .meta.json
    # sidecar) records which Agent tool_use spawned this subagent. Recover
    # the parent ids from it — last one wins, since the metadata is
    # rewritten on resume — then drop it: it is not a transcript line.
    meta_entry, transcript = _split_agent_metadata(entries)
    if not transcript:
        return []
    parent_tool_use_id, parent_agent_id = _parent_ids_from_agent_metadata(meta_entry)

    return _entries_to_subagent_messages(
        _filter_transcript_entries(transcript),
        limit,
        offset,
        parent_tool_use_id,
        parent_agent_id,
    )



def rename_session_via_store(
    session_store: SessionStore,
    session_id: str,
    title: str,
    directory: str | None = None,
) -> None:
    """Rename a session by appending a custom-title entry to a :class:`SessionStore`.

    Store-backed counterpart to :func:`rename_session`.

    Args:
        session_store: The store to write to.
        session_id: UUID of the session to rename.
        title: New session title. Leading/trailing whitespace is stripped.
            Must be non-empty after stripping.
        directory: Project directory used to compute the ``project_key``.
            Defaults to the current working directory.

    Raises:
        ValueError: If ``session_id`` is not a valid UUID, or if ``title``
            is empty/whitespace-only.
    """
    _append_metadata(session_store, title_entry(session_id, title), directory)


def tag_session_via_store(
    session_store: SessionStore,
    session_id: str,
    tag: str | None,
    directory: str | None = None,
) -> None:
    """Tag a session by appending a tag entry to a :class:`SessionStore`.

    Store-backed counterpart to :func:`tag_session`. Pass ``None`` to
    clear the tag. Tags are Unicode-sanitized before storing.

    Args:
        session_store: The store to write to.
        session_id: UUID of the session to tag.
        tag: Tag string, or ``None`` to clear.
        directory: Project directory used to compute the ``project_key``.
            Defaults to the current working directory.

    Raises:
        ValueError: If ``session_id`` is not a valid UUID, or if ``tag`` is
            empty/whitespace-only after sanitization.
    """
    _append_metadata(session_store, tag_entry(session_id, tag), directory)


def _append_metadata(session_store: SessionStore, entry: dict[str, Any], directory: str | None) -> None:
    """Append a metadata entry (title, tag) to its session in the store, with a uuid and a
    timestamp as the official SDK gives it (adapters may key on the uuid)."""
    key: SessionKey = {"project_key": project_key_for_directory(directory), "session_id": entry["sessionId"]}
    stamped = {**entry, "uuid": str(uuid_mod.uuid4()), "timestamp": _iso_now()}
    call_store(session_store.append, key, [cast(SessionStoreEntry, stamped)])


def delete_session_via_store(
    session_store: SessionStore,
    session_id: str,
    directory: str | None = None,
) -> None:
    """Delete a session from a :class:`SessionStore`.

    Store-backed counterpart to :func:`delete_session`. If the store
    does not implement :meth:`SessionStore.delete`, deletion is a no-op
    (appropriate for WORM/append-only backends — matches the
    :class:`SessionStore` contract).

    Whether subagent transcripts under the session are also removed depends
    on the store's ``delete({session_id})`` semantics —
    :class:`InMemorySessionStore` cascades; custom stores may not.

    Args:
        session_store: The store to delete from.
        session_id: UUID of the session to delete.
        directory: Project directory used to compute the ``project_key``.
            Defaults to the current working directory.

    Raises:
        ValueError: If ``session_id`` is not a valid UUID.
    """
    if not _validate_uuid(session_id):
        raise ValueError(f"Invalid session_id: {session_id}")
    if not _store_implements(session_store, "delete"):
        return
    project_key = project_key_for_directory(directory)
    key: SessionKey = {"project_key": project_key, "session_id": session_id}
    call_store(session_store.delete, key)


def fork_session_via_store(
    session_store: SessionStore,
    session_id: str,
    directory: str | None = None,
    up_to_message_id: str | None = None,
    title: str | None = None,
) -> ForkSessionResult:
    """Fork a session into a new branch with fresh UUIDs via a :class:`SessionStore`.

    Store-backed counterpart to :func:`fork_session`. Runs the fork
    transform directly over the objects returned by ``session_store.load()`` —
    no JSONL round-trip. A storage-layer copy (e.g. S3 CopyObject) is NOT
    sufficient: the transform remaps every UUID, rewrites ``sessionId`` on
    each entry, and stamps ``forkedFrom``, so the data must pass through
    this process once.

    Args:
        session_store: The store to read the source from and write the fork
            to.
        session_id: UUID of the source session to fork.
        directory: Project directory used to compute the ``project_key``.
            Defaults to the current working directory.
        up_to_message_id: Slice transcript up to this message UUID
            (inclusive). If omitted, copies the full transcript.
        title: Custom title for the fork. If omitted, derives from the
            original title + " (fork)".

    Returns:
        ``ForkSessionResult`` with the new session's UUID.

    Raises:
        ValueError: If ``session_id`` or ``up_to_message_id`` is not a
            valid UUID, or if the session has no messages to fork.
        FileNotFoundError: If the source session is not found in the store.
    """
    if not _validate_uuid(session_id):
        raise ValueError(f"Invalid session_id: {session_id}")
    if up_to_message_id and not _validate_uuid(up_to_message_id):
        raise ValueError(f"Invalid up_to_message_id: {up_to_message_id}")
    project_key = project_key_for_directory(directory)
    src_key: SessionKey = {"project_key": project_key, "session_id": session_id}
    loaded = call_store(session_store.load, src_key)
    if not loaded:
        raise FileNotFoundError(f"Session {session_id} not found")

    raw: list[Any] = list(loaded)
    transcript, content_replacements = _partition_fork_entries(raw, session_id)

    forked_session_id, lines = _build_fork_lines(
        transcript,
        content_replacements,
        session_id,
        up_to_message_id,
        title,
        lambda: _derive_title_from_entries(raw),
    )

    dst_key: SessionKey = {"project_key": project_key, "session_id": forked_session_id}
    # _build_fork_lines emits compact JSON strings; re-parse to objects so the
    # store receives the same shape it would from the mirror path. All entries
    # satisfy the SessionStoreEntry structural supertype ({type: str, ...}).
    call_store(session_store.append, dst_key, [json.loads(line) for line in lines])
    return ForkSessionResult(session_id=forked_session_id)



def import_session_to_store(
    session_id: str,
    store: SessionStore,
    *,
    directory: str | None = None,
    include_subagents: bool = True,
    batch_size: int = MAX_PENDING_ENTRIES,
) -> None:
    """Replay a local session transcript into a :class:`SessionStore`.

    Streams the on-disk JSONL line-by-line and calls ``store.append(key, batch)``
    every ``batch_size`` entries (or 1 MiB of line bytes, whichever comes
    first). Useful for migrating existing local sessions to a remote store, or
    for catching a store up after a :class:`MirrorErrorMessage` indicated a
    live-mirror gap. Adapters should treat ``entry["uuid"]`` as an idempotency
    key so re-import is duplicate-safe.

    The destination ``project_key`` is the name of the on-disk project
    directory the session file was found in — the same key
    :func:`file_path_to_session_key` (and thus ``TranscriptMirrorBatcher``)
    would have produced for the same file — so an imported session is
    indistinguishable from a live-mirrored one and resumable via
    ``query(options=ClaudeAgentOptions(session_store=store, resume=session_id))``
    from the original ``cwd``.

    Args:
        session_id: UUID of the session to import.
        store: Destination :class:`SessionStore`.
        directory: Project directory path (same semantics as
            :func:`list_sessions`). When omitted, all project directories are
            searched for the session file.
        include_subagents: If ``True`` (default), also import subagent
            transcripts under ``<sessionId>/subagents/**`` and their
            ``.meta.json`` sidecars.
        batch_size: Maximum entries per ``store.append()`` call. Default 500.

    Raises:
        ValueError: If ``session_id`` is not a valid UUID.
        FileNotFoundError: If the session JSONL cannot be found on disk.
    """
    if not _validate_uuid(session_id):
        raise ValueError(f"Invalid session_id: {session_id}")

    resolved = _resolve_session_file_path(session_id, directory)
    if resolved is None:
        raise FileNotFoundError(f"Session {session_id} not found")

    # Key under the on-disk project directory name — matches
    # file_path_to_session_key() / TranscriptMirrorBatcher even when the
    # resolver's search (directory=None) or worktree fallback found the file
    # somewhere other than `directory`.
    project_key = resolved.parent.name
    if batch_size <= 0:
        batch_size = MAX_PENDING_ENTRIES

    main_key: SessionKey = {"project_key": project_key, "session_id": session_id}
    _append_jsonl_file_in_batches(resolved, main_key, store, batch_size)

    if not include_subagents:
        return

    # Subagent transcripts live at <projectDir>/<sessionId>/subagents/**.
    session_dir = resolved.with_suffix("")
    subagents_dir = session_dir / "subagents"
    for file_path in _collect_jsonl_files(subagents_dir):
        # subpath is the path relative to session_dir, '/'-joined, sans .jsonl —
        # e.g. subagents/agent-abc or subagents/workflows/run-1/agent-def.
        # Matches file_path_to_session_key() so list_subkeys() and
        # get_subagent_messages_from_store() round-trip.
        rel_parts = list(file_path.relative_to(session_dir).parts)
        rel_parts[-1] = rel_parts[-1][: -len(".jsonl")]
        sub_key: SessionKey = {
            "project_key": project_key,
            "session_id": session_id,
            "subpath": "/".join(rel_parts),
        }
        _append_jsonl_file_in_batches(file_path, sub_key, store, batch_size)

        # The on-disk .jsonl does NOT contain agent_metadata entries — those
        # are only sent to live mirrors and persisted in the .meta.json
        # sidecar. Import the sidecar so materialize_resume_session() can
        # recreate it and resumed subagents keep their agentType/worktreePath.
        # A missing, corrupt, or non-object sidecar is treated as absent (the
        # transcript is still imported); other read errors propagate.
        meta = _read_agent_metadata_sidecar(file_path)
        if meta is not None:
            # Synthetic discriminator last so a stray "type" key in the
            # CLI-owned sidecar can never shadow it.
            meta_entry = cast(SessionStoreEntry, {**meta, "type": "agent_metadata"})
            call_store(store.append, sub_key, [meta_entry])


def _append_jsonl_file_in_batches(
    file_path: Path,
    key: SessionKey,
    store: SessionStore,
    batch_size: int,
) -> None:
    """Stream-read a JSONL file line-by-line, parsing each line and flushing to
    ``store.append()`` in batches of ``batch_size`` entries (or
    ``MAX_PENDING_BYTES`` of line text, whichever comes first). Skips blank
    lines, and (ours; the official import stops with ``JSONDecodeError``) lines
    that are not a JSON object, with a logged warning."""
    batch: list[SessionStoreEntry] = []
    nbytes = 0
    corrupt = 0
    with file_path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                entry = None
            if not isinstance(entry, dict):
                corrupt += 1
                continue
            batch.append(cast(SessionStoreEntry, entry))
            nbytes += len(line)
            if len(batch) >= batch_size or nbytes >= MAX_PENDING_BYTES:
                call_store(store.append, key, batch)
                batch = []
                nbytes = 0
    if batch:
        call_store(store.append, key, batch)
    if corrupt:
        logger.warning("import_session_to_store: skipped %d corrupt line(s) of %s", corrupt, file_path)


def _collect_jsonl_files(base_dir: Path) -> Iterator[Path]:
    """Recursively yield all ``*.jsonl`` file paths under ``base_dir``.

    Yields nothing if ``base_dir`` does not exist. Sorted per directory so
    import order is deterministic across platforms.
    """
    try:
        dirents = sorted(base_dir.iterdir(), key=lambda p: p.name)
    except OSError:
        return
    for entry in dirents:
        if entry.is_dir():
            yield from _collect_jsonl_files(entry)
        elif entry.is_file() and entry.name.endswith(".jsonl"):
            yield entry

