"""Spans of a run, with no patching: what ``query()`` and ``ClaudeClient`` do, as OpenTelemetry
traces (the ``[otel]`` extra: ``opentelemetry-api``; the program brings the SDK and exporter).

On when the program has set a tracer provider (see :mod:`claude_sdkurl._engine.trace`); otherwise no
span is made and nothing of OpenTelemetry is imported. The tree of one run::

    invoke_agent Claude Code              a query(), or a client turn (AGENT)
    |-- execute_tool Bash                 a tool use, tool_use to tool_result (TOOL)
    |   |-- can_use_tool Bash             the permission callback, with its decision (GUARDRAIL)
    |   `-- hook PreToolUse               a hook callback (CHAIN)
    |-- execute_tool Agent                a subagent's tool use ...
    |   `-- execute_tool Read             ... and the tools it used (parent_tool_use_id)
    `-- execute_tool mcp__calc__add       an in-process SDK MCP tool
        `-- mcp tools/call add            its Python body (TOOL)

A client's turns sit under one ``claude_sdkurl.session`` span (CHAIN), from connect to
disconnect. The CLI is launched with that span (a query's own span) as its W3C parent, so
with :func:`cli_telemetry_env` the CLI's own spans (interaction, model requests, tool
execution) join the same trace under it. Store calls and batch items have spans of their own
(``claude_sdkurl.store.<method>``, ``claude_sdkurl.batch.item``).

Attribute names follow the OpenTelemetry GenAI conventions (``gen_ai.*``) and OpenInference
(``openinference.span.kind``, ``llm.*``, ``tool.*``, ``session.id``, ``input.*``/``output.*``),
so Phoenix, Langfuse and other backends show an agent trace without configuration. Prompt,
answer and tool input/output text is recorded only when content capture is on
(``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` or :func:`capture_content`).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ._engine import trace as _trace
from ._engine.trace import capture_content, flush
from .types import AssistantMessage, ResultMessage, SystemMessage, TextBlock, ToolResultBlock, ToolUseBlock, UserMessage

__all__ = ["RunTrace", "capture_content", "cli_telemetry_env", "flush"]

AGENT_NAME = "Claude Code"
_PROVIDER = {"gen_ai.provider.name": "anthropic", "gen_ai.system": "anthropic", "llm.system": "anthropic", "llm.provider": "anthropic"}


def _json(value: Any) -> str:
    try:
        return json.dumps(value, default=str, ensure_ascii=False)
    except Exception:
        return str(value)


def _shown(kind: str, value: Any) -> dict[str, Any]:
    """``input.*``/``output.*`` attributes of a content value: text as it is, anything else as JSON."""
    text = isinstance(value, str)
    return {f"{kind}.value": value if text else _json(value), f"{kind}.mime_type": "text/plain" if text else "application/json"}


def _usage(usage: dict[str, Any] | None) -> dict[str, Any]:
    if not usage:
        return {}
    prompt = int(usage.get("input_tokens") or 0)
    read = int(usage.get("cache_read_input_tokens") or 0)
    write = int(usage.get("cache_creation_input_tokens") or 0)
    completion = int(usage.get("output_tokens") or 0)
    return {
        "gen_ai.usage.input_tokens": prompt + read + write,
        "gen_ai.usage.output_tokens": completion,
        "gen_ai.usage.cache_read.input_tokens": read,
        "gen_ai.usage.cache_creation.input_tokens": write,
        "llm.token_count.prompt": prompt + read + write,
        "llm.token_count.completion": completion,
        "llm.token_count.total": prompt + read + write + completion,
        "llm.token_count.prompt_details.cache_read": read,
        "llm.token_count.prompt_details.cache_write": write,
    }


class RunTrace:
    """The spans of one ``query()`` or one client (made by the engine; inert when tracing is off).

    Made in the caller's thread: the caller's current span, if any, is the parent of ours.
    ``observe`` runs on the reader thread, ``callback`` on callback workers; a lock keeps
    the open spans consistent between them.
    """

    def __init__(self, entry: str, model: str | None = None) -> None:
        self.tracer = _trace.tracer()
        self.on = self.tracer is not None
        self._entry = entry  # "query" or "client"
        self._model = model
        self._content = _trace.content_on() if self.on else False
        self._lock = threading.Lock()
        self._root: Any = None  # the client's session span
        self._turn: Any = None
        self._tools: dict[str, Any] = {}  # tool_use_id -> its open span
        self._outputs = 0  # llm.output_messages index in this turn
        self._session_id: str | None = None
        self._failed: str | None = None  # a query's last result was an error
        self._meters = _trace.instruments()
        self._cost_before = 0.0  # the CLI's running total at the previous result
        self._model_totals: dict[str, dict[str, float]] = {}  # model_usage of the previous result
        self._carried = 0.0  # what a resumed session had cost before this run (in the CLI's totals)
        if self.on and entry == "client":
            self._root = _trace.start(self.tracer, "claude_sdkurl.session", {"openinference.span.kind": "CHAIN", **_PROVIDER})

    # ------------------------------------------------------------------ caller's thread

    def turn_started(self, prompt: Any) -> None:
        """A query or a client turn begins (a client turn still open is ended first)."""
        if not self.on:
            return
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": AGENT_NAME,
            "gen_ai.request.model": self._model,
            "openinference.span.kind": "AGENT",
            "claude_sdkurl.entry": self._entry,
            "session.id": self._session_id,
            "gen_ai.conversation.id": self._session_id,
            **_PROVIDER,
        }
        if self._content:
            attributes.update(_shown("input", prompt))
        with self._lock:
            self._end_turn(None)
            self._turn = _trace.start(self.tracer, f"invoke_agent {AGENT_NAME}", attributes, self._root)
            self._outputs = 0

    @property
    def parent_span(self) -> Any:
        """The span that other work of this run (store calls from the mirror) goes under."""
        return self._root or self._turn

    @contextmanager
    def launching(self) -> Iterator[None]:
        """Around the CLI's launch: our span is current, so the CLI gets it as its W3C parent."""
        with _trace.attached(self._root or self._turn):
            yield

    # ------------------------------------------------------------------ reader thread

    def carry(self, carried: Any) -> None:
        """What the session had cost before this run (a :class:`~claude_sdkurl._engine.carried.Carried`,
        read at its first ``init``): the CLI's running totals start from it, so the run's cost
        and metrics count from there."""
        self._carried = self._cost_before = carried.cost_usd
        self._model_totals = {model: dict(row) for model, row in carried.model_usage.items()}

    def observe(self, message: Any) -> None:
        if self._meters is not None and isinstance(message, ResultMessage):
            self._measure(message)
        if not self.on:
            return
        try:
            with self._lock:
                self._observe(message)
        except Exception as error:  # never let tracing break the reader
            _trace._warn_once("span bookkeeping", error)

    def _observe(self, message: Any) -> None:
        if isinstance(message, SystemMessage) and message.subtype == "init":
            self._session_id = message.data.get("session_id") or self._session_id
            _trace.set_attributes(self._turn, {"session.id": self._session_id, "gen_ai.conversation.id": self._session_id,
                                               "llm.model_name": message.data.get("model"), "gen_ai.response.model": message.data.get("model")})  # fmt: skip
        elif isinstance(message, AssistantMessage):
            self._assistant(message)
        elif isinstance(message, UserMessage) and isinstance(message.content, list):
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    self._tool_result(block)
        elif isinstance(message, ResultMessage):
            self._result(message)

    def _assistant(self, message: AssistantMessage) -> None:
        top = message.parent_tool_use_id is None
        parent = self._turn if top else self._tools.get(message.parent_tool_use_id or "", self._turn)
        attributes: dict[str, Any] = {"llm.model_name": message.model, "gen_ai.response.model": message.model} if top else {}
        if message.stop_reason:
            attributes["llm.finish_reason"] = message.stop_reason
            attributes["gen_ai.response.finish_reasons"] = (message.stop_reason,)
        prefix = f"llm.output_messages.{self._outputs}.message"
        texts = 0
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                self._tool_started(block, parent, message.parent_tool_use_id)
                if top and self._content:
                    calls = sum(1 for k in attributes if k.startswith(f"{prefix}.tool_calls.") and k.endswith(".tool_call.id"))
                    attributes[f"{prefix}.tool_calls.{calls}.tool_call.id"] = block.id
                    attributes[f"{prefix}.tool_calls.{calls}.tool_call.function.name"] = block.name
                    attributes[f"{prefix}.tool_calls.{calls}.tool_call.function.arguments"] = _json(block.input)
            elif isinstance(block, TextBlock) and top and self._content:
                attributes[f"{prefix}.content.{texts}"] = block.text
                texts += 1
        if top and self._content and any(k.startswith(prefix) for k in attributes):
            attributes[f"{prefix}.role"] = "assistant"
            self._outputs += 1
        _trace.set_attributes(self._turn, attributes)

    def _tool_started(self, block: ToolUseBlock, parent: Any, subagent_of: str | None) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": block.name,
            "gen_ai.tool.call.id": block.id,
            "gen_ai.tool.type": "function",
            "openinference.span.kind": "TOOL",
            "tool.id": block.id,
            "tool.name": block.name,
            "claude_sdkurl.parent_tool_use_id": subagent_of,
        }
        if self._content:
            attributes.update(_shown("input", block.input))
            attributes["tool.parameters"] = attributes["gen_ai.tool.call.arguments"] = attributes["input.value"]
        self._tools[block.id] = _trace.start(self.tracer, f"execute_tool {block.name}", attributes, parent)

    def _tool_result(self, block: ToolResultBlock) -> None:
        span = self._tools.pop(block.tool_use_id, None)
        if span is None:
            return
        attributes: dict[str, Any] = {"claude_sdkurl.tool.is_error": bool(block.is_error)}
        if self._content and block.content is not None:
            attributes.update(_shown("output", block.content))
            attributes["gen_ai.tool.call.result"] = attributes["output.value"]
        _trace.end(span, "tool error" if block.is_error else None, attributes)

    def _result(self, message: ResultMessage) -> None:
        self._session_id = message.session_id or self._session_id
        # The CLI's total_cost_usd is a running total of its process: a turn's own cost is the
        # difference from the previous result (a query's span covers the whole run).
        # A resumed session's totals start from what it had cost before (see carry()).
        total = message.total_cost_usd
        cost: float | None = None
        if total is not None:
            cost = total - (self._cost_before if self._entry == "client" else self._carried)
            self._cost_before = total
        attributes: dict[str, Any] = {
            "session.id": self._session_id,
            "gen_ai.conversation.id": self._session_id,
            "llm.cost.total": cost,
            "claude_sdkurl.cost_usd": cost,
            "claude_sdkurl.session_cost_usd": total,
            "claude_sdkurl.num_turns": message.num_turns,
            "claude_sdkurl.duration_api_ms": message.duration_api_ms,
            "claude_sdkurl.result.subtype": message.subtype,
            "claude_sdkurl.terminal_reason": message.terminal_reason,
            **_usage(message.usage),
        }
        if message.stop_reason:
            attributes["llm.finish_reason"] = message.stop_reason
        if self._content and message.result is not None:
            attributes.update(_shown("output", message.result))
        if self._content and message.errors:
            attributes.update(_shown("output", message.errors))
        _trace.set_attributes(self._turn, attributes)
        error = f"Result error: {message.subtype}" if message.is_error else None
        if self._entry == "client":
            self._end_turn(error)
        else:  # a query()'s span is the whole query (its prompts, and what they wake): ended by close()
            self._failed = error

    def _measure(self, message: ResultMessage) -> None:
        """Metrics of one turn: each model's cost and tokens since the previous result (the
        CLI's figures are running totals of its process)."""
        try:
            cost, tokens = self._meters  # type: ignore[misc]
            for model, usage in (message.model_usage or {}).items():
                before = self._model_totals.get(model, {})
                now = {k: float(v) for k, v in usage.items() if isinstance(v, (int, float))}
                self._model_totals[model] = now
                common = {"gen_ai.response.model": model, "gen_ai.provider.name": "anthropic", "gen_ai.operation.name": "invoke_agent"}
                spent = now.get("costUSD", 0.0) - before.get("costUSD", 0.0)
                if spent > 0:
                    cost.add(spent, common)
                for kind, keys in (("input", ("inputTokens", "cacheReadInputTokens", "cacheCreationInputTokens")), ("output", ("outputTokens",))):
                    count = sum(now.get(k, 0.0) - before.get(k, 0.0) for k in keys)
                    if count > 0:
                        tokens.record(count, {**common, "gen_ai.token.type": kind})
        except Exception as error:
            _trace._warn_once("metrics", error)

    def _end_turn(self, error: str | BaseException | None) -> None:
        for span in self._tools.values():  # tools without a result (interrupted): end with the turn
            _trace.end(span, "no tool result before the turn ended")
        self._tools.clear()
        if self._turn is not None:
            _trace.end(self._turn, error)
            self._turn = None

    # ------------------------------------------------------------------ callback workers

    @contextmanager
    def callback(self, subtype: str, request: dict[str, Any]) -> Iterator[Any]:
        """A span around one control callback (``can_use_tool``, ``hook_callback``,
        ``mcp_message``), current while the user's code runs; yields a function that records
        the answer on it (``None`` for other subtypes, or with tracing off)."""
        name, attributes, parent_id = self._callback_span(subtype, request)
        if name is None:
            yield None
            return
        with self._lock:
            parent = self._tools.get(parent_id or "") or self._match_mcp_tool(request) or self._turn or self._root
        with _trace.span(self.tracer, name, attributes, parent) as span:
            yield lambda response: _trace.set_attributes(span, self._answer_attributes(subtype, response))

    def _callback_span(self, subtype: str, request: dict[str, Any]) -> tuple[str | None, dict[str, Any], str | None]:
        """The span's name, attributes and the tool use it belongs to (``None`` name: no span)."""
        if not self.on:
            return None, {}, None
        if subtype == "can_use_tool":
            tool = request.get("tool_name")
            name, shown, belongs = f"can_use_tool {tool}", request.get("input"), request.get("tool_use_id")
            attributes = {"openinference.span.kind": "GUARDRAIL", "gen_ai.tool.name": tool, "tool.name": tool, "gen_ai.tool.call.id": belongs}
        elif subtype == "hook_callback":
            shown = request.get("input") or {}
            event = shown.get("hook_event_name", "hook")
            name, belongs = f"hook {event}", request.get("tool_use_id") or shown.get("tool_use_id")
            attributes = {"openinference.span.kind": "CHAIN", "claude_sdkurl.hook.event": event,
                          "gen_ai.tool.name": shown.get("tool_name"), "claude_sdkurl.hook.callback_id": request.get("callback_id")}  # fmt: skip
        elif subtype == "mcp_message" and (request.get("message") or {}).get("method") == "tools/call":
            params = request["message"].get("params") or {}  # (initialize, tools/list...: no span)
            name, shown, belongs = f"mcp tools/call {params.get('name')}", params.get("arguments"), None
            attributes = {"openinference.span.kind": "TOOL", "gen_ai.operation.name": "execute_tool",
                          "gen_ai.tool.name": params.get("name"), "tool.name": params.get("name"),
                          "claude_sdkurl.mcp.server": request.get("server_name")}  # fmt: skip
        else:
            return None, {}, None
        if self._content:
            attributes.update(_shown("input", shown))
        return name, attributes, belongs

    def _match_mcp_tool(self, request: dict[str, Any]) -> Any:
        """The open tool span of an SDK MCP call (its tool use is named ``mcp__server__tool``)."""
        message = request.get("message") or {}
        name = (message.get("params") or {}).get("name")
        if not name:
            return None
        wanted = f"mcp__{request.get('server_name')}__{name}"
        for span in reversed(list(self._tools.values())):
            if getattr(span, "name", None) == f"execute_tool {wanted}":
                return span
        return None

    def _answer_attributes(self, subtype: str, response: Any) -> dict[str, Any]:
        if not isinstance(response, dict):
            return {}
        if subtype == "can_use_tool":
            return {"claude_sdkurl.permission.decision": response.get("behavior"),
                    "claude_sdkurl.permission.message": response.get("message") if self._content else None}  # fmt: skip
        if subtype == "hook_callback":
            specific = response.get("hookSpecificOutput") or {}
            return {"claude_sdkurl.hook.decision": specific.get("permissionDecision") or response.get("decision"),
                    "claude_sdkurl.hook.continue": response.get("continue")}  # fmt: skip
        if subtype == "mcp_message":
            result = ((response.get("mcp_response") or {}).get("result")) or {}
            attributes: dict[str, Any] = {"claude_sdkurl.tool.is_error": bool(result.get("isError"))}
            if self._content:
                attributes.update(_shown("output", result.get("content")))
            return attributes
        return {}

    # ------------------------------------------------------------------ the end

    def close(self, error: BaseException | None = None) -> None:
        """The run is over: end what is open (a turn cut short ends with ``error``)."""
        if not self.on:
            return
        with self._lock:
            cut = "the run ended before the turn's result" if self._entry == "client" else self._failed
            self._end_turn(error if error is not None else cut)
            if self._root is not None:
                _trace.set_attributes(self._root, {"session.id": self._session_id, "gen_ai.conversation.id": self._session_id})
                _trace.end(self._root, error)
                self._root = None


def cli_telemetry_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment that turns the CLI's own OpenTelemetry traces on and sends them where
    this program's OTLP exporter sends its own (``OTEL_EXPORTER_OTLP_*`` of ``environ``, by
    default ``os.environ``). Put it in ``ClaudeAgentOptions(env=...)``; with our span as the
    CLI's W3C parent, its spans (``claude_code.interaction``, ``llm_request``, ``tool``...)
    land in the same trace. Variables already in ``environ`` are not repeated."""
    source = os.environ if environ is None else environ
    env = {
        "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
        "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA": "1",
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_METRICS_EXPORTER": source.get("OTEL_METRICS_EXPORTER", "none"),
        "OTEL_LOGS_EXPORTER": source.get("OTEL_LOGS_EXPORTER", "none"),
        "OTEL_EXPORTER_OTLP_PROTOCOL": source.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or source.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf",
        "OTEL_TRACES_EXPORT_INTERVAL": source.get("OTEL_TRACES_EXPORT_INTERVAL", "1000"),
    }
    endpoint = source.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or source.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if endpoint:
        key = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" if source.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") else "OTEL_EXPORTER_OTLP_ENDPOINT"
        env[key] = endpoint
    for header in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"):
        if header in source:
            env[header] = source[header]
    return env
