"""Public types: messages, content blocks, options, permission and hook types.

Names and fields follow the official ``claude_agent_sdk.types``; the classes are
``attrs`` classes instead of dataclasses. Every message and content block
keeps the raw wire dict it was built from in ``raw`` (not part of equality or
repr), and message or block types this SDK does not know are kept as
:class:`UnknownMessage` / :class:`UnknownBlock` rather than dropped.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Union

from attrs import define, field

if sys.version_info >= (3, 11):
    from typing import NotRequired
else:  # pragma: no cover
    from typing_extensions import NotRequired

if TYPE_CHECKING:
    from .mcp import SdkMcpServer

PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"]
SdkBeta = Literal["context-1m-2025-08-07"]
SettingSource = Literal["user", "project", "local"]
EffortLevel = Literal["low", "medium", "high", "xhigh", "max"]
TransportName = Literal["auto", "websocket", "stdio"]


def _raw() -> Any:
    """The ``raw`` wire dict: keyword-only, kept out of ``==`` and ``repr``."""
    return field(factory=dict, eq=False, repr=False, kw_only=True)


# --------------------------------------------------------------------------- prompts, tools


class SystemPromptPreset(TypedDict):
    """Claude Code's own system prompt, optionally with text appended."""

    type: Literal["preset"]
    preset: Literal["claude_code"]
    append: NotRequired[str]


class SystemPromptCustom(TypedDict):
    """A custom system prompt (same as passing a string)."""

    type: Literal["custom"]
    prompt: str


class SystemPromptFile(TypedDict):
    """A system prompt read by the CLI from a file."""

    type: Literal["file"]
    path: str


class ToolsPreset(TypedDict):
    """All of Claude Code's default tools."""

    type: Literal["preset"]
    preset: Literal["claude_code"]


class TaskBudget(TypedDict):
    """API-side task budget in tokens."""

    total: int


class ThinkingConfigAdaptive(TypedDict):
    type: Literal["adaptive"]
    display: NotRequired[Literal["summarized", "omitted"]]


class ThinkingConfigEnabled(TypedDict):
    type: Literal["enabled"]
    budget_tokens: int
    display: NotRequired[Literal["summarized", "omitted"]]


class ThinkingConfigDisabled(TypedDict):
    type: Literal["disabled"]


ThinkingConfig = Union[ThinkingConfigAdaptive, ThinkingConfigEnabled, ThinkingConfigDisabled]


@define
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


class SdkPluginConfig(TypedDict):
    """A local plugin directory."""

    type: Literal["local"]
    path: str


class SandboxNetworkConfig(TypedDict, total=False):
    allowUnixSockets: list[str]
    allowAllUnixSockets: bool
    allowLocalBinding: bool
    httpProxyPort: int
    socksProxyPort: int


class SandboxIgnoreViolations(TypedDict, total=False):
    file: list[str]
    network: list[str]


class SandboxSettings(TypedDict, total=False):
    """Sandbox settings, merged into ``--settings`` as the official SDK does."""

    enabled: bool
    autoAllowBashIfSandboxed: bool
    excludedCommands: list[str]
    allowUnsandboxedCommands: bool
    network: SandboxNetworkConfig
    ignoreViolations: SandboxIgnoreViolations
    enableWeakerNestedSandbox: bool


# --------------------------------------------------------------------------- MCP configs


class McpStdioServerConfig(TypedDict):
    type: NotRequired[Literal["stdio"]]
    command: str
    args: NotRequired[list[str]]
    env: NotRequired[dict[str, str]]


class McpSSEServerConfig(TypedDict):
    type: Literal["sse"]
    url: str
    headers: NotRequired[dict[str, str]]


class McpHttpServerConfig(TypedDict):
    type: Literal["http"]
    url: str
    headers: NotRequired[dict[str, str]]


class McpSdkServerConfig(TypedDict):
    """An in-process server made by :func:`create_sdk_mcp_server`."""

    type: Literal["sdk"]
    name: str
    instance: SdkMcpServer


McpServerConfig = Union[McpStdioServerConfig, McpSSEServerConfig, McpHttpServerConfig, McpSdkServerConfig]

# --------------------------------------------------------------------------- permissions

PermissionUpdateDestination = Literal["userSettings", "projectSettings", "localSettings", "session"]
PermissionBehavior = Literal["allow", "deny", "ask"]


@define
class PermissionRuleValue:
    """A permission rule: a tool, optionally narrowed by rule content."""

    tool_name: str
    rule_content: str | None = None


_UPDATE_TYPES = ("addRules", "replaceRules", "removeRules", "setMode", "addDirectories", "removeDirectories")


@define
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
                if rule.rule_content is not None:
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
    def from_dict(cls, data: dict[str, Any]) -> PermissionUpdate:
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


@define
class ToolPermissionContext:
    """What the CLI told us about a tool call awaiting permission."""

    signal: Any | None = None
    suggestions: list[PermissionUpdate] = field(factory=list)
    tool_use_id: str | None = None
    agent_id: str | None = None
    blocked_path: str | None = None
    decision_reason: str | None = None
    title: str | None = None
    display_name: str | None = None
    description: str | None = None


@define
class PermissionResultAllow:
    """Allow the tool call, optionally with a replaced input."""

    behavior: Literal["allow"] = "allow"
    updated_input: dict[str, Any] | None = None
    updated_permissions: list[PermissionUpdate] | None = None


@define
class PermissionResultDeny:
    """Deny the tool call; ``interrupt`` also stops the turn."""

    behavior: Literal["deny"] = "deny"
    message: str = ""
    interrupt: bool = False


PermissionResult = Union[PermissionResultAllow, PermissionResultDeny]
CanUseTool = Callable[
    [str, dict[str, Any], ToolPermissionContext],
    Union[PermissionResult, Awaitable[PermissionResult]],
]

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


class BaseHookInput(TypedDict):
    """Fields present in every hook input."""

    session_id: str
    transcript_path: str
    cwd: str
    permission_mode: NotRequired[str]
    prompt_id: NotRequired[str]
    effort: NotRequired[dict[str, Any]]


class _SubagentContext(TypedDict, total=False):
    agent_id: str
    agent_type: str


class PreToolUseHookInput(BaseHookInput, _SubagentContext):
    hook_event_name: Literal["PreToolUse"]
    tool_name: str
    tool_input: dict[str, Any]
    tool_use_id: str


class PostToolUseHookInput(BaseHookInput, _SubagentContext):
    hook_event_name: Literal["PostToolUse"]
    tool_name: str
    tool_input: dict[str, Any]
    tool_response: Any
    tool_use_id: str
    duration_ms: NotRequired[int]


class PostToolUseFailureHookInput(BaseHookInput, _SubagentContext):
    hook_event_name: Literal["PostToolUseFailure"]
    tool_name: str
    tool_input: dict[str, Any]
    tool_use_id: str
    error: str
    is_interrupt: NotRequired[bool]
    duration_ms: NotRequired[int]


class UserPromptSubmitHookInput(BaseHookInput):
    hook_event_name: Literal["UserPromptSubmit"]
    prompt: str


class StopHookInput(BaseHookInput):
    hook_event_name: Literal["Stop"]
    stop_hook_active: bool
    last_assistant_message: NotRequired[str]
    background_tasks: NotRequired[list[dict[str, Any]]]
    session_crons: NotRequired[list[dict[str, Any]]]


class SubagentStopHookInput(BaseHookInput):
    hook_event_name: Literal["SubagentStop"]
    stop_hook_active: bool
    agent_id: str
    agent_transcript_path: str
    agent_type: str
    last_assistant_message: NotRequired[str]


class PreCompactHookInput(BaseHookInput):
    hook_event_name: Literal["PreCompact"]
    trigger: Literal["manual", "auto"]
    custom_instructions: str | None


class NotificationHookInput(BaseHookInput):
    hook_event_name: Literal["Notification"]
    message: str
    title: NotRequired[str]
    notification_type: str


class SubagentStartHookInput(BaseHookInput):
    hook_event_name: Literal["SubagentStart"]
    agent_id: str
    agent_type: str


class PermissionRequestHookInput(BaseHookInput, _SubagentContext):
    hook_event_name: Literal["PermissionRequest"]
    tool_name: str
    tool_input: dict[str, Any]
    permission_suggestions: NotRequired[list[Any]]


class SessionStartHookInput(BaseHookInput):
    hook_event_name: Literal["SessionStart"]
    source: Literal["startup", "resume", "clear", "compact"]


class SessionEndHookInput(BaseHookInput):
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


class PreToolUseHookSpecificOutput(TypedDict):
    hookEventName: Literal["PreToolUse"]
    permissionDecision: NotRequired[Literal["allow", "deny", "ask", "defer"]]
    permissionDecisionReason: NotRequired[str]
    updatedInput: NotRequired[dict[str, Any]]
    additionalContext: NotRequired[str]


class PostToolUseHookSpecificOutput(TypedDict):
    hookEventName: Literal["PostToolUse"]
    additionalContext: NotRequired[str]
    updatedMCPToolOutput: NotRequired[Any]


class PostToolUseFailureHookSpecificOutput(TypedDict):
    hookEventName: Literal["PostToolUseFailure"]
    additionalContext: NotRequired[str]


class UserPromptSubmitHookSpecificOutput(TypedDict):
    hookEventName: Literal["UserPromptSubmit"]
    additionalContext: NotRequired[str]


class SessionStartHookSpecificOutput(TypedDict):
    hookEventName: Literal["SessionStart"]
    additionalContext: NotRequired[str]


class NotificationHookSpecificOutput(TypedDict):
    hookEventName: Literal["Notification"]
    additionalContext: NotRequired[str]


class SubagentStartHookSpecificOutput(TypedDict):
    hookEventName: Literal["SubagentStart"]
    additionalContext: NotRequired[str]


class PermissionRequestHookSpecificOutput(TypedDict):
    hookEventName: Literal["PermissionRequest"]
    decision: dict[str, Any]


HookSpecificOutput = Union[
    PreToolUseHookSpecificOutput,
    PostToolUseHookSpecificOutput,
    PostToolUseFailureHookSpecificOutput,
    UserPromptSubmitHookSpecificOutput,
    SessionStartHookSpecificOutput,
    NotificationHookSpecificOutput,
    SubagentStartHookSpecificOutput,
    PermissionRequestHookSpecificOutput,
]


class AsyncHookJSONOutput(TypedDict):
    async_: Literal[True]
    asyncTimeout: NotRequired[int]


class SyncHookJSONOutput(TypedDict, total=False):
    continue_: bool
    suppressOutput: bool
    stopReason: str
    decision: Literal["block"]
    systemMessage: str
    reason: str
    hookSpecificOutput: HookSpecificOutput


HookJSONOutput = Union[AsyncHookJSONOutput, SyncHookJSONOutput]


class HookContext(TypedDict):
    """Context for a hook callback; ``signal`` is reserved."""

    signal: Any | None


HookCallback = Callable[
    [Any, Union[str, None], HookContext],
    Union[HookJSONOutput, dict[str, Any], Awaitable[Union[HookJSONOutput, dict[str, Any]]]],
]


@define
class HookMatcher:
    """Callbacks for one hook event, optionally narrowed by a matcher."""

    matcher: str | None = None
    hooks: list[HookCallback] = field(factory=list)
    timeout: float | None = None
    on_failure: Literal["continue", "block"] | None = None


# --------------------------------------------------------------------------- content blocks


@define
class TextBlock:
    """Text content block."""

    text: str
    raw: dict[str, Any] = _raw()


@define
class ThinkingBlock:
    """Thinking content block."""

    thinking: str
    signature: str
    raw: dict[str, Any] = _raw()


@define
class ToolUseBlock:
    """Tool use content block."""

    id: str
    name: str
    input: dict[str, Any]
    raw: dict[str, Any] = _raw()


@define
class ToolResultBlock:
    """Tool result content block."""

    tool_use_id: str
    content: str | list[dict[str, Any]] | None = None
    is_error: bool | None = None
    raw: dict[str, Any] = _raw()


@define
class ServerToolUseBlock:
    """A server-side tool call (web_search, web_fetch, advisor, ...)."""

    id: str
    name: str
    input: dict[str, Any]
    raw: dict[str, Any] = _raw()


@define
class ServerToolResultBlock:
    """The result of a server-side tool call; ``content`` is the raw API dict."""

    tool_use_id: str
    content: dict[str, Any]
    raw: dict[str, Any] = _raw()


@define
class UnknownBlock:
    """A content block of a type this SDK does not model; nothing is dropped."""

    type: str
    data: dict[str, Any]
    raw: dict[str, Any] = _raw()


ContentBlock = Union[
    TextBlock, ThinkingBlock, ToolUseBlock, ToolResultBlock, ServerToolUseBlock, ServerToolResultBlock, UnknownBlock
]

# --------------------------------------------------------------------------- messages


class _Displayable:
    """Jupyter display for messages (see :mod:`claude_sdkurl.display`)."""

    __slots__ = ()

    def _repr_markdown_(self) -> str:
        from .display import message_markdown

        return message_markdown(self)

    def _repr_html_(self) -> str:
        from .display import message_html

        return message_html(self)


@define
class UserMessage(_Displayable):
    """A user message (a prompt, a tool result, or a replay)."""

    content: str | list[ContentBlock]
    uuid: str | None = None
    parent_tool_use_id: str | None = None
    tool_use_result: Any = None
    origin: dict[str, Any] | None = None
    raw: dict[str, Any] = _raw()


@define
class AssistantMessage(_Displayable):
    """An assistant message with content blocks."""

    content: list[ContentBlock]
    model: str
    parent_tool_use_id: str | None = None
    error: str | None = None
    usage: dict[str, Any] | None = None
    message_id: str | None = None
    stop_reason: str | None = None
    session_id: str | None = None
    uuid: str | None = None
    user_message_uuid: str | None = None
    user_message_uuids: list[str] | None = None
    raw: dict[str, Any] = _raw()


@define
class SystemMessage(_Displayable):
    """A system message; ``data`` is the whole wire dict."""

    subtype: str
    data: dict[str, Any]
    raw: dict[str, Any] = _raw()


@define
class HookEventMessage(SystemMessage):
    """A hook lifecycle event (``include_hook_events=True``)."""

    hook_event_name: str = ""
    session_id: str | None = None
    uuid: str | None = None


@define
class TaskStartedMessage(SystemMessage):
    """A background task started."""

    task_id: str = ""
    description: str = ""
    uuid: str | None = None
    session_id: str | None = None
    tool_use_id: str | None = None
    task_type: str | None = None


@define
class TaskProgressMessage(SystemMessage):
    """Progress of a background task."""

    task_id: str = ""
    description: str = ""
    usage: dict[str, Any] | None = None
    uuid: str | None = None
    session_id: str | None = None
    tool_use_id: str | None = None
    last_tool_name: str | None = None


@define
class TaskNotificationMessage(SystemMessage):
    """A background task finished."""

    task_id: str = ""
    status: str = ""
    output_file: str = ""
    summary: str = ""
    uuid: str | None = None
    session_id: str | None = None
    tool_use_id: str | None = None
    usage: dict[str, Any] | None = None


@define
class DeferredToolUse:
    """A tool call deferred to the host."""

    id: str
    name: str
    input: dict[str, Any]


@define
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
    model_usage: dict[str, Any] | None = None
    permission_denials: list[Any] | None = None
    deferred_tool_use: DeferredToolUse | None = None
    errors: list[str] | None = None
    api_error_status: int | None = None
    uuid: str | None = None
    terminal_reason: str | None = None
    origin: dict[str, Any] | None = None
    user_message_uuid: str | None = None
    user_message_uuids: list[str] | None = None
    raw: dict[str, Any] = _raw()


@define
class StreamEvent(_Displayable):
    """A raw Anthropic streaming event (``include_partial_messages=True``)."""

    uuid: str
    session_id: str
    event: dict[str, Any]
    parent_tool_use_id: str | None = None
    user_message_uuid: str | None = None
    user_message_uuids: list[str] | None = None
    raw: dict[str, Any] = _raw()


@define
class RateLimitInfo:
    """Rate limit status."""

    status: str
    resets_at: int | None = None
    rate_limit_type: str | None = None
    utilization: float | None = None
    overage_status: str | None = None
    overage_resets_at: int | None = None
    overage_disabled_reason: str | None = None
    raw: dict[str, Any] = field(factory=dict)


@define
class RateLimitEvent(_Displayable):
    """The rate limit status changed."""

    rate_limit_info: RateLimitInfo
    uuid: str
    session_id: str
    raw: dict[str, Any] = _raw()


@define
class ConversationResetMessage(_Displayable):
    """The conversation was replaced (e.g. ``/clear``)."""

    new_conversation_id: str
    uuid: str
    session_id: str
    raw: dict[str, Any] = _raw()


@define
class UnknownMessage(_Displayable):
    """A message of a type this SDK does not model; kept whole in ``data``."""

    type: str
    data: dict[str, Any]
    raw: dict[str, Any] = _raw()


Message = Union[
    UserMessage,
    AssistantMessage,
    SystemMessage,
    ResultMessage,
    StreamEvent,
    RateLimitEvent,
    ConversationResetMessage,
    UnknownMessage,
]

# --------------------------------------------------------------------------- options


@define
class ClaudeAgentOptions:
    """Options for :func:`query` and :class:`ClaudeClient`.

    Every field of the official ``ClaudeAgentOptions`` is here with the same
    name and default. Fields this SDK cannot honour raise
    :class:`UnsupportedOptionError` when a session starts; none is silently
    ignored. Fields of our own:

    * ``transport``: ``"auto"`` (from ``claude --version``), ``"websocket"`` or ``"stdio"``;
    * ``control_timeout``: seconds a control request we send may wait for its answer;
    * ``callback_timeout``: seconds a ``can_use_tool``/hook/MCP/elicitation callback may
      take before the CLI is answered with an error (``None``: no limit, as the CLI has none);
    * ``on_elicitation``: answers MCP elicitation requests; gets the request dict
      (``mcp_server_name``, ``message``, ``requested_schema``, ...) and returns
      ``{"action": "accept" | "decline" | "cancel", "content": {...}}``. Unset: decline.
    """

    tools: list[str] | ToolsPreset | None = None
    allowed_tools: list[str] = field(factory=list)
    system_prompt: str | SystemPromptPreset | SystemPromptCustom | SystemPromptFile | None = None
    mcp_servers: dict[str, McpServerConfig] | str | Path = field(factory=dict)
    strict_mcp_config: bool = False
    permission_mode: PermissionMode | None = None
    continue_conversation: bool = False
    resume: str | None = None
    session_id: str | None = None
    max_turns: int | None = None
    max_budget_usd: float | None = None
    disallowed_tools: list[str] = field(factory=list)
    model: str | None = None
    fallback_model: str | None = None
    betas: list[SdkBeta] = field(factory=list)
    permission_prompt_tool_name: str | None = None
    cwd: str | Path | None = None
    cli_path: str | Path | None = None
    settings: str | None = None
    add_dirs: list[str | Path] = field(factory=list)
    env: dict[str, str] = field(factory=dict)
    extra_args: dict[str, str | None] = field(factory=dict)
    max_buffer_size: int | None = None
    debug_stderr: Any = None
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
    plugins: list[SdkPluginConfig] = field(factory=list)
    max_thinking_tokens: int | None = None
    thinking: ThinkingConfig | None = None
    effort: EffortLevel | None = None
    output_format: dict[str, Any] | None = None
    enable_file_checkpointing: bool = False
    session_store: Any = None
    session_store_flush: Literal["batched", "eager"] = "batched"
    load_timeout_ms: int = 60_000
    task_budget: TaskBudget | None = None
    client_app: str | None = None
    # ---- ours
    transport: TransportName = "auto"
    control_timeout: float = 60.0
    callback_timeout: float | None = None
    on_elicitation: Callable[[dict[str, Any]], Any] | None = None
