"""The throw-away config directories of sessions resumed from a store (``_engine/resume.py``):
they hold a copy of the caller's login, so one left by a process killed outright (SIGKILL: its
own cleanup never ran) is removed by the next process that resumes a session, and one whose
process lives is never touched. No CLI: ``materialize()`` itself, in real processes."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from claude_sdkurl import ClaudeAgentOptions, InMemorySessionStore
from claude_sdkurl._engine import owned
from claude_sdkurl._engine.paths import project_key_for_directory
from claude_sdkurl._engine.resume import materialize

SID = "8d2b1c3e-0000-4000-8000-00000000000{}"

# Writes a session into an in-memory store, materializes it (its temporary folder under the
# TMPDIR it is given), prints the folder, then waits to be killed.
HOLDER = r"""
import json, sys, tempfile
from claude_sdkurl import ClaudeAgentOptions, InMemorySessionStore
from claude_sdkurl._engine.paths import project_key_for_directory
from claude_sdkurl._engine.resume import materialize
cwd, sid = sys.argv[1], sys.argv[2]
store = InMemorySessionStore()
store.append({"project_key": project_key_for_directory(cwd), "session_id": sid}, [{"type": "user", "uuid": "u"}])
done = materialize(ClaudeAgentOptions(cwd=cwd, session_store=store, resume=sid, env={"HOME": cwd}))
print(json.dumps({"folder": str(done.config_dir)}), flush=True)
sys.stdin.read()
"""


def holder(tmp: Path, cwd: Path, n: int) -> tuple[subprocess.Popen[str], Path]:
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(cwd), SID.format(n)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(tmp)})  # fmt: skip
    assert process.stdout is not None
    return process, Path(json.loads(process.stdout.readline())["folder"])


def resume_here(cwd: Path, n: int) -> object:
    store = InMemorySessionStore()
    store.append({"project_key": project_key_for_directory(cwd), "session_id": SID.format(n)}, [{"type": "user", "uuid": "u"}])
    return materialize(ClaudeAgentOptions(cwd=cwd, session_store=store, resume=SID.format(n), env={"HOME": str(cwd)}))


def test_a_killed_processs_folder_goes_at_the_next_resume_a_living_ones_stays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    cwd = tmp_path / "work"
    cwd.mkdir()
    killed, killed_folder = holder(tmp, cwd, 1)
    living, living_folder = holder(tmp, cwd, 2)
    try:
        assert killed_folder.parent == tmp and killed_folder.name.startswith("claude-resume-")
        assert stat.S_IMODE(os.stat(killed_folder).st_mode) == 0o700
        killed.send_signal(signal.SIGKILL)
        killed.wait(30)
        assert killed_folder.exists()  # its own cleanup never ran
        done = resume_here(cwd, 3)
        try:
            assert not killed_folder.exists()  # the next resume removed it
            assert living_folder.exists() and (living_folder / "projects").exists()  # its owner lives: untouched
            assert done.config_dir.exists()  # type: ignore[attr-defined]
        finally:
            done.cleanup()  # type: ignore[attr-defined]
        assert not done.config_dir.exists()  # type: ignore[attr-defined]
    finally:
        for process in (killed, living):
            process.kill()
            process.wait(30)
            process.stdin.close()  # type: ignore[union-attr]
            process.stdout.close()  # type: ignore[union-attr]


def test_what_is_not_ours_or_still_being_made_is_left(tmp_path: Path) -> None:
    plain = tmp_path / "claude-resume-madeby-someone"  # no owner file: not made this way
    plain.mkdir()
    fresh = tmp_path / ".new-claude-resume-abc"  # half-made a moment ago: its maker may be at it
    fresh.mkdir()
    stale = tmp_path / ".new-claude-resume-old"  # half-made long ago
    stale.mkdir()
    old = time.time() - owned.ABANDONED_AFTER - 5
    os.utime(stale, (old, old))
    link = tmp_path / "claude-resume-link"
    link.symlink_to(plain)
    assert owned.remove_abandoned(tmp_path, "claude-resume-", ".new-claude-resume-") == 1
    assert plain.exists() and fresh.exists() and link.is_symlink() and not stale.exists()
