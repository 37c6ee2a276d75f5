from claude_sdkurl._engine.paths import key_for_file as file_path_to_session_key, project_key_for_directory  # noqa: F401
