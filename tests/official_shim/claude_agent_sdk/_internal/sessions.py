"""The official private session helpers the official tests import, as our equivalents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from claude_sdkurl import (  # noqa: F401
    get_session_info,
    get_session_messages,
    get_subagent_messages,
    list_sessions,
    list_subagents,
)
from claude_sdkurl.sessions import _chain, _text
from claude_sdkurl._engine import paths as _paths

from .. import list_sessions_from_store  # noqa: F401

MAX_SANITIZED_LENGTH = _paths.NAME_LIMIT
LITE_READ_BUF_SIZE = _text.WINDOW
_sanitize_path = _paths.project_dir_name
_simple_hash = _paths._path_hash
_canonicalize_path = _paths.real_path
_extract_json_string_field = _text.first_field
_extract_last_json_string_field = _text.last_field
_extract_first_prompt_from_head = _text.first_prompt
_read_session_lite = _text.Ends.of_file
_parse_session_info_from_lite = _text.info_from_ends
_build_conversation_chain = _chain.conversation
_entries_to_jsonl = _text.as_jsonl


def _validate_uuid(text: str) -> str | None:
    return text if _paths.is_session_id(text) else None


def _get_projects_dir(env: dict[str, str] | None = None) -> Path:
    return _paths.projects_dir(env)


def _jsonl_to_lite(jsonl: str, mtime: int) -> Any:
    return _text.Ends.of_bytes(jsonl.encode("utf-8"), mtime)

from claude_sdkurl.sessions._stored import PARALLEL_LOADS as _STORE_LIST_LOAD_CONCURRENCY  # noqa: E402
