"""claude_sdkurl: drive Claude Code from synchronous Python.

A thread-based, drop-in counterpart of the official ``claude_agent_sdk``:
the same names, without ``async``/``await``::

    from claude_sdkurl import query

    for message in query("What is 2 + 2?"):
        print(message)
"""

from ._errors import (
    ClaudeSDKError,
    CLIConnectionError,
    CLIJSONDecodeError,
    CLINotFoundError,
    ControlRequestError,
    ControlRequestTimeoutError,
    MessageParseError,
    ProcessError,
    TransportNotSupportedError,
    UnsupportedOptionError,
)
from ._transport import StdioTransport, Transport, TransportCallbacks, WebSocketTransport
from .client import ClaudeClient, ClaudeSDKClient
from .mcp import SdkMcpServer, SdkMcpTool, ToolAnnotations, create_sdk_mcp_server, tool
from .query import query
from .types import (
    AgentDefinition,
    AssistantMessage,
    BaseHookInput,
    CanUseTool,
    ClaudeAgentOptions,
    ContentBlock,
    ConversationResetMessage,
    DeferredToolUse,
    HookCallback,
    HookContext,
    HookEvent,
    HookEventMessage,
    HookInput,
    HookJSONOutput,
    HookMatcher,
    McpHttpServerConfig,
    McpSdkServerConfig,
    McpServerConfig,
    McpSSEServerConfig,
    McpStdioServerConfig,
    Message,
    NotificationHookInput,
    PermissionMode,
    PermissionRequestHookInput,
    PermissionResult,
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionRuleValue,
    PermissionUpdate,
    NotificationHookSpecificOutput,
    PermissionRequestHookSpecificOutput,
    PostToolUseFailureHookInput,
    PostToolUseFailureHookSpecificOutput,
    PostToolUseHookInput,
    PostToolUseHookSpecificOutput,
    PreCompactHookInput,
    PreToolUseHookInput,
    PreToolUseHookSpecificOutput,
    RateLimitEvent,
    RateLimitInfo,
    ResultMessage,
    SandboxSettings,
    SessionEndHookInput,
    SessionStartHookInput,
    SessionStartHookSpecificOutput,
    SubagentStartHookSpecificOutput,
    SyncHookJSONOutput,
    AsyncHookJSONOutput,
    UserPromptSubmitHookSpecificOutput,
    HookSpecificOutput,
    SdkBeta,
    SdkPluginConfig,
    ServerToolResultBlock,
    ServerToolUseBlock,
    SettingSource,
    StopHookInput,
    StreamEvent,
    SubagentStartHookInput,
    SubagentStopHookInput,
    SystemMessage,
    SystemPromptPreset,
    TaskNotificationMessage,
    TaskProgressMessage,
    TaskStartedMessage,
    TextBlock,
    ThinkingBlock,
    ThinkingConfig,
    ToolPermissionContext,
    ToolResultBlock,
    ToolUseBlock,
    UnknownBlock,
    UnknownMessage,
    UserMessage,
    UserPromptSubmitHookInput,
)

__version__ = "0.1.0"

__all__ = [name for name in dir() if not name.startswith("_")]
