"""Install and locate real Claude Code CLI builds for offline tests.

``install_cli("2.1.120")`` runs ``npm install --prefix <cache>/<version>
@anthropic-ai/claude-code@<version>`` once and returns the native binary.
The cache is ``$CLAUDE_SDKURL_CLI_CACHE`` or ``~/.cache/claude_sdkurl/cli``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from .._engine.cli import CLI_CACHE_ENV, binaries_in, cli_cache_dir, parse_version

WEBSOCKET_CLI_VERSION = "2.1.120"
"""The newest CLI that accepts ``--sdk-url ws://127.0.0.1`` (WebSocket transport)."""

STDIO_CLI_VERSION = "2.1.330"
"""A current CLI, pinned so runs are reproducible (stdio transport)."""

NEWEST_CLI_VERSION = "2.1.332"
"""The CLI the TypeScript SDK 0.3.332 bundles: the newest the suite runs beside the pinned one."""

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


def install_cli(version: str, prefix: str | os.PathLike[str] | None = None) -> Path:
    """Install ``@anthropic-ai/claude-code@version`` (if not yet there) and return its binary.

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
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=target.parent))
        try:
            proc = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(staging), f"@anthropic-ai/claude-code@{version}"],
                capture_output=True,
                text=True,
                timeout=900,
                check=False,
            )
            if proc.returncode != 0:
                raise CLIInstallError(f"npm install of claude-code {version} failed:\n{proc.stderr[-4000:]}")
            if _binary_in(staging, version) is None:
                raise CLIInstallError(f"npm installed claude-code {version} but no working binary was found")
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
