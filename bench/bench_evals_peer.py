"""Evals side by side with a peer (issue 46): wm-agent-evals 0.3.0 (PyPI; it drives ``claude -p``
in a copy of an agent's folder) on the same real CLI 2.1.332 and the same mock model, against
the twenty faults of ``tests/evals_agent.py``. Nothing here is a test.

    .venv/bin/python bench/bench_evals_peer.py [--repeat 3]

wm-agent-evals is installed into a virtualenv of its own (``~/.cache/claude_sdkurl/peers``). An
agent there is a folder (its CLAUDE.md), a model and CLI flags; the program of
``tests/evals_agent.py`` keeps its logic in Python (hooks, a ``can_use_tool`` rule, an in-process
tool), which ``claude -p`` never runs. So each fault is put to it where it can be said in its
terms (the CLAUDE.md changed, the model, the turn limit), run unchanged and with the fault, and
gated against its own baseline; the rest are listed as not expressible there.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from claude_sdkurl.testing import MockMessagesAPI, install_cli, offline_env  # noqa: E402
from tests import evals_agent  # noqa: E402

PEER = "wm-agent-evals==0.3.0"
# the faults wm-agent-evals can be given, as its suite says them
EXPRESSIBLE = {
    "changed system prompt": {"claude_md": "Run the tests before you say you are done.\n"},
    "wrong model": {"model": "claude-haiku-4-5"},
    "max_turns too low": {"max_turns": 1},
}


def peer() -> Path:
    home = Path.home() / ".cache" / "claude_sdkurl" / "peers" / "wm-agent-evals"
    exe = home / "bin" / "agent-evals"
    if not exe.exists():
        venv.create(home, with_pip=True)
        subprocess.run([str(home / "bin" / "pip"), "install", "-q", PEER], check=True)
    return exe


def suite(folder: Path, agent: Path, fault: dict[str, object]) -> Path:
    lines = [
        "agent: fixer", f"path: {agent}", f"model: {fault.get('model', evals_agent.MODEL)}", f"max_turns: {fault.get('max_turns', 6)}",
        "allowed_tools: [Bash, Read, Write, Edit]", "disallowed_tools: []", "check_env: false", "confine_paths: false",
        "tasks:",
        "  - id: fix", "    prompt: Fix the bug", "    checks:",
        "      - {id: tests-ran, type: regex_present, pattern: 'tests passed', scope: final}",
        "      - {id: fixed, type: file_written, pattern: 'fix.txt'}",
    ]  # fmt: skip
    path = folder / "suite.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    exe = peer()
    cli = install_cli("2.1.332")
    base = Path(tempfile.mkdtemp(prefix="bench-evals-peer-"))
    bin_dir = base / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").symlink_to(cli)  # the peer runs `claude` from PATH
    (base / "home").mkdir()
    with MockMessagesAPI(evals_agent.model) as api:
        env = {**os.environ, **offline_env(api.url, base / "home"), "PATH": f"{bin_dir}:{os.environ['PATH']}"}

        def run(name: str, fault: dict[str, object], *flags: str) -> tuple[int, str]:
            agent = base / name / "agent"
            agent.mkdir(parents=True, exist_ok=True)
            (agent / "CLAUDE.md").write_text(str(fault.get("claude_md", evals_agent.RULES + "\n")))
            cmd = [str(exe), "run", str(suite(base / name, agent, fault)), "--no-judge", "--billing", "api", "--repeat", str(args.repeat),
                   "--runs-dir", str(base / "runs"), "--baselines-dir", str(base / "baselines"), *flags]  # fmt: skip
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900, cwd=base)
            return done.returncode, done.stdout + done.stderr

        code, out = run("baseline", {}, "--update-baseline")
        print(f"wm-agent-evals, unchanged agent, --update-baseline: exit {code}")
        if code != 0:
            print(out[-2000:])
        code, _ = run("rerun", {}, "--gate")
        print(f"unchanged rerun, --gate: exit {code} ({'flagged' if code else 'passed'})")
        print("\n| fault | wm-agent-evals (claude -p) | claude_sdkurl.evals |")
        print("|---|---|---|")
        for fault in evals_agent.FAULTS:
            if fault in EXPRESSIBLE:
                code, out = run(fault.replace(" ", "-"), EXPRESSIBLE[fault], "--gate")
                theirs = "flagged (gate exit 1)" if code == 1 else f"not flagged (exit {code})"
            else:
                theirs = "cannot be said: the fault is in the program's Python, which `claude -p` never runs"
            print(f"| {fault} | {theirs} | see bench_evals.py part 3 |")
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
