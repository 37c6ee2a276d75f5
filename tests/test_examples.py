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


def test_evals_suite_from_the_command_line(tmp_path: Path) -> None:
    """examples/evals_suite.py as its docstring says: a baseline from two runs, the unchanged
    program passes the gate, each seeded fault fails it naming its task."""
    import os

    def evals(*args: str, fault: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, **({"EVAL_FAULT": fault} if fault else {})}
        env.pop("EVAL_FAULT", None) if fault is None else None
        return subprocess.run([sys.executable, "-m", "claude_sdkurl.evals", str(EXAMPLES / "evals_suite.py"), *args], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=300)  # fmt: skip

    made = evals("--update-baseline")
    assert made.returncode == 0 and "baseline written: eval-baseline.json (two runs; " in made.stdout, made.stdout + made.stderr
    same = evals("--html", "page.html")
    assert same.returncode == 0 and same.stdout.rstrip().endswith("gate: passed"), same.stdout + same.stderr
    assert (tmp_path / "page.html").exists()
    for fault, task in (("permissive", "keep-out-of-secret"), ("no-hook", "keep-the-logs")):
        broken = evals(fault=fault)
        assert broken.returncode == 1 and f"REGRESSION {task} on agent: passed 0/4, was 8/8" in broken.stdout, broken.stdout + broken.stderr
