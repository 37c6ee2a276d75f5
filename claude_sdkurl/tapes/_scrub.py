"""What is taken out of a tape before anything is written: API keys, tokens, the home folder,
and the user's own patterns."""

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


class Scrubber:
    """Replaces secrets and private paths in a frame's strings.

    ``patterns``: the user's own regular expressions (each match becomes ``<scrubbed>``);
    ``home``: the folder written as ``~`` (default: this user's home).
    """

    def __init__(self, patterns: Iterable[str | re.Pattern[str]] = (), home: str | None = None) -> None:
        self.patterns = [re.compile(p) if isinstance(p, str) else p for p in patterns]
        self.home = home if home is not None else str(Path.home())

    def text(self, text: str) -> str:
        for pattern, replacement in _SECRETS:
            text = pattern.sub(replacement, text)
        for pattern in self.patterns:
            text = pattern.sub(SCRUBBED, text)
        if self.home and len(self.home) > 1:
            text = text.replace(self.home.rstrip(os.sep), "~")
        return text

    def frame(self, frame: Any) -> Any:
        """``frame`` with every string scrubbed (keys too), the same shape otherwise."""
        if isinstance(frame, str):
            return self.text(frame)
        if isinstance(frame, list):
            return [self.frame(v) for v in frame]
        if isinstance(frame, dict):
            return {self.text(k) if isinstance(k, str) else k: self.frame(v) for k, v in frame.items()}
        return frame

    def line(self, line: str) -> str:
        return json.dumps(self.frame(json.loads(line)))
