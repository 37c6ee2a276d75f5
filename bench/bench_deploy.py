"""A deploy with other options, through the session host (``python -m claude_sdkurl.host``),
measured on the real CLI 2.1.330 and the mock model, each ratio against a comparator in the
same run (the same conversations, the same machine, turns interleaved round by round):

* a deploy that changes a launch-time field (``env``: a rotated API key): the first message of
  each live conversation (its CLI restarts with its history) beside a wake in-process (a
  hibernated conversation's next message: a CLI started with ``resume``); the messages after
  it beside a live in-process turn, and beside in-process turns right after a wake (a CLI just
  started is still busy with its own start for a while);
* a deploy that changes only the model: the first message (a ``set_model`` on the live CLI)
  beside a live in-process turn.

    .venv/bin/pip install -q -e '.[test]' && .venv/bin/python bench/bench_deploy.py [--rounds 8]

Nothing here is a test.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from claude_sdkurl import ClaudeAgentOptions, Conversations, ResultMessage  # noqa: E402
from claude_sdkurl.testing import STDIO_CLI_VERSION, MockMessagesAPI, install_cli, offline_env, text  # noqa: E402


LATER = 3  # the messages timed after a deploy's first (and after a wake, and live ones), each round


def turn(chats: Conversations, key: str, prompt: str) -> float:
    t0 = time.perf_counter()
    (result,) = [m for m in chats.send(key, prompt) if isinstance(m, ResultMessage)]
    assert not result.is_error and result.result == f"echo: {prompt}", result
    return time.perf_counter() - t0


def p50(values: list[float]) -> float:
    return statistics.median(values) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8, help="deploys of each kind (one conversation each)")
    args = parser.parse_args()
    cli = install_cli(STDIO_CLI_VERSION)
    took: dict[str, list[float]] = {k: [] for k in ("wake", "after a wake", "live", "key: first", "key: later", "model: first",
                                                     "model: later")}  # fmt: skip
    with MockMessagesAPI(lambda r: text(f"echo: {r.last_user_text()}")) as api, tempfile.TemporaryDirectory() as d:
        home = Path(d)
        (home / "work").mkdir()
        options = ClaudeAgentOptions(cli_path=str(cli), env=offline_env(api.url, home), cwd=str(home / "work"),
                                     model="claude-sonnet-4-5")  # fmt: skip
        sock = home / "host" / "host.sock"
        host = subprocess.Popen([sys.executable, "-m", "claude_sdkurl.host", "--socket", str(sock), "--max-live", "4"],
                                stdout=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
        try:
            assert "session host at" in host.stdout.readline()  # type: ignore[union-attr]
            with Conversations(options, store=home / "inproc.sqlite3", max_live=4) as local:
                turn(local, "live", "hello")
                for r in range(args.rounds):
                    # the comparators, in-process: a wake (a hibernated conversation's next message),
                    # and turns of a conversation whose CLI stays live
                    turn(local, f"local-{r}", "hello")
                    local.hibernate(f"local-{r}")
                    took["wake"].append(turn(local, f"local-{r}", "woken"))
                    took["after a wake"] += [turn(local, f"local-{r}", f"after {i}") for i in range(LATER)]
                    local.hibernate(f"local-{r}")  # (its CLI gone: the others have the machine)
                    took["live"] += [turn(local, "live", f"live {r} {i}") for i in range(LATER)]
                    for kind, changes in (("key", {"env": {**options.env, "ANTHROPIC_API_KEY": f"sk-ant-rotated-{r}"}}),
                                          ("model", {"model": "claude-haiku-4-5"})):  # fmt: skip
                        key = f"{kind}-{r}"
                        old = Conversations(options, host=sock)
                        turn(old, key, "hello")
                        turn(old, key, "again")
                        time.sleep(0.01)  # (the deploy's workers are made after the last's)
                        new = Conversations(dataclasses.replace(options, **changes), host=sock)
                        took[f"{kind}: first"].append(turn(new, key, "after the deploy"))
                        took[f"{kind}: later"] += [turn(new, key, f"later {i}") for i in range(LATER)]
                        new.hibernate(key)
        finally:
            os.killpg(host.pid, signal.SIGTERM)
            host.wait(60)
    wake, live = p50(took["wake"]), p50(took["live"])
    load = os.getloadavg()
    print(f"{args.rounds} rounds; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    after = p50(took["after a wake"])
    print(f"in-process: a wake p50 {wake:.0f} ms, a live turn p50 {live:.0f} ms, a turn right after a wake p50 {after:.0f} ms")
    print(f"a deploy with a rotated key: first message p50 {p50(took['key: first']):.0f} ms ({p50(took['key: first']) / wake:.2f}x a wake); "
          f"later ones p50 {p50(took['key: later']):.0f} ms ({p50(took['key: later']) / live:.2f}x a live turn, "
          f"{p50(took['key: later']) / after:.2f}x a turn right after a wake)")  # fmt: skip
    print(f"a deploy with a new model: first message p50 {p50(took['model: first']):.0f} ms ({p50(took['model: first']) / live:.2f}x a "
          f"live turn); later ones p50 {p50(took['model: later']):.0f} ms ({p50(took['model: later']) / live:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
