"""Every method of TypeScript's ``Query``, field of its ``Options`` and kind of its
``SDKMessage`` (0.3.333), and where each is here: our name, and the real-CLI test that shows
its effect (``None``: checked on the wire or offline only), or :class:`LeftOut` with the reason.

``tests/test_typescript_surface.py`` fails on a TypeScript name missing from these tables or an
entry that names something we do not have; ``docs/guide/typescript.md`` shows the counts.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LeftOut:
    reason: str


REALCLI = "tests/test_realcli_typescript.py"

# TypeScript method -> (ClaudeClient method, real-CLI test in REALCLI or another file::name)
METHODS: dict[str, tuple[str, str | None]] = {
    "interrupt": ("interrupt", "tests/test_realcli_control.py::test_interrupt_mid_stream_then_next_turn"),
    "setPermissionMode": ("set_permission_mode", "tests/test_realcli_control.py::test_set_model_and_permission_mode"),
    "setMcpPermissionModeOverride": ("set_mcp_permission_mode_override", "test_mcp_permission_mode_override"),
    "setModel": ("set_model", "tests/test_realcli_control.py::test_set_model_and_permission_mode"),
    "setMaxThinkingTokens": ("set_max_thinking_tokens", "test_thinking_display_is_sent_only_when_given"),
    "applyFlagSettings": ("apply_flag_settings", "test_apply_flag_settings_changes_what_get_settings_answers"),
    "updateSettings": ("update_settings", "test_update_settings_changes_what_get_settings_answers"),
    "initializationResult": ("initialization_result", "test_initialize_answer_and_its_parts"),
    "reinitialize": ("reinitialize", "test_reinitialize_sends_initialize_again"),
    "supportedCommands": ("supported_commands", "test_initialize_answer_and_its_parts"),
    "supportedModels": ("supported_models", "test_initialize_answer_and_its_parts"),
    "supportedAgents": ("supported_agents", "test_initialize_answer_and_its_parts"),
    "mcpServerStatus": ("mcp_server_status", "test_read_mcp_resource_reads_a_servers_resource"),
    "getContextUsage": ("get_context_usage", "test_context_usage_summary"),
    "usage_EXPERIMENTAL_MAY_CHANGE_DO_NOT_RELY_ON_THIS_API_YET": ("get_usage", "test_get_usage_counts_the_calls_served"),
    "readFile": ("read_file", "test_read_file_returns_the_files_bytes"),
    "reloadPlugins": ("reload_plugins", "test_reloads_answer"),
    "reloadSkills": ("reload_skills", "test_reloads_answer"),
    "reloadOutputStyles": ("reload_output_styles", "test_reloads_answer"),
    "accountInfo": ("account_info", "test_initialize_answer_and_its_parts"),
    "rewindFiles": ("rewind_files", "test_rewind_files_dry_run_changes_no_file"),
    "seedReadState": ("seed_read_state", None),  # its effect cannot be shown on 2.1.330: see the test
    "reconnectMcpServer": ("reconnect_mcp_server", "test_mcp_servers_toggled_reconnected_and_replaced"),
    "toggleMcpServer": ("toggle_mcp_server", "test_mcp_servers_toggled_reconnected_and_replaced"),
    "readMcpResource": ("read_mcp_resource", "test_read_mcp_resource_reads_a_servers_resource"),
    "setMcpServers": ("set_mcp_servers", "test_mcp_servers_toggled_reconnected_and_replaced"),
    "streamInput": ("stream_input", "test_stream_input_sends_more_turns"),
    "stopTask": ("stop_task", "test_stop_task_stops_a_background_bash"),
    "backgroundTasks": ("background_tasks", "test_background_tasks_moves_a_running_bash"),
    "close": ("close", "test_close_stops_the_cli"),
}

# TypeScript option -> (ClaudeAgentOptions field, real-CLI test) or LeftOut
OPTIONS: dict[str, tuple[str, str | None] | LeftOut] = {
    "abortController": LeftOut("Python has no AbortSignal: close the generator, call interrupt(), or cancel a "
                               "claude_sdkurl.threads task"),
    "additionalDirectories": ("add_dirs", None),
    "projectConfigRoot": ("project_config_root", "test_project_config_root_supplies_the_project_settings"),
    "agent": ("agent", "test_agent_option_runs_the_named_agent"),
    "agents": ("agents", "test_agent_option_runs_the_named_agent"),
    "allowedTools": ("allowed_tools", "test_background_tasks_moves_a_running_bash"),
    "canUseTool": ("can_use_tool", "tests/test_realcli_control.py::test_permission_allow"),
    "continue": ("continue_conversation", "tests/test_realcli_resumed_cost.py::test_resumed_forked_and_continued_runs_are_counted_once"),
    "cwd": ("cwd", "test_read_file_returns_the_files_bytes"),
    "disallowedTools": ("disallowed_tools", None),
    "toolAliases": ("tool_aliases", "test_tool_aliases_let_the_model_call_a_tool_by_another_name"),
    "tools": ("tools", None),
    "env": ("env", "test_read_file_returns_the_files_bytes"),
    "executable": LeftOut("the JavaScript runtime (node, bun, deno) that runs a .js CLI: the CLI is a native "
                          "binary, and cli_path names whatever runs"),
    "executableArgs": LeftOut("arguments for that JavaScript runtime (see executable)"),
    "extraArgs": ("extra_args", "test_rewind_files_dry_run_changes_no_file"),
    "fallbackModel": ("fallback_model", None),
    "enableFileCheckpointing": ("enable_file_checkpointing", "test_rewind_files_dry_run_changes_no_file"),
    "toolConfig": ("tool_config", None),
    "forkSession": ("fork_session", "tests/test_realcli_resumed_cost.py::test_resumed_forked_and_continued_runs_are_counted_once"),
    "betas": ("betas", None),
    "hooks": ("hooks", "tests/test_realcli_control.py::test_pre_tool_use_hook"),
    "onElicitation": ("on_elicitation", None),
    "onUserDialog": ("on_user_dialog", None),
    "supportedDialogKinds": ("supported_dialog_kinds", None),
    "perTaskStopAffordance": ("per_task_stop_affordance", None),
    "persistSession": ("persist_session", "test_persist_session_false_writes_no_transcript"),
    "sessionStore": ("session_store", "tests/test_realcli_session_store.py::test_the_store_mirrors_the_local_transcript"),
    "sessionStoreFlush": ("session_store_flush", None),
    "loadTimeoutMs": ("load_timeout_ms", None),
    "includeHookEvents": ("include_hook_events", None),
    "includePartialMessages": ("include_partial_messages", None),
    "forwardSubagentText": ("forward_subagent_text", None),
    "verbatimPrompts": ("verbatim_prompts", None),
    "thinking": ("thinking", None),
    "effort": ("effort", None),
    "maxThinkingTokens": ("max_thinking_tokens", None),
    "maxTurns": ("max_turns", "tests/test_realcli_parity.py::test_result_error_after_max_turns"),
    "maxBudgetUsd": ("max_budget_usd", "tests/test_realcli_parity.py::test_result_error_after_budget"),
    "taskBudget": ("task_budget", None),
    "mcpServers": ("mcp_servers", "tests/test_realcli_mcp.py::test_model_calls_sdk_tool"),
    "mcpServersDelivery": ("mcp_servers_delivery", "tests/test_realcli_mcp.py::test_external_servers_work_and_their_secrets_stay_off_the_command_line"),
    "model": ("model", None),
    "outputFormat": ("output_format", None),
    "pathToClaudeCodeExecutable": ("cli_path", "test_read_file_returns_the_files_bytes"),
    "permissionMode": ("permission_mode", "test_seed_read_state_is_accepted"),
    "planModeInstructions": ("plan_mode_instructions", "test_plan_mode_instructions_reach_the_model_in_plan_mode"),
    "allowDangerouslySkipPermissions": ("allow_dangerously_skip_permissions", None),
    "permissionPromptToolName": ("permission_prompt_tool_name", None),
    "permissionPrompts": ("permission_prompts", "test_permission_prompts_none_denies_without_asking"),
    "plugins": ("plugins", "test_plugins_delivered_in_initialize_load"),
    "pluginDelivery": ("plugin_delivery", "test_plugins_delivered_in_initialize_load"),
    "promptSuggestions": ("prompt_suggestions", None),
    "agentProgressSummaries": ("agent_progress_summaries", None),
    "resume": ("resume", "tests/test_realcli_resumed_cost.py::test_resumed_forked_and_continued_runs_are_counted_once"),
    "sessionId": ("session_id", None),
    "resumeSessionAt": ("resume_session_at", None),
    "resumeDropsTurn": ("resume_drops_turn", None),
    "sandbox": ("sandbox", None),
    "settings": ("settings", "test_managed_settings_outrank_the_flag_layer"),
    "managedSettings": ("managed_settings", "test_managed_settings_outrank_the_flag_layer"),
    "settingSources": ("setting_sources", None),
    "skills": ("skills", None),
    "debug": ("debug", None),
    "debugFile": ("debug_file", "test_debug_file_is_written"),
    "stderr": ("stderr", "tests/test_realcli_parity.py::test_cli_stderr_reaches_ours_without_a_callback"),
    "strictMcpConfig": ("strict_mcp_config", None),
    "systemPrompt": ("system_prompt", None),
    "title": ("title", "test_title_names_the_session"),
    "spawnClaudeCodeProcess": ("spawn_claude_code_process", "tests/test_realcli_spawn.py::test_a_spawner_function_and_an_argv_prefix"),
}

# TypeScript message type -> our class (a name in claude_sdkurl), or "SystemMessage" where the
# message arrives as a SystemMessage with its subtype and the wire dict in ``data`` (as in the
# official Python SDK), or LeftOut
MESSAGES: dict[str, str | LeftOut] = {
    "SDKAssistantMessage": "AssistantMessage",
    "SDKUserMessage": "UserMessage",
    "SDKUserMessageReplay": "UserMessage",
    "SDKResultMessage": "ResultMessage",
    "SDKSystemMessage": "SystemMessage",
    "SDKPartialAssistantMessage": "StreamEvent",
    "SDKCompactBoundaryMessage": "SystemMessage",
    "SDKStatusMessage": "SystemMessage",
    "SDKAPIRetryMessage": "ApiRetryMessage",
    "SDKControlRequestProgressMessage": "SystemMessage",
    "SDKModelRefusalFallbackMessage": "SystemMessage",
    "SDKModelRefusalNoFallbackMessage": "SystemMessage",
    "SDKLocalCommandOutputMessage": "SystemMessage",
    "SDKHookStartedMessage": "HookEventMessage",
    "SDKHookProgressMessage": "SystemMessage",
    "SDKHookResponseMessage": "HookEventMessage",
    "SDKPluginInstallMessage": "SystemMessage",
    "SDKToolProgressMessage": "ToolProgressMessage",
    "SDKAuthStatusMessage": "AuthStatusMessage",
    "SDKTaskNotificationMessage": "TaskNotificationMessage",
    "SDKTaskStartedMessage": "TaskStartedMessage",
    "SDKTaskUpdatedMessage": "TaskUpdatedMessage",
    "SDKTaskProgressMessage": "TaskProgressMessage",
    "SDKBackgroundTasksChangedMessage": "SystemMessage",
    "SDKThinkingTokensMessage": "SystemMessage",
    "SDKSessionStateChangedMessage": "SystemMessage",
    "SDKWorkerShuttingDownMessage": "SystemMessage",
    "SDKCommandsChangedMessage": "SystemMessage",
    "SDKNotificationMessage": "SystemMessage",
    "SDKFilesPersistedEvent": "SystemMessage",
    "SDKToolUseSummaryMessage": "ToolUseSummaryMessage",
    "SDKMemoryRecallMessage": "SystemMessage",
    "SDKRateLimitEvent": "RateLimitEvent",
    "SDKElicitationCompleteMessage": "SystemMessage",
    "SDKPermissionDeniedMessage": "PermissionDeniedMessage",
    "SDKPromptSuggestionMessage": "PromptSuggestionMessage",
    "SDKMirrorErrorMessage": "MirrorErrorMessage",
    "SDKInformationalMessage": "SystemMessage",
    "SDKConversationResetMessage": "ConversationResetMessage",
    "SDKSessionWritesLostMessage": "SessionWritesLostMessage",
}

# TypeScript's top-level functions -> our name in claude_sdkurl (with the test that shows it), or LeftOut
FUNCTIONS: dict[str, tuple[str, str | None] | LeftOut] = {
    "archiveSession": ("archive_session", "tests/test_sessions_typescript.py::test_an_archive_either_sdk_writes_the_other_reads"),
    "unarchiveSession": ("unarchive_session", "tests/test_sessions_typescript.py::test_an_archive_either_sdk_writes_the_other_reads"),
    "listSessions": ("list_sessions", "tests/test_sessions_typescript.py::test_include_programmatic_leaves_out_what_typescript_leaves_out"),
    "getSessionMessages": ("get_session_messages", "tests/test_sessions_typescript.py::test_include_system_messages_as_typescript"),
    "getSessionInfo": ("get_session_info", "tests/test_sessions_typescript.py::test_an_archive_either_sdk_writes_the_other_reads"),
    "resolveSettings": ("resolve_settings", "tests/test_sessions_typescript.py::test_settings_resolve_as_typescript_resolves_them"),
    "filterEscalatingDefaultMode": ("filter_escalating_default_mode", "tests/test_sessions_typescript.py::test_settings_resolve_as_typescript_resolves_them"),
    "createSdkMcpServer": ("create_sdk_mcp_server", "tests/test_realcli_mcp.py::test_model_calls_sdk_tool"),
    "tool": ("tool", "tests/test_realcli_mcp.py::test_model_calls_sdk_tool"),
    "query": ("query", "tests/test_realcli_control.py::test_permission_allow"),
    "deleteSession": ("delete_session", None),
    "forkSession": ("fork_session", None),
    "renameSession": ("rename_session", None),
    "tagSession": ("tag_session", None),
    "getSubagentMessages": ("get_subagent_messages", None),
    "listSubagents": ("list_subagents", None),
    "importSessionToStore": ("import_session_to_store", None),
    "foldSessionSummary": ("fold_session_summary", None),
    "startup": ("prewarm", "tests/test_realcli_prewarm.py::test_query_takes_the_warm_session"),
    "prewarm": ("SparePool", "tests/test_realcli_spares.py::test_an_extra_directory_and_the_model_follow_the_claim"),
    "matchDeniedModels": LeftOut("its matching is the CLI's internals (aliases, path tails, model overrides) and, as "
                                 "TypeScript says, grants nothing: ask the CLI (supported_models) instead"),
}
