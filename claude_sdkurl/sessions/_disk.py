"""Sessions on local disk: list them and read their messages (synchronous, as in the official SDK).

Ported from claude-agent-sdk 0.2.187 ``_internal/sessions.py`` (MIT licence,
Anthropic PBC): the listing reads only a file's head and tail, as the CLI and
the official SDK do, and the chain rebuilding follows the same rules, so both
SDKs give equal answers on the same directory (``tests/test_sessions_parity.py``
runs them side by side on transcripts written by the real CLIs).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from .._sessionpaths import (
    MAX_SANITIZED_LENGTH,
    _canonicalize_path,
    _find_project_dir,
    _get_projects_dir,
    _get_worktree_paths,
    _parent_ids_from_agent_metadata,
    _read_agent_metadata_sidecar,
    _sanitize_path,
    _validate_uuid,
)
from ..types import SDKSessionInfo, SessionMessage

logger = logging.getLogger("claude_sdkurl.sessions")

# Size of the head/tail buffer for lite metadata reads.
LITE_READ_BUF_SIZE = 65536


_SKIP_FIRST_PROMPT_PATTERN = re.compile(
    r"^(?:<local-command-stdout>|<session-start-hook>|<tick>|<goal>|"
    r"\[Request interrupted by user[^\]]*\]|"
    r"\s*<ide_opened_file>[\s\S]*</ide_opened_file>\s*$|"
    r"\s*<ide_selection>[\s\S]*</ide_selection>\s*$)"
)

_COMMAND_NAME_RE = re.compile(r"<command-name>(.*?)</command-name>")


# ---------------------------------------------------------------------------
# JSON string field extraction — no full parse, works on truncated lines
# ---------------------------------------------------------------------------


def _unescape_json_string(raw: str) -> str:
    """Unescape a JSON string value extracted as raw text."""
    if "\\" not in raw:
        return raw
    try:
        result = json.loads(f'"{raw}"')
        if isinstance(result, str):
            return result
        return raw
    except (json.JSONDecodeError, ValueError):
        return raw


def _extract_json_string_field(text: str, key: str) -> str | None:
    """Extracts a simple JSON string field value without full parsing.

    Looks for "key":"value" or "key": "value" patterns. Returns the first
    match, or None if not found.
    """
    patterns = [f'"{key}":"', f'"{key}": "']
    for pattern in patterns:
        idx = text.find(pattern)
        if idx < 0:
            continue

        value_start = idx + len(pattern)
        end = _string_end(text, value_start)
        if end is not None:
            return _unescape_json_string(text[value_start:end])
    return None


def _string_end(text: str, i: int) -> int | None:
    """Where the JSON string whose body starts at ``i`` ends (its closing quote), or ``None``
    when ``text`` stops first (a truncated head or tail)."""
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i
        i += 1
    return None


def _extract_last_json_string_field(text: str, key: str) -> str | None:
    """Like _extract_json_string_field but finds the LAST occurrence."""
    patterns = [f'"{key}":"', f'"{key}": "']
    last_value: str | None = None
    for pattern in patterns:
        search_from = 0
        while True:
            idx = text.find(pattern, search_from)
            if idx < 0:
                break

            value_start = idx + len(pattern)
            end = _string_end(text, value_start)
            if end is None:
                break
            last_value = _unescape_json_string(text[value_start:end])
            search_from = end + 1
    return last_value


# ---------------------------------------------------------------------------
# First prompt extraction from head chunk
# ---------------------------------------------------------------------------


def _entry_text_blocks(entry: dict[str, Any]) -> list[str]:
    """The text strings of an entry's message content (a string, or its ``text`` blocks)."""
    message = entry.get("message")
    if not isinstance(message, dict):
        return []
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        block["text"]
        for block in content
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    ]


def _prompt_in(entry: dict[str, Any]) -> tuple[str | None, str | None]:
    """The first meaningful prompt text of a user entry (flattened, at most 200 characters),
    and the first slash-command name met before it: the rules of the CLI's first-prompt
    extraction, shared by the head scan and the store summary fold."""
    command = None
    for raw in _entry_text_blocks(entry):
        result = raw.replace("\n", " ").strip()
        if not result:
            continue
        cmd_match = _COMMAND_NAME_RE.search(result)
        if cmd_match:
            command = command or cmd_match.group(1)
            continue
        if _SKIP_FIRST_PROMPT_PATTERN.match(result):
            continue
        if len(result) > 200:
            result = result[:200].rstrip() + "\u2026"
        return result, command
    return None, command


def _extract_first_prompt_from_head(head: str) -> str:
    """Extracts the first meaningful user prompt from a JSONL head chunk.

    Skips tool_result messages, isMeta, isCompactSummary, command-name
    messages, and auto-generated patterns. Truncates to 200 chars.
    """
    start = 0
    command_fallback = ""
    head_len = len(head)

    while start < head_len:
        newline_idx = head.find("\n", start)
        if newline_idx >= 0:
            line = head[start:newline_idx]
            start = newline_idx + 1
        else:
            line = head[start:]
            start = head_len

        if '"type":"user"' not in line and '"type": "user"' not in line:
            continue
        if '"tool_result"' in line:
            continue
        if '"isMeta":true' in line or '"isMeta": true' in line:
            continue
        if '"isCompactSummary":true' in line or '"isCompactSummary": true' in line:
            continue

        try:
            entry = json.loads(line)
        except (json.JSONDecodeError, ValueError):
            continue

        if not isinstance(entry, dict) or entry.get("type") != "user":
            continue

        if not isinstance(entry.get("message"), dict):
            continue

        prompt, command = _prompt_in(entry)
        if command and not command_fallback:
            command_fallback = command  # a slash command: only if no real prompt comes
        if prompt:
            return prompt

    if command_fallback:
        return command_fallback
    return ""


# ---------------------------------------------------------------------------
# File I/O — read head and tail of a file
# ---------------------------------------------------------------------------


class _LiteSessionFile:
    """Result of reading a session file's head, tail, mtime and size."""

    __slots__ = ("mtime", "size", "head", "tail")

    def __init__(self, mtime: int, size: int, head: str, tail: str) -> None:
        self.mtime = mtime
        self.size = size
        self.head = head
        self.tail = tail


def _read_session_lite(file_path: Path) -> _LiteSessionFile | None:
    """Opens a session file, stats it, and reads head + tail.

    Returns None on any error or if file is empty.
    """
    try:
        with file_path.open("rb") as f:
            stat = os.fstat(f.fileno())
            size = stat.st_size
            mtime = int(stat.st_mtime * 1000)

            head_bytes = f.read(LITE_READ_BUF_SIZE)
            if not head_bytes:
                return None

            head = head_bytes.decode("utf-8", errors="replace")

            tail_offset = max(0, size - LITE_READ_BUF_SIZE)
            if tail_offset == 0:
                tail = head
            else:
                f.seek(tail_offset)
                tail_bytes = f.read(LITE_READ_BUF_SIZE)
                tail = tail_bytes.decode("utf-8", errors="replace")

            return _LiteSessionFile(mtime=mtime, size=size, head=head, tail=tail)
    except OSError:
        return None


# ---------------------------------------------------------------------------
# Field extraction — shared by list_sessions and get_session_info
# ---------------------------------------------------------------------------


def _parse_session_info_from_lite(
    session_id: str,
    lite: _LiteSessionFile,
    project_path: str | None = None,
) -> SDKSessionInfo | None:
    """Parses SDKSessionInfo fields from a lite session read (head/tail/stat).

    Returns None for sidechain sessions or metadata-only sessions with no
    extractable summary.

    Shared by list_sessions and get_session_info.
    """
    head, tail, mtime, size = lite.head, lite.tail, lite.mtime, lite.size

    # Check first line for sidechain sessions
    first_newline = head.find("\n")
    first_line = head[:first_newline] if first_newline >= 0 else head
    if '"isSidechain":true' in first_line or '"isSidechain": true' in first_line:
        return None

    # User-set title (customTitle) wins over AI-generated title (aiTitle).
    # Head fallback covers short sessions where the title entry may not be in tail.
    custom_title = (
        _extract_last_json_string_field(tail, "customTitle")
        or _extract_last_json_string_field(head, "customTitle")
        or _extract_last_json_string_field(tail, "aiTitle")
        or _extract_last_json_string_field(head, "aiTitle")
        or None
    )
    first_prompt = _extract_first_prompt_from_head(head) or None
    # lastPrompt tail entry shows what the user was most recently doing.
    summary = (
        custom_title
        or _extract_last_json_string_field(tail, "lastPrompt")
        or _extract_last_json_string_field(tail, "summary")
        or first_prompt
    )

    # Skip metadata-only sessions (no title, no summary, no prompt)
    if not summary:
        return None

    git_branch = (
        _extract_last_json_string_field(tail, "gitBranch")
        or _extract_json_string_field(head, "gitBranch")
        or None
    )
    session_cwd = _extract_json_string_field(head, "cwd") or project_path or None
    # Scope tag extraction to {"type":"tag"} lines — a bare tail scan for
    # "tag" would match tool_use inputs (git tag, Docker tags, cloud resource
    # tags).
    tag_line = next(
        (ln for ln in reversed(tail.split("\n")) if ln.startswith('{"type":"tag"')),
        None,
    )
    tag = (
        (_extract_last_json_string_field(tag_line, "tag") or None) if tag_line else None
    )

    # created_at from the first ISO timestamp found in the head (epoch ms).
    # More reliable than stat().birthtime which is unsupported on some
    # filesystems. Scans the whole head rather than only first_line because
    # the first record may be a metadata-only entry (e.g. permission-mode)
    # with no timestamp field; the first user/assistant record that follows
    # does carry one.
    created_at: int | None = None
    first_timestamp = _extract_json_string_field(head, "timestamp")
    if first_timestamp:
        try:
            # Python 3.10's fromisoformat doesn't support trailing 'Z'
            ts = (
                first_timestamp.replace("Z", "+00:00")
                if first_timestamp.endswith("Z")
                else first_timestamp
            )
            created_at = int(datetime.fromisoformat(ts).timestamp() * 1000)
        except ValueError:
            pass

    return SDKSessionInfo(
        session_id=session_id,
        summary=summary,
        last_modified=mtime,
        file_size=size,
        custom_title=custom_title,
        first_prompt=first_prompt,
        git_branch=git_branch,
        cwd=session_cwd,
        tag=tag,
        created_at=created_at,
    )


# ---------------------------------------------------------------------------
# Core implementation
# ---------------------------------------------------------------------------


def _read_sessions_from_dir(
    project_dir: Path, project_path: str | None = None
) -> list[SDKSessionInfo]:
    """Reads session files from a single project directory.

    Each file gets a stat + head/tail read. Filters out sidechain sessions
    and metadata-only sessions (no title/summary/prompt).
    """
    try:
        entries = list(project_dir.iterdir())
    except OSError:
        return []

    results: list[SDKSessionInfo] = []

    for entry in entries:
        name = entry.name
        if not name.endswith(".jsonl"):
            continue
        session_id = _validate_uuid(name[:-6])
        if not session_id:
            continue

        lite = _read_session_lite(entry)
        if lite is None:
            continue

        info = _parse_session_info_from_lite(session_id, lite, project_path)
        if info is not None:
            results.append(info)

    return results


def _deduplicate_by_session_id(
    sessions: list[SDKSessionInfo],
) -> list[SDKSessionInfo]:
    """Deduplicates by session_id, keeping the newest last_modified."""
    by_id: dict[str, SDKSessionInfo] = {}
    for s in sessions:
        existing = by_id.get(s.session_id)
        if existing is None or s.last_modified > existing.last_modified:
            by_id[s.session_id] = s
    return list(by_id.values())


def _apply_sort_limit_offset(
    sessions: list[SDKSessionInfo],
    limit: int | None,
    offset: int = 0,
) -> list[SDKSessionInfo]:
    """Sorts sessions by last_modified descending and applies offset + limit."""
    sessions.sort(key=lambda s: s.last_modified, reverse=True)
    if offset > 0:
        sessions = sessions[offset:]
    if limit is not None and limit > 0:
        sessions = sessions[:limit]
    return sessions


def _list_sessions_for_project(
    directory: str,
    limit: int | None,
    offset: int,
    include_worktrees: bool,
) -> list[SDKSessionInfo]:
    """Lists sessions for a specific project directory (and its worktrees)."""
    canonical_dir = _canonicalize_path(directory)

    if include_worktrees:
        try:
            worktree_paths = _get_worktree_paths(canonical_dir)
        except Exception:
            worktree_paths = []
    else:
        worktree_paths = []

    # No worktrees (or git not available / scanning disabled) —
    # just scan the single project dir
    if len(worktree_paths) <= 1:
        project_dir = _find_project_dir(canonical_dir)
        if project_dir is None:
            return []
        sessions = _read_sessions_from_dir(project_dir, canonical_dir)
        return _apply_sort_limit_offset(sessions, limit, offset)

    # Worktree-aware scanning: find all project dirs matching any worktree
    projects_dir = _get_projects_dir()
    case_insensitive = sys.platform == "win32"

    # Sort worktree paths by sanitized prefix length (longest first) so
    # more specific matches take priority over shorter ones
    indexed = []
    for wt in worktree_paths:
        sanitized = _sanitize_path(wt)
        prefix = sanitized.lower() if case_insensitive else sanitized
        indexed.append((wt, prefix))
    indexed.sort(key=lambda x: len(x[1]), reverse=True)

    try:
        all_dirents = [e for e in projects_dir.iterdir() if e.is_dir()]
    except OSError:
        # Fall back to single project dir
        project_dir = _find_project_dir(canonical_dir)
        if project_dir is None:
            return _apply_sort_limit_offset([], limit, offset)
        sessions = _read_sessions_from_dir(project_dir, canonical_dir)
        return _apply_sort_limit_offset(sessions, limit, offset)

    all_sessions: list[SDKSessionInfo] = []
    seen_dirs: set[str] = set()

    # Always include the user's actual directory (handles subdirectories
    # like /repo/packages/my-app that won't match worktree root prefixes)
    canonical_project_dir = _find_project_dir(canonical_dir)
    if canonical_project_dir is not None:
        dir_base = canonical_project_dir.name
        seen_dirs.add(dir_base.lower() if case_insensitive else dir_base)
        sessions = _read_sessions_from_dir(canonical_project_dir, canonical_dir)
        all_sessions.extend(sessions)

    for entry in all_dirents:
        dir_name = entry.name.lower() if case_insensitive else entry.name
        if dir_name in seen_dirs:
            continue

        for wt_path, prefix in indexed:
            # Only use startswith for truncated paths (>MAX_SANITIZED_LENGTH)
            # where a hash suffix follows. For short paths, require exact match
            # to avoid /root/project matching /root/project-foo.
            is_match = dir_name == prefix or (
                len(prefix) >= MAX_SANITIZED_LENGTH
                and dir_name.startswith(prefix + "-")
            )
            if is_match:
                seen_dirs.add(dir_name)
                sessions = _read_sessions_from_dir(entry, wt_path)
                all_sessions.extend(sessions)
                break

    deduped = _deduplicate_by_session_id(all_sessions)
    return _apply_sort_limit_offset(deduped, limit, offset)


def _list_all_sessions(limit: int | None, offset: int) -> list[SDKSessionInfo]:
    """Lists sessions across all project directories."""
    projects_dir = _get_projects_dir()

    try:
        project_dirs = [e for e in projects_dir.iterdir() if e.is_dir()]
    except OSError:
        return []

    all_sessions: list[SDKSessionInfo] = []
    for project_dir in project_dirs:
        all_sessions.extend(_read_sessions_from_dir(project_dir))

    deduped = _deduplicate_by_session_id(all_sessions)
    return _apply_sort_limit_offset(deduped, limit, offset)


def list_sessions(
    directory: str | None = None,
    limit: int | None = None,
    offset: int = 0,
    include_worktrees: bool = True,
) -> list[SDKSessionInfo]:
    """Lists sessions with metadata extracted from stat + head/tail reads.

    When ``directory`` is provided, returns sessions for that project
    directory and its git worktrees. When omitted, returns sessions
    across all projects.

    Use ``limit`` and ``offset`` for pagination.

    Args:
        directory: Directory to list sessions for. When provided, returns
            sessions for this project directory (and optionally its git
            worktrees). When omitted, returns sessions across all projects.
        limit: Maximum number of sessions to return.
        offset: Number of sessions to skip from the start of the sorted
            result set. Use with ``limit`` for pagination. Defaults to 0.
        include_worktrees: When ``directory`` is provided and the directory
            is inside a git repository, include sessions from all git
            worktree paths. Defaults to ``True``.

    Returns:
        List of ``SDKSessionInfo`` sorted by ``last_modified`` descending.

    See Also:
        :func:`list_sessions_from_store` for the :class:`SessionStore`-backed
        variant (a plain function here).

    Example:
        List sessions for a specific project::

            sessions = list_sessions(directory="/path/to/project")

        Paginate::

            page1 = list_sessions(limit=50)
            page2 = list_sessions(limit=50, offset=50)

        List sessions without scanning git worktrees::

            sessions = list_sessions(
                directory="/path/to/project",
                include_worktrees=False,
            )
    """
    if directory:
        return _list_sessions_for_project(directory, limit, offset, include_worktrees)
    return _list_all_sessions(limit, offset)


# ---------------------------------------------------------------------------
# get_session_info — single-session metadata lookup
# ---------------------------------------------------------------------------


def _project_dirs(directory: str | None) -> Iterator[tuple[Path, str | None]]:
    """Where a session may be, in the order every lookup tries them (ours: the official SDK
    repeats this search in five places).

    With ``directory``: its project directory (exact, or by prefix for long
    paths), then those of its git worktrees (``git worktree list`` runs only if
    the first did not do); each with the project path it stands for. Without:
    every project directory, with ``None``.
    """
    if directory:
        canonical = _canonicalize_path(directory)
        project_dir = _find_project_dir(canonical)
        if project_dir is not None:
            yield project_dir, canonical
        # Worktree fallback: sessions may live under a different worktree root.
        try:
            worktree_paths = _get_worktree_paths(canonical)
        except Exception:
            worktree_paths = []
        for wt in worktree_paths:
            if wt == canonical:
                continue  # already tried above
            wt_project_dir = _find_project_dir(wt)
            if wt_project_dir is not None:
                yield wt_project_dir, wt
        return
    try:
        dirents = [e for e in _get_projects_dir().iterdir() if e.is_dir()]
    except OSError:
        return
    for entry in dirents:
        yield entry, None


def get_session_info(
    session_id: str,
    directory: str | None = None,
) -> SDKSessionInfo | None:
    """Reads metadata for a single session by ID.

    Wraps ``_read_session_lite`` for one file — no O(n) directory scan.
    Directory resolution matches ``get_session_messages``: ``directory`` is
    the project path; when omitted, all project directories are searched for
    the session file.

    Args:
        session_id: UUID of the session to look up.
        directory: Project directory path (same semantics as
            ``list_sessions(directory=...)``). When omitted, all project
            directories are searched for the session file.

    Returns:
        ``SDKSessionInfo`` for the session, or ``None`` if the session file
        is not found, is a sidechain session, or has no extractable summary.

    See Also:
        :func:`get_session_info_from_store` for the
        :class:`SessionStore`-backed variant.

    Example:
        Look up a session in a specific project::

            info = get_session_info(
                "550e8400-e29b-41d4-a716-446655440000",
                directory="/path/to/project",
            )
            if info:
                print(info.summary)

        Search all projects for a session::

            info = get_session_info("550e8400-e29b-41d4-a716-446655440000")
    """
    uuid = _validate_uuid(session_id)
    if not uuid:
        return None
    file_name = f"{uuid}.jsonl"
    for project_dir, project_path in _project_dirs(directory):
        lite = _read_session_lite(project_dir / file_name)
        if lite is not None:
            return _parse_session_info_from_lite(uuid, lite, project_path)
    return None


# ---------------------------------------------------------------------------
# get_session_messages — full transcript reconstruction
# ---------------------------------------------------------------------------

# Transcript entry types that carry uuid + parentUuid chain links.
_TRANSCRIPT_ENTRY_TYPES = frozenset(
    {"user", "assistant", "progress", "system", "attachment"}
)

# Internal type for parsed JSONL transcript entries — mirrors the TS
# TranscriptEntry type but as a loose dict (fields: type, uuid, parentUuid,
# sessionId, message, isSidechain, isMeta, isCompactSummary, teamName).
_TranscriptEntry = dict[str, Any]


def _try_read_session_file(project_dir: Path, file_name: str) -> str | None:
    """Tries to read a session JSONL file from a project directory."""
    try:
        return (project_dir / file_name).read_text(encoding="utf-8")
    except OSError:
        return None


def _read_session_file(session_id: str, directory: str | None) -> str | None:
    """Finds and reads the session JSONL file.

    If directory is provided, looks in that project directory and its git
    worktrees (with prefix-fallback for Bun/Node hash mismatches on long
    paths). Otherwise, searches all project directories.

    Returns the file content, or None if not found.
    """
    file_name = f"{session_id}.jsonl"
    for project_dir, _ in _project_dirs(directory):
        content = _try_read_session_file(project_dir, file_name)
        if content:
            return content
    return None


def _parse_transcript_entries(content: str) -> list[_TranscriptEntry]:
    """Parses JSONL content into transcript entries.

    Only keeps entries that have a uuid and are transcript message types
    (user/assistant/progress/system/attachment). Skips corrupt lines, with a
    logged warning (ours) unless it is the last line without its newline: the
    CLI may be writing it right now.
    """
    corrupt = 0
    entries: list[_TranscriptEntry] = []
    start = 0
    length = len(content)

    while start < length:
        end = content.find("\n", start)
        if end == -1:
            end = length

        line = content[start:end].strip()
        start = end + 1
        if not line:
            continue

        try:
            entry = json.loads(line)
        except (json.JSONDecodeError, ValueError):
            corrupt += end < length
            continue

        if not isinstance(entry, dict):
            corrupt += 1
            continue
        entry_type = entry.get("type")
        if entry_type in _TRANSCRIPT_ENTRY_TYPES and isinstance(entry.get("uuid"), str):
            entries.append(entry)

    if corrupt:
        logger.warning("skipped %d corrupt line(s) in a session transcript", corrupt)
    return entries


def _build_conversation_chain(
    entries: list[_TranscriptEntry],
) -> list[_TranscriptEntry]:
    """Builds the conversation chain by finding the leaf and walking parentUuid.

    Returns messages in chronological order (root -> leaf). Tool calls and
    tool results that the walk skipped because the turn ran its tools in
    parallel are put back by ``_recover_orphaned_parallel_tool_results``.

    Note: logicalParentUuid (set on compact_boundary entries) is intentionally
    NOT followed. This matches VS Code IDE behavior — post-compaction, the
    isCompactSummary message replaces earlier messages, so following logical
    parents would duplicate content.
    """
    if not entries:
        return []

    # Index by uuid for O(1) parent lookup
    by_uuid: dict[str, _TranscriptEntry] = {}
    for entry in entries:
        by_uuid[entry["uuid"]] = entry

    # Build index of entry positions (file order) for tie-breaking
    entry_index: dict[str, int] = {}
    for i, entry in enumerate(entries):
        entry_index[entry["uuid"]] = i

    # Find terminal messages (no children point to them via parentUuid)
    parent_uuids: set[str] = set()
    for entry in entries:
        parent = entry.get("parentUuid")
        if parent:
            parent_uuids.add(parent)

    terminals = [e for e in entries if e["uuid"] not in parent_uuids]

    # From each terminal, walk back to find the nearest user/assistant leaf
    leaves: list[_TranscriptEntry] = []
    for terminal in terminals:
        walk_cur: _TranscriptEntry | None = terminal
        walk_seen: set[str] = set()
        while walk_cur is not None:
            uid = walk_cur["uuid"]
            if uid in walk_seen:
                break
            walk_seen.add(uid)
            if walk_cur.get("type") in ("user", "assistant"):
                leaves.append(walk_cur)
                break
            parent = walk_cur.get("parentUuid")
            walk_cur = by_uuid.get(parent) if parent else None

    if not leaves:
        return []

    # Pick the leaf from the main chain (not sidechain/team/meta), preferring
    # the highest position in the entries array (most recent in file)
    main_leaves = [
        leaf
        for leaf in leaves
        if not leaf.get("isSidechain")
        and not leaf.get("teamName")
        and not leaf.get("isMeta")
    ]

    def _pick_best(candidates: list[_TranscriptEntry]) -> _TranscriptEntry:
        best = candidates[0]
        best_idx = entry_index.get(best["uuid"], -1)
        for cur in candidates[1:]:
            cur_idx = entry_index.get(cur["uuid"], -1)
            if cur_idx > best_idx:
                best = cur
                best_idx = cur_idx
        return best

    leaf = _pick_best(main_leaves) if main_leaves else _pick_best(leaves)

    chain, chain_seen = _chain_to(leaf, by_uuid)
    return _recover_orphaned_parallel_tool_results(by_uuid, chain, chain_seen)


def _chain_to(
    leaf: _TranscriptEntry, by_uuid: dict[str, _TranscriptEntry]
) -> tuple[list[_TranscriptEntry], set[str]]:
    """The entries from the root to ``leaf`` along ``parentUuid`` (a cycle ends the walk),
    and the set of their uuids."""
    chain: list[_TranscriptEntry] = []
    seen: set[str] = set()
    current: _TranscriptEntry | None = leaf
    while current is not None:
        uid = current["uuid"]
        if uid in seen:
            break
        seen.add(uid)
        chain.append(current)
        parent = current.get("parentUuid")
        current = by_uuid.get(parent) if parent else None
    chain.reverse()
    return chain, seen


def _assistant_message_id(entry: _TranscriptEntry) -> str | None:
    """Returns the API ``message.id`` of an assistant entry, if it has one."""
    if entry.get("type") != "assistant":
        return None
    message = entry.get("message")
    if not isinstance(message, dict):
        return None
    message_id = message.get("id")
    return message_id if isinstance(message_id, str) and message_id else None


def _content_block_ids(
    entry: _TranscriptEntry, block_type: str, id_field: str
) -> list[str]:
    """Returns ``id_field`` of each ``block_type`` content block in an entry."""
    message = entry.get("message")
    if not isinstance(message, dict):
        return []
    content = message.get("content")
    if not isinstance(content, list):
        return []
    ids: list[str] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == block_type:
            block_id = block.get(id_field)
            if isinstance(block_id, str):
                ids.append(block_id)
    return ids


def _is_tool_result_entry(entry: _TranscriptEntry) -> bool:
    """Returns True for a user entry with a parent that carries a tool_result."""
    if entry.get("type") != "user":
        return False
    parent = entry.get("parentUuid")
    if not isinstance(parent, str) or not parent:
        return False
    message = entry.get("message")
    if not isinstance(message, dict):
        return False
    content = message.get("content")
    if not isinstance(content, list):
        return False
    return any(
        isinstance(block, dict) and block.get("type") == "tool_result"
        for block in content
    )


def _same_writer(a: _TranscriptEntry, b: _TranscriptEntry) -> bool:
    """Returns True if two entries were written by the same (sub)agent."""
    return bool(a.get("isSidechain")) == bool(b.get("isSidechain")) and a.get(
        "agentId"
    ) == b.get("agentId")


def _timestamp_sort_key(entry: _TranscriptEntry) -> str:
    timestamp = entry.get("timestamp")
    return timestamp if isinstance(timestamp, str) else ""


def _recover_orphaned_parallel_tool_results(
    by_uuid: dict[str, _TranscriptEntry],
    chain: list[_TranscriptEntry],
    seen: set[str],
) -> list[_TranscriptEntry]:
    """Puts back the tool calls and results a parallel turn left off the chain.

    The CLI writes one assistant entry per content block, so a response with
    N parallel tool calls is N assistant entries that share ``message.id``
    and are chained one after another. Each tool_result entry's
    ``parentUuid`` is its own call's assistant entry, so the results fan out
    from different parents and the transcript forks. The ``parentUuid`` walk
    follows only the branch the next turn continued from: it keeps one
    result, and drops every call written after the one that result answers.

    For each response on the chain, this collects its assistant entries and
    their tool results that the walk did not reach, and inserts them right
    after the response's last entry on the chain, so the response stays in
    one piece and every result follows its call. Mirrors the TypeScript
    SDK's ``getSessionMessages``.

    ``seen`` is the set of uuids on ``chain``; recovered uuids are added to it.
    """
    chain_assistants = [e for e in chain if e.get("type") == "assistant"]
    if not chain_assistants:
        return chain

    # Anchor = the last on-chain entry of each response. chain_assistants is
    # in chain order, so later entries overwrite earlier ones.
    anchor_by_message_id: dict[str, _TranscriptEntry] = {}
    for entry in chain_assistants:
        message_id = _assistant_message_id(entry)
        if message_id:
            anchor_by_message_id[message_id] = entry
    if not anchor_by_message_id:
        return chain

    # Group every assistant entry by response, and record which entry made
    # each tool call. A tool_use id claimed by two different responses is
    # ambiguous (None) and is never used to place a result.
    siblings_by_message_id: dict[str, list[_TranscriptEntry]] = {}
    call_owner: dict[str, _TranscriptEntry | None] = {}
    tool_result_entries: list[_TranscriptEntry] = []
    for entry in by_uuid.values():
        message_id = _assistant_message_id(entry)
        if message_id:
            siblings_by_message_id.setdefault(message_id, []).append(entry)
            for call_id in _content_block_ids(entry, "tool_use", "id"):
                if call_id not in call_owner:
                    call_owner[call_id] = entry
                    continue
                owner = call_owner[call_id]
                same_response = (
                    owner is not None and _assistant_message_id(owner) == message_id
                )
                call_owner[call_id] = entry if same_response else None
        elif _is_tool_result_entry(entry):
            tool_result_entries.append(entry)

    # Index each tool result under the assistant entries it may belong to:
    # its parent, its sourceToolAssistantUUID, and the owner of each call it
    # answers. The last two only count when written by the same agent.
    results_by_assistant: dict[str, list[_TranscriptEntry]] = {}
    for result in tool_result_entries:
        results_by_assistant.setdefault(result["parentUuid"], []).append(result)
        source = result.get("sourceToolAssistantUUID")
        if isinstance(source, str):
            source_entry = by_uuid.get(source)
            if source_entry is not None and _same_writer(result, source_entry):
                results_by_assistant.setdefault(source, []).append(result)
        for call_id in _content_block_ids(result, "tool_result", "tool_use_id"):
            owner = call_owner.get(call_id)
            if owner is not None and _same_writer(result, owner):
                results_by_assistant.setdefault(owner["uuid"], []).append(result)

    # Only needed to place strays, which are rare: built on first use.
    answered_on_chain: set[str] | None = None
    file_position: dict[str, int] | None = None

    processed: set[str] = set()
    inserts: dict[str, list[_TranscriptEntry]] = {}
    for assistant in chain_assistants:
        message_id = _assistant_message_id(assistant)
        if not message_id or message_id in processed:
            continue
        processed.add(message_id)

        group = siblings_by_message_id.get(message_id, [assistant])
        member_uuids = {member["uuid"] for member in group}
        orphaned_siblings = [m for m in group if m["uuid"] not in seen]
        orphaned_results: list[_TranscriptEntry] = []
        # Results indexed under this response whose parent is not one of its
        # entries: recovered only if they answer a still-unanswered call.
        strays: list[_TranscriptEntry] = []
        collected: set[str] = set()
        for member in group:
            for result in results_by_assistant.get(member["uuid"], ()):
                if result["uuid"] in seen or result["uuid"] in collected:
                    continue
                collected.add(result["uuid"])
                if result["parentUuid"] in member_uuids:
                    orphaned_results.append(result)
                else:
                    strays.append(result)

        if strays:
            if answered_on_chain is None or file_position is None:
                answered_on_chain = {
                    call_id
                    for entry in chain
                    for call_id in _content_block_ids(
                        entry, "tool_result", "tool_use_id"
                    )
                }
                file_position = {uid: i for i, uid in enumerate(by_uuid)}
            answered = set(answered_on_chain)
            for result in orphaned_results:
                answered.update(
                    _content_block_ids(result, "tool_result", "tool_use_id")
                )
            positions = file_position
            strays.sort(key=lambda e: positions[e["uuid"]])
            for result in strays:
                call_ids = _content_block_ids(result, "tool_result", "tool_use_id")
                answers_open_call = False
                for call_id in call_ids:
                    owner = call_owner.get(call_id)
                    if (
                        call_id not in answered
                        and owner is not None
                        and owner["uuid"] in member_uuids
                    ):
                        answers_open_call = True
                        break
                if not answers_open_call:
                    continue
                answered.update(call_ids)
                orphaned_results.append(result)

        if not orphaned_siblings and not orphaned_results:
            continue

        # Timestamp order keeps content-block and completion order. The sort
        # is stable, so on a tie siblings keep file order and results keep
        # the order of the calls they answer.
        orphaned_siblings.sort(key=_timestamp_sort_key)
        orphaned_results.sort(key=_timestamp_sort_key)
        recovered = orphaned_siblings + orphaned_results
        for entry in recovered:
            seen.add(entry["uuid"])
        inserts[anchor_by_message_id[message_id]["uuid"]] = recovered

    if not inserts:
        return chain

    result_chain: list[_TranscriptEntry] = []
    for entry in chain:
        result_chain.append(entry)
        result_chain.extend(inserts.get(entry["uuid"], ()))
    return result_chain


def _is_visible_message(entry: _TranscriptEntry) -> bool:
    """Returns True if the entry should be included in the returned messages."""
    entry_type = entry.get("type")
    if entry_type != "user" and entry_type != "assistant":
        return False
    if entry.get("isMeta"):
        return False
    if entry.get("isSidechain"):
        return False
    # Note: isCompactSummary messages are intentionally included. They contain
    # the summarized content from compacted conversations and are the only
    # representation of that content post-compaction. This matches VS Code IDE
    # behavior (transcriptToSessionMessage does not filter them).
    return not entry.get("teamName")


def _to_session_message(
    entry: _TranscriptEntry,
    parent_tool_use_id: str | None = None,
    parent_agent_id: str | None = None,
) -> SessionMessage:
    """Converts a transcript entry dict into a SessionMessage."""
    entry_type = entry.get("type")
    # Narrow to the Literal type — _is_visible_message already guarantees
    # this is "user" or "assistant".
    msg_type: str = "user" if entry_type == "user" else "assistant"
    return SessionMessage(
        type=msg_type,  # type: ignore[arg-type]
        uuid=entry.get("uuid", ""),
        session_id=entry.get("sessionId", ""),
        message=entry.get("message"),
        parent_tool_use_id=parent_tool_use_id,
        parent_agent_id=parent_agent_id,
    )


def get_session_messages(
    session_id: str,
    directory: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[SessionMessage]:
    """Reads a session's conversation messages from its JSONL transcript file.

    Parses the full JSONL, builds the conversation chain via ``parentUuid``
    links, and returns user/assistant messages in chronological order. A
    turn that ran tools in parallel is returned whole: every ``tool_use``
    and every ``tool_result``, not only the ones on the branch the
    conversation continued from.

    Args:
        session_id: UUID of the session to read.
        directory: Project directory to find the session in. If omitted,
            searches all project directories under ``~/.claude/projects/``.
        limit: Maximum number of messages to return.
        offset: Number of messages to skip from the start.

    Returns:
        List of ``SessionMessage`` objects in chronological order. Returns
        an empty list if the session is not found, the session_id is not a
        valid UUID, or the transcript contains no visible messages.

    See Also:
        :func:`get_session_messages_from_store` for the
        :class:`SessionStore`-backed variant.

    Example:
        Read all messages from a session::

            messages = get_session_messages(
                "550e8400-e29b-41d4-a716-446655440000",
                directory="/path/to/project",
            )
            for msg in messages:
                print(msg.type, msg.message)

        Read with pagination::

            page = get_session_messages(
                session_id, limit=10, offset=20
            )
    """
    if not _validate_uuid(session_id):
        return []

    content = _read_session_file(session_id, directory)
    if not content:
        return []

    entries = _parse_transcript_entries(content)
    return _entries_to_session_messages(entries, limit, offset)


def _entries_to_session_messages(
    entries: list[_TranscriptEntry],
    limit: int | None,
    offset: int,
) -> list[SessionMessage]:
    """Builds the conversation chain from parsed entries and applies paging.

    Shared by the filesystem and SessionStore-backed paths.
    """
    chain = _build_conversation_chain(entries)
    visible = [e for e in chain if _is_visible_message(e)]
    messages = [_to_session_message(e) for e in visible]

    # Apply offset and limit
    if limit is not None and limit > 0:
        return messages[offset : offset + limit]
    if offset > 0:
        return messages[offset:]
    return messages


# ---------------------------------------------------------------------------
# list_subagents / get_subagent_messages — subagent transcript reading
# ---------------------------------------------------------------------------


def _resolve_session_file_path(session_id: str, directory: str | None) -> Path | None:
    """Resolves the on-disk path of a session JSONL file.

    Directory resolution mirrors ``_read_session_file``: when ``directory``
    is provided, looks in that project directory and its git worktrees;
    otherwise searches all project directories. Returns the path of the
    first non-empty match, or ``None`` if not found.
    """
    file_name = f"{session_id}.jsonl"
    for project_dir, _ in _project_dirs(directory):
        candidate = project_dir / file_name
        try:
            if candidate.stat().st_size > 0:
                return candidate
        except OSError:
            pass
    return None


def _resolve_subagents_dir(session_id: str, directory: str | None) -> Path | None:
    """Resolves the subagents directory for a given session.

    The session file lives at ``<projectDir>/<sessionId>.jsonl`` and the
    subagents directory at ``<projectDir>/<sessionId>/subagents/``.

    Returns ``None`` if the session cannot be found.
    """
    resolved = _resolve_session_file_path(session_id, directory)
    if resolved is None:
        return None
    # Strip the .jsonl suffix to derive the session directory.
    session_dir = resolved.with_suffix("")
    return session_dir / "subagents"


def _collect_agent_files(base_dir: Path) -> list[tuple[str, Path]]:
    """Recursively collects ``agent-*.jsonl`` files from a directory tree.

    Subagent transcripts may live directly in ``subagents/`` or in nested
    subdirectories such as ``subagents/workflows/<runId>/``.

    Returns a list of ``(agent_id, file_path)`` tuples.
    """
    results: list[tuple[str, Path]] = []

    def _walk(current_dir: Path) -> None:
        try:
            dirents = sorted(current_dir.iterdir(), key=lambda p: p.name)
        except OSError:
            return
        for entry in dirents:
            name = entry.name
            if (
                entry.is_file()
                and name.startswith("agent-")
                and name.endswith(".jsonl")
            ):
                agent_id = name[len("agent-") : -len(".jsonl")]
                results.append((agent_id, entry))
            elif entry.is_dir():
                _walk(entry)

    _walk(base_dir)
    return results


def _build_subagent_chain(entries: list[_TranscriptEntry]) -> list[_TranscriptEntry]:
    """Builds the conversation chain for a subagent transcript.

    Subagent transcripts are simpler than main sessions — no compaction,
    no sidechains, no preserved segments. Find the last user/assistant
    entry and walk ``parentUuid`` links back to the root.
    """
    if not entries:
        return []

    by_uuid: dict[str, _TranscriptEntry] = {}
    for entry in entries:
        by_uuid[entry["uuid"]] = entry

    # Subagent transcripts are linear — the last user/assistant entry is
    # the leaf.
    leaf: _TranscriptEntry | None = None
    for entry in reversed(entries):
        if entry.get("type") in ("user", "assistant"):
            leaf = entry
            break
    if leaf is None:
        return []

    return _chain_to(leaf, by_uuid)[0]


def list_subagents(
    session_id: str,
    directory: str | None = None,
) -> list[str]:
    """Lists subagent IDs for a given session by scanning the subagents directory.

    Subagent transcripts are stored at
    ``~/.claude/projects/<project>/<sessionId>/subagents/agent-<agentId>.jsonl``
    (and may be nested in subdirectories such as ``workflows/<runId>/``).

    Args:
        session_id: UUID of the parent session.
        directory: Project directory to find the session in. If omitted,
            searches all project directories under ``~/.claude/projects/``.

    Returns:
        List of subagent ID strings. Returns an empty list if the session
        is not found, the session_id is not a valid UUID, or the session
        has no subagents.

    See Also:
        :func:`list_subagents_from_store` for the :class:`SessionStore`-backed
        variant (a plain function here).

    Example:
        List subagent IDs for a session::

            agent_ids = list_subagents(
                "550e8400-e29b-41d4-a716-446655440000",
                directory="/path/to/project",
            )
    """
    if not _validate_uuid(session_id):
        return []

    subagents_dir = _resolve_subagents_dir(session_id, directory)
    if subagents_dir is None:
        return []

    return [agent_id for agent_id, _ in _collect_agent_files(subagents_dir)]


def get_subagent_messages(
    session_id: str,
    agent_id: str,
    directory: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[SessionMessage]:
    """Reads a subagent's conversation messages from its JSONL transcript file.

    Parses the subagent transcript, builds the conversation chain via
    ``parentUuid`` links, and returns user/assistant messages in
    chronological order. Each message's ``parent_tool_use_id`` is the id of
    the Agent ``tool_use`` in the parent session that spawned this subagent
    (and ``parent_agent_id`` the spawning subagent, for nested subagents),
    read from the ``agent-<agentId>.meta.json`` sidecar next to the
    transcript; both are ``None`` if the sidecar is missing or unusable.

    Args:
        session_id: UUID of the parent session.
        agent_id: ID of the subagent (as returned by ``list_subagents``).
        directory: Project directory to find the session in. If omitted,
            searches all project directories under ``~/.claude/projects/``.
        limit: Maximum number of messages to return.
        offset: Number of messages to skip from the start.

    Returns:
        List of ``SessionMessage`` objects in chronological order. Returns
        an empty list if the session or subagent is not found, the
        session_id is not a valid UUID, or the transcript contains no
        user/assistant messages.

    See Also:
        :func:`get_subagent_messages_from_store` for the
        :class:`SessionStore`-backed variant.

    Example:
        Read all messages from a subagent::

            messages = get_subagent_messages(
                "550e8400-e29b-41d4-a716-446655440000",
                "abc123",
                directory="/path/to/project",
            )
    """
    if not _validate_uuid(session_id):
        return []
    if not agent_id:
        return []

    subagents_dir = _resolve_subagents_dir(session_id, directory)
    if subagents_dir is None:
        return []

    # The agent file may be directly in subagents/ or in a nested
    # subdirectory — scan to find it.
    match: Path | None = None
    for found_id, file_path in _collect_agent_files(subagents_dir):
        if found_id == agent_id:
            match = file_path
            break
    if match is None:
        return []

    try:
        content = match.read_text(encoding="utf-8")
    except OSError:
        return []
    if not content:
        return []

    # The .meta.json sidecar next to the transcript records which Agent
    # tool_use spawned this subagent (and, for nested subagents, the parent
    # agent id). Like the transcript read above, any failure to read it
    # (missing, unreadable, corrupt) degrades to "no metadata" rather than
    # raising from this best-effort read helper.
    try:
        meta = _read_agent_metadata_sidecar(match)
    except OSError:
        meta = None
    parent_tool_use_id, parent_agent_id = _parent_ids_from_agent_metadata(meta)

    entries = _parse_transcript_entries(content)
    return _entries_to_subagent_messages(
        entries, limit, offset, parent_tool_use_id, parent_agent_id
    )

def _entries_to_subagent_messages(
    entries: list[_TranscriptEntry],
    limit: int | None,
    offset: int,
    parent_tool_use_id: str | None = None,
    parent_agent_id: str | None = None,
) -> list[SessionMessage]:
    """Builds the subagent chain from parsed entries and applies paging.

    Shared by the filesystem and SessionStore-backed paths. Every message in
    a subagent transcript shares the same parent ids.
    """
    chain = _build_subagent_chain(entries)
    messages = [
        _to_session_message(e, parent_tool_use_id, parent_agent_id)
        for e in chain
        if e.get("type") in ("user", "assistant")
    ]

    if limit is not None and limit > 0:
        return messages[offset : offset + limit]
    if offset > 0:
        return messages[offset:]
    return messages


def _entries_to_jsonl(entries: list[Any]) -> str:
    """Serialize store entries to a JSONL string (one ``json.dumps`` per line).

    The ``SessionStore.load`` contract permits adapters to reorder object keys
    (e.g. Postgres JSONB), but ``_parse_session_info_from_lite`` scans for
    ``{"type":"tag"`` as a line prefix. Hoist ``type`` to the front so the
    store path matches the byte shape the disk path produces.
    """

    def _type_first(e: Any) -> Any:
        if isinstance(e, dict) and "type" in e:
            return {"type": e["type"], **e}
        return e

    return (
        "\n".join(json.dumps(_type_first(e), separators=(",", ":")) for e in entries)
        + "\n"
    )


def _jsonl_to_lite(jsonl: str, mtime: int) -> _LiteSessionFile:
    """Build the head/tail/size lite shape from an in-memory JSONL string.

    Matches ``_read_session_lite``'s byte semantics so the store path exposes
    the same slice to ``_parse_session_info_from_lite`` as the disk path
    would for the same transcript.
    """
    buf = jsonl.encode("utf-8")
    size = len(buf)
    head = buf[:LITE_READ_BUF_SIZE].decode("utf-8", errors="replace")
    tail = (
        buf[max(0, size - LITE_READ_BUF_SIZE) :].decode("utf-8", errors="replace")
        if size > LITE_READ_BUF_SIZE
        else head
    )
    return _LiteSessionFile(mtime=mtime, size=size, head=head, tail=tail)


def _mtime_from_jsonl_tail(jsonl: str) -> int:
    """Best-effort mtime: parse the last entry's ``timestamp`` field.

    Falls back to the current wall-clock time when absent or unparseable.
    """
    trimmed = jsonl.rstrip()
    last_line = trimmed[trimmed.rfind("\n") + 1 :]
    try:
        obj = json.loads(last_line)
    except (json.JSONDecodeError, ValueError):
        obj = None
    if isinstance(obj, dict):
        ts = obj.get("timestamp")
        if isinstance(ts, str):
            try:
                norm = ts.replace("Z", "+00:00") if ts.endswith("Z") else ts
                return int(datetime.fromisoformat(norm).timestamp() * 1000)
            except ValueError:
                pass
    return int(time.time() * 1000)


def _filter_transcript_entries(entries: list[Any]) -> list[_TranscriptEntry]:
    """Filter store-loaded entries to transcript message types with a ``uuid``.

    Mirrors ``_parse_transcript_entries`` for the already-parsed object path
    so chain-building never sees metadata-only entries (custom-title, tag,
    agent_metadata, etc.).
    """
    result: list[_TranscriptEntry] = []
    for e in entries:
        if (
            isinstance(e, dict)
            and e.get("type") in _TRANSCRIPT_ENTRY_TYPES
            and isinstance(e.get("uuid"), str)
        ):
            result.append(e)
    return result

