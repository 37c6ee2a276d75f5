"""Spare CLIs: started before the folder is known, bound to a session when a query comes.

A spare is a Claude Code CLI (2.1.330 and later, over stdio) started with ``--await-claim`` in a
private parking folder and taken through ``initialize``; a query later *claims* it with the
``claim_session`` control request (folder, permission mode, extra directories, environment, agents,
an appended system prompt, a title), with a settings overlay through ``apply_flag_settings`` ahead
of it, then sets the model, thinking budget and the settings that follow a claim through their own
control requests and sends the prompt. The CLI's start-up (about half a second) is paid before the
query, whatever folder it is for. The TypeScript SDK's ``prewarm()`` -> ``SpareProcess.claim()`` is
the same exchange; our :func:`~claude_sdkurl.prewarm` keeps sessions for one options object
instead.

:class:`SparePool` keeps ``size`` spares for a host's options (callbacks, hooks, in-process MCP
servers and every option that is not claimed are bound when a spare starts) and replaces each one
claimed once the claimed session has its first output from the model (or 0.5 s after the claim, or
at its close): a CLI's start-up is a burst of CPU that would slow the claimed session's own set-up.
While it is open, :func:`~claude_sdkurl.query`, a :class:`~claude_sdkurl.ClaudeClient` and
``run_batch`` on threads take a spare when the options *fit* (equal to the host's but for ``cwd``,
``permission_mode``, ``add_dirs``, ``model``, ``max_thinking_tokens``, ``env`` variables added or
changed, ``agents`` where the host has none, a ``system_prompt`` that appends to the default one
where the host sets none, a ``title``, and ``settings`` without hook keys where the host has none)
and start cold when none does. A claim the CLI refuses (``cwd_not_found``,
``env_key_not_claimable``, ``project_settings_not_claimable``, ``permission_mode_not_claimable``,
``settings_not_applied``, ``claim_failed``, ...) ends that spare and the query starts cold,
transparently: logged, and counted in :attr:`SparePool.stats`. ``option_not_applied`` alone runs on
the spare, as in TypeScript.

Threads: ``claude-sdkurl-spare`` starts one spare (a pool starts up to ``size`` at once); each
start is bounded by the session's connect and ``initialize`` timeouts. ``claude-sdkurl-refill``,
one per claim, waits at most 0.5 s to start the replacement (cancelled when the claimed session
answers first, and when the pool closes). Every spare is a CLI in its own process group with the
detached orphan watcher of every CLI, so none outlives the pool, the program, or a program killed
outright.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any

from ._engine import spares as _spares
from ._engine.lifecycle import Messages, made_at, warn_collected
# (the machinery's own names, importable from here as before; not the public surface)
from ._engine.spares import CLAIMABLE, RUNS_ANYWAY, ClaimRefused, Spare, fits, resident_mb  # noqa: F401
from .client import ClaudeClient
from .query import query as _query
from .types import ClaudeAgentOptions, Message

__all__ = ["SparePool"]


class SparePool(_spares.SparePool):
    """Keeps ``size`` spare CLIs for ``options`` (the host's) and refills behind each claim.

    ``max_memory_mb`` caps the resident memory of the parked spares together (measured per CLI
    from ``/proc``); ``idle_timeout`` stops a spare parked longer than that many seconds. A
    context manager; use it from any thread. While open, :func:`~claude_sdkurl.query`,
    :class:`~claude_sdkurl.ClaudeClient` and ``run_batch`` on threads take a spare when their
    options fit (see the module doc) and start cold otherwise; :meth:`query` and :meth:`client`
    use this pool first. ``stats`` counts ``started``, ``claimed``, ``cold``, ``replaced``,
    ``reaped``, ``refused:<code>`` and ``abandoned`` (parking folders of programs killed before
    they closed their pool, removed when this one opened). A pool collected while open stops
    its spares, with a ``ResourceWarning`` naming where it was made.
    """

    def __init__(self, size: int = 1, options: ClaudeAgentOptions | None = None, *, max_memory_mb: float | None = None,
                 idle_timeout: float | None = None) -> None:  # fmt: skip
        self._made_at = made_at()
        super().__init__(size, options, max_memory_mb=max_memory_mb, idle_timeout=idle_timeout)

    def __del__(self) -> None:
        if getattr(self, "_closed", True):
            return
        warn_collected("SparePool", self._made_at, "Write `with SparePool(...) as pool:`, or call close().",
                       self.close)  # fmt: skip

    def query(self, prompt: Any, options: ClaudeAgentOptions | None = None, *, timeout: float | None = None) -> Iterator[Message]:
        """:func:`~claude_sdkurl.query` on a claimed spare of this pool, cold when none fits.
        As ``query()``, nothing starts until the first ``next()``."""
        return Messages(self._first_here(_query(prompt, options or self.options, timeout=timeout)), "pool.query(...)", made_at())

    def _first_here(self, messages: Iterator[Message]) -> Generator[Message, None, None]:
        try:
            with _spares.preferred(self):  # the first next() is where query() takes its session
                first = next(messages)
        except StopIteration:
            return
        try:
            yield first
            yield from messages
        finally:
            close = getattr(messages, "close", None)
            if close is not None:
                close()

    def client(self, options: ClaudeAgentOptions | None = None) -> ClaudeClient:
        """A connected :class:`~claude_sdkurl.ClaudeClient` on a claimed spare (cold when none fits)."""
        client = ClaudeClient(options or self.options)
        with _spares.preferred(self):
            client.connect()
        return client
