"""Where Claude Code keeps session transcripts, and the keys a SessionStore uses for them.

The CLI writes ``$CLAUDE_CONFIG_DIR/projects/<sanitized cwd>/<session id>.jsonl``
(subagents under ``<session id>/subagents/``). These rules must match the CLI
and the official SDK byte for byte, so they are ported from claude-agent-sdk
0.2.187 (``_internal/sessions.py``, ``session_store.py``,
``session_store_validation.py``; MIT licence, Anthropic PBC) and cross-checked
against it by ``tests/test_sessions_parity.py``.

This module is shared by the launch path (resume from a store, transcript
mirroring) and by :mod:`claude_sdkurl.sessions`; it does no I/O beyond
``stat``/``iterdir`` and ``git worktree list``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import unicodedata
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from ._control import call_user, in_thread
from ._errors import SessionStoreError
from .types import ClaudeAgentOptions, SessionKey, SessionStore

MAX_SANITIZED_LENGTH = 200

_UUID_RE = re.compile(
    r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
    re.IGNORECASE,
)

# Pattern matching auto-generated or system messages that should be skipped

_SANITIZE_RE = re.compile(r"[^a-zA-Z0-9]")


# ---------------------------------------------------------------------------
# UUID validation
# ---------------------------------------------------------------------------


def _validate_uuid(maybe_uuid: str) -> str | None:
    """Returns the string if it is a valid UUID, else None."""
    if _UUID_RE.match(maybe_uuid):
        return maybe_uuid
    return None


# ---------------------------------------------------------------------------
# Path sanitization
# ---------------------------------------------------------------------------


def _simple_hash(s: str) -> str:
    """32-bit integer hash to base36, matching the CLI's directory naming."""
    h = 0
    for ch in s:
        char = ord(ch)
        h = (h << 5) - h + char
        # Emulate JS `hash |= 0` (coerce to 32-bit signed int)
        h = h & 0xFFFFFFFF
        if h >= 0x80000000:
            h -= 0x100000000
    h = abs(h)
    # JS toString(36)
    if h == 0:
        return "0"
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = []
    n = h
    while n > 0:
        out.append(digits[n % 36])
        n //= 36
    return "".join(reversed(out))


def _sanitize_path(name: str) -> str:
    """Makes a string safe for use as a directory name.

    Replaces all non-alphanumeric characters with hyphens. For paths
    exceeding MAX_SANITIZED_LENGTH, truncates and appends a hash suffix.
    """
    sanitized = _SANITIZE_RE.sub("-", name)
    if len(sanitized) <= MAX_SANITIZED_LENGTH:
        return sanitized
    h = _simple_hash(name)
    return f"{sanitized[:MAX_SANITIZED_LENGTH]}-{h}"


# ---------------------------------------------------------------------------
# Config directories
# ---------------------------------------------------------------------------


def _get_claude_config_home_dir() -> Path:
    """Returns the Claude config directory (respects CLAUDE_CONFIG_DIR)."""
    config_dir = os.environ.get("CLAUDE_CONFIG_DIR")
    if config_dir:
        return Path(unicodedata.normalize("NFC", config_dir))
    return Path(unicodedata.normalize("NFC", str(Path.home() / ".claude")))


def _get_projects_dir(env_override: dict[str, str] | None = None) -> Path:
    """Returns the projects directory.

    ``env_override`` is consulted before ``os.environ`` so callers that pass
    ``CLAUDE_CONFIG_DIR`` to the subprocess via ``options.env`` resolve the
    same directory the subprocess will write to.
    """
    if env_override:
        override = env_override.get("CLAUDE_CONFIG_DIR")
        if override:
            return Path(unicodedata.normalize("NFC", override)) / "projects"
    return _get_claude_config_home_dir() / "projects"


def _get_project_dir(project_path: str) -> Path:
    return _get_projects_dir() / _sanitize_path(project_path)


def _canonicalize_path(d: str) -> str:
    """Resolves a directory path to its canonical form using realpath + NFC."""
    try:
        resolved = os.path.realpath(d)
        return unicodedata.normalize("NFC", resolved)
    except OSError:
        return unicodedata.normalize("NFC", d)


def _find_project_dir(project_path: str) -> Path | None:
    """Finds the project directory for a given path.

    Tolerates hash mismatches for long paths (>200 chars). The CLI uses
    Bun.hash while the SDK under Node.js uses simpleHash — for paths that
    exceed MAX_SANITIZED_LENGTH, these produce different directory suffixes.
    This function falls back to prefix-based scanning when the exact match
    doesn't exist.
    """
    exact = _get_project_dir(project_path)
    if exact.is_dir():
        return exact

    # Exact match failed — for short paths this means no sessions exist.
    # For long paths, try prefix matching to handle hash mismatches.
    sanitized = _sanitize_path(project_path)
    if len(sanitized) <= MAX_SANITIZED_LENGTH:
        return None

    prefix = sanitized[:MAX_SANITIZED_LENGTH]
    projects_dir = _get_projects_dir()
    try:
        for entry in projects_dir.iterdir():
            if entry.is_dir() and entry.name.startswith(prefix + "-"):
                return entry
    except OSError:
        pass
    return None



# ---------------------------------------------------------------------------
# Git worktree detection
# ---------------------------------------------------------------------------


def _get_worktree_paths(cwd: str) -> list[str]:
    """Returns absolute worktree paths for the git repo containing cwd.

    Returns empty list if git is unavailable or cwd is not in a repo.
    """
    try:
        result = subprocess.run(
            ["git", "worktree", "list", "--porcelain"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []

    if result.returncode != 0 or not result.stdout:
        return []

    paths = []
    for line in result.stdout.split("\n"):
        if line.startswith("worktree "):
            path = unicodedata.normalize("NFC", line[len("worktree ") :])
            paths.append(path)
    return paths


def project_key_for_directory(directory: str | Path | None = None) -> str:
    """Derive the :class:`SessionStore` ``project_key`` for a directory.

    Defaults to the current working directory. Uses the same realpath + NFC
    normalization + djb2-hashed sanitization the CLI uses for project
    directory names, so keys match between local-disk transcripts and
    store-mirrored transcripts even on filesystems that decompose Unicode
    (macOS HFS+).
    """
    abs_path = _canonicalize_path(str(directory) if directory is not None else ".")
    return _sanitize_path(abs_path)


def _agent_metadata_sidecar_path(transcript_path: Path) -> Path:
    """``agent-<id>.jsonl`` -> ``agent-<id>.meta.json`` (same directory).

    The single definition of the sidecar naming convention, shared by the
    read path here, session import, and resume materialization.
    """
    return transcript_path.with_name(
        transcript_path.name[: -len(".jsonl")] + ".meta.json"
    )


def _read_agent_metadata_sidecar(transcript_path: Path) -> dict[str, Any] | None:
    """Read the ``.meta.json`` sidecar beside a subagent transcript.

    Returns ``None`` when the sidecar is missing, unreadable, not valid JSON,
    or not a JSON object — an unusable optional sidecar degrades to an absent
    one. Other ``OSError``s (e.g. permission denied) propagate.
    """
    try:
        meta = json.loads(
            _agent_metadata_sidecar_path(transcript_path).read_text(encoding="utf-8")
        )
    except FileNotFoundError:
        return None
    except ValueError:
        return None
    return meta if isinstance(meta, dict) else None


def _split_agent_metadata(
    entries: list[Any],
) -> tuple[dict[str, Any] | None, list[Any]]:
    """Separate the synthetic ``agent_metadata`` entry from transcript lines.

    A subagent's :class:`SessionStore` stream carries its ``.meta.json``
    sidecar as ``{"type": "agent_metadata", ...}`` entries alongside the
    transcript. Returns ``(metadata, transcript)`` where ``metadata`` is the
    *last* such entry (it is rewritten on resume, so last wins) or ``None``.
    """
    metadata: dict[str, Any] | None = None
    transcript: list[Any] = []
    for e in entries:
        if isinstance(e, dict) and e.get("type") == "agent_metadata":
            metadata = dict(e)
        else:
            transcript.append(e)
    return metadata, transcript


def _parent_ids_from_agent_metadata(
    meta: dict[str, Any] | None,
) -> tuple[str | None, str | None]:
    """Extract ``(toolUseId, parentAgentId)`` from an agent metadata dict.

    Works for both the on-disk ``.meta.json`` sidecar and the synthetic
    ``agent_metadata`` entry a :class:`SessionStore` receives in its place.
    """
    if not meta:
        return None, None
    tool_use_id = meta.get("toolUseId")
    parent_agent_id = meta.get("parentAgentId")
    return (
        tool_use_id if isinstance(tool_use_id, str) else None,
        parent_agent_id if isinstance(parent_agent_id, str) else None,
    )

def file_path_to_session_key(file_path: str, projects_dir: str) -> SessionKey | None:
    """Derive a :class:`SessionKey` from an absolute transcript file path.

    Main transcripts: ``<projects_dir>/<project_key>/<session_id>.jsonl``
    Subagent transcripts: ``<projects_dir>/<project_key>/<session_id>/subagents/agent-<id>.jsonl``

    Returns ``None`` if ``file_path`` is not under ``projects_dir`` or has an
    unrecognized shape.
    """
    try:
        rel = os.path.relpath(file_path, projects_dir)
    except ValueError:
        # Windows: relpath raises when the paths are on different drives.
        # Treat as "not under projects_dir" so the batcher drops the frame
        # with a warning instead of letting the exception escape _drain().
        return None
    rel_path = Path(rel)
    parts = list(rel_path.parts)
    if not parts or parts[0] == ".." or rel_path.is_absolute():
        return None

    if len(parts) < 2:
        return None

    project_key = parts[0]
    second = parts[1]

    # Main transcript: <project_key>/<session_id>.jsonl
    if len(parts) == 2 and second.endswith(".jsonl"):
        return {"project_key": project_key, "session_id": second[: -len(".jsonl")]}

    # Subagent transcript: <project_key>/<session_id>/subagents/.../agent-<id>.jsonl
    if len(parts) >= 4:
        subpath_parts = parts[2:]
        last = subpath_parts[-1]
        if last.endswith(".jsonl"):
            subpath_parts[-1] = last[: -len(".jsonl")]
        # Subpaths are always /-joined regardless of os.sep so keys are
        # portable across platforms.
        return {
            "project_key": project_key,
            "session_id": second,
            "subpath": "/".join(subpath_parts),
        }

    return None

def _store_implements(store: SessionStore, method: str) -> bool:
    """True if ``store`` overrides ``method`` rather than inheriting the
    Protocol default that raises :class:`NotImplementedError`."""
    impl = getattr(store, method, None)
    if impl is None:
        return False
    default = getattr(SessionStore, method, None)
    return getattr(type(store), method, None) is not default


def validate_session_store_options(options: ClaudeAgentOptions) -> None:
    """Raise :class:`ValueError` for invalid ``session_store`` option combinations.

    Called before subprocess spawn so misconfiguration fails fast instead of
    surfacing as a confusing runtime error mid-session.
    """
    store = options.session_store
    if store is None:
        return

    if (
        options.continue_conversation
        and options.resume is None
        and not _store_implements(store, "list_sessions")
    ):
        # When resume is explicitly set, list_sessions() is provably never
        # called (resume wins over continue), so a minimal store is fine.
        raise ValueError(
            "continue_conversation with session_store requires the store to "
            "implement list_sessions()"
        )

    if options.enable_file_checkpointing:
        raise ValueError(
            "session_store cannot be combined with enable_file_checkpointing "
            "(checkpoints are local-disk only and would diverge from the "
            "mirrored transcript)"
        )


# ---------------------------------------------------------------------------
# Calling a store: its methods may be plain or ``async def`` (as callbacks may)
# ---------------------------------------------------------------------------


# A store method is called as a callback is: plain or ``async def`` (see call_user).
call_store = call_user


class StoreTimeout(Exception):
    """A store call did not return in time (see :func:`call_store_bounded`)."""


def call_store_bounded(timeout: float, method: Any, *args: Any) -> Any:
    """:func:`call_store` on a helper thread, waiting at most ``timeout`` seconds.

    Returns the result, re-raises what the store raised, or raises
    :class:`StoreTimeout`. A store that hangs keeps its (daemon) helper thread
    until it returns: a call into user code cannot be cancelled.
    """
    future = in_thread(lambda: call_user(method, *args), "claude-sdkurl-store-call")
    try:
        return future.result(timeout)
    except FutureTimeout:
        if future.done():
            raise  # the store itself raised a TimeoutError: an error of the store, not a hang
        raise StoreTimeout() from None


def call_store_within(timeout: float, what: str, method: Any, *args: Any) -> Any:
    """:func:`call_store_bounded` for resuming from a store: :class:`SessionStoreError`
    naming ``what`` when the store raises or does not answer in time."""
    try:
        return call_store_bounded(timeout, method, *args)
    except StoreTimeout:
        raise SessionStoreError(f"{what} timed out after {int(timeout * 1000)}ms during resume materialization") from None
    except Exception as error:
        raise SessionStoreError(f"{what} failed during resume materialization: {error}") from error
