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
the order they arrive; different conversations run in parallel, up to ``max_live`` at once (a
send waits for a slot when every live CLI is busy).

Threads: one ``claude-sdkurl-conversations`` thread hibernates idle conversations (it looks once
a second, or every ``idle_timeout`` where that is shorter, waiting on a condition, and ends with
:meth:`Conversations.close`); each
turn runs on the caller's thread. A CLI is stopped before another one takes its slot, so no more
than ``max_live`` exist at any moment, and no two serve one conversation.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

from ._errors import CLIConnectionError
from .client import ClaudeClient
from ._launch import unattended
from .types import ClaudeAgentOptions, Message, ResultMessage, SystemMessage

__all__ = ["Conversations"]


@dataclasses.dataclass(eq=False)
class _Conversation:
    key: str
    options: ClaudeAgentOptions
    turn: threading.Lock = dataclasses.field(default_factory=threading.Lock)  # one turn at a time
    client: ClaudeClient | None = None
    session_id: str | None = None
    last_used: float = dataclasses.field(default_factory=time.monotonic)
    busy: bool = False


class Conversations:
    """Conversations by key over at most ``max_live`` CLIs (see the module doc).

    ``options`` are every conversation's (a conversation's folder, model and the rest are fixed
    by the options of its first :meth:`send`). ``stats`` counts ``started`` (a new
    conversation's first CLI), ``woken`` (a CLI resumed after hibernation) and ``hibernated``.
    """

    def __init__(self, options: ClaudeAgentOptions | None = None, *, max_live: int = 8, idle_timeout: float | None = 300.0) -> None:
        options = options or ClaudeAgentOptions()
        if not isinstance(options, ClaudeAgentOptions):
            raise TypeError(f"options must be ClaudeAgentOptions, not {type(options).__name__}")
        if not isinstance(max_live, int) or max_live < 1:
            raise ValueError("max_live must be a positive number of CLIs")
        if idle_timeout is not None and idle_timeout <= 0:
            raise ValueError("idle_timeout must be positive (or None: only a needed slot hibernates)")
        if options.resume or options.continue_conversation or options.fork_session:
            raise ValueError("each conversation resumes its own session: no resume/continue/fork in the shared options")
        self.options = options
        self.max_live = max_live
        self.idle_timeout = idle_timeout
        self.stats: Counter[str] = Counter()
        self._conversations: dict[str, _Conversation] = {}
        self._slots: set[_Conversation] = set()  # conversations holding a CLI (or about to)
        self._cond = threading.Condition()
        self._closed = False
        self._reaper = threading.Thread(target=self._reap_idle, name="claude-sdkurl-conversations", daemon=True)
        self._reaper.start()

    # ------------------------------------------------------------------ the public face

    def send(self, key: str, prompt: str, options: ClaudeAgentOptions | None = None, *,
             timeout: float | None = None) -> Iterator[Message]:  # fmt: skip
        """That turn's messages, through its :class:`ResultMessage`: the conversation woken if it
        hibernated, after the turns sent to it before. Leaving the iteration early interrupts
        nothing else: the conversation hibernates, and its next message resumes it."""
        if not isinstance(key, str) or not key:
            raise ValueError("a conversation's key is a non-empty string")
        if not isinstance(prompt, str):
            raise TypeError("prompt must be a str")
        with self._cond:
            if self._closed:
                raise RuntimeError("these conversations are closed")
            conversation = self._conversations.get(key)
            if conversation is None:
                conversation = self._conversations[key] = _Conversation(key, options or self.options)
        return self._turn(conversation, prompt, timeout)

    def live(self) -> int:
        """How many conversations hold a CLI now."""
        with self._cond:
            return len(self._slots)

    def session_id(self, key: str) -> str | None:
        """The CLI session a conversation is (its transcript's id), once it has one."""
        with self._cond:
            conversation = self._conversations.get(key)
            return conversation.session_id if conversation is not None else None

    def hibernate(self, key: str) -> None:
        """Stop a conversation's CLI now (it wakes with its next message)."""
        with self._cond:
            conversation = self._conversations.get(key)
        if conversation is not None:
            with conversation.turn:
                self._stop(conversation)

    def close(self) -> None:
        """Stop every CLI at once (a turn under way ends with the CLI's error); later sends raise."""
        with self._cond:
            self._closed = True
            live = [(c.client, c.busy) for c in self._conversations.values() if c.client is not None]
            self._cond.notify_all()
        for client, busy in live:
            session = getattr(client, "_session", None)
            if busy and session is not None:
                # a turn holds the client: its CLI is stopped under it (the turn ends with the
                # error and tidies the client up itself); waiting for the turn could take long
                session.close(abort=True)
            else:
                client.disconnect()
        self._reaper.join(5)

    def __enter__(self) -> Conversations:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ a turn

    def _turn(self, conversation: _Conversation, prompt: str, timeout: float | None) -> Iterator[Message]:
        with conversation.turn:
            client = self._client(conversation)
            done = False
            try:
                client.query(prompt)
                for message in client.receive_response(timeout=timeout):
                    if isinstance(message, SystemMessage) and message.subtype == "init":
                        conversation.session_id = str(message.data.get("session_id") or conversation.session_id)
                    if isinstance(message, ResultMessage):
                        conversation.session_id = message.session_id or conversation.session_id
                        done = True
                    yield message
                if not done:  # the CLI went away under the turn (close(), a crash): no answer is no answer
                    raise CLIConnectionError(f"conversation {conversation.key!r}: the turn ended without its result")
            finally:
                with self._cond:
                    conversation.busy = False
                    conversation.last_used = time.monotonic()
                    self._cond.notify_all()
                if not done:  # an error, a timeout, or left mid-turn: its CLI goes, the transcript stays
                    self._stop(conversation)

    def _client(self, conversation: _Conversation) -> ClaudeClient:
        """The conversation's live client, or a new one in a free slot (called with its turn lock)."""
        with self._cond:
            client = conversation.client
            session = getattr(client, "_session", None)
            if client is not None and session is not None and session.ended is None and not session.closed:
                conversation.busy = True
                return client
        if client is not None:  # its CLI died while it waited: woken afresh from the transcript
            self._stop(conversation)
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
        options = unattended(conversation.options)  # a server: nobody is there to answer a prompt
        if conversation.session_id is not None:
            options = dataclasses.replace(options, resume=conversation.session_id)
        client = ClaudeClient(options)
        try:
            client.connect()
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
                self.stats["woken" if conversation.session_id is not None else "started"] += 1
        if closed:  # closed while this CLI started: it does not outlive close()
            client.disconnect()
            self._stop(conversation)
            raise RuntimeError("these conversations are closed")
        return client

    def _stop(self, conversation: _Conversation) -> None:
        """Stop a conversation's CLI and free its slot (called with its turn lock held)."""
        with self._cond:
            client, conversation.client = conversation.client, None
        if client is not None:
            client.disconnect()  # the CLI is gone before the slot is given to another
        with self._cond:
            if client is not None:
                self.stats["hibernated"] += 1
            self._slots.discard(conversation)
            conversation.busy = False
            self._cond.notify_all()

    def _reap_idle(self) -> None:
        while True:
            with self._cond:
                if self._closed:
                    return
                self._cond.wait(min(self.idle_timeout, 1.0) if self.idle_timeout is not None else None)
                if self._closed:
                    return
                if self.idle_timeout is None:
                    continue
                now = time.monotonic()
                idle = [c for c in self._slots if not c.busy and c.client is not None and now - c.last_used > self.idle_timeout]
            for conversation in idle:
                if conversation.turn.acquire(blocking=False):
                    try:
                        if not conversation.busy and time.monotonic() - conversation.last_used > (self.idle_timeout or 0):
                            self._stop(conversation)
                    finally:
                        conversation.turn.release()
