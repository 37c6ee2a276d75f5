"""``_files.replace_whole``: the one way a kept file is written (scorecards, tapes, ported
sources, the CLI version cache). Hostile first: a write cut short by ``RLIMIT_FSIZE``, a folder
that cannot be written, then the mode and the content."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from claude_sdkurl._files import replace_whole

CUT_SHORT = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing
resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
from claude_sdkurl._files import replace_whole
try:
    replace_whole(sys.argv[1], "new " * 10000)
except OSError as e:
    print("refused", e.errno)
"""


def test_a_write_cut_short_leaves_the_old_file_whole_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "card.jsonl"
    target.write_text("old and whole\n")
    out = subprocess.run([sys.executable, "-c", CUT_SHORT, str(target)], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).parent.parent)  # fmt: skip
    assert out.stdout.startswith("refused"), out.stdout + out.stderr
    assert target.read_text() == "old and whole\n"
    assert [p.name for p in tmp_path.iterdir()] == ["card.jsonl"]


def test_a_place_that_cannot_be_written_raises_and_leaves_nothing(tmp_path: Path) -> None:
    """A folder that is a file (root writes into read-only folders, so this is how the test
    makes one it cannot write, whoever runs it): the error is raised, nothing is left."""
    (tmp_path / "plain").write_text("a file, not a folder")
    with pytest.raises(NotADirectoryError):
        replace_whole(tmp_path / "plain" / "card.jsonl", "new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain"] and (tmp_path / "plain").read_text() == "a file, not a folder"


def test_private_by_default_or_the_mode_asked_and_the_whole_content(tmp_path: Path) -> None:
    replace_whole(tmp_path / "a", "héllo\n")
    assert (tmp_path / "a").read_text(encoding="utf-8") == "héllo\n" and stat.S_IMODE(os.stat(tmp_path / "a").st_mode) == 0o600
    replace_whole(tmp_path / "b", b"\x00bytes", mode=0o644)
    assert (tmp_path / "b").read_bytes() == b"\x00bytes" and stat.S_IMODE(os.stat(tmp_path / "b").st_mode) == 0o644
    replace_whole(tmp_path / "a", "again")
    assert (tmp_path / "a").read_text() == "again" and sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


@pytest.mark.parametrize("elsewhere", ["another filesystem", "missing"])
def test_the_temporary_is_beside_the_target_whatever_tmpdir_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, elsewhere: str) -> None:
    """``$TMPDIR`` on another filesystem than the target (a rename across filesystems fails, or
    would not be atomic as a copy) or a ``$TMPDIR`` that does not exist: neither is used, the
    temporary is made beside the target and renamed within its folder (issue 57, item 9)."""
    import tempfile

    shm = Path("/dev/shm")
    assert os.stat(shm).st_dev != os.stat(tmp_path).st_dev  # the premise: two filesystems
    other = Path(tempfile.mkdtemp(dir=shm)) if elsewhere == "another filesystem" else tmp_path / "no" / "such" / "dir"
    monkeypatch.setenv("TMPDIR", str(other))
    monkeypatch.setattr(tempfile, "tempdir", str(other))  # (tempfile caches what TMPDIR said)
    renames: list[tuple[str, str]] = []
    replace = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (renames.append((str(a), str(b))), replace(a, b))[1])
    target = tmp_path / "kept" / "card.jsonl"
    target.parent.mkdir()
    target.write_text("old\n")
    try:
        replace_whole(target, "new\n")
        assert target.read_text() == "new\n"
        assert [Path(a).parent for a, b in renames] == [target.parent] and [b for a, b in renames] == [str(target)]
        assert [p.name for p in target.parent.iterdir()] == ["card.jsonl"]
        assert not other.exists() or list(other.iterdir()) == []
    finally:
        if elsewhere == "another filesystem":
            import shutil

            shutil.rmtree(other, ignore_errors=True)


def test_a_write_interrupted_by_ctrl_c_leaves_the_old_file_whole_and_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C (``KeyboardInterrupt``, not an ``OSError``) while the data is being made durable:
    it goes on to the caller, the old file is whole and no temporary is left (issue 57, item 10)."""
    target = tmp_path / "tape.json"
    target.write_text("old and whole\n")

    def ctrl_c(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        replace_whole(target, "new " * 1000)
    assert target.read_text() == "old and whole\n"
    assert [p.name for p in tmp_path.iterdir()] == ["tape.json"]
