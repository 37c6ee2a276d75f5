"""Claude Code session transcripts: list, read, rename, tag, delete and fork them, on
this machine's disk or in any :class:`~claude_sdkurl.types.SessionStore`; and, for a
live session, resume from a store and mirror into one.

The wing, from the ground up (each module imports only those above it in this list, plus the
ground floor and the engine's store mechanics: ``_engine.paths`` where transcripts are and the
store keys that name them, ``_engine.storecall`` how a store is called; never the session, the
launch or the control handlers):

==================  ==========================================================
``_text``           a listing row from a transcript's head and tail
``_chain``          entries -> the conversation (branches, parallel tool calls)
``_edits``          titles, tags and forks as entries
``_summary``        the per-session record a store folds on append
``_local``          the functions on disk
``_stored``         the functions on a store, and importing into one
==================  ==========================================================

Resuming a live session from a store and mirroring it into one are the engine's
(``_engine.resume``, ``_engine.mirror``). The disk functions are synchronous, as in the official
SDK; the store ones are plain functions here (``async`` there), and the store's own methods may be
either. Every public name is also importable from ``claude_sdkurl``. Each is imported when first
asked for, so that a run loads none of the listing and store functions.
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..types import ForkSessionResult, SDKSessionInfo, SessionMessage
    from ._local import (
        archive_session,
        delete_session,
        fork_session,
        get_session_info,
        get_session_messages,
        get_subagent_messages,
        list_sessions,
        list_subagents,
        rename_session,
        tag_session,
        unarchive_session,
    )
    from .._engine.paths import project_key_for_directory
    from ._stored import (
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
    from ._summary import fold_session_summary

__all__ = [
    "archive_session",
    "unarchive_session",
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

_HOME: dict[str, str] = {
    **dict.fromkeys(
        (
            "archive_session delete_session fork_session get_session_info get_session_messages "
            "get_subagent_messages list_sessions list_subagents rename_session tag_session unarchive_session"
        ).split(),
        "._local",
    ),
    "project_key_for_directory": ".._engine.paths",
    "fold_session_summary": "._summary",
    **dict.fromkeys("ForkSessionResult SDKSessionInfo SessionMessage".split(), "..types"),
}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_import_module(_HOME.get(name, "._stored"), __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
