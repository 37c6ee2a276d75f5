"""Sessions on this machine's disk: list, read, rename, tag, delete, fork.

Where a session is looked for: :func:`._paths.search_dirs` (with ``directory``,
its project and then its git worktrees; without, every project). What is read:
:mod:`._text` for a listing row (head and tail only), :mod:`._chain` for
messages (the whole file). What is written: whole entries appended with
``O_APPEND`` (the CLI may be appending too; readers take the last title and
tag), or a new file for a fork, never an edit in place.

If a CLI has the session open while we append a title, the CLI re-reads its
tail before re-writing its own metadata and so keeps ours.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..types import ForkSessionResult, SDKSessionInfo, SessionMessage
from . import _chain, _edits, _text
from .._engine import paths as _paths

# ---------------------------------------------------------------- listing


def _rows(project_dir: Path, project_path: str | None, programmatic: bool = True) -> list[SDKSessionInfo]:
    """The listing rows of the transcripts directly in ``project_dir`` (without the SDKs' and
    daemons' sessions unless ``programmatic``)."""
    try:
        files = list(project_dir.iterdir())
    except OSError:
        return []
    rows = []
    for f in files:
        sid = f.name.removesuffix(".jsonl")
        if sid == f.name or not _paths.is_session_id(sid):
            continue
        ends = _text.Ends.of_file(f)
        row = _text.info_from_ends(sid, ends, project_path) if ends is not None else None
        if row is not None and ends is not None and (programmatic or not _text.is_programmatic(ends)):
            row.archived = archived(project_dir, sid, ends)
            rows.append(row)
    return rows


def newest_first(rows: list[SDKSessionInfo], limit: int | None, offset: int) -> list[SDKSessionInfo]:
    """Rows by ``last_modified``, newest first, then ``offset`` and ``limit`` (positive only)."""
    rows = sorted(rows, key=lambda r: r.last_modified, reverse=True)
    if offset > 0:
        rows = rows[offset:]
    return rows[:limit] if limit is not None and limit > 0 else rows


def _one_per_session(rows: Iterable[SDKSessionInfo]) -> list[SDKSessionInfo]:
    """The newest row of each session id (the same session may be under two projects)."""
    best: dict[str, SDKSessionInfo] = {}
    for row in rows:
        if row.session_id not in best or row.last_modified > best[row.session_id].last_modified:
            best[row.session_id] = row
    return list(best.values())


def _project_rows(directory: str, include_worktrees: bool, programmatic: bool = True) -> list[SDKSessionInfo]:
    """The rows of a project and, in a repository with more than one worktree, of the
    project directories of every worktree (matched by name, the longest name first; a name
    past the length limit also by its start). The project's own directory always counts,
    so a subdirectory of a worktree is listed too."""
    here = _paths.real_path(directory)
    trees = _paths.worktrees(here) if include_worktrees else []
    own = _paths.find_project_dir(here)
    if len(trees) <= 1:
        return _rows(own, here, programmatic) if own is not None else []
    fold = str.lower if sys.platform == "win32" else str
    names = sorted(((fold(_paths.project_dir_name(t)), t) for t in trees), key=lambda p: len(p[0]), reverse=True)
    rows: list[SDKSessionInfo] = []
    done: set[str] = set()
    if own is not None:
        done.add(fold(own.name))
        rows += _rows(own, here, programmatic)
    for d in _paths.all_project_dirs():
        name = fold(d.name)
        if name in done:
            continue
        for wanted, tree in names:
            if name == wanted or (len(wanted) >= _paths.NAME_LIMIT and name.startswith(wanted + "-")):
                done.add(name)
                rows += _rows(d, tree, programmatic)
                break
    return _one_per_session(rows)


def list_sessions(
    directory: str | None = None,
    limit: int | None = None,
    offset: int = 0,
    include_worktrees: bool = True,
    include_programmatic: bool = True,
) -> list[SDKSessionInfo]:
    """The sessions of the project at ``directory`` (with its git worktrees unless
    ``include_worktrees=False``), or of every project when it is omitted, newest first.

    Each row is read from the transcript's first and last 64 KiB only. Sidechain
    transcripts and files with no title, prompt or summary are left out. ``offset`` and
    ``limit`` page the sorted rows. ``include_programmatic=False`` (TypeScript's) leaves out
    sessions an SDK started (entry point ``sdk-py``, ``sdk-ts``, ``sdk-cli``) and daemons',
    as the CLI's own ``/resume`` does. Each row's ``archived`` says whether
    :func:`archive_session` archived it (``None``: never). :func:`list_sessions_from_store`
    is the store variant.
    """
    if directory:
        rows = _project_rows(directory, include_worktrees, include_programmatic)
    else:
        rows = _one_per_session(row for d in _paths.all_project_dirs() for row in _rows(d, None, include_programmatic))
    return newest_first(rows, limit, offset)


def get_session_info(session_id: str, directory: str | None = None) -> SDKSessionInfo | None:
    """The listing row of one session (found as :func:`get_session_messages` finds it), or
    ``None`` when it is missing, invalid, a sidechain, or has nothing to show."""
    if not _paths.is_session_id(session_id):
        return None
    for d, project_path in _paths.search_dirs(directory):
        ends = _text.Ends.of_file(d / f"{session_id}.jsonl")
        if ends is not None:
            row = _text.info_from_ends(session_id, ends, project_path)
            if row is not None:
                row.archived = archived(d, session_id, ends)
            return row
    return None


# ---------------------------------------------------------------- reading


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def get_session_messages(
    session_id: str,
    directory: str | None = None,
    limit: int | None = None,
    offset: int = 0,
    include_system_messages: bool = False,
) -> list[SessionMessage]:
    """The conversation of a session, oldest first: the user and assistant messages on the
    branch it went on from, a turn of parallel tool calls whole (every call and result);
    with ``include_system_messages=True`` (TypeScript's), its system entries too (compact
    boundaries, informational notices), as ``type="system"``.

    ``directory`` is the project (its worktrees are searched too); without it every
    project is. Empty when the id is invalid, the session missing, or nothing is shown.
    :func:`get_session_messages_from_store` is the store variant.
    """
    if not _paths.is_session_id(session_id):
        return []
    for d, _ in _paths.search_dirs(directory):
        text = _read(d / f"{session_id}.jsonl")
        if text:
            return _chain.session_messages(_chain.entries_of_text(text), limit, offset, include_system_messages)
    return []


def _agent_files(root: Path) -> list[tuple[str, Path]]:
    """``(agent id, transcript)`` of every ``agent-<id>.jsonl`` under ``root``, by name,
    directory by directory (subagents of a workflow sit in subdirectories)."""
    try:
        children = sorted(root.iterdir(), key=lambda p: p.name)
    except OSError:
        return []
    found: list[tuple[str, Path]] = []
    for child in children:
        name = child.name
        if child.is_file() and name.startswith("agent-") and name.endswith(".jsonl"):
            found.append((name[len("agent-") : -len(".jsonl")], child))
        elif child.is_dir():
            found += _agent_files(child)
    return found


def _subagents_of(session_id: str, directory: str | None) -> list[tuple[str, Path]]:
    if not _paths.is_session_id(session_id):
        return []
    transcript = _paths.find_transcript(session_id, directory)
    return _agent_files(transcript.with_suffix("") / "subagents") if transcript is not None else []


def list_subagents(session_id: str, directory: str | None = None) -> list[str]:
    """The ids of a session's subagents (``<session>/subagents/**/agent-<id>.jsonl``);
    empty when there are none or the session is missing or invalid.
    :func:`list_subagents_from_store` is the store variant."""
    return [agent for agent, _ in _subagents_of(session_id, directory)]


def get_subagent_messages(
    session_id: str,
    agent_id: str,
    directory: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[SessionMessage]:
    """A subagent's conversation, oldest first. Each message's ``parent_tool_use_id`` is the
    Agent call that started it and ``parent_agent_id`` the agent that made that call, read
    from the ``agent-<id>.meta.json`` sidecar (``None`` without a usable one).
    :func:`get_subagent_messages_from_store` is the store variant."""
    if not agent_id:
        return []
    path = next((p for agent, p in _subagents_of(session_id, directory) if agent == agent_id), None)
    text = _read(path) if path is not None else ""
    if path is None or not text:
        return []
    try:
        meta = _paths.read_sidecar(path)
    except OSError:
        meta = None
    tool_use_id, parent_agent = _paths.spawned_by(meta)
    return _chain.subagent_messages(_chain.entries_of_text(text), limit, offset, tool_use_id, parent_agent)


# ---------------------------------------------------------------- changing


def _line(entry: dict[str, Any]) -> str:
    return json.dumps(entry, separators=(",", ":"))


def _append_existing(path: Path, data: bytes) -> bool:
    """Append to ``path`` if it exists and is not empty (an empty file is "not here": the
    search goes on). Opened without ``O_CREAT``, so nothing is created by mistake and there
    is no window between a check and the write."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ENOTDIR):
            return False
        raise
    try:
        if os.fstat(fd).st_size == 0:
            return False
        os.write(fd, data)
        return True
    finally:
        os.close(fd)


def _append_entry(session_id: str, entry: dict[str, Any], directory: str | None) -> None:
    data = (_line(entry) + "\n").encode("utf-8")
    for d, _ in _paths.search_dirs(directory):
        if _append_existing(d / f"{session_id}.jsonl", data):
            return
    if directory:
        raise FileNotFoundError(f"Session {session_id} not found in project directory for {directory}")
    if not _paths.projects_dir().is_dir():
        raise FileNotFoundError(f"Session {session_id} not found (no projects directory)")
    raise FileNotFoundError(f"Session {session_id} not found in any project directory")


def rename_session(session_id: str, title: str, directory: str | None = None) -> None:
    """Give a session a title (stripped; empty is a ``ValueError``) by appending a
    ``custom-title`` entry: the last one wins. ``FileNotFoundError`` when the session is not
    found. :func:`rename_session_via_store` is the store variant."""
    _append_entry(session_id, _edits.title_entry(session_id, title), directory)


def tag_session(session_id: str, tag: str | None, directory: str | None = None) -> None:
    """Tag a session, or clear its tag with ``None``, by appending a ``tag`` entry (the last
    one wins). Invisible and private-use characters are removed first; a tag left empty is
    a ``ValueError``. :func:`tag_session_via_store` is the store variant."""
    _append_entry(session_id, _edits.tag_entry(session_id, tag), directory)


def _located(session_id: str, directory: str | None) -> Path:
    path = _paths.find_transcript(session_id, directory)
    if path is None:
        where = f" in project directory for {directory}" if directory else ""
        raise FileNotFoundError(f"Session {session_id} not found{where}")
    return path


def delete_session(session_id: str, directory: str | None = None) -> None:
    """Remove a session's transcript and its ``<session>/`` directory of subagent
    transcripts, for good (a soft delete is a tag the caller filters on).
    ``FileNotFoundError`` when the session is not found.
    :func:`delete_session_via_store` is the store variant."""
    _edits.check_session_id(session_id)
    path = _located(session_id, directory)
    try:
        path.unlink()
    except FileNotFoundError as gone:
        raise FileNotFoundError(f"Session {session_id} not found") from gone
    shutil.rmtree(path.parent / session_id, ignore_errors=True)


def source_title_of_bytes(data: bytes) -> str | None:
    """The title a fork derives from its source file: its title, else its first prompt."""
    ends = _text.Ends.of_bytes(data, 0)
    return _text.title_of(ends) or _text.first_prompt(ends.head) or None


def fork_session(
    session_id: str,
    directory: str | None = None,
    up_to_message_id: str | None = None,
    title: str | None = None,
) -> ForkSessionResult:
    """Copy a session (up to and including ``up_to_message_id``) into a new session with
    fresh uuids, beside the original. The fork's title is ``title``, else the original's
    title or first prompt with `` (fork)``. File-history snapshots are not copied.
    ``ValueError`` for invalid ids, an unknown message or nothing to fork;
    ``FileNotFoundError`` when the session is not found.
    :func:`fork_session_via_store` is the store variant."""
    _edits.check_session_id(session_id)
    if up_to_message_id:
        _edits.check_session_id(up_to_message_id, "up_to_message_id")
    path = _located(session_id, directory)
    data = path.read_bytes()
    if not data:
        raise ValueError(f"Session {session_id} has no messages to fork")
    parsed = []
    for line in data.decode("utf-8", errors="replace").splitlines():
        try:
            parsed.append(json.loads(line))
        except ValueError:
            continue
    transcript, replacements = _edits.fork_parts(parsed, session_id)
    fork_id, entries = _edits.fork_entries(
        transcript, replacements, session_id, up_to_message_id, title, lambda: source_title_of_bytes(data)
    )
    fd = os.open(path.parent / f"{fork_id}.jsonl", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, "".join(_line(e) + "\n" for e in entries).encode("utf-8"))
    finally:
        os.close(fd)
    return ForkSessionResult(session_id=fork_id)


# ---------------------------------------------------------------- archives (TypeScript's)

_ARCHIVE = "archived.json"


def _archive_path(project_dir: Path, session_id: str) -> Path:
    return project_dir / session_id / _ARCHIVE


def archived(project_dir: Path, session_id: str, ends: _text.Ends) -> bool | None:
    """A session's archive state: ``None`` when it never was archived; ``False`` when it was
    unarchived, or a prompt was sent in it after it was archived; else ``True``."""
    try:
        with _archive_path(project_dir, session_id).open("rb") as f:
            record = json.loads(f.read(4097))  # a record edited into a large file is not read whole
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("archived"), bool):
        return None  # a record edited into something else does not archive anything
    if not record["archived"]:
        return False
    at = _text.epoch_ms(record.get("at"))
    if at is None:
        return True
    return not (_text.prompted_after(ends.tail, at) or (ends.head != ends.tail and _text.prompted_after(ends.head, at)))


def _set_archived(session_id: str, value: bool, directory: str | None) -> None:
    _edits.check_session_id(session_id)
    found = [d for d, _ in _paths.search_dirs(directory) if (d / f"{session_id}.jsonl").is_file()]
    if not found:
        where = f" in project directory for {directory}" if directory else " in any project directory"
        raise FileNotFoundError(f"Session {session_id} not found{where}")
    record = json.dumps({"archived": value, "at": _edits.now_iso(), "by": "sdk"}).encode()
    for project_dir in found:
        path = _archive_path(project_dir, session_id)
        path.parent.mkdir(mode=0o700, exist_ok=True)
        temporary = path.with_name(f".{_ARCHIVE}.{os.getpid()}.tmp")
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                view = memoryview(record)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temporary, path)  # whole or not at all: the old record stays on a failed write
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise


def archive_session(session_id: str, directory: str | None = None) -> None:
    """Archive a session (TypeScript's ``archiveSession``): a private ``archived.json`` beside
    its transcript, which the listing reads (``SDKSessionInfo.archived``); a prompt sent in
    it later unarchives it. The transcript is not touched. ``FileNotFoundError`` when the
    session is not found, ``ValueError`` for an id that is not one."""
    _set_archived(session_id, True, directory)


def unarchive_session(session_id: str, directory: str | None = None) -> None:
    """Undo :func:`archive_session` (the record says ``archived: false``)."""
    _set_archived(session_id, False, directory)
