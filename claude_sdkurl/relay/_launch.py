"""Sessions a person starts from the relay's page (``relay.serve(new_sessions=NewSessions(...))``).

The deployer says what a page may choose; everything else is the deployer's options. A request
from the page is checked here before anything starts: steering must be on; the page may set a
prompt, a folder, a model and a permission mode, nothing else; the folder, with every symbolic
link resolved, must be one of the allowed roots or inside one (``..``, a link that leads out, a
file, a folder that does not exist: refused); the model and the mode must be among those the
deployer listed; no more than ``max_live`` of the page's sessions run at once.

A session started here is a :class:`~claude_sdkurl.ClaudeClient` of this process, in the
resolved folder: the relay's tap shows it like any other, its tool calls wait for a person on
the page (:func:`relay.ask`, unless the deployer's options decide them), and the page writes
its next messages. It is closed when the page ends it, when it has been idle for
``idle_timeout`` seconds, or when the relay closes.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger("claude_sdkurl.relay")

MAX_PROMPT = 100_000  # characters of a first prompt
CHECK_SECONDS = 5.0  # how often a page's idle session is looked at
_PAGE_FIELDS = frozenset({"op", "id", "prompt", "cwd", "model", "permission_mode"})
_starting = threading.local()  # the page's request a session is being started for, on the thread starting it


@dataclass(frozen=True)
class NewSessions:
    """What a person may start from the relay's page (given to :func:`relay.serve`)."""

    options: Any
    """The options each session runs with; the page's choices replace only ``cwd``, ``model`` and
    ``permission_mode``. Without a ``can_use_tool`` of its own, each tool call a session asks about
    waits for a person on the page (:func:`relay.serve` gives it ``relay.ask`` with ``ask_timeout``)."""
    roots: tuple[str, ...]
    """The folders a session may run in (each, or any folder inside it): symbolic links are resolved
    before the check, for the roots too."""
    models: tuple[str, ...] = ()
    """The models the page may pick (none: the options' own only)."""
    permission_modes: tuple[str, ...] = ("default",)
    """The permission modes the page may pick; ``bypassPermissions`` only if listed here."""
    max_live: int = 4
    """The page's sessions running at once."""
    idle_timeout: float = 1800.0
    """Seconds a page's session may sit with no turn under way before it is closed (its transcript
    stays: it is listed and continued as any stored session)."""
    ask_timeout: float = 600.0
    """Seconds a tool call waits for a person before it is denied."""

    def __post_init__(self) -> None:
        if not self.roots or not all(isinstance(r, (str, os.PathLike)) and os.path.isabs(r) for r in self.roots):
            raise ValueError("NewSessions needs roots: absolute folders a page's session may run in")
        if self.max_live < 1:
            raise ValueError("NewSessions(max_live=) is 1 or more")

    def public(self) -> dict[str, Any]:
        """What the page is told it may choose."""
        model = getattr(self.options, "model", None)
        return {"roots": [os.path.realpath(r) for r in self.roots], "models": list(self.models or ([model] if model else [])),
                "permission_modes": list(self.permission_modes)}  # fmt: skip


def resolved_inside(cwd: Any, roots: tuple[str, ...]) -> tuple[str | None, str | None]:
    """``(folder, None)``: ``cwd`` with every link resolved, a folder inside one of ``roots``
    (also resolved); else ``(None, why not)``. A relative ``cwd`` is taken inside the first root."""
    if not isinstance(cwd, str) or not cwd.strip():
        return None, "a new session needs a folder (cwd) inside an allowed root"
    if "\x00" in cwd or len(cwd) > 4096:
        return None, "not a folder name"
    real_roots = [os.path.realpath(r) for r in roots]
    candidate = os.path.realpath(os.path.join(real_roots[0], cwd))  # (an absolute cwd replaces the root)
    if not any(candidate == root or candidate.startswith(root.rstrip(os.sep) + os.sep) for root in real_roots):
        return None, f"{cwd!r} is not inside an allowed root ({', '.join(real_roots)})"
    if not os.path.isdir(candidate):
        return None, f"{cwd!r} is not a folder"
    return candidate, None


@dataclass(eq=False)
class _Started:
    client: Any
    op_id: str
    key: str | None = None
    thread: threading.Thread | None = None
    stop: threading.Event = field(default_factory=threading.Event)


class Launcher:
    """Starts and ends the sessions a page asks for (see the module doc)."""

    def __init__(self, config: NewSessions, steer: bool, hub: Any) -> None:
        self.config = config
        self.steer = steer
        self._hub = hub
        self._lock = threading.Lock()
        self._live: list[_Started] = []
        self._closed = False

    def start(self, op: dict[str, Any], done: Callable[[str | None, str | None], None]) -> str | None:
        """Start the session ``op`` asks for; ``None`` once it is starting (``done`` is told its
        key, or why it failed to start), else why not (nothing started)."""
        if not self.steer:
            return "this relay is read-only: the program did not allow steering"
        unknown = sorted(set(op) - _PAGE_FIELDS)
        if unknown:
            return f"a page may choose a new session's prompt, cwd, model and permission_mode only, not {', '.join(unknown)}"
        prompt = op.get("prompt")
        if prompt is not None and (not isinstance(prompt, str) or len(prompt) > MAX_PROMPT):
            return f"a first prompt is text of {MAX_PROMPT} characters at most"
        allowed = self.config.public()
        model = op.get("model") or None
        if model is not None and model not in allowed["models"]:
            return f"the model {model!r} is not one this relay allows ({', '.join(allowed['models']) or 'none to choose'})"
        mode = op.get("permission_mode") or None
        if mode is not None and mode not in self.config.permission_modes:
            return f"the permission mode {mode!r} is not one this relay allows ({', '.join(self.config.permission_modes)})"
        folder, why = resolved_inside(op.get("cwd"), tuple(str(r) for r in self.config.roots))
        if folder is None:
            return why
        base = self.config.options
        options = dataclasses.replace(base, cwd=folder, model=model or base.model, permission_mode=mode or base.permission_mode)
        with self._lock:
            if self._closed:
                return "the relay is closing"
            self._live = [s for s in self._live if s.thread is None or s.thread.is_alive()]
            if len(self._live) >= self.config.max_live:
                return f"{self.config.max_live} sessions started from the page run already: end one first"
            from ..client import ClaudeClient

            started = _Started(ClaudeClient(options), str(op.get("id") or ""))
            self._live.append(started)
        started.thread = threading.Thread(target=self._run, args=(started, prompt, done), name="claude-sdkurl-relay-new-session",
                                          daemon=True)  # fmt: skip
        started.thread.start()
        return None

    def _run(self, started: _Started, prompt: str | None, done: Callable[[str | None, str | None], None]) -> None:
        from .._errors import ReceiveTimeoutError

        client = started.client
        _starting.started = started
        try:
            client.connect()
        except Exception as e:
            done(None, f"the session did not start: {type(e).__name__}: {e}")
            return
        finally:
            _starting.started = None
        done(started.key, None)
        try:
            if prompt and prompt.strip():
                client.query(prompt)
            last = time.monotonic()
            while not started.stop.is_set():
                try:
                    for _ in client.receive_messages(timeout=CHECK_SECONDS):
                        last = time.monotonic()
                    return  # the CLI ended
                except ReceiveTimeoutError:
                    watched = self._hub.session(started.key) if started.key else None
                    idle = watched is None or watched.shown_state() in ("idle", "parked", "interrupted")
                    if not idle:
                        last = time.monotonic()
                    elif time.monotonic() - last >= self.config.idle_timeout:
                        logger.info("a session started from the relay's page was idle for %.0f s: closed", self.config.idle_timeout)
                        return
        except Exception as e:
            logger.warning("a session started from the relay's page stopped: %s: %s", type(e).__name__, e)
        finally:
            client.disconnect()

    def end(self, key: Any) -> str | None:
        """End a session the page started (``None``), or say why not."""
        if not self.steer:
            return "this relay is read-only: the program did not allow steering"
        with self._lock:
            found = next((s for s in self._live if s.key == key and key is not None), None)
        if found is None:
            return f"session {key!r} was not started from the page: its program ends it"
        found.stop.set()
        threading.Thread(target=found.client.disconnect, name="claude-sdkurl-relay-end-session", daemon=True).start()
        return None

    def started_here(self, key: str) -> bool:
        with self._lock:
            return any(s.key == key for s in self._live)

    def close(self, timeout: float = 10.0) -> None:
        with self._lock:
            self._closed = True
            live = list(self._live)
        for started in live:
            started.stop.set()
            try:
                started.client.disconnect()
            except Exception:  # pragma: no cover - best effort at close
                pass
        end = time.monotonic() + timeout
        for started in live:
            if started.thread is not None:
                started.thread.join(max(0.0, end - time.monotonic()))


def claim(watched: Any) -> None:
    """Called by the relay's tap for each new session: one started here for a page is marked."""
    started = getattr(_starting, "started", None)
    if started is not None and started.key is None:
        started.key = watched.key
        watched.started_by_page = True
