"""Session management: list, read, rename, tag, delete and fork Claude Code sessions.

On local disk (``list_sessions`` ... ``fork_session``, as in the official SDK)
or on any :class:`~claude_sdkurl.types.SessionStore` (the ``*_from_store`` /
``*_via_store`` functions: plain functions here, ``async`` in the official SDK;
the store's own methods may be either). Every name is also importable from
``claude_sdkurl``.
"""

from .._sessionpaths import project_key_for_directory
from ..types import ForkSessionResult, SDKSessionInfo, SessionMessage
from ._disk import (
    get_session_info,
    get_session_messages,
    get_subagent_messages,
    list_sessions,
    list_subagents,
)
from ._mutations import delete_session, fork_session, rename_session, tag_session
from ._summary import fold_session_summary
from ._via_store import (
    delete_session_via_store,
    fork_session_via_store,
    get_session_info_from_store,
    get_session_messages_from_store,
    get_subagent_messages_from_store,
    import_session_to_store,
    list_sessions_from_store,
    list_subagents_from_store,
    rename_session_via_store,
    tag_session_via_store,
)

__all__ = [
    "list_sessions",
    "get_session_info",
    "get_session_messages",
    "list_subagents",
    "get_subagent_messages",
    "rename_session",
    "tag_session",
    "delete_session",
    "fork_session",
    "project_key_for_directory",
    "fold_session_summary",
    "import_session_to_store",
    "list_sessions_from_store",
    "get_session_info_from_store",
    "get_session_messages_from_store",
    "list_subagents_from_store",
    "get_subagent_messages_from_store",
    "rename_session_via_store",
    "tag_session_via_store",
    "delete_session_via_store",
    "fork_session_via_store",
    "SDKSessionInfo",
    "SessionMessage",
    "ForkSessionResult",
]
