"""What is taken out of a tape before anything is written: API keys, tokens, MCP servers'
``env`` and ``headers`` values, the home folder, and the user's own patterns."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SCRUBBED = "<scrubbed>"

# (pattern, replacement): keys and tokens in any string of a frame
_SECRETS = [
    (re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"), SCRUBBED),
    (re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=\-]{8,}"), r"\1" + SCRUBBED),
    # (a name ending in "source" says where a key came from, as the CLI's apiKeySource and
    # tokenSource do: "none", "ANTHROPIC_API_KEY"; not a secret, kept)
    (re.compile(r'(?i)("(?:[a-z_]*(?:api_?key|token|secret|password|authorization)[a-z_]*)(?<!source)"\s*:\s*")[^"]+(")'),
     r"\1" + SCRUBBED + r"\2"),
]  # fmt: skip


# What an MCP server's configuration holds that is its user's secret whatever its name: the
# server's environment (stdio) and its request headers (http, sse). They travel in initialize
# (where the servers go by default), in mcp_set_servers, in a --mcp-config value, and back in
# a status answer's config.
_MCP_SECRET_FIELDS = ("env", "headers")


def without_mcp_secrets(value: Any) -> Any:
    """``value`` with each value of an MCP server configuration's ``env`` and ``headers`` (a
    mapping beside a ``command`` or a ``url``) written as ``<scrubbed>``, at any depth; the
    names are kept. A new object where anything is a mapping or a list."""
    if isinstance(value, list):
        return [without_mcp_secrets(v) for v in value]
    if not isinstance(value, dict):
        return value
    config = "command" in value or "url" in value
    return {
        k: {name: SCRUBBED for name in v} if config and k in _MCP_SECRET_FIELDS and isinstance(v, dict) else without_mcp_secrets(v)
        for k, v in value.items()
    }


def text_without_mcp_secrets(text: str) -> str:
    """A JSON ``text`` (a line, a ``--mcp-config`` value) through :func:`without_mcp_secrets`
    when it may hold an MCP server's configuration; any other text as it is."""
    if not ('"env"' in text or '"headers"' in text) or not ('"command"' in text or '"url"' in text):
        return text
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    return json.dumps(without_mcp_secrets(parsed))


class Scrubber:
    """Replaces secrets and private paths in a frame's strings.

    ``patterns``: the user's own regular expressions (each match becomes ``<scrubbed>``);
    ``home``: the folder written as ``~`` (default: this user's home).
    """

    def __init__(self, patterns: Iterable[str | re.Pattern[str]] = (), home: str | None = None) -> None:
        self.patterns = [re.compile(p) if isinstance(p, str) else p for p in patterns]
        self.home = home if home is not None else str(Path.home())

    def text(self, text: str) -> str:
        text = text_without_mcp_secrets(text)
        for pattern, replacement in _SECRETS:
            text = pattern.sub(replacement, text)
        for pattern in self.patterns:
            text = pattern.sub(SCRUBBED, text)
        if self.home and len(self.home) > 1:
            text = text.replace(self.home.rstrip(os.sep), "~")
        return text

    def frame(self, frame: Any) -> Any:
        """``frame`` with every string scrubbed (keys too) and no MCP server's ``env`` or
        ``headers`` values, the same shape otherwise."""
        return self._strings(without_mcp_secrets(frame))

    def _strings(self, frame: Any) -> Any:
        if isinstance(frame, str):
            return self.text(frame)
        if isinstance(frame, list):
            return [self._strings(v) for v in frame]
        if isinstance(frame, dict):
            return {self.text(k) if isinstance(k, str) else k: self._strings(v) for k, v in frame.items()}
        return frame

    def line(self, line: str) -> str:
        return json.dumps(self.frame(json.loads(line)))
