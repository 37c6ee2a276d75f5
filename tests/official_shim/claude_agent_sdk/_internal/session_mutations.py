from __future__ import annotations

from pathlib import Path

from claude_sdkurl.sessions import _edits, _local

_sanitize_unicode = _edits.drop_invisible


def _try_append(path: Path, data: str) -> bool:
    return _local._append_existing(path, data.encode("utf-8"))
