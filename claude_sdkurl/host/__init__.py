"""A session host: one process that owns the Claude Code CLIs of a machine's conversations, so
that every worker process of a web app (and every restart of them) reaches the same live CLIs.

::

    # once per machine (or as a service: python -m claude_sdkurl.host)
    from claude_sdkurl import host
    serving = host.serve()                      # a Unix socket in a private directory

    # in each worker, the same API as in-process conversations
    from claude_sdkurl import ClaudeAgentOptions, Conversations
    chats = Conversations(ClaudeAgentOptions(cwd="/srv/app"), host=host.default_socket_path())
    for message in chats.send("user-42", "Hello again"):
        ...

A turn sent from any worker runs on the conversation's live CLI in the host; the messages stream
back to the worker, and ``can_use_tool`` is asked of the worker that sent the turn (its callback
stays in its process). Restarting the workers leaves the CLIs live. See
``docs/guide/deployment.md`` for what survives what, and :mod:`claude_sdkurl.host._server` for
who may attach and what happens when a caller or the host goes away.
"""

from __future__ import annotations

import os
from typing import Any

from ._client import HostLink
from ._server import SessionHost, default_socket_path
from ._wire import HostError, HostGoneError, HostOptionError, HostUnreachableError

__all__ = ["HostError", "HostGoneError", "HostLink", "HostOptionError", "HostUnreachableError", "SessionHost",
           "default_socket_path", "serve"]  # fmt: skip


def serve(path: str | os.PathLike[str] | None = None, **conversations: Any) -> SessionHost:
    """Start a session host in this process, at ``path`` (default: :func:`default_socket_path`).
    ``conversations``: ``max_live``, ``idle_timeout``, ``lease_ttl``, ``store``, as for
    :class:`~claude_sdkurl.Conversations`. :class:`HostError` when another host serves there or
    the directory is not private to this user."""
    return SessionHost(path, **conversations)
