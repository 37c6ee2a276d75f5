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
    preset: Literal["claude_code"]
    append: NotRequired[str]
    exclude_dynamic_sections: NotRequired[bool]
    snapshot: NotRequired[bool]


class SystemPromptCustom(TypedDict):
    """A custom system prompt (same as passing a string)."""

    type: Literal["custom"]
    prompt: str
    snapshot: NotRequired[bool]


class SystemPromptFile(TypedDict):
    """A system prompt read by the CLI from a file."""

    type: Literal["file"]
    path: str


class TaskBudget(TypedDict):
    """API-side task budget in tokens."""

    total: int


class ToolsPreset(TypedDict):
    """All of Claude Code's default tools."""

    type: Literal["preset"]
    preset: Literal["claude_code"]


@dataclass
class AgentDefinition:
    """A custom subagent, sent to the CLI in ``initialize``."""

    description: str
    prompt: str
    tools: list[str] | None = None
    disallowedTools: list[str] | None = None  # noqa: N815
    model: str | None = None
    skills: list[str] | None = None
    memory: Literal["user", "project", "local"] | None = None
    mcpServers: list[str | dict[str, Any]] | None = None  # noqa: N815
    initialPrompt: str | None = None  # noqa: N815
    maxTurns: int | None = None  # noqa: N815
    background: bool | None = None
    effort: EffortLevel | int | None = None
    permissionMode: PermissionMode | None = None  # noqa: N815


# --------------------------------------------------------------------------- permissions

PermissionUpdateDestination = Literal["userSettings", "projectSettings", "localSettings", "session"]
"""Where a permission update is kept: a settings file, or only this session."""
PermissionBehavior = Literal["allow", "deny", "ask"]
"""What a permission rule does with a matching call: allow it, deny it, or ask."""


@dataclass
class PermissionRuleValue:
    """A permission rule: a tool, optionally narrowed by rule content."""

    tool_name: str
    rule_content: str | None = None


_UPDATE_TYPES = ("addRules", "replaceRules", "removeRules", "setMode", "addDirectories", "removeDirectories")


@dataclass
class PermissionUpdate:
    """A change to permission rules, mode or directories."""

    type: Literal["addRules", "replaceRules", "removeRules", "setMode", "addDirectories", "removeDirectories"]
    rules: list[PermissionRuleValue] | None = None
    behavior: PermissionBehavior | None = None
    mode: PermissionMode | None = None
    directories: list[str] | None = None
    destination: PermissionUpdateDestination | None = None

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
    suggestions: list[PermissionUpdate] = field(default_factory=list)
    tool_use_id: str | None = None
    agent_id: str | None = None
    blocked_path: str | None = None
    decision_reason: str | None = None
    title: str | None = None
    display_name: str | None = None
    description: str | None = None


@dataclass
class PermissionResultAllow:
    """Allow the tool call, optionally with a replaced input."""

    behavior: Literal["allow"] = "allow"
    updated_input: dict[str, Any] | None = None
    updated_permissions: list[PermissionUpdate] | None = None


@dataclass
class PermissionResultDeny:
    """Deny the tool call; ``interrupt`` also stops the turn."""

    behavior: Literal["deny"] = "deny"
    message: str = ""
    interrupt: bool = False


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


class BaseHookInput(TypedDict):
    """Fields present in every hook input."""

    session_id: str
    transcript_path: str
    cwd: str
    permission_mode: NotRequired[str]
    prompt_id: NotRequired[str]
    effort: NotRequired[HookEffort]


class _SubagentContextMixin(TypedDict, total=False):
    agent_id: str
    agent_type: str


class PreToolUseHookInput(BaseHookInput, _SubagentContextMixin):
    """What a ``PreToolUse`` hook receives: the tool about to run and its input."""
    hook_event_name: Literal["PreToolUse"]
    tool_name: str
    tool_input: dict[str, Any]
    tool_use_id: str


class PostToolUseHookInput(BaseHookInput, _SubagentContextMixin):
    """What a ``PostToolUse`` hook receives: the tool that ran, its input and its response."""
    hook_event_name: Literal["PostToolUse"]
    tool_name: str
    tool_input: dict[str, Any]
    tool_response: Any
    tool_use_id: str
    duration_ms: NotRequired[int]


class PostToolUseFailureHookInput(BaseHookInput, _SubagentContextMixin):
    """What a ``PostToolUseFailure`` hook receives: the tool that failed, its input and the error."""
    hook_event_name: Literal["PostToolUseFailure"]
    tool_name: str
    tool_input: dict[str, Any]
    tool_use_id: str
    error: str
    is_interrupt: NotRequired[bool]
    duration_ms: NotRequired[int]


class UserPromptSubmitHookInput(BaseHookInput):
    """What a ``UserPromptSubmit`` hook receives: the prompt before the model sees it."""
    hook_event_name: Literal["UserPromptSubmit"]
    prompt: str


class BackgroundTaskSummary(TypedDict):
    """One background task still running when the CLI is about to stop (part of a ``Stop`` hook's
    input).
    """
    id: str
    type: str
    status: str
    description: str
    command: NotRequired[str]
    agent_type: NotRequired[str]
    server: NotRequired[str]
    tool: NotRequired[str]
    name: NotRequired[str]


class SessionCronSummary(TypedDict):
    """One scheduled prompt of the session (part of a ``Stop`` hook's input)."""
    id: str
    schedule: str
    recurring: bool
    prompt: str


class StopHookInput(BaseHookInput):
    """What a ``Stop`` hook receives when the main agent is about to end its turn."""
    hook_event_name: Literal["Stop"]
    stop_hook_active: bool
    last_assistant_message: NotRequired[str]
    background_tasks: NotRequired[list[BackgroundTaskSummary]]
    session_crons: NotRequired[list[SessionCronSummary]]


class SubagentStopHookInput(BaseHookInput):
    """What a ``SubagentStop`` hook receives when a subagent is about to finish."""
    hook_event_name: Literal["SubagentStop"]
    stop_hook_active: bool
    agent_id: str
    agent_transcript_path: str
    agent_type: str
    last_assistant_message: NotRequired[str]
    background_tasks: NotRequired[list[BackgroundTaskSummary]]
    session_crons: NotRequired[list[SessionCronSummary]]


class PreCompactHookInput(BaseHookInput):
    """What a ``PreCompact`` hook receives before the conversation is compacted (by hand or
    automatically).
    """
    hook_event_name: Literal["PreCompact"]
    trigger: Literal["manual", "auto"]
    custom_instructions: str | None


class NotificationHookInput(BaseHookInput):
    """What a ``Notification`` hook receives when the CLI would notify the user."""
    hook_event_name: Literal["Notification"]
    message: str
    title: NotRequired[str]
    notification_type: str


class SubagentStartHookInput(BaseHookInput):
    """What a ``SubagentStart`` hook receives when a subagent starts."""
    hook_event_name: Literal["SubagentStart"]
    agent_id: str
    agent_type: str


class PermissionRequestHookInput(BaseHookInput, _SubagentContextMixin):
    """What a ``PermissionRequest`` hook receives when a tool call would ask for permission."""
    hook_event_name: Literal["PermissionRequest"]
    tool_name: str
    tool_input: dict[str, Any]
    permission_suggestions: NotRequired[list[Any]]


class SessionStartHookInput(BaseHookInput):
    """Ours: the official types stop at the ten events above; the CLI sends these too."""

    hook_event_name: Literal["SessionStart"]
    source: Literal["startup", "resume", "clear", "compact"]


class SessionEndHookInput(BaseHookInput):
    """Ours, as :class:`SessionStartHookInput`."""

    hook_event_name: Literal["SessionEnd"]
    reason: str


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
    permissionDecision: NotRequired[Literal["allow", "deny", "ask", "defer"]]
    permissionDecisionReason: NotRequired[str]
    updatedInput: NotRequired[dict[str, Any]]
    additionalContext: NotRequired[str]


class PostToolUseHookSpecificOutput(TypedDict):
    """A ``PostToolUse`` hook's own answer: extra context for the model, or a replaced tool output."""
    hookEventName: Literal["PostToolUse"]
    additionalContext: NotRequired[str]
    updatedToolOutput: NotRequired[Any]
    updatedMCPToolOutput: NotRequired[Any]


class PostToolUseFailureHookSpecificOutput(TypedDict):
    """A ``PostToolUseFailure`` hook's own answer: extra context for the model."""
    hookEventName: Literal["PostToolUseFailure"]
    additionalContext: NotRequired[str]


class UserPromptSubmitHookSpecificOutput(TypedDict):
    """A ``UserPromptSubmit`` hook's own answer: extra context, a session title, or the prompt
    suppressed.
    """
    hookEventName: Literal["UserPromptSubmit"]
    additionalContext: NotRequired[str]
    sessionTitle: NotRequired[str]
    suppressOriginalPrompt: NotRequired[bool]


class UserPromptExpansionHookSpecificOutput(TypedDict):
    """A ``UserPromptExpansion`` hook's own answer: extra context, or the original prompt
    suppressed.
    """
    hookEventName: Literal["UserPromptExpansion"]
    additionalContext: NotRequired[str]
    suppressOriginalPrompt: NotRequired[bool]


class SessionStartHookSpecificOutput(TypedDict):
    """A ``SessionStart`` hook's own answer: extra context, a first user message, a title, paths to
    watch.
    """
    hookEventName: Literal["SessionStart"]
    additionalContext: NotRequired[str]
    initialUserMessage: NotRequired[str]
    sessionTitle: NotRequired[str]
    watchPaths: NotRequired[list[str]]
    reloadSkills: NotRequired[bool]


class NotificationHookSpecificOutput(TypedDict):
    """A ``Notification`` hook's own answer: extra context."""
    hookEventName: Literal["Notification"]
    additionalContext: NotRequired[str]


class SubagentStartHookSpecificOutput(TypedDict):
    """A ``SubagentStart`` hook's own answer: extra context for the subagent."""
    hookEventName: Literal["SubagentStart"]
    additionalContext: NotRequired[str]


class PermissionRequestHookSpecificOutput(TypedDict):
    """A ``PermissionRequest`` hook's own answer: the decision for the call."""
    hookEventName: Literal["PermissionRequest"]
    decision: dict[str, Any]


class PostToolBatchHookSpecificOutput(TypedDict):
    """A ``PostToolBatch`` hook's own answer: extra context after a batch of parallel tool calls."""
    hookEventName: Literal["PostToolBatch"]
    additionalContext: NotRequired[str]


class StopHookSpecificOutput(TypedDict):
    """A ``Stop`` hook's own answer: extra context."""
    hookEventName: Literal["Stop"]
    additionalContext: NotRequired[str]


class SubagentStopHookSpecificOutput(TypedDict):
    """A ``SubagentStop`` hook's own answer: extra context."""
    hookEventName: Literal["SubagentStop"]
    additionalContext: NotRequired[str]


class PermissionDeniedHookSpecificOutput(TypedDict):
    """A ``PermissionDenied`` hook's own answer: whether the model may try the call again."""
    hookEventName: Literal["PermissionDenied"]
    retry: NotRequired[bool]


class PreModelSwitchHookSpecificOutput(TypedDict):
    """A ``PreModelSwitch`` hook's own answer: allow or refuse the model change."""
    hookEventName: Literal["PreModelSwitch"]
    permissionDecision: NotRequired[Literal["allow", "deny", "ask"]]
    permissionDecisionReason: NotRequired[str]


class PostModelSwitchHookSpecificOutput(TypedDict):
    """A ``PostModelSwitch`` hook's own answer: extra context."""
    hookEventName: Literal["PostModelSwitch"]
    additionalContext: NotRequired[str]


class ElicitationHookSpecificOutput(TypedDict):
    """An ``Elicitation`` hook's own answer: accept, decline or cancel an MCP server's request for
    input, with the content.
    """
    hookEventName: Literal["Elicitation"]
    action: NotRequired[Literal["accept", "decline", "cancel"]]
    content: NotRequired[dict[str, Any]]


class ElicitationResultHookSpecificOutput(TypedDict):
    """An ``ElicitationResult`` hook's own answer: the action and content sent back to the MCP
    server.
    """
    hookEventName: Literal["ElicitationResult"]
    action: NotRequired[Literal["accept", "decline", "cancel"]]
    content: NotRequired[dict[str, Any]]


class CwdChangedHookSpecificOutput(TypedDict):
    """A ``CwdChanged`` hook's own answer: paths to watch in the new directory."""
    hookEventName: Literal["CwdChanged"]
    watchPaths: NotRequired[list[str]]


class FileChangedHookSpecificOutput(TypedDict):
    """A ``FileChanged`` hook's own answer: paths to watch."""
    hookEventName: Literal["FileChanged"]
    watchPaths: NotRequired[list[str]]


class WorktreeCreateHookSpecificOutput(TypedDict):
    """A ``WorktreeCreate`` hook's own answer: the path of the worktree it made."""
    hookEventName: Literal["WorktreeCreate"]
    worktreePath: str


class MessageDisplayHookSpecificOutput(TypedDict):
    """A ``MessageDisplay`` hook's own answer: the text to show instead."""
    hookEventName: Literal["MessageDisplay"]
    displayContent: NotRequired[str]


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
    asyncTimeout: NotRequired[int]


class SyncHookJSONOutput(TypedDict):
    """A hook's answer: whether to go on (``continue_`` is sent as ``continue``), a decision,
    messages, and the per-event output.
    """
    continue_: NotRequired[bool]
    suppressOutput: NotRequired[bool]
    stopReason: NotRequired[str]
    decision: NotRequired[Literal["block"]]
    systemMessage: NotRequired[str]
    reason: NotRequired[str]
    hookSpecificOutput: NotRequired[HookSpecificOutput]


HookJSONOutput = Union[AsyncHookJSONOutput, SyncHookJSONOutput]
"""What a hook callback returns: a synchronous or an asynchronous hook answer."""


class HookContext(TypedDict):
    """Context for a hook callback; ``signal`` is reserved."""

    signal: Any | None


HookCallback = Callable[
    [Any, Union[str, None], HookContext],
    Union[HookJSONOutput, dict[str, Any], Awaitable[Union[HookJSONOutput, dict[str, Any]]]],
]
"""A hook callback: called with the hook's input, the tool use id (or ``None``) and a
:class:`HookContext`; returns a hook answer (a plain or ``async def`` function).
"""


@dataclass
class HookMatcher:
    """Callbacks for one hook event, optionally narrowed by a matcher."""

    matcher: str | None = None
    hooks: list[HookCallback] = field(default_factory=list)
    timeout: float | None = None
    on_failure: Literal["continue", "block"] | None = None

# --------------------------------------------------------------------------- MCP configs and status


class McpStdioServerConfig(TypedDict):
    """An MCP server the CLI starts as a process and talks to over its stdin and stdout."""
    type: NotRequired[Literal["stdio"]]
    command: str
    args: NotRequired[list[str]]
    env: NotRequired[dict[str, str]]


class McpSSEServerConfig(TypedDict):
    """An MCP server the CLI reaches over server-sent events at a URL."""
    type: Literal["sse"]
    url: str
    headers: NotRequired[dict[str, str]]


class McpHttpServerConfig(TypedDict):
    """An MCP server the CLI reaches over streamable HTTP at a URL."""
    type: Literal["http"]
    url: str
    headers: NotRequired[dict[str, str]]


class McpSdkServerConfig(TypedDict):
    """An in-process server made by :func:`create_sdk_mcp_server`."""

    type: Literal["sdk"]
    name: str
    instance: "SdkMcpServer"


McpServerConfig = Union[McpStdioServerConfig, McpSSEServerConfig, McpHttpServerConfig, McpSdkServerConfig]
"""Any MCP server configuration ``ClaudeAgentOptions.mcp_servers`` takes."""


class McpSdkServerConfigStatus(TypedDict):
    """An in-process SDK MCP server as the CLI reports it in a status answer."""
    type: Literal["sdk"]
    name: str


class McpClaudeAIProxyServerConfig(TypedDict):
    """An MCP server proxied through claude.ai, as the CLI reports it in a status answer."""
    type: Literal["claudeai-proxy"]
    url: str
    id: str


McpServerStatusConfig = Union[
    McpStdioServerConfig, McpSSEServerConfig, McpHttpServerConfig, McpSdkServerConfigStatus, McpClaudeAIProxyServerConfig
]
"""A server's configuration as reported in :class:`McpServerStatus`."""


class McpToolAnnotations(TypedDict, total=False):
    """Hints about an MCP tool as the CLI reports them: read-only, destructive, reaching the outside
    world.
    """
    readOnly: bool
    destructive: bool
    openWorld: bool


class McpToolInfo(TypedDict):
    """One tool of an MCP server, as the CLI reports it."""
    name: str
    description: NotRequired[str]
    annotations: NotRequired[McpToolAnnotations]


class McpServerInfo(TypedDict):
    """The name and version an MCP server gave when it connected."""
    name: str
    version: str


McpServerConnectionStatus = Literal["connected", "failed", "needs-auth", "pending", "disabled"]
"""The state of the CLI's connection to an MCP server."""


class McpServerStatus(TypedDict):
    """One MCP server in the answer of ``get_mcp_status()``: its state, configuration and tools."""
    name: str
    status: McpServerConnectionStatus
    serverInfo: NotRequired[McpServerInfo]
    error: NotRequired[str]
    config: NotRequired[McpServerStatusConfig]
    scope: NotRequired[str]
    tools: NotRequired[list[McpToolInfo]]


class McpStatusResponse(TypedDict):
    """The answer of ``get_mcp_status()``: every MCP server the CLI knows."""
    mcpServers: list[McpServerStatus]


class ContextUsageCategory(TypedDict):
    """One category of the context window in ``get_context_usage()``: its name and tokens."""
    name: str
    tokens: int
    color: str
    isDeferred: NotRequired[bool]


class ContextUsageResponse(TypedDict):
    """The answer of ``get_context_usage()``: how the model's context window is filled, by category."""
    categories: list[ContextUsageCategory]
    totalTokens: int
    maxTokens: int
    rawMaxTokens: int
    percentage: float
    model: str
    isAutoCompactEnabled: bool
    memoryFiles: list[dict[str, Any]]
    mcpTools: list[dict[str, Any]]
    agents: list[dict[str, Any]]
    gridRows: list[list[dict[str, Any]]]
    autoCompactThreshold: NotRequired[int]
    deferredBuiltinTools: NotRequired[list[dict[str, Any]]]
    systemTools: NotRequired[list[dict[str, Any]]]
    systemPromptSections: NotRequired[list[dict[str, Any]]]
    slashCommands: NotRequired[dict[str, Any]]
    skills: NotRequired[dict[str, Any]]
    messageBreakdown: NotRequired[dict[str, Any]]
    apiUsage: NotRequired[dict[str, Any] | None]


class SdkPluginConfig(TypedDict):
    """A local plugin directory."""

    type: Literal["local"]
    path: str


class SandboxNetworkConfig(TypedDict, total=False):
    """Network rules of the CLI's sandbox: domains allowed or denied, sockets, proxy ports."""
    allowedDomains: list[str]
    deniedDomains: list[str]
    allowManagedDomainsOnly: bool
    allowUnixSockets: list[str]
    allowAllUnixSockets: bool
    allowLocalBinding: bool
    allowMachLookup: list[str]
    httpProxyPort: int
    socksProxyPort: int


SandboxIgnoreViolations: TypeAlias = dict[str, list[str]]
"""Sandbox violations to ignore, as a map from kind to patterns."""


class SandboxSettings(TypedDict, total=False):
    """Sandbox settings, merged into ``--settings`` as the official SDK does."""

    enabled: bool
    autoAllowBashIfSandboxed: bool
    excludedCommands: list[str]
    allowUnsandboxedCommands: bool
    network: SandboxNetworkConfig
    ignoreViolations: SandboxIgnoreViolations
    enableWeakerNestedSandbox: bool


# --------------------------------------------------------------------------- content blocks


@dataclass
class TextBlock(_ShownBlock):
    """Text content block."""

    text: str


@dataclass
class ThinkingBlock(_ShownBlock):
    """Thinking content block."""

    thinking: str
    signature: str


@dataclass
class ToolUseBlock(_ShownBlock):
    """Tool use content block."""

    id: str
    name: str
    input: dict[str, Any]


@dataclass
class ToolResultBlock(_ShownBlock):
    """Tool result content block."""

    tool_use_id: str
    content: str | list[dict[str, Any]] | None = None
    is_error: bool | None = None


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
    name: ServerToolName
    input: dict[str, Any]


@dataclass
class ServerToolResultBlock(_ShownBlock):
    """The result of a server-side tool call: ``content`` is the API's as sent
    (a dict, or a list for e.g. ``web_search_tool_result``)."""

    tool_use_id: str
    content: dict[str, Any]


@dataclass
class UnknownBlock(_ShownBlock):
    """Ours: a content block of a type this SDK does not model; nothing is dropped."""

    type: str
    data: dict[str, Any]


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
"""Where a user message came from (``UserMessage.origin``), with the details of its kind."""


@dataclass
class UserMessage(_Displayable):
    """A user message (a prompt, a tool result, or a replay)."""

    content: str | list[ContentBlock]
    uuid: str | None = None
    parent_tool_use_id: str | None = None
    tool_use_result: dict[str, Any] | None = None
    origin: MessageOrigin | None = None


@dataclass
class AssistantMessage(_Displayable):
    """An assistant message with content blocks."""

    content: list[ContentBlock]
    model: str
    parent_tool_use_id: str | None = None
    error: AssistantMessageError | None = None
    usage: dict[str, Any] | None = None
    message_id: str | None = None
    stop_reason: str | None = None
    session_id: str | None = None
    uuid: str | None = None
    user_message_uuid: str | None = None
    user_message_uuids: list[str] | None = None


@dataclass
class SystemMessage(_Displayable):
    """A system message; ``data`` is the whole wire dict."""

    subtype: str
    data: dict[str, Any]


class SystemInitMcpServer(TypedDict):
    """One MCP server listed in the session's ``init`` message."""
    name: str
    status: str
    source: NotRequired[str]


class SystemInitPlugin(TypedDict):
    """One plugin listed in the session's ``init`` message."""
    name: str
    path: str
    version: NotRequired[str]


class SystemInitPluginError(TypedDict):
    """A plugin that failed to load, listed in the session's ``init`` message."""
    plugin: str
    type: str
    message: str
    path: NotRequired[str]


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
    subtype: Literal["init"]
    uuid: str
    session_id: str
    agents: NotRequired[list[str]]
    apiKeySource: str
    betas: NotRequired[list[str]]
    claude_code_version: str
    cwd: str
    tools: list[str]
    mcp_servers: list[SystemInitMcpServer]
    model: str
    permissionMode: PermissionMode
    slash_commands: list[str]
    terminal_slash_commands: NotRequired[list[str]]
    output_style: str
    skills: list[str]
    plugins: list[SystemInitPlugin]
    plugin_errors: NotRequired[list[SystemInitPluginError]]
    fast_mode_state: NotRequired[FastModeState]
    fast_mode_disabled_reason: NotRequired[FastModeDisabledReason]
    capabilities: NotRequired[list[str]]


class TaskUsage(TypedDict):
    """What a background task has used so far: tokens, tool calls and time."""
    total_tokens: int
    tool_uses: int
    duration_ms: int


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
    description: str
    uuid: str
    session_id: str
    tool_use_id: str | None = None
    task_type: str | None = None


@dataclass
class TaskProgressMessage(SystemMessage):
    """Progress of a background task."""

    task_id: str
    description: str
    usage: TaskUsage
    uuid: str
    session_id: str
    tool_use_id: str | None = None
    last_tool_name: str | None = None


@dataclass
class TaskNotificationMessage(SystemMessage):
    """A background task finished."""

    task_id: str
    status: TaskNotificationStatus
    output_file: str
    summary: str
    uuid: str
    session_id: str
    tool_use_id: str | None = None
    usage: TaskUsage | None = None


@dataclass
class TaskUpdatedMessage(SystemMessage):
    """A background task's state changed (``patch`` holds what changed)."""

    task_id: str
    patch: dict[str, Any]
    status: TaskUpdatedStatus | None = None
    session_id: str | None = None
    uuid: str | None = None


@dataclass
class MirrorErrorMessage(SystemMessage):
    """A transcript batch could not be written to the session store (subtype ``mirror_error``)."""

    key: "SessionKey | None" = None
    error: str = ""


class ApiRetryNoResponse(TypedDict):
    """Ours (TypeScript's ``SDKAPIRetryMessage.no_response``): the API sent no response headers
    within the first-byte window (``CLAUDE_STREAM_FIRST_BYTE_TIMEOUT_MS``): how long the failed
    attempt waited for them, and how long the retry will."""
    waited_ms: int
    retry_wait_ms: int


@dataclass
class ApiRetryMessage(SystemMessage):
    """Ours (TypeScript's ``SDKAPIRetryMessage``): a model request failed and will be tried
    again after ``retry_delay_ms`` (subtype ``api_retry``). ``no_response``: set only when the
    API sent no headers in time (then ``max_retries`` is that cause's own cap, normally one);
    ``None`` otherwise and from CLIs that predate it."""

    attempt: int = 0
    max_retries: int = 0
    retry_delay_ms: int = 0
    error_status: int | None = None
    error: str | None = None
    uuid: str | None = None
    session_id: str | None = None
    no_response: ApiRetryNoResponse | None = None


@dataclass
class PermissionDeniedMessage(SystemMessage):
    """Ours (TypeScript's ``SDKPermissionDeniedMessage``): a tool call was denied without
    asking (``permission_prompts="none"``, a rule, the mode; subtype ``permission_denied``)."""

    tool_name: str = ""
    tool_use_id: str = ""
    message: str = ""
    agent_id: str | None = None
    decision_reason_type: str | None = None
    decision_reason: str | None = None
    uuid: str | None = None
    session_id: str | None = None


@dataclass
class SessionWritesLostMessage(SystemMessage):
    """Ours (TypeScript's ``SDKSessionWritesLostMessage``): the CLI could not write its
    transcript or config (a full disk: ``ENOSPC``/``EDQUOT``; subtype ``session_writes_lost``)."""

    error_code: str = ""
    lost: list[str] = field(default_factory=list)
    transcript_session_ids: list[str] | None = None
    uuid: str | None = None
    session_id: str | None = None


@dataclass
class HookEventMessage(SystemMessage):
    """A hook lifecycle event (``include_hook_events=True``)."""

    hook_event_name: str = ""
    session_id: str | None = None
    uuid: str | None = None


@dataclass
class DeferredToolUse:
    """A tool call deferred to the host."""

    id: str
    name: str
    input: dict[str, Any]


class ModelUsage(TypedDict):
    """Tokens and cost of one model over the CLI session so far (``ResultMessage.model_usage``)."""
    inputTokens: int
    outputTokens: int
    cacheReadInputTokens: int
    cacheCreationInputTokens: int
    webSearchRequests: int
    costUSD: float
    contextWindow: int
    maxOutputTokens: int
    canonicalModel: NotRequired[str]
    provider: NotRequired[str]


@dataclass
class ResultMessage(_Displayable):
    """The end of a turn: outcome, cost, usage and timing."""

    subtype: str
    duration_ms: int
    duration_api_ms: int
    is_error: bool
    num_turns: int
    session_id: str
    stop_reason: str | None = None
    total_cost_usd: float | None = None
    usage: dict[str, Any] | None = None
    result: str | None = None
    structured_output: Any = None
    model_usage: dict[str, ModelUsage] | None = None
    permission_denials: list[Any] | None = None
    deferred_tool_use: DeferredToolUse | None = None
    errors: list[str] | None = None
    api_error_status: int | None = None
    uuid: str | None = None
    terminal_reason: str | None = None
    origin: MessageOrigin | None = None
    user_message_uuid: str | None = None
    user_message_uuids: list[str] | None = None
    # ours, from the TypeScript type: the turn's latency, where the CLI reports it (left out of
    # the repr, so a program that prints a result prints what it prints on the official SDK)
    ttft_ms: int | None = field(default=None, kw_only=True, repr=False)
    ttft_stream_ms: int | None = field(default=None, kw_only=True, repr=False)
    time_to_request_ms: int | None = field(default=None, kw_only=True, repr=False)
    resume_reason: str | None = field(default=None, kw_only=True, repr=False)


@dataclass
class StreamEvent(_Displayable):
    """A raw Anthropic streaming event (``include_partial_messages=True``)."""

    uuid: str
    session_id: str
    event: dict[str, Any]
    parent_tool_use_id: str | None = None
    user_message_uuid: str | None = None
    user_message_uuids: list[str] | None = None


RateLimitStatus = Literal["allowed", "allowed_warning", "rejected"]
"""Whether a request was within a rate limit, close to it, or refused."""
RateLimitType = Literal["five_hour", "seven_day", "seven_day_opus", "seven_day_sonnet", "overage"]
"""Which usage window a rate-limit event is about."""


@dataclass
class RateLimitInfo:
    """Rate limit status (``raw`` is the wire dict, a field here as in the official type)."""

    status: RateLimitStatus
    resets_at: int | None = None
    rate_limit_type: RateLimitType | None = None
    utilization: float | None = None
    overage_status: RateLimitStatus | None = None
    overage_resets_at: int | None = None
    overage_disabled_reason: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass
class RateLimitEvent(_Displayable):
    """The rate limit status changed."""

    rate_limit_info: RateLimitInfo
    uuid: str
    session_id: str


@dataclass
class ConversationResetMessage(_Displayable):
    """The conversation was replaced (e.g. ``/clear``)."""

    new_conversation_id: str
    uuid: str
    session_id: str


@dataclass
class PromptSuggestionMessage(_Displayable):
    """Ours (TypeScript's ``SDKPromptSuggestionMessage``): a next prompt the CLI suggests
    (``prompt_suggestions=True``)."""

    suggestion: str
    uuid: str
    session_id: str


class SubagentRetry(TypedDict):
    """Ours (TypeScript's ``SDKToolProgressMessage.subagent_retry``): the subagent an Agent
    tool call runs is retrying a failed model request (``error_status`` is ``None`` when the
    request got no HTTP response)."""
    agent_id: str
    attempt: int
    max_retries: int
    retry_delay_ms: int
    error_status: int | None
    error_category: str


@dataclass
class ToolProgressMessage(_Displayable):
    """Ours (TypeScript's ``SDKToolProgressMessage``): a long tool call is still running.

    TypeScript 0.3.333's optional fields, ``None`` when the CLI leaves them out (older CLIs
    do): ``heartbeat`` (the message only says the call is alive), ``subagent_type`` (the
    agent an Agent call runs), ``subagent_retry`` (that subagent retries a model request) and
    ``description`` (what the call is doing, in words)."""

    tool_use_id: str
    tool_name: str
    elapsed_time_seconds: float
    uuid: str
    session_id: str
    parent_tool_use_id: str | None = None
    task_id: str | None = None
    heartbeat: bool | None = None
    subagent_type: str | None = None
    subagent_retry: SubagentRetry | None = None
    description: str | None = None


@dataclass
class ToolUseSummaryMessage(_Displayable):
    """Ours (TypeScript's ``SDKToolUseSummaryMessage``): a one-line summary of tool calls."""

    summary: str
    preceding_tool_use_ids: list[str]
    uuid: str
    session_id: str


@dataclass
class AuthStatusMessage(_Displayable):
    """Ours (TypeScript's ``SDKAuthStatusMessage``): progress of a sign-in."""

    is_authenticating: bool
    output: list[str]
    uuid: str
    session_id: str
    error: str | None = None


@dataclass
class UnknownMessage(_Displayable):
    """Ours: a message of a type this SDK does not model (or a malformed one), kept whole in ``data``."""

    type: str
    data: dict[str, Any]


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
    session_id: str
    subpath: NotRequired[str]


class SessionStoreEntry(TypedDict, total=False):
    """One transcript entry as a session store keeps it (the CLI's JSON line, as a dictionary)."""
    type: Required[str]
    uuid: str
    timestamp: str


class SessionStoreListEntry(TypedDict):
    """One session in a store's listing: its id and when it last changed."""
    session_id: str
    mtime: int


class SessionSummaryEntry(TypedDict):
    """A session's folded summary as a store may keep it, for fast listings."""
    session_id: str
    mtime: int
    data: dict[str, Any]


class SessionListSubkeysKey(TypedDict):
    """The session whose sub-paths (subagent transcripts) a store is asked to list."""
    project_key: str
    session_id: str


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
    summary: str
    last_modified: int
    file_size: int | None = None
    custom_title: str | None = None
    first_prompt: str | None = None
    git_branch: str | None = None
    cwd: str | None = None
    tag: str | None = None
    created_at: int | None = None
    archived: bool | None = field(default=None, kw_only=True, repr=False)  # ours, TypeScript's: see archive_session() (not in the repr: printed rows read as the official ones)


@dataclass
class SessionMessage:
    """One user or assistant message of a session's conversation, as ``get_session_messages()``
    gives it.
    """
    type: Literal["user", "assistant", "system"]
    uuid: str
    session_id: str
    message: Any
    parent_tool_use_id: str | None = None
    parent_agent_id: str | None = None


@dataclass
class ForkSessionResult:
    """What ``fork_session()`` gives back: the new session's id."""
    session_id: str


# --------------------------------------------------------------------------- TypeScript's option types

PermissionPrompts = Literal["host", "none"]
"""Who answers permission prompts: this process (``"host"``) or nobody (``"none"``: denied)."""

Delivery = Literal["argv", "initialize"]
"""How MCP servers or plugins reach the CLI: on its command line or in ``initialize``."""


class AskUserQuestionConfig(TypedDict, total=False):
    """``tool_config["ask_user_question"]``: how the AskUserQuestion tool shows its choices."""

    preview_format: Literal["markdown", "html"]


class ToolConfig(TypedDict, total=False):
    """``ClaudeAgentOptions.tool_config``: settings of built-in tools (TypeScript's ``toolConfig``)."""

    ask_user_question: AskUserQuestionConfig


class UserDialogRequest(TypedDict, total=False):
    """What ``on_user_dialog`` gets: the dialog kind, its payload, and the tool call it is about."""

    dialog_kind: str
    payload: dict[str, Any]
    tool_use_id: str | None


# --------------------------------------------------------------------------- thinking

ThinkingDisplay = Literal["summarized", "omitted"]
"""How thinking is shown in the answer: summarised, or left out."""


class ThinkingConfigAdaptive(TypedDict):
    """Thinking as the model decides, per turn."""
    type: Literal["adaptive"]
    display: NotRequired[ThinkingDisplay]


class ThinkingConfigEnabled(TypedDict):
    """Thinking on, with a token budget."""
    type: Literal["enabled"]
    budget_tokens: int
    display: NotRequired[ThinkingDisplay]


class ThinkingConfigDisabled(TypedDict):
    """Thinking off."""
    type: Literal["disabled"]


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

    Every field of the official ``ClaudeAgentOptions`` is here with the same
    name, default and position. Fields of our own, keyword-only, after them:

    * ``transport``: ``"auto"`` (from ``claude --version``), ``"websocket"`` or ``"stdio"``;
    * ``control_timeout``: seconds a control request we send may wait for its answer;
    * ``callback_timeout``: seconds a ``can_use_tool``/hook/MCP/elicitation callback may
      take before the CLI is answered with an error (``None``: no limit, as the CLI has none);
    * ``on_elicitation``: answers MCP elicitation requests; gets the request dict
      (``mcp_server_name``, ``message``, ``requested_schema``, ...) and returns
      ``{"action": "accept" | "decline" | "cancel", "content": {...}}``. Unset: decline.
    * ``spawn_claude_code_process``: run the CLI elsewhere: a function
      ``(SpawnOptions) -> process`` (as the TypeScript SDK's ``spawnClaudeCodeProcess``) or a
      command prefix such as ``["ssh", "host", "--"]`` (see :mod:`claude_sdkurl.spawn`).

    Then the options of the TypeScript SDK (0.3.333) that the official Python SDK has not,
    keyword-only, in snake_case, with TypeScript's defaults and wire form:

    * ``agent``: the main thread's agent (``--agent``);
    * ``permission_prompts``: ``"host"`` (this process answers, the default) or ``"none"``:
      anything that would ask is denied at once and ``can_use_tool`` is never called
      (``--permission-prompts``);
    * ``persist_session``: ``False`` keeps no transcript on disk (``--no-session-persistence``;
      not with ``session_store``);
    * ``title``, ``tool_aliases``, ``plan_mode_instructions``, ``prompt_suggestions``,
      ``agent_progress_summaries``, ``supported_dialog_kinds``, ``per_task_stop_affordance``:
      sent in the ``initialize`` request;
    * ``tool_config``: ``{"ask_user_question": {"preview_format": "markdown" | "html"}}``
      (the CLI reads it from its environment);
    * ``mcp_servers_delivery``: how external MCP servers reach the CLI. ``None`` (default):
      TypeScript 0.3.333's default, ``"initialize"``, on every CLI that reads them there
      (2.1.326 and later over stdio), so their ``env`` and ``headers`` stay off the command line,
      which other users of the machine can read; ``"argv"`` on one that cannot (2.1.120, the
      WebSocket CLI). ``"initialize"``: always (refused for a CLI that cannot read them);
      ``"argv"``: on ``--mcp-config``, as the official Python SDK sends them;
    * ``plugin_delivery``: ``"argv"`` (default) or ``"initialize"``: plugins sent in
      ``initialize`` (``--await-initialize``);
    * ``managed_settings``: a policy-tier settings object (``--managed-settings``);
    * ``project_config_root``: the trusted checkout ``cwd`` is a worktree of;
    * ``on_user_dialog``: answers the CLI's ``request_user_dialog`` (gets a
      :class:`UserDialogRequest`, returns ``{"behavior": "completed", "result": ...}``,
      ``{"behavior": "cancelled"}``, or ``None`` to leave it unanswered); the CLI only asks
      for the kinds in ``supported_dialog_kinds``;
    * ``allow_dangerously_skip_permissions``, ``debug``, ``debug_file``: their CLI flags.
    """

    tools: list[str] | ToolsPreset | None = None
    allowed_tools: list[str] = field(default_factory=list)
    system_prompt: str | SystemPromptPreset | SystemPromptCustom | SystemPromptFile | None = None
    mcp_servers: dict[str, McpServerConfig] | str | Path = field(default_factory=dict)
    strict_mcp_config: bool = False
    permission_mode: PermissionMode | None = None
    continue_conversation: bool = False
    resume: str | None = None
    session_id: str | None = None
    max_turns: int | None = None
    max_budget_usd: float | None = None
    disallowed_tools: list[str] = field(default_factory=list)
    model: str | None = None
    fallback_model: str | None = None
    betas: list[SdkBeta] = field(default_factory=list)
    permission_prompt_tool_name: str | None = None
    cwd: str | Path | None = None
    cli_path: str | Path | None = None
    settings: str | None = None
    add_dirs: list[str | Path] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    extra_args: dict[str, str | None] = field(default_factory=dict)
    max_buffer_size: int | None = None
    debug_stderr: Any = sys.stderr  # deprecated and ignored, as in the official SDK
    stderr: Callable[[str], None] | None = None
    can_use_tool: CanUseTool | None = None
    hooks: dict[HookEvent, list[HookMatcher]] | None = None
    user: str | None = None
    include_partial_messages: bool = False
    include_hook_events: bool = False
    forward_subagent_text: bool = False
    verbatim_prompts: bool = False
    fork_session: bool = False
    resume_session_at: str | None = None
    resume_drops_turn: str | None = None
    agents: dict[str, AgentDefinition] | None = None
    setting_sources: list[SettingSource] | None = None
    skills: list[str] | Literal["all"] | None = None
    sandbox: SandboxSettings | None = None
    plugins: list[SdkPluginConfig] = field(default_factory=list)
    max_thinking_tokens: int | None = None
    thinking: ThinkingConfig | None = None
    effort: EffortLevel | None = None
    output_format: dict[str, Any] | None = None
    enable_file_checkpointing: bool = False
    session_store: SessionStore | None = None
    session_store_flush: SessionStoreFlushMode = "batched"
    load_timeout_ms: int = 60_000
    task_budget: TaskBudget | None = None
    client_app: str | None = None
    # ---- ours (keyword-only, so the official positional order is kept)
    transport: TransportName = field(default="auto", kw_only=True)
    control_timeout: float = field(default=60.0, kw_only=True)
    callback_timeout: float | None = field(default=None, kw_only=True)
    on_elicitation: Callable[[dict[str, Any]], Any] | None = field(default=None, kw_only=True)
    spawn_claude_code_process: Callable[[Any], Any] | list[str] | None = field(default=None, kw_only=True)
    # ---- the TypeScript SDK's options the official Python SDK lacks (same names in snake_case,
    # same defaults, same wire form; see docs/guide/typescript.md)
    agent: str | None = field(default=None, kw_only=True)
    permission_prompts: PermissionPrompts | None = field(default=None, kw_only=True)
    persist_session: bool = field(default=True, kw_only=True)
    title: str | None = field(default=None, kw_only=True)
    tool_aliases: dict[str, str] | None = field(default=None, kw_only=True)
    tool_config: ToolConfig | None = field(default=None, kw_only=True)
    mcp_servers_delivery: Delivery | None = field(default=None, kw_only=True)
    plugin_delivery: Delivery = field(default="argv", kw_only=True)
    prompt_suggestions: bool | None = field(default=None, kw_only=True)
    agent_progress_summaries: bool | None = field(default=None, kw_only=True)
    plan_mode_instructions: str | None = field(default=None, kw_only=True)
    managed_settings: dict[str, Any] | None = field(default=None, kw_only=True)
    project_config_root: str | Path | None = field(default=None, kw_only=True)
    on_user_dialog: Callable[[UserDialogRequest], Any] | None = field(default=None, kw_only=True)
    supported_dialog_kinds: list[str] | None = field(default=None, kw_only=True)
    per_task_stop_affordance: bool | None = field(default=None, kw_only=True)
    allow_dangerously_skip_permissions: bool = field(default=False, kw_only=True)
    debug: bool = field(default=False, kw_only=True)
    debug_file: str | Path | None = field(default=None, kw_only=True)

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


class SDKControlPermissionRequest(TypedDict):
    """The CLI's control request asking whether a tool call may run (answered by ``can_use_tool``)."""
    subtype: Literal["can_use_tool"]
    tool_name: str
    input: dict[str, Any]
    permission_suggestions: list[dict[str, Any]] | None
    blocked_path: str | None
    decision_reason: NotRequired[str]
    title: NotRequired[str]
    display_name: NotRequired[str]
    description: NotRequired[str]
    tool_use_id: str
    agent_id: NotRequired[str]


class SDKControlInitializeRequest(TypedDict):
    """The control request that opens a session: hooks, agents and prompt settings."""
    subtype: Literal["initialize"]
    hooks: dict[HookEvent, Any] | None
    agents: NotRequired[dict[str, dict[str, Any]]]
    excludeDynamicSections: NotRequired[bool]
    systemPromptSnapshot: NotRequired[bool]
    skills: NotRequired[list[str]]
    forwardSubagentText: NotRequired[bool]


class SDKControlSetPermissionModeRequest(TypedDict):
    """The control request that changes the permission mode."""
    subtype: Literal["set_permission_mode"]
    mode: PermissionMode


class SDKHookCallbackRequest(TypedDict):
    """The CLI's control request that runs one of the program's hook callbacks."""
    subtype: Literal["hook_callback"]
    callback_id: str
    input: Any
    tool_use_id: str | None


class SDKControlMcpMessageRequest(TypedDict):
    """The CLI's control request carrying a JSON-RPC message for an in-process MCP server."""
    subtype: Literal["mcp_message"]
    server_name: str
    message: Any


class SDKControlRewindFilesRequest(TypedDict):
    """The control request that puts files back as they were at a user message."""
    subtype: Literal["rewind_files"]
    user_message_id: str


class SDKControlMcpReconnectRequest(TypedDict):
    """The control request that reconnects an MCP server."""
    subtype: Literal["mcp_reconnect"]
    serverName: str


class SDKControlMcpToggleRequest(TypedDict):
    """The control request that turns an MCP server on or off."""
    subtype: Literal["mcp_toggle"]
    serverName: str
    enabled: bool


class SDKControlStopTaskRequest(TypedDict):
    """The control request that stops a background task."""
    subtype: Literal["stop_task"]
    task_id: str


class SDKControlRequest(TypedDict):
    """A control request frame: its id and the request."""
    type: Literal["control_request"]
    request_id: str
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


class ControlResponse(TypedDict):
    """A successful answer to a control request."""
    subtype: Literal["success"]
    request_id: str
    response: dict[str, Any] | None


class ControlErrorResponse(TypedDict):
    """A failed answer to a control request, with the error text."""
    subtype: Literal["error"]
    request_id: str
    error: str


class SDKControlResponse(TypedDict):
    """A control response frame."""
    type: Literal["control_response"]
    response: ControlResponse | ControlErrorResponse
