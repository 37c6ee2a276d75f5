"""The TypeScript SDK's constant tables (0.3.332), so a program can name hook events, exit
reasons and built-in tools, and classify a usage-limit message without guessing.

The values are the CLI's own names and texts; ``tests/test_typescript_surface.py`` checks them
against the pinned ``sdk.d.ts``. :func:`limit_message_kind` is ours.
"""

from __future__ import annotations

from typing import Literal

HOOK_EVENTS: tuple[str, ...] = (
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "Notification", "UserPromptSubmit",
    "UserPromptExpansion", "SessionStart", "SessionEnd", "Stop", "StopFailure", "SubagentStart", "SubagentStop",
    "PreCompact", "PostCompact", "PreModelSwitch", "PostModelSwitch", "PermissionRequest", "PermissionDenied",
    "Setup", "TeammateIdle", "TaskCreated", "TaskCompleted", "Elicitation", "ElicitationResult", "ConfigChange",
    "WorktreeCreate", "WorktreeRemove", "InstructionsLoaded", "CwdChanged", "FileChanged", "DirectoryAdded",
    "MessageDisplay", "PreSkillShellCommand",
)  # fmt: skip
"""Every hook event the CLI can call (``SessionEnd``'s ``reason`` is one of :data:`EXIT_REASONS`)."""

EXIT_REASONS: tuple[str, ...] = ("clear", "resume", "logout", "prompt_input_exit", "other")
"""Why a session ended, as a ``SessionEnd`` hook's input says."""

BUILTIN_TOOL_NAMES: tuple[str, ...] = (
    "Agent", "Artifact", "AskUserQuestion", "Bash", "ClaudeDesign", "CronCreate", "CronDelete", "CronList", "Edit",
    "EndConversation", "EnterPlanMode", "EnterWorktree", "ExitPlanMode", "ExitWorktree", "Glob", "Grep",
    "ListAgents", "ListMcpResourcesTool", "LSP", "Monitor", "NotebookEdit", "OfferChromeSetup", "PowerShell",
    "Projects", "propose_skills", "PushNotification", "Read", "ReadMcpResourceDirTool", "ReadMcpResourceTool",
    "ReadNotifications", "RemoteTrigger", "ReportFindings", "ScheduleWakeup", "SendFeedback", "SendMessage",
    "SendUserFile", "SendUserMessage", "SetGoal", "ShareOnboardingGuide", "ShowOnboardingRolePicker", "Skill",
    "SubagentHandback", "TaskCreate", "TaskGet", "TaskList", "TaskStop", "TaskUpdate", "TodoWrite", "ToolSearch",
    "WaitForMcpServers", "WebFetch", "WebSearch", "Workflow", "Write",
)  # fmt: skip
"""The names of the CLI's built-in tools (for ``tools``, ``allowed_tools`` and rules)."""

LEGACY_TOOL_NAME_ALIASES: dict[str, str] = {
    "Task": "Agent",
    "KillShell": "TaskStop",
    "KillBash": "TaskStop",
    "ListPeers": "ListAgents",
    "Brief": "SendUserMessage",
    "ListMcpResources": "ListMcpResourcesTool",
    "ReadMcpResource": "ReadMcpResourceTool",
    "ReadMcpResourceDir": "ReadMcpResourceDirTool",
    "ProposeGoal": "SetGoal",
}
"""Old tool names the CLI still accepts, and the name each stands for now."""

USAGE_LIMIT_ERROR_PREFIXES: tuple[str, ...] = (
    "You've hit your", "You've reached your", "You're out of usage credits",
    "Your org is out of usage · add funds to continue", "Your org is out of usage · contact your admin",
    "Your seat type doesn't include usage credits", "Your seat type doesn't include usage",
    "Your usage allocation has been disabled by your admin", "Your group's usage limit is set to $0",
    "Fable 5 requires usage credits", "You're out of extra usage", "Your seat type doesn't include extra usage",
)  # fmt: skip
"""How a message that means "a usage limit was reached" begins."""

USAGE_TRANSITION_PREFIXES: tuple[str, ...] = (
    "You're now using usage credits", "You're now using your usage allocation", "Now using your usage allocation",
    "Now using usage credits", "Now using credits", "You're now using extra usage", "Now using extra usage",
)  # fmt: skip
"""How a notice that the account now draws on credits begins (never an error)."""

USAGE_WARNING_PREFIXES: tuple[str, ...] = ("You've used", "You're close to")
"""How an approaching-limit warning begins (never an error)."""

ORG_POLICY_LIMIT_PREFIXES: tuple[str, ...] = ("This service is disabled for your org",)
"""How a refusal by the organisation's policy begins."""

SYSTEM_PROMPT_DYNAMIC_BOUNDARY = "__SYSTEM_PROMPT_DYNAMIC_BOUNDARY__"
"""The marker between the fixed and the per-session parts of the CLI's system prompt."""

LimitMessageKind = Literal["limit", "org_policy", "transition", "warning"]


def limit_message_kind(text: str) -> LimitMessageKind | None:
    """Ours: what a usage message is, from how it begins (``None``: not one of them).

    ``"limit"`` (a limit was reached: pause or stop), ``"org_policy"`` (refused by the
    organisation), ``"transition"`` (now on credits) or ``"warning"`` (close to a limit).
    """
    if not isinstance(text, str):
        return None
    text = text.lstrip()
    for kind, prefixes in (
        ("limit", USAGE_LIMIT_ERROR_PREFIXES),
        ("org_policy", ORG_POLICY_LIMIT_PREFIXES),
        ("transition", USAGE_TRANSITION_PREFIXES),
        ("warning", USAGE_WARNING_PREFIXES),
    ):
        if text.startswith(prefixes):
            return kind  # type: ignore[return-value]
    return None
