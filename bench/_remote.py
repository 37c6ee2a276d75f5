"""The mock Messages API in a process of its own, for benchmarks (the real API is remote: in the
measuring process its threads would compete for the GIL with the SDK measured)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

_SERVE = """
import sys
from claude_sdkurl.testing import MockMessagesAPI
with MockMessagesAPI() as api:
    print(api.url, flush=True)
    sys.stdin.read()
"""


@contextmanager
def remote_mock_api() -> Iterator[str]:
    """Its URL while the block runs (default replies: ``pong``); stopped after."""
    proc = subprocess.Popen([sys.executable, "-c", _SERVE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    try:
        yield proc.stdout.readline().strip()
    finally:
        proc.stdin.close()
        proc.wait(10)
