"""How ``query()`` and a client get their session: one ready to be taken (a warm pool's, a
spare pool's), or a cold start whose CLI boots while the session's own modules load.

Public-face level (above the engine): it imports ``_session``, ``prewarm`` and ``_spares`` where
they are used, so that a program that needs none of them before its CLI starts loads none.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ._launch import launch

if TYPE_CHECKING:
    from ._session import Session
    from ._transport import Transport
    from .ledger import CostLedger
    from .tracing import RunTrace
    from .types import ClaudeAgentOptions


def take_ready(options: ClaudeAgentOptions, *, warm: bool = True) -> Session | None:
    """A session already started for ``options``: a warm one (:func:`~claude_sdkurl.prewarm`,
    only with ``warm``) or a spare's (:class:`~claude_sdkurl.SparePool`), else ``None``. Either
    exists only where its module was loaded: a program that never loaded them has none, and
    does not load them to find out."""
    prewarm = sys.modules.get("claude_sdkurl.prewarm") if warm else None
    spares = sys.modules.get("claude_sdkurl._spares")
    ready: Session | None = prewarm.take_warm(options) if prewarm is not None else None
    if ready is None and spares is not None:
        ready = spares.take_spare(options)
    return ready


def start_cold(
    options: ClaudeAgentOptions, transport: Transport | None, trace: RunTrace, ledgers: list[CostLedger] | None = None
) -> Session:
    """A session on a new CLI, started (``initialize`` answered), with ``trace`` and ``ledgers``.

    The launch is planned and a local CLI's process started first; the session's modules are
    imported after, while it boots. Whatever fails on the way stops that CLI: before the session
    took the launch over, here (:meth:`Launch.discard <claude_sdkurl._launch.Launch.discard>`);
    after, in the session's own start.
    """
    with trace.launching():  # our span is the CLI's W3C parent
        launched = launch(options, transport, spawn=True)
        try:
            from ._session import Session

            session = Session(options)
            session.trace = trace
            if ledgers:
                session.ledgers = [*ledgers]
        except BaseException:
            launched.discard()
            raise
        session.start(launched=launched)
    return session
