"""Resuming a session that lives in a store: copy it into a throw-away config directory.

The CLI resumes only from a local transcript. With ``session_store`` and
``resume`` (or ``continue_conversation``) the launch plan calls
:func:`materialize`, which writes the stored session, and its subagents, into a
new temporary directory laid out as ``~/.claude`` is; the CLI is then started
with ``CLAUDE_CONFIG_DIR`` pointing there (:func:`repoint`) and the directory is
removed once the CLI has exited (:attr:`Materialized.cleanup`). The directory has
an owner lock (:mod:`.owned`): one left by a process killed outright is removed
by the next process that resumes a session, one whose process lives never.

Rules (facts of the official SDK's and the CLI's):

* ``resume``: only a valid session id is looked up; an empty or missing
  session means "start afresh" (``None``), as the CLI does.
* ``continue_conversation``: the newest session by ``list_sessions()`` mtime
  that loads and whose first entry is not a sidechain's (a subagent's
  transcript often has the newest mtime).
* So that the CLI can log in from there, the caller's config is copied in:
  ``.credentials.json`` without its OAuth refresh token (a refresh there would
  spend the caller's token), ``.claude.json``, and ``settings.json`` /
  ``cowork_settings.json`` without plugin declarations and without
  ``env.CLAUDE_CONFIG_DIR``. On macOS with no other login the credentials come
  from the Keychain. A file that is missing or unreadable is skipped.
* Subpaths from ``list_subkeys()`` become file paths, so one that is empty,
  absolute, has a drive, a ``.``/``..`` part or a NUL, or resolves outside the
  session's directory is skipped with a warning.
* Every store call is bounded by ``load_timeout_ms``; a failure, a time-out or
  an answer that is not a list of entries is a
  :class:`~claude_sdkurl.SessionStoreError`, and nothing is left on disk.
"""

from __future__ import annotations

import errno
import getpass
import json
import logging
import ntpath
import os
import platform
import re
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .._errors import SessionStoreError
from ..types import ClaudeAgentOptions, SessionKey, SessionStore
from . import paths as _paths
from . import storecall as _storecall
from .owned import make_owned, remove_abandoned

logger = logging.getLogger("claude_sdkurl.resume")
_PREFIX, _NEW_PREFIX = "claude-resume-", ".new-claude-resume-"  # the throw-away config directories (see owned)

KEYCHAIN_SERVICE = "Claude Code-credentials"
_SETTINGS_DROPPED = ("enabledPlugins", "extraKnownMarketplaces")


@dataclass
class Materialized:
    """A stored session written out for the CLI: the config directory to give it, the
    session id to resume, and how to remove the directory (never raises)."""

    config_dir: Path
    resume_session_id: str
    cleanup: Callable[[], None]


def repoint(options: ClaudeAgentOptions, done: Materialized) -> ClaudeAgentOptions:
    """``options`` for the CLI that resumes ``done``: its config directory, that session id,
    and no ``continue_conversation`` left to resolve."""
    env = {**options.env, "CLAUDE_CONFIG_DIR": str(done.config_dir)}
    return replace(options, env=env, resume=done.resume_session_id, continue_conversation=False)


class _Store:
    """The store calls of one resume, each bounded and checked (see the module doc)."""

    def __init__(self, store: SessionStore, project_key: str, seconds: float) -> None:
        self.store, self.project_key, self.seconds = store, project_key, seconds

    def entries(self, session_id: str, subpath: str | None = None) -> list[dict[str, Any]] | None:
        what = f"SessionStore.load() for session {session_id}" + (f" subpath {subpath}" if subpath else "")
        key: SessionKey = {"project_key": self.project_key, "session_id": session_id}
        if subpath:
            key["subpath"] = subpath
        got = _storecall.call_for_resume(self.seconds, what, self.store.load, key)
        if not got:
            return None
        if not isinstance(got, list) or not all(isinstance(e, dict) for e in got):
            kind = "a list with non-object items" if isinstance(got, list) else type(got).__name__
            raise SessionStoreError(f"{what} returned {kind}, not a list of entries (dicts)")
        return got

    def newest_first(self) -> list[str]:
        listed = _storecall.call_for_resume(self.seconds, "SessionStore.list_sessions()", self.store.list_sessions, self.project_key)
        if not listed:
            return []
        shaped = isinstance(listed, list) and all(
            isinstance(s, dict) and isinstance(s.get("session_id"), str) and isinstance(s.get("mtime"), (int, float))
            for s in listed
        )
        if not shaped:
            raise SessionStoreError("SessionStore.list_sessions() returned something else than [{session_id, mtime}, ...]")
        return [s["session_id"] for s in sorted(listed, key=lambda s: s["mtime"], reverse=True)]

    def subpaths(self, session_id: str) -> list[str]:
        what = f"SessionStore.list_subkeys() for session {session_id}"
        key = {"project_key": self.project_key, "session_id": session_id}
        return list(_storecall.call_for_resume(self.seconds, what, self.store.list_subkeys, key))


def _pick(calls: _Store, options: ClaudeAgentOptions) -> tuple[str, list[dict[str, Any]]] | None:
    if options.resume is not None:
        if not _paths.is_session_id(options.resume):
            return None
        found = calls.entries(options.resume)
        return (options.resume, found) if found else None
    for sid in calls.newest_first():
        if not _paths.is_session_id(sid):
            continue
        found = calls.entries(sid)
        if found and found[0].get("isSidechain") is not True:
            return sid, found
    return None


def materialize(options: ClaudeAgentOptions) -> Materialized | None:
    """Write the session ``options`` ask to resume from their store into a temporary config
    directory; ``None`` when there is nothing to resume from the store (see the module doc)."""
    store = options.session_store
    if store is None or (options.resume is None and not options.continue_conversation):
        return None
    project_key = _paths.project_key_for_directory(options.cwd)
    calls = _Store(store, project_key, options.load_timeout_ms / 1000)
    picked = _pick(calls, options)
    if picked is None:
        return None
    session_id, entries = picked
    parent = Path(tempfile.gettempdir())
    remove_abandoned(parent, _PREFIX, _NEW_PREFIX)  # left by processes killed outright: a copy of a login each
    root, owner = make_owned(parent, _PREFIX, _NEW_PREFIX)
    held = [owner]  # (emptied by the first cleanup: the descriptor is closed once)

    def cleanup() -> None:
        _remove(root)
        while held:
            with suppress(OSError):
                os.close(held.pop())  # (after the removal: no sweep takes the folder for a dead one's)

    try:
        project = root / "projects" / project_key
        _write_lines(project / f"{session_id}.jsonl", entries)
        _copy_login(root, options.env)
        if _storecall.implements(store, "list_subkeys"):
            _write_subagents(calls, project / session_id, session_id)
    except BaseException:  # an interrupt too: the copied credentials must not stay behind
        cleanup()
        raise
    return Materialized(root, session_id, cleanup)


# ---------------------------------------------------------------- writing files


def _private(path: Path) -> None:
    with suppress(OSError):
        path.chmod(0o600)


def _write_lines(path: Path, entries: list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        out.writelines(json.dumps(e, separators=(",", ":")) + "\n" for e in entries)
    _private(path)


def _subpath_is_safe(subpath: str, session_dir: Path) -> bool:
    """See the module doc: a store key may not reach outside the session's directory."""
    parts = re.split(r"[\\/]", subpath)
    if not subpath or "\x00" in subpath or subpath[0] in "/\\" or Path(subpath).is_absolute():
        return False
    if ntpath.splitdrive(subpath)[0] or any(p in (".", "..") for p in parts):
        return False
    target = session_dir / subpath
    try:
        target.with_name(target.name + ".jsonl").resolve().relative_to(session_dir.resolve())
    except (ValueError, OSError):
        return False
    return True


def _write_subagents(calls: _Store, session_dir: Path, session_id: str) -> None:
    for subpath in calls.subpaths(session_id):
        if not _subpath_is_safe(subpath, session_dir):
            logger.warning("[SessionStore] skipping unsafe subpath from list_subkeys: %r", subpath)
            continue
        found = calls.entries(session_id, subpath)
        if not found:
            continue
        meta, lines = _paths.split_metadata(found)
        target = session_dir / subpath
        transcript = target.with_name(target.name + ".jsonl")
        if lines:
            _write_lines(transcript, lines)
        if meta is not None:
            sidecar = _paths.sidecar_of(transcript)
            sidecar.parent.mkdir(parents=True, exist_ok=True)
            sidecar.write_text(json.dumps({k: v for k, v in meta.items() if k != "type"}), encoding="utf-8")
            _private(sidecar)


_TRANSIENT = frozenset({errno.EBUSY, errno.EMFILE, errno.ENFILE, errno.ENOTEMPTY, errno.EPERM, errno.EACCES})


def _remove(root: Path) -> None:
    """Remove ``root``; a few short retries while something (a virus scanner on Windows)
    holds a file, then whatever can be removed. Never raises."""
    for _ in range(4):
        if not root.exists():
            return
        try:
            shutil.rmtree(root)
            return
        except OSError as error:
            if error.errno not in _TRANSIENT and not isinstance(error, PermissionError):
                break
        time.sleep(0.1)
    shutil.rmtree(root, ignore_errors=True)


# ---------------------------------------------------------------- the caller's login


def _readable(path: Path) -> bytes | None:
    """A regular file's bytes; ``None`` when missing (quietly) or unreadable, a directory or
    a FIFO (with a warning: reading a FIFO would hang the resume)."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise OSError(f"{path} is not a regular file")
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        logger.warning("[SessionStore] resume: skipping %s (%s)", path, error)
        return None


def _copy(source: Path, target: Path, change: Callable[[bytes], bytes] | None = None) -> None:
    data = _readable(source)
    if data is None:
        return
    try:
        target.write_bytes(change(data) if change else data)
        _private(target)
    except OSError as error:
        with suppress(OSError):
            target.unlink(missing_ok=True)  # no half-written file for the CLI to misread
        logger.warning("[SessionStore] resume: skipping %s (%s)", source, error)


def _settings_for_resume(data: bytes) -> bytes:
    """Settings without plugin declarations (they would be installed again into the empty
    temporary directory) and without ``env.CLAUDE_CONFIG_DIR``; untouched when not a JSON
    object or when nothing had to go."""
    try:
        settings = json.loads(data.decode("utf-8-sig"))  # the CLI accepts a BOM
    except ValueError:
        return data
    if not isinstance(settings, dict):
        return data
    dropped = [settings.pop(k) for k in _SETTINGS_DROPPED if k in settings]
    env = settings.get("env")
    if isinstance(env, dict) and "CLAUDE_CONFIG_DIR" in env:
        dropped.append(env.pop("CLAUDE_CONFIG_DIR"))
    if not dropped:
        return data
    try:
        return json.dumps(settings, separators=(",", ":"), allow_nan=False).encode()
    except ValueError:  # a number JSON cannot write back (1e999 read as inf)
        return data


def _without_refresh_token(text: str) -> str:
    try:
        creds = json.loads(text)
    except ValueError:
        return text
    oauth = creds.get("claudeAiOauth") if isinstance(creds, dict) else None
    if not isinstance(oauth, dict) or "refreshToken" not in oauth:
        return text
    del oauth["refreshToken"]
    return json.dumps(creds)


def _keychain_credentials() -> str | None:
    """The Claude Code credentials in the macOS Keychain (``None`` anywhere else)."""
    if platform.system() != "Darwin":
        return None
    try:
        account = os.environ.get("USER") or getpass.getuser()
    except Exception:
        account = "claude-code-user"
    try:
        found = subprocess.run(
            ["security", "find-generic-password", "-a", account, "-w", "-s", KEYCHAIN_SERVICE],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except Exception:
        return None
    return (found.stdout.strip() or None) if found.returncode == 0 else None


def _copy_login(root: Path, env: dict[str, str]) -> None:
    """The caller's login and user settings into ``root`` (see the module doc). The config
    directory is ``CLAUDE_CONFIG_DIR`` (``options.env`` first), else ``~/.claude``;
    ``.claude.json`` sits inside a ``CLAUDE_CONFIG_DIR`` but beside ``~/.claude``."""

    def var(name: str) -> str | None:
        return env.get(name) or os.environ.get(name)

    chosen = var("CLAUDE_CONFIG_DIR")
    source = Path(chosen) if chosen else Path.home() / ".claude"
    raw = _readable(source / ".credentials.json")
    creds = raw.decode("utf-8") if raw is not None else None
    if chosen is None and not var("ANTHROPIC_API_KEY") and not var("CLAUDE_CODE_OAUTH_TOKEN"):
        # The CLI's Keychain entry is named after its config dir: under ours it would find
        # none and fall back to a credentials file, so write one.
        creds = _keychain_credentials() or creds
    if creds is not None:
        target = root / ".credentials.json"
        target.write_text(_without_refresh_token(creds), encoding="utf-8")
        _private(target)
    _copy((Path(chosen) if chosen else Path.home()) / ".claude.json", root / ".claude.json")
    for name in ("settings.json", "cowork_settings.json"):
        _copy(source / name, root / name, _settings_for_resume)
