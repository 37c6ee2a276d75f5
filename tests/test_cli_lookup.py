"""Issue 69, item 2: the CLI lookup finds the CLIs this package installed (the quickstart's
``install_cli`` puts them in ``~/.cache/claude_sdkurl/cli``), after ``cli_path``, the environment
variable, ``PATH`` and the usual install places, and says at debug level which it used. No CLI
runs here: the binaries are files of the size a real one has (sparse)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from claude_sdkurl import CLINotFoundError
from claude_sdkurl._engine import cli as _cli
from claude_sdkurl._engine.cli import find_cli, installed_clis
from claude_sdkurl.testing import cache_dir


def _install(cache: Path, version: str, *, size: int = 2_000_000, where: str = "claude-code-linux-x64/claude",
             mode: int = 0o755) -> Path:  # fmt: skip
    """A CLI laid out as npm installs it into ``cache/<version>`` (its binary sparse)."""
    binary = cache / version / "node_modules" / "@anthropic-ai" / where
    binary.parent.mkdir(parents=True, exist_ok=True)
    with open(binary, "wb") as f:
        f.truncate(size)
    binary.chmod(mode)
    return binary


@pytest.fixture
def nowhere_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No CLI on PATH, none in the usual places, no official package: only the cache."""
    monkeypatch.delenv("CLAUDE_SDKURL_CLI", raising=False)
    monkeypatch.delenv("CLAUDE_SDKURL_CLI_CACHE", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(_cli, "_official_bundled_cli", lambda: None)
    return tmp_path / "home" / ".cache" / "claude_sdkurl" / "cli"


def test_the_quickstarts_cli_is_found_in_the_default_cache(nowhere_else: Path, caplog: pytest.LogCaptureFixture) -> None:
    assert cache_dir() == nowhere_else  # where install_cli puts it, under this HOME
    with pytest.raises(CLINotFoundError):
        find_cli()  # (nothing installed yet)
    binary = _install(nowhere_else, "2.1.120")
    with caplog.at_level(logging.DEBUG, logger="claude_sdkurl.cli"):
        assert find_cli() == str(binary)
    assert f"using Claude Code at {binary} (from the CLIs claude_sdkurl installed in {nowhere_else})" in caplog.messages


def test_the_newest_installed_version_is_taken_and_half_installs_are_not(nowhere_else: Path) -> None:
    _install(nowhere_else, "2.1.120")
    newest = _install(nowhere_else, "2.1.330")
    _install(nowhere_else, "2.1.99")  # older, though it sorts last as text
    _install(nowhere_else, ".2.1.400-x7ab")  # install_cli's staging folder, not renamed yet
    _install(nowhere_else, "2.1.500", size=1000)  # npm's placeholder: postinstall never ran
    _install(nowhere_else, "2.1.600", mode=0o644)  # not executable
    (nowhere_else / "2.1.700").mkdir()  # an empty prefix
    (nowhere_else / "2.1.800").write_text("")  # a file, not a prefix
    (nowhere_else / "notes").mkdir()
    assert find_cli() == str(newest)
    assert installed_clis() == [newest, nowhere_else / "2.1.120/node_modules/@anthropic-ai/claude-code-linux-x64/claude",
                                nowhere_else / "2.1.99/node_modules/@anthropic-ai/claude-code-linux-x64/claude"]  # fmt: skip


def test_the_wrapper_packages_copy_is_found_too(nowhere_else: Path) -> None:
    binary = _install(nowhere_else, "2.1.330", where="claude-code/bin/claude.exe")
    assert find_cli() == str(binary)


def test_the_cache_named_by_its_variable(nowhere_else: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install(nowhere_else, "2.1.330")
    elsewhere = tmp_path / "elsewhere"
    binary = _install(elsewhere, "2.1.120")
    monkeypatch.setenv("CLAUDE_SDKURL_CLI_CACHE", str(elsewhere))
    assert cache_dir() == elsewhere and find_cli() == str(binary)


def test_the_cache_comes_after_everything_the_user_set_up(nowhere_else: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    _install(nowhere_else, "2.1.330")
    home = tmp_path / "home"
    usual = home / ".local/bin/claude"
    usual.parent.mkdir(parents=True)
    usual.write_text("")
    assert find_cli() == str(usual)  # a usual install place
    on_path = tmp_path / "bin" / "claude"
    on_path.parent.mkdir()
    on_path.write_text("#!/bin/sh\n")
    on_path.chmod(0o755)
    monkeypatch.setenv("PATH", str(on_path.parent))
    with caplog.at_level(logging.DEBUG, logger="claude_sdkurl.cli"):
        assert find_cli() == str(on_path)
        named = tmp_path / "named"
        named.write_text("")
        monkeypatch.setenv("CLAUDE_SDKURL_CLI", str(named))
        assert find_cli() == str(named)
        given = tmp_path / "given"
        given.write_text("")
        given.chmod(0o755)
        assert find_cli(given) == str(given)
    assert caplog.messages == [f"using Claude Code at {on_path} (from PATH)", f"using Claude Code at {named} (from $CLAUDE_SDKURL_CLI)",
                               f"using Claude Code at {given} (from cli_path)"]  # fmt: skip


def test_the_official_packages_bundled_cli_comes_last(nowhere_else: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_cli, "_official_bundled_cli", lambda: "/bundled/claude")
    assert find_cli() == "/bundled/claude"
    binary = _install(nowhere_else, "2.1.120")
    assert find_cli() == str(binary)


def test_an_unreadable_cache_is_no_cache(nowhere_else: Path) -> None:
    nowhere_else.parent.mkdir(parents=True)
    nowhere_else.write_text("not a folder")
    with pytest.raises(CLINotFoundError):
        find_cli()
    assert installed_clis() == [] and os.path.isfile(nowhere_else)
