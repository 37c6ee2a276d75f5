"""The relay of the protocol notes, for a CLI started by hand with ``--sdk-url``: the relay is
the CLI's SDK side (it sends ``initialize``, answers or shows permission requests) and frontends
watch and, with ``--steer``, write into the session."""

from __future__ import annotations

import json
import logging
import secrets
import threading
from typing import Any

from .._engine.transport._wsserver import Connection, ConnectionClosedError
from ._hub import Hub, WatchedSession, line_type
from ._server import Relay

logger = logging.getLogger("claude_sdkurl.relay")


class StandaloneRelay(Relay):
    """A :class:`Relay` a CLI dials at ``/`` (``--sdk-url ws://host:port/``), with the relay's token
    in ``CLAUDE_CODE_SESSION_ACCESS_TOKEN``. ``auto_approve``: allow every ``can_use_tool``
    request at once, as the notes' relays can; else each waits for a frontend's decision."""

    def __init__(self, host: str = "127.0.0.1", port: int = 8765, *, steer: bool = False, auto_approve: bool = False,
                 token: str | None = None, tokenless: bool = False, announce: bool = True) -> None:  # fmt: skip
        self.auto_approve = auto_approve
        self._threads: list[threading.Thread] = []
        super().__init__(host, port, steer=steer, token=token, tokenless=tokenless, announce=False,
                         hub=Hub(steer=steer), on_cli=self._serve_cli)  # fmt: skip
        if announce:
            print(f"claude_sdkurl relay on {self.address}\n"
                  f"  start the CLI with: CLAUDE_CODE_SESSION_ACCESS_TOKEN={self.token} claude --sdk-url ws://{self.address}/ "
                  f"--print --input-format stream-json --output-format stream-json --verbose\n"
                  f"  watch at: {self.url}\n  frontends: {self.ws_url}", flush=True)  # fmt: skip
            if not (steer or auto_approve):
                print("  read-only: a tool call the CLI asks about waits until the CLI gives up "
                      "(--steer lets the page decide, --auto-approve allows all)", flush=True)

    def _serve_cli(self, conn: Connection) -> None:
        def inject(line: str) -> None:
            try:
                conn.send_text(line)  # the CLI splits what it reads on newlines: the line keeps its own
            except ConnectionClosedError as e:
                raise OSError("the CLI is gone") from e
            self.hub.feed(session, "sdk", line)

        session = self.hub.add_session("websocket", inject)
        inject(json.dumps({"type": "control_request", "request_id": f"relay-{secrets.token_hex(8)}",
                           "request": {"subtype": "initialize"}}) + "\n")  # fmt: skip

        def on_message(data: bytes) -> None:
            self.hub.feed(session, "cli", data)
            for raw in data.split(b"\n"):
                if raw.strip() and line_type(raw.decode("utf-8", "replace")) == "control_request":
                    self._control_request(session, raw)

        try:
            conn.run(on_message)
        finally:
            self.hub.ended(session, None)

    def _control_request(self, session: WatchedSession, raw: bytes) -> None:
        try:
            frame = json.loads(raw)
        except ValueError:
            return
        request = frame.get("request") or {}
        request_id = frame.get("request_id")
        if not isinstance(request, dict) or not isinstance(request_id, str):
            return
        if request.get("subtype") != "can_use_tool":
            self._answer(session, request_id, error=f"the relay answers no {request.get('subtype')!r} requests")
            return
        given = request.get("input")
        tool_input: dict[str, Any] = given if isinstance(given, dict) else {}
        if self.auto_approve:
            self._answer(session, request_id, {"behavior": "allow", "updatedInput": tool_input})
            return
        suggestions = request.get("permission_suggestions")
        ask = self.hub.open_ask(str(request.get("tool_use_id") or request_id), str(request.get("tool_name")), tool_input,
                                suggestions if isinstance(suggestions, list) else None)  # fmt: skip

        def wait() -> None:
            ask.decided.wait()
            self.hub.close_ask(ask)
            if ask.decision == "allow":
                allowed: dict[str, Any] = {"behavior": "allow", "updatedInput": ask.updated_input if ask.updated_input is not None else tool_input}
                if ask.updated_permissions:
                    allowed["updatedPermissions"] = ask.updated_permissions
                self._answer(session, request_id, allowed)
            elif ask.decision == "deny":
                self._answer(session, request_id, {"behavior": "deny", "message": ask.reason or "Denied from the relay."})

        thread = threading.Thread(target=wait, name="claude-sdkurl-relay-ask", daemon=True)
        thread.start()

    def _answer(self, session: WatchedSession, request_id: str, response: dict[str, Any] | None = None,
                error: str | None = None) -> None:  # fmt: skip
        body: dict[str, Any] = {"request_id": request_id}
        if error is None:
            body.update(subtype="success", response=response or {})
        else:
            body.update(subtype="error", error=error)
        try:
            session.inject(json.dumps({"type": "control_response", "response": body}) + "\n")
        except OSError:
            pass
