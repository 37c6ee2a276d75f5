"""The session host: one process that owns the CLIs of a machine's conversations, and serves
the worker processes attached to it over a Unix socket (see :mod:`claude_sdkurl.host`).

Who may attach: the socket lives in a directory of its own, mode 0700, owned by the host's user
(a directory that exists with another owner or wider permissions is refused, not used), and each
connection's peer is checked (``SO_PEERCRED``): another user's process is closed before it is
read. One host a socket: an exclusive lock on ``host.lock`` beside it; a second host started on
the same path is refused (:class:`HostError`), and a socket left by a host that was killed is
replaced once the lock is free.

What it runs: a :class:`~claude_sdkurl.conversations.Conversations` for each config directory
the callers' CLIs use (their ``HOME`` / ``CLAUDE_CONFIG_DIR``), so the keys, leases and store are
those of conversations run in-process with the same options; each turn runs with its caller's
options, its CLI restarted for launch-time options of a newer caller (a deploy: see
:func:`claude_sdkurl.conversations.wins`), and its messages that belong to a turn someone else asked for
on the host's page are marked as such (``"outside"`` in the frame). A turn is one connection: the caller sends
it, the host streams its messages back and asks the caller for each ``can_use_tool`` decision,
hook callback and message to an in-process MCP server. Turns on one conversation run one at a
time, each caller asked only about its own. A caller that goes away mid-turn (killed,
disconnected, or not reading for ``WRITE_TIMEOUT``): what it was asked is denied with a reason
the model sees, the turn is interrupted (once the CLI has shown those denies: an interrupt
written first would tell the model only that the user rejected the call) and read to its end,
the CLI stays live, and the conversation's next message, from any caller, goes on with its
whole history. A connection that sends no request, or part of one, for ``WRITE_TIMEOUT`` is
closed.

Bounds, as in-process: a send waits for another caller's turn on its conversation at most its
``timeout`` (or ``lease_wait``), then :class:`~claude_sdkurl.conversations.ConversationBusyError`;
a question a caller does not answer within ``answer_timeout`` is answered for it (a deny that
says why); while a request runs the caller is sent a beat every ``HEARTBEAT`` second, so that it
can tell a busy turn from a frozen host (:data:`claude_sdkurl.host._client.SILENCE`). An error is
sent as its type, arguments and attributes (:func:`~claude_sdkurl.host._wire.encode_error`). A
host that starts takes over the leases of the host it replaces at once
(:mod:`claude_sdkurl.host._holder`).

Threads: ``claude-sdkurl-host`` accepts; a ``claude-sdkurl-host-turn`` thread per connection runs
its turn, a ``claude-sdkurl-host-read`` thread reads its answers and a ``claude-sdkurl-host-beat``
thread sends its beats.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import itertools
import os
import select
import socket
import stat
import struct
import threading
from pathlib import Path
from typing import Any

from .._engine.log import get_logger
from .._engine.session import outside_of
from ..types import HookMatcher, PermissionResultDeny, ToolPermissionContext
from ._spawn import serve_spawn, stop_group
from ._holder import succeed
from ._wire import CALLBACK_ERROR, HostError, decode_options, decode_result, encode_error, line, read_frame

logger = get_logger("claude_sdkurl.host")

WRITE_TIMEOUT = 30.0  # a caller that takes nothing (or sends no request) for this long is gone (its turn goes on without it)
HEARTBEAT = 1.0  # seconds between the beats a caller is sent while its request runs (see _client.SILENCE)
ANSWER_TIMEOUT = 300.0  # the default of serve(answer_timeout=) and --answer-timeout
GONE = "the program that sent this turn went away before deciding; nothing it did not decide may run"


def _denied_call(frame: dict[str, Any]) -> str | None:
    """The tool call a question's deny answers, when a deny goes to the CLI for it: a
    ``can_use_tool`` question, or a ``PreToolUse`` hook."""
    if frame.get("op") == "ask":
        owed = (frame.get("context") or {}).get("tool_use_id")
    elif frame.get("op") == "hook" and frame.get("event") == "PreToolUse":
        owed = frame.get("tool_use_id")
    else:
        return None
    return str(owed) if owed else None


def late(seconds: float) -> str:
    """What the model is told of a question its caller did not answer within ``seconds``."""
    return (f"the program that sent this turn did not answer within {seconds:g} s (the session host's answer timeout); "
            "nothing it did not decide may run")  # fmt: skip


def default_socket_path() -> Path:
    """``$XDG_RUNTIME_DIR/claude_sdkurl/host.sock``, else ``/tmp/claude_sdkurl-<uid>/host.sock``."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    folder = Path(runtime) / "claude_sdkurl" if runtime else Path("/tmp") / f"claude_sdkurl-{os.getuid()}"
    return folder / "host.sock"


def private_dir(folder: Path) -> None:
    """Create ``folder`` 0700, or check that it is ours and 0700; :class:`HostError` if not."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(folder)
    except OSError as e:
        raise HostError(f"the host's directory {folder} cannot be made: {e}") from e
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise HostError(f"the host's directory {folder} is not a private directory of this user (mode "
                        f"{oct(info.st_mode & 0o777)}, owner {info.st_uid}): refusing to use it; in a shared folder "
                        f"(a volume), give the socket a folder of its own, which the host makes 0700: "
                        f"{folder / 'host' / 'host.sock'}")  # fmt: skip


def peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


def _label(message: Any, label: str, settle: bool = False) -> bool:
    """Show ``label`` (the worker that sent the turn) on the row of the message's session, on
    the page of the relay serving this process, if one does; ``True`` once shown. ``settle``:
    first let the relay's hub read what it was given."""
    data = getattr(message, "data", None)
    session_id = getattr(message, "session_id", None) or (data.get("session_id") if isinstance(data, dict) else None)
    if not isinstance(session_id, str) or not session_id:
        return False
    from ..relay import current

    relay = current()
    if relay is None:
        return False
    if settle:
        relay.hub.drain(2.0)
    return relay.hub.label(session_id, label)


_unnamed = itertools.count(1)


def sender_of(request: dict[str, Any]) -> tuple[float, str]:
    """Who sent a turn (its ``Conversations``: when it was made, its name), as the caller says;
    one that says nothing (an older version) is the oldest of all and named by its connection,
    so its options never replace another's (see :func:`claude_sdkurl.conversations.wins`)."""
    sender = request.get("sender")
    if (isinstance(sender, list) and len(sender) == 2 and isinstance(sender[0], (int, float)) and not isinstance(sender[0], bool)
            and isinstance(sender[1], str) and sender[1]):  # fmt: skip
        return float(sender[0]), sender[1]
    return float("-inf"), f"unnamed caller {next(_unnamed)}"


class CallerRaised(Exception):
    """A caller's callback raised; its text is what the CLI is told (as in-process)."""


class _AskedServer:
    """An in-process MCP server of the caller's, as the host's CLI sees it: each JSON-RPC
    message is answered by the caller of the conversation's turn under way; where the caller's
    server raised, this one raises the same text (the CLI is told it, as in-process). A caller
    gone: a request gets an error the model sees, a notification nothing."""

    def __init__(self, host: SessionHost, where: tuple[str, str], name: str) -> None:
        self.host, self.where, self.name = host, where, name

    def handle(self, message: dict[str, Any]) -> dict[str, Any] | None:
        answered, reply = self.host._ask(self.where, {"op": "mcp", "server": self.name, "message": message})
        if answered and isinstance(reply, dict) and CALLBACK_ERROR in reply:
            raise CallerRaised(str(reply[CALLBACK_ERROR]))  # the caller's server raised: so does this one, as in-process
        if answered:
            return reply if isinstance(reply, dict) else None
        if "id" in message:
            return {"jsonrpc": "2.0", "id": message.get("id"), "error": {"code": -32000, "message": str(reply)}}
        return None


def send_within(conn: socket.socket, data: bytes, timeout: float) -> None:
    """All of ``data``, or :class:`TimeoutError` when the other side takes nothing for
    ``timeout`` seconds (the socket itself stays blocking: its reader waits for a person)."""
    view = memoryview(data)
    while view:
        if not select.select([], [conn], [], timeout)[1]:
            raise TimeoutError("the caller took nothing")
        try:
            view = view[conn.send(view[:1 << 20], socket.MSG_DONTWAIT):]
        except BlockingIOError:
            continue


class _Caller:
    """One connection's turn: writes to it, and the ``can_use_tool`` questions it was asked."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.reader = conn.makefile("rb")
        self._write = threading.Lock()
        self._lock = threading.Lock()
        self._asked: dict[int, tuple[threading.Event, list[Any]]] = {}
        self._n = 0
        self.gone = threading.Event()
        self._on_gone: Any = None  # during a turn: what to do the moment the caller goes (interrupt it)
        # The tool calls denied because this caller went away whose tool result the CLI has not
        # shown yet: until it has, an interrupt could reach the CLI before the deny does (the
        # deny is written by the control thread after the question returns), and the model
        # would be told only that the user rejected the call
        self._owed: set[str] = set()
        self._running_on_gone = threading.Lock()  # held while that runs (see while_here)

    def send(self, frame: dict[str, Any]) -> bool:
        if self.gone.is_set():
            return False
        try:
            with self._write:
                send_within(self.conn, line(frame), WRITE_TIMEOUT)
            return True
        except OSError:  # (TimeoutError too: a caller that reads nothing)
            self.lost()
            return False

    def lost(self) -> None:
        with self._lock:
            first = not self.gone.is_set()
            self.gone.set()
            waiting = list(self._asked.values())
            # With a question pending, its deny (with the reason the model sees) goes first; the
            # turn's loop interrupts at its next message. An interrupt now would beat the deny to
            # the CLI, which would tell the model only that the user rejected the call.
            stopping = first and not self._asked
        for event, _ in waiting:
            event.set()
        if stopping:
            with self._running_on_gone:
                on_gone = self._on_gone
                if on_gone is not None:
                    try:
                        on_gone()
                    except Exception:  # noqa: BLE001 - the turn's own loop still sees the caller gone
                        logger.debug("stopping a turn whose caller went away failed", exc_info=True)

    def while_here(self, on_gone: Any) -> None:
        """Run ``on_gone`` the moment this caller goes (the turn's own loop checks for a caller
        already gone); ``None`` ends that, and returns only once an ``on_gone`` under way has
        returned: an interrupt begun as this caller's turn ended must not land on the next
        caller's turn of the same conversation, which may begin as soon as this returns."""
        with self._running_on_gone:
            self._on_gone = on_gone

    def read_answers(self) -> None:
        try:
            while True:
                frame = read_frame(self.reader)
                if frame is None:
                    break
                if frame.get("op") == "answer" and isinstance(frame.get("n"), int):
                    with self._lock:
                        found = self._asked.get(frame["n"])
                    if found is not None and not found[0].is_set():
                        found[1].append(frame.get("result"))
                        found[0].set()
        except (OSError, HostError, ValueError):
            pass
        self.lost()

    def beating(self) -> threading.Event:
        """Send the caller a beat every ``HEARTBEAT`` seconds (so it tells a busy request from a
        frozen host) until the event returned is set."""
        done = threading.Event()

        def beat() -> None:
            while not done.wait(HEARTBEAT) and self.send({"op": "beat"}):
                pass

        threading.Thread(target=beat, name="claude-sdkurl-host-beat", daemon=True).start()
        return done

    def question(self, frame: dict[str, Any], timeout: float | None = None) -> tuple[bool, Any]:
        """Ask the caller ``frame`` (numbered here) and wait, at most ``timeout`` seconds:
        ``(True, its answer)``, or ``(False, why)`` when the caller is gone before answering or
        did not answer in time (its answer, should it come later, is dropped)."""
        with self._lock:
            self._n += 1
            n = self._n
            event: threading.Event = threading.Event()
            answer: list[Any] = []
            self._asked[n] = (event, answer)
        try:
            if self.send({**frame, "n": n}):
                if not event.wait(timeout):
                    logger.warning("a caller did not answer a %s question within %g s: the host answers for it", frame.get("op"), timeout)
                    return False, late(timeout or 0.0)
                if answer:
                    return True, answer[0]
            owed = _denied_call(frame)  # gone before answering
            if owed is not None:
                with self._lock:
                    self._owed.add(owed)
            return False, GONE
        finally:
            with self._lock:
                self._asked.pop(n, None)

    def may_interrupt(self, message: Any) -> bool:
        """Whether the turn of this caller, gone, may be interrupted at ``message``: not while
        a question is pending on it, nor before the CLI has shown the tool result of each call
        denied because it went away (``message`` may be that result)."""
        raw = getattr(message, "raw", None)
        content = ((raw.get("message") or {}).get("content") if isinstance(raw, dict) and raw.get("type") == "user" else None)
        with self._lock:
            if isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        self._owed.discard(str(block.get("tool_use_id")))
            return not self._asked and not self._owed


class SessionHost:
    """A serving host (see :func:`claude_sdkurl.host.serve`)."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, max_live: int = 8, idle_timeout: float | None = 300.0,
                 lease_ttl: float = 30.0, lease_wait: float = 300.0, store: Any = None, session_store: Any = None,
                 answer_timeout: float | None = ANSWER_TIMEOUT) -> None:  # fmt: skip
        if answer_timeout is not None and (isinstance(answer_timeout, bool) or not isinstance(answer_timeout, (int, float))
                                           or not answer_timeout > 0):  # fmt: skip
            raise ValueError("answer_timeout must be a positive number of seconds (or None: a question waits for its caller)")
        self.answer_timeout = None if answer_timeout is None else float(answer_timeout)
        self.path = Path(path) if path is not None else default_socket_path()
        self._session_store = session_store  # the transcripts of every conversation (unless a caller names its own)
        private_dir(self.path.parent)
        self._conversation_kw = {"max_live": max_live, "idle_timeout": idle_timeout, "lease_ttl": lease_ttl,
                                 "lease_wait": lease_wait, "store": store}  # fmt: skip
        self._lock_file = os.open(self.path.parent / f"{self.path.name}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._lock_file)
            raise HostError(f"a session host already serves at {self.path}") from None
        try:
            from ..conversations import FENCE_SHARE

            # this host holds the lock: the one recorded beside it is gone; its leases are taken at once
            self._owner, self._heirs = succeed(self.path, lease_ttl * FENCE_SHARE)
            self.path.unlink(missing_ok=True)  # left by a host that was killed: the lock was free
            self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            old = os.umask(0o077)
            try:
                self._listener.bind(str(self.path))
            finally:
                os.umask(old)
            self._listener.listen(128)
        except OSError as e:
            os.close(self._lock_file)
            raise HostError(f"the host cannot listen at {self.path}: {e}") from e
        self.closed = False
        self._pools: dict[str, Any] = {}  # a CLI config directory ("" with the host's own store) -> its Conversations
        self._callers: dict[tuple[str, str], _Caller] = {}  # (pool, key) -> the caller of the turn under way
        # (pool, key) -> held for a whole turn: a caller is registered only once the turn before
        # it has ended, so each question goes to the worker whose turn asks it (a second sender,
        # waiting, was asked the first one's questions)
        self._turns: dict[tuple[str, str], threading.Lock] = {}
        self._state = threading.Lock()
        self._spawned: set[Any] = set()  # CLIs started for callers' own queries (_spawn), running
        self._threads: set[threading.Thread] = set()
        self._acceptor = threading.Thread(target=self._accept, name="claude-sdkurl-host", daemon=True)
        self._acceptor.start()

    # ------------------------------------------------------------------ connections

    def _accept(self) -> None:
        while not self.closed:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            try:
                if peer_uid(conn) != os.getuid():
                    logger.warning("the session host refused a connection from another user's process")
                    conn.close()
                    continue
            except OSError:
                conn.close()
                continue
            thread = threading.Thread(target=self._serve, args=(conn,), name="claude-sdkurl-host-turn", daemon=True)
            with self._state:
                self._threads.add(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        caller = _Caller(conn)
        try:
            # A connection that says nothing, or part of its request and then nothing, for
            # WRITE_TIMEOUT is dropped (each read of the request waits that long at most)
            conn.settimeout(WRITE_TIMEOUT)
            try:
                request = read_frame(caller.reader)
            except TimeoutError:
                return
            except (OSError, HostError) as e:
                caller.send({"op": "error", "type": "HostError", "message": str(e)})
                return
            if request is None:
                return
            conn.settimeout(None)  # from here its reads wait for a person (its answers), its writes in send_within
            try:
                self._request(request, caller)
            except Exception as e:  # noqa: BLE001 - the caller is told (as the same type, see _wire.encode_error); the host goes on
                caller.send(encode_error(e))
        finally:
            caller.lost()
            try:
                conn.close()
            except OSError:
                pass
            with self._state:
                self._threads.discard(threading.current_thread())

    def _request(self, request: dict[str, Any], caller: _Caller) -> None:
        op = request.get("op")
        if op == "ping":
            caller.send({"op": "pong", "pid": os.getpid()})
            return
        if op == "spawn":  # a CLI of the caller's own query (see _spawn)
            if self.closed:
                raise HostError("the session host is closing")
            serve_spawn(request, caller, self._spawned)
            return
        beats = caller.beating()  # (a request below may wait: for a turn, a lease, a CLI to stop)
        try:
            self._conversation_request(op, request, caller)
        finally:
            beats.set()

    def _conversation_request(self, op: Any, request: dict[str, Any], caller: _Caller) -> None:
        pool_id, pool, options, hooks = self._pool(request.get("options"), request.get("forward") or [])
        key = request.get("key")
        if op == "session_id":
            caller.send({"op": "value", "value": pool.session_id(key)})
            return
        if op in ("hibernate", "interrupt"):
            (pool.hibernate if op == "hibernate" else pool.interrupt)(key)
            caller.send({"op": "value", "value": None})
            return
        if op == "live":
            caller.send({"op": "value", "value": pool.live()})
            return
        if op != "send":
            raise HostError(f"unknown request {op!r}")
        prompt = request.get("prompt")
        timeout = request.get("timeout")
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool):
            timeout = None
        reader = threading.Thread(target=caller.read_answers, name="claude-sdkurl-host-read", daemon=True)
        reader.start()
        where = (pool_id, str(key))
        if "can_use_tool" in (request.get("forward") or []):
            options = dataclasses.replace(options, can_use_tool=self._router(where))
        if hooks:
            options = dataclasses.replace(options, hooks=self._hooks(where, hooks))
        if "mcp_servers" in (request.get("forward") or []) and isinstance(options.mcp_servers, dict):
            servers = {name: {**config, "instance": _AskedServer(self, where, name)}
                       if isinstance(config, dict) and config.get("type") == "sdk" else config
                       for name, config in options.mcp_servers.items()}  # fmt: skip
            options = dataclasses.replace(options, mcp_servers=servers)
        with self._state:
            turn_lock = self._turns.setdefault(where, threading.Lock())
        # As in-process: another worker's turn is waited for as another holder's lease is, at most
        # the send's timeout (or --lease-wait), whatever that turn is doing (its caller frozen, its
        # callback blocking)
        lease_wait = self._conversation_kw["lease_wait"]
        wait = max(0.0, lease_wait if timeout is None else min(timeout, lease_wait))
        if not turn_lock.acquire(timeout=wait):
            from ..conversations import ConversationBusyError

            raise ConversationBusyError(f"conversation {str(key)!r} was busy with another worker's turn for {wait:g} s; "
                                        "nothing was sent")  # fmt: skip
        try:
            with self._state:
                self._callers[where] = caller
            try:
                self._run_turn(pool, key, prompt, options, timeout, request, caller, sender_of(request))
            finally:
                with self._state:
                    del self._callers[where]
        finally:
            turn_lock.release()

    def _run_turn(self, pool: Any, key: Any, prompt: Any, options: Any, timeout: float | None, request: dict[str, Any],
                  caller: _Caller, sender: tuple[float, str]) -> None:  # fmt: skip
        """The turn, its messages written to ``caller`` as they come (see the module doc for a
        caller that goes away), each marked when it belongs to someone else's turn."""
        turn = pool._send(key, prompt, options, timeout, sender, request.get("outside") is True)
        interrupted = False
        # A caller that goes away is seen by its reader at once (the end of its connection), not
        # only when the next message fails to go out: a turn nobody reads stops now, not after
        # the model has streamed its whole answer (which it costs).
        caller.while_here(lambda: pool.interrupt(key))
        if caller.gone.is_set():
            pool.interrupt(key)
        caller_label = request.get("caller") if isinstance(request.get("caller"), str) else None
        labelled = False
        last = None
        for message in turn:
            last = message
            if caller_label and not labelled:
                labelled = _label(message, caller_label)
            mark = outside_of(message)
            frame = {"op": "message", "raw": message.raw, **({"outside": mark} if mark else {})}
            if not caller.send(frame) and not interrupted and caller.may_interrupt(message):
                interrupted = True  # the caller is gone: the turn stops and is read to its end, its CLI stays
                pool.interrupt(key)
        if caller_label and not labelled and last is not None:  # (the relay's hub reads lines on its own thread)
            _label(last, caller_label, settle=True)
        caller.while_here(None)  # (before the end goes out: the caller closes after it, which is no reason to stop)
        caller.send({"op": "end"})

    def _pool(self, fields: Any, forward: Any) -> tuple[str, Any, Any, dict[str, Any] | None]:
        """``(pool id, its Conversations, the caller's options, the shape of its hooks)``: one
        pool for every caller whose CLIs share a config directory (so one store of keys and
        leases, as in-process), unless the host was given a store of its own (then one pool)."""
        from ..conversations import Conversations, default_store_path

        options, hooks = decode_options(fields if fields is not None else {})
        if self._session_store is not None and options.session_store is None:
            options = dataclasses.replace(options, session_store=self._session_store)
        pool_id = "" if self._conversation_kw["store"] is not None else str(default_store_path(options))
        with self._state:
            if self.closed:
                raise HostError("the session host is closing")
            pool = self._pools.get(pool_id)
            if pool is None:
                pool = self._pools[pool_id] = Conversations(options, **self._conversation_kw)
                tag = hashlib.sha256(pool_id.encode()).hexdigest()[:12]  # one owner a pool, the same pool's in each host here
                pool._hold_as(f"{self._owner}/{tag}", [f"{heir}/{tag}" for heir in self._heirs])
        return pool_id, pool, options, hooks

    def _ask(self, where: tuple[str, str], frame: dict[str, Any]) -> tuple[bool, Any]:
        """Ask the caller of the turn under way in conversation ``where``: ``(True, its
        answer)``, or ``(False, why)`` when there is none, it went away before answering, or it
        did not answer within ``answer_timeout``."""
        with self._state:
            caller = self._callers.get(where)
        return (False, GONE) if caller is None else caller.question(frame, self.answer_timeout)

    def _router(self, where: tuple[str, str]) -> Any:
        """The ``can_use_tool`` of a conversation: asks the caller of its turn under way."""

        def can_use_tool(tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext) -> Any:
            context_json = {"tool_use_id": context.tool_use_id, "agent_id": context.agent_id, "blocked_path": context.blocked_path,
                            "decision_reason": context.decision_reason, "title": context.title,
                            "display_name": context.display_name, "description": context.description,
                            "suggestions": [s.to_dict() for s in context.suggestions]}  # fmt: skip
            answered, answer = self._ask(where, {"op": "ask", "tool_name": tool_name, "input": tool_input, "context": context_json})
            return decode_result(answer) if answered else PermissionResultDeny(message=str(answer))

        return can_use_tool

    def _hooks(self, where: tuple[str, str], shape: dict[str, Any]) -> dict[str, list[HookMatcher]]:
        """``options.hooks`` for a conversation: the caller's events and matchers, each callback
        asked of the caller of the turn under way. Its answer is the hook's output; a caller gone
        answers a ``PreToolUse`` with a deny that says why, any other event with no opinion."""

        def asking(event: str, m: int, h: int) -> Any:
            def hook(hook_input: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
                answered, output = self._ask(where, {"op": "hook", "event": event, "matcher": m, "hook": h, "input": hook_input,
                                                     "tool_use_id": tool_use_id})  # fmt: skip
                if answered and isinstance(output, dict):
                    if CALLBACK_ERROR in output:  # the caller's hook raised: raised here, so the CLI is told as in-process
                        raise CallerRaised(str(output[CALLBACK_ERROR]))
                    return output
                if event == "PreToolUse":
                    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                                   "permissionDecisionReason": GONE if answered else str(output)}}  # fmt: skip
                return {}

            return hook

        built: dict[str, list[HookMatcher]] = {}
        for event, matchers in shape.items():
            if not isinstance(matchers, list):
                raise HostError(f"the hooks of {event!r} are not a list")
            built[event] = [HookMatcher(matcher=spec.get("matcher"), timeout=spec.get("timeout"), on_failure=spec.get("on_failure"),
                                        hooks=[asking(event, m, h) for h in range(int(spec.get("hooks") or 0))])
                            for m, spec in enumerate(matchers) if isinstance(spec, dict)]  # fmt: skip
        return built

    # ------------------------------------------------------------------ end

    def close(self) -> None:
        """Stop accepting, stop every CLI (a turn under way ends with an error for its caller),
        remove the socket and free the lock."""
        with self._state:
            if self.closed:
                return
            self.closed = True
            pools = list(self._pools.values())
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        for pool in pools:
            pool.close()
        for popen in list(self._spawned):
            stop_group(popen)
        self._acceptor.join(5)
        with self._state:
            threads = list(self._threads)
        for thread in threads:
            thread.join(5)
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self._lock_file)

    def __enter__(self) -> SessionHost:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


__all__ = ["SessionHost", "default_socket_path"]
