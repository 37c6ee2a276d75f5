"""Watch, and if the program allows, steer every session a process runs, from a browser or any
frontend written for the protocol notes' relays.

::

    from claude_sdkurl import query, relay

    with relay.serve(port=8765):          # prints the page's link (with its token) once
        for message in query("Fix the failing test"):
            ...

or, with the program unchanged: ``CLAUDE_SDKURL_RELAY=127.0.0.1:8765 python program.py``.

Every session started while the relay serves (``query()``, clients, batch items, conversations,
spares once claimed, ``%%claude``), over stdio or WebSocket, is shown on one port:

* ``/``: a page (no build step) listing the sessions with their state, cost and turns, the
  transcript of the one chosen, and, when steering is on, the permission requests waiting for a
  person (Allow / Deny), Interrupt and a message box;
* ``/ws``: the raw NDJSON lines both ways and the ``status`` lines of the notes (``claude code
  connected`` / ``is connected`` / ``disconnected``), for frontends such as agents-ui; ``/ws/<key>``
  for one session.

Given the program's ``options``, the page also lists the sessions they would resume (after a
restart too), decides the calls parked in them and continues one with a message (``steer=True``).
Read-only unless ``steer=True``. Loopback, a token, the ``Host`` and ``Origin`` checked,
secrets scrubbed from every line, a slow frontend dropped from rather than waited for: see
``docs/guide/relay.md``. Permission requests reach the page when the program's ``can_use_tool``
is :func:`ask` (or falls back to it).
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import os
import threading
import time
from typing import Any

from .._engine.transport import taps
from ..types import (
    ClaudeAgentOptions,
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionRuleValue,
    PermissionUpdate,
    ToolPermissionContext,
)
from ._hub import Hub
from ._errors import RelayError
from ._launch import NewSessions
from ._server import Relay
from ._tap import RelayTap
from ._token import token_from_file

logger = logging.getLogger("claude_sdkurl.relay")

ENV = "CLAUDE_SDKURL_RELAY"
ENV_STEER = "CLAUDE_SDKURL_RELAY_STEER"
ENV_TOKEN = "CLAUDE_SDKURL_RELAY_TOKEN"
ENV_TOKEN_FILE = "CLAUDE_SDKURL_RELAY_TOKEN_FILE"
ENV_TOKENLESS = "CLAUDE_SDKURL_RELAY_TOKENLESS"
DISCOVERY_PORTS = range(8765, 8775)  # the ports agents-ui probes

_lock = threading.Lock()
_serving: tuple[Relay, RelayTap] | None = None


class ServingRelay(Relay):
    """A :class:`Relay` whose tap shows it the process's sessions; :meth:`close` removes the tap."""

    def close(self) -> None:
        global _serving
        atexit.unregister(self.close)
        with _lock:
            if _serving is not None and _serving[0] is self:
                taps.remove(_serving[1])
                _serving = None
        super().close()


def serve(host: str = "127.0.0.1", port: int = 0, *, steer: bool = False, token: str | None = None,
          tokenless: bool = False, allowed_hosts: tuple[str, ...] = (), announce: bool = True,
          options: ClaudeAgentOptions | None = None, every_project: bool = False, token_file: str | os.PathLike[str] | None = None,
          models: tuple[str, ...] = (), new_sessions: NewSessions | None = None, announced_at: str = "") -> Relay:  # fmt: skip
    """Start the process's relay and show it every session started from now on.

    Args:
        host: where to listen; loopback by default. Another address exposes the sessions to
            whoever can reach it and has the token.
        port: ``0`` for any free port (``relay.port`` says which).
        steer: frontends may decide permission requests, interrupt and send messages.
        token: the token to require (16 characters or more); a random one by default.
        token_file: a file that keeps the token across restarts: read if it exists (a regular
            file of this user's, readable by no one else), else made (0600) with a random token.
            A tab left open on the page then reconnects by itself after the program restarts.
        tokenless: ``/ws`` without the token, for the notes' frontends, which send none:
            loopback only and read-only (``steer`` must be false). The page still needs it.
        allowed_hosts: other names the ``Host`` header may carry (a reverse proxy's).
        announce: print the page's link, with the token, once on standard error.
        options: the options the program's sessions run with. Given, the page also lists the
            sessions they would resume (their ``session_store``, else the CLI's transcripts for
            their ``cwd`` and ``env``), readable after the program that ran them exited, and the
            calls parked in them (:mod:`claude_sdkurl.approvals`); with ``steer``, a person
            decides a parked call (it runs here, once) or continues a stored session with a
            message (a turn run here with ``resume``).
        every_project: with ``options``, list the sessions of every project of the CLI's config
            directory (not only ``options.cwd``'s), to read: a session host's page, whose
            conversations each have a folder of their own. Nothing is decided or continued
            from such a listing (the host's conversations hold leases a page's run would not).
        models: the models the page may switch a session to (``set_model``); none: the models
            each session's CLI offers (its answer to ``initialize``).
        new_sessions: with ``steer``, what a person may start from the page (:class:`NewSessions`:
            the options, the folders, the models and modes allowed); none: nothing.
        announced_at: where the page's link is to be found after a restart (the journal of a
            service, a file): a tab whose token no longer works says so.

    Raises :class:`RelayError` when a relay already serves in this process, or the port is taken.
    """
    global _serving
    with _lock:
        if _serving is not None:
            raise RelayError(f"a relay already serves this process at {_serving[0].address}")
        if new_sessions is not None and new_sessions.options.can_use_tool is None:  # its calls wait for a person on the page
            with_ask = dataclasses.replace(new_sessions.options, can_use_tool=ask(timeout=new_sessions.ask_timeout))
            new_sessions = dataclasses.replace(new_sessions, options=with_ask)
        if token_file is not None:
            if token is not None:
                raise RelayError("give the relay a token or a token file, not both")
            token = token_from_file(token_file)
        relay = ServingRelay(host, port, steer=steer, token=token, tokenless=tokenless,
                             allowed_hosts=allowed_hosts, announce=announce, options=options,
                             every_project=every_project, models=models, new_sessions=new_sessions,
                             announced_at=announced_at)  # fmt: skip
        tap = RelayTap(relay.hub)
        taps.install(tap)
        _serving = (relay, tap)
    atexit.register(relay.close)  # a program that ends: its last lines reach the frontends first
    return relay


def current() -> Relay | None:
    """The relay serving this process, if any."""
    with _lock:
        return _serving[0] if _serving is not None else None


def from_environment() -> Relay | None:
    """Start the relay ``CLAUDE_SDKURL_RELAY`` asks for (``host:port``, or a port), if it is set
    and none serves yet. When the port is taken (another worker of the same app), the next of
    the ten ports agents-ui probes is tried; none free: a warning, and no relay."""
    wanted = os.environ.get(ENV, "").strip()
    if not wanted or current() is not None:
        return current()
    host, _, port_text = wanted.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port_text)
    except ValueError:
        logger.warning("%s=%r is not host:port: no relay started", ENV, wanted)
        return None
    ports = [port] + [p for p in DISCOVERY_PORTS if p > port] if port in DISCOVERY_PORTS else [port]
    steer = os.environ.get(ENV_STEER, "") not in ("", "0", "false", "no")
    tokenless = os.environ.get(ENV_TOKENLESS, "") not in ("", "0", "false", "no")
    last: Exception | None = None
    for candidate in ports:
        try:
            return serve(host, candidate, steer=steer, token=os.environ.get(ENV_TOKEN) or None, tokenless=tokenless,
                         token_file=os.environ.get(ENV_TOKEN_FILE) or None)  # fmt: skip
        except RelayError as e:
            last = e
            if "cannot listen" not in str(e):
                break
    logger.warning("no relay started: %s", last)
    return None


def ask(timeout: float | None = None, otherwise: Any = None) -> Any:
    """A ``can_use_tool`` callback that shows each request on the relay's page (and to ``/ws``
    frontends) and waits for a person's Allow or Deny.

    The first decision for a request is the one taken, for the tool name and input shown; a
    request the CLI cancelled, the session ended or the program stopped waiting for can no longer
    be decided. ``timeout``: seconds to wait, then ``otherwise`` decides (a ``can_use_tool``
    callback; by default the call is denied). With no relay serving with ``steer=True``,
    ``otherwise`` decides at once (denied by default): nobody could answer.
    """

    def denied(why: str) -> PermissionResultDeny:
        return PermissionResultDeny(message=why)

    def fallback(tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext, why: str) -> Any:
        if otherwise is None:
            return denied(why)
        from .._engine.usercode import call_user

        return call_user(otherwise, tool_name, tool_input, context)

    def can_use_tool(tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext) -> Any:
        relay = current()
        if relay is None or not relay.steer or relay.closed:
            return fallback(tool_name, tool_input, context, "No relay with steering is serving: nobody could allow this call.")
        tool_use_id = context.tool_use_id or f"untracked-{id(context)}"
        hub: Hub = relay.hub
        request = hub.open_ask(tool_use_id, tool_name, tool_input, _wire(context.suggestions))
        try:
            deadline = None if timeout is None else time.monotonic() + timeout
            while not request.decided.wait(0.5 if deadline is None else max(0.0, min(0.5, deadline - time.monotonic()))):
                if deadline is not None and time.monotonic() >= deadline:
                    break
                if relay.closed:
                    break
        finally:
            hub.close_ask(request)
        if request.decision == "allow":
            return PermissionResultAllow(updated_input=request.updated_input,
                                         updated_permissions=[_update(u) for u in request.updated_permissions or ()] or None)  # fmt: skip
        if request.decision == "deny":
            return denied(request.reason or f"Denied by a person watching the session ({request.who}).")
        if request.gone is not None and request.gone != "the program stopped waiting":
            return denied(f"Not decided: {request.gone}.")
        return fallback(tool_name, tool_input, context, f"Nobody decided within {timeout} s on the relay.")

    return can_use_tool


def _wire(suggestions: list[PermissionUpdate] | None) -> list[dict[str, Any]]:
    """The CLI's suggestions in their wire form (one that cannot be written is left out)."""
    out = []
    for suggestion in suggestions or ():
        try:
            out.append(suggestion.to_dict())
        except (ValueError, AttributeError):
            continue
    return out


def _update(wire: dict[str, Any]) -> PermissionUpdate:
    """A rule the page allowed always (``addRules`` / ``allow`` for the session: see
    :meth:`Ask.offered`) as the update the SDK sends."""
    rules = [PermissionRuleValue(r["toolName"], r.get("ruleContent")) for r in wire["rules"]]
    return PermissionUpdate(type="addRules", rules=rules, behavior="allow", destination="session")


__all__ = ["NewSessions", "Relay", "RelayError", "ask", "current", "from_environment", "serve"]
