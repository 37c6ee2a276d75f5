"""The mechanics of spare CLIs (see :mod:`claude_sdkurl.spares`): a spare, a pool that keeps them,
and :func:`take_spare`, which :func:`~claude_sdkurl.query` and :class:`~claude_sdkurl.ClaudeClient`
call to take a claimed session from an open pool. Below the public face: it imports neither."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import threading
import weakref
import time
from collections import Counter
from pathlib import Path
from typing import Any

from .._errors import ControlRequestError
from .launch import agents_wire, cwd_problem
from .session import Session
from .start import register_ready
from .stock import Stock
from .paths import cli_config_dir
from ..types import ClaudeAgentOptions

logger = logging.getLogger("claude_sdkurl.spares")

CLAIMABLE = ("cwd", "permission_mode", "add_dirs", "model", "max_thinking_tokens", "env", "agents", "system_prompt",
             "title", "settings")  # fmt: skip
"""The options a claim can change; every other option must equal the host's for a spare to fit.
``env`` may add or change variables (the CLI refuses one it reads at start-up), ``agents`` may be
given where the host has none, ``system_prompt`` may append to the default one where the host
sets none, ``title`` may be given where the host has none or changed, ``settings`` (JSON text
or a file) may be given where the host has none, without the keys that govern hooks."""
HOOK_SETTINGS = ("hooks", "disableAllHooks", "allowManagedHooksOnly", "allowedHttpHookUrls", "httpHookAllowedEnvVars")
"""Settings a claim cannot carry (as in TypeScript): hooks run before a claimed session's overlay
is in force; such options start cold."""
SETTINGS_AFTER_CLAIM = ("model", "agent", "fastMode", "permissions", "availableModels", "disableAutoMode")
"""Settings sent after the claim (as TypeScript sends them); the rest of an overlay goes ahead
of it, so that the folder's MCP servers and plugins start as the overlay says."""
RUNS_ANYWAY = "option_not_applied"
"""The one refusal that still runs on the spare (a claimed setting that could not be applied)."""
_PARK_PREFIX = "spare-"
_NEW_PREFIX = ".new-spare-"  # a parking folder being made: its owner's lock is not taken yet
REFILL_AT_LATEST = 0.5
"""Seconds after a claim by which the pool starts the spare that replaces the one taken; it
starts sooner, at the claimed session's first output from the model. A CLI's start-up is a
burst of CPU: begun at the claim, it competed with the claimed session's own set-up and made
its first message 193 ms instead of 150 (2 cores, CLI 2.1.330, ``bench/bench_spares.py``).
With a remote model the set-up is over long before the first output, hence the bound."""


def _unclaimable(options: ClaudeAgentOptions) -> ClaudeAgentOptions:
    # (permission_prompts="none" on a run nobody answers, as batches and conversations set it,
    # asks for nothing a spare lacks: with no callback the spare's CLI denies such a tool too,
    # only in other words)
    unattended = options.permission_prompts == "none" and options.can_use_tool is None \
        and options.permission_prompt_tool_name is None  # fmt: skip
    return dataclasses.replace(options, cwd=None, permission_mode=None, add_dirs=[], model=None, max_thinking_tokens=None,
                               env={}, agents=None, system_prompt=None, title=None, settings=None,
                               permission_prompts=None if unattended else options.permission_prompts)  # fmt: skip


def _overlay(host: ClaudeAgentOptions, options: ClaudeAgentOptions) -> dict[str, Any] | None:
    """The settings overlay a claim for ``options`` sends over ``host`` (``{}`` for none), or
    ``None`` when their settings cannot be claimed: the host has its own, the text or file does
    not read as a JSON object (the cold start then reports it as it would), or it governs hooks."""
    if options.settings == host.settings:
        return {}
    if host.settings is not None or options.settings is None or host.sandbox is not None:
        return None  # (a host's sandbox travels in its settings: an overlay must not meet it)
    text = options.settings.strip()
    try:
        if not (text.startswith("{") and text.endswith("}")):  # a file, where the CLI would look for it
            base = Path(os.fspath(options.cwd)) if options.cwd is not None else Path.cwd()
            text = (base / text).expanduser().read_text(encoding="utf-8-sig")
        overlay = json.loads(text)
    except (OSError, ValueError):
        return None
    if not isinstance(overlay, dict) or any(k in overlay for k in HOOK_SETTINGS):
        return None
    return overlay


def _title_fits(host: ClaudeAgentOptions, options: ClaudeAgentOptions) -> bool:
    # a claim sets a title; it cannot take back the one the host's spare started with
    return options.title is not None or host.title is None


def _appended(host: ClaudeAgentOptions, options: ClaudeAgentOptions) -> str | None:
    """The text ``options`` append to the default system prompt over ``host``'s ("" for none);
    ``None`` when their system prompts differ otherwise (not claimable)."""
    if options.system_prompt == host.system_prompt:
        return ""
    sp: Any = options.system_prompt
    if host.system_prompt is None and isinstance(sp, dict) and sp.get("type") == "preset" and sp.get("preset") == "claude_code" \
            and set(sp) <= {"type", "preset", "append"} and isinstance(sp.get("append"), str):  # fmt: skip
        return str(sp["append"])
    return None


def fits(host: ClaudeAgentOptions, options: ClaudeAgentOptions) -> bool:
    """Whether a spare started from ``host`` can serve ``options`` (see :data:`CLAIMABLE`)."""
    return _claim_overlay(host, options) is not None


def _claim_overlay(host: ClaudeAgentOptions, options: ClaudeAgentOptions) -> dict[str, Any] | None:
    """The settings overlay a claim for ``options`` sends (``{}`` for none) when a spare started
    from ``host`` can serve them, else ``None``. Computed once per take: a settings file is read
    here, and the claim sends what was read (not a second reading of a file changed between)."""
    if options is host:
        return {}
    try:
        host_env, env = dict(host.env or {}), dict(options.env or {})
        if not (_unclaimable(options) == _unclaimable(host) and set(host_env) <= set(env)  # a claim cannot unset a variable
                and (options.agents == host.agents or not host.agents) and _appended(host, options) is not None
                and _title_fits(host, options)):  # fmt: skip
            return None
    except Exception:  # an option whose == raises: not ours to guess
        return None
    return _overlay(host, options)


class ClaimRefused(ControlRequestError):
    """The spare's CLI refused the claim; ``code`` is its reason (``cwd_not_found``, ...) and
    ``error`` the CLI's own words (the message reads ``Control request 'claim_session' failed:
    <the CLI's words>``, once)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__("claim_session", message)
        self.code = code


def refusal_code(error: ControlRequestError) -> str:
    """The CLI's reason code: the text before the first colon (``cwd_not_found: ...``)."""
    text = str(getattr(error, "error", "") or error)
    head = text.split(":", 1)[0].strip()
    return head if head and " " not in head else "claim_failed"


def resident_mb(pid: int) -> float | None:
    """A process's resident memory in MiB (Linux ``/proc``), ``None`` where it cannot be read."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


class Spare:
    """One parked CLI (see the module doc). Made by a :class:`SparePool`; :meth:`claim` binds it."""

    def __init__(self, host: ClaudeAgentOptions) -> None:
        from .owned import make_owned  # a pool's, not every query's (query() only asks whether a pool is open)

        env = dict(host.env or {})
        parent = cli_config_dir(env) / "spares"
        parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._owner: int | None
        self.park, self._owner = make_owned(parent, _PARK_PREFIX, _NEW_PREFIX)
        extra = {**(host.extra_args or {}), "await-claim": None}
        self.host = host
        try:
            self.session = Session(dataclasses.replace(host, cwd=str(self.park), extra_args=extra, transport="stdio"))
        except BaseException:
            self._leave_park()
            raise
        self.started_at = time.monotonic()

    def start(self) -> None:
        try:
            self.session.start()
        except BaseException:
            self.discard()
            raise

    @property
    def alive(self) -> bool:
        return self.session.ended is None and not self.session.closed

    def pid(self) -> int | None:
        process = getattr(getattr(self.session, "_transport", None), "process", None)
        pid = getattr(process, "pid", None)
        return pid if isinstance(pid, int) else None

    def claim(self, options: ClaudeAgentOptions, overlay: dict[str, Any] | None = None) -> Session:
        """Bind the spare to ``options``' folder and settings; the started session, ready for a
        prompt. ``overlay`` is the settings overlay :func:`fits` found (read here when not given).
        Raises :class:`ClaimRefused` (the spare is then discarded) when the CLI refuses, and
        ``ValueError`` for options that do not fit (the spare is left as it is)."""
        if overlay is None:
            overlay = _claim_overlay(self.host, options)
            if overlay is None:
                raise ValueError("these options do not fit this spare (see claude_sdkurl.spares.fits)")
        cwd = os.path.abspath(os.fspath(options.cwd)) if options.cwd is not None else os.getcwd()
        request: dict[str, Any] = {"subtype": "claim_session", "cwd": cwd, "include_initialize": True,
                                   "sdk_mcp_servers": sorted(self.session.sdk_mcp_servers)}  # fmt: skip
        if options.permission_mode is not None:
            request["permission_mode"] = options.permission_mode
        if options.add_dirs:
            request["additional_directories"] = [os.fspath(d) for d in options.add_dirs]
        changed = {k: v for k, v in (options.env or {}).items() if (self.host.env or {}).get(k) != v}
        if changed:
            request["env"] = changed
        if options.agents and options.agents != self.host.agents:
            request["agents"] = agents_wire(options.agents)
        appended = _appended(self.host, options)
        if appended:
            request["append_system_prompt"] = appended
        if options.title is not None:
            request["title"] = options.title
        ahead = {k: v for k, v in overlay.items() if k not in SETTINGS_AFTER_CLAIM}
        behind = {k: v for k, v in overlay.items() if k in SETTINGS_AFTER_CLAIM}
        session = self.session
        if ahead:
            self._settings(ahead)
        try:
            answer = session.control(request)
        except ControlRequestError as e:
            code = refusal_code(e)
            if code != RUNS_ANYWAY:
                self.discard()
                raise ClaimRefused(code, e.error) from None
            logger.info("spare claimed with a setting not applied: %s", e)
            answer = {}
        except BaseException:  # the CLI died under the claim, or a timeout: the spare goes with it
            self.discard()
            raise
        initialize = answer.get("initialize") if isinstance(answer, dict) else None
        if isinstance(initialize, dict):
            session.server_info = initialize
        try:
            if options.model is not None and options.model != self.host.model:
                session.control({"subtype": "set_model", "model": options.model})
            if options.max_thinking_tokens is not None and options.max_thinking_tokens != self.host.max_thinking_tokens:
                session.control({"subtype": "set_max_thinking_tokens", "max_thinking_tokens": options.max_thinking_tokens})
        except BaseException:
            self.discard()
            raise
        if behind:
            self._settings(behind)
        session.options = options  # what the run is for, from now on (ledgers, traces, transcripts)
        self._leave_park()  # the claimed session lives in its own folder
        return session

    def _settings(self, overlay: dict[str, Any]) -> None:
        """Send a settings overlay (``apply_flag_settings``); a refusal is ``settings_not_applied``
        and ends the spare before any prompt reached it (the query starts cold, as TypeScript
        lets the process go)."""
        try:
            self.session.control({"subtype": "apply_flag_settings", "settings": overlay})
        except ControlRequestError as e:
            self.discard()
            raise ClaimRefused("settings_not_applied", f"apply_flag_settings: {e.error}") from None
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        """Stop the CLI and remove its parking folder."""
        self.session.close(abort=True)
        self._leave_park()

    def _leave_park(self) -> None:
        """Remove the parking folder, then let go of its owner lock (once)."""
        shutil.rmtree(self.park, ignore_errors=True)
        if self._owner is not None:
            os.close(self._owner)  # (after the removal: no other pool takes the folder for a dead one's)
            self._owner = None


def remove_abandoned_parks(parent: Path) -> int:
    """Remove the parking folders under ``parent`` whose owning process is gone (see
    :mod:`._engine.owned`); folders of living pools, in this process or another, are left alone."""
    from .owned import remove_abandoned

    return remove_abandoned(parent, _PARK_PREFIX, _NEW_PREFIX)


class SparePool(Stock):
    """Keeps ``size`` spare CLIs for ``options`` (the host's) and replaces each one claimed, once
    the claimed session has answered (see :data:`REFILL_AT_LATEST`).

    ``max_memory_mb`` caps the resident memory of the parked spares together (measured per CLI
    from ``/proc``; a spare that would pass the cap is not started); ``idle_timeout`` stops a
    spare parked longer than that many seconds (the next take starts cold and refills). Use it
    as a context manager, or call :meth:`close`; from any thread. While open it serves
    :func:`~claude_sdkurl.query`, :class:`~claude_sdkurl.ClaudeClient` and ``run_batch`` on
    threads (see :mod:`claude_sdkurl.spares`).

    ``stats`` counts ``started``, ``claimed``, ``cold`` (a query that found no spare),
    ``replaced`` (a spare that died parked), ``refused:<code>`` (a claim the CLI refused) and
    ``abandoned`` (parking folders of programs killed before they closed their pool, removed
    when this pool opened: each folder's ``.owner`` file is locked while its spare is kept).
    """

    def __init__(self, size: int = 1, options: ClaudeAgentOptions | None = None, *, max_memory_mb: float | None = None,
                 idle_timeout: float | None = None) -> None:  # fmt: skip
        host = options or ClaudeAgentOptions()
        if not isinstance(host, ClaudeAgentOptions):
            raise TypeError(f"options must be ClaudeAgentOptions, not {type(host).__name__}")
        if not isinstance(size, int) or size < 1:
            raise ValueError("size must be a positive number of spares")
        if host.resume or host.continue_conversation or host.fork_session:
            raise ValueError("a spare has no session yet: pass resume/continue_conversation/fork_session to query(), not to the pool")
        if host.transport == "websocket" or host.transport is not None and not isinstance(host.transport, str):
            raise ValueError("spares speak stdio: a pool's options cannot name another transport")
        if max_memory_mb is not None and max_memory_mb <= 0:
            raise ValueError("max_memory_mb must be positive")
        if idle_timeout is not None and idle_timeout <= 0:
            raise ValueError("idle_timeout must be positive")
        self.options = host
        self.size = size
        self.max_memory_mb = max_memory_mb
        self.idle_timeout = idle_timeout
        super().__init__()
        self.stats: Counter[str] = Counter()
        self._parked: list[Spare] = []
        self._refills: set[threading.Timer] = set()
        abandoned = remove_abandoned_parks(cli_config_dir(dict(host.env or {})) / "spares")
        if abandoned:
            self.stats["abandoned"] = abandoned
            logger.info("removed %d parking folder(s) left by programs that ended without closing their pool", abandoned)
        with _pools_lock:
            _pools.append(weakref.ref(self))
        self._fill()

    # ------------------------------------------------------------------ keeping spares

    def memory_mb(self) -> float:
        """Resident memory of the parked spares' CLIs together, in MiB."""
        with self._cond:
            spares = list(self._parked)
        return sum(resident_mb(p) or 0.0 for s in spares if (p := s.pid()) is not None)

    def _room(self) -> bool:
        if self.max_memory_mb is None:
            return True
        parked = [resident_mb(p) for s in self._parked if (p := s.pid()) is not None]
        known = [m for m in parked if m is not None]
        each = max(known) if known else 0.0
        return sum(known) + each <= self.max_memory_mb

    def _fill(self) -> None:
        with self._cond:
            if self._closed:
                return
            while len(self._parked) + self._starting < self.size and (self._starting or self._room()):
                self._launch(self._start_one, "claude-sdkurl-spare")
                if self.max_memory_mb is not None:
                    break  # one at a time under a cap: the next is measured against this one

    def _start_one(self) -> None:
        try:
            spare = Spare(self.options)
            spare.start()
        except BaseException as e:
            self._failed("starting a spare CLI", e)
            return
        if not self._arrived(self._parked, spare):
            spare.discard()
            return
        self._count("started")
        if self.max_memory_mb is not None:
            self._fill()

    def _reap(self) -> list[Spare]:
        """Parked spares that died or sat past ``idle_timeout`` (under the lock)."""
        gone = []
        now = time.monotonic()
        for spare in list(self._parked):
            if not spare.alive:
                self.stats["replaced"] += 1
            elif self.idle_timeout is not None and now - spare.started_at > self.idle_timeout:
                self.stats["reaped"] += 1
            else:
                continue
            self._parked.remove(spare)
            gone.append(spare)
        return gone

    def reap(self) -> None:
        """Stop the spares that died parked or idled past ``idle_timeout``; refill for the dead."""
        with self._cond:
            gone = self._reap()
        for spare in gone:
            spare.discard()
        self._fill()

    def _take_spare(self, wait: bool) -> Spare | None:
        with self._cond:
            while True:
                gone = self._reap()
                if self._parked:
                    spare: Spare | None = self._parked.pop(0)
                    break
                if wait and self._starting and not self._closed:
                    self._cond.wait(1.0)
                    continue
                spare = None
                break
        for old in gone:
            old.discard()
        if spare is None:
            self._fill()
        # (a spare taken is replaced once its claim is served: see _refill_later)
        return spare

    def take(self, options: ClaudeAgentOptions | None = None, wait: bool = False) -> Session | None:
        """A session claimed for ``options`` (started, ready for its first prompt), or ``None``:
        the options do not fit, no spare is parked (with ``wait``, one being started is waited
        for), or the CLI refused the claim (counted; the caller starts cold)."""
        options = options or ClaudeAgentOptions()
        overlay = None if self._closed else _claim_overlay(self.options, options)
        if overlay is None or cwd_problem(options.cwd) is not None:
            return None  # (a folder a cold start refuses before it starts anything: no spare spent on it)
        spare = self._take_spare(wait)
        if spare is None:
            self._count("cold")
            return None
        try:
            session = spare.claim(options, overlay)
        except ClaimRefused as e:
            logger.warning("a spare refused the claim (%s); starting cold: %s", e.code, e)
            self._count(f"refused:{e.code}")
            self._fill()
            return None
        except Exception as e:  # the spare died as it was claimed: cold, as for any refusal
            logger.warning("claiming a spare failed; starting cold: %s", e)
            self._count("refused:claim_failed")
            self._fill()
            return None
        self._count("claimed")
        self._refill_later(session)
        return session

    def _refill_later(self, session: Session) -> None:
        """Start the replacement for a spare just claimed as ``session``: at its first output
        from the model, at its end, or :data:`REFILL_AT_LATEST` seconds from now, whichever
        comes first (once). The timer's thread is the pool's, cancelled when it closes."""
        once = threading.Lock()
        pool = weakref.ref(self)  # (the timer and the session keep the refill: not the pool, which is collectable)

        def refill() -> None:
            if not once.acquire(blocking=False):
                return
            timer.cancel()
            me = pool()
            if me is None:
                return
            with me._cond:
                me._refills.discard(timer)
            me._fill()

        timer = threading.Timer(REFILL_AT_LATEST, refill)
        timer.name = "claude-sdkurl-refill"
        timer.daemon = True
        with self._cond:
            if self._closed:
                return
            self._refills.add(timer)
        timer.start()
        session.when_answering(refill)

    def _count(self, what: str) -> None:
        with self._cond:  # takes run on many threads at once: no count may be lost
            self.stats[what] += 1

    def close(self) -> None:
        """Stop every parked spare and every one being started; later takes find none."""
        parked, threads = self._shut(self._parked)
        with self._cond:
            refills, self._refills = list(self._refills), set()
        with _pools_lock:
            _pools[:] = [ref for ref in _pools if ref() not in (self, None)]
        for timer in refills:
            timer.cancel()
        for spare in parked:
            spare.discard()
        for t in [*threads, *refills]:
            t.join(60)

    def __enter__(self) -> SparePool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


_pools: list[weakref.ref[SparePool]] = []  # the open pools, oldest first (weakly: a pool dropped unclosed is collected)
_pools_lock = threading.Lock()
_local = threading.local()


class preferred:
    """Within it, this thread's takes look in ``pool`` first."""

    def __init__(self, pool: SparePool) -> None:
        self.pool = pool

    def __enter__(self) -> None:
        _local.pool = self.pool

    def __exit__(self, *exc: Any) -> None:
        _local.pool = None


def take_spare(options: ClaudeAgentOptions) -> Session | None:
    """A session claimed from an open pool whose host options ``options`` fit, else ``None``."""
    first: SparePool | None = getattr(_local, "pool", None)
    with _pools_lock:
        pools: list[SparePool] = ([first] if first is not None else []) + [p for ref in _pools if (p := ref()) is not None]
    seen: set[int] = set()
    for pool in pools:
        if id(pool) in seen:
            continue
        seen.add(id(pool))
        session = pool.take(options)
        if session is not None:
            return session
    return None


def close_all() -> None:
    """Close every open pool (also done at interpreter exit)."""
    with _pools_lock:
        pools = [p for ref in _pools if (p := ref()) is not None]
    for pool in pools:
        pool.close()


register_ready(take_spare, warm=False)

import atexit  # noqa: E402

atexit.register(close_all)
