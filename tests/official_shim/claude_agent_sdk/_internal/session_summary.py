from claude_sdkurl.sessions._summary import fold_session_summary, summary_to_info as summary_entry_to_sdk_info  # noqa: F401
