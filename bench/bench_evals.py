"""Evals (issue 46), measured on the real CLI 2.1.332 and the mock model. Nothing here is a test:
numbers vary with the machine.

    .venv/bin/python bench/bench_evals.py [--runs 5] [--concurrency 4] [--gate-runs 4] [--no-gate]

1. A suite of 20 tasks x 5 runs x 2 targets (the agent program of ``tests/evals_agent.py``,
   unchanged and with a fault) with ``run_eval`` on threads, against the same 200 runs as bare
   ``claude -p`` processes at the same concurrency (what a harness driving the CLI from outside
   spends: no callbacks, no checks): wall time and the ratio.
2. The same suite recorded on a model tape once, then replayed offline: wall time, and whether
   the replay's outcomes equal the recording's.
3. The gate over the twenty seeded faults: a baseline from two unchanged runs, each fault run
   ``--gate-runs`` times over the six tasks, and twenty unchanged reruns: how many faults it
   flags (naming the tasks each breaks) and how many reruns it flags.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from claude_sdkurl import ClaudeAgentOptions  # noqa: E402
from claude_sdkurl.evals import Target, Task, gate, run_eval  # noqa: E402
from claude_sdkurl.testing import MockMessagesAPI, install_cli, offline_env  # noqa: E402
from tests import evals_agent  # noqa: E402


def suite(seed: Path, n: int) -> list[Task]:
    """``n`` tasks: the agent's six, again under new names until there are ``n``."""
    base = evals_agent.tasks(seed)
    return [dataclasses.replace(base[i % len(base)], name=f"{base[i % len(base)].name}-{i // len(base)}") for i in range(n)]


def bare_cli(cli: str, env: dict[str, str], prompts: list[str], concurrency: int, folder: Path) -> float:
    """Each prompt as ``claude -p`` in a folder of its own, ``concurrency`` at a time."""

    def one(i_prompt: tuple[int, str]) -> int:
        work = folder / f"bare-{i_prompt[0]}"
        work.mkdir(parents=True, exist_ok=True)
        return subprocess.run([cli, "-p", i_prompt[1], "--output-format", "json", "--max-turns", "6"], cwd=work, env=env,
                              capture_output=True, timeout=300).returncode  # fmt: skip

    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(concurrency) as pool:
        codes = list(pool.map(one, enumerate(prompts)))
    took = time.perf_counter() - t0
    if any(codes):
        print(f"  (bare claude -p: {sum(1 for c in codes if c)} of {len(codes)} exited non-zero)")
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--gate-runs", type=int, default=4)
    parser.add_argument("--no-gate", action="store_true")
    args = parser.parse_args()
    cli = str(install_cli("2.1.332"))
    base = Path(tempfile.mkdtemp(prefix="bench-evals-"))
    seed = base / "seed"
    (seed / "logs").mkdir(parents=True)
    (seed / "logs" / "a.log").write_text("a log line\n")
    (base / "home").mkdir()
    print(f"{os.cpu_count()} cores; CLI 2.1.332; the mock model")
    with MockMessagesAPI(evals_agent.model) as api:
        env = offline_env(api.url, base / "home")
        options = ClaudeAgentOptions(cli_path=cli, env=env)
        tasks = suite(seed, args.tasks)
        targets = [Target("agent", options, program=evals_agent.program()),
                   Target("swapped", options, program=evals_agent.program("swapped tool"))]  # fmt: skip
        attempts = len(tasks) * args.runs * len(targets)

        t0 = time.perf_counter()
        card = run_eval(tasks, targets, args.runs, max_concurrency=args.concurrency)
        evals_s = time.perf_counter() - t0
        passed = sum(a.passed for a in card.attempts)
        bare_s = bare_cli(cli, {**os.environ, **env}, [t.prompt for t in tasks] * args.runs * len(targets), args.concurrency, base)
        print(f"\n1. {len(tasks)} tasks x {args.runs} runs x {len(targets)} targets = {attempts} attempts, {args.concurrency} at a time")
        print("| | wall time | per attempt | vs bare claude -p |")
        print("|---|---|---|---|")
        print(f"| run_eval (program, callbacks, checks) | {evals_s:.1f} s | {evals_s / attempts * 1000:.0f} ms | {evals_s / bare_s:.2f}x |")
        print(f"| bare `claude -p`, same prompts | {bare_s:.1f} s | {bare_s / attempts * 1000:.0f} ms | 1.00x |")
        print(f"({passed}/{attempts} passed: the swapped tool fails the two sums of each six)")

        tape = base / "suite.tape"
        t0 = time.perf_counter()
        recorded = run_eval(tasks, targets, args.runs, max_concurrency=args.concurrency, tape=tape, record_from=api.url)
        record_s = time.perf_counter() - t0
        served = len(api.message_requests())
        t0 = time.perf_counter()
        replayed = run_eval(tasks, targets, args.runs, max_concurrency=args.concurrency, tape=tape)
        replay_s = time.perf_counter() - t0
        print("\n2. The same suite on a model tape")
        print(f"recorded in {record_s:.1f} s; replayed offline in {replay_s:.1f} s ({replay_s / evals_s:.2f}x the live run); "
              f"outcomes equal: {replayed.outcomes() == recorded.outcomes()}; requests reaching the mock during the replay: "
              f"{len(api.message_requests()) - served}")  # fmt: skip

        if args.no_gate:
            return
        six = evals_agent.tasks(seed)
        t0 = time.perf_counter()
        first = run_eval(six, [Target("agent", options, program=evals_agent.program())], args.gate_runs, max_concurrency=args.concurrency)
        again = run_eval(six, [Target("agent", options, program=evals_agent.program())], args.gate_runs, max_concurrency=args.concurrency)
        first.save_baseline(base / "baseline.json", noise=again)
        faulty = [Target("agent", options, program=evals_agent.program(f)) for f in evals_agent.FAULTS]
        flagged = {}
        for fault, target in zip(evals_agent.FAULTS, faulty):
            found = gate(run_eval(six, [target], args.gate_runs, max_concurrency=args.concurrency), base / "baseline.json")
            flagged[fault] = sorted({r.task for r in found if "passed" in r.what})
        reruns = [gate(run_eval(six, [Target("agent", options, program=evals_agent.program())], args.gate_runs,
                                max_concurrency=args.concurrency), base / "baseline.json") for _ in range(20)]  # fmt: skip
        took = time.perf_counter() - t0
        caught = [f for f, tasks_hit in flagged.items() if tasks_hit]
        exact = [f for f, tasks_hit in flagged.items() if tasks_hit == sorted(evals_agent.FAULTS[f])]
        print(f"\n3. The gate, {args.gate_runs} runs a cell, a baseline of two unchanged runs ({took:.0f} s in all)")
        print(f"faults flagged: {len(caught)}/20 ({len(exact)} naming exactly the tasks the fault breaks); "
              f"unchanged reruns flagged: {sum(1 for r in reruns if r)}/20")
        for fault, tasks_hit in flagged.items():
            print(f"  {fault}: {', '.join(tasks_hit) or 'NOT FLAGGED'}")


if __name__ == "__main__":
    main()
