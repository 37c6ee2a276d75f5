"""The package type-checks under the project's (strict) mypy settings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_mypy_clean() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "claude_sdkurl", "claude_sdkurl_pytest", "tests/typechecked/async_forms.py"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stdout + out.stderr
