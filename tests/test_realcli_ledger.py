"""The cost ledger (``claude_sdkurl.ledger``) on the real CLIs: totals equal the CLI's own,
per turn, per model, per subagent and per tool, across a client, a batch on threads and a
``with`` block."""

from __future__ import annotations

from typing import Any

import pytest

from claude_sdkurl import ClaudeSDKClient, ResultMessage, query
from claude_sdkurl.batch import run_batch
from claude_sdkurl.ledger import MAIN, CostLedger
from claude_sdkurl.testing import MockMessagesAPI, text, tool_use

from .conftest import OptionsFactory
from .test_realcli_parity import agent_script

pytestmark = pytest.mark.realcli


def test_a_client_ledger_is_the_clis_own_total_turn_by_turn(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    api.enqueue(tool_use("Bash", {"command": "echo hi"}), text("one"), text("two", input_tokens=500), text("three"))
    results: list[ResultMessage] = []
    with ClaudeSDKClient(make_options(allowed_tools=["Bash"])) as client:
        for prompt in ("a", "b", "c"):
            client.query(prompt)
            results += [m for m in client.receive_response() if isinstance(m, ResultMessage)]
            # readable while the client lives, after each turn: the CLI's running total
            assert client.ledger.total_cost_usd == round(results[-1].total_cost_usd, 12)
        ledger = client.ledger
    (run,) = ledger.runs
    assert run.session_id == results[-1].session_id
    assert run.turns == pytest.approx([results[0].total_cost_usd] + [b.total_cost_usd - a.total_cost_usd for a, b in zip(results, results[1:])])
    assert run.turns[1] > run.turns[2]  # the turn with 500 input tokens cost more
    (model,) = results[-1].model_usage
    assert ledger.by_model()[model]["cost_usd"] == results[-1].model_usage[model]["costUSD"]
    assert ledger.by_model()[model]["output_tokens"] == results[-1].model_usage[model]["outputTokens"]
    tools = ledger.by_tool()
    assert set(tools) == {"Bash"} and tools["Bash"]["calls"] == 1 and 0 < tools["Bash"]["cost_usd"] < ledger.total_cost_usd
    assert ledger.by_subagent()[MAIN]["cost_usd"] == pytest.approx(ledger.total_cost_usd)  # no subagent: all main
    assert "Bash" in ledger._repr_html_() and f"${ledger.total_cost_usd:.4f}" in repr(ledger)


def test_an_open_ledger_sums_a_threaded_batch_to_the_cent(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    api.responder = lambda r: text(f"answer {r.last_user_text()}", input_tokens=10 + len(r.last_user_text()) * 40)
    with CostLedger() as ledger:
        result = run_batch(["a", "bb", "ccc", "dddd"], make_options(), max_concurrency=4)
    assert [i.error for i in result.items] == [None] * 4
    assert len(ledger.runs) == 4
    assert round(ledger.total_cost_usd, 2) == round(result.total_cost_usd, 2)
    assert ledger.total_cost_usd == pytest.approx(result.total_cost_usd, abs=1e-12)
    by_model = ledger.by_model()
    assert by_model.keys() == result.cost_by_model().keys()
    assert all(by_model[m]["cost_usd"] == pytest.approx(c) for m, c in result.cost_by_model().items())
    list(query("after", make_options()))  # the block is closed: not counted
    assert len(ledger.runs) == 4


def test_a_subagents_spend_is_its_own(cli_paths: Any, api: MockMessagesAPI, home: Any) -> None:
    from claude_sdkurl import ClaudeAgentOptions
    from claude_sdkurl.testing import offline_env

    api.responder = agent_script(sub=[text("sub says hi", input_tokens=3000)], main=[text("main done"), text("after the subagent")], prompt="say hi")
    options = ClaudeAgentOptions(cli_path=str(cli_paths["stdio"]), env=offline_env(api.url, home), cwd=str(home / "work"),
                                 include_partial_messages=True)  # fmt: skip
    with CostLedger() as ledger:
        messages = list(query("delegate", options))
    last = [m for m in messages if isinstance(m, ResultMessage)][-1]
    assert ledger.total_cost_usd == round(last.total_cost_usd, 12)  # the CLI's figure, as the ledger shows dollars
    shares = ledger.by_subagent()
    subagents = [k for k in shares if k != MAIN]
    assert len(subagents) == 1  # keyed by the Agent tool use that ran it
    assert shares[subagents[0]]["cost_usd"] > shares[MAIN]["cost_usd"]  # 3000 input tokens, against about 10 a call
    assert sum(r["cost_usd"] for r in shares.values()) == pytest.approx(ledger.total_cost_usd)
    assert ledger.by_tool()["Agent"]["calls"] == 1
    # with partial messages the main conversation's output tokens are the stream's final counts
    # (2.1.330 streams no events for a subagent's calls: those keep the count they carry)
    (run,) = ledger.runs
    assert all(call.output_tokens > 1 for call in run.calls.values() if call.subagent == MAIN)


def test_turn_costs_and_tokens_are_otel_metrics(make_options: OptionsFactory, api: MockMessagesAPI) -> None:
    from opentelemetry import metrics
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.util._once import Once

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    metrics._internal._METER_PROVIDER_SET_ONCE = Once()  # type: ignore[attr-defined]  # set once per process: reset for tests
    metrics._internal._METER_PROVIDER = None  # type: ignore[attr-defined]
    metrics.set_meter_provider(provider)
    try:
        api.enqueue(text("one"), text("two", input_tokens=500))
        with ClaudeSDKClient(make_options()) as client:
            for prompt in ("a", "b"):
                client.query(prompt)
                list(client.receive_response())
            total = client.ledger.total_cost_usd
            (model,) = client.ledger.by_model()
            model_row = client.ledger.by_model()[model]
        data = reader.get_metrics_data()
    finally:
        metrics._internal._METER_PROVIDER_SET_ONCE = Once()  # type: ignore[attr-defined]
        metrics._internal._METER_PROVIDER = None  # type: ignore[attr-defined]
        provider.shutdown()
    found = {m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    (cost_point,) = found["claude_sdkurl.cost"].data.data_points
    assert cost_point.value == pytest.approx(total) and cost_point.attributes["gen_ai.response.model"] == model
    by_type = {p.attributes["gen_ai.token.type"]: p for p in found["gen_ai.client.token.usage"].data.data_points}
    assert by_type["input"].count == 2 and by_type["input"].sum == model_row["input_tokens"] + model_row["cache_read_input_tokens"] + model_row["cache_creation_input_tokens"]
    assert by_type["output"].sum == model_row["output_tokens"]
