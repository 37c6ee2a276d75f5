"""An agent program to evaluate, with the kinds of logic programs hold (a hook, a ``can_use_tool``
rule, an in-process tool) and faults people make in them, seeded one at a time
(tests/test_realcli_evals.py); and the mock model's side of its three tasks."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from claude_sdkurl import ClaudeAgentOptions, ClaudeSDKClient, HookMatcher, PermissionResultAllow, PermissionResultDeny
from claude_sdkurl.mcp import create_sdk_mcp_server, tool
from claude_sdkurl.testing import Reply
from claude_sdkurl.testing.mock_api import RecordedRequest, text, tool_use

FAULTS = ["dropped hook", "permissive rule", "swapped tool", "off-by-one in a tool"]


def program(fault: str | None = None) -> Any:
    """The program as ``run_eval`` calls it: ``program(prompt, options)`` -> messages."""

    def add(args: dict[str, Any]) -> dict[str, Any]:
        a, b = int(args["a"]), int(args["b"])
        value = a * b if fault == "swapped tool" else a + b + (1 if fault == "off-by-one in a tool" else 0)
        return {"content": [{"type": "text", "text": str(value)}]}

    calc = create_sdk_mcp_server("calc", tools=[tool("add", "Add two integers", {"a": int, "b": int})(add)])

    def rule(tool_name: str, tool_input: dict[str, Any], context: Any) -> Any:
        command = str(tool_input.get("command", ""))
        if fault != "permissive rule" and "secret" in command:
            return PermissionResultDeny(message="nothing goes into secret/")
        return PermissionResultAllow()

    def guard(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        if "rm -rf" in str((hook_input.get("tool_input") or {}).get("command", "")):
            return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                           "permissionDecisionReason": "no rm -rf here"}}  # fmt: skip
        return {}

    def run(prompt: str, options: ClaudeAgentOptions) -> Iterable[Any]:
        hooks = {} if fault == "dropped hook" else {"PreToolUse": [HookMatcher(matcher="Bash", hooks=[guard])]}
        mine = dataclasses.replace(options, can_use_tool=rule, hooks=hooks, mcp_servers={"calc": calc},
                                   allowed_tools=["mcp__calc__add"])  # fmt: skip
        with ClaudeSDKClient(mine) as client:
            client.query(prompt)
            return list(client.receive_response())

    return run


def first_prompt(request: RecordedRequest) -> str:
    """The text of the conversation's first user message (every text block: the CLI puts its
    reminders beside the prompt)."""
    for message in request.messages():
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return " ".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def model(request: RecordedRequest) -> Reply:
    """The mock model: each task's one tool call, then its answer."""
    prompt = first_prompt(request)
    results = request.tool_results()
    if results:
        content = results[-1].get("content")
        said = content if isinstance(content, str) else " ".join(b.get("text", "") for b in content or [] if isinstance(b, dict))
        return text(f"the sum is {said.strip()}" if "Add" in prompt else "done")
    if "Add" in prompt:
        return tool_use("mcp__calc__add", {"a": 2, "b": 3})
    if "Clean" in prompt:
        return tool_use("Bash", {"command": "rm -rf logs"})
    if "Keep" in prompt:
        return tool_use("Bash", {"command": "mkdir -p secret && echo x > secret/notes.txt"})
    return text("ok")
