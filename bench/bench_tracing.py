"""What tracing costs a turn: spans on (exported to a real Arize Phoenix on 127.0.0.1 through a
BatchSpanProcessor and OTLP/HTTP) against spans off, in one run, on the real CLI and mock API.

    .venv/bin/pip install -q -e '.[test]' && .venv/bin/python bench/bench_tracing.py [--turns 20] [--rounds 5]

Each round runs ``--turns`` client turns (each a Bash tool use then an answer: an agent span,
a tool span, a hook span) with tracing off, then on, on one client each, alternating so drift
hits both. Printed: the median wall time per turn and this process's CPU per turn, off and on,
and the ratio on/off (the goal: on within 2% of off in wall time). Phoenix is installed into
``~/.cache/claude_sdkurl`` on first use (about a minute). Nothing here is a test.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from opentelemetry import trace  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: E402
from opentelemetry.util._once import Once  # noqa: E402

from claude_sdkurl import ClaudeAgentOptions, ClaudeSDKClient, HookMatcher, tracing  # noqa: E402
from claude_sdkurl.testing import STDIO_CLI_VERSION, MockMessagesAPI, install_cli, offline_env, text, tool_use  # noqa: E402
from tests.servers import PhoenixServer  # noqa: E402


def set_provider(provider: Any) -> None:
    trace._TRACER_PROVIDER_SET_ONCE = Once()  # type: ignore[attr-defined]
    trace._TRACER_PROVIDER = None  # type: ignore[attr-defined]
    if provider is not None:
        trace.set_tracer_provider(provider)


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def turns(options: ClaudeAgentOptions, n: int) -> tuple[float, float]:
    """Median wall seconds per turn, and CPU seconds per turn of this process."""
    walls = []
    c0 = cpu()
    with ClaudeSDKClient(options) as client:
        for i in range(n):
            t0 = time.perf_counter()
            client.query(f"turn {i}")
            for _ in client.receive_response():
                pass
            walls.append(time.perf_counter() - t0)
    tracing.flush(30)
    return statistics.median(walls), (cpu() - c0) / n


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    phoenix = PhoenixServer().start()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{phoenix.url}/v1/traces")))

    def answer(request: Any) -> Any:
        return text("done") if request.tool_results() else tool_use("Bash", {"command": "echo hi"})

    results: dict[str, list[tuple[float, float]]] = {"off": [], "on": []}
    try:
        with MockMessagesAPI(answer) as api, tempfile.TemporaryDirectory() as home:
            (Path(home) / "work").mkdir()
            options = ClaudeAgentOptions(cli_path=str(install_cli(STDIO_CLI_VERSION)), env=offline_env(api.url, Path(home)),
                                         cwd=str(Path(home) / "work"), allowed_tools=["Bash"],
                                         hooks={"PreToolUse": [HookMatcher(matcher=None, hooks=[lambda i, t, c: {}])]})  # fmt: skip
            turns(options, 2)  # warm the CLI's caches
            for _ in range(args.rounds):
                for mode in ("off", "on"):
                    set_provider(provider if mode == "on" else None)
                    results[mode].append(turns(options, args.turns))
            set_provider(None)
            provider.force_flush()
            exported, deadline = -1, time.monotonic() + 15
            while time.monotonic() < deadline:  # Phoenix stores what it received a little later
                time.sleep(1)
                count = len(phoenix.spans("default"))
                if count == exported:
                    break
                exported = count
    finally:
        provider.shutdown()
        phoenix.stop()
    wall = {m: statistics.median(w for w, _ in r) * 1000 for m, r in results.items()}
    cpu_ms = {m: statistics.median(c for _, c in r) * 1000 for m, r in results.items()}
    made = args.rounds * (args.turns * 3 + 1)  # agent, tool, hook per turn; a session span per client
    print(f"{args.rounds} rounds x {args.turns} turns each way; {exported} of {made} spans reached Phoenix")
    print(f"wall ms/turn   off {wall['off']:8.2f}   on {wall['on']:8.2f}   ratio on/off {wall['on'] / wall['off']:.3f}")
    print(f"SDK cpu ms/turn off {cpu_ms['off']:7.2f}   on {cpu_ms['on']:8.2f}   ratio on/off {cpu_ms['on'] / cpu_ms['off']:.3f}")


if __name__ == "__main__":
    main()
