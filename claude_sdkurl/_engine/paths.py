"""Where Claude Code keeps transcripts, and the store keys that name them.

Rules of the CLI's that we must repeat exactly (``tests/test_sessions_parity.py``
checks them against directories the real CLIs wrote):

* A transcript is ``<config>/projects/<project dir>/<session id>.jsonl``;
  ``<config>`` is ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``. A subagent's is
  ``<project dir>/<session id>/subagents/[<more dirs>/]agent-<id>.jsonl``, with
  an optional ``agent-<id>.meta.json`` beside it.
* ``<project dir>`` is the working directory (real path, NFC) with every
  character outside ``[A-Za-z0-9]`` turned into ``-``. A name longer than 200
  characters is cut to 200 and followed by ``-`` and a base-36 hash of the whole
  path. The CLI's own hash there differs from the one the SDKs compute, so a
  long name is also looked up by its first 200 characters.
* A session store key is ``{project_key: <project dir>, session_id, [subpath]}``,
  the subpath being the path under the session's directory, ``/``-joined and
  without ``.jsonl``.

Nothing here touches a store or a live session: paths, names, and the few file
reads that finding a transcript needs (``stat``, ``iterdir``, a sidecar read,
``git worktree list``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..types import SessionKey

NAME_LIMIT = 200  # longest project directory name before the hash suffix

_SESSION_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
_NOT_ALNUM = re.compile(r"[^a-zA-Z0-9]")
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def is_session_id(text: str) -> bool:
    """A session id is a UUID in its 8-4-4-4-12 hex form (either case); nothing else may
    become part of a path."""
    return _SESSION_ID.fullmatch(text) is not None


def transcripts_in(projects: str | Path, session_id: Any) -> list[Path]:
    """The transcripts of session ``session_id`` in any project under ``projects`` (a CLI's
    ``projects`` folder), in name order; none for anything but a session id (a path-like or
    forged id never becomes part of a path)."""
    if not isinstance(session_id, str) or not is_session_id(session_id):
        return []
    return sorted(Path(projects).glob(f"*/{session_id}.jsonl"))


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _path_hash(text: str) -> str:
    """The SDKs' hash of a long project path: a 31-multiplier string hash wrapped to a signed
    32-bit integer, its absolute value written in base 36."""
    h = 0
    for ch in text:
        h = (h * 31 + ord(ch)) & 0xFFFFFFFF
    if h & 0x80000000:
        h = (1 << 32) - h  # |h| of the negative two's-complement value
    digits = ""
    while True:
        h, d = divmod(h, 36)
        digits = _BASE36[d] + digits
        if not h:
            return digits


def project_dir_name(path: str) -> str:
    """The directory name the CLI gives the project at ``path`` (see the module doc)."""
    name = _NOT_ALNUM.sub("-", path)
    if len(name) <= NAME_LIMIT:
        return name
    return f"{name[:NAME_LIMIT]}-{_path_hash(path)}"


def real_path(directory: str) -> str:
    """``directory`` resolved as the CLI sees it: real path, NFC."""
    try:
        return _nfc(os.path.realpath(directory))
    except OSError:
        return _nfc(directory)


def project_key_for_directory(directory: str | Path | None = None) -> str:
    """The :class:`~claude_sdkurl.types.SessionStore` ``project_key`` of ``directory``
    (default: the current directory): the name the CLI gives its project directory, so a
    mirrored session and the file on disk share one key."""
    return project_dir_name(real_path(str(directory) if directory is not None else "."))


def config_dir() -> Path:
    """This process's Claude config directory: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    return Path(_nfc(os.environ.get("CLAUDE_CONFIG_DIR") or str(Path.home() / ".claude")))


def projects_dir(env: dict[str, str] | None = None) -> Path:
    """``<config>/projects``; a ``CLAUDE_CONFIG_DIR`` in ``env`` (the CLI's own
    environment) wins over ours."""
    chosen = (env or {}).get("CLAUDE_CONFIG_DIR")
    return (Path(_nfc(chosen)) if chosen else config_dir()) / "projects"


def cli_config_dir(env: dict[str, str]) -> Path:
    """The config directory of a CLI started with environment ``env``: its
    ``CLAUDE_CONFIG_DIR``, else its ``HOME``'s ``.claude``, else ours."""
    home = env.get("HOME")
    if home and not env.get("CLAUDE_CONFIG_DIR"):
        return Path(_nfc(home)) / ".claude"
    return projects_dir(env).parent


def cli_projects_dir(env: dict[str, str]) -> str:
    """Where a CLI started with environment ``env`` writes transcripts: ``projects`` in its
    :func:`cli_config_dir`. (The official SDK looks at ``CLAUDE_CONFIG_DIR`` only, and so drops
    every mirror frame of a CLI given another ``HOME``.)"""
    return str(cli_config_dir(env) / "projects")


def _subdirs(parent: Path) -> list[Path]:
    try:
        return [p for p in parent.iterdir() if p.is_dir()]
    except OSError:
        return []


def find_project_dir(path: str) -> Path | None:
    """The existing project directory of the (canonical) project ``path``: its exact name,
    or, for a name past the limit, any directory that starts with the cut name and ``-``."""
    name = project_dir_name(path)
    exact = projects_dir() / name
    if exact.is_dir():
        return exact
    if len(name) <= NAME_LIMIT:
        return None
    stem = name[:NAME_LIMIT] + "-"
    return next((d for d in _subdirs(projects_dir()) if d.name.startswith(stem)), None)


def worktrees(directory: str) -> list[str]:
    """The git worktrees of the repository ``directory`` is in (NFC paths); none when git
    is missing, fails, or ``directory`` is not in a repository."""
    try:
        done = subprocess.run(
            ["git", "worktree", "list", "--porcelain"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, ValueError, subprocess.SubprocessError):  # ValueError: output that is not text
        return []
    if done.returncode:
        return []
    marker = "worktree "
    return [_nfc(line[len(marker):]) for line in done.stdout.split("\n") if line.startswith(marker)]


def all_project_dirs() -> list[Path]:
    """Every project directory there is (none without a projects directory)."""
    return _subdirs(projects_dir())


def search_dirs(directory: str | None) -> Iterator[tuple[Path, str | None]]:
    """The project directories a session of ``directory`` may be in, in the order every
    lookup tries them, each with the project path it stands for.

    With ``directory``: its own project directory, then those of the other worktrees of
    its repository (git is asked only when the caller goes on past the first). Without:
    every project directory, with ``None`` for the path.
    """
    if not directory:
        for d in all_project_dirs():
            yield d, None
        return
    here = real_path(directory)
    own = find_project_dir(here)
    if own is not None:
        yield own, here
    for tree in worktrees(here):
        if tree != here:
            found = find_project_dir(tree)
            if found is not None:
                yield found, tree


def find_transcript(session_id: str, directory: str | None) -> Path | None:
    """The first non-empty ``<session_id>.jsonl`` along :func:`search_dirs` (an empty file
    means "not here": the CLI creates it before its first line)."""
    for d, _ in search_dirs(directory):
        candidate = d / f"{session_id}.jsonl"
        try:
            if candidate.stat().st_size:
                return candidate
        except OSError:
            continue
    return None


def sidecar_of(transcript: Path) -> Path:
    """``agent-<id>.jsonl`` -> ``agent-<id>.meta.json``, in the same directory."""
    return transcript.with_name(transcript.name.removesuffix(".jsonl") + ".meta.json")


def read_sidecar(transcript: Path) -> dict[str, Any] | None:
    """The JSON object in the sidecar of a subagent ``transcript``; ``None`` when it is
    missing, not JSON or not an object. Any other read error (a permission) is raised."""
    try:
        found = json.loads(sidecar_of(transcript).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def split_metadata(entries: list[Any]) -> tuple[dict[str, Any] | None, list[Any]]:
    """A subagent's stored entries split into its metadata (the store's stand-in for the
    sidecar: entries of type ``agent_metadata``, the last one counting since a resume
    writes it again) and its transcript lines."""
    meta: dict[str, Any] | None = None
    lines: list[Any] = []
    for entry in entries:
        if isinstance(entry, dict) and entry.get("type") == "agent_metadata":
            meta = dict(entry)
        else:
            lines.append(entry)
    return meta, lines


def spawned_by(meta: dict[str, Any] | None) -> tuple[str | None, str | None]:
    """``(toolUseId, parentAgentId)`` of a subagent's metadata, each ``None`` unless a string."""
    if not meta:
        return None, None
    tool_use, parent = meta.get("toolUseId"), meta.get("parentAgentId")
    return (tool_use if isinstance(tool_use, str) else None, parent if isinstance(parent, str) else None)


def key_for_file(file_path: str, projects: str) -> SessionKey | None:
    """The store key of a transcript file the CLI named in a mirror frame, ``None`` when the
    file is not under ``projects`` or has no transcript's shape."""
    try:
        rel = Path(os.path.relpath(file_path, projects))
    except ValueError:  # another drive (Windows): not under it
        return None
    parts = rel.parts
    if rel.is_absolute() or len(parts) < 2 or parts[0] == "..":
        return None
    project, second = parts[0], parts[1]
    if len(parts) == 2:
        if not second.endswith(".jsonl"):
            return None
        return {"project_key": project, "session_id": second.removesuffix(".jsonl")}
    if len(parts) == 3:
        return None
    sub = [*parts[2:-1], parts[-1].removesuffix(".jsonl")]
    return {"project_key": project, "session_id": second, "subpath": "/".join(sub)}
