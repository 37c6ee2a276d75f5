"""How the porting command's time and memory grow with the file, against what libcst itself
costs on the same file: CPU seconds per MB of source and the peak resident memory, for programs
of growing size (the same async program, its body repeated), each size in a fresh process.

    .venv/bin/pip install -q -e '.[test]' && .venv/bin/python bench/bench_port_size.py [--sizes 0.25 0.5 1 2 5]

"floor" is the least any libcst rewrite of the file pays: parse it, walk it once with a
transformer that changes nothing, write its code. "port / floor" is the command's CPU over that
(1.0 would be a port for free). Linear time shows as a flat seconds-per-MB column. Nothing here
is a test.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HEAD = "import asyncio\nfrom claude_agent_sdk import query, ClaudeSDKClient\n\n"
UNIT = '''
async def worker_{n}(prompt):
    # one of many workers
    async for message in query(prompt=prompt):
        print({n}, message)
    await asyncio.sleep(0)
    await other.fetch()  # another library's coroutine: listed, so its line is looked up

'''
TAIL = "\nasyncio.run(worker_0('hi'))\n"


def program(megabytes: float) -> str:
    unit_size = len(UNIT.format(n=0))
    units = max(1, int(megabytes * 1_000_000 / unit_size))
    return HEAD + "".join(UNIT.format(n=i) for i in range(units)) + TAIL


def measure(what: str, megabytes: float) -> dict[str, float]:
    """In this (fresh) process: CPU seconds and peak resident MB of ``what`` on the program."""
    source = program(megabytes)
    t0 = time.process_time()
    if what == "port":
        from claude_sdkurl.port import port_source

        port_source(source)
    else:
        import libcst as cst

        cst.parse_module(source).visit(cst.CSTTransformer()).code  # noqa: B018 - the code is what is paid for
    return {"cpu": time.process_time() - t0, "mb": len(source) / 1e6, "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[0.25, 0.5, 1.0, 2.0, 5.0], help="sizes in MB")
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)  # (a child: what, size)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one[0], float(args.one[1]))))
        return
    print(f"{'MB':>6} {'port s':>8} {'s per MB':>9} {'floor s':>8} {'port/floor':>10} {'port RSS MB':>12} {'floor RSS MB':>13}")
    for size in args.sizes:
        got = {}
        for what in ("port", "floor"):
            out = subprocess.run([sys.executable, __file__, "--one", what, str(size)], capture_output=True, text=True, check=True)
            got[what] = json.loads(out.stdout)
        port, floor = got["port"], got["floor"]
        print(f"{port['mb']:6.2f} {port['cpu']:8.2f} {port['cpu'] / port['mb']:9.2f} {floor['cpu']:8.2f} "
              f"{port['cpu'] / floor['cpu']:10.2f} {port['rss']:12.0f} {floor['rss']:13.0f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
