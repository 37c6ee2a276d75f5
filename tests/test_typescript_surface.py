"""The TypeScript SDK's whole surface, checked by machine against the pinned ``sdk.d.ts``.

Fails on a ``Query`` method, ``Options`` field or ``SDKMessage`` kind that is neither here
(:mod:`tests.typescript_surface` names where) nor left out with a reason; on an entry that
names something we lack; on a constant table that differs from TypeScript's; and on a parity
table in ``docs/guide/typescript.md`` that does not match the counts.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

import claude_sdkurl
from claude_sdkurl import ClaudeAgentOptions, ClaudeClient

from .typescript_sdk import constant, functions, surface, typescript_sdk
from .typescript_surface import FUNCTIONS, MESSAGES, METHODS, OPTIONS, REALCLI, LeftOut

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def dts() -> str:
    return (typescript_sdk() / "sdk.d.ts").read_text()


def _test_exists(ref: str) -> bool:
    path, _, name = ref.rpartition("::") if "::" in ref else (REALCLI, "", ref)
    source = ROOT / path
    return source.is_file() and re.search(rf"^def {re.escape(name)}\(", source.read_text(), re.M) is not None


def test_every_typescript_method_is_a_client_method(dts: str) -> None:
    methods, _, _ = surface(dts)
    assert len(methods) >= 30
    assert sorted(set(methods) - set(METHODS)) == [], "TypeScript Query methods with no line in METHODS"
    for ts, (ours, test) in METHODS.items():
        assert callable(getattr(ClaudeClient, ours, None)), f"{ts}: ClaudeClient.{ours} does not exist"
        assert test is None or _test_exists(test), f"{ts}: no test {test}"


def test_every_typescript_option_is_a_field_or_left_out_with_a_reason(dts: str) -> None:
    _, options, _ = surface(dts)
    assert len(options) >= 70
    assert sorted(set(options) - set(OPTIONS)) == [], "TypeScript options with no line in OPTIONS"
    fields = {f.name for f in dataclasses.fields(ClaudeAgentOptions)}
    for ts, entry in OPTIONS.items():
        if isinstance(entry, LeftOut):
            assert len(entry.reason) > 20, ts
            continue
        ours, test = entry
        assert ours in fields, f"{ts}: ClaudeAgentOptions.{ours} does not exist"
        assert test is None or _test_exists(test), f"{ts}: no test {test}"


def test_every_typescript_function_is_here_or_left_out_with_a_reason(dts: str) -> None:
    names = functions(dts)
    assert len(names) >= 20
    assert sorted(set(names) - set(FUNCTIONS)) == [], "TypeScript functions with no line in FUNCTIONS"
    for ts, entry in FUNCTIONS.items():
        if isinstance(entry, LeftOut):
            assert len(entry.reason) > 20, ts
            continue
        ours, test = entry
        assert ours in claude_sdkurl.__all__, f"{ts}: claude_sdkurl.{ours} is not public"
        assert test is None or _test_exists(test), f"{ts}: no test {test}"


def test_every_typescript_message_kind_is_delivered(dts: str) -> None:
    _, _, kinds = surface(dts)
    assert len(kinds) >= 40
    assert sorted({name for name, _, _ in kinds} - set(MESSAGES)) == []
    for name, kind, subtype in kinds:
        ours = MESSAGES[name]
        assert not isinstance(ours, LeftOut)
        cls = getattr(claude_sdkurl, ours)
        wire = {"type": kind, "uuid": "u", "session_id": "s"}
        if subtype is not None:
            wire["subtype"] = subtype
        parsed = claude_sdkurl.types.__dict__  # (the parse itself is checked below, with fields)
        assert isinstance(cls, type) and parsed[ours] is cls
        if kind == "system" or ours in ("ToolProgressMessage", "ToolUseSummaryMessage", "AuthStatusMessage",
                                        "PromptSuggestionMessage"):  # fmt: skip
            assert issubclass(cls, claude_sdkurl.SystemMessage) == (kind == "system"), name


def test_the_typed_kinds_parse_to_their_classes() -> None:
    from claude_sdkurl._engine.parse import parse_message

    base = {"uuid": "u", "session_id": "s"}
    cases = [
        ({"type": "system", "subtype": "api_retry", "attempt": 2, "max_retries": 10, "retry_delay_ms": 500,
          "error_status": 529, "error": "overloaded"}, claude_sdkurl.ApiRetryMessage, {"attempt": 2, "error_status": 529}),
        ({"type": "system", "subtype": "permission_denied", "tool_name": "Bash", "tool_use_id": "t1",
          "message": "no approval surface"}, claude_sdkurl.PermissionDeniedMessage, {"tool_name": "Bash"}),
        ({"type": "system", "subtype": "session_writes_lost", "error_code": "ENOSPC", "lost": ["transcript"]},
         claude_sdkurl.SessionWritesLostMessage, {"error_code": "ENOSPC", "lost": ["transcript"]}),
        ({"type": "prompt_suggestion", "suggestion": "run the tests"}, claude_sdkurl.PromptSuggestionMessage,
         {"suggestion": "run the tests"}),
        ({"type": "tool_progress", "tool_use_id": "t", "tool_name": "Bash", "elapsed_time_seconds": 3.5,
          "parent_tool_use_id": None}, claude_sdkurl.ToolProgressMessage, {"elapsed_time_seconds": 3.5}),
        ({"type": "tool_use_summary", "summary": "read 3 files", "preceding_tool_use_ids": ["a", "b"]},
         claude_sdkurl.ToolUseSummaryMessage, {"preceding_tool_use_ids": ["a", "b"]}),
        ({"type": "auth_status", "isAuthenticating": True, "output": ["open the link"]},
         claude_sdkurl.AuthStatusMessage, {"is_authenticating": True}),
    ]  # fmt: skip
    for wire, cls, expected in cases:
        message = parse_message({**wire, **base})
        assert type(message) is cls, wire
        for key, value in expected.items():
            assert getattr(message, key) == value, (wire, key)
    # a typed system message is still a SystemMessage with its subtype and whole dict (drop-in)
    retry = parse_message({"type": "system", "subtype": "api_retry", **base})
    assert isinstance(retry, claude_sdkurl.SystemMessage) and retry.subtype == "api_retry" and retry.data["uuid"] == "u"
    assert retry.attempt == 0 and retry.error_status is None  # fields the CLI left out
    result = parse_message({"type": "result", "subtype": "success", "duration_ms": 9, "duration_api_ms": 5,
                            "is_error": False, "num_turns": 1, "ttft_ms": 120, **base})  # fmt: skip
    assert result.ttft_ms == 120 and result.time_to_request_ms is None


@pytest.mark.parametrize(
    "ts, ours, nested",
    [("SDKToolProgressMessage", "ToolProgressMessage", {"subagent_retry": "SubagentRetry"}),
     ("SDKAPIRetryMessage", "ApiRetryMessage", {"no_response": "ApiRetryNoResponse"})],
)  # fmt: skip
def test_every_field_of_these_typescript_messages_is_typed_here(dts: str, ts: str, ours: str, nested: dict[str, str]) -> None:
    from .typescript_sdk import _block

    body = _block(dts, f"export declare type {ts} = ")
    top = re.findall(r"^    (\w+)\??:", body, re.M)
    fields = {f.name for f in dataclasses.fields(getattr(claude_sdkurl, ours))}
    assert sorted(set(top) - {"type", "subtype"} - fields) == [], f"{ts} fields {ours} lacks"
    for name, typed in nested.items():
        inner = re.findall(r"^        (\w+)\??:", _block(body, f"{name}?: {{"), re.M)
        assert sorted(inner) == sorted(getattr(claude_sdkurl, typed).__annotations__), name


def test_the_fields_typescript_0_3_333_added_are_typed_and_optional() -> None:
    """``SDKToolProgressMessage.description`` (new in 0.3.333), ``heartbeat``, ``subagent_type``,
    ``subagent_retry`` and ``SDKAPIRetryMessage.no_response``: on their classes when the CLI sends
    them, ``None`` when it does not (every CLI before them) or sends a shape TypeScript does not
    have; the frame keeps whatever came."""
    from claude_sdkurl._engine.parse import parse_message

    base = {"uuid": "u", "session_id": "s"}
    progress = {"type": "tool_progress", "tool_use_id": "t", "tool_name": "Agent", "elapsed_time_seconds": 12.0,
                "parent_tool_use_id": None, **base}  # fmt: skip
    retry = {"agent_id": "a1", "attempt": 2, "max_retries": 10, "retry_delay_ms": 800, "error_status": None,
             "error_category": "connection"}  # fmt: skip
    full = parse_message({**progress, "heartbeat": True, "subagent_type": "code-reviewer", "subagent_retry": retry,
                          "description": "Reviewing the diff"})  # fmt: skip
    assert isinstance(full, claude_sdkurl.ToolProgressMessage)
    assert (full.heartbeat, full.subagent_type, full.subagent_retry, full.description) == (True, "code-reviewer", retry, "Reviewing the diff")
    old = parse_message(progress)
    assert (old.heartbeat, old.subagent_type, old.subagent_retry, old.description) == (None, None, None, None)  # type: ignore[union-attr]
    odd = parse_message({**progress, "heartbeat": "yes", "subagent_type": 7, "subagent_retry": [1], "description": {"t": 1}})
    assert (odd.heartbeat, odd.subagent_type, odd.subagent_retry, odd.description) == (None, None, None, None)  # type: ignore[union-attr]
    assert claude_sdkurl.ToolProgressMessage("t", "Bash", 1.0, "u", "s").description is None  # made by hand: as before

    api = {"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 1, "retry_delay_ms": 0,
           "error_status": None, "error": "unknown", **base}  # fmt: skip
    stalled = parse_message({**api, "no_response": {"waited_ms": 30000, "retry_wait_ms": 60000}})
    assert isinstance(stalled, claude_sdkurl.ApiRetryMessage) and stalled.no_response == {"waited_ms": 30000, "retry_wait_ms": 60000}
    assert parse_message(api).no_response is None  # type: ignore[union-attr]
    assert stalled.data["no_response"]["waited_ms"] == 30000  # (as before, in the whole dict too)
    assert {"heartbeat", "subagent_type", "subagent_retry", "description"} <= {
        f.name for f in dataclasses.fields(claude_sdkurl.ToolProgressMessage)}
    assert set(claude_sdkurl.SubagentRetry.__annotations__) == set(retry)
    assert set(claude_sdkurl.ApiRetryNoResponse.__annotations__) == {"waited_ms", "retry_wait_ms"}


@pytest.mark.parametrize(
    "name",
    ["HOOK_EVENTS", "EXIT_REASONS", "BUILTIN_TOOL_NAMES", "USAGE_LIMIT_ERROR_PREFIXES", "USAGE_TRANSITION_PREFIXES",
     "USAGE_WARNING_PREFIXES", "ORG_POLICY_LIMIT_PREFIXES"],
)  # fmt: skip
def test_constant_tables_are_typescripts(dts: str, name: str) -> None:
    assert list(getattr(claude_sdkurl, name)) == constant(dts, name)


def test_hook_events_we_type_are_all_known_to_the_cli() -> None:
    import typing

    assert set(typing.get_args(claude_sdkurl.HookEvent)) <= set(claude_sdkurl.HOOK_EVENTS)


def test_limit_messages_are_classified_by_their_beginning() -> None:
    kind = claude_sdkurl.limit_message_kind
    assert kind("You've hit your limit · resets 5pm") == "limit"
    assert kind("  Your org is out of usage · add funds to continue") == "limit"
    assert kind("This service is disabled for your org") == "org_policy"
    assert kind("Now using extra usage") == "transition"
    assert kind("You've used 80% of your weekly limit") == "warning"
    assert kind("Hello") is None and kind("") is None and kind(None) is None  # type: ignore[arg-type]


def _row(label: str, total: int, here: int, left: int, tested: int) -> str:
    return f"| {label} | {total} | {here} | {left} | {tested} |"


def test_the_parity_table_in_the_docs_matches_the_tables(dts: str) -> None:
    methods, options, kinds = surface(dts)
    page = (ROOT / "docs" / "guide" / "typescript.md").read_text()
    readme = (ROOT / "README.md").read_text()
    option_entries = [e for e in OPTIONS.values() if not isinstance(e, LeftOut)]
    function_entries = [e for e in FUNCTIONS.values() if not isinstance(e, LeftOut)]
    typed = [k for k in MESSAGES.values() if k != "SystemMessage" and not isinstance(k, LeftOut)]
    rows = [
        _row("`Query` methods", len(methods), len(METHODS), 0, sum(1 for _, t in METHODS.values() if t)),
        _row("`Options` fields", len(options), len(option_entries), len(OPTIONS) - len(option_entries),
             sum(1 for _, t in option_entries if t)),  # fmt: skip
        f"| `SDKMessage` kinds | {len(kinds)} | {len(MESSAGES)} | 0 | — |",
        _row("top-level functions", len(functions(dts)), len(function_entries), len(FUNCTIONS) - len(function_entries),
             sum(1 for _, t in function_entries if t)),  # fmt: skip
    ]
    for row in rows:
        assert row in page, f"docs/guide/typescript.md lacks the row {row}"
        assert row in readme, f"README.md lacks the row {row}"
    assert f"{len(typed)} of the {len(kinds)} message kinds have a class of their own" in page
    for ts, entry in [*OPTIONS.items(), *FUNCTIONS.items()]:
        if isinstance(entry, LeftOut):
            assert f"`{ts}`" in page, f"the page does not say why {ts} is left out"
