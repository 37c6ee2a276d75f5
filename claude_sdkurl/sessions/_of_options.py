"""The sessions a set of options would resume: where their transcripts are for a CLI started
with ``options`` (its ``session_store``, else the ``projects`` folder of the CLI's own
``HOME``/``CLAUDE_CONFIG_DIR`` from ``options.env``, under the project of ``options.cwd``).

Used by what decides or resumes a session on a program's behalf (parked approvals, the relay's
page): the session they read is the one the CLI will resume, not one that happens to be in this
process's own home.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._engine import paths as _paths
from .._engine.storecall import call
from ..types import SDKSessionInfo
from . import _chain
from ._local import _one_per_session, _rows, newest_first


class TranscriptNotFound(LookupError):
    """No readable transcript of that session where the options' CLI keeps them."""


def entries(session_id: str, options: Any) -> list[dict[str, Any]]:
    """Every entry of the session's transcript, in order. :class:`TranscriptNotFound` when the
    id is not a session id, or no transcript is found or it cannot be read."""
    if not isinstance(session_id, str) or not _paths.is_session_id(session_id):
        raise TranscriptNotFound(f"not a session id: {session_id!r}")
    store = options.session_store
    if store is not None:
        key = {"project_key": _paths.project_key_for_directory(options.cwd), "session_id": session_id}
        found = [e for e in call(store.load, key) or [] if isinstance(e, dict)]
    else:
        projects = Path(_paths.cli_projects_dir(options.env or {}))
        path = projects / _paths.project_dir_name(_paths.real_path(str(options.cwd or "."))) / f"{session_id}.jsonl"
        if not path.is_file():
            path = next(iter(_paths.transcripts_in(projects, session_id)), path)
        try:
            found = _chain.entries_of_text(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as e:
            raise TranscriptNotFound(f"the transcript of session {session_id} cannot be read ({e})") from None
    if not found:
        raise TranscriptNotFound(f"no transcript of session {session_id} was found")
    return found


def rows(options: Any, limit: int | None = None, every_project: bool = False) -> list[SDKSessionInfo]:
    """The listing rows of the sessions of ``options.cwd``'s project, newest first; with
    ``every_project``, of every project the CLI's transcripts are in (not for a store: its
    listing is by project)."""
    if options.session_store is not None:
        from ._stored import list_sessions_from_store

        return list_sessions_from_store(options.session_store, directory=options.cwd, limit=limit)
    projects = Path(_paths.cli_projects_dir(options.env or {}))
    if every_project:
        try:
            folders = [d for d in projects.iterdir() if d.is_dir()]
        except OSError:
            folders = []
        return newest_first(_one_per_session(row for d in folders for row in _rows(d, None)), limit, 0)
    here = _paths.real_path(str(options.cwd or "."))
    return newest_first(_rows(projects / _paths.project_dir_name(here), here), limit, 0)
