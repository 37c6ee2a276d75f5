"""One switch between a real account and a fully offline stand-in, for notebooks and demos."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

from ..types import ClaudeAgentOptions
from .cli import STDIO_CLI_VERSION, install_cli, offline_env
from .mock_api import MockMessagesAPI, Reply

LIVE_ENV = "CLAUDE_SDKURL_LIVE"


class DemoEnvironment:
    """Offline by default: a real CLI (installed from npm) talking to :class:`MockMessagesAPI`.

    With ``CLAUDE_SDKURL_LIVE=1`` (or ``live=True``) it steps aside: :meth:`options`
    gives plain options for your own logged-in ``claude``, and :meth:`script`
    does nothing, so the same notebook runs against the real model.
    """

    def __init__(self, live: bool | None = None, cli_version: str = STDIO_CLI_VERSION, home: str | os.PathLike[str] | None = None) -> None:
        """``home``: the offline CLI's ``HOME`` (its config and transcripts), kept after
        :meth:`close`; by default a fresh temporary folder, removed then. Processes that must see
        each other's conversations (a web server's workers) name the same one."""
        self.live = os.environ.get(LIVE_ENV) == "1" if live is None else live
        self.api: MockMessagesAPI | None = None
        self._home: str | None = None
        self._base: dict[str, Any] = {}
        if not self.live:
            self.api = MockMessagesAPI().start()
            if home is None:
                self._home = tempfile.mkdtemp(prefix="claude-sdkurl-demo-")
                folder = self._home
            else:
                folder = os.fspath(home)
                os.makedirs(folder, mode=0o700, exist_ok=True)
            os.makedirs(os.path.join(folder, "work"), exist_ok=True)
            self._base = {
                "cli_path": str(install_cli(cli_version)),
                "env": offline_env(self.api.url, folder),
                "cwd": os.path.join(folder, "work"),
            }

    def options(self, **kwargs: Any) -> ClaudeAgentOptions:
        """``ClaudeAgentOptions(**kwargs)``, pointed at the stand-in when offline."""
        merged = {**self._base, **kwargs}
        if "env" in kwargs and "env" in self._base:
            merged["env"] = {**self._base["env"], **kwargs["env"]}
        return ClaudeAgentOptions(**merged)

    def script(self, *replies: Reply | str) -> None:
        """What the stand-in model answers next (ignored when live)."""
        if self.api is not None:
            self.api.enqueue(*replies)

    @property
    def workdir(self) -> str:
        """The session's working directory (offline: a fresh temporary one)."""
        return str(self._base.get("cwd", os.getcwd()))

    def close(self) -> None:
        if self.api is not None:
            self.api.stop()
            self.api = None
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None

    def __enter__(self) -> DemoEnvironment:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
