"""``query()``: one-shot or multi-prompt conversations as a plain iterator."""

from __future__ import annotations

import threading
from collections.abc import Generator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ._engine.lifecycle import Messages, made_at
from ._engine.cancel import CancelledError
from ._engine.deadline import Deadline
from ._errors import CLIConnectionError, ReceiveTimeoutError
from ._engine.start import start_cold, take_ready
from ._engine.transport import Transport
from .tracing import RunTrace
from .types import (
    ClaudeAgentOptions,
    Message,
    ResultMessage,
    SystemMessage,
    TaskNotificationMessage,
    warn_if_can_use_tool_shadowed,
)

if TYPE_CHECKING:
    from ._engine.session import Session
    from .ledger import CostLedger

# The session's own modules (``_engine.session`` and what it loads: the protocol, the control
# handlers, the workers) are imported by the first query after its CLI's process has
# started, so that they load while the CLI boots (``_engine.start``; bench/bench_program.py).

EXIT_GRACE = 5.0  # seconds a CLI may stay, silent, after its input is closed and every turn is done


class _InputDone:
    """Marker: the prompt iterable is exhausted."""


class _InputClosed:
    """Marker: the CLI's input is now closed (the consumer may start the exit grace)."""


class _InputFailed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def query(
    prompt: str | Iterable[dict[str, Any]],
    options: ClaudeAgentOptions | None = None,
    *,
    transport: Transport | None = None,
    timeout: float | None = None,
) -> Iterator[Message]:
    """Ask Claude Code and iterate over everything it says.

    ``prompt`` is a string, or an iterable of user-message dicts
    (``{"type": "user", "message": {"role": "user", "content": "..."}}``).
    Each prompt of an iterable is sent once the previous one has its
    :class:`ResultMessage`, so every prompt gets its own turn and result.

    As the official SDK, the iterator runs until the CLI is done, not only
    through the last prompt's result (background subagents and the turns they
    wake included), then the CLI exits. Its input is closed once that run is
    over when callbacks may still be asked, otherwise right after the last
    prompt, as there: a turn that starts background work then gives its result
    after that work and the turn it wakes. Closing the iterator early
    (``break``, ``.close()``, dropping it) interrupts a turn under way (at most
    1 s: an ``interrupt`` request while the input is open, SIGINT once it is
    closed, so the transcript keeps the partial answer either way) and stops
    the CLI; so does a cancel of the
    ``claude_sdkurl.threads`` task iterating it; dropping it mid-way also warns
    (``ResourceWarning``, naming where it was made), as an unclosed file does: close it, or
    write ``with query(...) as messages:``. Nothing starts until the first
    ``next()``. ``async for`` over it raises :class:`NotAsyncError` (ours), saying what to
    write. ``timeout`` (ours) bounds the whole iteration in seconds:
    :class:`ReceiveTimeoutError`; the turn is interrupted and the CLI stopped
    at once, without the exit grace a ``break`` gives it.

    Raises (from the iterator): :class:`CLINotFoundError`,
    :class:`CLIConnectionError`, :class:`ResultError` after an error result
    (yielded first), :class:`ProcessError` (with the stderr tail) when the CLI
    dies, :class:`CLIJSONDecodeError` for a corrupt line.
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
    if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ValueError("timeout must be None or a positive number of seconds")
    options = options or ClaudeAgentOptions()
    warn_if_can_use_tool_shadowed(options)
    return Messages(_run(prompt, options, transport, timeout), "query(...)", made_at())


def counted(prompt: str, options: ClaudeAgentOptions | None, ledger: CostLedger) -> Iterator[Message]:
    """:func:`query` whose run is also counted in ``ledger`` (ours: what the run itself spent,
    for areas that must not take a resumed session's carried-over totals for their own)."""
    options = options or ClaudeAgentOptions()
    warn_if_can_use_tool_shadowed(options)
    return _run(prompt, options, None, None, [ledger])


def _run(
    prompt: str | Iterator[dict[str, Any]], options: ClaudeAgentOptions, transport: Transport | None, timeout: float | None,
    ledgers: list[CostLedger] | None = None,
) -> Generator[Message, None, None]:  # fmt: skip
    deadline = Deadline(timeout)
    session = take_ready(options) if transport is None else None
    trace = RunTrace("query", options.model)
    trace.turn_started(prompt if isinstance(prompt, str) else None)
    turn = threading.Condition()
    counts = {"sent": 0, "results": 0}
    stop = threading.Event()
    feeder: threading.Thread | None = None
    stuck = False
    ended: BaseException | None = None
    try:
        if session is None:
            session = start_cold(options, transport, trace, ledgers)
        else:
            session.trace = trace
            if ledgers:
                session.ledgers = [*session.ledgers, *ledgers]
        import queue

        from ._engine.session import Ended  # (both loaded with the session by now)

        prompts: Iterator[Any] = iter([prompt]) if isinstance(prompt, str) else prompt
        feeder = threading.Thread(
            target=_feed, args=(session, prompts, turn, counts, stop), name="claude-sdkurl-prompt", daemon=True
        )
        feeder.start()
        input_done = False
        failed: BaseException | None = None
        woken = False  # a background task's notice came, and the turn it wakes has not begun
        while True:
            # Once every turn has its result and the CLI's input is closed, the CLI should
            # exit; one that neither exits nor writes gets the official 5 s, then is stopped
            # (in finally) and the iteration ends as if it had exited. Not while a turn a
            # background task's notice wakes is still to come: the CLI runs it after the result
            # (2.1.332 took over 5 s to begin it under two CPU burners), as the official SDK,
            # which reads until the CLI exits, shows.
            lingering = input_done and counts["results"] >= counts["sent"] and session.input_ended and not woken
            try:
                item = session.next_message(deadline.bound(EXIT_GRACE) if lingering else deadline.left(), cancellable=True)
            except queue.Empty:
                if lingering and not deadline.passed():
                    import logging

                    logging.getLogger("claude_sdkurl.query").warning(
                        "Claude Code did not exit within %g s after its last message; stopping it", EXIT_GRACE
                    )
                    stuck = True  # its grace is spent: stopped at once, not waited for again
                    return
                raise ReceiveTimeoutError(timeout or 0.0) from None
            if isinstance(item, Ended):
                if item.error is not None:
                    raise item.error
                if not input_done or counts["results"] < counts["sent"]:
                    raise CLIConnectionError(
                        f"Claude Code ended the session before the last turn finished (exit code {item.exit_code})"
                    )
                if failed is not None:
                    raise failed
                return
            if isinstance(item, _InputFailed):
                # The prompt iterable raised: the turns it already sent still run to their
                # results (as in the official SDK); its error comes after them, not lost.
                failed, input_done = item.error, True
                continue
            if isinstance(item, _InputDone):
                input_done = True
            elif isinstance(item, _InputClosed):
                pass  # only wakes the loop: a silent CLI may now be lingering
            else:
                if isinstance(item, TaskNotificationMessage):
                    woken = True
                elif woken and isinstance(item, SystemMessage) and item.subtype == "init":
                    woken = False  # the woken turn began: its result ends the run as any other
                yield item
                if isinstance(item, ResultMessage):
                    with turn:
                        counts["results"] += 1
                        turn.notify_all()
    except (KeyboardInterrupt, GeneratorExit, ReceiveTimeoutError, CancelledError) as leaving:
        # Ctrl-C, a timeout, the caller left the loop mid-turn or its task was cancelled
        # (claude_sdkurl.threads): stop the turn politely (bounded), then (in finally) stop the CLI.
        if session is not None and session.ended is None and counts["results"] < counts["sent"]:
            stuck = not session.interrupt_turn(drain=False, timeout=1.0)
            # After a timeout the caller's time is up: the CLI, which has written the
            # interruption to its transcript by now, is not given its exit grace (with a tool
            # running, 2.1.330 takes 1.4 s to exit by itself: measured).
            # A cancelled task (a stopped batch among them) is in the same hurry.
            stuck = stuck or isinstance(leaving, (ReceiveTimeoutError, CancelledError))
        ended = None if isinstance(leaving, GeneratorExit) else leaving
        raise
    except BaseException as error:
        ended = error
        raise
    finally:
        stop.set()
        with turn:
            turn.notify_all()
        if session is not None:
            session.close(abort=stuck)  # a CLI that did not answer the interrupt will not heed EOF either
        trace.close(ended)
        if feeder is not None:
            feeder.join(1.0)


def _feed(
    session: Session,
    prompts: Iterator[Any],
    turn: threading.Condition,
    counts: dict[str, int],
    stop: threading.Event,
) -> None:
    """Send each prompt once the previous one has its result, then end the input."""
    try:
        for message in prompts:
            with turn:
                turn.wait_for(lambda: stop.is_set() or counts["results"] >= counts["sent"])
            if stop.is_set():
                return
            if isinstance(message, str):
                session.send_user(message, session_id="")
            else:
                session.send_user_dict(message)
            with turn:
                counts["sent"] += 1
        session.post(_InputDone())
        # Nothing sent: no result will come to end the run, so close at once.
        session.end_input(stop, wait=counts["sent"] > 0)
        session.post(_InputClosed())
    except BaseException as e:  # the consumer re-raises it once the turns already sent are over
        if not stop.is_set():
            session.post(_InputFailed(e))
            session.end_input(stop, wait=counts["sent"] > 0)
            session.post(_InputClosed())
