"""Many conversations, few CLIs: conversations that hibernate.

A server that talks with many people at once cannot keep a Claude Code CLI per person (about 190
MB each, measured on 2.1.330). :class:`Conversations` addresses each conversation by a key of
yours (a user id, a chat id) and keeps at most ``max_live`` CLIs alive::

    chats = Conversations(ClaudeAgentOptions(cwd="/srv/app"), max_live=8, idle_timeout=300)
    for message in chats.send("user-42", "What did I ask you yesterday?"):
        ...

A conversation idle longer than ``idle_timeout``, or the least recently used idle one when a
slot is needed, *hibernates*: its CLI is stopped, its transcript stays where the CLI wrote it (on
disk, or in ``options.session_store``). The next message wakes it: a new CLI started with
``resume`` (a spare cannot be claimed for a resumed session: the claim would ignore ``resume``),
so the model sees the whole history. Messages to one conversation are served one at a time, in
the order they arrive (each waits for the turn under way as for another holder's lease, at most
``lease_wait`` seconds or its ``timeout``: :class:`ConversationBusyError`); different
conversations run in parallel, up to ``max_live`` at once (a send waits for a slot when every
live CLI is busy).

Each turn runs with the options of its :meth:`Conversations.send` (else the object's): a model,
permission mode or thinking budget that differs from what the CLI runs is sent to it as a
control request before the turn; another field that differs (``env``, tools, the system prompt,
``cwd``, MCP servers, ...) restarts the CLI with ``resume`` first, once, said in the log
(:mod:`claude_sdkurl._engine.relaunch` tells them apart). The CLI's callbacks ask the turn's
own. In the session host, where turns of several workers meet, a turn's launch-time options
win only when its sender is the one whose options the CLI runs, or was made later (:func:`wins`).
A turn someone else asked for through a relay (a message typed on its page) is answered by the
CLI first; a send passes its messages over (``outside=True``: yields them first, marked).

Conversations outlive the process. Each key's session id, and a *lease* saying who holds a CLI
for it, live in a store (:mod:`claude_sdkurl.stores.conversations`): by default a SQLite file in
the CLI's config directory (``<config>/claude_sdkurl/conversations.sqlite3``), which every
process of the machine shares; ``store=`` names another file, or a PostgreSQL or Redis store for
several machines (with ``options.session_store`` on a shared store, so the transcript is there
too). A program restarted, or another worker process, finds each conversation by its key and
resumes it. Keys are kept per project folder (``options.cwd``).

Never two CLIs on one conversation, anywhere: a CLI is started only under the key's lease, which
its holder renews at every look of its keeper thread (``lease_ttl / 4`` seconds, at most a quarter
of a second) and after each turn while the CLI lives, and gives up when it stops. A send for a key
another process holds leaves a mark the holder reads at its next look: an idle holder hibernates its CLI at once, a busy one after its turn; the send waits
(polling, at most ``lease_wait`` seconds, or its ``timeout``) and then raises
:class:`ConversationBusyError`. A process killed outright loses its leases ``lease_ttl`` seconds
later (its CLIs are gone long before: every CLI's orphan watcher stops it with its program); the
next message, in any process, resumes from the last turn the transcript holds (the message that
was under way is in it once, or not at all; nothing of that turn runs again). A holder that
cannot renew (the store refuses, fails or hangs) stops its CLIs once half a lease has gone by
since the last renewal the store confirmed was sent, so they are gone before the lease can run
out; and a holder that finds its lease taken stops them at once (:class:`ConversationLeaseLost`
for a turn under way). Neither gives back a lease it is not sure of: it runs out by itself.
A holder that cannot act at all (frozen: SIGSTOP, a paused VM or container, a long pause) is
covered by each CLI's *fence*, a small process of its own that the holder tells, at each
confirmed renewal, how long the CLI may run (``FENCE_SHARE``, six tenths of a lease, from the
renewal's sending); told nothing in time, it kills the CLI and everything the CLI started (a
Bash tool's command runs in a group of its own), before the lease can run out. A store that fails is a :class:`ConversationStoreError`; nothing is half-written (each
change is one transaction).

Threads: one ``claude-sdkurl-conversations`` thread renews the leases, answers the marks and
hibernates idle conversations (every ``lease_ttl / 4`` seconds, at most a quarter of a second,
waiting on a condition; it ends with :meth:`Conversations.close`); its renewals run on a
``claude-sdkurl-conversations-renew`` thread each, one at a time per project, waited for at most
one look (a store that hangs holds that thread, never the keeper's decisions); each turn runs on
the caller's thread. A CLI is stopped before another one takes its slot, so no more than ``max_live`` exist at
any moment in a :class:`Conversations`, and none serves a conversation without its lease.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import secrets
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from ._errors import ClaudeSDKError, CLIConnectionError
from ._engine.launch import unattended
from ._engine.log import get_logger
from ._engine.relaunch import LIVE_FIELDS, asking, changed, live_values
from .client import ClaudeClient
from ._engine.paths import cli_config_dir, project_key_for_directory
from ._engine.transport.process import fence_cli
from .stores.conversations import ConversationStore, SQLiteConversationStore
from .types import ClaudeAgentOptions, Message, ResultMessage, SystemMessage

__all__ = ["ConversationBusyError", "ConversationLeaseLost", "ConversationStoreError", "Conversations"]

logger = get_logger("claude_sdkurl.conversations")
T = TypeVar("T")

# A CLI's fence kills it this share of a lease after the last confirmed renewal: after the
# holder's own rule (half a lease), which it backs up when the holder cannot act (frozen), and
# with four tenths of the lease left for the kill before anyone may take the lease over.
FENCE_SHARE = 0.6

Sender = tuple[float, str]
"""Who sends a turn: a :class:`Conversations` (when it was made, by the wall clock; a unique name)."""


def wins(sender: Sender, started_by: Sender) -> bool:
    """Whether a turn's launch-time options replace those its conversation's CLI was started
    with from ``started_by``: the same sender (a program's own later choice), or one made later
    (a newer deploy; a rollback is a newer deploy too). A turn of an older sender runs on the CLI
    as it is, with its own live fields: in a rolling deploy a CLI restarts at most once per
    newer sender, never back and forth; two made at the same moment do not replace each other."""
    return sender[1] == started_by[1] or sender[0] > started_by[0]


MAX_KEY = 4096
"""The longest key (characters): a key is stored as it is, never used as a file name."""


class ConversationBusyError(ClaudeSDKError, TimeoutError):
    """Another process (or another :class:`Conversations`) held the conversation for longer than
    the send could wait; nothing was sent."""


class ConversationLeaseLost(CLIConnectionError):
    """The conversation's lease went to another holder (this one could not renew it in time):
    its CLI here was stopped, and the turn under way ended. The transcript keeps what was said."""


class ConversationStoreError(ClaudeSDKError):
    """The conversations' store failed (unreachable, or not a database); what it held is as it
    was before the call."""


def default_store_path(options: ClaudeAgentOptions) -> Path:
    """The SQLite file a :class:`Conversations` keeps its keys in when given no ``store``."""
    return cli_config_dir(dict(options.env or {})) / "claude_sdkurl" / "conversations.sqlite3"


@dataclasses.dataclass(eq=False)
class _Conversation:
    key: str
    options: ClaudeAgentOptions
    namespace: str
    turn: threading.Lock = dataclasses.field(default_factory=threading.Lock)  # one turn at a time
    client: ClaudeClient | None = None
    session_id: str | None = None
    last_used: float = dataclasses.field(default_factory=time.monotonic)
    busy: bool = False
    leased: bool = False  # this object holds the key's lease (from before its CLI starts to after it stops)
    confirmed: float = 0.0  # (monotonic) when the last call that the store answered "ours" was sent
    lost: bool = False  # the lease went to another holder: the CLI here was stopped
    fence: Any = None  # the CLI's lease fence (another process that kills it when renewals stop)
    # whose options ``options`` are (wins() decides which sender's a CLI starts with)
    sender: Sender = (0.0, "")
    turn_options: ClaudeAgentOptions | None = None  # the turn's under way (or the last): its callbacks are asked
    live: dict[str, Any] = dataclasses.field(default_factory=dict)  # the live fields in force in its CLI
    stale: bool = False  # its CLI runs launch-time options a winning sender changed: it restarts before the turn
    older: set[str] = dataclasses.field(default_factory=set)  # older senders already said (in the log) to run on it


class _Renewal:
    """One renewal of the keeper's, on a thread of its own: a store that hangs (frozen, cut off
    by a partition) must not hold the keeper, which has CLIs to stop before their leases can run
    out. ``sent``: when it was asked (the lease, if renewed, runs from about then)."""

    def __init__(self, call: Callable[[], tuple[set[str], set[str]]]) -> None:
        self.sent = time.monotonic()
        self.answer: tuple[set[str], set[str]] | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        threading.Thread(target=self._run, args=(call,), name="claude-sdkurl-conversations-renew", daemon=True).start()

    def _run(self, call: Callable[[], tuple[set[str], set[str]]]) -> None:
        try:
            self.answer = call()
        except BaseException as e:  # noqa: BLE001 - whatever the store's driver raises: the keeper reads it
            self.error = e
        finally:
            self.done.set()


class Conversations:
    """Conversations by key over at most ``max_live`` CLIs (see the module doc).

    ``options`` are every conversation's, unless a :meth:`send` names its own: each turn runs
    with its sender's options (see :meth:`send`; a conversation's folder for its key, though, is
    that of its first send in this process). ``store``: where keys, session
    ids and leases live (see the module doc): a :class:`~claude_sdkurl.stores.conversations.ConversationStore`
    (yours to close), a SQLite file's path, or ``None`` for the default file. ``lease_ttl``:
    seconds a lease lasts unrenewed (how long a killed process keeps its conversations);
    ``lease_wait``: how long a send waits for a conversation another holder keeps. ``stats``
    counts ``started`` (a new conversation's first CLI), ``woken`` (a CLI resumed: after
    hibernation, a restart, or in another process), ``hibernated``, ``yielded`` (hibernated for
    another holder), ``waited`` (sends that waited for one), ``lost`` (leases taken away),
    ``restarted`` (a live CLI restarted for a turn's options) and ``outside`` (turns someone
    else asked for, through a relay, that a send passed over).
    """

    def __init__(self, options: ClaudeAgentOptions | None = None, *, max_live: int = 8, idle_timeout: float | None = 300.0,
                 store: ConversationStore | str | os.PathLike[str] | None = None, lease_ttl: float = 30.0,
                 lease_wait: float = 300.0, host: str | os.PathLike[str] | None = None) -> None:  # fmt: skip
        options = options or ClaudeAgentOptions()
        if not isinstance(options, ClaudeAgentOptions):
            raise TypeError(f"options must be ClaudeAgentOptions, not {type(options).__name__}")
        if not isinstance(max_live, int) or max_live < 1:
            raise ValueError("max_live must be a positive number of CLIs")
        if idle_timeout is not None and idle_timeout <= 0:
            raise ValueError("idle_timeout must be positive (or None: only a needed slot hibernates)")
        if options.resume or options.continue_conversation or options.fork_session:
            raise ValueError("each conversation resumes its own session: no resume/continue/fork in the shared options")
        if not lease_ttl > 0 or not lease_wait >= 0:
            raise ValueError("lease_ttl must be positive and lease_wait not negative (seconds)")
        if store is not None and not isinstance(store, (ConversationStore, str, os.PathLike)):
            raise TypeError(f"store must be a ConversationStore or a SQLite file's path, not {type(store).__name__}")
        self.options = options
        self.stats: Counter[str] = Counter()
        self._host: Any = None
        name = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(6)}"
        # who sends this object's turns: when it was made (a newer deploy's win) and its name
        self._sender: Sender = (time.time(), name)
        if host is not None:  # the CLIs live in the session host; this object sends it the turns
            if store is not None or max_live != 8 or idle_timeout != 300.0 or lease_ttl != 30.0:
                raise ValueError("with host=, the host's own settings (python -m claude_sdkurl.host --help) decide "
                                 "max_live, idle_timeout, lease_ttl and the store")  # fmt: skip
            from .host._client import HostLink
            from .host._wire import encode_options

            encode_options(options)  # an option the host cannot carry is refused now, not at the first send
            errors: dict[str, type[BaseException]] = {e.__name__: e for e in (ConversationBusyError, ConversationLeaseLost,
                                                                          ConversationStoreError)}  # fmt: skip
            self._host = HostLink(host, errors)
            self._closed = False
            return
        self.max_live = max_live
        self.idle_timeout = idle_timeout
        self.lease_ttl = float(lease_ttl)
        self.lease_wait = float(lease_wait)
        self._poll = min(0.25, self.lease_ttl / 4)
        self._owner = name
        self._replaces: tuple[str, ...] = ()  # owners known to be gone, whose leases are taken at once (see _hold_as)
        if isinstance(store, ConversationStore):
            self.store, self._owns_store = store, False
        else:
            path = store if store is not None else default_store_path(options)
            try:
                self.store, self._owns_store = SQLiteConversationStore(path), True
            except Exception as e:  # noqa: BLE001 - any failure of the file is the store's
                raise ConversationStoreError(f"the conversations' store {os.fspath(path)!r} cannot be used: {e}") from e
        self._conversations: dict[str, _Conversation] = {}
        self._slots: set[_Conversation] = set()  # conversations holding a CLI (or about to)
        self._cond = threading.Condition()
        self._closed = False
        self._renewals: dict[str, _Renewal] = {}  # (the keeper's) the renewal under way, by namespace
        self._reaper = threading.Thread(target=self._keep, name="claude-sdkurl-conversations", daemon=True)
        self._reaper.start()

    # ------------------------------------------------------------------ the public face

    def send(self, key: str, prompt: str, options: ClaudeAgentOptions | None = None, *,
             timeout: float | None = None, outside: bool = False) -> Iterator[Message]:  # fmt: skip
        """That turn's messages, through its :class:`ResultMessage`: the conversation woken if it
        hibernated, after the turns sent to it before. Leaving the iteration early interrupts
        nothing else: the conversation hibernates, and its next message resumes it.

        The turn runs with ``options`` (else this object's): the fields a live CLI changes
        (model, permission mode, thinking tokens) are sent to it before the turn; when any other
        differs from what the CLI was started with, the CLI restarts with the conversation's
        history first (with ``host=``, only for options newer than those it runs: see
        ``docs/guide/deployment.md``). Its ``can_use_tool``, hooks and in-process MCP servers
        are asked for this turn's calls.

        A turn someone else asked for in the meantime (a message typed on a relay's page, or
        sent by a ``/ws`` frontend) is answered by the CLI first; its messages are passed over,
        or with ``outside=True`` yielded first, each marked
        (``claude_sdkurl._engine.session.outside_of(message) == "turn"``)."""
        self._check(key, prompt)
        if self._host is not None:
            if self._closed:
                raise RuntimeError("these conversations are closed")
            turn: Iterator[Message] = self._host.turn(key, prompt, options or self.options, timeout, self._sender, outside)
            return turn
        return self._send(key, prompt, options or self.options, timeout, self._sender, outside)

    @staticmethod
    def _check(key: Any, prompt: Any) -> None:
        if not isinstance(key, str) or not key:
            raise ValueError("a conversation's key is a non-empty string")
        if len(key) > MAX_KEY or "\x00" in key:
            raise ValueError(f"a conversation's key is at most {MAX_KEY} characters, without NUL")
        if not isinstance(prompt, str):
            raise TypeError("prompt must be a str")

    def _send(self, key: str, prompt: str, options: ClaudeAgentOptions, timeout: float | None, sender: Sender,
              outside: bool) -> Iterator[Message]:  # fmt: skip
        """:meth:`send` in-process, for ``sender`` (the session host sends each worker's turns as
        that worker's)."""
        self._check(key, prompt)
        with self._cond:
            if self._closed:
                raise RuntimeError("these conversations are closed")
            conversation = self._conversations.get(key)
            if conversation is None:
                namespace = project_key_for_directory(options.cwd)
                conversation = self._conversations[key] = _Conversation(key, options, namespace, sender=sender)
        return self._turn(conversation, prompt, options, timeout, sender, outside)

    def live(self) -> int:
        """How many conversations hold a CLI now (with ``host=``: of these options, in the host)."""
        if self._host is not None:
            return int(self._host_request("live", ""))
        with self._cond:
            return len(self._slots)

    def session_id(self, key: str) -> str | None:
        """The CLI session a conversation is (its transcript's id), once it has one."""
        if self._host is not None:
            found = self._host_request("session_id", key)
            return found if isinstance(found, str) else None
        with self._cond:
            conversation = self._conversations.get(key)
            if conversation is not None and conversation.session_id is not None:
                return conversation.session_id
        namespace = conversation.namespace if conversation is not None else project_key_for_directory(self.options.cwd)
        return self._call(self.store.session_id, namespace, key)

    def hibernate(self, key: str) -> None:
        """Stop a conversation's CLI now (it wakes with its next message)."""
        if self._host is not None:
            self._host_request("hibernate", key)
            return
        with self._cond:
            conversation = self._conversations.get(key)
        if conversation is not None:
            with conversation.turn:
                self._stop(conversation)

    def _host_request(self, op: str, key: str) -> Any:
        from .host._wire import encode_options

        fields, forward = encode_options(self.options)
        return self._host.request({"op": op, "key": key, "options": fields, "forward": forward})["value"]

    def interrupt(self, key: str) -> None:
        """Interrupt a conversation's turn under way, if it has one (its CLI stays; the turn ends
        with its result, as ``client.interrupt()`` ends one)."""
        if self._host is not None:
            self._host_request("interrupt", key)
            return
        with self._cond:
            conversation = self._conversations.get(key)
            client = conversation.client if conversation is not None and conversation.busy else None
        if client is not None:
            try:
                client.interrupt()
            except Exception:  # noqa: BLE001 - the CLI went away or the turn ended meanwhile: nothing to stop
                logger.debug("interrupting conversation %r found nothing to stop", key, exc_info=True)

    def close(self) -> None:
        """Stop every CLI at once (a turn under way ends with the CLI's error); later sends raise.
        With ``host=``: later sends raise; the host's CLIs stay (they are the host's)."""
        if self._host is not None:
            self._closed = True
            return
        with self._cond:
            self._closed = True
            live = [(c.client, c.busy) for c in self._conversations.values() if c.client is not None]
            self._cond.notify_all()
        # every CLI at once, not one after another (each stop may wait half a second for SIGTERM
        # before SIGKILL): a thread each, all joined here
        stopping = []
        for client, busy in live:
            session = getattr(client, "_session", None)
            # a turn holds the client: its CLI is stopped under it (the turn ends with the error
            # and tidies the client up itself); waiting for the turn could take long
            stop = functools.partial(session.close, abort=True) if busy and session is not None else client.disconnect
            stopping.append(threading.Thread(target=stop, name="claude-sdkurl-conversations-close", daemon=True))
        for thread in stopping:
            thread.start()
        for thread in stopping:
            thread.join()
        with self._cond:
            fences = [c.fence for c in self._conversations.values() if c.fence is not None]
            for conversation in self._conversations.values():
                conversation.fence = None
        for fence in fences:  # the CLIs are gone: their fences leave (and their pipes close)
            fence.release()
        self._reaper.join(5)
        with self._cond:
            held = [c for c in self._conversations.values() if c.leased and not c.busy]
        for conversation in held:  # their CLIs are gone: the next holder need not wait for the leases to run out
            self._release(conversation)
        if self._owns_store:
            try:
                self.store.close()
            except Exception:  # noqa: BLE001 - closing: nothing is left to lose
                logger.warning("closing the conversations' store failed", exc_info=True)

    def __enter__(self) -> Conversations:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _hold_as(self, owner: str, replaces: list[str]) -> None:
        """(The session host's, before any send.) Hold leases as ``owner``, and take a lease held
        by one of ``replaces`` (owners proved gone: :mod:`claude_sdkurl.host._holder`) at once.
        A store whose ``acquire`` takes no ``replaces`` waits such leases out."""
        import inspect

        self._owner = owner
        try:
            takes = "replaces" in inspect.signature(self.store.acquire).parameters
        except (TypeError, ValueError):
            takes = False
        self._replaces = tuple(replaces) if takes else ()

    # ------------------------------------------------------------------ a turn

    @contextlib.contextmanager
    def _one_turn(self, conversation: _Conversation, timeout: float | None) -> Iterator[None]:
        """The conversation's turn lock, waited for as a lease is: at most ``lease_wait`` seconds,
        or the send's ``timeout`` (:class:`ConversationBusyError`; nothing was sent)."""
        wait = max(0.0, self.lease_wait if timeout is None else min(timeout, self.lease_wait))
        if not conversation.turn.acquire(timeout=wait):
            raise ConversationBusyError(f"conversation {conversation.key!r} was busy with another turn for {wait:g} s; nothing was sent")
        try:
            yield
        finally:
            conversation.turn.release()

    def _turn(self, conversation: _Conversation, prompt: str, options: ClaudeAgentOptions, timeout: float | None,
              sender: Sender, outside: bool) -> Iterator[Message]:  # fmt: skip
        from ._engine.session import outside_of  # (loaded with the client's session)

        with self._one_turn(conversation, timeout):
            self._follow(conversation, options, sender)
            client = self._client(conversation, timeout)
            done = False
            try:
                client = self._live_fields(conversation, client, timeout)
                client.query(prompt)
                for message in client.receive_messages(timeout=timeout):
                    if outside_of(message) == "turn":  # someone else's turn (a relay's page), answered before this one
                        if isinstance(message, ResultMessage):
                            with self._cond:
                                self.stats["outside"] += 1
                            logger.info("conversation %r: a turn asked for outside this program (a relay's page or frontend) "
                                        "was answered before this one", conversation.key)  # fmt: skip
                        if outside:
                            yield message
                        continue
                    session_id = None
                    if isinstance(message, SystemMessage) and message.subtype == "init":
                        session_id = message.data.get("session_id")
                    if isinstance(message, ResultMessage):
                        session_id = message.session_id
                        done = True
                    if isinstance(session_id, str) and session_id and session_id != conversation.session_id:
                        conversation.session_id = session_id
                        self._record(conversation)
                    yield message
                    if done:
                        break
                if not done:  # the CLI went away under the turn (close(), a crash): no answer is no answer
                    if conversation.lost:
                        raise ConversationLeaseLost(f"conversation {conversation.key!r}: another holder took its lease; "
                                                    "its CLI here was stopped")  # fmt: skip
                    raise CLIConnectionError(f"conversation {conversation.key!r}: the turn ended without its result")
            finally:
                with self._cond:
                    conversation.busy = False
                    conversation.last_used = time.monotonic()
                    self._cond.notify_all()
                if not done:  # an error, a timeout, or left mid-turn: its CLI goes, the transcript stays
                    self._stop(conversation)
            self._yield_if_wanted(conversation)

    def _follow(self, conversation: _Conversation, options: ClaudeAgentOptions, sender: Sender) -> None:
        """Take a turn's options (called with its turn lock): its callbacks and live fields are
        this turn's; its launch-time fields replace the conversation's when its sender wins
        (:func:`wins`), and a live CLI started with others restarts."""
        conversation.turn_options = options
        if options is conversation.options:
            return
        differ = changed(conversation.options, options)
        if wins(sender, conversation.sender):
            conversation.options, conversation.sender = options, sender
            if differ and conversation.client is not None:
                conversation.stale = True
                logger.info("conversation %r: its CLI restarts with the conversation's history for newer options (%s changed)",
                            conversation.key, ", ".join(differ))  # fmt: skip
        elif differ and sender[1] not in conversation.older:
            if len(conversation.older) >= 64:
                conversation.older.clear()
            conversation.older.add(sender[1])
            logger.info("conversation %r: a turn of an older deploy (%s) runs on the CLI of the newer one; its own %s are "
                        "not applied, its model, permission mode and thinking tokens are", conversation.key, sender[1],
                        ", ".join(differ))  # fmt: skip

    def _live_fields(self, conversation: _Conversation, client: ClaudeClient, timeout: float | None) -> ClaudeClient:
        """Send the CLI the turn's live fields that differ from those in force (called with its
        turn lock); the client to run the turn on. A CLI that refuses one (a mode it was not
        started for) or goes away meanwhile restarts with them, once."""
        turn = conversation.turn_options or conversation.options
        wanted = live_values(turn)
        todo = [(name, wanted[name]) for name in LIVE_FIELDS if conversation.live.get(name, wanted[name]) != wanted[name]]
        if not todo:
            return client
        fields = {"model": ("set_model", "model"), "permission_mode": ("set_permission_mode", "mode"),
                  "max_thinking_tokens": ("set_max_thinking_tokens", "max_thinking_tokens")}  # fmt: skip
        try:
            for name, value in todo:
                subtype, field = fields[name]
                client.session.control({"subtype": subtype, field: value}, timeout)
                conversation.live[name] = value
        except ClaudeSDKError as e:
            logger.warning("conversation %r: its CLI did not take the turn's %s (%s); it restarts with it", conversation.key,
                           name, e)  # fmt: skip
            conversation.stale = True
            return self._client(conversation, timeout)
        logger.debug("conversation %r: %s sent to its CLI", conversation.key, ", ".join(name for name, _ in todo))
        return client

    def _client(self, conversation: _Conversation, timeout: float | None = None) -> ClaudeClient:
        """The conversation's live client, or a new one in a free slot, under the key's lease
        (called with its turn lock); a live one that is ``stale`` restarts."""
        with self._cond:
            client = conversation.client
            session = getattr(client, "_session", None)
            live = client is not None and session is not None and session.ended is None and not session.closed
            if client is not None and live and not conversation.stale:
                conversation.busy = True
                return client
            if live:
                self.stats["restarted"] += 1
        if client is not None:  # its CLI died while it waited, or runs options a turn changed: woken afresh from the transcript
            self._stop(conversation)
        self._lease(conversation, self.lease_wait if timeout is None else min(timeout, self.lease_wait))
        try:
            return self._start(conversation)
        except BaseException:
            self._release(conversation)
            raise

    def _start(self, conversation: _Conversation) -> ClaudeClient:
        """A CLI for a conversation whose lease this object holds, in a free slot."""
        while True:
            victim: _Conversation | None = None
            with self._cond:
                if self._closed:
                    raise RuntimeError("these conversations are closed")
                if len(self._slots) < self.max_live:
                    self._slots.add(conversation)
                    conversation.busy = True
                    break
                idle = [c for c in self._slots if not c.busy and c.client is not None]
                if idle:
                    victim = min(idle, key=lambda c: c.last_used)
                    victim.busy = True  # taken: no turn may start on it while it stops
                else:
                    self._cond.wait(1.0)
                    continue
            if victim.turn.acquire(blocking=False):  # its own turn may be starting: then not this one
                try:
                    self._stop(victim)
                finally:
                    victim.turn.release()
            else:
                with self._cond:
                    victim.busy = False
        # the conversation's launch-time options, the turn's live fields, callbacks that ask the turn's
        turn = conversation.turn_options or conversation.options
        launch = dataclasses.replace(conversation.options, **{name: getattr(turn, name) for name in LIVE_FIELDS})
        options = unattended(asking(launch, lambda: conversation.turn_options or conversation.options))  # a server: nobody answers a prompt
        if conversation.session_id is not None:
            options = dataclasses.replace(options, resume=conversation.session_id)
        client = ClaudeClient(options)
        try:
            client.connect()
            pid = client._session.cli_pid if client._session is not None else None
            if pid is not None:  # from now on another process stops this CLI if the lease is not confirmed in time
                conversation.fence = fence_cli(pid, conversation.confirmed + self.lease_ttl * FENCE_SHARE - time.monotonic())
        except BaseException:
            with self._cond:
                self._slots.discard(conversation)
                conversation.busy = False
                self._cond.notify_all()
            raise
        with self._cond:
            closed = self._closed
            if not closed:
                conversation.client = client
                conversation.live, conversation.stale = live_values(launch), False
                self.stats["woken" if conversation.session_id is not None else "started"] += 1
        if closed:  # closed while this CLI started: it does not outlive close()
            client.disconnect()
            self._stop(conversation)
            raise RuntimeError("these conversations are closed")
        return client

    def _stop(self, conversation: _Conversation) -> None:
        """Stop a conversation's CLI, free its slot and give up its lease (called with its turn
        lock held)."""
        with self._cond:
            client, conversation.client = conversation.client, None
            fence, conversation.fence = conversation.fence, None
        if client is not None:
            client.disconnect()  # the CLI is gone before the slot (and the lease) is given to another
        if fence is not None:
            fence.release()
        with self._cond:
            if client is not None:
                self.stats["hibernated"] += 1
            self._slots.discard(conversation)
            conversation.busy = False
            self._cond.notify_all()
        self._release(conversation)

    # ------------------------------------------------------------------ the store and the lease

    def _call(self, method: Callable[..., T], *args: Any) -> T:
        try:
            return method(*args)
        except ClaudeSDKError:
            raise
        except Exception as e:  # noqa: BLE001 - whatever the store's driver raises
            raise ConversationStoreError(f"the conversations' store failed: {type(e).__name__}: {e}") from e

    def _lease(self, conversation: _Conversation, wait: float) -> None:
        """Take the key's lease, waiting up to ``wait`` seconds while another holder keeps it
        (its holder is asked to let go: see the module doc)."""
        if conversation.leased:
            return
        deadline = time.monotonic() + wait
        delay, waited = 0.02, False
        while True:
            sent = time.monotonic()
            args = (conversation.namespace, conversation.key, self._owner, self.lease_ttl)
            taken, session_id = self._call(self.store.acquire, *args, *((self._replaces,) if self._replaces else ()))
            if taken:
                with self._cond:
                    conversation.leased, conversation.lost = True, False
                    conversation.confirmed = sent
                    if session_id:
                        conversation.session_id = session_id  # the store's word: another process may have gone on
                    if waited:
                        self.stats["waited"] += 1
                return
            waited = True
            with self._cond:
                if self._closed:
                    raise RuntimeError("these conversations are closed")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ConversationBusyError(f"conversation {conversation.key!r} was held elsewhere for {wait:g} s; "
                                                "nothing was sent")  # fmt: skip
                self._cond.wait(min(delay, left))
            delay = min(delay * 2, self._poll)

    def _record(self, conversation: _Conversation) -> None:
        """Write the conversation's session id to the store (under its lease)."""
        session_id = conversation.session_id
        if session_id is None or not conversation.leased:
            return
        if not self._call(self.store.record, conversation.namespace, conversation.key, self._owner, session_id):
            conversation.lost = True
            raise ConversationLeaseLost(f"conversation {conversation.key!r}: another holder took its lease")

    def _release(self, conversation: _Conversation) -> None:
        with self._cond:
            if not conversation.leased:
                return
            conversation.leased = False
            if conversation.lost:
                # taken by another holder, or not confirmed in time (the store unreachable, maybe
                # hanging): nothing to give back that is surely ours; it runs out by itself
                return
        try:
            self.store.release(conversation.namespace, conversation.key, self._owner)
        except Exception:  # noqa: BLE001 - the lease runs out by itself; the CLI is stopped already
            logger.warning("giving up the lease of conversation %r failed; it runs out in %g s", conversation.key, self.lease_ttl,
                           exc_info=True)  # fmt: skip

    def _yield_if_wanted(self, conversation: _Conversation) -> None:
        """After a turn: renew the lease at once (not at the keeper's next look), and let go now
        if another holder wants it or took it."""
        if not conversation.leased or self._closed:
            return
        sent = time.monotonic()
        try:
            held, wanted = self.store.renew(conversation.namespace, self._owner, [conversation.key], self.lease_ttl)
        except Exception:  # noqa: BLE001 - the keeper thread tries again, and stops the CLI in time if it cannot
            return
        why = self._verdict(conversation, held, wanted, sent)
        if why is not None:
            self._let_go(conversation, why)

    def _verdict(self, conversation: _Conversation, held: set[str], wanted: set[str], sent: float) -> str | None:
        """What a renewal sent at ``sent`` says of a conversation: ``"lost"``, ``"yielded"``
        (another holder wants it), or ``None`` (still ours, confirmed as of ``sent``: its
        CLI's fence is told it may run ``FENCE_SHARE`` of a lease from then)."""
        if conversation.key not in held:
            return "lost"
        conversation.confirmed = max(conversation.confirmed, sent)
        fence = conversation.fence
        if fence is not None:
            fence.allow(conversation.confirmed + self.lease_ttl * FENCE_SHARE - time.monotonic())
        return "yielded" if conversation.key in wanted else None

    def _renewed(self, namespace: str, keys: list[str]) -> _Renewal | None:
        """The keeper's renewal of ``keys``: the one under way for ``namespace``, or a new one;
        waited for at most one look (``None`` while it has not answered: a store that hangs
        holds its thread, not the keeper's decisions)."""
        renewal = self._renewals.get(namespace)
        if renewal is None:
            renewal = self._renewals[namespace] = _Renewal(lambda: self.store.renew(namespace, self._owner, keys, self.lease_ttl))
        if not renewal.done.wait(self._poll):
            return None
        del self._renewals[namespace]
        return renewal

    def _keep(self) -> None:
        """The keeper thread: renew the leases of the live conversations, hibernate those another
        holder wants (when idle) or that idled past ``idle_timeout``, stop those whose lease is
        lost or cannot be confirmed in time."""
        while True:
            with self._cond:
                if self._closed:
                    return
                self._cond.wait(self._poll)
                if self._closed:
                    return
                leased = [c for c in self._conversations.values() if c.leased]
            by_namespace: dict[str, list[_Conversation]] = {}
            for conversation in leased:
                by_namespace.setdefault(conversation.namespace, []).append(conversation)
            stop: list[tuple[_Conversation, str]] = []
            for namespace, group in by_namespace.items():
                renewal = self._renewed(namespace, [c.key for c in group])
                if renewal is None or renewal.answer is None:
                    # unreachable (failed, or no answer yet): stop in time, before anyone may take
                    # over. Half the lease leaves the other half for noticing (a look or two) and
                    # for the CLI to die (SIGTERM, SIGKILL half a second later)
                    if renewal is not None:
                        logger.warning("renewing conversation leases failed: %s", renewal.error)
                    now = time.monotonic()
                    stop += [(c, "unconfirmed") for c in group if now - c.confirmed > self.lease_ttl * 0.5]
                    continue
                held, wanted = renewal.answer
                stop += [(c, why) for c in group if (why := self._verdict(c, held, wanted, renewal.sent)) is not None]
            now = time.monotonic()
            if self.idle_timeout is not None:
                with self._cond:
                    idle = [c for c in self._slots if not c.busy and c.client is not None and now - c.last_used > self.idle_timeout]
                stop += [(c, "idle") for c in idle]
            for conversation, why in stop:
                self._let_go(conversation, why)

    def _let_go(self, conversation: _Conversation, why: str) -> None:
        """Stop a conversation's CLI for ``why``: ``"lost"`` or ``"unconfirmed"`` (at once, a
        turn under way or not), ``"yielded"`` or ``"idle"`` (only when no turn is under way)."""
        if why in ("lost", "unconfirmed"):
            # not ours (or not surely ours) any more: its CLI stops now, a turn under way or not
            with self._cond:
                if not conversation.lost:  # (a busy one is seen again at each look until its turn ends)
                    self.stats["lost"] += 1
                conversation.lost = True
                client = conversation.client
            session = getattr(client, "_session", None)
            if session is not None:
                session.close(abort=True)
            if conversation.turn.acquire(blocking=False):
                try:
                    self._stop(conversation)
                finally:
                    conversation.turn.release()
            return
        if conversation.turn.acquire(blocking=False):  # busy: its turn ends first, and yields then
            try:
                if conversation.busy:
                    return
                if why == "idle" and (conversation.client is None or time.monotonic() - conversation.last_used <= (self.idle_timeout or 0)):
                    return
                if why == "yielded":
                    with self._cond:
                        self.stats["yielded"] += 1
                self._stop(conversation)
            finally:
                conversation.turn.release()
