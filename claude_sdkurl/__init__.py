"""claude_sdkurl: drive Claude Code from synchronous Python.

A thread-based, drop-in counterpart of the official ``claude_agent_sdk``:
the same names, without ``async``/``await``::

    from claude_sdkurl import query

    for message in query("What is 2 + 2?"):
        print(message)
"""

import sys as _sys
from importlib import import_module as _import_module
from types import ModuleType as _ModuleType
from typing import TYPE_CHECKING, Any

from . import _shown
from ._version import __version__

# Messages show themselves in Jupyter with claude_sdkurl.display, loaded when the first is shown
# (types, below it, cannot import it: see _shown).
_shown.loader = lambda: _import_module(".display", __name__)

if TYPE_CHECKING:
    from . import types
    from ._errors import (
        ClaudeSDKError,
        CLIConnectionError,
        CLIJSONDecodeError,
        CLINotFoundError,
        ControlRequestError,
        UnsupportedControlRequestError,
        ControlRequestTimeoutError,
        MessageParseError,
        NotAsyncError,
        ProcessError,
        ReceiveTimeoutError,
        ResultError,
        SessionStoreError,
        TransportNotSupportedError,
        UnsupportedOptionError,
    )
    from ._engine.transport import StdioTransport, Transport, TransportCallbacks
    from .constants import (
        BUILTIN_TOOL_NAMES,
        EXIT_REASONS,
        HOOK_EVENTS,
        LEGACY_TOOL_NAME_ALIASES,
        ORG_POLICY_LIMIT_PREFIXES,
        SYSTEM_PROMPT_DYNAMIC_BOUNDARY,
        USAGE_LIMIT_ERROR_PREFIXES,
        USAGE_TRANSITION_PREFIXES,
        USAGE_WARNING_PREFIXES,
        limit_message_kind,
    )
    from .client import ClaudeClient, ClaudeSDKClient
    from .mcp import SdkMcpServer, SdkMcpTool, ToolAnnotations, create_sdk_mcp_server, tool
    from .query import query
    from .conversations import Conversations
    from .spares import SparePool
    from .settings import filter_escalating_default_mode, resolve_settings
    from .sessions import (
        archive_session,
        unarchive_session,
        delete_session,
        delete_session_via_store,
        fold_session_summary,
        fork_session,
        fork_session_via_store,
        get_session_info,
        get_session_info_from_store,
        get_session_messages,
        get_session_messages_from_store,
        get_subagent_messages,
        get_subagent_messages_from_store,
        import_session_to_store,
        list_sessions,
        list_sessions_from_store,
        list_subagents,
        list_subagents_from_store,
        project_key_for_directory,
        rename_session,
        rename_session_via_store,
        tag_session,
        tag_session_via_store,
    )
    from .spawn import SpawnedProcess, SpawnOptions, command_prefix_spawner
    from .stores import InMemorySessionStore
    from .types import (
        AgentDefinition,
        AssistantMessage,
        AssistantMessageError,
        AsyncHookJSONOutput,
        BackgroundTaskSummary,
        BaseHookInput,
        CanUseTool,
        CanUseToolShadowedWarning,
        ClaudeAgentOptions,
        ContentBlock,
        ContextUsageCategory,
        ContextUsageResponse,
        ConversationResetMessage,
        ApiRetryMessage,
        ApiRetryNoResponse,
        AuthStatusMessage,
        AskUserQuestionConfig,
        Delivery,
        PermissionDeniedMessage,
        PermissionPrompts,
        PromptSuggestionMessage,
        SessionWritesLostMessage,
        SubagentRetry,
        ToolConfig,
        ToolProgressMessage,
        ToolUseSummaryMessage,
        UserDialogRequest,
        CwdChangedHookSpecificOutput,
        DeferredToolUse,
        EffortLevel,
        ElicitationHookSpecificOutput,
        ElicitationResultHookSpecificOutput,
        FastModeDisabledReason,
        FastModeState,
        FileChangedHookSpecificOutput,
        ForkSessionResult,
        HookCallback,
        HookContext,
        HookEffort,
        HookEvent,
        HookEventMessage,
        HookInput,
        HookJSONOutput,
        HookMatcher,
        HookSpecificOutput,
        McpHttpServerConfig,
        McpSdkServerConfig,
        McpServerConfig,
        McpServerConnectionStatus,
        McpServerInfo,
        McpServerStatus,
        McpServerStatusConfig,
        McpSSEServerConfig,
        McpStatusResponse,
        McpStdioServerConfig,
        McpToolAnnotations,
        McpToolInfo,
        Message,
        MessageDisplayHookSpecificOutput,
        MessageOrigin,
        MessageOriginKind,
        MirrorErrorMessage,
        ModelUsage,
        NotificationHookInput,
        NotificationHookSpecificOutput,
        PermissionBehavior,
        PermissionDeniedHookSpecificOutput,
        PermissionMode,
        PermissionRequestHookInput,
        PermissionRequestHookSpecificOutput,
        PermissionResult,
        PermissionResultAllow,
        PermissionResultDeny,
        PermissionRuleValue,
        PermissionUpdate,
        PermissionUpdateDestination,
        PostModelSwitchHookSpecificOutput,
        PostToolBatchHookSpecificOutput,
        PostToolUseFailureHookInput,
        PostToolUseFailureHookSpecificOutput,
        PostToolUseHookInput,
        PostToolUseHookSpecificOutput,
        PreCompactHookInput,
        PreModelSwitchHookSpecificOutput,
        PreToolUseHookInput,
        PreToolUseHookSpecificOutput,
        RateLimitEvent,
        RateLimitInfo,
        RateLimitStatus,
        RateLimitType,
        ResultMessage,
        SandboxIgnoreViolations,
        SandboxNetworkConfig,
        SandboxSettings,
        SdkBeta,
        SdkPluginConfig,
        SDKSessionInfo,
        ServerToolName,
        ServerToolResultBlock,
        ServerToolUseBlock,
        SessionCronSummary,
        SessionEndHookInput,
        SessionKey,
        SessionListSubkeysKey,
        SessionMessage,
        SessionStartHookInput,
        SessionStartHookSpecificOutput,
        SessionStore,
        SessionStoreEntry,
        SessionStoreFlushMode,
        SessionStoreListEntry,
        SessionSummaryEntry,
        SettingSource,
        StopHookInput,
        StopHookSpecificOutput,
        StreamEvent,
        SubagentStartHookInput,
        SubagentStartHookSpecificOutput,
        SubagentStopHookInput,
        SubagentStopHookSpecificOutput,
        SyncHookJSONOutput,
        SystemInitData,
        SystemInitMcpServer,
        SystemInitPlugin,
        SystemInitPluginError,
        SystemMessage,
        SystemPromptCustom,
        SystemPromptFile,
        SystemPromptPreset,
        TaskBudget,
        TaskNotificationMessage,
        TaskNotificationOriginSubkind,
        TaskNotificationStatus,
        TaskProgressMessage,
        TaskStartedMessage,
        TaskUpdatedMessage,
        TaskUpdatedStatus,
        TaskUsage,
        TERMINAL_TASK_STATUSES,
        TextBlock,
        ThinkingBlock,
        ThinkingConfig,
        ThinkingConfigAdaptive,
        ThinkingConfigDisabled,
        ThinkingConfigEnabled,
        ThinkingDisplay,
        ToolPermissionContext,
        ToolResultBlock,
        ToolsPreset,
        ToolUseBlock,
        UnknownBlock,
        UnknownMessage,
        UserMessage,
        UserPromptExpansionHookSpecificOutput,
        UserPromptSubmitHookInput,
        UserPromptSubmitHookSpecificOutput,
        WorktreeCreateHookSpecificOutput,
    )

    from .prewarm import WarmPool, prewarm
    from ._engine.transport.websocket import WebSocketTransport
    from . import client, mcp

__all__ = [
    "query",
    "__version__",
    "Transport",
    "ClaudeSDKClient",
    "create_sdk_mcp_server",
    "tool",
    "SdkMcpTool",
    "ToolAnnotations",
    "ClaudeSDKError",
    "CLIConnectionError",
    "CLINotFoundError",
    "ProcessError",
    "ResultError",
    "CLIJSONDecodeError",
    "AgentDefinition",
    "AssistantMessage",
    "AssistantMessageError",
    "AsyncHookJSONOutput",
    "BackgroundTaskSummary",
    "BaseHookInput",
    "CanUseTool",
    "CanUseToolShadowedWarning",
    "ClaudeAgentOptions",
    "ContentBlock",
    "ContextUsageCategory",
    "ContextUsageResponse",
    "ConversationResetMessage",
    "ApiRetryMessage",
    "ApiRetryNoResponse",
    "AuthStatusMessage",
    "AskUserQuestionConfig",
    "Delivery",
    "PermissionDeniedMessage",
    "PermissionPrompts",
    "PromptSuggestionMessage",
    "SessionWritesLostMessage",
    "SubagentRetry",
    "ToolConfig",
    "ToolProgressMessage",
    "ToolUseSummaryMessage",
    "UserDialogRequest",
    "HOOK_EVENTS",
    "EXIT_REASONS",
    "BUILTIN_TOOL_NAMES",
    "LEGACY_TOOL_NAME_ALIASES",
    "USAGE_LIMIT_ERROR_PREFIXES",
    "USAGE_TRANSITION_PREFIXES",
    "USAGE_WARNING_PREFIXES",
    "ORG_POLICY_LIMIT_PREFIXES",
    "SYSTEM_PROMPT_DYNAMIC_BOUNDARY",
    "limit_message_kind",
    "archive_session",
    "unarchive_session",
    "resolve_settings",
    "filter_escalating_default_mode",
    "CwdChangedHookSpecificOutput",
    "DeferredToolUse",
    "EffortLevel",
    "ElicitationHookSpecificOutput",
    "ElicitationResultHookSpecificOutput",
    "FastModeDisabledReason",
    "FastModeState",
    "FileChangedHookSpecificOutput",
    "ForkSessionResult",
    "HookCallback",
    "HookContext",
    "HookEffort",
    "HookEvent",
    "HookEventMessage",
    "HookInput",
    "HookJSONOutput",
    "HookMatcher",
    "HookSpecificOutput",
    "McpHttpServerConfig",
    "McpSdkServerConfig",
    "McpServerConfig",
    "McpServerConnectionStatus",
    "McpServerInfo",
    "McpServerStatus",
    "McpServerStatusConfig",
    "McpSSEServerConfig",
    "McpStatusResponse",
    "McpStdioServerConfig",
    "McpToolAnnotations",
    "McpToolInfo",
    "Message",
    "MessageDisplayHookSpecificOutput",
    "MessageOrigin",
    "MessageOriginKind",
    "MirrorErrorMessage",
    "ModelUsage",
    "NotificationHookInput",
    "NotificationHookSpecificOutput",
    "PermissionBehavior",
    "PermissionDeniedHookSpecificOutput",
    "PermissionMode",
    "PermissionRequestHookInput",
    "PermissionRequestHookSpecificOutput",
    "PermissionResult",
    "PermissionResultAllow",
    "PermissionResultDeny",
    "PermissionRuleValue",
    "PermissionUpdate",
    "PermissionUpdateDestination",
    "PostModelSwitchHookSpecificOutput",
    "PostToolBatchHookSpecificOutput",
    "PostToolUseFailureHookInput",
    "PostToolUseFailureHookSpecificOutput",
    "PostToolUseHookInput",
    "PostToolUseHookSpecificOutput",
    "PreCompactHookInput",
    "PreModelSwitchHookSpecificOutput",
    "PreToolUseHookInput",
    "PreToolUseHookSpecificOutput",
    "RateLimitEvent",
    "RateLimitInfo",
    "RateLimitStatus",
    "RateLimitType",
    "ResultMessage",
    "SandboxIgnoreViolations",
    "SandboxNetworkConfig",
    "SandboxSettings",
    "SdkBeta",
    "SdkPluginConfig",
    "SDKSessionInfo",
    "ServerToolName",
    "ServerToolResultBlock",
    "ServerToolUseBlock",
    "SessionCronSummary",
    "SessionEndHookInput",
    "SessionKey",
    "SessionListSubkeysKey",
    "SessionMessage",
    "SessionStartHookInput",
    "SessionStartHookSpecificOutput",
    "SessionStore",
    "SessionStoreEntry",
    "SessionStoreFlushMode",
    "SessionStoreListEntry",
    "SessionSummaryEntry",
    "SettingSource",
    "StopHookInput",
    "StopHookSpecificOutput",
    "StreamEvent",
    "SubagentStartHookInput",
    "SubagentStartHookSpecificOutput",
    "SubagentStopHookInput",
    "SubagentStopHookSpecificOutput",
    "SyncHookJSONOutput",
    "SystemInitData",
    "SystemInitMcpServer",
    "SystemInitPlugin",
    "SystemInitPluginError",
    "SystemMessage",
    "SystemPromptCustom",
    "SystemPromptFile",
    "SystemPromptPreset",
    "TaskBudget",
    "TaskNotificationMessage",
    "TaskNotificationOriginSubkind",
    "TaskNotificationStatus",
    "TaskProgressMessage",
    "TaskStartedMessage",
    "TaskUpdatedMessage",
    "TaskUpdatedStatus",
    "TaskUsage",
    "TERMINAL_TASK_STATUSES",
    "TextBlock",
    "ThinkingBlock",
    "ThinkingConfig",
    "ThinkingConfigAdaptive",
    "ThinkingConfigDisabled",
    "ThinkingConfigEnabled",
    "ThinkingDisplay",
    "ToolPermissionContext",
    "ToolResultBlock",
    "ToolsPreset",
    "ToolUseBlock",
    "UnknownBlock",
    "UnknownMessage",
    "UserMessage",
    "UserPromptExpansionHookSpecificOutput",
    "UserPromptSubmitHookInput",
    "UserPromptSubmitHookSpecificOutput",
    "WorktreeCreateHookSpecificOutput",
    "ClaudeClient",
    "StdioTransport",
    "WebSocketTransport",
    "TransportCallbacks",
    "SdkMcpServer",
    "ControlRequestError",
    "UnsupportedControlRequestError",
    "ControlRequestTimeoutError",
    "ReceiveTimeoutError",
    "MessageParseError",
    "TransportNotSupportedError",
    "UnsupportedOptionError",
    "NotAsyncError",
    "SessionStoreError",
    "SpawnOptions",
    "SpawnedProcess",
    "command_prefix_spawner",
    "list_sessions",
    "get_session_info",
    "get_session_messages",
    "list_subagents",
    "get_subagent_messages",
    "InMemorySessionStore",
    "fold_session_summary",
    "project_key_for_directory",
    "import_session_to_store",
    "list_sessions_from_store",
    "get_session_info_from_store",
    "get_session_messages_from_store",
    "list_subagents_from_store",
    "get_subagent_messages_from_store",
    "rename_session",
    "tag_session",
    "delete_session",
    "fork_session",
    "rename_session_via_store",
    "tag_session_via_store",
    "delete_session_via_store",
    "fork_session_via_store",
    "WarmPool",
    "SparePool",
    "Conversations",
    "prewarm",
    "client",
    "mcp",
    "types",
]

# Every public name is imported when first asked for (PEP 562), so that ``import claude_sdkurl``
# costs almost nothing and a program pays only for what it uses (a one-query program never
# loads the session stores, the MCP server, the batch runner or the notebook: see
# tests/test_import_cost.py). The names of ``types`` are the default; the others say where
# they live.
_HOME: dict[str, str] = {
    **dict.fromkeys(
        (
            "ClaudeSDKError CLIConnectionError CLIJSONDecodeError CLINotFoundError ControlRequestError "
            "UnsupportedControlRequestError ControlRequestTimeoutError MessageParseError ProcessError "
            "ReceiveTimeoutError ResultError SessionStoreError TransportNotSupportedError UnsupportedOptionError NotAsyncError"
        ).split(),
        "._errors",
    ),
    **dict.fromkeys("StdioTransport Transport TransportCallbacks".split(), "._engine.transport"),
    "WebSocketTransport": "._engine.transport.websocket",
    **dict.fromkeys(
        (
            "BUILTIN_TOOL_NAMES EXIT_REASONS HOOK_EVENTS LEGACY_TOOL_NAME_ALIASES ORG_POLICY_LIMIT_PREFIXES "
            "SYSTEM_PROMPT_DYNAMIC_BOUNDARY USAGE_LIMIT_ERROR_PREFIXES USAGE_TRANSITION_PREFIXES "
            "USAGE_WARNING_PREFIXES limit_message_kind"
        ).split(),
        ".constants",
    ),
    **dict.fromkeys("ClaudeClient ClaudeSDKClient".split(), ".client"),
    **dict.fromkeys("SdkMcpServer SdkMcpTool ToolAnnotations create_sdk_mcp_server tool".split(), ".mcp"),
    "query": ".query",
    "Conversations": ".conversations",
    "SparePool": ".spares",
    **dict.fromkeys("filter_escalating_default_mode resolve_settings".split(), ".settings"),
    **dict.fromkeys(
        (
            "archive_session unarchive_session delete_session delete_session_via_store fold_session_summary "
            "fork_session fork_session_via_store get_session_info get_session_info_from_store "
            "get_session_messages get_session_messages_from_store get_subagent_messages "
            "get_subagent_messages_from_store import_session_to_store list_sessions list_sessions_from_store "
            "list_subagents list_subagents_from_store project_key_for_directory rename_session "
            "rename_session_via_store tag_session tag_session_via_store"
        ).split(),
        ".sessions",
    ),
    **dict.fromkeys("SpawnedProcess SpawnOptions command_prefix_spawner".split(), ".spawn"),
    "InMemorySessionStore": ".stores",
    **dict.fromkeys("WarmPool prewarm".split(), ".prewarm"),
}
def __getattr__(name: str) -> Any:
    if name not in __all__ or name in ("client", "mcp", "types"):
        # A public submodule (``claude_sdkurl.sessions`` after ``import claude_sdkurl``, as the
        # eager package gave it), imported now; any other name is not ours.
        if name.isidentifier() and not name.startswith("_"):
            try:
                return _import_module(f".{name}", __name__)
            except ModuleNotFoundError as e:
                if e.name != f"{__name__}.{name}":
                    raise  # the submodule exists and lacks something it imports: say so
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_import_module(_HOME.get(name, ".types"), __name__), name)
    globals()[name] = value  # asked once: later lookups find it without this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(_ModuleType):
    """The package's module object, which keeps its functions ``query`` and ``prewarm``.

    Both share their name with the module that defines them. Importing such a module sets the
    package's attribute to the module once it has run; an eager package overwrote it again with
    the function right after, a lazy one must refuse it instead.
    """

    def __setattr__(self, name: str, value: object) -> None:
        if name in ("query", "prewarm") and isinstance(value, _ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package

if __import__("os").environ.get("CLAUDE_SDKURL_RELAY"):
    # CLAUDE_SDKURL_RELAY=host:port: an unchanged program is watched (see claude_sdkurl.relay)
    _import_module(".relay", __name__).from_environment()


def load_ipython_extension(shell: object) -> None:
    """``%load_ext claude_sdkurl``: the ``%%claude`` magic (see :mod:`claude_sdkurl.notebook`)."""
    from .notebook import load_ipython_extension as load

    load(shell)


def unload_ipython_extension(shell: object) -> None:
    from .notebook import unload_ipython_extension as unload

    unload(shell)

