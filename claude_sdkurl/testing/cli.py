"""Install and locate real Claude Code CLI builds for offline tests.

``install_cli("2.1.120")`` runs ``npm install --prefix <cache>/<version>
@anthropic-ai/claude-code@<version>`` once and returns the native binary. A CLI
npm publishes only inside the TypeScript SDK (:data:`BUNDLED_CLIS`) comes from
that SDK's platform package (``@anthropic-ai/claude-agent-sdk-linux-x64``), the
binary the SDK itself runs. npm installs into a staging folder, renamed into
place once the binary answers ``--version``.
The cache is ``$CLAUDE_SDKURL_CLI_CACHE`` or ``~/.cache/claude_sdkurl/cli``.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from .._engine.cli import CLI_CACHE_ENV, binaries_in, cli_cache_dir, parse_version

WEBSOCKET_CLI_VERSION = "2.1.120"
"""The newest CLI that accepts ``--sdk-url ws://127.0.0.1`` (WebSocket transport)."""

STDIO_CLI_VERSION = "2.1.330"
"""A current CLI, pinned so runs are reproducible (stdio transport)."""

NEWEST_CLI_VERSION = "2.1.333"
"""The CLI the TypeScript SDK 0.3.333 bundles: the newest the suite runs beside the pinned one
(npm's newest ``@anthropic-ai/claude-code`` is 2.1.332; this one is in the SDK's platform package)."""

BUNDLED_CLIS = {"2.1.333": "0.3.333"}
"""CLI version -> the TypeScript SDK release whose platform package carries it, for the CLIs npm
publishes no ``@anthropic-ai/claude-code`` of."""

CACHE_ENV = CLI_CACHE_ENV
_lock = threading.Lock()


class CLIInstallError(RuntimeError):
    """npm could not install the requested CLI."""


def cache_dir() -> Path:
    """Where installed CLIs live (the CLI lookup finds them there too)."""
    return cli_cache_dir()


def _binary_in(prefix: Path, version: str) -> Path | None:
    """The native binary in an npm prefix whose ``--version`` says ``version``."""
    for path in binaries_in(prefix):
        try:
            out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if parse_version(out.stdout) == parse_version(version):
            return path
    return None


def bundle_package(sdk_version: str) -> str:
    """The npm package that carries the TypeScript SDK ``sdk_version``'s CLI for this machine
    (``@anthropic-ai/claude-agent-sdk-<os>-<arch>[-musl]@<version>``, as the SDK picks it)."""
    system = {"linux": "linux", "darwin": "darwin", "win32": "win32"}.get(sys.platform)
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower())
    if system is None or arch is None:
        raise CLIInstallError(f"the TypeScript SDK bundles no CLI for {sys.platform} {platform.machine()}")
    musl = "-musl" if system == "linux" and platform.libc_ver()[0] != "glibc" else ""
    return f"@anthropic-ai/claude-agent-sdk-{system}-{arch}{musl}@{sdk_version}"


def install_cli(version: str, prefix: str | os.PathLike[str] | None = None) -> Path:
    """Install ``@anthropic-ai/claude-code@version`` (if not yet there) and return its binary;
    for a version of :data:`BUNDLED_CLIS`, the TypeScript SDK's platform package that carries it.

    Raises :class:`CLIInstallError` when npm is missing or the install fails.
    """
    target = Path(prefix) if prefix is not None else cache_dir() / version
    with _lock:
        found = _binary_in(target, version)
        if found is not None:
            return found
        npm = shutil.which("npm")
        if npm is None:
            raise CLIInstallError("npm is not on PATH; install Node.js and npm to fetch the Claude Code CLI")
        package = bundle_package(BUNDLED_CLIS[version]) if version in BUNDLED_CLIS else f"@anthropic-ai/claude-code@{version}"
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=target.parent))
        try:
            proc = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(staging), package],
                capture_output=True,
                text=True,
                timeout=900,
                check=False,
            )
            if proc.returncode != 0:
                raise CLIInstallError(f"npm install of {package} (Claude Code {version}) failed:\n{proc.stderr[-4000:]}")
            if _binary_in(staging, version) is None:
                raise CLIInstallError(f"npm installed {package} but no binary of Claude Code {version} was found")
            if target.exists():
                shutil.rmtree(target)
            staging.rename(target)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
        found = _binary_in(target, version)
        if found is None:  # pragma: no cover
            raise CLIInstallError(f"claude-code {version} vanished after install")
        return found


def offline_env(api_url: str, home: str | os.PathLike[str]) -> dict[str, str]:
    """Environment for running the real CLI against a mock API with a fresh ``HOME``.

    Pass it as ``ClaudeAgentOptions(env=...)``. It points the CLI at
    ``api_url``, gives it a dummy API key, and turns off telemetry, error
    reporting, the auto-updater and other non-essential traffic.
    """
    return {
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": api_url,
        "ANTHROPIC_API_KEY": "sk-ant-test-key",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "LANG": "C.UTF-8",
    }
