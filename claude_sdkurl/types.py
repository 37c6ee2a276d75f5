"""Public types: messages, content blocks, options, permission and hook types.

Names, fields, defaults and positional order follow the official
``claude_agent_sdk.types`` (0.2.189), and the classes are standard-library
dataclasses as there, so ``dataclasses.replace``/``asdict``/``fields`` answer
the same. What we add:

* every message and content block keeps the wire dict it was built from in
  ``.raw`` (a plain attribute, not a dataclass field: it is left out of
  ``==``, ``repr``, ``fields()`` and ``asdict()``);
* message or block types this SDK does not know arrive as
  :class:`UnknownMessage` / :class:`UnknownBlock` instead of being dropped;
* :class:`ClaudeAgentOptions` has five keyword-only fields of ours after the
  official ones (``transport``, ``control_timeout``, ``callback_timeout``,
  ``on_elicitation``, ``spawn_claude_code_process``).

Messages and blocks show themselves in Jupyter through :mod:`claude_sdkurl._shown`, where
:mod:`claude_sdkurl.display` registers its renderers: nothing here imports it. One name goes up
for type checkers only (never imported at run time): the in-process MCP server type
(``mcp.SdkMcpServer``), as the official ``types`` refers to ``mcp.server.Server``.
"""

# No ``from __future__ import annotations`` here: TypedDicts need their
# ``NotRequired`` evaluated to keep those keys optional at runtime.
import copy
import re
import sys
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypedDict, Union

if sys.version_info >= (3, 11):
    from typing import NotRequired, Required, TypeAlias
else:  # pragma: no cover
    from typing_extensions import NotRequired, Required, TypeAlias

from . import _shown

if TYPE_CHECKING:
    from .mcp import SdkMcpServer

PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"]
"""How the CLI treats tool calls no rule settles: ask (``default``), accept file edits, plan only,
skip every check, deny what would ask (``dontAsk``), or let the CLI's classifier decide
(``auto``).
"""
SdkBeta = Literal["context-1m-2025-08-07"]
"""Beta features of the Messages API the CLI may be asked to turn on (``betas=``)."""
SettingSource = Literal["user", "project", "local"]
"""Which settings files the CLI loads: the user's, the project's, or the local (uncommitted) one."""
EffortLevel: TypeAlias = Literal["low", "medium", "high", "xhigh", "max"]
"""How hard the model should think, as the CLI's ``--effort`` flag takes it."""
TransportName = Literal["auto", "websocket", "stdio"]


class _Wire:
    """``.raw``: the wire dict an object was parsed from (``{}`` when built by hand).

    Stored in the instance ``__dict__``, not as a dataclass field, so that
    equality, ``repr``, ``fields()`` and ``asdict()`` match the official types.
    """

    @property
    def raw(self) -> dict[str, Any]:
        raw: dict[str, Any] = self.__dict__.get("_raw") or {}
        return raw

    @raw.setter
    def raw(self, value: dict[str, Any]) -> None:
        self.__dict__["_raw"] = value


class _Displayable(_Wire):
    """Jupyter display for messages (see :mod:`claude_sdkurl.display`): Markdown only, and
    ``display()`` quiet for stream events and a session's repeated ``init`` line."""

    def _repr_markdown_(self) -> str:
        return str(_shown.render("message", self))

    def _ipython_display_(self) -> None:
        _shown.render("show", self)


class _ShownBlock(_Wire):
    """Jupyter display for content blocks (see :mod:`claude_sdkurl.display`)."""

    def _repr_markdown_(self) -> str:
        return str(_shown.render("block", self))


# --------------------------------------------------------------------------- prompts, tools


class SystemPromptPreset(TypedDict):
    """Claude Code's own system prompt, optionally with text appended."""

    type: Literal["preset"]
    """Always ``"preset"``."""
    preset: Literal["claude_code"]
    """Always ``"claude_code"``: Claude Code's own prompt."""
    append: NotRequired[str]
    """Text added after Claude Code's prompt."""
    exclude_dynamic_sections: NotRequired[bool]
    """Leave the per-user parts (working folder, memory path) out of the cached prompt and send them as the
    first user message, so the prompt's cache is shared between users."""
    snapshot: NotRequired[bool]
    """``False``: the CLI builds the prompt again on every request instead of keeping the one of the session's
    first request."""


class SystemPromptCustom(TypedDict):
    """A custom system prompt (same as passing a string)."""

    type: Literal["custom"]
    """Always ``"custom"``."""
    prompt: str
    """The system prompt's text."""
    snapshot: NotRequired[bool]
    """``False``: the CLI builds the prompt again on every request instead of keeping the one of the session's
    first request."""


class SystemPromptFile(TypedDict):
    """A system prompt read by the CLI from a file."""

    type: Literal["file"]
    """Always ``"file"``."""
    path: str
    """The file the CLI reads the prompt from (``--system-prompt-file``)."""


class TaskBudget(TypedDict):
    """API-side task budget in tokens."""

    total: int
    """Tokens the whole task may use (``--task-budget``)."""


class ToolsPreset(TypedDict):
    """All of Claude Code's default tools."""

    type: Literal["preset"]
    """Always ``"preset"``."""
    preset: Literal["claude_code"]
    """Always ``"claude_code"``."""


@dataclass
class AgentDefinition:
    """A custom subagent, sent to the CLI in ``initialize``."""

    description: str
    """When the main agent should hand work to this subagent (the model reads it)."""
    prompt: str
    """The subagent's system prompt."""
    tools: list[str] | None = None
    """The tools it may use; ``None``: the main agent's."""
    disallowedTools: list[str] | None = None  # noqa: N815
    """Tools taken away from it."""
    model: str | None = None
    """``"sonnet"``, ``"opus"``, ``"haiku"``, ``"inherit"`` or a model id; ``None``: the CLI's choice."""
    skills: list[str] | None = None
    """Skills it may use, by name."""
    memory: Literal["user", "project", "local"] | None = None
    """Which memory files it reads: the user's, the project's or the local one."""
    mcpServers: list[str | dict[str, Any]] | None = None  # noqa: N815
    """MCP servers it gets: names of configured servers, or ``{name: config}`` dicts."""
    initialPrompt: str | None = None  # noqa: N815
    """A prompt sent to it when it starts."""
    maxTurns: int | None = None  # noqa: N815
    """Turns it may take before it stops."""
    background: bool | None = None
    """Run it as a background task."""
    effort: EffortLevel | int | None = None
    """Its effort level, or a thinking-token budget."""
    permissionMode: PermissionMode | None = None  # noqa: N815
    """Its permission mode, in place of the session's."""


# --------------------------------------------------------------------------- permissions

PermissionUpdateDestination = Literal["userSettings", "projectSettings", "localSettings", "session"]
"""Where a permission update is kept: a settings file, or only this session."""
PermissionBehavior = Literal["allow", "deny", "ask"]
"""What a permission rule does with a matching call: allow it, deny it, or ask."""


@dataclass
class PermissionRuleValue:
    """A permission rule: a tool, optionally narrowed by rule content."""

    tool_name: str
    """The tool the rule is about (``Bash``, ``mcp__server__tool``)."""
    rule_content: str | None = None
    """What narrows it (``git *`` for ``Bash(git *)``); ``None``: the whole tool."""


_UPDATE_TYPES = ("addRules", "replaceRules", "removeRules", "setMode", "addDirectories", "removeDirectories")


@dataclass
class PermissionUpdate:
    """A change to permission rules, mode or directories."""

    type: Literal["addRules", "replaceRules", "removeRules", "setMode", "addDirectories", "removeDirectories"]
    """What to change: add, replace or remove rules, set the mode, add or remove directories."""
    rules: list[PermissionRuleValue] | None = None
    """The rules, for the three rule types."""
    behavior: PermissionBehavior | None = None
    """What the rules do: allow, deny or ask (rule types only)."""
    mode: PermissionMode | None = None
    """The new permission mode (``setMode`` only)."""
    directories: list[str] | None = None
    """The directories (``addDirectories``/``removeDirectories`` only)."""
    destination: PermissionUpdateDestination | None = None
    """Where the change is kept: a settings file, or ``"session"`` (the default on the wire)."""

    def to_dict(self) -> dict[str, Any]:
        """The wire form; raises ``ValueError`` when a field its type needs is missing."""
        out: dict[str, Any] = {"type": self.type, "destination": self.destination or "session"}
        if self.type in ("addRules", "replaceRules", "removeRules"):
            if self.rules is None or self.behavior is None:
                raise ValueError(f"PermissionUpdate(type={self.type!r}) needs rules and behavior")
            rules = []
            for rule in self.rules:
                wire: dict[str, Any] = {"toolName": rule.tool_name}
                if rule.rule_content is not None:  # an absent content means the whole tool
                    wire["ruleContent"] = rule.rule_content
                rules.append(wire)
            out["rules"] = rules
            out["behavior"] = self.behavior
        elif self.type == "setMode":
            if self.mode is None:
                raise ValueError("PermissionUpdate(type='setMode') needs mode")
            out["mode"] = self.mode
        elif self.type in ("addDirectories", "removeDirectories"):
            if self.directories is None:
                raise ValueError(f"PermissionUpdate(type={self.type!r}) needs directories")
            out["directories"] = list(self.directories)
        else:
            raise ValueError(f"PermissionUpdate has unknown type {self.type!r}; expected one of {_UPDATE_TYPES}")
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "PermissionUpdate":
        """Build from the wire form (as in ``permission_suggestions``)."""
        rules = None
        if data.get("rules") is not None:
            rules = [PermissionRuleValue(r["toolName"], r.get("ruleContent")) for r in data["rules"]]
        return cls(
            type=data["type"],
            rules=rules,
            behavior=data.get("behavior"),
            mode=data.get("mode"),
            directories=data.get("directories"),
            destination=data.get("destination"),
        )


@dataclass
class ToolPermissionContext:
    """What the CLI told us about a tool call awaiting permission."""

    signal: Any | None = None
    """Reserved; always ``None``."""
    suggestions: list[PermissionUpdate] = field(default_factory=list)
    """Permission updates the CLI suggests for this call (what "always allow" would add)."""
    tool_use_id: str | None = None
    """The id of this tool call (never empty when ``can_use_tool`` is called)."""
    agent_id: str | None = None
    """The subagent making the call; ``None`` for the main agent."""
    blocked_path: str | None = None
    """The path that made the CLI ask (a command reaching outside the allowed folders)."""
    decision_reason: str | None = None
    """Why the CLI asks (a ``PreToolUse`` hook's ``ask`` reason lands here)."""
    title: str | None = None
    """The whole question as the CLI would show it ("Claude wants to read foo.txt")."""
    display_name: str | None = None
    """A short name for the action ("Read file"), for a button."""
    description: str | None = None
    """A subtitle for the question."""


@dataclass
class PermissionResultAllow:
    """Allow the tool call, optionally with a replaced input."""

    behavior: Literal["allow"] = "allow"
    """Always ``"allow"``."""
    updated_input: dict[str, Any] | None = None
    """The input the tool runs with instead of the model's; ``None``: the model's."""
    updated_permissions: list[PermissionUpdate] | None = None
    """Permission updates to apply with this answer (an "always allow")."""


@dataclass
class PermissionResultDeny:
    """Deny the tool call; ``interrupt`` also stops the turn."""

    behavior: Literal["deny"] = "deny"
    """Always ``"deny"``."""
    message: str = ""
    """Why, as the model reads it."""
    interrupt: bool = False
    """Also stop the turn."""


PermissionResult = Union[PermissionResultAllow, PermissionResultDeny]
"""What a ``can_use_tool`` callback returns: a :class:`PermissionResultAllow` or a
:class:`PermissionResultDeny`.
"""
CanUseTool = Callable[
    [str, dict[str, Any], ToolPermissionContext],
    Union[PermissionResult, Awaitable[PermissionResult]],
]
"""The ``can_use_tool`` callback: called with the tool's name, its input and a
:class:`ToolPermissionContext`; returns a :class:`PermissionResult` (a plain or ``async def``
function).
"""

# --------------------------------------------------------------------------- hooks

HookEvent = Literal[
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "Notification",
    "SubagentStart",
    "PermissionRequest",
    "SessionStart",
    "SessionEnd",
]
"""The hook events a :class:`HookMatcher` can be registered for in ``ClaudeAgentOptions.hooks``."""


class HookEffort(TypedDict):
    """The effort level the CLI reports to a hook, when the session has one."""
    level: str
    """The effort level (``"low"`` ... ``"max"``)."""


class BaseHookInput(TypedDict):
    """Fields present in every hook input."""

    session_id: str
    """The session the hook fired in."""
    transcript_path: str
    """The session's transcript file."""
    cwd: str
    """The CLI's working folder."""
    permission_mode: NotRequired[str]
    """The session's permission mode, when the CLI reports it."""
    prompt_id: NotRequired[str]
    """The id of the prompt whose turn the hook fired in, when there is one."""
    effort: NotRequired[HookEffort]
    """The session's effort level, when it has one."""


class _SubagentContextMixin(TypedDict, total=False):
    agent_id: str
    """The subagent that made the call; absent for the main agent."""
    agent_type: str
    """That subagent's type (its name in ``agents``)."""


class PreToolUseHookInput(BaseHookInput, _SubagentContextMixin):
    """What a ``PreToolUse`` hook receives: the tool about to run and its input."""
    hook_event_name: Literal["PreToolUse"]
    """Always ``"PreToolUse"``."""
    tool_name: str
    """The tool about to run."""
    tool_input: dict[str, Any]
    """Its input, as the model wrote it."""
    tool_use_id: str
    """The id of the tool call."""


class PostToolUseHookInput(BaseHookInput, _SubagentContextMixin):
    """What a ``PostToolUse`` hook receives: the tool that ran, its input and its response."""
    hook_event_name: Literal["PostToolUse"]
    """Always ``"PostToolUse"``."""
    tool_name: str
    """The tool that ran."""
    tool_input: dict[str, Any]
    """Its input."""
    tool_response: Any
    """What the tool gave back."""
    tool_use_id: str
    """The id of the tool call."""
    duration_ms: NotRequired[int]
    """How long the tool ran, in milliseconds."""


class PostToolUseFailureHookInput(BaseHookInput, _SubagentContextMixin):
    """What a ``PostToolUseFailure`` hook receives: the tool that failed, its input and the error."""
    hook_event_name: Literal["PostToolUseFailure"]
    """Always ``"PostToolUseFailure"``."""
    tool_name: str
    """The tool that failed."""
    tool_input: dict[str, Any]
    """Its input."""
    tool_use_id: str
    """The id of the tool call."""
    error: str
    """The error text."""
    is_interrupt: NotRequired[bool]
    """Whether the call failed because the turn was interrupted."""
    duration_ms: NotRequired[int]
    """How long the tool ran, in milliseconds."""


class UserPromptSubmitHookInput(BaseHookInput):
    """What a ``UserPromptSubmit`` hook receives: the prompt before the model sees it."""
    hook_event_name: Literal["UserPromptSubmit"]
    """Always ``"UserPromptSubmit"``."""
    prompt: str
    """The prompt as sent."""


class BackgroundTaskSummary(TypedDict):
    """One background task still running when the CLI is about to stop (part of a ``Stop`` hook's
    input).
    """
    id: str
    """The task's id."""
    type: str
    """What kind of task (a shell command, an agent, an MCP call, ...)."""
    status: str
    """Its state."""
    description: str
    """What it does, in a few words."""
    command: NotRequired[str]
    """Its shell command, for a shell task."""
    agent_type: NotRequired[str]
    """Its agent type, for an agent task."""
    server: NotRequired[str]
    """Its MCP server, for an MCP task."""
    tool: NotRequired[str]
    """Its MCP tool, for an MCP task."""
    name: NotRequired[str]
    """Its name, when it has one."""


class SessionCronSummary(TypedDict):
    """One scheduled prompt of the session (part of a ``Stop`` hook's input)."""
    id: str
    """The schedule's id."""
    schedule: str
    """When it fires, in cron syntax."""
    recurring: bool
    """Whether it fires more than once."""
    prompt: str
    """The prompt it sends."""


class StopHookInput(BaseHookInput):
    """What a ``Stop`` hook receives when the main agent is about to end its turn."""
    hook_event_name: Literal["Stop"]
    """Always ``"Stop"``."""
    stop_hook_active: bool
    """``True`` when the agent is already going on because a stop hook said so (check it to avoid a loop)."""
    last_assistant_message: NotRequired[str]
    """The text of the agent's last message."""
    background_tasks: NotRequired[list[BackgroundTaskSummary]]
    """Background tasks still running."""
    session_crons: NotRequired[list[SessionCronSummary]]
    """The session's scheduled prompts."""


class SubagentStopHookInput(BaseHookInput):
    """What a ``SubagentStop`` hook receives when a subagent is about to finish."""
    hook_event_name: Literal["SubagentStop"]
    """Always ``"SubagentStop"``."""
    stop_hook_active: bool
    """``True`` when the subagent is already going on because a stop hook said so."""
    agent_id: str
    """The subagent's id."""
    agent_transcript_path: str
    """The subagent's own transcript file."""
    agent_type: str
    """The subagent's type."""
    last_assistant_message: NotRequired[str]
    """The text of its last message."""
    background_tasks: NotRequired[list[BackgroundTaskSummary]]
    """Background tasks still running."""
    session_crons: NotRequired[list[SessionCronSummary]]
    """The session's scheduled prompts."""


class PreCompactHookInput(BaseHookInput):
    """What a ``PreCompact`` hook receives before the conversation is compacted (by hand or
    automatically).
    """
    hook_event_name: Literal["PreCompact"]
    """Always ``"PreCompact"``."""
    trigger: Literal["manual", "auto"]
    """``"manual"`` (``/compact``) or ``"auto"`` (the context is full)."""
    custom_instructions: str | None
    """What ``/compact`` was told to keep, or ``None``."""


class NotificationHookInput(BaseHookInput):
    """What a ``Notification`` hook receives when the CLI would notify the user."""
    hook_event_name: Literal["Notification"]
    """Always ``"Notification"``."""
    message: str
    """The notification's text."""
    title: NotRequired[str]
    """Its title, when it has one."""
    notification_type: str
    """What kind of notification it is."""


class SubagentStartHookInput(BaseHookInput):
    """What a ``SubagentStart`` hook receives when a subagent starts."""
    hook_event_name: Literal["SubagentStart"]
    """Always ``"SubagentStart"``."""
    agent_id: str
    """The subagent's id."""
    agent_type: str
    """The subagent's type."""


class PermissionRequestHookInput(BaseHookInput, _SubagentContextMixin):
    """What a ``PermissionRequest`` hook receives when a tool call would ask for permission."""
    hook_event_name: Literal["PermissionRequest"]
    """Always ``"PermissionRequest"``."""
    tool_name: str
    """The tool that would ask."""
    tool_input: dict[str, Any]
    """Its input."""
    permission_suggestions: NotRequired[list[Any]]
    """Permission updates the CLI suggests (wire form)."""


class SessionStartHookInput(BaseHookInput):
    """Ours: the official types stop at the ten events above; the CLI sends these too."""

    hook_event_name: Literal["SessionStart"]
    """Always ``"SessionStart"``."""
    source: Literal["startup", "resume", "clear", "compact"]
    """Why the session started: a new start, a resume, ``/clear`` or a compaction."""


class SessionEndHookInput(BaseHookInput):
    """Ours, as :class:`SessionStartHookInput`."""

    hook_event_name: Literal["SessionEnd"]
    """Always ``"SessionEnd"``."""
    reason: str
    """Why the session ended."""


HookInput = Union[
    PreToolUseHookInput,
    PostToolUseHookInput,
    PostToolUseFailureHookInput,
    UserPromptSubmitHookInput,
    StopHookInput,
    SubagentStopHookInput,
    PreCompactHookInput,
    NotificationHookInput,
    SubagentStartHookInput,
    PermissionRequestHookInput,
    SessionStartHookInput,
    SessionEndHookInput,
]
"""Any of the hook input dictionaries; ``hook_event_name`` tells which."""


class PreToolUseHookSpecificOutput(TypedDict):
    """A ``PreToolUse`` hook's own answer: a permission decision, a changed input, extra context."""
    hookEventName: Literal["PreToolUse"]
    """Always ``"PreToolUse"``."""
    permissionDecision: NotRequired[Literal["allow", "deny", "ask", "defer"]]
    """``allow`` runs the call without asking, ``deny`` refuses it, ``ask`` asks, ``defer`` hands it to the
    host."""
    permissionDecisionReason: NotRequired[str]
    """Why: shown to the model for a ``deny``, to whoever answers for an ``ask``."""
    updatedInput: NotRequired[dict[str, Any]]
    """The input the tool runs with instead of the model's."""
    additionalContext: NotRequired[str]
    """Text added to the model's context."""


class PostToolUseHookSpecificOutput(TypedDict):
    """A ``PostToolUse`` hook's own answer: extra context for the model, or a replaced tool output."""
    hookEventName: Literal["PostToolUse"]
    """Always ``"PostToolUse"``."""
    additionalContext: NotRequired[str]
    """Text added to the model's context."""
    updatedToolOutput: NotRequired[Any]
    """What the model sees as the tool's output instead (any tool)."""
    updatedMCPToolOutput: NotRequired[Any]
    """The same for MCP tools only; ``updatedToolOutput`` covers every tool."""


class PostToolUseFailureHookSpecificOutput(TypedDict):
    """A ``PostToolUseFailure`` hook's own answer: extra context for the model."""
    hookEventName: Literal["PostToolUseFailure"]
    """Always ``"PostToolUseFailure"``."""
    additionalContext: NotRequired[str]
    """Text added to the model's context."""


class UserPromptSubmitHookSpecificOutput(TypedDict):
    """A ``UserPromptSubmit`` hook's own answer: extra context, a session title, or the prompt
    suppressed.
    """
    hookEventName: Literal["UserPromptSubmit"]
    """Always ``"UserPromptSubmit"``."""
    additionalContext: NotRequired[str]
    """Text added to the model's context with the prompt."""
    sessionTitle: NotRequired[str]
    """A title for the session."""
    suppressOriginalPrompt: NotRequired[bool]
    """With ``decision="block"``: leave the prompt out of the block message."""


class UserPromptExpansionHookSpecificOutput(TypedDict):
    """A ``UserPromptExpansion`` hook's own answer: extra context, or the original prompt
    suppressed.
    """
    hookEventName: Literal["UserPromptExpansion"]
    """Always ``"UserPromptExpansion"``."""
    additionalContext: NotRequired[str]
    """Text added to the model's context."""
    suppressOriginalPrompt: NotRequired[bool]
    """With ``decision="block"``: leave the prompt out of the block message."""


class SessionStartHookSpecificOutput(TypedDict):
    """A ``SessionStart`` hook's own answer: extra context, a first user message, a title, paths to
    watch.
    """
    hookEventName: Literal["SessionStart"]
    """Always ``"SessionStart"``."""
    additionalContext: NotRequired[str]
    """Text added to the model's context at the start."""
    initialUserMessage: NotRequired[str]
    """A first user message for the session."""
    sessionTitle: NotRequired[str]
    """A title for the session."""
    watchPaths: NotRequired[list[str]]
    """Paths whose changes fire ``FileChanged`` hooks."""
    reloadSkills: NotRequired[bool]
    """Read the skill and command folders again after the hook (skills the hook installed are then there)."""


class NotificationHookSpecificOutput(TypedDict):
    """A ``Notification`` hook's own answer: extra context."""
    hookEventName: Literal["Notification"]
    """Always ``"Notification"``."""
    additionalContext: NotRequired[str]
    """Text added to the model's context."""


class SubagentStartHookSpecificOutput(TypedDict):
    """A ``SubagentStart`` hook's own answer: extra context for the subagent."""
    hookEventName: Literal["SubagentStart"]
    """Always ``"SubagentStart"``."""
    additionalContext: NotRequired[str]
    """Text added to the subagent's context."""


class PermissionRequestHookSpecificOutput(TypedDict):
    """A ``PermissionRequest`` hook's own answer: the decision for the call."""
    hookEventName: Literal["PermissionRequest"]
    """Always ``"PermissionRequest"``."""
    decision: dict[str, Any]
    """The answer, in the wire form of a permission result (``{"behavior": "allow", ...}``)."""


class PostToolBatchHookSpecificOutput(TypedDict):
    """A ``PostToolBatch`` hook's own answer: extra context after a batch of parallel tool calls."""
    hookEventName: Literal["PostToolBatch"]
    """Always ``"PostToolBatch"``."""
    additionalContext: NotRequired[str]
    """Text added to the model's context."""


class StopHookSpecificOutput(TypedDict):
    """A ``Stop`` hook's own answer: extra context."""
    hookEventName: Literal["Stop"]
    """Always ``"Stop"``."""
    additionalContext: NotRequired[str]
    """Text added to the model's context."""


class SubagentStopHookSpecificOutput(TypedDict):
    """A ``SubagentStop`` hook's own answer: extra context."""
    hookEventName: Literal["SubagentStop"]
    """Always ``"SubagentStop"``."""
    additionalContext: NotRequired[str]
    """Text added to the model's context."""


class PermissionDeniedHookSpecificOutput(TypedDict):
    """A ``PermissionDenied`` hook's own answer: whether the model may try the call again."""
    hookEventName: Literal["PermissionDenied"]
    """Always ``"PermissionDenied"``."""
    retry: NotRequired[bool]
    """Tell the model it may try the call again."""


class PreModelSwitchHookSpecificOutput(TypedDict):
    """A ``PreModelSwitch`` hook's own answer: allow or refuse the model change."""
    hookEventName: Literal["PreModelSwitch"]
    """Always ``"PreModelSwitch"``."""
    permissionDecision: NotRequired[Literal["allow", "deny", "ask"]]
    """Allow, refuse or ask about the model change."""
    permissionDecisionReason: NotRequired[str]
    """Why."""


class PostModelSwitchHookSpecificOutput(TypedDict):
    """A ``PostModelSwitch`` hook's own answer: extra context."""
    hookEventName: Literal["PostModelSwitch"]
    """Always ``"PostModelSwitch"``."""
    additionalContext: NotRequired[str]
    """Text added to the model's context."""


class ElicitationHookSpecificOutput(TypedDict):
    """An ``Elicitation`` hook's own answer: accept, decline or cancel an MCP server's request for
    input, with the content.
    """
    hookEventName: Literal["Elicitation"]
    """Always ``"Elicitation"``."""
    action: NotRequired[Literal["accept", "decline", "cancel"]]
    """Accept, decline or cancel the server's request."""
    content: NotRequired[dict[str, Any]]
    """The values sent back with ``accept``."""


class ElicitationResultHookSpecificOutput(TypedDict):
    """An ``ElicitationResult`` hook's own answer: the action and content sent back to the MCP
    server.
    """
    hookEventName: Literal["ElicitationResult"]
    """Always ``"ElicitationResult"``."""
    action: NotRequired[Literal["accept", "decline", "cancel"]]
    """The action sent back to the server, in place of the one given."""
    content: NotRequired[dict[str, Any]]
    """The values sent back, in place of the ones given."""


class CwdChangedHookSpecificOutput(TypedDict):
    """A ``CwdChanged`` hook's own answer: paths to watch in the new directory."""
    hookEventName: Literal["CwdChanged"]
    """Always ``"CwdChanged"``."""
    watchPaths: NotRequired[list[str]]
    """Paths whose changes fire ``FileChanged`` hooks."""


class FileChangedHookSpecificOutput(TypedDict):
    """A ``FileChanged`` hook's own answer: paths to watch."""
    hookEventName: Literal["FileChanged"]
    """Always ``"FileChanged"``."""
    watchPaths: NotRequired[list[str]]
    """Paths whose changes fire ``FileChanged`` hooks from now on."""


class WorktreeCreateHookSpecificOutput(TypedDict):
    """A ``WorktreeCreate`` hook's own answer: the path of the worktree it made."""
    hookEventName: Literal["WorktreeCreate"]
    """Always ``"WorktreeCreate"``."""
    worktreePath: str
    """The worktree the hook made."""


class MessageDisplayHookSpecificOutput(TypedDict):
    """A ``MessageDisplay`` hook's own answer: the text to show instead."""
    hookEventName: Literal["MessageDisplay"]
    """Always ``"MessageDisplay"``."""
    displayContent: NotRequired[str]
    """The text shown in place of the message's."""


HookSpecificOutput = Union[
    PreToolUseHookSpecificOutput,
    PostToolUseHookSpecificOutput,
    PostToolUseFailureHookSpecificOutput,
    UserPromptSubmitHookSpecificOutput,
    SessionStartHookSpecificOutput,
    NotificationHookSpecificOutput,
    SubagentStartHookSpecificOutput,
    PermissionRequestHookSpecificOutput,
    UserPromptExpansionHookSpecificOutput,
    PostToolBatchHookSpecificOutput,
    StopHookSpecificOutput,
    SubagentStopHookSpecificOutput,
    PermissionDeniedHookSpecificOutput,
    PreModelSwitchHookSpecificOutput,
    PostModelSwitchHookSpecificOutput,
    ElicitationHookSpecificOutput,
    ElicitationResultHookSpecificOutput,
    CwdChangedHookSpecificOutput,
    FileChangedHookSpecificOutput,
    WorktreeCreateHookSpecificOutput,
    MessageDisplayHookSpecificOutput,
]
"""Any of the per-event hook answers; ``hookEventName`` tells which."""


class AsyncHookJSONOutput(TypedDict):
    """A hook's answer that it goes on in the background (``async_`` is sent as ``async``)."""
    async_: Literal[True]
    """Always ``True``: the hook goes on in the background (sent as ``async``)."""
    asyncTimeout: NotRequired[int]
    """How long the CLI waits for it, in milliseconds."""


class SyncHookJSONOutput(TypedDict):
    """A hook's answer: whether to go on (``continue_`` is sent as ``continue``), a decision,
    messages, and the per-event output.
    """
    continue_: NotRequired[bool]
    """``False`` stops the agent after the hook (sent as ``continue``)."""
    suppressOutput: NotRequired[bool]
    """Keep the hook's output out of the transcript."""
    stopReason: NotRequired[str]
    """With ``continue_=False``: the reason shown."""
    decision: NotRequired[Literal["block"]]
    """``"block"`` refuses what the event is about (a prompt, a stop, a tool's result)."""
    systemMessage: NotRequired[str]
    """A message shown to the user."""
    reason: NotRequired[str]
    """Why, for ``decision``; the model reads it."""
    hookSpecificOutput: NotRequired[HookSpecificOutput]
    """The event's own answer (``hookEventName`` says which)."""


HookJSONOutput = Union[AsyncHookJSONOutput, SyncHookJSONOutput]
"""What a hook callback returns: a synchronous or an asynchronous hook answer."""


class HookContext(TypedDict):
    """Context for a hook callback; ``signal`` is reserved."""

    signal: Any | None
    """Reserved; always ``None``."""


HookCallback = Callable[
    [Any, Union[str, None], HookContext],
    Union[HookJSONOutput, dict[str, Any], Awaitable[Union[HookJSONOutput, dict[str, Any]]]],
]
"""A hook callback: called with the hook's input, the tool use id (or ``None``) and a
:class:`HookContext`; returns a hook answer (a plain or ``async def`` function).
"""


@dataclass
class HookMatcher:
    """Callbacks for one hook event, optionally narrowed by a matcher.

    ``timeout``: seconds each callback may take (without one: ``callback_timeout``, else 600 s).
    A ``PreToolUse`` or ``PermissionRequest`` callback that raises, returns no dict or takes
    longer denies the tool call, telling the model why; ``on_failure="continue"`` lets the call
    go on instead (the CLI is answered with an error, as for the other events).
    """

    matcher: str | None = None
    """Which calls it applies to: a tool name or pattern (``"Bash"``, ``"Write|Edit"``); ``None``: all."""
    hooks: list[HookCallback] = field(default_factory=list)
    """The callbacks, each called with the hook's input, the tool use id and a :class:`HookContext`."""
    timeout: float | None = None
    """Seconds each callback of this matcher may take; ``None``: ``callback_timeout``, else 600 s. A guarding
    hook (``PreToolUse``, ``PermissionRequest``) past it denies the call."""
    on_failure: Literal["continue", "block"] | None = None
    """When a callback raises, returns no dict or runs past its bound (sent to the CLI as ``onFailure``):
    ``"continue"``: the CLI is answered with an error, no decision, and the action goes on; ``"block"``: the CLI
    blocks it; ``None``: a guarding hook (``PreToolUse``, ``PermissionRequest``) denies the call, telling the
    model why, and another event's failure is no decision."""

# --------------------------------------------------------------------------- MCP configs and status


class McpStdioServerConfig(TypedDict):
    """An MCP server the CLI starts as a process and talks to over its stdin and stdout."""
    type: NotRequired[Literal["stdio"]]
    """``"stdio"`` (may be left out)."""
    command: str
    """The program to start."""
    args: NotRequired[list[str]]
    """Its arguments."""
    env: NotRequired[dict[str, str]]
    """Variables added to its environment."""


class McpSSEServerConfig(TypedDict):
    """An MCP server the CLI reaches over server-sent events at a URL."""
    type: Literal["sse"]
    """Always ``"sse"``."""
    url: str
    """The server's URL."""
    headers: NotRequired[dict[str, str]]
    """HTTP headers sent with each request."""


class McpHttpServerConfig(TypedDict):
    """An MCP server the CLI reaches over streamable HTTP at a URL."""
    type: Literal["http"]
    """Always ``"http"``."""
    url: str
    """The server's URL."""
    headers: NotRequired[dict[str, str]]
    """HTTP headers sent with each request."""


class McpSdkServerConfig(TypedDict):
    """An in-process server made by :func:`create_sdk_mcp_server`."""

    type: Literal["sdk"]
    """Always ``"sdk"``."""
    name: str
    """The server's name."""
    instance: "SdkMcpServer"
    """The server object that answers the CLI's calls in this process."""


McpServerConfig = Union[McpStdioServerConfig, McpSSEServerConfig, McpHttpServerConfig, McpSdkServerConfig]
"""Any MCP server configuration ``ClaudeAgentOptions.mcp_servers`` takes."""


class McpSdkServerConfigStatus(TypedDict):
    """An in-process SDK MCP server as the CLI reports it in a status answer."""
    type: Literal["sdk"]
    """Always ``"sdk"``."""
    name: str
    """The server's name."""


class McpClaudeAIProxyServerConfig(TypedDict):
    """An MCP server proxied through claude.ai, as the CLI reports it in a status answer."""
    type: Literal["claudeai-proxy"]
    """Always ``"claudeai-proxy"``."""
    url: str
    """The proxy's URL."""
    id: str
    """The connector's id on claude.ai."""


McpServerStatusConfig = Union[
    McpStdioServerConfig, McpSSEServerConfig, McpHttpServerConfig, McpSdkServerConfigStatus, McpClaudeAIProxyServerConfig
]
"""A server's configuration as reported in :class:`McpServerStatus`."""


class McpToolAnnotations(TypedDict, total=False):
    """Hints about an MCP tool as the CLI reports them: read-only, destructive, reaching the outside
    world.
    """
    readOnly: bool
    """The tool changes nothing."""
    destructive: bool
    """The tool may delete or overwrite."""
    openWorld: bool
    """The tool reaches outside systems."""


class McpToolInfo(TypedDict):
    """One tool of an MCP server, as the CLI reports it."""
    name: str
    """The tool's name."""
    description: NotRequired[str]
    """What it does."""
    annotations: NotRequired[McpToolAnnotations]
    """Its hints."""


class McpServerInfo(TypedDict):
    """The name and version an MCP server gave when it connected."""
    name: str
    """The name the server gave."""
    version: str
    """The version it gave."""


McpServerConnectionStatus = Literal["connected", "failed", "needs-auth", "pending", "disabled"]
"""The state of the CLI's connection to an MCP server."""


class McpServerStatus(TypedDict):
    """One MCP server in the answer of ``get_mcp_status()``: its state, configuration and tools."""
    name: str
    """The server's name in the configuration."""
    status: McpServerConnectionStatus
    """Its connection state."""
    serverInfo: NotRequired[McpServerInfo]
    """What the server said about itself, once connected."""
    error: NotRequired[str]
    """Why it failed, for ``status == "failed"``."""
    config: NotRequired[McpServerStatusConfig]
    """Its configuration."""
    scope: NotRequired[str]
    """Where it was configured (a settings level, a plugin, this SDK)."""
    tools: NotRequired[list[McpToolInfo]]
    """Its tools."""


class McpStatusResponse(TypedDict):
    """The answer of ``get_mcp_status()``: every MCP server the CLI knows."""
    mcpServers: list[McpServerStatus]
    """Every server, with its state."""


class ContextUsageCategory(TypedDict):
    """One category of the context window in ``get_context_usage()``: its name and tokens."""
    name: str
    """The category's name (system prompt, tools, messages, free space, ...)."""
    tokens: int
    """Tokens it takes."""
    color: str
    """The colour the CLI draws it in."""
    isDeferred: NotRequired[bool]
    """Whether it is loaded only when used (deferred tools)."""


class ContextUsageResponse(TypedDict):
    """The answer of ``get_context_usage()``: how the model's context window is filled, by category."""
    categories: list[ContextUsageCategory]
    """How the window is split, by category."""
    totalTokens: int
    """Tokens in use."""
    maxTokens: int
    """Tokens the window holds, as the CLI counts it (after its reserves)."""
    rawMaxTokens: int
    """The model's whole context window."""
    percentage: float
    """How full the window is, in percent."""
    model: str
    """The model whose window it is."""
    isAutoCompactEnabled: bool
    """Whether the CLI compacts by itself when the window fills."""
    memoryFiles: list[dict[str, Any]]
    """The memory files loaded (``CLAUDE.md`` ...), with their tokens."""
    mcpTools: list[dict[str, Any]]
    """MCP tools, with their tokens."""
    agents: list[dict[str, Any]]
    """Subagent definitions, with their tokens."""
    gridRows: list[list[dict[str, Any]]]
    """The CLI's grid picture of the window, row by row."""
    autoCompactThreshold: NotRequired[int]
    """Tokens at which it compacts by itself."""
    deferredBuiltinTools: NotRequired[list[dict[str, Any]]]
    """Built-in tools loaded only when used."""
    systemTools: NotRequired[list[dict[str, Any]]]
    """Built-in tools, with their tokens."""
    systemPromptSections: NotRequired[list[dict[str, Any]]]
    """The system prompt's sections, with their tokens."""
    slashCommands: NotRequired[dict[str, Any]]
    """Slash commands, with their tokens."""
    skills: NotRequired[dict[str, Any]]
    """Skills, with their tokens."""
    messageBreakdown: NotRequired[dict[str, Any]]
    """The conversation's tokens by kind of message."""
    apiUsage: NotRequired[dict[str, Any] | None]
    """The last model call's usage, when there was one."""


class SdkPluginConfig(TypedDict):
    """A local plugin directory."""

    type: Literal["local"]
    """Always ``"local"``."""
    path: str
    """The plugin's folder (``--plugin-dir``)."""


class SandboxNetworkConfig(TypedDict, total=False):
    """Network rules of the CLI's sandbox: domains allowed or denied, sockets, proxy ports."""
    allowedDomains: list[str]
    """Domains sandboxed commands may reach."""
    deniedDomains: list[str]
    """Domains always refused, even when ``allowedDomains`` matches."""
    allowManagedDomainsOnly: bool
    """In managed settings: only the managed ``allowedDomains`` count."""
    allowUnixSockets: list[str]
    """Unix socket paths sandboxed commands may use (an SSH agent's)."""
    allowAllUnixSockets: bool
    """Every Unix socket (less safe)."""
    allowLocalBinding: bool
    """Listening on local ports (macOS)."""
    allowMachLookup: list[str]
    """Mach/XPC service names allowed (macOS; a trailing ``*`` matches)."""
    httpProxyPort: int
    """The port of your own HTTP proxy."""
    socksProxyPort: int
    """The port of your own SOCKS5 proxy."""


SandboxIgnoreViolations: TypeAlias = dict[str, list[str]]
"""Sandbox violations to ignore, as a map from kind to patterns."""


class SandboxSettings(TypedDict, total=False):
    """Sandbox settings, merged into ``--settings`` as the official SDK does."""

    enabled: bool
    """Run Bash commands in the sandbox (macOS, Linux)."""
    autoAllowBashIfSandboxed: bool
    """Run sandboxed Bash commands without asking."""
    excludedCommands: list[str]
    """Commands that run outside the sandbox (``["docker"]``)."""
    allowUnsandboxedCommands: bool
    """Let a command ask to leave the sandbox; ``False``: every command stays in."""
    network: SandboxNetworkConfig
    """The sandbox's network rules."""
    ignoreViolations: SandboxIgnoreViolations
    """Violations not to report: command pattern to substrings of the violation."""
    enableWeakerNestedSandbox: bool
    """A weaker sandbox for unprivileged containers (Linux; less safe)."""


# --------------------------------------------------------------------------- content blocks


@dataclass
class TextBlock(_ShownBlock):
    """Text content block."""

    text: str
    """The text."""


@dataclass
class ThinkingBlock(_ShownBlock):
    """Thinking content block."""

    thinking: str
    """The model's thinking, as shown (may be empty when the display is ``"omitted"``)."""
    signature: str
    """The API's signature of the thinking, sent back with the history."""


@dataclass
class ToolUseBlock(_ShownBlock):
    """Tool use content block."""

    id: str
    """The call's id (``toolu_...``), which its :class:`ToolResultBlock` names."""
    name: str
    """The tool called (``Bash``, ``mcp__server__tool``)."""
    input: dict[str, Any]
    """The arguments the model wrote."""


@dataclass
class ToolResultBlock(_ShownBlock):
    """Tool result content block."""

    tool_use_id: str
    """The id of the call this answers."""
    content: str | list[dict[str, Any]] | None = None
    """What the tool gave back: text, or content blocks as dicts."""
    is_error: bool | None = None
    """``True`` when the tool failed or the call was refused."""


ServerToolName = Literal[
    "advisor",
    "web_search",
    "web_fetch",
    "code_execution",
    "bash_code_execution",
    "text_editor_code_execution",
    "tool_search_tool_regex",
    "tool_search_tool_bm25",
]
"""Tools the API itself runs (web search, web fetch, code execution, ...), named in
:class:`ServerToolUseBlock`.
"""


@dataclass
class ServerToolUseBlock(_ShownBlock):
    """A server-side tool call (web_search, web_fetch, advisor, ...)."""

    id: str
    """The call's id (``srvtoolu_...``)."""
    name: ServerToolName
    """The server tool called."""
    input: dict[str, Any]
    """Its arguments."""


@dataclass
class ServerToolResultBlock(_ShownBlock):
    """The result of a server-side tool call: ``content`` is the API's as sent
    (a dict, or a list for e.g. ``web_search_tool_result``)."""

    tool_use_id: str
    """The id of the call this answers."""
    content: dict[str, Any]
    """The API's result, as sent."""


@dataclass
class UnknownBlock(_ShownBlock):
    """Ours: a content block of a type this SDK does not model; nothing is dropped."""

    type: str
    """The block's ``type``."""
    data: dict[str, Any]
    """The whole block as the CLI sent it."""


ContentBlock = Union[
    TextBlock, ThinkingBlock, ToolUseBlock, ToolResultBlock, ServerToolUseBlock, ServerToolResultBlock, UnknownBlock
]
"""Any content block of a message: text, thinking, a tool call or its result, a server tool block,
or an :class:`UnknownBlock`.
"""

# --------------------------------------------------------------------------- messages

AssistantMessageError = Literal[
    "authentication_failed", "billing_error", "rate_limit", "invalid_request", "server_error", "unknown"
]
"""Why an assistant message carries an error instead of an answer."""
MessageOriginKind = Literal[
    "human",
    "channel",
    "peer",
    "task-notification",
    "coordinator",
    "unclassified",
    "observer",
    "auto-continuation",
    "observer-activity",
]
"""Where a user message came from: a person, another agent, a task notification, ..."""
TaskNotificationOriginSubkind = Literal["scheduled-trigger", "peer-send-message"]
"""What kind of task notification a user message came from."""
MessageOrigin = TypedDict(
    "MessageOrigin",
    {
        "kind": Required[MessageOriginKind],
        "server": str,
        "from": str,
        "name": str,
        "fromSession": str,
        "senderTaskId": str,
        "body": str,
        "verifiedPeerPid": int,
        "subkind": TaskNotificationOriginSubkind,
    },
    total=False,
)
"""Where a user message came from (``UserMessage.origin``), with the details of its kind. Only
``kind`` is always there (a functional TypedDict: ``from`` is a Python keyword):

* ``kind`` (:data:`MessageOriginKind`): a person, a channel, a peer session, a task notification, ...;
* ``server`` (``str``): the channel's MCP server, for ``channel``;
* ``from`` (``str``): who sent it, as the sender says (for replies, not to be trusted);
* ``name`` (``str``): the sender's name;
* ``fromSession`` (``str``): the sending session's id, to link back to it;
* ``senderTaskId`` (``str``): the background subagent that sent it;
* ``body`` (``str``): the message's text, for a peer's message;
* ``verifiedPeerPid`` (``int``): the process id of the connecting peer, read from the socket;
* ``subkind`` (:data:`TaskNotificationOriginSubkind`): what kind of task notification.
"""


@dataclass
class UserMessage(_Displayable):
    """A user message (a prompt, a tool result, or a replay)."""

    content: str | list[ContentBlock]
    """The prompt's text, or content blocks (tool results, text, images as dicts)."""
    uuid: str | None = None
    """The message's id in the transcript (for ``rewind_files``, ``resume_session_at``)."""
    parent_tool_use_id: str | None = None
    """The ``Agent`` tool call this belongs to, for a subagent's message; ``None`` for the main agent."""
    tool_use_result: dict[str, Any] | None = None
    """The tool's own structured result, for a tool-result message."""
    origin: MessageOrigin | None = None
    """Where the message came from, when not from the program (a task notification, another session)."""


@dataclass
class AssistantMessage(_Displayable):
    """An assistant message with content blocks."""

    content: list[ContentBlock]
    """Text, thinking and tool calls, in order."""
    model: str
    """The model that answered."""
    parent_tool_use_id: str | None = None
    """The ``Agent`` tool call this belongs to, for a subagent's message; ``None`` for the main agent."""
    error: AssistantMessageError | None = None
    """Set when the message carries an error instead of an answer (a refused key, a rate limit, ...)."""
    usage: dict[str, Any] | None = None
    """The API's token counts for this message."""
    message_id: str | None = None
    """The API's message id (``msg_...``); one answer split over several messages shares it."""
    stop_reason: str | None = None
    """Why the model stopped (``end_turn``, ``tool_use``, ``max_tokens``, ...), on the answer's last message."""
    session_id: str | None = None
    """The session it belongs to."""
    uuid: str | None = None
    """The message's id in the transcript."""
    user_message_uuid: str | None = None
    """The ``uuid`` of the prompt this answers, when the prompt was sent with one."""
    user_message_uuids: list[str] | None = None
    """The ``uuid`` of every prompt this turn took in, in order."""


@dataclass
class SystemMessage(_Displayable):
    """A system message; ``data`` is the whole wire dict."""

    subtype: str
    """What kind (``init``, ``compact_boundary``, ``task_started``, ...)."""
    data: dict[str, Any]
    """The whole message as the CLI sent it."""


class SystemInitMcpServer(TypedDict):
    """One MCP server listed in the session's ``init`` message."""
    name: str
    """The server's name."""
    status: str
    """Its connection state at start."""
    source: NotRequired[str]
    """Where it was configured."""


class SystemInitPlugin(TypedDict):
    """One plugin listed in the session's ``init`` message."""
    name: str
    """The plugin's name."""
    path: str
    """Its folder."""
    version: NotRequired[str]
    """Its version."""


class SystemInitPluginError(TypedDict):
    """A plugin that failed to load, listed in the session's ``init`` message."""
    plugin: str
    """The plugin that failed."""
    type: str
    """What kind of failure."""
    message: str
    """The error text."""
    path: NotRequired[str]
    """The plugin's folder."""


FastModeState = Literal["off", "cooldown", "on"]
"""Whether the CLI's fast mode is on, off, or cooling down."""
FastModeDisabledReason = Literal[
    "free",
    "preference",
    "extra_usage_disabled",
    "network_error",
    "unknown",
    "not_first_party",
    "disabled_by_env",
    "model_not_allowed",
    "sdk_opt_in_required",
    "pending",
]
"""Why fast mode is not available."""


class SystemInitData(TypedDict):
    """What ``SystemMessage.data`` holds for ``subtype == "init"``."""

    type: Literal["system"]
    """Always ``"system"``."""
    subtype: Literal["init"]
    """Always ``"init"``."""
    uuid: str
    """The message's id."""
    session_id: str
    """The session's id."""
    agents: NotRequired[list[str]]
    """The subagents the session knows."""
    apiKeySource: str
    """Where the API credential came from (``ANTHROPIC_API_KEY``, ``apiKeyHelper``, ``none`` for a login, ...)."""
    betas: NotRequired[list[str]]
    """The API betas turned on."""
    claude_code_version: str
    """The CLI's version."""
    cwd: str
    """The CLI's working folder."""
    tools: list[str]
    """The tools the model has."""
    mcp_servers: list[SystemInitMcpServer]
    """The MCP servers and their state."""
    model: str
    """The model the session uses."""
    permissionMode: PermissionMode
    """The permission mode the session started in."""
    slash_commands: list[str]
    """The slash commands available."""
    terminal_slash_commands: NotRequired[list[str]]
    """Slash commands only a terminal can run."""
    output_style: str
    """The output style in use."""
    skills: list[str]
    """The skills available."""
    plugins: list[SystemInitPlugin]
    """The plugins loaded."""
    plugin_errors: NotRequired[list[SystemInitPluginError]]
    """Plugins that failed to load."""
    fast_mode_state: NotRequired[FastModeState]
    """Whether fast mode is on."""
    fast_mode_disabled_reason: NotRequired[FastModeDisabledReason]
    """Why fast mode is not available."""
    capabilities: NotRequired[list[str]]
    """Protocol features this CLI offers (``interrupt_receipt_v1``, ...)."""


class TaskUsage(TypedDict):
    """What a background task has used so far: tokens, tool calls and time."""
    total_tokens: int
    """Tokens used."""
    tool_uses: int
    """Tool calls made."""
    duration_ms: int
    """Time taken, in milliseconds."""


TaskNotificationStatus = Literal["completed", "failed", "stopped"]
"""How a background task ended, in a :class:`TaskNotificationMessage`."""
TaskUpdatedStatus = Literal["pending", "running", "paused", "completed", "failed", "killed"]
"""A background task's state, in a :class:`TaskUpdatedMessage`."""
TERMINAL_TASK_STATUSES: frozenset[str] = frozenset({"completed", "failed", "stopped", "killed"})
"""The task states after which a task does nothing more."""


@dataclass
class TaskStartedMessage(SystemMessage):
    """A background task started."""

    task_id: str
    """The task's id (for ``stop_task``)."""
    description: str
    """What it does."""
    uuid: str
    """The message's id."""
    session_id: str
    """The session's id."""
    tool_use_id: str | None = None
    """The tool call that started it."""
    task_type: str | None = None
    """What kind of task (an agent, a shell command, ...)."""


@dataclass
class TaskProgressMessage(SystemMessage):
    """Progress of a background task."""

    task_id: str
    """The task's id."""
    description: str
    """What it does (or a one-line status)."""
    usage: TaskUsage
    """What it has used so far."""
    uuid: str
    """The message's id."""
    session_id: str
    """The session's id."""
    tool_use_id: str | None = None
    """The tool call that started it."""
    last_tool_name: str | None = None
    """The tool it called last."""


@dataclass
class TaskNotificationMessage(SystemMessage):
    """A background task finished."""

    task_id: str
    """The task's id."""
    status: TaskNotificationStatus
    """How it ended."""
    output_file: str
    """The file holding its output."""
    summary: str
    """What it did, in a few words."""
    uuid: str
    """The message's id."""
    session_id: str
    """The session's id."""
    tool_use_id: str | None = None
    """The tool call that started it."""
    usage: TaskUsage | None = None
    """What it used in all."""


@dataclass
class TaskUpdatedMessage(SystemMessage):
    """A background task's state changed (``patch`` holds what changed)."""

    task_id: str
    """The task's id."""
    patch: dict[str, Any]
    """The task's fields that changed, with their new values."""
    status: TaskUpdatedStatus | None = None
    """Its state now, when it changed."""
    session_id: str | None = None
    """The session's id."""
    uuid: str | None = None
    """The message's id."""


@dataclass
class MirrorErrorMessage(SystemMessage):
    """A transcript batch could not be written to the session store (subtype ``mirror_error``)."""

    key: "SessionKey | None" = None
    """The store key whose entries were not written."""
    error: str = ""
    """What went wrong."""


class ApiRetryNoResponse(TypedDict):
    """Ours (TypeScript's ``SDKAPIRetryMessage.no_response``): the API sent no response headers
    within the first-byte window (``CLAUDE_STREAM_FIRST_BYTE_TIMEOUT_MS``): how long the failed
    attempt waited for them, and how long the retry will."""

    waited_ms: int
    """How long the failed attempt waited for the response's headers, in milliseconds."""
    retry_wait_ms: int
    """How long the next attempt will wait for them, in milliseconds."""


@dataclass
class ApiRetryMessage(SystemMessage):
    """Ours (TypeScript's ``SDKAPIRetryMessage``): a model request failed and will be tried
    again after ``retry_delay_ms`` (subtype ``api_retry``). ``no_response``: set only when the
    API sent no headers in time (then ``max_retries`` is that cause's own cap, normally one);
    ``None`` otherwise and from CLIs that predate it."""

    attempt: int = 0
    """Which try failed (1 for the first)."""
    max_retries: int = 0
    """How many tries the CLI makes in all."""
    retry_delay_ms: int = 0
    """How long until the next try, in milliseconds."""
    error_status: int | None = None
    """The HTTP status of the failure, when there was a response."""
    error: str | None = None
    """What failed."""
    uuid: str | None = None
    """The message's id."""
    session_id: str | None = None
    """The session's id."""
    no_response: ApiRetryNoResponse | None = None
    """Set only when the API sent no response headers in time (``max_retries`` is then that cause's own cap);
    ``None`` otherwise, and from CLIs that predate it."""


@dataclass
class PermissionDeniedMessage(SystemMessage):
    """Ours (TypeScript's ``SDKPermissionDeniedMessage``): a tool call was denied without
    asking (``permission_prompts="none"``, a rule, the mode; subtype ``permission_denied``)."""

    tool_name: str = ""
    """The tool whose call was denied."""
    tool_use_id: str = ""
    """The call's id."""
    message: str = ""
    """What the model was told."""
    agent_id: str | None = None
    """The subagent that made the call."""
    decision_reason_type: str | None = None
    """What denied it (``rule``, ``mode``, ``hook``, ...)."""
    decision_reason: str | None = None
    """Why, in words."""
    uuid: str | None = None
    """The message's id."""
    session_id: str | None = None
    """The session's id."""


@dataclass
class SessionWritesLostMessage(SystemMessage):
    """Ours (TypeScript's ``SDKSessionWritesLostMessage``): the CLI could not write its
    transcript or config (a full disk: ``ENOSPC``/``EDQUOT``; subtype ``session_writes_lost``)."""

    error_code: str = ""
    """``ENOSPC`` (disk full) or ``EDQUOT`` (quota used up)."""
    lost: list[str] = field(default_factory=list)
    """What was not saved: ``"transcript"``, ``"global_config"`` (``~/.claude.json``)."""
    transcript_session_ids: list[str] | None = None
    """The sessions whose transcripts lost lines (a resume may miss part of them)."""
    uuid: str | None = None
    """The message's id."""
    session_id: str | None = None
    """The session's id."""


@dataclass
class HookEventMessage(SystemMessage):
    """A hook lifecycle event (``include_hook_events=True``)."""

    hook_event_name: str = ""
    """The hook event (``PreToolUse``, ``Stop``, ...)."""
    session_id: str | None = None
    """The session's id."""
    uuid: str | None = None
    """The message's id."""


@dataclass
class DeferredToolUse:
    """A tool call deferred to the host."""

    id: str
    """The call's id."""
    name: str
    """The tool called."""
    input: dict[str, Any]
    """Its arguments."""


class ModelUsage(TypedDict):
    """Tokens and cost of one model over the CLI session so far (``ResultMessage.model_usage``)."""
    inputTokens: int
    """Input tokens not read from the cache."""
    outputTokens: int
    """Output tokens."""
    cacheReadInputTokens: int
    """Input tokens read from the prompt cache."""
    cacheCreationInputTokens: int
    """Input tokens written to the prompt cache."""
    webSearchRequests: int
    """Web searches made."""
    costUSD: float
    """What this model cost, in US dollars."""
    contextWindow: int
    """The model's context window, in tokens."""
    maxOutputTokens: int
    """The most output tokens one call may give."""
    canonicalModel: NotRequired[str]
    """The model's full id, when the key is an alias."""
    provider: NotRequired[str]
    """Who served it (Anthropic, Bedrock, Vertex, ...)."""


@dataclass
class ResultMessage(_Displayable):
    """The end of a turn: outcome, cost, usage and timing."""

    subtype: str
    """``success``, or why not: ``error_max_turns``, ``error_max_budget_usd``, ``error_during_execution``, ..."""
    duration_ms: int
    """Time for the turn, in milliseconds."""
    duration_api_ms: int
    """Time spent waiting for the model, in milliseconds, for the CLI session so far."""
    is_error: bool
    """``True`` when the turn ended in an error (the query then raises :class:`ResultError`)."""
    num_turns: int
    """Model calls the turn took."""
    session_id: str
    """The session's id (for ``resume``)."""
    stop_reason: str | None = None
    """Why the model stopped, on its last call."""
    total_cost_usd: float | None = None
    """What the CLI session has cost so far, in US dollars (the CLI's running total)."""
    usage: dict[str, Any] | None = None
    """Token counts for the turn."""
    result: str | None = None
    """The answer's text (or the error's)."""
    structured_output: Any = None
    """The answer as data, when ``output_format`` asked for a JSON schema."""
    model_usage: dict[str, ModelUsage] | None = None
    """Tokens and cost per model, for the CLI session so far."""
    permission_denials: list[Any] | None = None
    """The tool calls refused during the turn."""
    deferred_tool_use: DeferredToolUse | None = None
    """A tool call left for the host to run, when the turn ended on one."""
    errors: list[str] | None = None
    """The error texts, for an error result."""
    api_error_status: int | None = None
    """The HTTP status of the failing model call (429, 500, 529, ...), for an error result."""
    uuid: str | None = None
    """The message's id."""
    terminal_reason: str | None = None
    """Why the turn's loop ended (``completed``, ``max_turns``, ``aborted_streaming`` after an interrupt, ...)."""
    origin: MessageOrigin | None = None
    """What started the turn, when it was not a prompt of the program (a task notification, ...)."""
    user_message_uuid: str | None = None
    """The ``uuid`` of the prompt that started the turn, when the prompt was sent with one."""
    user_message_uuids: list[str] | None = None
    """The ``uuid`` of every prompt the turn took in, in order (at most 64)."""
    # ours, from the TypeScript type: the turn's latency, where the CLI reports it (left out of
    # the repr, so a program that prints a result prints what it prints on the official SDK)
    ttft_ms: int | None = field(default=None, kw_only=True, repr=False)
    """Ours (TypeScript's): milliseconds to the first token, where the CLI reports it; not in the ``repr``."""
    ttft_stream_ms: int | None = field(default=None, kw_only=True, repr=False)
    """Ours (TypeScript's): milliseconds to the stream's first token; not in the ``repr``."""
    time_to_request_ms: int | None = field(default=None, kw_only=True, repr=False)
    """Ours (TypeScript's): milliseconds until the request was sent; not in the ``repr``."""
    resume_reason: str | None = field(default=None, kw_only=True, repr=False)
    """Ours (TypeScript's): why this turn goes on with one a restart interrupted; not in the ``repr``."""


@dataclass
class StreamEvent(_Displayable):
    """A raw Anthropic streaming event (``include_partial_messages=True``)."""

    uuid: str
    """The event's id."""
    session_id: str
    """The session's id."""
    event: dict[str, Any]
    """The Messages API's streaming event (``content_block_delta``, ...), as sent."""
    parent_tool_use_id: str | None = None
    """The ``Agent`` tool call this belongs to, for a subagent's stream."""
    user_message_uuid: str | None = None
    """The ``uuid`` of the prompt this answers, on the turn's first event."""
    user_message_uuids: list[str] | None = None
    """The ``uuid`` of every prompt the turn took in."""


RateLimitStatus = Literal["allowed", "allowed_warning", "rejected"]
"""Whether a request was within a rate limit, close to it, or refused."""
RateLimitType = Literal["five_hour", "seven_day", "seven_day_opus", "seven_day_sonnet", "overage"]
"""Which usage window a rate-limit event is about."""


@dataclass
class RateLimitInfo:
    """Rate limit status (``raw`` is the wire dict, a field here as in the official type)."""

    status: RateLimitStatus
    """Within the limit, close to it, or refused."""
    resets_at: int | None = None
    """When the window starts over (Unix time, seconds)."""
    rate_limit_type: RateLimitType | None = None
    """Which window (five hours, seven days, ...)."""
    utilization: float | None = None
    """How much of the window is used (0.0 to 1.0)."""
    overage_status: RateLimitStatus | None = None
    """The state of pay-as-you-go usage beyond the limit."""
    overage_resets_at: int | None = None
    """When that window starts over."""
    overage_disabled_reason: str | None = None
    """Why pay-as-you-go usage is not available."""
    raw: dict[str, Any] = field(default_factory=dict)
    """The whole wire dict, with what is not modelled here."""


@dataclass
class RateLimitEvent(_Displayable):
    """The rate limit status changed."""

    rate_limit_info: RateLimitInfo
    """The new state."""
    uuid: str
    """The message's id."""
    session_id: str
    """The session's id."""


@dataclass
class ConversationResetMessage(_Displayable):
    """The conversation was replaced (e.g. ``/clear``)."""

    new_conversation_id: str
    """The id of the conversation that replaced it."""
    uuid: str
    """The message's id."""
    session_id: str
    """The session's id."""


@dataclass
class PromptSuggestionMessage(_Displayable):
    """Ours (TypeScript's ``SDKPromptSuggestionMessage``): a next prompt the CLI suggests
    (``prompt_suggestions=True``)."""

    suggestion: str
    """The suggested prompt."""
    uuid: str
    """The message's id."""
    session_id: str
    """The session's id."""


class SubagentRetry(TypedDict):
    """Ours (TypeScript's ``SDKToolProgressMessage.subagent_retry``): the subagent an Agent
    tool call runs is retrying a failed model request (``error_status`` is ``None`` when the
    request got no HTTP response)."""

    agent_id: str
    """The subagent's id."""
    attempt: int
    """Which try failed (1 for the first)."""
    max_retries: int
    """How many tries it makes in all."""
    retry_delay_ms: int
    """How long until the next try, in milliseconds."""
    error_status: int | None
    """The HTTP status of the failure; ``None`` when the request got no response."""
    error_category: str
    """What kind of failure it was, as the CLI names it."""


@dataclass
class ToolProgressMessage(_Displayable):
    """Ours (TypeScript's ``SDKToolProgressMessage``): a long tool call is still running.

    TypeScript 0.3.333's optional fields, ``None`` when the CLI leaves them out (older CLIs
    do): ``heartbeat`` (the message only says the call is alive), ``subagent_type`` (the
    agent an Agent call runs), ``subagent_retry`` (that subagent retries a model request) and
    ``description`` (what the call is doing, in words)."""

    tool_use_id: str
    """The running call's id."""
    tool_name: str
    """Its tool."""
    elapsed_time_seconds: float
    """How long it has run."""
    uuid: str
    """The message's id."""
    session_id: str
    """The session's id."""
    parent_tool_use_id: str | None = None
    """The ``Agent`` tool call it belongs to, for a subagent's call."""
    task_id: str | None = None
    """The background task it belongs to."""
    heartbeat: bool | None = None
    """``True``: the message only says the call is still alive; ``None`` from CLIs that leave it out."""
    subagent_type: str | None = None
    """The agent an ``Agent`` tool call runs."""
    subagent_retry: SubagentRetry | None = None
    """That subagent is retrying a failed model request."""
    description: str | None = None
    """What the call is doing, in words."""


@dataclass
class ToolUseSummaryMessage(_Displayable):
    """Ours (TypeScript's ``SDKToolUseSummaryMessage``): a one-line summary of tool calls."""

    summary: str
    """The summary."""
    preceding_tool_use_ids: list[str]
    """The calls it sums up."""
    uuid: str
    """The message's id."""
    session_id: str
    """The session's id."""


@dataclass
class AuthStatusMessage(_Displayable):
    """Ours (TypeScript's ``SDKAuthStatusMessage``): progress of a sign-in."""

    is_authenticating: bool
    """Whether the sign-in is still going on."""
    output: list[str]
    """The lines the sign-in printed."""
    uuid: str
    """The message's id."""
    session_id: str
    """The session's id."""
    error: str | None = None
    """Why it failed."""


@dataclass
class UnknownMessage(_Displayable):
    """Ours: a message of a type this SDK does not model (or a malformed one), kept whole in ``data``."""

    type: str
    """The message's ``type`` (the name of its Python type when that is not a string)."""
    data: dict[str, Any]
    """The whole message as the CLI sent it."""


Message = Union[
    UserMessage,
    AssistantMessage,
    SystemMessage,
    ResultMessage,
    StreamEvent,
    RateLimitEvent,
    ConversationResetMessage,
    PromptSuggestionMessage,
    ToolProgressMessage,
    ToolUseSummaryMessage,
    AuthStatusMessage,
    UnknownMessage,
]
"""Any message ``query()`` and ``receive_messages()`` yield."""

# --------------------------------------------------------------------------- session store types


class SessionKey(TypedDict):
    """Where a transcript lives in a session store: the project, the session, and a sub-path for
    subagents.
    """
    project_key: str
    """The project: its folder, encoded as the CLI names it under ``~/.claude/projects``."""
    session_id: str
    """The session's id."""
    subpath: NotRequired[str]
    """A subagent's transcript within the session (``subagents/agent-<id>``); absent for the main one."""


class SessionStoreEntry(TypedDict, total=False):
    """One transcript entry as a session store keeps it (the CLI's JSON line, as a dictionary)."""
    type: Required[str]
    """The entry's kind (``user``, ``assistant``, ``summary``, ...)."""
    uuid: str
    """Its id, when it has one."""
    timestamp: str
    """When it was written (ISO 8601)."""


class SessionStoreListEntry(TypedDict):
    """One session in a store's listing: its id and when it last changed."""
    session_id: str
    """The session's id."""
    mtime: int
    """When it last changed (Unix time, milliseconds)."""


class SessionSummaryEntry(TypedDict):
    """A session's folded summary as a store may keep it, for fast listings."""
    session_id: str
    """The session's id."""
    mtime: int
    """When it last changed (Unix time, milliseconds)."""
    data: dict[str, Any]
    """The folded summary (see :func:`fold_session_summary`)."""


class SessionListSubkeysKey(TypedDict):
    """The session whose sub-paths (subagent transcripts) a store is asked to list."""
    project_key: str
    """The project."""
    session_id: str
    """The session."""


SessionStoreFlushMode = Literal["batched", "eager"]
"""When mirrored transcript entries are appended to a store: before each result (``batched``) or as
they arrive (``eager``).
"""


class SessionStore(Protocol):
    """Where session transcripts are kept besides (or instead of) the local disk.

    A store keeps lists of entries (JSON objects, opaque to it) under
    :class:`SessionKey` keys, appended in order. :meth:`append` and :meth:`load`
    are needed; the other methods are optional: a store leaves them as they are
    here (raising ``NotImplementedError``) and the SDK treats them as absent.
    Methods may be plain or ``async def``. See
    :func:`claude_sdkurl.testing.run_session_store_conformance` for the contract.
    """

    def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> Any:
        """Mirror a batch of transcript entries."""
        ...

    def load(self, key: SessionKey) -> Any:
        """Every entry of a session, or ``None`` for a key never written."""
        ...

    def list_sessions(self, project_key: str) -> Any:
        raise NotImplementedError

    def list_session_summaries(self, project_key: str) -> Any:
        raise NotImplementedError

    def delete(self, key: SessionKey) -> Any:
        raise NotImplementedError

    def list_subkeys(self, key: SessionListSubkeysKey) -> Any:
        raise NotImplementedError


@dataclass
class SDKSessionInfo:
    """A session as the listing functions give it: id, summary, times, size, title, first prompt,
    branch, folder and tag.
    """
    session_id: str
    """The session's id."""
    summary: str
    """A title to show: the custom title, the CLI's summary, or the first prompt."""
    last_modified: int
    """When it last changed (Unix time, milliseconds)."""
    file_size: int | None = None
    """Its transcript's size in bytes (local files only)."""
    custom_title: str | None = None
    """Its title, set by ``rename_session`` or by the CLI."""
    first_prompt: str | None = None
    """Its first prompt that says something."""
    git_branch: str | None = None
    """The git branch at its end."""
    cwd: str | None = None
    """Its working folder."""
    tag: str | None = None
    """Its tag (``tag_session``)."""
    created_at: int | None = None
    """When it started (Unix time, milliseconds), from its first entry."""
    archived: bool | None = field(default=None, kw_only=True, repr=False)  # ours, TypeScript's: see archive_session() (not in the repr: printed rows read as the official ones)
    """Ours (TypeScript's): whether ``archive_session`` archived it; ``None``: never; not in the ``repr``."""


@dataclass
class SessionMessage:
    """One user or assistant message of a session's conversation, as ``get_session_messages()``
    gives it.
    """
    type: Literal["user", "assistant", "system"]
    """``"user"``, ``"assistant"`` or ``"system"``."""
    uuid: str
    """The message's id."""
    session_id: str
    """The session's id."""
    message: Any
    """The Messages API message (``role``, ``content``, ...), as the transcript holds it."""
    parent_tool_use_id: str | None = None
    """For a subagent's message: the ``Agent`` tool call that started it."""
    parent_agent_id: str | None = None
    """For a subagent's message: the subagent that started this one; ``None`` for the main session's."""


@dataclass
class ForkSessionResult:
    """What ``fork_session()`` gives back: the new session's id."""
    session_id: str
    """The new session's id."""


# --------------------------------------------------------------------------- TypeScript's option types

PermissionPrompts = Literal["host", "none"]
"""Who answers permission prompts: this process (``"host"``) or nobody (``"none"``: denied)."""

Delivery = Literal["argv", "initialize"]
"""How MCP servers or plugins reach the CLI: on its command line or in ``initialize``."""


class AskUserQuestionConfig(TypedDict, total=False):
    """``tool_config["ask_user_question"]``: how the AskUserQuestion tool shows its choices."""

    preview_format: Literal["markdown", "html"]
    """How choices are previewed: ``"markdown"`` or ``"html"``."""


class ToolConfig(TypedDict, total=False):
    """``ClaudeAgentOptions.tool_config``: settings of built-in tools (TypeScript's ``toolConfig``)."""

    ask_user_question: AskUserQuestionConfig
    """Settings of the ``AskUserQuestion`` tool."""


class UserDialogRequest(TypedDict, total=False):
    """What ``on_user_dialog`` gets: the dialog kind, its payload, and the tool call it is about."""

    dialog_kind: str
    """Which dialog (one of ``supported_dialog_kinds``)."""
    payload: dict[str, Any]
    """What the dialog shows."""
    tool_use_id: str | None
    """The tool call it is about, if any."""


# --------------------------------------------------------------------------- thinking

ThinkingDisplay = Literal["summarized", "omitted"]
"""How thinking is shown in the answer: summarised, or left out."""


class ThinkingConfigAdaptive(TypedDict):
    """Thinking as the model decides, per turn."""
    type: Literal["adaptive"]
    """Always ``"adaptive"``."""
    display: NotRequired[ThinkingDisplay]
    """Summarised or omitted thinking."""


class ThinkingConfigEnabled(TypedDict):
    """Thinking on, with a token budget."""
    type: Literal["enabled"]
    """Always ``"enabled"``."""
    budget_tokens: int
    """Tokens the model may think with."""
    display: NotRequired[ThinkingDisplay]
    """Summarised or omitted thinking."""


class ThinkingConfigDisabled(TypedDict):
    """Thinking off."""
    type: Literal["disabled"]
    """Always ``"disabled"``."""


ThinkingConfig = Union[ThinkingConfigAdaptive, ThinkingConfigEnabled, ThinkingConfigDisabled]
"""The ``thinking`` option: adaptive, enabled with a budget, or disabled."""

# --------------------------------------------------------------------------- can_use_tool advisory


class CanUseToolShadowedWarning(UserWarning):
    """Some tool calls will be approved without asking ``can_use_tool``: a permission mode
    or an ``allowed_tools`` entry lets them through first.

    Silence it with ``warnings.filterwarnings("ignore", category=CanUseToolShadowedWarning)``.
    """


def _whole_tool_allowed(entry: str) -> str | None:
    """The tool an ``allowed_tools`` entry allows outright (``"Read"``, ``"Read()"``, ``"Read(*)"``), else None."""
    if not entry.strip():
        return None
    tool, paren, rest = entry.partition("(")
    if not paren:
        return entry
    return tool if tool and rest in (")", "*)") else None


def _shadowed_tools(options: "ClaudeAgentOptions") -> list[str]:
    """The tools ``options`` allow whole (an ``allowed_tools`` entry naming the tool with no
    rule, and ``Skill`` with ``skills="all"``): the CLI runs them without asking ``can_use_tool``."""
    allowed = list(options.allowed_tools)
    if options.skills == "all" and "Skill" not in allowed:
        allowed.append("Skill")
    return list(dict.fromkeys(t for e in allowed if (t := _whole_tool_allowed(e)) is not None))


def shadowed_can_use_tool_message(options: "ClaudeAgentOptions") -> str | None:
    """Why ``can_use_tool`` will not be asked for some calls, or None (as the official SDK words it)."""
    if not options.can_use_tool:
        return None
    if options.permission_mode == "bypassPermissions":
        return (
            "can_use_tool will not be invoked: permission_mode "
            "'bypassPermissions' auto-approves every tool call (except "
            "explicit deny rules) before the callback is consulted. To gate "
            "every tool call, use a PreToolUse hook instead."
        )
    shadowed = _shadowed_tools(options)
    if not shadowed:
        return None
    return (
        f"can_use_tool will not be invoked for: {', '.join(shadowed)}. "
        "An allowed_tools entry that allows a whole tool auto-approves it "
        "before the callback is consulted. To gate every tool call, use a "
        "PreToolUse hook; or narrow the entry so calls fall through to "
        "can_use_tool. Allow rules from settings files can also shadow the "
        "callback but are not visible here."
    )


def warn_if_can_use_tool_shadowed(options: "ClaudeAgentOptions") -> None:
    """Warn (``CanUseToolShadowedWarning``) when ``can_use_tool`` will be skipped for some calls.

    The warning is attributed to this line, whoever calls (``query()``, a client's
    connect): under Python's default filter each message is then shown once per process,
    as the official SDK's is, not once per call site of the user's.
    """
    message = shadowed_can_use_tool_message(options)
    if message is not None:
        warnings.warn(message, CanUseToolShadowedWarning, stacklevel=1)


# --------------------------------------------------------------------------- options


@dataclass
class ClaudeAgentOptions:
    """Options for :func:`query` and :class:`ClaudeClient`.

    Every field of the official ``ClaudeAgentOptions`` is here with the same name, default and
    position. After them, keyword-only: five fields of ours (``transport`` to
    ``spawn_claude_code_process``), then the TypeScript SDK's (0.3.333) options the official
    Python SDK has not, in snake_case, with TypeScript's defaults and wire form. Each field below
    says which it is.
    """

    tools: list[str] | ToolsPreset | None = None
    """The built-in tools the model has: a list of names (``[]``: none), the ``claude_code`` preset, or ``None``
    for the CLI's default set."""
    allowed_tools: list[str] = field(default_factory=list)
    """Tools or rules (``"Read"``, ``"Bash(git *)"``) that run without asking; the others still exist and go to
    ``permission_mode`` and ``can_use_tool``."""
    system_prompt: str | SystemPromptPreset | SystemPromptCustom | SystemPromptFile | None = None
    """A string (your own prompt), a preset (Claude Code's, maybe with ``append``), a custom dict or a file;
    ``None``: an empty prompt."""
    mcp_servers: dict[str, McpServerConfig] | str | Path = field(default_factory=dict)
    """MCP servers by name (in-process ones from :func:`create_sdk_mcp_server` too), or a config file's path or
    JSON text for ``--mcp-config``."""
    strict_mcp_config: bool = False
    """Use only the servers of ``mcp_servers``, none from the project's ``.mcp.json``, settings or plugins."""
    permission_mode: PermissionMode | None = None
    """How calls no rule settles are treated: ask, accept edits, plan, bypass, deny (``dontAsk``) or a
    classifier (``auto``); ``None``: the CLI's default."""
    continue_conversation: bool = False
    """Go on with the newest conversation in ``cwd`` (not with ``resume``)."""
    resume: str | None = None
    """The id of a session to go on with."""
    session_id: str | None = None
    """A UUID for the new session instead of one the CLI picks (with ``resume``/``continue_conversation`` only
    together with ``fork_session``)."""
    max_turns: int | None = None
    """Agent turns (model calls) a query may take before it stops with ``error_max_turns``."""
    max_budget_usd: float | None = None
    """US dollars the CLI may spend before it stops with ``error_max_budget_usd``."""
    disallowed_tools: list[str] = field(default_factory=list)
    """Tools taken away from the model, even where a rule would allow them."""
    model: str | None = None
    """The model (``"claude-sonnet-4-6"``, an alias); ``None``: the CLI's default."""
    fallback_model: str | None = None
    """The model used when the first one is overloaded or unavailable."""
    betas: list[SdkBeta] = field(default_factory=list)
    """Messages API betas to turn on (``"context-1m-2025-08-07"``)."""
    permission_prompt_tool_name: str | None = None
    """An MCP tool that answers permission questions instead of ``can_use_tool``."""
    cwd: str | Path | None = None
    """The CLI's working folder; ``None``: this process's."""
    cli_path: str | Path | None = None
    """The ``claude`` binary to run; ``None``: found as the migration table's "CLI lookup" row says."""
    settings: str | None = None
    """A settings file's path or JSON text, loaded as the CLI's flag settings (merged with ``sandbox`` when both
    are set)."""
    add_dirs: list[str | Path] = field(default_factory=list)
    """Folders besides ``cwd`` the tools may reach (``--add-dir``)."""
    env: dict[str, str] = field(default_factory=dict)
    """Variables set for the CLI over this process's environment."""
    extra_args: dict[str, str | None] = field(default_factory=dict)
    """More CLI flags, without ``--``: ``{"flag": "value"}``, ``None`` as the value for a flag that takes none."""
    max_buffer_size: int | None = None
    """The longest line accepted from the CLI, in bytes; ``None``: 256 MiB."""
    debug_stderr: Any = sys.stderr  # deprecated and ignored, as in the official SDK
    """Deprecated and ignored, as in the official SDK: use ``stderr``."""
    stderr: Callable[[str], None] | None = None
    """Called with each line the CLI writes on its standard error."""
    can_use_tool: CanUseTool | None = None
    """Answers the tool calls that would ask (plain or ``async def``); not called for calls a rule or the mode
    already allows."""
    hooks: dict[HookEvent, list[HookMatcher]] | None = None
    """Callbacks by hook event; the CLI runs the matchers of one event at once, not in turn."""
    user: str | None = None
    """Run the CLI as this system user (needs the right to switch users)."""
    include_partial_messages: bool = False
    """Also yield a :class:`StreamEvent` for each streaming event, as the text arrives."""
    include_hook_events: bool = False
    """Also yield a :class:`HookEventMessage` for each hook the CLI runs."""
    forward_subagent_text: bool = False
    """Also yield subagents' text and thinking, not only their tool calls."""
    verbatim_prompts: bool = False
    """Send every prompt as written: no ``@file`` expansion and no slash commands (for text your user did not
    type); CLI 2.1.248 and newer."""
    fork_session: bool = False
    """With ``resume``: go on in a new session with a new id, leaving the old one as it was."""
    resume_session_at: str | None = None
    """With ``resume``: load the conversation only up to this message's ``uuid``."""
    resume_drops_turn: str | None = None
    """With ``resume_session_at``: the prompt ``uuid`` of the one turn the cut may drop; the CLI refuses the
    resume if more would go."""
    agents: dict[str, AgentDefinition] | None = None
    """Subagents by name, which the model can start with the ``Agent`` tool."""
    setting_sources: list[SettingSource] | None = None
    """Which settings files the CLI reads (``user``, ``project``, ``local``); ``[]``: none; ``None``: all, as
    the CLI does (with ``skills``: user and project)."""
    skills: list[str] | Literal["all"] | None = None
    """Skills the model may use, by name, or ``"all"``; each becomes an allowed ``Skill(name)`` rule."""
    sandbox: SandboxSettings | None = None
    """Sandbox settings for Bash commands, merged into ``--settings``."""
    plugins: list[SdkPluginConfig] = field(default_factory=list)
    """Local plugin folders to load."""
    max_thinking_tokens: int | None = None
    """Deprecated form of ``thinking``: a thinking budget in tokens."""
    thinking: ThinkingConfig | None = None
    """Thinking: adaptive, enabled with a budget, or disabled; wins over ``max_thinking_tokens``."""
    effort: EffortLevel | None = None
    """How hard the model tries: ``low`` to ``max`` (``--effort``)."""
    output_format: dict[str, Any] | None = None
    """``{"type": "json_schema", "schema": {...}}``: the answer as data, in ``ResultMessage.structured_output``."""
    enable_file_checkpointing: bool = False
    """Keep file versions so ``rewind_files()`` can restore them."""
    session_store: SessionStore | None = None
    """A store the transcript is mirrored to, and resumed from (see the sessions guide)."""
    session_store_flush: SessionStoreFlushMode = "batched"
    """When mirrored entries reach the store: ``"batched"`` (before each result) or ``"eager"`` (as they come)."""
    load_timeout_ms: int = 60_000
    """Milliseconds each store call may take while a session is resumed from ``session_store`` (then
    :class:`SessionStoreError`)."""
    task_budget: TaskBudget | None = None
    """A token budget for the whole task (``--task-budget``)."""
    client_app: str | None = None
    """Your app's name and version for the User-Agent header (``"my-app/1.0"``)."""
    # ---- ours (keyword-only, so the official positional order is kept)
    transport: TransportName = field(default="auto", kw_only=True)
    """Ours: ``"auto"`` picks from ``claude --version`` (WebSocket for 2.1.120 and older, else stdio); or force
    ``"websocket"``/``"stdio"``."""
    control_timeout: float = field(default=60.0, kw_only=True)
    """Ours: seconds a control request of ours (``interrupt``, ``set_model``, ...) waits for its answer."""
    callback_timeout: float | None = field(default=None, kw_only=True)
    """Ours: seconds a ``can_use_tool``, hook, MCP tool or elicitation callback may take before the CLI is
    answered with an error, or a guarding hook's denial; ``None``: no limit (a hook is still bound by its
    matcher's ``timeout``, else 600 s)."""
    on_elicitation: Callable[[dict[str, Any]], Any] | None = field(default=None, kw_only=True)
    """Ours: answers an MCP server's request for input: gets the request dict (``mcp_server_name``, ``message``,
    ``requested_schema``, ...), returns ``{"action": "accept"|"decline"|"cancel", "content": {...}}``; unset:
    decline."""
    spawn_claude_code_process: Callable[[Any], Any] | list[str] | None = field(default=None, kw_only=True)
    """Ours (TypeScript's ``spawnClaudeCodeProcess``): run the CLI elsewhere: a function of
    :class:`SpawnOptions` or a command prefix (``["ssh", "host", "--"]``)."""
    # ---- the TypeScript SDK's options the official Python SDK lacks (same names in snake_case,
    # same defaults, same wire form; see docs/guide/typescript.md)
    agent: str | None = field(default=None, kw_only=True)
    """TypeScript's: the agent the main thread runs as (``--agent``)."""
    permission_prompts: PermissionPrompts | None = field(default=None, kw_only=True)
    """TypeScript's (``--permission-prompts``): ``"host"`` (this process answers; the CLI's default) or
    ``"none"`` (whatever would ask is denied at once, ``can_use_tool`` never called)."""
    persist_session: bool = field(default=True, kw_only=True)
    """TypeScript's: ``False`` keeps no transcript on disk (``--no-session-persistence``; not with
    ``session_store``)."""
    title: str | None = field(default=None, kw_only=True)
    """TypeScript's: the session's title (sent in ``initialize``)."""
    tool_aliases: dict[str, str] | None = field(default=None, kw_only=True)
    """TypeScript's: tool names the model may call that stand for others (``{"Bash": "mcp__ws__bash"}``; one
    hop; sent in ``initialize``)."""
    tool_config: ToolConfig | None = field(default=None, kw_only=True)
    """TypeScript's: settings of built-in tools (``{"ask_user_question": {"preview_format": "html"}}``; the CLI
    reads it from its environment)."""
    mcp_servers_delivery: Delivery | None = field(default=None, kw_only=True)
    """TypeScript's: how external MCP servers reach the CLI. ``None``: TypeScript 0.3.333's default,
    ``"initialize"`` (``--await-initialize``), on every CLI that reads them there (2.1.326 and later over
    stdio), so their ``env`` and ``headers`` stay off the command line other users of the machine can read;
    ``"argv"`` on one that cannot (2.1.120, the WebSocket CLI). ``"initialize"``: always (refused for a CLI
    that cannot); ``"argv"``: on ``--mcp-config``, as the official Python SDK sends them."""
    plugin_delivery: Delivery = field(default="argv", kw_only=True)
    """TypeScript's: plugins on the command line (``"argv"``) or in ``initialize`` (``--await-initialize``)."""
    prompt_suggestions: bool | None = field(default=None, kw_only=True)
    """TypeScript's: the CLI suggests a next prompt after each turn (:class:`PromptSuggestionMessage`; sent in
    ``initialize``)."""
    agent_progress_summaries: bool | None = field(default=None, kw_only=True)
    """TypeScript's: subagents report a one-line progress summary (sent in ``initialize``)."""
    plan_mode_instructions: str | None = field(default=None, kw_only=True)
    """TypeScript's: the workflow text of plan mode's reminder, in place of the default (sent in
    ``initialize``)."""
    managed_settings: dict[str, Any] | None = field(default=None, kw_only=True)
    """TypeScript's: policy-tier settings, only the keys a policy may bind (``--managed-settings``)."""
    project_config_root: str | Path | None = field(default=None, kw_only=True)
    """TypeScript's: the trusted checkout whose settings, hooks and MCP servers apply when ``cwd`` is a worktree
    of it."""
    on_user_dialog: Callable[[UserDialogRequest], Any] | None = field(default=None, kw_only=True)
    """TypeScript's: a control handler answering the CLI's ``request_user_dialog``: gets a
    :class:`UserDialogRequest`, returns ``{"behavior": "completed", "result": ...}``, ``{"behavior":
    "cancelled"}``, or ``None`` to leave it unanswered."""
    supported_dialog_kinds: list[str] | None = field(default=None, kw_only=True)
    """TypeScript's: the dialog kinds ``on_user_dialog`` can show; the CLI asks only for these (sent in
    ``initialize``)."""
    per_task_stop_affordance: bool | None = field(default=None, kw_only=True)
    """TypeScript's: says this program can stop single background tasks, so an interrupt spares them (sent in
    ``initialize``)."""
    allow_dangerously_skip_permissions: bool = field(default=False, kw_only=True)
    """TypeScript's: allows switching to ``bypassPermissions`` later in the session."""
    debug: bool = field(default=False, kw_only=True)
    """TypeScript's: the CLI writes debug logs (``--debug``)."""
    debug_file: str | Path | None = field(default=None, kw_only=True)
    """TypeScript's: the file the CLI writes debug logs to (``--debug-file``)."""

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        """How IPython and Jupyter show the options (a cell's last line): as ``repr()``, with the
        values of ``env`` variables named like a secret hidden, so an API key set there does not
        land in a saved notebook. ``repr()`` and ``print()`` are the dataclass's own."""
        shown = copy.copy(self)
        shown.env = {k: ("<hidden>" if _SECRET_NAME.search(k) else v) for k, v in (self.env or {}).items()}
        p.text(repr(shown))


# a variable whose name says it holds a secret (shown hidden here; its value scrubbed by the relay)
_SECRET_NAME = re.compile(r"(?i)key|token|secret|password|passwd|credential|auth")


# --------------------------------------------------------------------------- control protocol (wire shapes)


class SDKControlInterruptRequest(TypedDict):
    """The control request that interrupts the running turn."""
    subtype: Literal["interrupt"]
    """Always ``"interrupt"``."""


class SDKControlPermissionRequest(TypedDict):
    """The CLI's control request asking whether a tool call may run (answered by ``can_use_tool``)."""
    subtype: Literal["can_use_tool"]
    """Always ``"can_use_tool"``."""
    tool_name: str
    """The tool the model called."""
    input: dict[str, Any]
    """Its arguments."""
    permission_suggestions: list[dict[str, Any]] | None
    """Permission updates the CLI suggests (wire form)."""
    blocked_path: str | None
    """The path that made the CLI ask, if any."""
    decision_reason: NotRequired[str]
    """Why the CLI asks."""
    title: NotRequired[str]
    """The whole question, as the CLI would show it."""
    display_name: NotRequired[str]
    """A short name for the action."""
    description: NotRequired[str]
    """A subtitle for the question."""
    tool_use_id: str
    """The call's id."""
    agent_id: NotRequired[str]
    """The subagent making the call."""


class SDKControlInitializeRequest(TypedDict):
    """The control request that opens a session: hooks, agents and prompt settings."""
    subtype: Literal["initialize"]
    """Always ``"initialize"``."""
    hooks: dict[HookEvent, Any] | None
    """The hook matchers by event, with the callback ids the CLI calls back."""
    agents: NotRequired[dict[str, dict[str, Any]]]
    """The subagents (``ClaudeAgentOptions.agents``), in wire form."""
    excludeDynamicSections: NotRequired[bool]
    """A preset prompt's ``exclude_dynamic_sections``."""
    systemPromptSnapshot: NotRequired[bool]
    """The system prompt's ``snapshot``."""
    skills: NotRequired[list[str]]
    """``ClaudeAgentOptions.skills``, as a list."""
    forwardSubagentText: NotRequired[bool]
    """``ClaudeAgentOptions.forward_subagent_text``."""


class SDKControlSetPermissionModeRequest(TypedDict):
    """The control request that changes the permission mode."""
    subtype: Literal["set_permission_mode"]
    """Always ``"set_permission_mode"``."""
    mode: PermissionMode
    """The new mode."""


class SDKHookCallbackRequest(TypedDict):
    """The CLI's control request that runs one of the program's hook callbacks."""
    subtype: Literal["hook_callback"]
    """Always ``"hook_callback"``."""
    callback_id: str
    """Which callback (as registered in ``initialize``)."""
    input: Any
    """The hook's input."""
    tool_use_id: str | None
    """The tool call it is about, if any."""


class SDKControlMcpMessageRequest(TypedDict):
    """The CLI's control request carrying a JSON-RPC message for an in-process MCP server."""
    subtype: Literal["mcp_message"]
    """Always ``"mcp_message"``."""
    server_name: str
    """The in-process server it is for."""
    message: Any
    """The JSON-RPC message."""


class SDKControlRewindFilesRequest(TypedDict):
    """The control request that puts files back as they were at a user message."""
    subtype: Literal["rewind_files"]
    """Always ``"rewind_files"``."""
    user_message_id: str
    """The user message whose files to restore."""


class SDKControlMcpReconnectRequest(TypedDict):
    """The control request that reconnects an MCP server."""
    subtype: Literal["mcp_reconnect"]
    """Always ``"mcp_reconnect"``."""
    serverName: str
    """The server to reconnect."""


class SDKControlMcpToggleRequest(TypedDict):
    """The control request that turns an MCP server on or off."""
    subtype: Literal["mcp_toggle"]
    """Always ``"mcp_toggle"``."""
    serverName: str
    """The server."""
    enabled: bool
    """On or off."""


class SDKControlStopTaskRequest(TypedDict):
    """The control request that stops a background task."""
    subtype: Literal["stop_task"]
    """Always ``"stop_task"``."""
    task_id: str
    """The task to stop."""


class SDKControlRequest(TypedDict):
    """A control request frame: its id and the request."""
    type: Literal["control_request"]
    """Always ``"control_request"``."""
    request_id: str
    """The id its answer names."""
    request: (
        SDKControlInterruptRequest
        | SDKControlPermissionRequest
        | SDKControlInitializeRequest
        | SDKControlSetPermissionModeRequest
        | SDKHookCallbackRequest
        | SDKControlMcpMessageRequest
        | SDKControlRewindFilesRequest
        | SDKControlMcpReconnectRequest
        | SDKControlMcpToggleRequest
        | SDKControlStopTaskRequest
    )
    """The request itself (``subtype`` says which)."""


class ControlResponse(TypedDict):
    """A successful answer to a control request."""
    subtype: Literal["success"]
    """Always ``"success"``."""
    request_id: str
    """The request it answers."""
    response: dict[str, Any] | None
    """The answer's payload."""


class ControlErrorResponse(TypedDict):
    """A failed answer to a control request, with the error text."""
    subtype: Literal["error"]
    """Always ``"error"``."""
    request_id: str
    """The request it answers."""
    error: str
    """The error text."""


class SDKControlResponse(TypedDict):
    """A control response frame."""
    type: Literal["control_response"]
    """Always ``"control_response"``."""
    response: ControlResponse | ControlErrorResponse
    """The answer or the error."""
