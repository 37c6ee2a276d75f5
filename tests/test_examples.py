"""The examples in examples/ run as a user would run them, and say what they should."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.realcli

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(name: str) -> str:
    done = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_offline_quickstart() -> None:
    out = run("offline_quickstart.py")
    assert "Claude: Hello from a real Claude Code CLI, driven synchronously!" in out and "done: success" in out


def test_resume_anywhere() -> None:
    out = run("resume_anywhere.py")
    assert "machine B: The launch code was 4-8-15." in out
    assert "machine B's request carried machine A's turn: True" in out
    assert "machine B has no transcript of its own: True" in out
