"""The page's Bind IDE / Unbind IDE: the same merge as :meth:`ClaudeClient.bind_ide`, for a
session the relay watches, sent as a control request of the relay's own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import ide
from ._hub import Hub, WatchedSession


def page_binding(hub: Hub, session: WatchedSession, bind: bool, port: Any,
                 answer: Callable[[dict[str, Any]], None]) -> str | None:  # fmt: skip
    """Bind (or unbind) ``session`` to an IDE; the CLI's answer reaches the page as an ``ide``
    envelope. ``None`` when the request was sent, else why not."""
    if not hub.steer:
        return "this relay is read-only: the program did not allow steering"
    current = dict(session.mcp_servers) if session.mcp_servers is not None else {}
    if bind:
        try:
            lock = ide.choose(session.cwd, session.ide_env, port if isinstance(port, int) else None)
        except ide.NoIdeError as e:
            return str(e)
        servers = ide.bound(current, lock)
        done = f"bound to {lock.ide_name} on port {lock.port}"
    else:
        servers = ide.unbound(current)
        done = "IDE unbound"

    def on_answer(response: dict[str, Any]) -> None:
        given = response.get("response")
        body: dict[str, Any] = given if isinstance(given, dict) else {}
        refusal = (body.get("errors") or {}).get(ide.IDE_KEY) if bind else None
        if response.get("subtype") == "success" and not refusal:
            session.mcp_servers = servers
            answer({"k": "ide", "session": session.key, "text": done})
        elif refusal:
            answer({"k": "ide", "session": session.key, "text": f"the CLI did not bind the IDE: {refusal}"})
        else:
            answer({"k": "ide", "session": session.key, "text": f"the CLI refused: {response.get('error')}"})

    return hub.control(session, {"subtype": "mcp_set_servers", "servers": servers}, on_answer)
