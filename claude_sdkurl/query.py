"""``query()``: one-shot or multi-prompt conversations as a plain iterator."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import Any

from ._errors import CLIConnectionError
from ._session import Ended, Session
from ._transport import Transport
from .prewarm import take_warm
from .types import ClaudeAgentOptions, Message, ResultMessage


class _InputDone:
    """Marker: the prompt iterable is exhausted."""


class _InputFailed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def query(
    prompt: str | Iterable[dict[str, Any]],
    options: ClaudeAgentOptions | None = None,
    *,
    transport: Transport | None = None,
) -> Iterator[Message]:
    """Ask Claude Code and iterate over everything it says.

    ``prompt`` is a string, or an iterable of user-message dicts
    (``{"type": "user", "message": {"role": "user", "content": "..."}}``).
    Each prompt of an iterable is sent once the previous one has its
    :class:`ResultMessage`, so every prompt gets its own turn and result.

    The iterator yields every message through the last ``ResultMessage``,
    then stops the CLI. Closing it early (``break`` out of the ``for`` loop,
    ``.close()``, or dropping the last reference) stops the CLI too. Nothing
    starts until the first ``next()``.

    Raises (from the iterator): :class:`CLINotFoundError`,
    :class:`CLIConnectionError`, :class:`ProcessError` (with the stderr tail)
    when the CLI dies, :class:`CLIJSONDecodeError` for a corrupt line.
    """
    if isinstance(prompt, (bytes, bytearray)):
        raise TypeError("prompt must be a str or an iterable of message dicts, not bytes")
    if not isinstance(prompt, str):
        try:
            prompt = iter(prompt)
        except TypeError:
            raise TypeError(
                f"prompt must be a str or an iterable of message dicts, not {type(prompt).__name__}"
            ) from None
    if options is not None and not isinstance(options, ClaudeAgentOptions):
        raise TypeError(f"options must be ClaudeAgentOptions, not {type(options).__name__}")
    return _run(prompt, options or ClaudeAgentOptions(), transport)


def _run(
    prompt: str | Iterator[dict[str, Any]], options: ClaudeAgentOptions, transport: Transport | None
) -> Iterator[Message]:
    warm = take_warm(options) if transport is None else None
    session = warm or Session(options, transport)
    turn = threading.Condition()
    counts = {"sent": 0, "results": 0}
    stop = threading.Event()
    feeder: threading.Thread | None = None
    try:
        if warm is None:
            session.start()
        if isinstance(prompt, str):
            session.send_user(prompt, session_id="")
            counts["sent"] = 1
            session.post(_InputDone())
        else:
            feeder = threading.Thread(
                target=_feed, args=(session, prompt, turn, counts, stop), name="claude-sdkurl-prompt", daemon=True
            )
            feeder.start()
        input_done = False
        while True:
            item = session.next_message()
            if isinstance(item, Ended):
                if item.error is not None:
                    raise item.error
                if not input_done or counts["results"] < counts["sent"]:
                    raise CLIConnectionError(
                        f"Claude Code ended the session before the last turn finished (exit code {item.exit_code})"
                    )
                return
            if isinstance(item, _InputFailed):
                raise item.error
            if isinstance(item, _InputDone):
                input_done = True
            else:
                yield item
                if isinstance(item, ResultMessage):
                    with turn:
                        counts["results"] += 1
                        turn.notify_all()
            if input_done and counts["results"] >= counts["sent"]:
                return
    except (KeyboardInterrupt, GeneratorExit):
        # Ctrl-C, or the caller left the loop mid-turn: stop the turn politely
        # (bounded), then (in finally) stop the CLI.
        if session.ended is None and counts["results"] < counts["sent"]:
            session.interrupt_after_ctrl_c(drain=False, timeout=1.0)
        raise
    finally:
        stop.set()
        with turn:
            turn.notify_all()
        session.close()
        if feeder is not None:
            feeder.join(1.0)


def _feed(
    session: Session,
    prompt: Iterator[dict[str, Any]],
    turn: threading.Condition,
    counts: dict[str, int],
    stop: threading.Event,
) -> None:
    try:
        for message in prompt:
            with turn:
                turn.wait_for(lambda: stop.is_set() or counts["results"] >= counts["sent"])
            if stop.is_set():
                return
            session.send_user_dict(message)
            with turn:
                counts["sent"] += 1
        session.post(_InputDone())
    except BaseException as e:  # the consumer re-raises it
        if not stop.is_set():
            session.post(_InputFailed(e))
