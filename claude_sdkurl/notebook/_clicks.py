"""Widget clicks handled while the kernel runs other code.

A kernel handles a widget's messages (a button's click) where it runs cells: a cell busy in
plain code (``time.sleep(8)``, or a ``%%claude`` cell waiting with ``%autoawait off``) holds
every click until it ends. ipykernel 7 has *subshells*: threads of their own that handle
shell messages beside the main one. JupyterLab 4.4+ sends comm messages to a subshell, but the
kernel routes a comm's messages back to the subshell that opened it (the main one, for a
widget made in a cell), so by default nothing changes. Here the package asks for one subshell
of its own, once per kernel, and routes the messages of its own widgets (approval cards, a
background turn's Stop) to it: their clicks are handled at once, whatever the cell. That
subshell publishes no busy/idle status (:func:`_quiet`).

Where the kernel has no subshells (ipykernel 6, another kernel), :func:`handle_apart`
answers ``False`` and the caller says on the card that a click waits for the running cell.
"""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()
_subshell: dict[int, str | None] = {}  # id(kernel) -> our subshell's id, or None: none to be had


def _ours(kernel: Any) -> str | None:
    """Our subshell of ``kernel``, made on first use (on the kernel's shell channel thread,
    where ipykernel makes them); ``None`` where it cannot be made."""
    with _lock:
        if id(kernel) in _subshell:
            return _subshell[id(kernel)]
        made: list[str] = []
        thread = getattr(kernel, "shell_channel_thread", None)
        manager = getattr(thread, "_manager", None)  # made by the kernel at its start
        create = getattr(manager, "_create_subshell", None)
        loop = getattr(thread, "io_loop", None)
        if create is not None and loop is not None:
            done = threading.Event()

            def make() -> None:
                try:
                    made.append(create())
                finally:
                    done.set()

            loop.add_callback(make)
            done.wait(5.0)
        _subshell[id(kernel)] = made[0] if made else None
        if made:
            _quiet(kernel, getattr(getattr(manager, "_cache", {}).get(made[0]), "ident", None))
        return _subshell[id(kernel)]


def _quiet(kernel: Any, ident: int | None) -> None:
    """No busy/idle status from our subshell: a frontend shows the last status it got, and the
    "idle" after a click handled beside a running cell made JupyterLab say Idle while the cell
    still ran. (A click needs no status: nothing waits for a comm message's.)"""
    publish = getattr(kernel, "_publish_status", None)
    if ident is None or publish is None:
        return

    def publish_status(status: str, channel: str, parent: Any = None) -> Any:
        if threading.get_ident() == ident:
            return None
        return publish(status, channel, parent)

    kernel._publish_status = publish_status


def available(kernel: Any) -> bool:
    """Whether clicks can be handled beside a running cell in ``kernel``."""
    return kernel is not None and _ours(kernel) is not None


def handle_apart(kernel: Any, *widgets: Any) -> bool:
    """Have ``widgets``' messages from the frontend (clicks) handled on the package's subshell
    of ``kernel``; ``False`` (nothing changed) where the kernel has none."""
    comms: list[Any] = [getattr(w, "comm", None) for w in widgets]
    if any(c is None or not hasattr(c, "_reply_subshell_for") for c in comms) or not available(kernel):
        return False
    subshell = _ours(kernel)
    for comm in comms:
        # read by the kernel's shell channel thread for each comm message (ipykernel 7.x)
        comm._reply_subshell_for = lambda _data, _default, s=subshell: s
    return True
