"""How ``query()`` and a client get their session: one ready to be taken (a warm pool's, a
spare pool's), or a cold start whose CLI boots while the session's own modules load.

It imports ``session`` where it is used, so that a program that needs none of it before its CLI
starts loads none. The pools that hold ready sessions register how to take one
(:func:`register_ready`) when their module loads: a program that never loaded them has none, and
nothing is loaded to find out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .launch import launch

if TYPE_CHECKING:
    from ..types import ClaudeAgentOptions
    from .observe import Counter, Trace
    from .session import Session
    from .transport import Transport

_READY: list[tuple[bool, Callable[[ClaudeAgentOptions], Session | None]]] = []  # (warm, take)


def register_ready(take: Callable[[ClaudeAgentOptions], Session | None], *, warm: bool) -> None:
    """Have :func:`take_ready` ask ``take`` for a session (``warm``: a warm pool's, asked first
    and only when warm sessions are wanted; else a spare pool's)."""
    if (warm, take) not in _READY:
        _READY.append((warm, take))
        _READY.sort(key=lambda entry: not entry[0])  # warm ones first


def take_ready(options: ClaudeAgentOptions, *, warm: bool = True) -> Session | None:
    """A session already started for ``options``: a warm one (:func:`~claude_sdkurl.prewarm`,
    only with ``warm``) or a spare's (:class:`~claude_sdkurl.SparePool`), else ``None``."""
    for is_warm, take in list(_READY):
        if is_warm and not warm:
            continue
        ready = take(options)
        if ready is not None:
            return ready
    return None


def start_cold(
    options: ClaudeAgentOptions, transport: Transport | None, trace: Trace, ledgers: Sequence[Counter] | None = None
) -> Session:
    """A session on a new CLI, started (``initialize`` answered), with ``trace`` and ``ledgers``.

    The launch is planned and a local CLI's process started first; the session's modules are
    imported after, while it boots. Whatever fails on the way stops that CLI: before the session
    took the launch over, here (:meth:`Launch.discard <claude_sdkurl._engine.launch.Launch.discard>`);
    after, in the session's own start.
    """
    with trace.launching():  # our span is the CLI's W3C parent
        launched = launch(options, transport, spawn=True)
        try:
            from .session import Session

            session = Session(options)
            session.trace = trace
            if ledgers:
                session.ledgers = [*ledgers]
        except BaseException:
            launched.discard()
            raise
        session.start(launched=launched)
    return session
