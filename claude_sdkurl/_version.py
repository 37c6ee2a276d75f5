"""Versions: ours, and the official SDK release whose surface we mirror."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

__version__ = "0.1.0"

OFFICIAL_SDK_VERSION = "0.2.189"
"""The ``claude-agent-sdk`` release this package is a drop-in for; the CLI sees it
in ``CLAUDE_AGENT_SDK_VERSION`` as it would from the official SDK."""


def add_version_flag(parser: argparse.ArgumentParser) -> None:
    """``--version`` for one of the package's commands (``python -m claude_sdkurl.<x>``): one
    line, as written (argparse's own action wraps it at the terminal's width)."""
    import argparse

    line = f"{parser.prog} (claude_sdkurl {__version__}, the claude-agent-sdk {OFFICIAL_SDK_VERSION} surface)"

    class Version(argparse.Action):
        def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
            super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version and exit")

        def __call__(self, parser: argparse.ArgumentParser, namespace: object, values: object, option_string: str | None = None) -> None:
            print(line)
            parser.exit()

    parser.add_argument("--version", action=Version)
