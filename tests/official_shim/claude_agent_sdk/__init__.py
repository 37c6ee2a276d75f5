"""claude_sdkurl dressed as claude_agent_sdk, to run the official package's own tests on it.

Only for ``tests/test_official_suite.py``: with this directory first on
``PYTHONPATH``, ``import claude_agent_sdk`` gives our functions. The official
store functions are ``async``; ours are plain, so each is wrapped in a
coroutine here (nothing else changes). The store, likewise, gets ``async``
methods over ours. Private names the official tests import are mapped in
``_internal`` onto our own functions where ours do the same job.
"""

from __future__ import annotations

import functools
from typing import Any

import claude_sdkurl as _ours
from claude_sdkurl import *  # noqa: F403
from claude_sdkurl.stores import InMemorySessionStore as _SyncStore
from claude_sdkurl.types import SessionSummaryEntry  # noqa: F401


def _as_async(fn: Any) -> Any:
    @functools.wraps(fn)
    async def run(*args: Any, **kw: Any) -> Any:
        return fn(*args, **kw)

    return run


for _name in (
    "list_sessions_from_store",
    "get_session_info_from_store",
    "get_session_messages_from_store",
    "list_subagents_from_store",
    "get_subagent_messages_from_store",
    "rename_session_via_store",
    "tag_session_via_store",
    "delete_session_via_store",
    "fork_session_via_store",
    "import_session_to_store",
):
    globals()[_name] = _as_async(getattr(_ours, _name))


class InMemorySessionStore(_SyncStore):
    """Our in-memory store with the official ``async`` methods."""

    append = _as_async(_SyncStore.append)  # type: ignore[assignment]
    load = _as_async(_SyncStore.load)  # type: ignore[assignment]
    list_sessions = _as_async(_SyncStore.list_sessions)  # type: ignore[assignment]
    list_session_summaries = _as_async(_SyncStore.list_session_summaries)  # type: ignore[assignment]
    delete = _as_async(_SyncStore.delete)  # type: ignore[assignment]
    list_subkeys = _as_async(_SyncStore.list_subkeys)  # type: ignore[assignment]

    def get_entries(self, key: Any) -> Any:
        return _SyncStore.load(self, key) or []
