"""The program the tape tests record and replay: a 20-turn conversation that uses a built-in
tool behind a permission prompt, a hook, an SDK MCP tool that writes a file, and a subagent.
What it observes (messages, tool inputs, final text, callback calls, the files its tool wrote)
is what a replay must give again."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from claude_sdkurl import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeClient,
    HookMatcher,
    PermissionResultAllow,
    ResultMessage,
    TextBlock,
    ToolUseBlock,
    create_sdk_mcp_server,
    tool,
)
from claude_sdkurl.testing import Reply, text, tool_use

TURNS = 20


def prompt(turn: int) -> str:
    return f"turn {turn}: " + ["run a command", "note it down", "ask a helper", "just answer"][turn % 4]


def responder(request: Any) -> Reply:
    """The mock model: decides by what it is asked (a subagent's call runs beside the main one)."""
    first = json.dumps(request.messages()[:1])
    if "HELPER-TASK" in first:
        return text("helper says hi")
    last = request.last_user_text()
    if request.tool_results():
        return text(f"done with {request.tool_results()[0].get('tool_use_id', '')[:4]}")
    if "run a command" in last:
        return tool_use("Bash", {"command": f"echo {last.split(':')[0].replace(' ', '_')}", "description": "echo"})
    if "note it down" in last:
        return tool_use("mcp__notes__write", {"name": last.split(":")[0].replace(" ", "_"), "text": last})
    if "ask a helper" in last:
        return tool_use("Agent", {"description": "helper", "prompt": "HELPER-TASK: say hi", "subagent_type": "general-purpose"})
    return text(f"answer to {last}")


class Program:
    """Options with callbacks that note every call; ``notes`` is where its MCP tool writes."""

    def __init__(self, notes: Path, deny: bool = False, tool_result: str = "written", hook_reason: str | None = None) -> None:
        self.notes = notes
        self.calls: list[tuple[str, str]] = []
        self.deny = deny
        self.tool_result = tool_result
        self.hook_reason = hook_reason  # a field the recorded program's hook did not write

    def options(self, **kw: Any) -> ClaudeAgentOptions:
        from claude_sdkurl import PermissionResultDeny

        def permission(name: str, tool_input: dict[str, Any], context: Any) -> Any:
            self.calls.append(("can_use_tool", name))
            return PermissionResultDeny(message="not today") if self.deny else PermissionResultAllow()

        def hook(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
            self.calls.append(("PreToolUse", str(hook_input.get("tool_name"))))
            return {"reason": self.hook_reason} if self.hook_reason is not None else {}

        @tool("write", "Write a note", {"name": str, "text": str})
        def write(args: dict[str, Any]) -> dict[str, Any]:
            self.calls.append(("mcp", args["name"]))
            self.notes.mkdir(parents=True, exist_ok=True)
            (self.notes / f"{args['name']}.txt").write_text(args["text"])
            return {"content": [{"type": "text", "text": self.tool_result}]}

        return ClaudeAgentOptions(
            can_use_tool=permission,
            hooks={"PreToolUse": [HookMatcher(matcher=None, hooks=[hook])]},
            mcp_servers={"notes": create_sdk_mcp_server("notes", tools=[write])},
            **kw,
        )

    def run(self, options: ClaudeAgentOptions, turns: int = TURNS, first: str | None = None) -> dict[str, Any]:
        seen: dict[str, Any] = {"messages": [], "tool_inputs": [], "texts": [], "results": []}
        with ClaudeClient(options) as client:
            for turn in range(turns):
                client.query(first if (first and turn == 0) else prompt(turn))
                for message in client.receive_response(timeout=120):
                    seen["messages"].append(type(message).__name__)
                    if isinstance(message, AssistantMessage):
                        for block in message.content:
                            if isinstance(block, ToolUseBlock):
                                seen["tool_inputs"].append((block.name, block.input))
                            elif isinstance(block, TextBlock) and message.parent_tool_use_id is None:
                                seen["texts"].append(block.text)
                    if isinstance(message, ResultMessage):
                        seen["results"].append(message.result)
        seen["calls"] = list(self.calls)
        seen["files"] = sorted((p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in self.notes.glob("*.txt")) if self.notes.is_dir() else []
        return seen
