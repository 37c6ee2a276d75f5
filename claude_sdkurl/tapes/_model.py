"""Model tapes: the Messages API exchanges of a live run, recorded by a proxy on
``ANTHROPIC_BASE_URL`` and served back to the *real* CLI, so the CLI, its tools and the
program's callbacks run for real, with no network.

``model_tape(path, upstream=url)`` records (each request forwarded to ``upstream`` and its
answer kept, streamed answers byte for byte); ``model_tape(path)`` replays. A replayed
request is matched with a recorded one on a normalised form: ``metadata`` is dropped, and in
every string uuids, tool-use and message ids, dates, times and temporary or home paths are
replaced by placeholders, and so are long hexadecimal ids (a subagent's ``agentId``) and a
background task's ``<duration_ms>``: the CLI puts the date, its folder, fresh ids and timings
in its requests.
A request that matches none exactly is matched loosely (:func:`loose_request`): a background
task's notice lands a turn earlier or later from run to run, with the turn it wakes, so the
history is compared without them.
The answer served has the recording's temporary folders (an eval's workspace, say) written as
this run's (:func:`path_map`, :func:`as_ours`), so a path the model names, as a Write's
``file_path``, points into this run's folder, not the recording's; a temporary path is one under
``/tmp``, ``/var/folders``, ``/private/var`` or this machine's temporary folder (``TMPDIR``).
A request that matches neither way is answered at once with an API error (HTTP 400, which the CLI
does not retry) naming the first field that differs from the nearest recorded request, and
the context raises :class:`ModelTapeMiss` on leaving.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import tempfile
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .._files import replace_whole
from ._format import TapeError, now_iso
from ._scrub import Scrubber
from ._wire import first_difference

FORMAT = "claude_sdkurl.model/1"
# this machine's temporary folder too, where it is elsewhere (TMPDIR): an eval's workspaces are made there
_here = "" if re.match(r"/(?:tmp|var/folders|private/var)(?:/|$)", tempfile.gettempdir()) or len(tempfile.gettempdir()) < 2 else \
    "|" + re.escape(tempfile.gettempdir().rstrip("/")) + r"/[^\s\"'`]*"
_KEPT_HEADERS = ("content-type", "request-id", "retry-after", "anthropic-ratelimit-unified-")
_VOLATILE = [
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"\b(?:toolu|srvtoolu|msg|req)_[A-Za-z0-9_]+"), "<id>"),
    (re.compile(r"\b[0-9a-f]{12,}\b"), "<hex>"),  # a subagent's id, hashes
    (re.compile(r"(?<=<duration_ms>)\d+"), "<ms>"),  # how long a background task took
    (re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+Z?)?"), "<date>"),
    (re.compile(r"/(?:tmp|var/folders|private/var)/[^\s\"'`]*" + _here), "<tmp>"),
]


_TEMPORARY = _VOLATILE[-1][0]
_SEGMENT = re.compile(r"[\w.-]*")  # the rest of a path segment (a folder's name)

ATTEMPT_HEADER = "x-claude-sdkurl-attempt"
"""A header naming which run of a program a request belongs to (an eval's attempt): recorded with
its exchange, and on replay that run's own exchanges are served first. The CLI sends it when
``ANTHROPIC_CUSTOM_HEADERS`` holds it (see :func:`attempt_env`)."""


def attempt_env(tag: str, env: dict[str, str] | None = None) -> dict[str, str]:
    """The ``ANTHROPIC_CUSTOM_HEADERS`` of ``env`` (if any) with the header naming run ``tag``
    (any text: sent as a hash of it)."""
    import hashlib

    from ..testing.faults import with_header

    return with_header(f"{ATTEMPT_HEADER}: {hashlib.sha256(tag.encode()).hexdigest()[:20]}", env)


def path_map(recorded: Any, asked: Any) -> list[tuple[str, str]]:
    """How the recording's temporary paths read in this run, from a recorded request and the
    request it was matched with: their temporary paths stand in the same places (the match
    replaced them by one placeholder), so each pair, less the end they share, maps a folder of
    the recording to this run's (``/tmp/claude-sdkurl-eval-abc`` to ``-xyz``, its files with it).
    Paths are read in each string of the two bodies, as the CLI wrote them (a path that ends a
    line of the system prompt ends there); the folder mapped runs to the end of its name, less
    a sentence's full stop. Longest first; empty where the two do not pair up."""
    theirs = [m for text in _texts(recorded) for m in _TEMPORARY.findall(text)]
    ours = [m for text in _texts(asked) for m in _TEMPORARY.findall(text)]
    if len(theirs) != len(ours):
        return []
    found: dict[str, str] = {}
    for a, b in zip(theirs, ours):
        shared = 0  # how long an end the two paths share
        while shared < min(len(a), len(b)) and a[-1 - shared] == b[-1 - shared]:
            shared += 1
        if shared == len(a) == len(b):
            continue  # the same path
        # the differing beginning, to the end of its folder's name: /tmp/eval-abc, not /tmp/eval-ab
        cut = len(a) - shared
        end = _SEGMENT.match(a, cut).end()  # type: ignore[union-attr]  # (matches, if only nothing)
        while end > cut and a[end - 1] == ".":
            end -= 1
        head_a, head_b = a[:end], b[: end + len(b) - len(a)]
        if head_a and head_a != head_b:
            found.setdefault(head_a, head_b)
    return sorted(found.items(), key=lambda item: -len(item[0]))


def _texts(body: Any) -> Iterator[str]:
    """Every string of a request body, keys in sorted order."""
    if isinstance(body, str):
        yield body
    elif isinstance(body, dict):
        for key in sorted(body, key=str):
            yield from _texts(body[key])
    elif isinstance(body, list):
        for value in body:
            yield from _texts(value)


_DELTAS = {"text_delta": "text", "input_json_delta": "partial_json", "thinking_delta": "thinking"}


def as_ours(served: str, pairs: list[tuple[str, str]]) -> str:
    """A recorded answer with each of the recording's folders in ``pairs`` written as this
    run's (one pass: a folder written as ours is not mapped again). A streamed answer's block
    (its text, a tool call's input, thinking) is mapped whole, its deltas put together: the API
    streams a tool call's input in pieces, and a path cut between two pieces is still mapped;
    the pieces keep their lengths, the last taking the difference."""
    if not pairs:
        return served
    table = dict(pairs)
    pattern = re.compile("|".join(re.escape(theirs) for theirs, _ in pairs))  # (longest first: pairs are)

    def mapped(text: str) -> str:
        return pattern.sub(lambda m: table[m.group(0)], text)

    if "content_block_delta" not in served:
        return mapped(served)
    events = served.split("\n\n")
    out = [mapped(event) for event in events]  # a path whole in one event
    blocks: dict[tuple[Any, str], list[tuple[int, list[str], int, dict[str, Any]]]] = {}
    for at, event in enumerate(events):
        lines = event.split("\n")
        row = next((n for n, line in enumerate(lines) if line.startswith("data:")), None)
        if row is None or "content_block_delta" not in lines[row]:
            continue
        try:
            data = json.loads(lines[row][5:])
        except ValueError:
            continue
        delta = data.get("delta") if isinstance(data, dict) else None
        field = _DELTAS.get(str(delta.get("type"))) if isinstance(delta, dict) else None
        if field is not None and isinstance(delta, dict) and isinstance(delta.get(field), str):
            blocks.setdefault((data.get("index"), field), []).append((at, lines, row, data))
    for (_, field), parts in blocks.items():
        whole = "".join(data["delta"][field] for _, _, _, data in parts)
        ours = mapped(whole)
        if ours == whole:
            continue
        start = 0
        for n, (at, lines, row, data) in enumerate(parts):
            size = len(data["delta"][field]) if n < len(parts) - 1 else len(ours)
            data["delta"][field] = ours[start : start + size]
            start += size
            out[at] = "\n".join([*lines[:row], "data: " + json.dumps(data), *lines[row + 1 :]])
    return "\n\n".join(out)


class ModelTapeMiss(AssertionError):
    """A replayed run made a Messages API request the tape does not have."""


def normalised_request(body: Any, home: str | None = None) -> Any:
    """A request body as it is matched (see the module doc)."""
    home = home if home is not None else str(Path.home())

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items() if k != "metadata"}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, str):
            for pattern, placeholder in _VOLATILE:
                value = pattern.sub(placeholder, value)
            return value.replace(home, "~") if home and len(home) > 1 else value
        return value

    return walk(body)


def _key(method: str, path: str, body: Any) -> tuple[str, str, str]:
    """What a replayed request is matched on: its method, path and normalised body."""
    return method, path, json.dumps(normalised_request(body), sort_keys=True)


_NOTICE = "[SYSTEM NOTIFICATION - NOT USER INPUT]"


def _is_notice(block: Any) -> bool:
    """A background task's notice, as the CLI (2.1.330) puts it in a user message: a text
    block, or the message's whole content as a string (both are seen, in one run)."""
    text = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else block
    return isinstance(text, str) and text.startswith("<system-reminder>") and _NOTICE in text and "<task-notification>" in text


def _only_notices(message: Any) -> bool:
    content = message.get("content") if isinstance(message, dict) else None
    if message.get("role") != "user":
        return False
    return _is_notice(content) or (isinstance(content, list) and bool(content) and all(map(_is_notice, content)))


def _tool_results_only(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and bool(content) and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def loose_request(body: Any) -> Any:
    """A request as matched when its exact form is not on the tape: a background task's notice
    reaches the conversation when the task ends, a turn earlier or later from run to run, and
    wakes a turn of its own. So the history is taken without notices and the turns they woke
    (their answers, tool calls and results), and a request the notice itself woke is matched
    by that notice alone. Requests of one loose form are served in the order recorded."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list) or not messages:
        return body
    rest = {k: v for k, v in body.items() if k != "messages"}
    if _only_notices(messages[-1]):
        content = messages[-1]["content"]  # (its two forms alike)
        return {**rest, "woken_by": [{"type": "text", "text": content}] if isinstance(content, str) else content}
    kept: list[Any] = []
    woken = False  # inside a turn a notice woke
    for message in messages[:-1]:
        if not isinstance(message, dict):
            kept.append(message)
            continue
        if _only_notices(message):
            woken = True
            continue
        if woken and (message.get("role") == "assistant" or _tool_results_only(message)):
            continue
        woken = False
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, list) and any(map(_is_notice, content)):
            message = {**message, "content": [b for b in content if not _is_notice(b)]}
        kept.append(message)
    return {**rest, "messages": [*kept, messages[-1]]}


class _Server(ThreadingHTTPServer):
    daemon_threads = True


class ModelTape:
    """The proxy: ``.url`` is what ``ANTHROPIC_BASE_URL`` should be (see :meth:`env`)."""

    def __init__(self, path: str | Path, upstream: str | None = None, scrub: Any = ()) -> None:
        self.path = Path(path)
        self.upstream = upstream
        self.recording = upstream is not None
        self.scrubber = Scrubber(scrub)
        self.exchanges: list[dict[str, Any]] = []
        self.used: set[int] = set()
        self.misses: list[str] = []
        self.lock = threading.Lock()
        # replaying: each recorded request's normalised form, once (a run of hundreds of
        # requests normalised every candidate on every request: quadratic), by what it matches on
        self._unused: dict[tuple[str, ...], list[int]] = {}
        self._loosely: dict[tuple[str, ...], list[int]] = {}  # the same by loose_request (a fallback)
        if not self.recording:
            self.exchanges = _load(self.path)
            for i, exchange in enumerate(self.exchanges):
                request = exchange["request"]
                exact, loose = _key(request["method"], request["path"], request["body"]), _key(request["method"], request["path"], loose_request(request["body"]))
                self._unused.setdefault(exact, []).append(i)
                self._loosely.setdefault(loose, []).append(i)
                if exchange.get("attempt"):  # the same, within the run that asked (see ATTEMPT_HEADER)
                    self._unused.setdefault((str(exchange["attempt"]), *exact), []).append(i)
                    self._loosely.setdefault((str(exchange["attempt"]), *loose), []).append(i)
        tape = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:  # noqa: N802 - the CLI's reachability probe
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:  # noqa: N802
                self._serve(None)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                self._serve(body, raw)

            def _serve(self, body: Any, raw: bytes = b"") -> None:
                attempt = self.headers.get(ATTEMPT_HEADER)
                if tape.recording:
                    status, headers, data = tape._forward(self.command, self.path, dict(self.headers.items()), raw)
                    tape._keep(self.command, self.path, body, status, headers, data, attempt)
                else:
                    status, headers, data = tape._find(self.command, self.path, body, attempt)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="claude-sdkurl-model-tape", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def env(self) -> dict[str, str]:
        """What to add to ``ClaudeAgentOptions.env``: the CLI talks to this proxy."""
        return {"ANTHROPIC_BASE_URL": self.url}

    # -- recording

    def _forward(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, str], bytes]:
        assert self.upstream is not None
        target = urllib.parse.urlsplit(self.upstream)
        connection_class = http.client.HTTPSConnection if target.scheme == "https" else http.client.HTTPConnection
        connection = connection_class(target.netloc, timeout=600)
        try:
            sent = {k: v for k, v in headers.items() if k.lower() not in ("host", "content-length", "accept-encoding")}
            connection.request(method, target.path.rstrip("/") + path, body=raw or None, headers=sent)
            answer = connection.getresponse()
            data = answer.read()  # a streamed answer whole: served back the same bytes
            kept = {k: v for k, v in answer.getheaders() if k.lower().startswith(_KEPT_HEADERS)}
            return answer.status, kept, data
        finally:
            connection.close()

    def _keep(self, method: str, path: str, body: Any, status: int, headers: dict[str, str], data: bytes,
              attempt: str | None = None) -> None:  # fmt: skip
        exchange: dict[str, Any] = {
            "request": {"method": method, "path": path, "body": self.scrubber.frame(body)},
            "response": {"status": status, "headers": headers, "body": self.scrubber.text(data.decode("utf-8", "replace"))},
        }
        if attempt:
            exchange["attempt"] = attempt
        with self.lock:
            self.exchanges.append(exchange)

    # -- replaying

    def _find(self, method: str, path: str, body: Any, attempt: str | None = None) -> tuple[int, dict[str, str], bytes]:
        framed = self.scrubber.frame(body)
        key = _key(method, path, framed)
        loose = _key(method, path, loose_request(framed))
        with self.lock:
            # the first recorded of its kind not served yet, the asking run's own first; else of
            # its loose kind, the same way
            i = None
            for index, wanted in ((self._unused, key), (self._loosely, loose)):
                for tagged in ([(attempt, *wanted)] if attempt else []) + [wanted]:
                    i = self._first_unused(index.get(tagged))
                    if i is not None:
                        break
                if i is not None:
                    break
            if i is not None:
                self.used.add(i)
                response = self.exchanges[i]["response"]
                # the recording's temporary folders (its workspace) as this run's: a path the
                # model names in its answer (a Write's file_path) lands in this run's folder
                served = as_ours(response["body"], path_map(self.exchanges[i]["request"]["body"], framed))
                return int(response["status"]), dict(response["headers"]), served.encode()
            candidates = [(i, e) for i, e in enumerate(self.exchanges) if i not in self.used
                          and e["request"]["method"] == method and e["request"]["path"] == path]  # fmt: skip
            why = self._why(method, path, normalised_request(framed), candidates, attempt)
            self.misses.append(why)
        error = {"type": "error", "error": {"type": "invalid_request_error", "message": f"model tape miss: {why}"}}
        return 400, {"Content-Type": "application/json"}, json.dumps(error).encode()

    def _first_unused(self, indices: list[int] | None) -> int | None:
        """The first of ``indices`` not served yet (served ones are dropped from the list on
        the way: an exchange is in both indexes, and is served once)."""
        while indices:
            if indices[0] not in self.used:
                return indices.pop(0)
            indices.pop(0)
        return None

    def _why(self, method: str, path: str, wanted: Any, candidates: list[tuple[int, dict[str, Any]]], attempt: str | None = None) -> str:
        if not candidates:
            return f"{method} {path}: the tape has no request left for it"
        # The request this one stands for: the asking run's own, asking the same first prompt,
        # then the one sharing the longest beginning (a request of another run that asked
        # something else can differ deeper, and naming that difference misleads).
        mine, text = _first_prompt(wanted), json.dumps(wanted, sort_keys=True)

        def nearness(exchange: dict[str, Any]) -> tuple[bool, bool, int]:
            theirs = normalised_request(exchange["request"]["body"])
            shared = os.path.commonprefix([json.dumps(theirs, sort_keys=True), text])
            return bool(attempt) and exchange.get("attempt") == attempt, _first_prompt(theirs) == mine, len(shared)

        nearest = max((e for _, e in candidates), key=nearness)
        best = first_difference(normalised_request(nearest["request"]["body"]), wanted)
        if best is None:  # (equal once normalised: served elsewhere already)
            return f"{method} {path}: its recorded twin was served already"
        where, theirs, ours = best
        theirs, ours = _around_difference(str(theirs), str(ours))
        return f"{method} {path}: {where} is {ours!r}, the tape has {theirs!r}"

    # -- end

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)
        if self.recording:
            _save(self.path, self.exchanges)


def _first_prompt(body: Any) -> Any:
    """The first message's content of a Messages API request (``None`` for another body)."""
    messages = body.get("messages") if isinstance(body, dict) else None
    first = messages[0] if isinstance(messages, list) and messages else None
    return first.get("content") if isinstance(first, dict) else None


def _around_difference(a: str, b: str, width: int = 100) -> tuple[str, str]:
    """Two long strings cut to where they first differ (short ones whole)."""
    if len(a) <= width and len(b) <= width:
        return a, b
    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    start = max(0, at - width // 4)

    def cut(s: str) -> str:
        return ("…" if start else "") + s[start : start + width] + ("…" if len(s) > start + width else "")

    return cut(a), cut(b)


def _load(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise TapeError(f"cannot read the model tape {path}: {e}") from e
    if not lines or json.loads(lines[0]).get("tape") != FORMAT:
        raise TapeError(f"{path} is not a model tape ({FORMAT})")
    return [json.loads(line) for line in lines[1:] if line.strip()]


def _save(path: Path, exchanges: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"tape": FORMAT, "recorded_at": now_iso(), "exchanges": len(exchanges)}), *map(json.dumps, exchanges)]
    replace_whole(path, "\n".join(lines) + "\n")


@contextlib.contextmanager
def model_tape(path: str | Path, upstream: str | None = None, scrub: Any = ()) -> Iterator[ModelTape]:
    """Record (with ``upstream``, the real API's or a mock's address) or replay the Messages
    API exchanges at ``path``; point the CLI at ``tape.url`` (``options.env`` gets
    ``tape.env()``). On leaving a replay that missed, :class:`ModelTapeMiss` names the first
    miss."""
    tape = ModelTape(path, upstream, scrub)
    try:
        yield tape
    finally:
        tape.close()
    if tape.misses:
        raise ModelTapeMiss(f"{len(tape.misses)} request(s) not on the tape; the first: {tape.misses[0]}")
