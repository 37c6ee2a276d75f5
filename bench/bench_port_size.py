"""How the porting command's time grows with the file: CPU seconds per MB of source, for
programs of growing size (the same async program, its body repeated), in one run.

    .venv/bin/pip install -q -e '.[test]' && .venv/bin/python bench/bench_port_size.py [--sizes 0.25 0.5 1 2 5]

Linear time shows as a flat seconds-per-MB column (the ratio to the smallest size near 1); the
import fixer of before 2026-11-25 walked the whole module once per top-level statement (3.2x
the CPU for twice the program, and 5 MB did not finish in 150 s). Nothing here is a test.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from claude_sdkurl.port import port_source  # noqa: E402

HEAD = "import asyncio\nfrom claude_agent_sdk import query, ClaudeSDKClient\n\n"
UNIT = '''
async def worker_{n}(prompt):
    # one of many workers
    async for message in query(prompt=prompt):
        print({n}, message)
    await asyncio.sleep(0)

'''
TAIL = "\nasyncio.run(worker_0('hi'))\n"


def program(megabytes: float) -> str:
    unit_size = len(UNIT.format(n=0))
    units = max(1, int(megabytes * 1_000_000 / unit_size))
    return HEAD + "".join(UNIT.format(n=i) for i in range(units)) + TAIL


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[0.25, 0.5, 1.0, 2.0, 5.0], help="sizes in MB")
    args = parser.parse_args()
    print(f"{'MB':>6} {'CPU s':>8} {'s per MB':>9} {'ratio':>6}")
    first: float | None = None
    for size in args.sizes:
        source = program(size)
        t0 = time.process_time()
        port_source(source)
        spent = time.process_time() - t0
        per_mb = spent / (len(source) / 1_000_000)
        first = first or per_mb
        print(f"{len(source) / 1e6:6.2f} {spent:8.2f} {per_mb:9.2f} {per_mb / first:6.2f}", flush=True)


if __name__ == "__main__":
    main()
