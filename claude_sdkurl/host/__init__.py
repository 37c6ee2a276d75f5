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
``docs/guide/deployment.md`` for what happens when things fail, and :mod:`claude_sdkurl.host._server` for
who may attach and what happens when a caller or the host goes away.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ._client import HostLink
from ._server import SessionHost, default_socket_path, private_dir
from ._spawn import HostedProcess, HostSpawner
from ._wire import HostError, HostGoneError, HostOptionError, HostUnreachableError

__all__ = ["HostError", "HostGoneError", "HostLink", "HostOptionError", "HostSpawner", "HostUnreachableError", "HostedProcess",
           "SessionHost", "default_socket_path", "ensure", "serve", "spawner"]  # fmt: skip


def spawner(path: str | os.PathLike[str] | None = None) -> HostSpawner:
    """For ``ClaudeAgentOptions(spawn_claude_code_process=host.spawner())``: the CLI of a
    ``query()``, a ``ClaudeClient`` or a batch item is started by the session host at ``path``
    (default: :func:`default_socket_path`) and talks to this process over pipes of its own;
    callbacks stay here. It lives as long as its query (see :mod:`claude_sdkurl.host._spawn`)."""
    return HostSpawner(path if path is not None else default_socket_path())


def serve(path: str | os.PathLike[str] | None = None, **conversations: Any) -> SessionHost:
    """Start a session host in this process, at ``path`` (default: :func:`default_socket_path`).
    ``conversations``: ``max_live``, ``idle_timeout``, ``lease_ttl``, ``lease_wait``, ``store``, as for
    :class:`~claude_sdkurl.Conversations`; ``session_store``: the transcripts of every
    conversation whose caller names none (hosts on several machines sharing a ``store`` and a
    ``session_store`` go on with a conversation on any of them); ``answer_timeout`` (default
    300): seconds a ``can_use_tool``, hook or in-process MCP question waits for the worker that
    sent the turn, after which the host answers it (a deny the model sees the reason of; ``None``:
    it waits). A host restarted at ``path`` takes its dead predecessor's leases over at once
    (see :mod:`claude_sdkurl.host._holder`). :class:`HostError` when another host serves there
    or the directory is not private to this user."""
    return SessionHost(path, **conversations)


def ensure(path: str | os.PathLike[str] | None = None, *, wait: float = 30.0, args: tuple[str, ...] = ()) -> Path:
    """The socket of a session host serving at ``path``; when none answers, one is started for
    it: ``python -m claude_sdkurl.host`` in a session of its own, outliving this process (its
    output in ``host.log`` beside the socket, 0600). Several processes asking at once start one
    host between them (the host's lock decides; the others' exit at once). ``args``: more of the
    command's flags (``("--max-live", "16")``). :class:`HostError` when none answers within
    ``wait`` seconds (with the end of its log)."""
    where = Path(path) if path is not None else default_socket_path()
    link = HostLink(where)
    try:
        link.ping()
        return where
    except HostUnreachableError:
        pass
    private_dir(where.parent)
    log_path = where.parent / "host.log"
    log = os.open(log_path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600)
    try:
        started = subprocess.Popen([sys.executable, "-m", "claude_sdkurl.host", "--socket", str(where), *args],
                                   stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True)  # fmt: skip
    finally:
        os.close(log)
    deadline = time.monotonic() + wait
    while True:
        try:
            link.ping()
            return where
        except HostUnreachableError:
            pass
        code = started.poll()
        if (code is not None and code != 2) or time.monotonic() > deadline:  # 2: another host won the lock
            try:
                tail = log_path.read_text(errors="replace")[-2000:]
            except OSError:
                tail = ""
            raise HostError(f"no session host answered at {where} within {wait:g} s (exit {code}); its log ends:\n{tail}")
        time.sleep(0.05)
