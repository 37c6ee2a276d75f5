"""Drop-in parity with the official ``claude-agent-sdk`` (pinned in the test extra), checked mechanically.

Every public name of the official package must exist here with the same shape:
dataclass fields (names, defaults, positional order), TypedDict keys (required
and optional), Literal values, union members, function and method parameters
(``async`` aside), exception hierarchy. The next official release's additions
show up here as a failing list. Intended differences are listed below, each
one in the migration table (docs/guide/porting.md) too.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import inspect
import typing
from typing import Any

import pytest

import claude_sdkurl as ours
import claude_sdkurl.types as ours_types

official = pytest.importorskip("claude_agent_sdk")  # the test extra pins it: never skipped in CI
import claude_agent_sdk.types as official_types  # noqa: E402

# Intended differences (the migration table, docs/guide/porting.md).
OUR_EXTRA_FIELDS = {
    "ClaudeAgentOptions": [
        "transport", "control_timeout", "callback_timeout", "on_elicitation", "spawn_claude_code_process",
        # the TypeScript SDK's options (docs/guide/typescript.md)
        "agent", "permission_prompts", "persist_session", "title", "tool_aliases", "tool_config",
        "mcp_servers_delivery", "plugin_delivery", "prompt_suggestions", "agent_progress_summaries",
        "plan_mode_instructions", "managed_settings", "project_config_root", "on_user_dialog",
        "supported_dialog_kinds", "per_task_stop_affordance", "allow_dangerously_skip_permissions", "debug",
        "debug_file",
    ],
    # the TypeScript result's latency fields
    "ResultMessage": ["ttft_ms", "ttft_stream_ms", "time_to_request_ms", "resume_reason"],
    "SDKSessionInfo": ["archived"],
}  # fmt: skip
OUR_EXTRA_LITERALS = {"HookEvent": {"SessionStart", "SessionEnd"}}
OUR_EXTRA_UNION_MEMBERS = {
    "Message": {"UnknownMessage", "PromptSuggestionMessage", "ToolProgressMessage", "ToolUseSummaryMessage", "AuthStatusMessage"},
    "ContentBlock": {"UnknownBlock"},
    "HookInput": {"SessionStartHookInput", "SessionEndHookInput"},
}
DIFFERENT_BY_DESIGN = {
    "Transport",  # a synchronous interface: start/wait_ready/send/end_input/close
    "__version__",  # our own release number
    "McpSdkServerConfig",  # checked below: same keys, `instance` is our SdkMcpServer
    "ToolAnnotations",  # not a pydantic model (no mcp dependency); behaviour tested below
    "SdkMcpTool",  # checked below: `annotations` also takes mcp.types.ToolAnnotations
}
# Names users import from claude_agent_sdk.types that are not in its __all__ (reference §1.1).
TYPES_ONLY_NAMES = """AssistantMessageError AsyncHookJSONOutput SyncHookJSONOutput HookEvent HookSpecificOutput
McpStdioServerConfig McpSSEServerConfig McpHttpServerConfig McpSdkServerConfigStatus McpClaudeAIProxyServerConfig
PermissionBehavior PermissionRuleValue PermissionUpdateDestination SystemPromptPreset SystemPromptCustom
SystemPromptFile ToolsPreset ThinkingDisplay SDKControlRequest SDKControlResponse ControlResponse
ControlErrorResponse SDKControlInterruptRequest SDKControlPermissionRequest SDKControlInitializeRequest
SDKControlSetPermissionModeRequest SDKHookCallbackRequest SDKControlMcpMessageRequest SDKControlRewindFilesRequest
SDKControlMcpReconnectRequest SDKControlMcpToggleRequest SDKControlStopTaskRequest""".split()

CHECKED = [n for n in official.__all__ if n not in DIFFERENT_BY_DESIGN]


def test_every_official_name_is_exported() -> None:
    missing = [n for n in official.__all__ if n not in ours.__all__]
    assert missing == []
    assert [n for n in ours.__all__ if not hasattr(ours, n)] == []


def test_names_only_in_the_types_module() -> None:
    assert [n for n in TYPES_ONLY_NAMES if hasattr(official_types, n) and not hasattr(ours_types, n)] == []
    assert [n for n in TYPES_ONLY_NAMES if not hasattr(official_types, n)] == []  # the list itself is current


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return ("factory", f.default_factory())
    return "<required>"


def _literal_values(tp: Any) -> set[Any] | None:
    if typing.get_origin(tp) is typing.Literal:
        return set(typing.get_args(tp))
    if typing.get_origin(tp) in (typing.Union,) and all(typing.get_origin(a) is typing.Literal for a in typing.get_args(tp)):
        return {v for a in typing.get_args(tp) for v in typing.get_args(a)}
    return None


def _union_members(tp: Any) -> set[str] | None:
    import types as builtin_types

    if typing.get_origin(tp) is typing.Union or isinstance(tp, builtin_types.UnionType):
        return {getattr(a, "__name__", repr(a)) for a in typing.get_args(tp)}
    return None


def _compatible(o_sig: inspect.Signature, s_sig: inspect.Signature, where: str) -> list[str]:
    """Every call the official signature accepts, ours accepts the same way."""
    problems = []
    o_params = [p for p in o_sig.parameters.values() if p.name != "self"]
    s_params = {p.name: p for p in s_sig.parameters.values() if p.name != "self"}
    s_order = [p.name for p in s_sig.parameters.values() if p.name != "self"]
    for i, p in enumerate(o_params):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            if not any(q.kind == p.kind for q in s_params.values()):
                problems.append(f"{where}: no {p}")
            continue
        q = s_params.get(p.name)
        if q is None:
            problems.append(f"{where}: parameter {p.name!r} missing")
            continue
        if p.default is not p.empty and q.default != p.default:
            problems.append(f"{where}: {p.name} default {q.default!r} != {p.default!r}")
        if p.default is p.empty and q.default is not q.empty:
            pass  # optional here where required there: every official call still works
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            if q.kind not in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD) or s_order.index(p.name) != i:
                problems.append(f"{where}: {p.name} not at position {i}")
    official_names = {p.name for p in o_params}
    for name, q in s_params.items():
        if name not in official_names and q.default is q.empty and q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD):
            problems.append(f"{where}: extra required parameter {name!r}")
    return problems


def _shape_problems(name: str, module: Any = official, our_module: Any = ours) -> list[str]:
    o, s = getattr(module, name), getattr(our_module, name)
    problems: list[str] = []
    if inspect.isclass(o) and dataclasses.is_dataclass(o):
        if not (inspect.isclass(s) and dataclasses.is_dataclass(s)):
            return [f"{name}: not a dataclass"]
        o_fields = [(f.name, _default(f)) for f in dataclasses.fields(o)]
        s_all = dataclasses.fields(s)
        s_fields = [(f.name, _default(f)) for f in s_all[: len(o_fields)]]
        if o_fields != s_fields:
            problems.append(f"{name}: fields {s_fields} != official {o_fields}")
        extra = [f for f in s_all[len(o_fields) :]]
        if [f.name for f in extra] != OUR_EXTRA_FIELDS.get(name, []):
            problems.append(f"{name}: undocumented extra fields {[f.name for f in extra]}")
        if any(not f.kw_only for f in extra):
            problems.append(f"{name}: extra fields must be keyword-only")
        if name not in ("ClaudeAgentOptions",) and [c.__name__ for c in o.__mro__[1:] if c.__module__.startswith("claude_agent_sdk")] != [
            c.__name__ for c in s.__mro__[1:] if c.__module__.startswith("claude_sdkurl") and not c.__name__.startswith("_")
        ]:
            problems.append(f"{name}: base classes differ")
    elif typing.is_typeddict(o):
        if not typing.is_typeddict(s):
            return [f"{name}: not a TypedDict"]
        for attr in ("__required_keys__", "__optional_keys__"):
            if getattr(o, attr) != getattr(s, attr):
                problems.append(f"{name}.{attr}: {sorted(getattr(s, attr))} != official {sorted(getattr(o, attr))}")
    elif inspect.isclass(o) and issubclass(o, BaseException):
        o_bases = [c.__name__ for c in o.__mro__ if c.__module__.startswith("claude_agent_sdk")]
        s_bases = [c.__name__ for c in s.__mro__ if c.__module__.startswith("claude_sdkurl")]
        if [b for b in o_bases if b not in s_bases]:
            problems.append(f"{name}: bases {s_bases} lack some of {o_bases}")
        problems += _compatible(inspect.signature(o.__init__), inspect.signature(s.__init__), name)
    elif inspect.isclass(o):
        if not inspect.isclass(s):
            return [f"{name}: not a class"]
        if issubclass(o, Warning) and not issubclass(s, Warning):
            problems.append(f"{name}: not a Warning")
        for meth, fn in inspect.getmembers(o, inspect.isfunction):
            if meth.startswith("_") and meth not in ("__init__",):
                continue
            s_fn = getattr(s, meth, None)
            if s_fn is None:
                problems.append(f"{name}.{meth} missing")
                continue
            problems += _compatible(inspect.signature(fn), inspect.signature(s_fn), f"{name}.{meth}")
    elif callable(o) and (inspect.isfunction(o) or inspect.iscoroutinefunction(o) or inspect.isasyncgenfunction(o)):
        problems += _compatible(inspect.signature(o), inspect.signature(s), name)
    elif (values := _literal_values(o)) is not None:
        s_values = _literal_values(s)
        if s_values is None or values - s_values or s_values - values - OUR_EXTRA_LITERALS.get(name, set()):
            problems.append(f"{name}: literal values {s_values} != official {values}")
    elif (members := _union_members(o)) is not None:
        s_members = _union_members(s) or set()
        if members - s_members or s_members - members - OUR_EXTRA_UNION_MEMBERS.get(name, set()):
            problems.append(f"{name}: union {sorted(s_members)} != official {sorted(members)}")
    elif typing.get_origin(o) is collections.abc.Callable:  # callback types: ours may also return plainly
        if typing.get_origin(s) is not collections.abc.Callable or len(typing.get_args(o)[0]) != len(typing.get_args(s)[0]):
            problems.append(f"{name}: callback arguments differ")
    elif typing.get_origin(o) is not None:  # e.g. SandboxIgnoreViolations = dict[str, list[str]]
        if o != s:
            problems.append(f"{name}: {s} != official {o}")
    else:  # constants
        if o != s:
            problems.append(f"{name}: {s!r} != official {o!r}")
    return problems


def test_every_official_name_has_the_official_shape() -> None:
    problems = [p for n in CHECKED for p in _shape_problems(n)]
    assert problems == []


def test_types_module_names_have_the_official_shape() -> None:
    problems = [p for n in TYPES_ONLY_NAMES for p in _shape_problems(n, official_types, ours_types)]
    assert problems == []


def test_sdk_server_config_and_tool_keep_the_official_keys() -> None:
    assert ours.McpSdkServerConfig.__required_keys__ == official.McpSdkServerConfig.__required_keys__
    assert [f.name for f in dataclasses.fields(ours.SdkMcpTool)] == [f.name for f in dataclasses.fields(official.SdkMcpTool)]


def test_dataclass_helpers_answer_as_for_the_official_types() -> None:
    options = ours.ClaudeAgentOptions(model="m", allowed_tools=["Read"])
    changed = dataclasses.replace(options, model="other")
    assert changed.model == "other" and changed.allowed_tools == ["Read"] and options.model == "m"
    assert dataclasses.is_dataclass(options)
    message = ours.AssistantMessage(content=[ours.TextBlock("hi")], model="m")
    message.raw = {"type": "assistant"}
    assert dataclasses.asdict(message)["content"] == [{"text": "hi"}]
    assert "raw" not in dataclasses.asdict(message)  # ours, kept outside the fields
    assert message == ours.AssistantMessage(content=[ours.TextBlock("hi")], model="m")
    o_message = official.AssistantMessage(content=[official.TextBlock("hi")], model="m")
    assert dataclasses.asdict(message) == dataclasses.asdict(o_message)
    assert [f.name for f in dataclasses.fields(message)] == [f.name for f in dataclasses.fields(o_message)]


def test_not_required_keys_stay_optional_at_runtime() -> None:
    assert "append" in ours.SystemPromptPreset.__optional_keys__
    assert "permission_mode" in ours.PreToolUseHookInput.__optional_keys__
    assert "agent_id" in ours.PreToolUseHookInput.__optional_keys__
    assert ours.SyncHookJSONOutput.__required_keys__ == frozenset()


def test_tool_annotations_accept_both_spellings() -> None:
    import mcp.types

    for kwargs in ({"readOnlyHint": True, "maxResultSizeChars": 500}, {"read_only_hint": True, "max_result_size_chars": 500}):
        a = ours.ToolAnnotations(title="T", **kwargs)
        o = official.ToolAnnotations(title="T", **kwargs)
        assert a.readOnlyHint is True and a.read_only_hint is True and a.maxResultSizeChars == 500
        assert a.model_dump(by_alias=True, exclude_none=True) == o.model_dump(by_alias=True, exclude_none=True)
    plain = mcp.types.ToolAnnotations(readOnlyHint=True, destructiveHint=False)
    server = ours.create_sdk_mcp_server(
        "s", tools=[ours.tool("a", "A", {}, annotations=plain)(lambda args: {"content": []})]
    )["instance"]
    listing = server.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert listing is not None
    assert listing["result"]["tools"][0]["annotations"] == {"readOnlyHint": True, "destructiveHint": False}


def test_our_extra_fields_stay_out_of_the_repr_a_program_prints() -> None:
    """A program that prints a result or a listing row prints what it printed on the official
    SDK (a ported example compares its output line by line)."""
    result = dict(subtype="success", duration_ms=5, duration_api_ms=3, is_error=False, num_turns=1, session_id="s")
    assert repr(ours.ResultMessage(**result, ttft_ms=120)) == repr(official.ResultMessage(**result))
    row = dict(session_id="s", summary="x", last_modified=1)
    assert repr(ours.SDKSessionInfo(**row, archived=True)) == repr(official.SDKSessionInfo(**row))
