"""OpenTelemetry, when the program uses it (ground floor; ``opentelemetry-api`` is optional).

Tracing is on when ``opentelemetry`` has been imported by the program and a tracer provider
other than the API's default placeholder is set: nothing is imported otherwise, and every
function here is then a cheap no-op. Two rules hold for whatever the user's tracer, span
processor or exporter does:

* it never breaks a run: every call into OpenTelemetry is guarded; the first failure is
  logged (once per kind), the span is dropped;
* it never slows a run: a span is *ended* (which runs the processors, and with a
  ``SimpleSpanProcessor`` the exporter) on one helper thread, with the end time taken
  where it happened. A hung exporter holds that thread only; spans ended behind it are
  dropped once 10,000 wait (logged once). The helper thread exits after 1 s with nothing
  to do. A span is *started* (which runs each processor's ``on_start``) on another helper
  thread, the caller waiting at most :data:`START_BOUND` seconds: an ``on_start`` that
  blocks costs the run that once, then spans are not started (logged once) until it
  returns; the span it was starting is ended at once then.

Content (prompts, answers, tool inputs and outputs) is recorded only when asked for:
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` in the environment (the GenAI
convention's switch), or :func:`capture_content` set by the program.
"""

from __future__ import annotations

import collections
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .log import get_logger

logger = get_logger("claude_sdkurl.trace")

SCOPE = "claude_sdkurl"
_MAX_WAITING = 10_000
_warned: set[str] = set()
_content: bool | None = None  # set by capture_content(); None: read the environment


def _warn_once(kind: str, error: BaseException) -> None:
    if kind not in _warned:
        _warned.add(kind)
        logger.warning("OpenTelemetry %s failed (tracing goes on without it; logged once): %r", kind, error)


def capture_content(on: bool | None) -> None:
    """Record prompt and output text in spans (``None``: as the environment says)."""
    global _content
    _content = on


def content_on() -> bool:
    if _content is not None:
        return _content
    return os.environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "").lower() in ("1", "true", "yes")


def tracer() -> Any | None:
    """The tracer to use, or ``None`` when tracing is off (see the module doc)."""
    if "opentelemetry.trace" not in sys.modules:  # the program never touched OpenTelemetry
        return None
    try:
        from opentelemetry import trace

        provider = trace.get_tracer_provider()
        if type(provider).__name__ in ("ProxyTracerProvider", "NoOpTracerProvider"):
            return None
        from .._version import __version__

        return provider.get_tracer(SCOPE, __version__)
    except Exception as error:
        _warn_once("get_tracer", error)
        return None


def instruments() -> tuple[Any, Any] | None:
    """``(cost counter, token histogram)`` when the program set a meter provider, else ``None``:
    ``claude_sdkurl.cost`` (USD, per model) and ``gen_ai.client.token.usage`` (the GenAI
    convention's histogram, by ``gen_ai.token.type``)."""
    if "opentelemetry.metrics" not in sys.modules:
        return None
    try:
        from opentelemetry import metrics

        provider = metrics.get_meter_provider()
        if type(provider).__name__ in ("_ProxyMeterProvider", "NoOpMeterProvider"):
            return None
        from .._version import __version__

        meter = provider.get_meter(SCOPE, __version__)
        cost = meter.create_counter("claude_sdkurl.cost", unit="USD", description="What runs cost, as the CLI reports it")
        tokens = meter.create_histogram("gen_ai.client.token.usage", unit="{token}", description="Tokens per turn and model")
        return cost, tokens
    except Exception as error:
        _warn_once("get_meter", error)
        return None


def start(tracer_: Any, name: str, attributes: dict[str, Any], parent: Any = None) -> Any | None:
    """Start a span under ``parent`` (a span, a context, or ``None``: this thread's current),
    bounded (see the module doc)."""
    if tracer_ is None:
        return None
    try:
        from opentelemetry import context as otel_context
        from opentelemetry import trace

        if parent is not None and hasattr(parent, "get_span_context"):
            context = trace.set_span_in_context(parent)
        else:
            context = parent if parent is not None else otel_context.get_current()  # the caller's, not the helper's
        return _starter.start(lambda: tracer_.start_span(name, context=context, attributes=_clean(attributes)))
    except Exception as error:
        _warn_once("start_span", error)
        return None


START_BOUND = 0.5  # seconds a run waits for a span processor's on_start


class _Helper:
    """A queue served by one helper thread, started when work is handed over; it exits after
    1 s with nothing to do. Subclasses say what serving one piece of work is."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Condition()
        self._waiting: collections.deque[Any] = collections.deque()
        self._thread: threading.Thread | None = None
        self._busy = False  # a piece of work taken off the queue is being served

    def _hand(self, work: Any) -> None:
        """Queue ``work`` (the caller holds ``self._lock``)."""
        self._waiting.append(work)
        self._lock.notify()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._waiting:
                    self._lock.wait(1.0)
                if not self._waiting:
                    self._thread = None
                    return
                work = self._waiting.popleft()
                self._busy = True
            try:
                self._serve(work)
            finally:
                with self._lock:
                    self._busy = False

    def _serve(self, work: Any) -> None:
        raise NotImplementedError


class _Starter(_Helper):
    """Starts spans on a helper thread, each waited for at most :data:`START_BOUND`."""

    def __init__(self) -> None:
        super().__init__("claude-sdkurl-trace-start")
        self._stuck = False  # an on_start is past its bound: start nothing until it returns

    def start(self, make: Any) -> Any | None:
        done = threading.Event()
        box: list[Any] = []  # [span] or [None, error], or a 2nd item "late" once given up on
        with self._lock:
            if self._stuck:
                return None
            self._hand((make, box, done))
        if not done.wait(START_BOUND):
            with self._lock:
                if not done.is_set():  # (race: it may have finished meanwhile)
                    self._stuck = True
                    box.append("late")
            if not done.is_set():
                _warn_once("span processor on_start (blocking: spans are not started while it blocks)", TimeoutError())
                return None
        if len(box) == 2 and box[1] != "late":
            raise box[1]
        return box[0] if box else None

    def _serve(self, work: Any) -> None:
        make, box, done = work
        try:
            made: list[Any] = [make()]
        except Exception as error:
            made = [None, error]
        with self._lock:
            late = bool(box) and box[-1] == "late"
            if late:
                self._stuck = False
            else:
                box[:0] = made
            done.set()
        if late and made[0] is not None:
            end(made[0], "started after its run gave up waiting for the span processor")


_starter = _Starter()


def _clean(attributes: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in attributes.items() if v is not None}


def set_attributes(span: Any, attributes: dict[str, Any]) -> None:
    if span is None:
        return
    try:
        span.set_attributes(_clean(attributes))
    except Exception as error:
        _warn_once("set_attributes", error)


def end(span: Any, error: BaseException | str | None = None, attributes: dict[str, Any] | None = None) -> None:
    """End ``span`` now (the end time is taken here; the processors run on the helper thread)."""
    if span is None:
        return
    at = time.time_ns()
    try:
        if attributes:
            span.set_attributes(_clean(attributes))
        if error is not None:
            from opentelemetry.trace import Status, StatusCode

            if isinstance(error, BaseException):
                span.record_exception(error)
            span.set_status(Status(StatusCode.ERROR, str(error)[:500]))
    except Exception as failure:
        _warn_once("set_status", failure)
    _ender.put(span, at)


@contextmanager
def span(tracer_: Any, name: str, attributes: dict[str, Any], parent: Any = None) -> Iterator[Any]:
    """A span around a block, current in this thread while it runs (so spans the block makes,
    the user's own included, nest under it). Yields the span, or ``None`` when off."""
    current = start(tracer_, name, attributes, parent)
    if current is None:
        yield None
        return
    with attached(current):
        try:
            yield current
        except BaseException as error:
            end(current, error)
            raise
    end(current)


@contextmanager
def attached(parent: Any) -> Iterator[None]:
    """Make ``parent`` (a span) this thread's current span inside the block."""
    if parent is None:
        yield
        return
    token = None
    try:
        from opentelemetry import context, trace

        token = context.attach(trace.set_span_in_context(parent))
    except Exception as error:
        _warn_once("attach", error)
    try:
        yield
    finally:
        if token is not None:
            try:
                from opentelemetry import context

                context.detach(token)
            except Exception as error:
                _warn_once("detach", error)


class _Ender(_Helper):
    """Ends spans on a helper thread (see the module doc)."""

    def __init__(self) -> None:
        super().__init__("claude-sdkurl-trace")

    def put(self, span_: Any, at: int) -> None:
        with self._lock:
            if len(self._waiting) >= _MAX_WAITING:
                _warn_once("exporter (spans dropped: the span processor is not keeping up)", TimeoutError())
                return
            self._hand((span_, at))

    def _serve(self, work: Any) -> None:
        span_, at = work
        try:
            span_.end(end_time=at)
        except Exception as error:
            _warn_once("span end (processor or exporter)", error)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every span handed over has been ended (tests, and before exit)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if not self._waiting and not self._busy:
                    return True
            time.sleep(0.01)
        return False


_ender = _Ender()


def flush(timeout: float = 5.0) -> bool:
    """Wait at most ``timeout`` seconds until every span of finished runs has been ended and
    handed to the span processors; ``True`` when they all were. Call it before a short program
    exits, or in tests, so the exporter sees every span."""
    return _ender.flush(timeout)
