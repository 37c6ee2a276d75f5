"""Batches under rate limits, transient faults and a budget (``run_batch``'s ``retry`` and
``max_total_cost_usd``) on the real CLI 2.1.330 and the mock API."""

from __future__ import annotations

import math
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import ClaudeAgentOptions
from claude_sdkurl.batch import BatchProgress, RetryPolicy, run_batch
from claude_sdkurl.testing import MockMessagesAPI, Reply, offline_env, text

from .conftest import child_pids, local_ray, processes

pytestmark = pytest.mark.realcli


def _options(cli_paths: Any, api: MockMessagesAPI, home: Path, **env: str) -> ClaudeAgentOptions:
    return ClaudeAgentOptions(cli_path=str(cli_paths["stdio"]), env={**offline_env(api.url, home), **env}, cwd=str(home / "work"))


def _cli_children() -> list[int]:
    """This test's CLI processes: children running the CLI binary (not a child between fork and
    exec, nor the short-lived shell that starts a CLI's orphan watcher)."""
    found = []
    for pid in child_pids():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                program = f.read().split(b"\0")[0]
        except OSError:
            continue
        if program.endswith(b"/claude"):
            found.append(pid)
    return found


class LimitWindow:
    """The API answers 429 (``retry-after: 120``: the CLI gives up at once) for ``seconds``
    after its first request, then answers; every request's start and end are recorded."""

    def __init__(self, seconds: float, retry_after: str = "120") -> None:
        self.seconds = seconds
        self.retry_after = retry_after
        self.began: float | None = None
        self.lock = threading.Lock()
        self.log: list[tuple[float, bool]] = []  # (time, limited)

    def __call__(self, request: Any) -> Reply:
        now = time.monotonic()
        with self.lock:
            self.began = self.began or now
            limited = now - self.began < self.seconds
            self.log.append((now, limited))
        if limited:
            return Reply(status=429, error_type="rate_limit_error", error_message="rate limited", headers={"retry-after": self.retry_after})
        return text(f"answer to {request.last_user_text()}")

    @property
    def ends(self) -> float:
        assert self.began is not None
        return self.began + self.seconds


def test_a_limit_window_pauses_the_batch_and_loses_nothing(cli_paths: Any, api: MockMessagesAPI, home: Path) -> None:
    window = LimitWindow(20.0)
    api.responder = window
    clis: list[tuple[float, int]] = []
    stop = threading.Event()

    def watch() -> None:  # how many CLIs run, over time
        while not stop.is_set():
            clis.append((time.monotonic(), len(_cli_children())))
            time.sleep(0.1)

    watcher = threading.Thread(target=watch)
    watcher.start()
    reports: list[BatchProgress] = []
    try:
        result = run_batch([f"item {i}" for i in range(50)], _options(cli_paths, api, home), max_concurrency=8,
                           retry=RetryPolicy(first_wait=1.0, max_wait=4.0), progress=reports.append)  # fmt: skip
    finally:
        stop.set()
        watcher.join()
    assert [i.error for i in result.items if i.error] == []
    assert all(i.text == f"answer to item {i.index}" for i in result.items)
    assert sum(1 for i in result.items if i.attempts > 1) >= 8  # the first wave met the limit, and ran again
    # While paused (from when the first wave's CLIs are gone to the window's end), at most one
    # CLI runs: the probe; and probe requests come one at a time, spaced by the backoff.
    settled = window.began + 3.0  # type: ignore[operator]
    assert max(n for t, n in clis) >= 2  # (the count sees CLIs: the first wave ran several at once)
    assert max(n for t, n in clis if settled < t < window.ends) <= 1
    probes = [t for t, limited in window.log if limited and t > settled]
    assert probes and all(b - a >= 0.5 for a, b in zip(probes, probes[1:]))
    # the batch went on within 5 s of the window's end
    first_answer = min(t for t, limited in window.log if not limited)
    assert first_answer - window.ends < 5.0
    done = [p.done for p in reports]
    assert done == sorted(done) and done[-1] == 50 and reports[-1].failed == 0  # limited runs not counted as done
    assert any(p.paused for p in reports) and len(reports) < 50 + 2 * 60  # per item and about once a second


class UsageLimit(LimitWindow):
    """A subscription's usage limit: the API refuses with the unified rate-limit headers, a reset
    time ``seconds`` after the first request, then answers. The CLI (logged in with an OAuth token,
    as a subscriber) turns them into a rejected ``rate_limit_event`` with ``resetsAt`` and ends
    the turn at once ("You've hit your 5-hour limit · resets ...": measured on 2.1.330)."""

    def __call__(self, request: Any) -> Reply:
        now = time.monotonic()
        with self.lock:
            self.began = self.began or now
            self.reset_epoch = getattr(self, "reset_epoch", None) or time.time() + self.seconds
            limited = now - self.began < self.seconds
            self.log.append((now, limited))
        if limited:
            reset = str(int(self.reset_epoch) + 1)
            return Reply(status=429, error_type="rate_limit_error", error_message="usage limit", headers={
                "anthropic-ratelimit-unified-status": "rejected", "anthropic-ratelimit-unified-reset": reset,
                "anthropic-ratelimit-unified-representative-claim": "five_hour",
                "anthropic-ratelimit-unified-5h-status": "rejected", "anthropic-ratelimit-unified-5h-reset": reset,
                "anthropic-ratelimit-unified-5h-utilization": "1.0"})  # fmt: skip
        return text(f"answer to {request.last_user_text()}")


def test_a_usage_limit_waits_for_its_reset_time(cli_paths: Any, api: MockMessagesAPI, home: Path) -> None:
    window = UsageLimit(12.0)
    api.responder = window
    env = offline_env(api.url, home)
    env.pop("ANTHROPIC_API_KEY")
    env["CLAUDE_CODE_OAUTH_TOKEN"] = "sk-ant-oat01-offline-test"  # a subscriber's login: usage limits come as events
    options = ClaudeAgentOptions(cli_path=str(cli_paths["stdio"]), env=env, cwd=str(home / "work"))
    result = run_batch([f"item {i}" for i in range(12)], options, max_concurrency=4, retry=RetryPolicy(first_wait=1.0, max_wait=30.0))
    assert [i.error for i in result.items if i.error] == []
    assert all(i.text == f"answer to item {i.index}" for i in result.items)
    limited = [t for t, was in window.log if was]
    # the first wave met the limit; then nothing until the reset the CLI reported (no probes
    # spent against a limit that said when it ends), then one probe and the rest
    assert len(limited) <= 4 + 1 and max(limited) - min(limited) < 2.0
    first_answer = min(t for t, was in window.log if not was)
    assert 0 <= first_answer - window.ends < 5.0


def test_clis_that_would_wait_on_a_limit_are_released(cli_paths: Any, api: MockMessagesAPI, home: Path) -> None:
    """retry-after 8: each CLI would wait and retry by itself, holding its process idle; the
    batch stops it at its first api_retry, pauses, and runs the item again after the window."""
    window = LimitWindow(10.0, retry_after="8")
    api.responder = window
    clis: list[tuple[float, int]] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            clis.append((time.monotonic(), len(_cli_children())))
            time.sleep(0.1)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        result = run_batch([f"item {i}" for i in range(8)], _options(cli_paths, api, home), max_concurrency=4,
                           retry=RetryPolicy(first_wait=1.0, max_wait=3.0))  # fmt: skip
    finally:
        stop.set()
        watcher.join()
    assert [i.error for i in result.items if i.error] == []
    assert all(i.text == f"answer to item {i.index}" for i in result.items)
    assert sum(1 for i in result.items if i.attempts > 1) >= 4  # the first wave was released and ran again
    settled = window.began + 3.0  # type: ignore[operator]
    assert max(n for t, n in clis) >= 2  # (the count sees CLIs: the first wave ran several at once)
    assert max(n for t, n in clis if settled < t < window.ends) <= 1  # no CLI waits out the limit: only a probe runs
    first_answer = min(t for t, limited in window.log if not limited)
    assert first_answer - window.ends < 5.0


def test_transient_faults_are_retried_then_named(cli_paths: Any, api: MockMessagesAPI, home: Path) -> None:
    calls: dict[str, int] = {}
    lock = threading.Lock()

    def flaky(request: Any) -> Reply:
        prompt = request.last_user_text()
        with lock:
            calls[prompt] = calls.get(prompt, 0) + 1
            n = calls[prompt]
        if prompt == "always" or (prompt == "twice" and n <= 2):
            return Reply(status=500, error_type="api_error", error_message="internal")
        return text("ok")

    api.responder = flaky
    # the CLI itself retries a 500 a few times; keep its own retries short
    options = _options(cli_paths, api, home, CLAUDE_CODE_MAX_RETRIES="0")
    result = run_batch(["fine", "twice", "always"], options, max_concurrency=3, retry=RetryPolicy(first_wait=0.2, max_wait=0.5, max_retries=2))
    fine, twice, always = result.items
    assert fine.ok and fine.attempts == 1
    assert twice.ok and twice.attempts == 3
    assert not always.ok and always.fault == "transient" and always.attempts == 3 and always.error.startswith("RetriesExhausted: 3 runs")
    assert run_batch(["always"], options, retry=None).items[0].attempts == 1  # no policy: fails at once


def test_a_batch_budget_stops_spending_and_a_larger_one_finishes(cli_paths: Any, api: MockMessagesAPI, home: Path, tmp_path: Path) -> None:
    api.responder = lambda r: text("spent", input_tokens=2000)  # about $0.01 a call on the mock's model
    options = _options(cli_paths, api, home)
    one = run_batch(["probe"], options).items[0].total_cost_usd
    assert one and one > 0.005
    budget = 10 * one
    result = run_batch([f"p{i}" for i in range(50)], options, max_concurrency=8, max_total_cost_usd=budget, checkpoint=tmp_path / "cp.jsonl")
    spent = sum(i.total_cost_usd or 0.0 for i in result.items)
    assert spent <= budget + 8 * one * 1.01  # at most one API call over per running item
    left = [i for i in result.items if not i.ok]
    assert left and all(i.fault == "budget" for i in left)
    assert sum(1 for i in result.items if i.ok) >= 8
    again = run_batch([f"p{i}" for i in range(50)], options, max_concurrency=8, resume=tmp_path / "cp.jsonl", max_total_cost_usd=100.0)
    assert [i.error for i in again.items if i.error] == []
    finished = [i for i in result.items if i.ok]
    assert [again.items[i.index].session_id for i in finished] == [i.session_id for i in finished]  # not run again


def test_a_share_below_one_call_keeps_the_answer_it_paid_for(cli_paths: Any, api: MockMessagesAPI, home: Path, tmp_path: Path) -> None:
    """Near a budget's end each item's share is below one call: the CLI makes the call, gets the
    answer, then ends the run over budget. The answer is kept (not paid for again by a rerun):
    every call the mock served bought one item's answer."""
    api.responder = lambda r: text(f"answer to {r.last_user_text()}", input_tokens=2000)
    options = _options(cli_paths, api, home)
    one = run_batch(["probe"], options).items[0].total_cost_usd
    assert one and one > 0.005
    served0 = len(api.message_requests())
    prompts = [f"p{i}" for i in range(4)]
    result = run_batch(prompts, options, max_concurrency=4, max_total_cost_usd=2.5 * one, checkpoint=tmp_path / "cp.jsonl")
    served = len(api.message_requests()) - served0
    assert served == 4  # each item's share (0.625 of a call) was below one call: all four ran once
    assert [i.text for i in result.items] == [f"answer to {p}" for p in prompts] and result.failed == []
    assert result.total_cost_usd == pytest.approx(4 * one, rel=1e-6)
    again = run_batch(prompts, options, max_concurrency=4, resume=tmp_path / "cp.jsonl", max_total_cost_usd=100.0)
    assert len(api.message_requests()) - served0 == 4 and again.failed == []  # nothing paid twice


def test_bad_budget_and_policy_input() -> None:
    with pytest.raises(ValueError, match="max_total_cost_usd"):
        run_batch(["x"], max_total_cost_usd=0)
    with pytest.raises(ValueError, match="max_total_cost_usd"):
        run_batch(["x"], max_total_cost_usd="5")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="first_wait"):
        RetryPolicy(first_wait=-1)
    with pytest.raises(ValueError, match="max_retries"):
        RetryPolicy(max_retries=-1)
    with pytest.raises(TypeError, match="RetryPolicy"):
        run_batch(["x"], retry=3)  # type: ignore[arg-type]


DRIVER = """
import json, sys
from claude_sdkurl import ClaudeAgentOptions
from claude_sdkurl.batch import run_batch
config = json.loads(sys.argv[1])
options = ClaudeAgentOptions(cli_path=config["cli"], env=config["env"], cwd=config["cwd"])
run_batch([f"p{i}" for i in range(30)], options, max_concurrency=4, checkpoint=config["checkpoint"], resume=config["checkpoint"])
"""


def test_a_driver_killed_mid_batch_resumes_without_losing_or_repeating_an_item(cli_paths: Any, api: MockMessagesAPI, home: Path,
                                                                              tmp_path: Path) -> None:  # fmt: skip
    import json
    import signal
    import subprocess
    import sys

    from claude_sdkurl.batch import BatchResult

    api.responder = lambda r: text(f"answer {r.last_user_text()}")
    checkpoint = tmp_path / "cp.jsonl"
    config = {"cli": str(cli_paths["stdio"]), "env": offline_env(api.url, home), "cwd": str(home / "work"), "checkpoint": str(checkpoint)}
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, json.dumps(config)], start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not checkpoint.exists() or len(checkpoint.read_text().splitlines()) < 8):
        time.sleep(0.05)
    os.killpg(driver.pid, signal.SIGKILL)  # the driver and the CLIs it was running
    driver.wait(10)
    before = BatchResult.load(checkpoint)
    assert 8 <= len(before.items) < 30  # killed mid-batch
    finished_then = {i.index: i.session_id for i in before.items}
    again = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(config)], timeout=300)
    assert again.returncode == 0
    after = BatchResult.load(checkpoint)
    assert [i.index for i in after.items] == list(range(30)) and after.failed == []
    assert all(after.items[i].session_id == sid for i, sid in finished_then.items())  # finished items not run again
    lines = [json.loads(line)["index"] for line in checkpoint.read_text().splitlines()]
    assert sorted(lines) == list(range(30))  # every item ended once: one line each


PAUSED_DRIVER = DRIVER.replace("from claude_sdkurl.batch import run_batch", "from claude_sdkurl.batch import RetryPolicy, run_batch").replace(
    "resume=config[\"checkpoint\"])", "resume=config[\"checkpoint\"], retry=RetryPolicy(first_wait=2.0, max_wait=3.0))")


def test_a_driver_killed_while_paused_resumes_paused(cli_paths: Any, api: MockMessagesAPI, home: Path, tmp_path: Path) -> None:
    """The checkpoint records the pause: a driver restarted in a limit window sends one probe at
    a time (not a fresh wave into the wall), and the limited items go on; every item ends once."""
    import json
    import signal
    import subprocess
    import sys

    from claude_sdkurl.batch import BatchResult

    assert "RetryPolicy(first_wait=2.0" in PAUSED_DRIVER
    window = LimitWindow(15.0)
    api.responder = window
    checkpoint = tmp_path / "cp.jsonl"
    config = {"cli": str(cli_paths["stdio"]), "env": offline_env(api.url, home), "cwd": str(home / "work"), "checkpoint": str(checkpoint)}
    driver = subprocess.Popen([sys.executable, "-c", PAUSED_DRIVER, json.dumps(config)], start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not checkpoint.exists() or '"state": "paused"' not in checkpoint.read_text()):
        time.sleep(0.05)
    os.killpg(driver.pid, signal.SIGKILL)  # the driver only: each CLI leads a group of its own
    driver.wait(10)
    # A killed driver's CLIs spend nothing after it is gone: their watchers stop them at once.
    # (Before, a watcher looked once a second, and a CLI of the killed driver could make a
    # request after the restart: two refused requests 0.12 s apart, seen once on a busy machine.)
    mine = f"HOME={home}".encode()
    gone = time.monotonic() + 10
    while time.monotonic() < gone and processes("environ", lambda env: mine in env.split(b"\0")):
        time.sleep(0.02)
    assert not processes("environ", lambda env: mine in env.split(b"\0")), "a CLI outlived its killed driver"
    before = BatchResult.load(checkpoint)
    assert before.paused_until is not None and before.items == []
    assert before.unfinished and all(run.fault == "limit" for run in before.unfinished.values())
    restarted = time.monotonic()
    again = subprocess.run([sys.executable, "-c", PAUSED_DRIVER, json.dumps(config)], timeout=300)
    assert again.returncode == 0
    after = BatchResult.load(checkpoint)
    assert [i.index for i in after.items] == list(range(30)) and after.failed == [] and after.unfinished == {}
    assert after.paused_until is None  # the pause's end was written too
    in_window = [t for t, limited in window.log if limited and t > restarted]
    assert in_window and all(b - a >= 0.5 for a, b in zip(in_window, in_window[1:]))  # probes, one at a time
    lines = [d["index"] for d in map(json.loads, checkpoint.read_text().splitlines()) if "state" not in d]
    assert sorted(lines) == list(range(30))


@pytest.mark.foreign_threads
@pytest.mark.foreign_fds  # this LocalCluster leaves one pipe in this process: seen with retry=None and no limit too
def test_a_limit_window_on_a_dask_cluster_loses_nothing(cli_paths: Any, api: MockMessagesAPI, home: Path) -> None:
    # The driver decides for every executor: the same pause and probe with items on Dask workers.
    # (This found that Dask hands back a first run's cached result for a run again with the same
    # arguments: each run now carries its attempt number.)
    distributed = pytest.importorskip("distributed")  # in the test extra: never skipped in CI
    window = LimitWindow(8.0)
    api.responder = window
    with distributed.LocalCluster(n_workers=2, threads_per_worker=4, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            result = run_batch([f"item {i}" for i in range(16)], _options(cli_paths, api, home), executor=client.get_executor(),
                               max_concurrency=4, retry=RetryPolicy(first_wait=1.0, max_wait=3.0))  # fmt: skip
    assert [i.error for i in result.items if i.error] == []
    assert sum(1 for i in result.items if i.attempts > 1) >= 4
    assert min(t for t, limited in window.log if not limited) - window.ends < 4.0


@pytest.mark.foreign_threads
@pytest.mark.foreign_fds  # run alone, Ray's client keeps 11 descriptors of its own after ray.shutdown()
def test_a_limit_window_on_a_ray_instance_loses_nothing(cli_paths: Any, api: MockMessagesAPI, home: Path) -> None:
    # The same pause and probe with items as Ray tasks (a real local instance: GCS, raylet, workers).
    from claude_sdkurl.batch import RayExecutor

    window = LimitWindow(6.0)
    api.responder = window
    with local_ray(2):
        result = run_batch([f"item {i}" for i in range(8)], _options(cli_paths, api, home), executor=RayExecutor(),
                           max_concurrency=4, retry=RetryPolicy(first_wait=1.0, max_wait=2.0))  # fmt: skip
    assert [i.error for i in result.items if i.error] == []
    assert all(i.text == f"answer to item {i.index}" for i in result.items)
    assert sum(1 for i in result.items if i.attempts > 1) >= 1
    assert min(t for t, limited in window.log if not limited) - window.ends < 4.0


class FillingWindow:
    """A subscriber's 5-hour window that fills: each answer uses up ``step`` of it (reported in the
    unified rate-limit headers, which the CLI passes on as a rate-limit event's
    ``unifiedWindows``); at 100 % the API refuses (429, rejected) until the window resets,
    ``reset_in`` seconds after the first request, and then it is empty again."""

    def __init__(self, step: float, reset_in: float) -> None:
        self.step, self.reset_in = step, reset_in
        self.used = 0.0
        self.reset_epoch: float | None = None
        self.lock = threading.Lock()
        self.log: list[tuple[float, bool]] = []  # (epoch time, refused)

    def __call__(self, request: Any) -> Reply:
        with self.lock:
            now = time.time()
            # whole seconds, as the API's reset header: a fractional reset behind a truncated
            # header refused a request sent at the announced second (a CI run saw it)
            self.reset_epoch = self.reset_epoch or math.ceil(now + self.reset_in)
            if now >= self.reset_epoch:  # the window reset
                self.used, self.reset_epoch = 0.0, math.ceil(now + 3600)
            refused = self.used >= 1.0 - 1e-9
            if not refused:
                self.used = min(1.0, self.used + self.step)
            self.log.append((now, refused))
            used, reset = self.used, str(int(self.reset_epoch))
        status = "rejected" if refused else ("allowed_warning" if used >= 0.8 else "allowed")
        headers = {
            "anthropic-ratelimit-unified-status": status, "anthropic-ratelimit-unified-reset": reset,
            "anthropic-ratelimit-unified-representative-claim": "five_hour",
            "anthropic-ratelimit-unified-5h-status": status, "anthropic-ratelimit-unified-5h-reset": reset,
            "anthropic-ratelimit-unified-5h-utilization": f"{used:.2f}",
        }  # fmt: skip
        if refused:
            return Reply(status=429, error_type="rate_limit_error", error_message="usage limit", headers=headers)
        reply = text(f"answer to {request.last_user_text()}")
        reply.headers = headers
        return reply


def _subscriber(cli_paths: Any, api: MockMessagesAPI, home: Path) -> ClaudeAgentOptions:
    env = offline_env(api.url, home)
    env.pop("ANTHROPIC_API_KEY")
    env["CLAUDE_CODE_OAUTH_TOKEN"] = "sk-ant-oat01-offline-test"
    return ClaudeAgentOptions(cli_path=str(cli_paths["stdio"]), env=env, cwd=str(home / "work"))


@pytest.mark.parametrize("pause_before", [0.95, None])
def test_a_filling_usage_window_holds_the_batch_before_the_limit(
    cli_paths: Any, api: MockMessagesAPI, home: Path, pause_before: float | None
) -> None:
    window = FillingWindow(step=0.48, reset_in=10.0)  # the second answer fills it to 96 %
    api.responder = window
    reports: list[BatchProgress] = []
    result = run_batch([f"item {i}" for i in range(4)], _subscriber(cli_paths, api, home), max_concurrency=1,
                       retry=RetryPolicy(first_wait=1.0, max_wait=30.0, pause_before=pause_before), progress=reports.append)  # fmt: skip
    assert [i.error for i in result.items if i.error] == []
    assert all(i.text == f"answer to item {i.index}" for i in result.items)
    refused = [t for t, was in window.log if was]
    assert window.reset_epoch is not None
    if pause_before is not None:
        # held after the answer that reported 96 %: no request refused, none before the reset
        assert refused == []
        assert result.items[1].near_limit is not None and result.items[1].near_limit["utilization"] >= 0.95
        third = window.log[2][0]
        assert third >= window.reset_epoch - 3600 - 1  # (the reset moved the window on by an hour)
        assert any(p.paused for p in reports)
    else:
        assert len(refused) >= 1  # the old way: the limit is met, then the batch pauses


class TwoWindows:
    """A subscriber with two usage windows at once: the 5-hour one at 10 % (resets in an hour),
    the 7-day one at 97 % until its reset, ``reset_in`` seconds after the first request (whole
    seconds, as the API's header), and at 1 % after it. Each request's time is logged."""

    def __init__(self, reset_in: float) -> None:
        self.reset_in = reset_in
        self.weekly_reset: int | None = None
        self.lock = threading.Lock()
        self.log: list[float] = []

    def __call__(self, request: Any) -> Reply:
        with self.lock:
            now = time.time()
            self.weekly_reset = self.weekly_reset or math.ceil(now + self.reset_in)
            self.log.append(now)
            weekly = 0.97 if now < self.weekly_reset else 0.01
            weekly_reset = self.weekly_reset if now < self.weekly_reset else self.weekly_reset + 7 * 86400
        hourly_reset = str(int(now) + 3600)
        status = "allowed_warning" if weekly >= 0.8 else "allowed"
        reply = text(f"answer to {request.last_user_text()}")
        reply.headers = {
            "anthropic-ratelimit-unified-status": status, "anthropic-ratelimit-unified-reset": str(weekly_reset),
            "anthropic-ratelimit-unified-representative-claim": "seven_day",
            "anthropic-ratelimit-unified-5h-status": "allowed", "anthropic-ratelimit-unified-5h-reset": hourly_reset,
            "anthropic-ratelimit-unified-5h-utilization": "0.10",
            "anthropic-ratelimit-unified-7d-status": status, "anthropic-ratelimit-unified-7d-reset": str(weekly_reset),
            "anthropic-ratelimit-unified-7d-utilization": f"{weekly:.2f}",
        }  # fmt: skip
        return reply


def test_the_fullest_of_several_usage_windows_holds_the_batch(cli_paths: Any, api: MockMessagesAPI, home: Path) -> None:
    """The 5-hour window far from its limit and the 7-day one at 97 %: the batch holds for the
    weekly one (the window nearest its limit), not goes on by the 5-hour one."""
    window = TwoWindows(reset_in=8.0)
    api.responder = window
    result = run_batch([f"item {i}" for i in range(3)], _subscriber(cli_paths, api, home), max_concurrency=1,
                       retry=RetryPolicy(first_wait=1.0, max_wait=30.0, pause_before=0.95))  # fmt: skip
    assert [i.text for i in result.items] == [f"answer to item {i}" for i in range(3)]
    near = result.items[0].near_limit
    assert near is not None and near["window"] == "seven_day" and near["utilization"] >= 0.95
    assert window.weekly_reset is not None and len(window.log) == 3
    assert window.log[1] >= window.weekly_reset - 1  # held until the weekly window reset (whole seconds)
