"""``install_cli``: which npm package it installs for a version, and that a failed or wrong install
leaves nothing in the cache. A stand-in ``npm`` (a script on ``PATH``) writes what a real one
would; the real installs are what every real-CLI test runs on."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from claude_sdkurl.testing import NEWEST_CLI_VERSION, CLIInstallError, install_cli
from claude_sdkurl.testing.cli import BUNDLED_CLIS, bundle_package

# A stand-in npm: `npm install ... --prefix DIR PACKAGE` writes PACKAGE's binary where npm puts
# it, a script (padded past the size of npm's placeholder) answering --version with $VERSION_SAID.
NPM = r'''#!{python}
import os, sys
args = sys.argv[1:]
prefix, package = args[args.index("--prefix") + 1], args[-1]
with open(os.environ["NPM_LOG"], "a") as log:
    log.write(package + "\n")
if os.environ.get("NPM_FAILS"):
    sys.exit("npm ERR! 404 " + package)
name = package.rsplit("@", 1)[0]
folder = os.path.join(prefix, "node_modules", *name.split("/")) if "agent-sdk" in name else \
    os.path.join(prefix, "node_modules", "@anthropic-ai", "claude-code-linux-x64")
os.makedirs(folder, exist_ok=True)
binary = os.path.join(folder, "claude")
with open(binary, "w") as f:
    f.write("#!/bin/sh\necho '" + os.environ["VERSION_SAID"] + " (Claude Code)'\n#" + "x" * 1_100_000 + "\n")
os.chmod(binary, 0o755)
'''


@pytest.fixture
def npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(NPM.format(python=sys.executable))
    (bin_dir / "npm").chmod(0o755)
    log = tmp_path / "npm.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("NPM_LOG", str(log))
    return log


def test_the_newest_cli_comes_from_the_typescript_sdks_platform_package(npm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert BUNDLED_CLIS[NEWEST_CLI_VERSION] == "0.3.333"
    monkeypatch.setenv("VERSION_SAID", NEWEST_CLI_VERSION)
    binary = install_cli(NEWEST_CLI_VERSION, prefix=tmp_path / "cache" / NEWEST_CLI_VERSION)
    assert npm.read_text().splitlines() == [bundle_package("0.3.333")]
    assert binary == tmp_path / "cache" / NEWEST_CLI_VERSION / "node_modules" / "@anthropic-ai" / "claude-agent-sdk-linux-x64" / "claude"
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [NEWEST_CLI_VERSION]  # the staging folder is gone
    assert install_cli(NEWEST_CLI_VERSION, prefix=tmp_path / "cache" / NEWEST_CLI_VERSION) == binary
    assert len(npm.read_text().splitlines()) == 1  # there already: npm is not asked again


def test_a_published_cli_comes_from_claude_code(npm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERSION_SAID", "2.1.330")
    install_cli("2.1.330", prefix=tmp_path / "cache" / "2.1.330")
    assert npm.read_text().splitlines() == ["@anthropic-ai/claude-code@2.1.330"]


@pytest.mark.parametrize("how", ["npm fails", "a binary of another version"])
def test_a_failed_install_leaves_nothing_in_the_cache(npm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    monkeypatch.setenv("VERSION_SAID", "2.1.332")
    if how == "npm fails":
        monkeypatch.setenv("NPM_FAILS", "1")
    with pytest.raises(CLIInstallError, match="claude-agent-sdk-linux-x64@0.3.333"):
        install_cli(NEWEST_CLI_VERSION, prefix=tmp_path / "cache" / NEWEST_CLI_VERSION)
    assert list((tmp_path / "cache").iterdir()) == []


def test_the_platform_package_is_this_machines(monkeypatch: pytest.MonkeyPatch) -> None:
    import platform

    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    monkeypatch.setattr(platform, "libc_ver", lambda: ("", ""))  # musl says no glibc
    assert bundle_package("0.3.333") == "@anthropic-ai/claude-agent-sdk-linux-arm64-musl@0.3.333"
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(platform, "libc_ver", lambda: ("glibc", "2.36"))
    assert bundle_package("0.3.333") == "@anthropic-ai/claude-agent-sdk-linux-x64@0.3.333"
    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    with pytest.raises(CLIInstallError, match="bundles no CLI"):
        bundle_package("0.3.333")
