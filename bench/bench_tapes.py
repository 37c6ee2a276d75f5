"""Tapes (issue 34), measured: the 20-turn session of ``tests/tapes_program.py`` (a permission
prompt, a hook, an SDK MCP tool, a subagent) run live on the real CLI 2.1.330 against the mock
model, then replayed from its wire tape in each mode (no CLI at all) and from a model tape (the
real CLI, the model from the tape). Nothing here is a test: numbers vary with the machine.

    .venv/bin/python bench/bench_tapes.py [--runs 20]

It also says how many of this project's real-CLI tests could run from tapes, from a
``--durations=0`` report of a whole-suite run when one is given (``--durations-file``).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from claude_sdkurl.tapes import model_tape, record, replay  # noqa: E402
from claude_sdkurl.testing import MockMessagesAPI, install_cli, offline_env  # noqa: E402
from tests.tapes_program import Program, responder  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--durations-file", help="pytest --durations=0 output of a whole-suite run")
    args = parser.parse_args()
    cli = str(install_cli("2.1.330"))
    base = Path(tempfile.mkdtemp(prefix="bench-tapes-"))

    def live_run(env_extra: dict[str, str] | None, url: str, tag: str) -> float:
        home = base / f"home-{tag}"
        (home / "work").mkdir(parents=True, exist_ok=True)
        program = Program(base / f"notes-{tag}")
        options = program.options(cli_path=cli, env={**offline_env(url, home), **(env_extra or {})}, cwd=str(home / "work"))
        t0 = time.perf_counter()
        program.run(options)
        return time.perf_counter() - t0

    with MockMessagesAPI(responder) as api:
        with record(base / "wire") as recorder:
            live = live_run(None, api.url, "live")
        with model_tape(base / "model.jsonl", upstream=api.url) as proxy:
            live_run(proxy.env(), api.url, "model-rec")
    [wire] = recorder.tapes
    print(f"live 20-turn session (real CLI 2.1.330, mock model): {live:.2f} s")
    print(f"wire tape: {wire.stat().st_size / 1024:.0f} KiB, {len(wire.read_text().splitlines()) - 1} frames; "
          f"model tape: {(base / 'model.jsonl').stat().st_size / 1024:.0f} KiB")  # fmt: skip
    print("| replay | median | vs live |")
    print("|---|---|---|")
    for mode in ("inert", "stub", "verify"):
        times = []
        for run in range(args.runs):
            program = Program(base / f"notes-{mode}-{run}")
            t0 = time.perf_counter()
            with replay(wire, mode=mode):
                program.run(program.options(cli_path=str(base / "no-cli"), cwd=str(base)))
            times.append(time.perf_counter() - t0)
        median = statistics.median(times)
        wire_ratio = median / live
        print(f"| wire, {mode} (no CLI) | {median * 1000:.0f} ms | {median / live:.3f}x |")
    times = []
    for run in range(max(3, args.runs // 5)):
        with model_tape(base / "model.jsonl") as proxy:
            times.append(live_run(proxy.env(), "http://127.0.0.1:9", f"model-{run}"))
    median = statistics.median(times)
    print(f"| model tape (the real CLI) | {median * 1000:.0f} ms | {median / live:.2f}x |")
    if args.durations_file:
        text = Path(args.durations_file).read_text()
        rows = re.findall(r"^([\d.]+)s call\s+tests/test_realcli_\S+", text, re.M)
        total = sum(float(r) for r in rows)
        print(f"this project's real-CLI tests in that run: {len(rows)} calls, {total / 60:.1f} min; from wire "
              f"tapes (about {wire_ratio:.3f}x a live run here) they would take {total * wire_ratio / 60:.1f} min; "
              "they stay live: they are what notices a new CLI")  # fmt: skip


if __name__ == "__main__":
    main()
