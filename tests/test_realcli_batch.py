"""Batches (``claude_sdkurl.batch``) on the real CLI 2.1.330: threads, a real Dask
``LocalCluster`` with worker processes, resume from a checkpoint, and the pickling check."""

from __future__ import annotations

import concurrent.futures as cf
import json
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import ClaudeAgentOptions, PermissionResultAllow
from claude_sdkurl.batch import BatchProgress, BatchResult, UnpicklableOptionError, run_batch
from claude_sdkurl.testing import MockMessagesAPI, RecordedRequest, Reply, error, offline_env, text

pytestmark = [pytest.mark.realcli, pytest.mark.foreign_fds]


def answers(request: RecordedRequest) -> Reply:
    prompt = request.last_user_text()
    if prompt.startswith("fail"):
        return error(400, "invalid_request_error", f"refused {prompt}")
    return text(f"answer to {prompt}")


@pytest.fixture
def batch_options(cli_paths: dict[str, Path], home: Path) -> Any:
    with MockMessagesAPI(answers) as api:
        options = ClaudeAgentOptions(cli_path=str(cli_paths["stdio"]), env=offline_env(api.url, home), cwd=str(home / "work"))
        yield api, options


def check_totals(result: BatchResult, prompts: list[str]) -> None:
    assert [i.prompt for i in result.items] == prompts
    for item in result.succeeded:
        assert item.text == f"answer to {item.prompt}" and item.session_id and item.total_cost_usd is not None
    assert result.total_cost_usd == pytest.approx(sum(i.total_cost_usd or 0 for i in result.items))
    assert result.total_tokens("output_tokens") == sum(int((i.usage or {}).get("output_tokens", 0)) for i in result.items)
    assert result.total_tokens("output_tokens") > 0


def test_threads_with_a_failure_progress_and_resume(batch_options: Any, tmp_path: Path) -> None:
    api, options = batch_options
    prompts = [f"p{i}" for i in range(5)] + ["fail-1"]
    seen: list[BatchProgress] = []
    checkpoint = tmp_path / "batch.jsonl"
    result = run_batch(prompts, options, max_concurrency=3, progress=seen.append, checkpoint=checkpoint)
    check_totals(result, prompts)
    [failed] = result.failed
    assert failed.prompt == "fail-1" and failed.error is not None and failed.error.startswith("ResultError: ")
    assert [p.done for p in seen] == [1, 2, 3, 4, 5, 6] and seen[-1].failed == 1
    assert len(checkpoint.read_text().splitlines()) == 6
    # resume: only the failed item and the new ones run again
    calls = len(api.message_requests())
    more = prompts + ["p6", "p7"]
    again = run_batch(more, options, resume=checkpoint, checkpoint=checkpoint)
    assert [i.prompt for i in again.items] == more and len(again.failed) == 1
    ran = [r.last_user_text() for r in api.message_requests()[calls:]]
    assert sorted(set(ran)) == ["fail-1", "p6", "p7"] and ran.count("p6") == ran.count("p7") == 1  # the CLI retries a 400 itself
    assert BatchResult.load(checkpoint).items[6].text == "answer to p6"


@pytest.mark.foreign_threads
def test_fifty_prompts_on_a_dask_local_cluster(batch_options: Any) -> None:
    distributed = pytest.importorskip("distributed")  # in the test extra: never skipped in CI
    api, options = batch_options
    prompts = [f"q{i}" for i in range(49)] + ["fail-dask"]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=4, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            result = run_batch(prompts, options, executor=client.get_executor(), max_concurrency=8)
    check_totals(result, prompts)
    assert [i.prompt for i in result.failed] == ["fail-dask"]
    assert len(result.succeeded) == 49
    assert sorted(r.last_user_text() for r in api.message_requests() if not r.last_user_text().startswith("fail")) == sorted(prompts[:-1])
    json.dumps([i.__dict__ for i in result.items], default=str)


def _module_level_guard(name: str, data: dict[str, Any], ctx: Any) -> PermissionResultAllow:
    return PermissionResultAllow()


@pytest.mark.foreign_threads
def test_unpicklable_option_is_named_before_anything_runs(batch_options: Any) -> None:
    api, options = batch_options
    import dataclasses

    bad = dataclasses.replace(options, can_use_tool=lambda n, i, c: PermissionResultAllow())
    with cf.ProcessPoolExecutor(1) as pool:
        with pytest.raises(UnpicklableOptionError, match="can_use_tool"):
            run_batch(["x"], bad, executor=pool)
        fine = dataclasses.replace(options, can_use_tool=_module_level_guard)
        result = run_batch(["ok"], fine, executor=pool)
    assert result.items[0].text == "answer to ok"
    assert api.message_requests() and all(r.last_user_text() == "ok" for r in api.message_requests())
