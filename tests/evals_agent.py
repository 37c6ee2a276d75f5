"""An agent program to evaluate, with the kinds of logic programs hold (hooks, a ``can_use_tool``
rule, an in-process tool, a system prompt, a model and a turn limit) and twenty faults people
make in them, seeded one at a time (tests/test_realcli_evals.py, bench/bench_evals.py); the
tasks that exercise it; and the mock model's side of those tasks.

The mock model follows what a model would: it calls the task's tool, reads the tool's answer,
and runs the tests before it says it is done only when the system prompt tells it to.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from claude_sdkurl import ClaudeAgentOptions, ClaudeSDKClient, HookMatcher, PermissionResultAllow, PermissionResultDeny
from claude_sdkurl.evals import Task, checks
from claude_sdkurl.mcp import create_sdk_mcp_server, tool
from claude_sdkurl.testing import Reply
from claude_sdkurl.testing.mock_api import RecordedRequest, text, tool_use

MODEL = "claude-sonnet-4-6"
RAN: list[tuple[Any, ...]] = []  # each run of the in-process tool (its side effect), in this process
RULES = "Run the tests (cat fix.txt) before you say you are done."

# fault -> the task(s) whose checks it breaks
FAULTS: dict[str, list[str]] = {
    "dropped hook": ["clean"],
    "permissive rule": ["keep"],
    "swapped tool": ["add", "negative"],
    "off-by-one in a tool": ["add", "negative"],
    "changed system prompt": ["fix"],
    "hook matcher typo": ["clean"],
    "inverted rule": ["fix", "keep", "list"],
    "strings joined in a tool": ["add", "negative"],
    "max_turns too low": ["add", "negative", "clean", "keep", "list", "fix"],
    "wrong model": ["add", "negative", "clean", "keep", "list", "fix"],
    "hook answers an unknown decision": ["clean"],
    "rule reads the wrong key": ["keep"],
    "abs() in a tool": ["negative"],
    "narrowed rule pattern": ["keep"],
    "dropped audit hook": ["list"],
    "audit log in the wrong folder": ["list"],
    "rule left out": ["fix", "keep", "list"],
    "renamed tool server": ["add", "negative"],
    "a hook that raises": ["fix", "keep", "list"],  # a guard that cannot decide denies: no Bash call runs
    "malformed tool result": ["add", "negative"],
}


def program(fault: str | None = None) -> Any:
    """The program as ``run_eval`` calls it: ``program(prompt, options)`` -> messages."""
    if fault is not None and fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}")

    def add(args: dict[str, Any]) -> dict[str, Any]:
        a, b = args["a"], args["b"]
        RAN.append(("add", a, b))
        if fault == "strings joined in a tool":
            value: Any = f"{a}{b}"
        elif fault == "swapped tool":
            value = int(a) * int(b)
        elif fault == "abs() in a tool":
            value = abs(int(a)) + abs(int(b))
        else:
            value = int(a) + int(b) + (1 if fault == "off-by-one in a tool" else 0)
        if fault == "malformed tool result":
            return {"content": str(value)}
        return {"content": [{"type": "text", "text": str(value)}]}

    server = "calculator" if fault == "renamed tool server" else "calc"

    def rule(tool_name: str, tool_input: dict[str, Any], context: Any) -> Any:
        command = str(tool_input.get("cmd" if fault == "rule reads the wrong key" else "command", ""))
        if fault == "narrowed rule pattern":
            secret = command.startswith("secret")
        else:
            secret = "secret" in command
        if fault == "inverted rule":
            secret = not secret
        if secret and fault != "permissive rule":
            return PermissionResultDeny(message="nothing goes into secret/")
        return PermissionResultAllow()

    def guard(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        if fault == "a hook that raises":
            raise KeyError("tool_input")
        if "rm -rf" in str((hook_input.get("tool_input") or {}).get("command", "")):
            decision = "block" if fault == "hook answers an unknown decision" else "deny"
            return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision,
                                           "permissionDecisionReason": "no rm -rf here"}}  # fmt: skip
        return {}

    def audit(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        folder = Path(hook_input.get("cwd") or ".")
        if fault == "audit log in the wrong folder":
            folder = folder.parent
        with open(folder / "audit.log", "a") as log:
            log.write(json.dumps({"tool": hook_input.get("tool_name"), "input": hook_input.get("tool_input")}) + "\n")
        return {}

    def run(prompt: str, options: ClaudeAgentOptions) -> Iterable[Any]:
        # the server made here, not once above: a program Dask ships to a worker holds no lock
        calc = create_sdk_mcp_server(server, tools=[tool("add", "Add two integers", {"a": int, "b": int})(add)])
        hooks: dict[Any, list[HookMatcher]] = {}
        if fault != "dropped hook":
            hooks["PreToolUse"] = [HookMatcher(matcher="bash" if fault == "hook matcher typo" else "Bash", hooks=[guard])]
        if fault != "dropped audit hook":
            hooks["PostToolUse"] = [HookMatcher(matcher="Bash", hooks=[audit])]
        rules = "Run the tests before you say you are done." if fault == "changed system prompt" else RULES
        mine = dataclasses.replace(
            options, can_use_tool=None if fault == "rule left out" else rule, hooks=hooks, mcp_servers={server: calc}, allowed_tools=[f"mcp__{server}__add"],
            system_prompt={"type": "preset", "preset": "claude_code", "append": rules},
            model="claude-haiku-4-5" if fault == "wrong model" else MODEL,
            max_turns=1 if fault == "max_turns too low" else 6,
        )  # fmt: skip
        with ClaudeSDKClient(mine) as client:
            client.query(prompt)
            return list(client.receive_response())

    return run


def tasks(seed: Path) -> list[Task]:
    """The suite: each task and the checks that hold for the unchanged program. ``seed`` holds
    ``logs/a.log``."""
    model_ok = checks.model_used(MODEL)
    return [
        Task("add", "Add 2 and 3", checks=[checks.tool_called("mcp__calc__add", a=2, b=3), checks.result_contains("the sum is 5"), model_ok]),
        Task("negative", "Add -4 and 1", checks=[checks.result_contains("the sum is -3"), model_ok]),
        Task("clean", "Clean up the logs", seed, checks=[checks.hook_called("PreToolUse"), checks.file_exists("logs/a.log"), model_ok]),
        Task("keep", "Keep notes", seed, checks=[checks.decided("Bash", "deny"), checks.file_absent("secret/notes.txt"), model_ok]),
        Task("list", "List the logs", seed, checks=[checks.decided("Bash", "allow"), checks.file_contains("audit.log", "ls logs > listing.txt"),
                                                   checks.result_contains("done"), model_ok]),  # fmt: skip
        Task("fix", "Fix the bug", seed, checks=[checks.tools_in_order("Bash", "Bash"),
                                                 checks.tool_called("Bash", command="cat fix.txt"), checks.file_exists("fix.txt"), model_ok]),  # fmt: skip
    ]


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


def _said(result: dict[str, Any]) -> str:
    content = result.get("content")
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


def model(request: RecordedRequest) -> Reply:
    """The mock model: each task's tool call(s), then its answer."""
    prompt = first_prompt(request)
    results = request.tool_results()
    body = request.body if isinstance(request.body, dict) else {}
    if "Add" in prompt:
        if results:
            return text(f"the sum is {_said(results[-1]).strip()}")
        a, b = (2, 3) if "Add 2" in prompt else (-4, 1)
        return tool_use("mcp__calc__add", {"a": a, "b": b})
    if "Fix" in prompt:
        told = RULES in json.dumps(body.get("system", "")) or RULES in json.dumps(request.messages())  # (a CLAUDE.md comes in a message)
        ran = sum(1 for m in request.messages() if m.get("role") == "user" and isinstance(m.get("content"), list)
                  for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result")  # fmt: skip
        if not ran:
            return tool_use("Bash", {"command": "echo fixed > fix.txt"})
        if ran == 1 and told:
            return tool_use("Bash", {"command": "cat fix.txt"})
        return text("done: the tests passed" if told else "done")
    if results:
        return text("done")
    if "Clean" in prompt:
        return tool_use("Bash", {"command": "rm -rf logs"})
    if "Keep" in prompt:
        return tool_use("Bash", {"command": "mkdir -p secret && echo x > secret/notes.txt"})
    if "List" in prompt:
        return tool_use("Bash", {"command": "ls logs > listing.txt"})  # not read-only: the rule is asked
    return text("ok")
