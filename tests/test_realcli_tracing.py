"""OpenTelemetry spans of runs on the real CLIs (``claude_sdkurl.tracing``): the tree, content
only when asked, concurrent runs kept apart, a broken or hung exporter costing nothing, store
and batch spans, the CLI's own spans in the same trace in a real Phoenix, and every span kind
and attribute key of ``openinference-instrumentation-claude-agent-sdk`` (run on the official
SDK) present in ours."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once

from claude_sdkurl import (
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    create_sdk_mcp_server,
    query,
    tool,
    tracing,
)
from claude_sdkurl._engine import trace as _trace
from claude_sdkurl.batch import run_batch
from claude_sdkurl.stores import SQLiteSessionStore
from claude_sdkurl.testing import MockMessagesAPI, install_cli, text, tool_use

from .conftest import OptionsFactory

pytestmark = pytest.mark.realcli


def _set_provider(provider: Any) -> None:
    # OpenTelemetry lets a process set its provider once; tests put it back (as its own tests do).
    trace._TRACER_PROVIDER_SET_ONCE = Once()  # type: ignore[attr-defined]
    trace._TRACER_PROVIDER = None  # type: ignore[attr-defined]
    if provider is not None:
        trace.set_tracer_provider(provider)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _set_provider(provider)
    try:
        yield exporter
    finally:
        tracing.capture_content(None)
        tracing.flush()
        _set_provider(None)
        provider.shutdown()


def finished(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    assert tracing.flush(10)
    return list(exporter.get_finished_spans())


def tree(found: Sequence[ReadableSpan]) -> dict[str, Any]:
    """name -> parent name (names made unique by order), and checks: one trace, no orphans."""
    by_id = {s.context.span_id: s for s in found}
    assert len({s.context.trace_id for s in found}) == 1, "more than one trace"
    orphans = [s.name for s in found if s.parent is not None and s.parent.span_id not in by_id]
    assert orphans == [], f"spans whose parent is not in the trace: {orphans}"
    return {s: by_id[s.parent.span_id] if s.parent else None for s in found}


def named(found: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in found if s.name == name]


@tool("add", "Add two numbers", {"a": int, "b": int})
def add(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": str(args["a"] + args["b"])}]}


def _decide(name: str, tool_input: dict[str, Any], context: Any) -> Any:
    if "denied" in str(tool_input.get("command")):
        return PermissionResultDeny(message="not this one")
    return PermissionResultAllow()


def _hook(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
    return {}


def test_a_query_is_one_trace_of_tools_callbacks_hooks_and_mcp(make_options: OptionsFactory, api: MockMessagesAPI,
                                                              spans: InMemorySpanExporter) -> None:  # fmt: skip
    api.enqueue(tool_use("Bash", {"command": "touch denied.txt"}), tool_use("mcp__calc__add", {"a": 1, "b": 2}), text("done"))
    options = make_options(can_use_tool=_decide, hooks={"PreToolUse": [HookMatcher(matcher=None, hooks=[_hook])]},
                           mcp_servers={"calc": create_sdk_mcp_server("calc", tools=[add])})  # fmt: skip
    with trace.get_tracer("app").start_as_current_span("app"):
        messages = list(query("use the tools", options))
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    found = finished(spans)
    parents = tree(found)
    (agent,) = named(found, "invoke_agent Claude Code")
    assert parents[agent].name == "app"  # under the caller's span
    bash, mcp = named(found, "execute_tool Bash")[0], named(found, "execute_tool mcp__calc__add")[0]
    assert parents[bash] is agent and parents[mcp] is agent
    (denied,) = [s for s in found if s.name == "can_use_tool Bash"]
    assert parents[denied] is bash and denied.attributes["claude_sdkurl.permission.decision"] == "deny"
    assert bash.attributes["claude_sdkurl.tool.is_error"] is True  # the denial came back as an error result
    allowed = [s for s in found if s.name == "can_use_tool mcp__calc__add"]
    assert [parents[s] for s in allowed] == [mcp] and allowed[0].attributes["claude_sdkurl.permission.decision"] == "allow"
    (body,) = named(found, "mcp tools/call add")
    assert parents[body] is mcp and body.attributes["claude_sdkurl.tool.is_error"] is False
    hooks = named(found, "hook PreToolUse")
    assert sorted(parents[h].name for h in hooks) == sorted(["execute_tool Bash", "execute_tool mcp__calc__add"])
    # a tool span lasts from its tool_use to its tool_result, and sits inside its turn
    for span in (bash, mcp):
        assert agent.start_time <= span.start_time < span.end_time <= agent.end_time
    a = agent.attributes
    assert a["openinference.span.kind"] == "AGENT" and a["gen_ai.operation.name"] == "invoke_agent"
    assert a["session.id"] == result.session_id == a["gen_ai.conversation.id"]
    assert a["llm.cost.total"] == result.total_cost_usd and a["gen_ai.usage.output_tokens"] == result.usage["output_tokens"]
    assert a["llm.model_name"] and a["claude_sdkurl.num_turns"] == result.num_turns
    # no content unless asked: no prompt, answer, tool input or output anywhere
    for span in found:
        keys = set(span.attributes)
        assert not keys & {"input.value", "output.value", "tool.parameters", "gen_ai.tool.call.arguments"}, span.name
        assert not any(k.startswith("llm.output_messages") for k in keys), span.name


def test_client_turns_sit_under_one_session_span_with_content_when_asked(make_options: OptionsFactory, api: MockMessagesAPI,
                                                                         spans: InMemorySpanExporter) -> None:  # fmt: skip
    tracing.capture_content(True)
    api.enqueue(tool_use("Bash", {"command": "echo hi"}), text("first"), text("second"))
    costs = []
    with ClaudeSDKClient(make_options(allowed_tools=["Bash"])) as client:
        for prompt in ("one", "two"):
            client.query(prompt)
            costs += [m.total_cost_usd for m in client.receive_response() if isinstance(m, ResultMessage)]
    found = finished(spans)
    parents = tree(found)  # no caller span: the session span is the root
    (session,) = named(found, "claude_sdkurl.session")
    turns = sorted(named(found, "invoke_agent Claude Code"), key=lambda s: s.start_time)
    assert [parents[t] for t in turns] == [session, session] and parents[session] is None
    assert [t.attributes["input.value"] for t in turns] == ["one", "two"]
    assert [t.attributes["output.value"] for t in turns] == ["first", "second"]
    (bash,) = named(found, "execute_tool Bash")
    assert parents[bash] is turns[0] and bash.attributes["tool.parameters"] == '{"command": "echo hi"}'
    assert bash.attributes["output.value"] == "hi"
    assert turns[0].attributes["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] == "Bash"
    assert turns[0].end_time <= turns[1].start_time  # a turn ends at its result
    # each turn's own cost (the CLI's figure is a running total of its process)
    assert [t.attributes["llm.cost.total"] for t in turns] == pytest.approx([costs[0], costs[1] - costs[0]])
    assert turns[1].attributes["claude_sdkurl.session_cost_usd"] == costs[1]


def test_a_prewarmed_clients_turns_are_traced_under_the_callers_span(make_options: OptionsFactory, api: MockMessagesAPI,
                                                                     spans: InMemorySpanExporter) -> None:  # fmt: skip
    api.enqueue(text("first"), text("second"))
    tracer = trace.get_tracer("test")
    costs = []
    with tracer.start_as_current_span("web request"):
        client = ClaudeSDKClient(make_options()).prewarm()  # connects on a thread of its own
    try:
        for prompt in ("one", "two"):
            client.query(prompt)
            costs += [m.total_cost_usd for m in client.receive_response() if isinstance(m, ResultMessage)]
    finally:
        client.disconnect()
    found = finished(spans)
    parents = tree(found)
    (request,) = named(found, "web request")
    (session,) = named(found, "claude_sdkurl.session")
    turns = sorted(named(found, "invoke_agent Claude Code"), key=lambda s: s.start_time)
    assert parents[session] is request and [parents[t] for t in turns] == [session, session]
    assert [t.attributes["llm.cost.total"] for t in turns] == pytest.approx([costs[0], costs[1] - costs[0]])


def test_concurrent_runs_keep_their_spans_apart(make_options: OptionsFactory, api: MockMessagesAPI, spans: InMemorySpanExporter) -> None:
    api.responder = lambda r: text("ok") if r.tool_results() else tool_use("Bash", {"command": f"echo {r.last_user_text()}"})
    tracer = trace.get_tracer("app")
    errors: list[BaseException] = []

    def run(name: str) -> None:
        try:
            with tracer.start_as_current_span(name):
                list(query(name, make_options(allowed_tools=["Bash"])))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(f"run{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    found = finished(spans)
    for i in range(4):
        (root,) = named(found, f"run{i}")
        mine = [s for s in found if s.context.trace_id == root.context.trace_id]
        tree(mine)
        (bash,) = [s for s in mine if s.name == "execute_tool Bash"]
        assert bash.attributes["gen_ai.tool.call.id"]  # one tool span per run, in its own trace
        assert len(named(mine, "invoke_agent Claude Code")) == 1


class _Hanging(SpanExporter):
    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.entered.set()
        self.release.wait(120)
        return SpanExportResult.SUCCESS


class _RaisingProcessor(SimpleSpanProcessor):
    def on_start(self, span: Any, parent_context: Any = None) -> None:
        raise RuntimeError("processor broke at start")

    def on_end(self, span: ReadableSpan) -> None:
        raise RuntimeError("processor broke at end")


def test_a_broken_or_hung_exporter_costs_the_run_nothing(make_options: OptionsFactory, api: MockMessagesAPI,
                                                        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setattr(_trace, "_warned", set())  # "once" is per process: count this test's own
    api.responder = lambda r: text("fine")
    hanging = _Hanging()
    for processor in (_RaisingProcessor(InMemorySpanExporter()), SimpleSpanProcessor(hanging)):
        provider = TracerProvider()
        provider.add_span_processor(processor)
        _set_provider(provider)
        try:
            for _ in range(3):
                assert list(query("hi", make_options()))[-1].result == "fine"
            if processor.span_exporter is hanging:
                # every run ended while the exporter was still stuck in its first export
                assert hanging.entered.is_set() and not hanging.release.is_set()
        finally:
            if processor.span_exporter is hanging:
                hanging.release.set()
            tracing.flush(10)
            _set_provider(None)
    # the processor's failures were logged, once per kind, not raised into the run
    failures = [r for r in caplog.records if r.name == "claude_sdkurl.trace"]
    assert 1 <= len(failures) <= 3 and all("logged once" in r.getMessage() for r in failures)


class _BlockingStart(SimpleSpanProcessor):
    """A processor whose on_start blocks (a lock held elsewhere, a slow network call) until released."""

    def __init__(self, exporter: SpanExporter) -> None:
        super().__init__(exporter)
        self.release = threading.Event()
        self.blocked = threading.Event()

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if not self.release.is_set():
            self.blocked.set()
            self.release.wait(120)


def test_a_span_processor_whose_on_start_blocks_costs_the_run_once(make_options: OptionsFactory, api: MockMessagesAPI,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setattr(_trace, "_warned", set())
    api.responder = lambda r: text("fine")
    exporter = InMemorySpanExporter()
    processor = _BlockingStart(exporter)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    _set_provider(provider)
    try:
        t0 = time.monotonic()
        for _ in range(3):  # (on the old code the first run hung in on_start for the whole 120 s)
            assert list(query("hi", make_options()))[-1].result == "fine"
        assert processor.blocked.is_set() and time.monotonic() - t0 < 60
        processor.release.set()
        assert tracing.flush(10)
        for _ in range(50):  # once on_start returns, spans are started again
            if _trace._starter._stuck is False:
                break
            time.sleep(0.1)
        list(query("hi", make_options()))
        assert tracing.flush(10)
        agents = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent Claude Code"]
        assert agents and agents[-1].attributes["llm.cost.total"] is not None
    finally:
        processor.release.set()
        tracing.flush(10)
        _set_provider(None)
        provider.shutdown()


def test_no_secret_reaches_an_attribute(make_options: OptionsFactory, api: MockMessagesAPI, spans: InMemorySpanExporter,
                                        transport: str) -> None:  # fmt: skip
    tracing.capture_content(True)  # even with content on
    api.enqueue(tool_use("Bash", {"command": "echo hi"}), text("done"))
    options = make_options(allowed_tools=["Bash"])
    key = options.env["ANTHROPIC_API_KEY"]
    with ClaudeSDKClient(options) as client:
        client.query("go")
        list(client.receive_response())
        token = getattr(client.session._transport, "_token", None)  # the WebSocket's bearer token
    secrets = [s for s in (key, token) if s]
    assert secrets
    for span in finished(spans):
        for value in span.attributes.values():
            assert not any(secret in str(value) for secret in secrets), span.name


def test_store_calls_and_batch_items_have_spans(make_options: OptionsFactory, api: MockMessagesAPI, spans: InMemorySpanExporter,
                                                tmp_path: Path) -> None:  # fmt: skip
    api.responder = lambda r: text(f"answer {r.last_user_text()}")
    store = SQLiteSessionStore(tmp_path / "store.db")
    try:  # transport chosen by the CLI's version (2.1.120 mirrors to stores over stdio only)
        result = run_batch(["a", "b"], make_options(session_store=store, transport="auto"), max_concurrency=2)
    finally:
        store.close()
    assert [i.error for i in result.items] == [None, None]
    found = finished(spans)
    parents = tree(found)
    (batch,) = named(found, "claude_sdkurl.batch")
    items = named(found, "claude_sdkurl.batch.item")
    assert len(items) == 2 and all(parents[i] is batch for i in items)
    agents = named(found, "invoke_agent Claude Code")
    assert sorted(parents[a].attributes["claude_sdkurl.batch.index"] for a in agents) == [0, 1]
    appends = named(found, "claude_sdkurl.store.append")
    assert appends and all(parents[s] in agents for s in appends)
    assert {s.attributes["session.id"] for s in appends} == {i.session_id for i in result.items}
    assert batch.attributes["llm.cost.total"] == pytest.approx(result.total_cost_usd)


def test_tracing_is_off_and_opentelemetry_not_imported_without_a_provider(tmp_path: Path) -> None:
    program = (
        "import sys, threading\n"
        "from claude_sdkurl import query\n"
        "from claude_sdkurl.testing import MockTransport\n"
        "list(query('hi', transport=MockTransport(lambda m, cli: cli.turn('ok') if m['type'] == 'user' else None)))\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')), "
        "[t.name for t in threading.enumerate() if t.name == 'claude-sdkurl-trace'])\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[] []", done.stderr


# ---------------------------------------------------------------- a real receiver: Phoenix


@pytest.fixture(scope="session")
def phoenix() -> Iterator[Any]:
    from .servers import PhoenixServer

    server = PhoenixServer().start()
    try:
        yield server
    finally:
        server.stop()


def test_the_cli_spans_join_our_trace_in_phoenix(phoenix: Any, make_options: OptionsFactory, api: MockMessagesAPI,
                                                 transport: str) -> None:  # fmt: skip
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    project = f"sdkurl-{transport}-{os.getpid()}"
    provider = TracerProvider(resource=Resource.create({"service.name": "test", "openinference.project.name": project}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{phoenix.url}/v1/traces")))
    _set_provider(provider)
    try:
        api.enqueue(tool_use("Bash", {"command": "echo hi"}), text("done"))
        exporter_env = {"OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.url, "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}"}
        options = make_options(allowed_tools=["Bash"], env=tracing.cli_telemetry_env(exporter_env))
        with trace.get_tracer("app").start_as_current_span("app"):
            list(query("go", options))
        tracing.flush(10)
        provider.force_flush()
    finally:
        _set_provider(None)
        provider.shutdown()
    deadline = time.monotonic() + 30
    wanted = {"app", "invoke_agent Claude Code", "execute_tool Bash", "claude_code.interaction", "claude_code.llm_request", "claude_code.tool"}
    got: list[dict[str, Any]] = []
    while time.monotonic() < deadline and not wanted <= {s["name"] for s in got}:
        time.sleep(0.5)
        got = phoenix.spans(project)
    names = {s["name"] for s in got}
    assert wanted <= names, names
    assert len({s["context"]["trace_id"] for s in got}) == 1  # ours and the CLI's: one trace
    ids = {s["context"]["span_id"]: s for s in got}
    orphans = [s["name"] for s in got if s.get("parent_id") and s["parent_id"] not in ids]
    assert orphans == []
    (ours,) = [s for s in got if s["name"] == "invoke_agent Claude Code"]
    (interaction,) = [s for s in got if s["name"] == "claude_code.interaction"]
    assert interaction["parent_id"] == ours["context"]["span_id"]  # the CLI's turn under ours
    (app,) = [s for s in got if s["name"] == "app"]
    assert ours["parent_id"] == app["context"]["span_id"] and app.get("parent_id") is None


# ---------------------------------------------------------------- against the instrumentor users know

OFFICIAL_TRACED = '''
import asyncio, json, sys
from pathlib import Path
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from openinference.instrumentation.claude_agent_sdk import ClaudeAgentSDKInstrumentor
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
ClaudeAgentSDKInstrumentor().instrument(tracer_provider=provider)
import claude_agent_sdk as sdk

async def main():
    options = sdk.ClaudeAgentOptions(cli_path=sys.argv[1], env=json.loads(sys.argv[2]), cwd=sys.argv[3], allowed_tools=["Bash"])
    async for m in sdk.query(prompt="run echo", options=options):
        pass
    async with sdk.ClaudeSDKClient(options) as client:
        await client.query("again")
        async for m in client.receive_response():
            pass

asyncio.run(main())
print(json.dumps([{"kind": s.attributes.get("openinference.span.kind"), "keys": sorted(s.attributes)} for s in exporter.get_finished_spans()]))
'''


def _shape(keys: Sequence[str]) -> set[str]:
    return {re.sub(r"\.\d+\.", ".N.", k) for k in keys}


def test_every_openinference_span_kind_and_key_is_ours_too(make_options: OptionsFactory, api: MockMessagesAPI,
                                                           spans: InMemorySpanExporter, home: Path) -> None:  # fmt: skip
    script = [tool_use("Bash", {"command": "echo hi"}), text("done"), tool_use("Bash", {"command": "echo 2"}), text("done2")]
    api.enqueue(*script)
    options = make_options(allowed_tools=["Bash"])
    cli = install_cli("2.1.330")
    done = subprocess.run([sys.executable, "-c", OFFICIAL_TRACED, str(cli), json.dumps(options.env), str(home / "work")],
                          capture_output=True, text=True, timeout=180)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    api.enqueue(*script)
    tracing.capture_content(True)  # the instrumentor records content by default; ours when asked
    list(query("run echo", options))
    with ClaudeSDKClient(options) as client:
        client.query("again")
        list(client.receive_response())
    ours = finished(spans)
    by_kind: dict[str, set[str]] = {}
    for span in ours:
        by_kind.setdefault(str(span.attributes.get("openinference.span.kind")), set()).update(_shape(list(span.attributes)))
    for span in theirs:
        missing = _shape(span["keys"]) - by_kind.get(span["kind"], set())
        assert missing == set(), f"{span['kind']} span keys the instrumentor sets and we do not: {sorted(missing)}"


def test_cli_telemetry_env_takes_the_programs_exporter_settings() -> None:
    env = tracing.cli_telemetry_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_EXPORTER_OTLP_HEADERS": "x=1",
                                     "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "OTEL_SERVICE_NAME": "svc"})  # fmt: skip
    assert env["CLAUDE_CODE_ENABLE_TELEMETRY"] == "1" and env["CLAUDE_CODE_ENHANCED_TELEMETRY_BETA"] == "1"
    assert env["OTEL_TRACES_EXPORTER"] == "otlp" and env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://collector:4318"
    assert env["OTEL_EXPORTER_OTLP_PROTOCOL"] == "http/json" and env["OTEL_EXPORTER_OTLP_HEADERS"] == "x=1"
    assert env["OTEL_SERVICE_NAME"] == "svc" and env["OTEL_METRICS_EXPORTER"] == "none"
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" not in tracing.cli_telemetry_env({})  # the CLI's own default then
