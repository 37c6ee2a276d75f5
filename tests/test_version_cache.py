"""``claude --version`` is run once per binary across processes (about 50 ms a program paid
before its CLI started): the answer is kept in a small file, keyed by the binary's identity.
The file is ours to lose: whatever is wrong with it (torn, corrupt, forged, unwritable, a write
cut short), the version is read from the binary itself and nothing raises."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from claude_sdkurl._engine import cli as _cli

from .test_options import executable


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cache" / "cli-versions.json"
    monkeypatch.setenv(_cli.VERSION_CACHE_ENV, str(path))
    return path


def counting_cli(tmp_path: Path, version: str = "2.1.330") -> tuple[Path, Path]:
    runs = tmp_path / "runs"
    return executable(tmp_path / "claude", f"#!/bin/sh\necho x >> {runs}\necho '{version} (Claude Code)'\n"), runs


def runs_of(runs: Path) -> int:
    return runs.read_text().count("x") if runs.exists() else 0


def another_process(cli: Path) -> str:
    """``cli_version`` in a fresh interpreter (the in-memory cache empty), as another program."""
    code = f"from claude_sdkurl._engine.cli import cli_version, format_version; print(format_version(cli_version({str(cli)!r})))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=os.environ.copy())
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_second_program_does_not_run_the_binary_again(tmp_path: Path, cache: Path) -> None:
    cli, runs = counting_cli(tmp_path)
    assert another_process(cli) == "2.1.330" and runs_of(runs) == 1
    assert another_process(cli) == "2.1.330" and runs_of(runs) == 1
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600  # private, as every file we write
    assert [p.name for p in cache.parent.iterdir()] == [cache.name]  # no temporary file left


def test_a_changed_binary_at_the_same_path_is_asked_again(tmp_path: Path, cache: Path) -> None:
    cli, runs = counting_cli(tmp_path)
    assert another_process(cli) == "2.1.330"
    executable(cli, cli.read_text().replace("2.1.330", "2.1.331"))  # an update in place
    assert another_process(cli) == "2.1.331" and runs_of(runs) == 2

    # Replaced in place with its times put back (``cp -p``, ``touch -r``): the same path, device,
    # inode, size and modification time as the entry the cache holds; the change time alone differs.
    before = cli.stat()
    deadline = time.monotonic() + 10
    while True:
        executable(cli, cli.read_text().replace("2.1.331", "2.1.332"))
        os.utime(cli, ns=(before.st_atime_ns, before.st_mtime_ns))
        after = cli.stat()
        if after.st_ctime_ns != before.st_ctime_ns or time.monotonic() > deadline:
            break
        time.sleep(0.01)  # the same tick of the file system's clock: write again
    assert (after.st_dev, after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_dev, before.st_ino, before.st_size, before.st_mtime_ns)
    assert after.st_ctime_ns != before.st_ctime_ns
    assert another_process(cli) == "2.1.332" and runs_of(runs) == 3


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b'{"versions": {"',  # torn mid-write
        b"\x00\xff garbage",
        b"[1, 2, 3]",
        b'{"versions": [1, 2]}',
        b'{"versions": "nope"}',
        b"9" * 5000,
    ],
)
def test_a_damaged_cache_is_ignored_and_mended(tmp_path: Path, cache: Path, content: bytes) -> None:
    cli, runs = counting_cli(tmp_path)
    cache.parent.mkdir(parents=True)
    cache.write_bytes(content)
    assert another_process(cli) == "2.1.330" and runs_of(runs) == 1
    assert another_process(cli) == "2.1.330" and runs_of(runs) == 1  # mended: the next program reads it
    json.loads(cache.read_text())


def test_a_forged_or_malformed_entry_is_not_believed(tmp_path: Path, cache: Path) -> None:
    cli, runs = counting_cli(tmp_path)
    assert another_process(cli) == "2.1.330"
    data = json.loads(cache.read_text())
    (key,) = data["versions"]
    for bad in (["2", "1", "0"], [2, 1], [2, 1, -5], [2, 1, True], "2.1.0", None, [2, 1, 10**12]):
        data["versions"][key] = bad
        cache.write_text(json.dumps(data))
        assert another_process(cli) == "2.1.330"
    assert runs_of(runs) == 8  # each bad entry: the binary asked again


def test_an_unwritable_cache_costs_a_run_per_program_and_nothing_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache's folder would be (unwritable even for root)")
    monkeypatch.setenv(_cli.VERSION_CACHE_ENV, str(blocker / "cli-versions.json"))
    cli, runs = counting_cli(tmp_path)
    assert another_process(cli) == "2.1.330" and another_process(cli) == "2.1.330"
    assert runs_of(runs) == 2 and blocker.read_text().startswith("a file")


def test_a_cache_path_that_cannot_be_a_file_is_harmless(tmp_path: Path, cache: Path) -> None:
    cli, runs = counting_cli(tmp_path)
    cache.mkdir(parents=True)  # a folder where the file should be
    assert another_process(cli) == "2.1.330" and another_process(cli) == "2.1.330"
    assert runs_of(runs) == 2 and cache.is_dir()


def test_a_write_cut_short_leaves_the_old_cache_whole(tmp_path: Path, cache: Path) -> None:
    """RLIMIT_FSIZE (a disk as good as full) stops the write: the cache keeps what it had and no
    temporary file is left; the program still gets its version."""
    (tmp_path / "a").mkdir()
    first, _ = counting_cli(tmp_path / "a")
    assert another_process(first) == "2.1.330"
    before = cache.read_bytes()
    (tmp_path / "b").mkdir()
    second, runs = counting_cli(tmp_path / "b", "2.1.120")
    code = ("import resource; resource.setrlimit(resource.RLIMIT_FSIZE, (40, 40)); "
            f"from claude_sdkurl._engine.cli import cli_version, format_version; print(format_version(cli_version({str(second)!r})))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "2.1.120", done.stderr
    assert cache.read_bytes() == before
    assert [p.name for p in cache.parent.iterdir()] == [cache.name]


def test_programs_writing_at_once_leave_a_whole_file(tmp_path: Path, cache: Path) -> None:
    clis = []
    for i in range(8):
        (tmp_path / f"c{i}").mkdir()
        clis.append(counting_cli(tmp_path / f"c{i}", f"2.1.{300 + i}")[0])
    code = "import sys\nfrom claude_sdkurl._engine.cli import cli_version\nfor c in sys.argv[1:]: cli_version(c)\n"
    procs = [subprocess.Popen([sys.executable, "-c", code, *map(str, clis[i:] + clis[:i])]) for i in range(4)]
    assert [p.wait(60) for p in procs] == [0] * 4
    kept = json.loads(cache.read_text())["versions"]
    assert set(map(tuple, kept.values())) <= {(2, 1, 300 + i) for i in range(8)} and kept  # whole, never mixed up
    assert [p.name for p in cache.parent.iterdir()] == [cache.name]


def test_the_cache_stays_small(tmp_path: Path, cache: Path) -> None:
    for i in range(_cli.VERSION_CACHE_ENTRIES + 10):
        (tmp_path / f"c{i}").mkdir()
        cli, _ = counting_cli(tmp_path / f"c{i}")
        _cli._version_cache.clear()
        _cli.cli_version(str(cli))
    assert len(json.loads(cache.read_text())["versions"]) == _cli.VERSION_CACHE_ENTRIES


def test_an_empty_setting_turns_the_file_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_cli.VERSION_CACHE_ENV, "")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    cli, runs = counting_cli(tmp_path)
    assert another_process(cli) == "2.1.330" and another_process(cli) == "2.1.330"
    assert runs_of(runs) == 2 and not (tmp_path / ".cache").exists()
