"""The relay's listening side: one port, a page at ``/``, the notes' ``/ws`` (and ``/ws/<key>``
for one session), the page's own ``/events``, and, for the standalone relay, the CLI's
``--sdk-url`` connection at ``/``.

Every request is checked before any WebSocket exists (:meth:`Relay._decide`): the ``Host``
must name this relay (a loopback name and the port, or a name the program allowed), against DNS
rebinding; an ``Origin``, when a browser sends one, must be this relay's own, against
cross-site WebSocket hijacking; the token must be given (``?token=``, ``Authorization: Bearer``
or the cookie the page sets), compared in constant time. Only ``/ws`` and ``/ws/<key>`` may go
without a token, and only when the program asked for that (``tokenless=True``, loopback,
read-only).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import secrets
import sys
import threading
import urllib.parse
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from websockets.http11 import Request

from .._engine.transport._wsserver import Connection, ConnectionClosedError, Listener, Refusal, Reply
from ._catalog import STORED_PREFIX, Catalog
from ._errors import RelayError
from ._hub import MAX_FRONTEND_LINE, Frontend, Hub, WatchedSession, scrub, secret_values
from ._launch import Launcher

logger = logging.getLogger("claude_sdkurl.relay")

MAX_FRONTENDS = 200
MAX_MESSAGE = 16 * 1024 * 1024  # the CLI's lines in the standalone relay can be long
CATALOG_SECONDS = 3.0  # how often the stored sessions and parked calls are read again while a page is open


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class Relay:
    """A serving relay (see :func:`claude_sdkurl.relay.serve`)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, steer: bool = False, token: str | None = None,
                 tokenless: bool = False, allowed_hosts: tuple[str, ...] = (), announce: bool = True,
                 hub: Hub | None = None, on_cli: Callable[[Connection], None] | None = None,
                 options: Any = None, every_project: bool = False, models: tuple[str, ...] = (),
                 new_sessions: Any = None, announced_at: str = "") -> None:  # fmt: skip
        if tokenless and not _is_loopback(host):
            raise RelayError("a tokenless relay listens on loopback only: anyone who can reach the port could watch")
        if tokenless and steer:
            raise RelayError("a tokenless relay is read-only: steering needs the token")
        if token is not None and len(token) < 16:
            raise RelayError("a relay token has 16 characters or more")
        self.host = host
        self.steer = steer
        self.tokenless = tokenless
        self.token = token if token is not None else secrets.token_urlsafe(24)
        self.hub = hub if hub is not None else Hub(steer=steer)
        self.hub.literals.add(self.token)
        self._on_cli = on_cli
        self.models = tuple(models)  # the models the page may switch a session to (none: each CLI's own list)
        self.launcher: Launcher | None = Launcher(new_sessions, steer, self.hub) if new_sessions is not None else None
        self.hub.page_hello = {"models": list(self.models), "announced_at": announced_at,
                               "new_sessions": new_sessions.public() if new_sessions is not None and steer else None}  # fmt: skip
        self.catalog: Catalog | None = None
        if options is not None:
            secrets_of_options = secret_values(options.env or {})
            self.catalog = Catalog(options, lambda text: scrub(text, self.hub.literals | secrets_of_options), steer, self._running,
                                   every_project)  # fmt: skip
        self._frontend_count = 0
        self._count_lock = threading.Lock()
        # The listener accepts as soon as it is bound, before this relay knows its port and so
        # the Host names it answers to: a connection in that window waits for this (it got a 500).
        self._ready = threading.Event()
        try:
            self._listener = Listener(host, self._handle, MAX_MESSAGE, 2.0, port=port)
        except OSError as e:
            self.hub.close()
            raise RelayError(f"the relay cannot listen on {host}:{port}: {e.strerror or e}") from e
        self.port = self._listener.port
        names = {"127.0.0.1", "localhost", "[::1]"} if _is_loopback(host) else {host if ":" not in host else f"[{host}]"}
        names |= set(allowed_hosts)
        self._hosts = {f"{name}:{self.port}" for name in names}
        self._origins = {f"http://{h}" for h in self._hosts}
        self._cookie = f"claude_sdkurl_relay_{self.port}"
        self.closed = False
        self._poke = threading.Event()  # read the stored sessions again now (a turn ended)
        self._watcher: threading.Thread | None = None
        if self.catalog is not None:
            self.hub.turn_listeners.append(lambda _session: self._poke.set())
            self._watcher = threading.Thread(target=self._watch_catalog, name="claude-sdkurl-relay-catalog", daemon=True)
            self._watcher.start()
        self._ready.set()
        if announce and not _shown_in_a_notebook(self.url):
            print(f"claude_sdkurl relay: watch at {self.url}", file=sys.stderr, flush=True)

    @property
    def address(self) -> str:
        shown = self.host if ":" not in self.host else f"[{self.host}]"
        return f"{shown}:{self.port}"

    @property
    def url(self) -> str:
        """The page, with its token (the link to open; it sets a cookie and the page drops it)."""
        return f"http://{self.address}/?token={self.token}"

    @property
    def ws_url(self) -> str:
        """The notes' ``/ws``, with the token."""
        return f"ws://{self.address}/ws?token={self.token}"

    # ------------------------------------------------------------------ deciding on a request

    def _token_given(self, request: Request, query: dict[str, list[str]]) -> str | None:
        values = query.get("token") or []
        if len(values) == 1:
            return values[0]
        auth = request.headers.get_all("Authorization")
        if len(auth) == 1 and auth[0].startswith("Bearer "):
            return auth[0][7:]
        for header in request.headers.get_all("Cookie"):
            for part in header.split(";"):
                name, _, value = part.strip().partition("=")
                if name == self._cookie:
                    return value
        return None

    def _authorized(self, request: Request, query: dict[str, list[str]]) -> bool:
        given = self._token_given(request, query)
        return given is not None and hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode())

    def _decide(self, request: Request) -> None:
        hosts = request.headers.get_all("Host")
        if len(hosts) != 1 or hosts[0].lower() not in self._hosts:
            raise Refusal(HTTPStatus.FORBIDDEN, "Forbidden: this relay does not answer to that Host\n")
        origins = request.headers.get_all("Origin")
        if origins and (len(origins) != 1 or origins[0].lower() not in self._origins):
            raise Refusal(HTTPStatus.FORBIDDEN, "Forbidden: cross-origin requests are refused\n")
        parsed = urllib.parse.urlsplit(request.path)
        query = urllib.parse.parse_qs(parsed.query)
        path = parsed.path
        upgrade = request.headers.get("Upgrade", "").lower() == "websocket"
        if path == "/" and not upgrade:
            if not self._authorized(request, query):
                raise Reply(HTTPStatus.UNAUTHORIZED, _TOKEN_PAGE, "text/html; charset=utf-8")
            from ._page import PAGE

            headers = {"Cache-Control": "no-store", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer",
                       "Content-Security-Policy": "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                                                  "connect-src 'self' ws: wss:; img-src data:; frame-ancestors 'none'",
                       "Set-Cookie": f"{self._cookie}={self.token}; HttpOnly; SameSite=Strict; Path=/"}  # fmt: skip
            raise Reply(HTTPStatus.OK, PAGE.encode(), "text/html; charset=utf-8", headers)
        if path == "/ping" and not upgrade:  # the page asks whether it may reconnect (after a restart)
            headers = {"Cache-Control": "no-store"}
            if not self._authorized(request, query):
                raise Reply(HTTPStatus.UNAUTHORIZED, b'{"ok": false, "why": "token"}', "application/json", headers)
            raise Reply(HTTPStatus.OK, json.dumps({"ok": True, "instance": self.hub.instance}).encode(), "application/json", headers)
        if not upgrade:
            raise Refusal(HTTPStatus.NOT_FOUND, "Not found\n")
        if path == "/" and self._on_cli is not None:
            if origins:
                raise Refusal(HTTPStatus.FORBIDDEN, "Forbidden\n")
            if not self._authorized(request, query):
                raise Refusal(HTTPStatus.UNAUTHORIZED, "Unauthorized\n")
            return
        if path == "/ws" or path.startswith("/ws/"):
            if not (self.tokenless and not origins) and not self._authorized(request, query):
                raise Refusal(HTTPStatus.UNAUTHORIZED, "Unauthorized\n")
            if path.startswith("/ws/") and self.hub.session(path[4:]) is None:
                raise Refusal(HTTPStatus.NOT_FOUND, "No such session\n")
        elif path == "/events":
            if not self._authorized(request, query):
                raise Refusal(HTTPStatus.UNAUTHORIZED, "Unauthorized\n")
        else:
            raise Refusal(HTTPStatus.NOT_FOUND, "Not found\n")
        with self._count_lock:
            if self._frontend_count >= MAX_FRONTENDS:
                raise Refusal(HTTPStatus.SERVICE_UNAVAILABLE, "Too many frontends\n")
            self._frontend_count += 1

    # ------------------------------------------------------------------ connections

    def _handle(self, conn: Connection) -> None:
        if not self._ready.wait(10):  # (a relay that failed to start: nothing to answer with)
            return
        if not conn.handshake(self._decide):
            return
        assert conn.request is not None
        path = urllib.parse.urlsplit(conn.request.path).path
        if path == "/":
            assert self._on_cli is not None
            self._on_cli(conn)
            return
        try:
            if path == "/events":
                self._serve_page(conn)
            else:
                self._serve_notes(conn, path[4:] if path.startswith("/ws/") else None)
        finally:
            with self._count_lock:
                self._frontend_count -= 1

    def _frontend(self, conn: Connection, kind: str, only: str | None) -> Frontend:
        def abort() -> None:
            conn.abort()

        return Frontend(kind, conn.send_frames, abort, only, try_send=conn.try_send_frames)

    def _serve_notes(self, conn: Connection, only: str | None) -> None:
        frontend = self._frontend(conn, "notes", only)
        self.hub.join(frontend)

        def on_message(data: bytes) -> None:
            for raw in data.split(b"\n"):
                if raw.strip():
                    error = self._notes_line(raw, only)
                    if error is not None:
                        frontend.offer(json.dumps({"type": "error", "source": "relay", "error": error}))

        try:
            conn.run(on_message)
        finally:
            self.hub.leave(frontend)
            frontend.join()

    def _target(self, frame: dict[str, Any], only: str | None) -> WatchedSession | str:
        if only is not None:
            found = self.hub.session(only)
            return found if found is not None else f"session {only} is gone"
        session_id = frame.get("session_id")
        if isinstance(session_id, str) and session_id:
            found = self.hub.by_session_id(session_id)
            return found if found is not None else f"no session has the session_id {session_id!r}"
        running = self.hub.running_sessions()
        if len(running) == 1:
            return running[0]
        return "name the session with a session_id: " + ("none is running" if not running else f"{len(running)} are running")

    def _notes_line(self, raw: bytes, only: str | None) -> str | None:
        """Carry out one line a notes frontend wrote; ``None``, or why it was refused."""
        if not self.hub.steer:
            return "this relay is read-only: the program did not allow steering"
        if len(raw) > MAX_FRONTEND_LINE:
            return f"the line is longer than {MAX_FRONTEND_LINE} bytes"
        try:
            frame = json.loads(raw)
        except ValueError:
            return "the line is not JSON"
        if not isinstance(frame, dict):
            return "the line is not a JSON object"
        kind = frame.get("type")
        if kind == "control_response":
            return self._notes_decision(frame)
        if kind == "user":
            message = frame.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            if not isinstance(message, dict) or message.get("role") != "user" or not isinstance(content, (str, list)):
                return "a user line has message.role 'user' and message.content (text or blocks)"
            target = self._target(frame, only)
            return target if isinstance(target, str) else self.hub.message(target, content)
        if kind == "control_request":
            request = frame.get("request")
            if not isinstance(request, dict) or request.get("subtype") != "interrupt":
                return "the only control request a frontend may send is interrupt"
            target = self._target(frame, only)
            return target if isinstance(target, str) else self.hub.interrupt(target)
        return f"a frontend may send user, control_response (a decision) or control_request (interrupt), not {kind!r}"

    def _notes_decision(self, frame: dict[str, Any]) -> str | None:
        """Either format of the notes: agents-ui's ``{request_id, permission: {allow}}`` or the
        loop relay's ``{response: {request_id, subtype, response: {behavior, updatedInput}}}``.
        An ``updatedInput`` other than the input asked about is refused: a decision applies to the
        call as it was shown."""
        permission = frame.get("permission")
        if isinstance(permission, dict):
            allow = permission.get("allow")
            if not isinstance(allow, bool):
                return "permission.allow is true or false"
            return self.hub.decide(frame.get("request_id"), allow)
        response = frame.get("response")
        if not isinstance(response, dict):
            return "a control_response has a permission or a response object"
        body = response.get("response")
        behavior = body.get("behavior") if isinstance(body, dict) else None
        if response.get("subtype") != "success" or behavior not in ("allow", "deny"):
            return "a decision's response.response.behavior is 'allow' or 'deny'"
        assert isinstance(body, dict)
        request_id = response.get("request_id")
        if "updatedInput" in body and behavior == "allow":
            tool_name = self.hub.tool_name_of(request_id)
            return self.hub.decide(request_id, True, shown=(tool_name, body["updatedInput"]) if tool_name is not None else None)
        return self.hub.decide(request_id, behavior == "allow", reason=str(body.get("message") or ""))

    def _serve_page(self, conn: Connection) -> None:
        frontend = self._frontend(conn, "page", None)
        self.hub.join(frontend)

        def answer(envelope: dict[str, Any]) -> None:
            frontend.offer(json.dumps(envelope))

        if self.catalog is not None:
            answer(self._stored_envelope())

        def on_message(data: bytes) -> None:
            for raw in data.split(b"\n"):
                if raw.strip():
                    self._page_op(raw, answer)

        try:
            conn.run(on_message)
        finally:
            self.hub.leave(frontend)
            frontend.join()

    def _page_op(self, raw: bytes, answer: Callable[[dict[str, Any]], None]) -> None:
        try:
            op = json.loads(raw) if len(raw) <= MAX_FRONTEND_LINE else None
        except ValueError:
            op = None
        if not isinstance(op, dict) or not isinstance(op.get("op"), str):
            answer({"k": "error", "error": "the page sent a line the relay does not understand"})
            return
        name = op["op"]
        if name == "history" and str(op.get("session")).startswith(STORED_PREFIX):
            before = op.get("before") if isinstance(op.get("before"), (int, float)) else None  # (a resumed run's earlier turns)
            found_lines = self.catalog.transcript(str(op["session"])[len(STORED_PREFIX):], before) if self.catalog is not None else None
            answer({"k": "history", "s": op.get("session"), "lines": found_lines or [], "dropped": 0,
                    "error": None if found_lines is not None else "no such stored session",
                    "for": op.get("for") if isinstance(op.get("for"), str) else None})  # fmt: skip
            return
        if name == "history":
            lines = self.hub.history(str(op.get("session"))) or []
            found = self.hub.session(str(op.get("session")))  # (every line let go: all it said)
            dropped = lines[0][0] - 1 if lines else found.seq if found is not None else 0
            answer({"k": "history", "s": op.get("session"), "lines": lines, "dropped": dropped})
            return
        session = self.hub.session(str(op.get("session"))) if "session" in op else None
        error: str | None
        if name == "decide":
            error = self.hub.decide(op.get("id"), op.get("allow") is True, shown=(op.get("tool_name"), op.get("input")),
                                    reason=str(op.get("reason") or ""), who="the relay page", edited=op.get("edited"),
                                    always=op.get("always"))  # fmt: skip
        elif name in ("interrupt", "message", "bind_ide", "unbind_ide", "mode", "model") and session is None:
            error = f"no session {op.get('session')!r}"
        elif name == "model":
            assert session is not None

            def switched(refusal: str | None) -> None:
                answer({"k": "done", "op": name, "id": op.get("id"), "session": op.get("session"), "error": refusal})

            error = self.hub.set_model(session, op.get("model"), self.models or session.models, switched)
            if error is None:
                return  # answered when the CLI has
        elif name in ("new_session", "end") and self.launcher is None:
            error = "the program lets no session be started from the page (relay.serve(new_sessions=...))"
        elif name == "new_session":
            assert self.launcher is not None

            def started(key: str | None, failure: str | None) -> None:  # (why it failed may quote its environment: scrubbed)
                assert self.launcher is not None
                hidden = self.hub.literals | secret_values(getattr(self.launcher.config.options, "env", None) or {})
                self.hub.notify_pages({"k": "done", "op": name, "id": op.get("id"), "session": key, "finished": True,
                                       "error": scrub(failure, hidden) if failure is not None else None})  # fmt: skip

            error = self.launcher.start(op, started)
        elif name == "end":
            assert self.launcher is not None
            error = self.launcher.end(op.get("session"))
        elif name == "mode":
            assert session is not None

            def taken(refusal: str | None) -> None:
                answer({"k": "done", "op": name, "id": op.get("id"), "session": op.get("session"), "error": refusal})

            error = self.hub.set_mode(session, op.get("mode"), taken)
            if error is None:
                return  # answered when the CLI has
        elif name == "interrupt":
            assert session is not None
            error = self.hub.interrupt(session)
        elif name == "message":
            assert session is not None
            text = op.get("text")
            error = self.hub.message(session, text) if isinstance(text, str) and text.strip() else "an empty message"
        elif name in ("bind_ide", "unbind_ide"):
            assert session is not None
            from ._ide_ops import page_binding

            error = page_binding(self.hub, session, name == "bind_ide", op.get("port"), answer)
        elif name in ("stored", "decide_parked", "continue") and self.catalog is None:
            error = "the program gave the relay no options: it cannot read or resume stored sessions"
        elif name == "stored":
            answer(self._stored_envelope(fresh=op.get("fresh") is True))
            return
        elif name in ("decide_parked", "continue"):
            assert self.catalog is not None

            def finished(failure: str | None) -> None:  # the run the page started is over
                self.hub.notify_pages({"k": "done", "op": name, "id": op.get("id"), "session": op.get("session_id"),
                                       "error": failure, "finished": True})  # fmt: skip
                self.hub.notify_pages(self._stored_envelope(fresh=True))

            if name == "decide_parked":
                error = self.catalog.decide(op, finished)
            else:
                error = self.catalog.continue_session(op.get("session_id"), op.get("text"), finished)
            if error is None:
                self.hub.notify_pages(self._stored_envelope(fresh=True))
        else:
            error = f"unknown operation {name!r}"
        answer({"k": "done", "op": name, "id": op.get("id"), "session": op.get("session"), "error": error})

    def _stored_envelope(self, fresh: bool = False) -> dict[str, Any]:
        assert self.catalog is not None
        stored, parked = self.catalog.listing(fresh)
        return {"k": "stored", "stored": stored, "parked": parked, "resumable": self.steer and not self.catalog.every_project}

    def _watch_catalog(self) -> None:
        """While a page is open, read the stored sessions and parked calls again every
        ``CATALOG_SECONDS``, and at once when a turn ends (a call parked here); tell the pages
        when what they show changed."""
        assert self.catalog is not None
        last = ""
        while True:
            self._poke.wait(CATALOG_SECONDS)
            self._poke.clear()
            if self.closed:
                return
            if not any(f.kind == "page" for f in list(self.hub.frontends)):
                last = ""  # (a page that connects is sent the listing then)
                continue
            try:
                envelope = self._stored_envelope(fresh=True)
            except Exception:  # pragma: no cover - the catalog logs what it cannot read
                logger.exception("the relay could not list the stored sessions")
                continue
            text = json.dumps(envelope, sort_keys=True)
            if text != last:
                last = text
                self.hub.notify_pages(envelope)

    def _running(self, session_id: str) -> bool:
        found = self.hub.by_session_id(session_id)
        return found is not None and found.running

    # ------------------------------------------------------------------ end

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._poke.set()
        if self.launcher is not None:
            self.launcher.close()  # the sessions a page started
        if self.catalog is not None:
            self.catalog.join(30.0)  # a decision's run, or a continued turn, the page started
        if self._watcher is not None:
            self._watcher.join(10.0)
        self.hub.flush()  # the last lines (a result, "disconnected") still go out
        self.hub.close()
        self._listener.close()

    def __enter__(self) -> Relay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_TOKEN_PAGE = b"""<!doctype html><meta charset=utf-8><title>claude_sdkurl relay</title>
<p>This relay needs its token. Open the link the program printed when the relay started
(<code>http://.../?token=...</code>). A link from before a restart works only if the relay keeps
its token (a token file): otherwise the program printed a new one.</p>"""

__all__ = ["ConnectionClosedError", "Relay", "RelayError"]


def _shown_in_a_notebook(url: str) -> bool:
    """In a Jupyter kernel, the page's link as a cell's output (a link to click, not a pink
    line of standard error); ``False`` elsewhere."""
    from ..display import notebook

    ipython = notebook()
    if ipython is None or getattr(ipython.get_ipython(), "kernel", None) is None:
        return False
    ipython.display.publish_display_data({
        "text/markdown": f"claude_sdkurl relay: [watch the sessions]({url}) (the link carries the relay's token)",
        "text/plain": f"claude_sdkurl relay: watch at {url}",
    })  # fmt: skip
    return True
