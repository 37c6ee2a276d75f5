"""A resumed, forked or continued session costs once: CLI 2.1.330 carries a session's earlier
cost into a resumed run's ``total_cost_usd``; the ledger, the spans and a batch count only what
each run spent. Every figure is checked against the calls the mock Messages API served (each
call has the same usage, so the same price in the CLI's own table), never against our sums."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from claude_sdkurl import ClaudeSDKClient, ResultMessage, query
from claude_sdkurl.batch import run_batch
from claude_sdkurl.ledger import CostLedger
from claude_sdkurl.testing import MockMessagesAPI, text

from .conftest import OptionsFactory
from .test_realcli_tracing import finished, named, spans  # noqa: F401 - the fixture

pytestmark = pytest.mark.realcli


def _result(prompt: str, options: Any) -> ResultMessage:
    return [m for m in query(prompt, options) if isinstance(m, ResultMessage)][-1]


def _per_call(api: MockMessagesAPI, make_options: OptionsFactory) -> float:
    """One call's price: a fresh one-call run's cost, divided by the calls the mock served for it."""
    before = len(api.message_requests())
    first = _result("price", make_options())
    served = len(api.message_requests()) - before
    assert served >= 1 and first.total_cost_usd
    return first.total_cost_usd / served


def test_resumed_forked_and_continued_runs_are_counted_once(make_options: OptionsFactory, api: MockMessagesAPI, spans: Any) -> None:  # noqa: F811
    api.responder = lambda r: text("ok")
    price = _per_call(api, make_options)
    served0 = len(api.message_requests())
    with CostLedger() as ledger:
        first = _result("one", make_options())
        second = _result("two", make_options(resume=first.session_id))
        third = _result("three", make_options(resume=first.session_id, fork_session=True))
        fourth = _result("four", make_options(continue_conversation=True))
        with ClaudeSDKClient(make_options(resume=first.session_id)) as client:
            client.query("five")
            list(client.receive_response())
            client.query("six")
            list(client.receive_response())
    served = len(api.message_requests()) - served0
    assert served == 6  # one call a prompt
    assert ledger.total_cost_usd == pytest.approx(served * price, rel=1e-9)
    assert len(ledger.runs) == 5 and all(r.cost_usd > 0 for r in ledger.runs)
    (model,) = ledger.by_model()
    assert ledger.by_model()[model]["cost_usd"] == pytest.approx(served * price, rel=1e-9)
    # the CLI itself does carry the earlier cost (what made the old figures wrong), when it writes one
    if second.total_cost_usd and second.total_cost_usd > price * 1.5:
        assert third.total_cost_usd and third.total_cost_usd > second.total_cost_usd
    # spans: each query's agent span and each client turn costs one call
    agents = named(finished(spans), "invoke_agent Claude Code")
    costs = [a.attributes["llm.cost.total"] for a in agents]
    assert len(costs) == 7 and sum(costs) == pytest.approx((served + 1) * price, rel=1e-9)
    assert all(c == pytest.approx(price, rel=1e-9) for c in costs)
    assert fourth.session_id


def test_a_batch_resumed_with_its_sessions_counts_each_call_once(cli_paths: Any, api: MockMessagesAPI, home: Any, tmp_path: Any) -> None:
    """(stdio: a session store needs a current CLI)"""
    from claude_sdkurl import ClaudeAgentOptions
    from claude_sdkurl.batch import BatchResult
    from claude_sdkurl.stores import SQLiteSessionStore
    from claude_sdkurl.testing import offline_env

    def make_options(**kw: Any) -> ClaudeAgentOptions:
        return ClaudeAgentOptions(cli_path=str(cli_paths["stdio"]), env=offline_env(api.url, home), cwd=str(home / "work"), **kw)

    api.responder = lambda r: text("ok")
    price = _per_call(api, make_options)
    store = SQLiteSessionStore(tmp_path / "store.db")
    try:
        options = make_options(session_store=store)
        served0 = len(api.message_requests())
        first = run_batch(["a", "b", "c"], options)
        assert first.failed == []
        # each item goes on with its session (resumed: the CLI carries the first run's cost)
        items = [dataclasses.replace(i, error="Interrupted: go on", fault=None) for i in first.items]
        again = run_batch(["a", "b", "c"], options, resume=BatchResult(items), continue_prompt="go on")
    finally:
        store.close()
    served = len(api.message_requests()) - served0
    assert served == 6
    assert [i.resumed_from for i in again.items] == [i.session_id for i in first.items]
    # each item: its two runs, one call each; the batch: the calls served, once
    seen = [(i.index, f.total_cost_usd, i.total_cost_usd, i.model_usage) for f, i in zip(first.items, again.items)]
    assert [i.total_cost_usd for i in again.items] == pytest.approx([2 * price] * 3, rel=1e-9), (price, seen)
    assert again.total_cost_usd == pytest.approx(served * price, rel=1e-9)
    model_cost = sum(float(u["costUSD"]) for i in again.items for u in (i.model_usage or {}).values())
    assert model_cost == pytest.approx(3 * price, rel=1e-9)  # the last run of each: one call


def test_a_reader_that_lags_behind_the_resumed_cli_still_counts_the_run(cli_paths: Any, api: MockMessagesAPI, home: Any,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Run H (two CPU burners) counted a resumed batch item's run as free: what the session had
    cost was read from its transcript at the run's ``init``, and a reader that came to it late
    found the CLI had already finished the turn and written this run's own ``cost-state``.
    Here the reader is held at ``init`` until the CLI has written it, as the busy machine did."""
    import time

    from claude_sdkurl import ClaudeAgentOptions
    from claude_sdkurl._engine import carried as carried_module
    from claude_sdkurl._engine import session as session_module
    from claude_sdkurl._engine.paths import transcripts_in
    from claude_sdkurl.testing import offline_env

    options = ClaudeAgentOptions(cli_path=str(cli_paths["stdio"]), env=offline_env(api.url, home), cwd=str(home / "work"))
    api.responder = lambda r: text("ok")
    price = _per_call(api, lambda **kw: dataclasses.replace(options, **kw))
    first = _result("one", options)
    projects = home / ".claude" / "projects"
    (transcript,) = transcripts_in(projects, first.session_id)
    states_after_first = transcript.read_bytes().count(b'"cost-state"')
    assert states_after_first >= 1

    def late(projects_dir: Any, session_id: Any, before: Any = None) -> Any:
        deadline = time.monotonic() + 60  # (the CLI's turn on a busy machine)
        while transcript.read_bytes().count(b'"cost-state"') == states_after_first and time.monotonic() < deadline:
            time.sleep(0.05)
        return carried_module.carried(projects_dir, session_id, before)

    monkeypatch.setattr(session_module, "carried", late)
    served0 = len(api.message_requests())
    with CostLedger() as ledger:
        second = _result("two", dataclasses.replace(options, resume=first.session_id))
    served = len(api.message_requests()) - served0
    assert transcript.read_bytes().count(b'"cost-state"') > states_after_first  # the reader did come late
    assert served == 1
    assert second.total_cost_usd == pytest.approx(2 * price, rel=1e-9)  # the CLI carried the first run's cost
    assert ledger.total_cost_usd == pytest.approx(served * price, rel=1e-9)  # and this run is counted, once
