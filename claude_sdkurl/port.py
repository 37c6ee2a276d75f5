"""Port a program written for ``claude_agent_sdk`` to synchronous ``claude_sdkurl``.

::

    python -m claude_sdkurl.port app.py tools/          # print a unified diff
    python -m claude_sdkurl.port -w app.py              # write the files
    python -m claude_sdkurl.port --check app.py         # exit 1 if anything is left to port

Needs ``libcst`` (``pip install 'claude-sdkurl[port]'``): the program is rewritten
on its concrete syntax tree, so comments and formatting stay as they were.

What is rewritten (each is the same behaviour with threads instead of a loop):

=========================================  ==========================================
``claude_agent_sdk[...]`` imports, names   ``claude_sdkurl[...]``
``async def`` / ``await x`` /              ``def`` / ``x`` / ``for`` / ``with``
``async for`` / ``async with``
``asyncio.run(main())``, ``anyio.run(main,  ``main()``, ``main(a)``, ``main()``
a)``, ``trio.run(main)``
``asyncio|anyio|trio.sleep(s)``            ``time.sleep(s)`` (``claude_sdkurl.threads.sleep(s)``,
                                           a cancel point, in a file that makes tasks)
``asyncio.TimeoutError``                   ``TimeoutError`` (our time-outs are one)
``async with asyncio.timeout(s):`` around  the loop alone, with ``timeout=s`` on
one ``async for`` over ``query(...)`` or   that call (a ``ReceiveTimeoutError``, a
``receive_messages/receive_response()``    ``TimeoutError``, when time is up)
``asyncio.Queue/Event/Lock/Semaphore()``   ``queue.Queue`` / ``threading.*``
``await asyncio.gather(f(a), *[g(x) for     ``claude_sdkurl.threads.gather(partial(f, a),
x in xs])``                                ``*[partial(g, x) for x in xs])``: at once, on threads
``asyncio.create_task(f(a))``,             ``claude_sdkurl.threads.create_task(partial(f, a))``
``ensure_future``; ``await task``          ``task.result()`` (``task.cancel()`` stays)
``asyncio.TaskGroup()``,                   ``claude_sdkurl.threads.TaskGroup()`` (its
``anyio.create_task_group()``,              ``create_task`` as above, ``start_soon`` as is)
``trio.open_nursery()``
``asyncio.wait_for(f(a), s)``              ``claude_sdkurl.threads.wait_for(partial(f, a), s)``
``asyncio.CancelledError``                 ``claude_sdkurl.threads.CancelledError``
``asyncio.current_task()``                 ``claude_sdkurl.threads.current_task()``
``asyncio.gather(*tasks)`` of tasks made    ``claude_sdkurl.threads.gather(*tasks)``
here
``coros = [f(x) for x in xs]``, ``c = f(x)``  ``[partial(f, x) for x in xs]``, ``partial(f, x)``:
of an ``async def`` of the file, awaited   deferred calls, run by ``c()`` (the ``await c``),
or gathered later                          ``gather``, ``create_task`` or ``asyncio.run``
``contextlib.asynccontextmanager``,        ``contextmanager``, ``ExitStack``,
``AsyncExitStack``, ``enter_async_context`` ``enter_context``
``__aenter__/__aexit__/__aiter__/__anext__`` ``__enter__/__exit__/__iter__/__next__``
``StopAsyncIteration``                     ``StopIteration``
=========================================  ==========================================

Async frameworks: what the framework itself calls and awaits stays ``async`` (a ``lifespan=``
function, websocket handlers, middleware and event handlers, a route that takes the
``Request``/``WebSocket`` itself, and whatever those hand to their own task groups), with its
loop code as it was; in there the SDK's blocking calls run on a worker thread
(``await asyncio.to_thread(client.query, p)``, ``async for m in
claude_sdkurl.threads.iterate(...)``, ``async with claude_sdkurl.threads.entered(client)``).
Other routes become plain functions, which FastAPI and Starlette run on their thread pool. An
``async def`` of the file passed, uncalled, to something that is not ours (it may await it) is
marked.

Threads are cancelled cooperatively (see :mod:`claude_sdkurl.threads`): a cancelled task stops
at its next sleep, task wait or message read.

What is not rewritten, because no rewrite is safe without reading the program: a task,
``wait_for`` or ``gather`` of a coroutine made before that line (it has already run in the
port), other ``asyncio``/``anyio``/``trio`` calls,
``claude_agent_sdk._internal``, and an ``asyncio.timeout`` around anything else.
Each such place keeps its code and gets a ``# claude_sdkurl.port:`` comment that
says what to do (the README's "Concurrency recipes" show the thread forms), and
the summary lists it. An ``await`` is always removed; one whose target is not an
SDK call, a function of the file or a rewritten primitive is listed too, since it
may be another library's coroutine that needs its synchronous client.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import difflib
import io
import os
import stat
import sys
import tempfile
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MARK = "# claude_sdkurl.port:"
_LOOPS = ("asyncio", "anyio", "trio")
_RECEIVERS = {"receive_messages", "receive_response", "query"}
_SDK_METHODS = _RECEIVERS | {
    "connect", "disconnect", "interrupt", "set_permission_mode", "set_model", "rewind_files",
    "reconnect_mcp_server", "toggle_mcp_server", "stop_task", "get_mcp_status", "get_context_usage",
    "get_server_info",
}  # fmt: skip
_TASK_MAKERS = {"create_task", "ensure_future"}
_GROUPS = {"asyncio.TaskGroup", "anyio.create_task_group", "trio.open_nursery"}
_PRIMITIVES = {"Queue": ("queue", "Queue"), "Event": ("threading", "Event"), "Lock": ("threading", "Lock"),
               "Semaphore": ("threading", "Semaphore"), "BoundedSemaphore": ("threading", "BoundedSemaphore")}  # fmt: skip
# Names whose synchronous twin is a rename: the SDK package, async context managers and
# iterators (their protocol methods too), and the stop of an async iteration.
_RENAMES = {
    "claude_agent_sdk": "claude_sdkurl",
    "asynccontextmanager": "contextmanager",
    "AsyncExitStack": "ExitStack",
    "enter_async_context": "enter_context",
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
    "__aiter__": "__iter__",
    "__anext__": "__next__",
    "StopAsyncIteration": "StopIteration",
}
_ADVICE = {
    "create_task": "a task of a coroutine made before this line: create the task from the call here "
    "(claude_sdkurl.threads.create_task(functools.partial(f, x)))",
    "gather": "gathered coroutines made before this line have already run one by one: build the calls here "
    "(claude_sdkurl.threads.gather(functools.partial(f, x), ...)) to run them at once",
    "wait_for": "a wait for a coroutine made before this line: pass the call here "
    "(claude_sdkurl.threads.wait_for(functools.partial(f, x), s)), or timeout= to query()/receive_*()",
    "timeout": "a time-out around more than one loop over query()/receive_*(): give each call timeout=",
    "_internal": "claude_agent_sdk._internal has no counterpart: use the public API",
}


class PortError(Exception):
    """A file could not be ported (it does not parse); nothing was written."""


@dataclass
class Ported:
    """One file's port: the new text and what is left for a person, as ``(line, text)``."""

    path: str
    before: str
    after: str
    todo: list[tuple[int, str]] = field(default_factory=list)
    unsure: list[tuple[int, str]] = field(default_factory=list)  # removed awaits of unknown targets

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True), self.after.splitlines(keepends=True), self.path, self.path
            )
        )


def _libcst() -> Any:
    try:
        import libcst
    except ImportError as missing:  # the optional extra
        raise SystemExit("claude_sdkurl.port needs libcst: pip install 'claude-sdkurl[port]'") from missing
    return libcst


def port_source(source: str, path: str = "<string>") -> Ported:
    """Port one program's text (see the module doc). :class:`PortError` if it does not parse,
    or is more than the parsers can take (nested too deep, too large)."""
    try:
        return _port(source, path)
    except RecursionError:
        raise PortError(f"{path}: too deeply nested for Python's parser (RecursionError)") from None
    except MemoryError:
        raise PortError(f"{path}: too large for Python's parser (MemoryError)") from None


def _port(source: str, path: str) -> Ported:
    cst = _libcst()
    from libcst.metadata import MetadataWrapper, PositionProvider

    try:  # Python's own parser first: its line numbers are the ones people expect
        ast.parse(source, path)
        module = cst.parse_module(source)
    except SyntaxError as bad:
        raise PortError(f"{path}:{bad.lineno}:{bad.offset}: does not parse: {bad.msg}") from None
    except ValueError as bad:  # a NUL byte, say
        raise PortError(f"{path}: does not parse: {bad}") from None
    except cst.ParserSyntaxError as bad:
        raise PortError(f"{path}:{bad.editor_line}:{bad.editor_column}: not Python this tool can read: {bad.message}") from None
    if "claude_agent_sdk" not in source and not any(f"{loop}." in source for loop in _LOOPS):
        return Ported(path, source, source)
    wrapper = MetadataWrapper(module)
    local_async, tasks = _local_async_functions(cst, module)
    kept = _framework_hooks(cst, wrapper.module)
    porter = _make_transformer(cst, wrapper.resolve(PositionProvider), local_async, tasks, kept)
    after = wrapper.visit(porter)
    text = _fix_imports(cst, after, porter).code
    return Ported(path, source, text, porter.todo, porter.unsure)


def _local_async_functions(cst: Any, module: Any) -> tuple[set[str], bool]:
    """The ``async def`` names of the file, and whether it makes tasks (then its sleeps
    become ``claude_sdkurl.threads.sleep``, a cancel point)."""
    names: set[str] = set()
    tasks = []

    class Finder(cst.CSTVisitor):  # type: ignore[misc]
        def visit_FunctionDef(self, node: Any) -> None:
            if node.asynchronous is not None:
                names.add(node.name.value)

        def visit_Call(self, node: Any) -> None:
            name = _dotted(cst, node.func)
            loop, _, attr = name.partition(".")
            if name in _GROUPS or (loop in _LOOPS and attr in (*_TASK_MAKERS, "wait_for")):
                tasks.append(name)

    module.visit(Finder())
    return names, bool(tasks)


# Decorators of an async framework's routes (FastAPI, Starlette, Quart, Sanic...): an endpoint
# becomes a plain def (the framework runs those on its thread pool) unless it takes the request
# or a websocket itself (it awaits them: it stays async). Hooks the framework awaits stay async.
_ROUTES = {"get", "post", "put", "delete", "patch", "options", "head", "trace", "api_route", "route"}
_ASYNC_HOOKS = {"websocket", "websocket_route", "middleware", "on_event", "exception_handler", "lifespan"}
_CONNECTIONS = {"Request", "WebSocket", "HTTPConnection"}


def _framework_hooks(cst: Any, module: Any) -> set[int]:
    """The ``async def`` nodes (by ``id``) an async framework calls and awaits, which stay
    ``async``: a ``lifespan=`` function, websocket handlers, middleware and event handlers, a
    route that takes the request or a websocket itself, a middleware class's ``dispatch``."""
    kept: set[int] = set()
    lifespans: set[str] = set()
    functions: list[tuple[Any, bool]] = []  # (async def node, inside a middleware class)

    class Finder(cst.CSTVisitor):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.middleware: list[bool] = []

        def visit_ClassDef(self, node: Any) -> None:
            self.middleware.append(any(_dotted(cst, b.value).endswith("Middleware") for b in node.bases))

        def leave_ClassDef(self, node: Any) -> None:
            self.middleware.pop()

        def visit_FunctionDef(self, node: Any) -> None:
            if node.asynchronous is not None:
                functions.append((node, bool(self.middleware and self.middleware[-1])))

        def visit_Call(self, node: Any) -> None:
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == "lifespan" and isinstance(arg.value, cst.Name):
                    lifespans.add(arg.value.value)

    module.visit(Finder())
    for node, in_middleware in functions:
        hooks = [_dotted(cst, d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator).rpartition(".")[2]
                 for d in node.decorators]  # fmt: skip
        takes_connection = any(
            p.annotation is not None and _dotted(cst, p.annotation.annotation).rpartition(".")[2] in _CONNECTIONS
            for p in node.params.params
        )
        if (node.name.value in lifespans or any(h in _ASYNC_HOOKS for h in hooks)
                or (any(h in _ROUTES for h in hooks) and takes_connection)
                or (in_middleware and node.name.value in ("dispatch", "__call__"))):  # fmt: skip
            kept.add(id(node))
    # What a kept hook hands to its own task group or loop (tg.start_soon(f), create_task(f()),
    # gather(f())) is awaited by the loop: it stays async too, and so on down.
    by_name = {node.name.value: node for node, _ in functions}
    grew = True
    while grew:
        grew = False
        for node, _ in functions:
            if id(node) not in kept:
                continue
            for name in _spawned(cst, node):
                target = by_name.get(name)
                if target is not None and id(target) not in kept:
                    kept.add(id(target))
                    grew = True
    return kept


def _spawned(cst: Any, function: Any) -> set[str]:
    """Names of the functions ``function`` hands to a loop: ``x.start_soon(f, ...)``,
    ``create_task(f(...))``, ``ensure_future(f(...))``, ``gather(f(...), ...)``."""
    found: set[str] = set()

    class Spawns(cst.CSTVisitor):  # type: ignore[misc]
        def visit_Call(self, node: Any) -> None:
            last = _dotted(cst, node.func).rpartition(".")[2]
            if last == "start_soon" and node.args and isinstance(node.args[0].value, cst.Name):
                found.add(node.args[0].value.value)
            elif last in ("create_task", "ensure_future", "gather", "wait_for", "shield"):
                for arg in node.args:
                    if isinstance(arg.value, cst.Call):
                        found.add(_dotted(cst, arg.value.func))

    function.body.visit(Spawns())
    return found


def _async_defs(cst: Any, positions: Any) -> list[Any]:
    """Every ``async def`` node the position metadata knows (the module being ported)."""
    return [n for n in positions if isinstance(n, cst.FunctionDef) and n.asynchronous is not None]


def _dotted(cst: Any, node: Any) -> str:
    """``a.b.c`` for a Name/Attribute chain, ``""`` otherwise."""
    if isinstance(node, cst.Name):
        return str(node.value)
    if isinstance(node, cst.Attribute):
        left = _dotted(cst, node.value)
        return f"{left}.{node.attr.value}" if left else ""
    return ""


def _make_transformer(cst: Any, positions: Any, local_async: set[str], makes_tasks: bool, kept: set[int]) -> Any:
    statements = (cst.SimpleStatementLine, cst.If, cst.For, cst.While, cst.With, cst.Try, cst.FunctionDef, cst.ClassDef)

    class Porter(cst.CSTTransformer):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.todo: list[tuple[int, str]] = []
            self.unsure: list[tuple[int, str]] = []
            self.notes: list[list[str]] = []
            self.need: set[str] = set()  # stdlib modules the rewrites call
            self.sdk_names: set[str] = set()  # names imported from the SDK
            self.primitives: set[str] = set()  # names bound to an asyncio Queue/Event/Lock/... here
            self.tasks: set[str] = set()  # names bound to a task, or a list of tasks, made here
            self.groups: set[str] = set()  # names bound to a task group / nursery here
            # names bound to a coroutine of the file made now and awaited later (or a list of
            # them): bound to the call not yet made (functools.partial) instead
            self.deferred: set[str] = set()
            # Which functions the traversal is inside, innermost last: True for one that stays
            # async (a framework hook: see _framework_hooks). Inside one, loop-library code is
            # left as it is, and the SDK's blocking calls go to a worker thread.
            self.inside: list[bool] = []
            kept_names = {n.name.value for n in _async_defs(cst, positions) if id(n) in kept}
            self.kept_names = kept_names
            self.converted = local_async - kept_names  # async defs of the file that become plain
            # an @asynccontextmanager that stays async keeps its name; the ones made plain then
            # become @contextlib.contextmanager
            self.keep_acm = any(
                "asynccontextmanager" in _dotted(cst, d.decorator) for n in _async_defs(cst, positions) if id(n) in kept for d in n.decorators
            )

        @property
        def in_kept(self) -> bool:
            return bool(self.inside) and self.inside[-1]

        # ---------------------------------------------------------- notes on statements

        def _line(self, node: Any) -> int:
            try:
                return int(positions[node].start.line)
            except KeyError:
                return 0

        def _note(self, node: Any, key: str, above: bool = True) -> None:
            """Record a place left for a person; ``above``: comment it above the statement
            being left (else the caller puts the comment itself)."""
            text = _ADVICE[key]
            self.todo.append((self._line(node), text))
            if above and self.notes:
                self.notes[-1].append(text)

        def _close(self, updated: Any) -> Any:
            notes = self.notes.pop()
            if not notes:
                return updated
            lines = [cst.EmptyLine(comment=cst.Comment(f"{MARK} {text}")) for text in dict.fromkeys(notes)]
            return updated.with_changes(leading_lines=[*updated.leading_lines, *lines])

        # Notes go above the statement being left: every statement kind opens a list on the
        # way in and writes its notes as comments on the way out, before its own leave_*.
        def on_visit(self, node: Any) -> bool:
            if isinstance(node, statements):
                self.notes.append([])
            return bool(super().on_visit(node))

        def on_leave(self, original: Any, updated: Any) -> Any:
            if isinstance(original, statements):
                updated = self._close(updated)
            return super().on_leave(original, updated)

        def visit_FunctionDef(self, node: Any) -> None:
            self.inside.append(id(node) in kept)

        def leave_FunctionDef(self, original: Any, updated: Any) -> Any:
            self.inside.pop()
            if id(original) in kept:
                return updated  # a framework hook: stays async
            if self.keep_acm and original.asynchronous is not None:
                decorators = [d.with_changes(decorator=cst.parse_expression("contextlib.contextmanager"))
                              if _dotted(cst, d.decorator).endswith("asynccontextmanager") else d for d in updated.decorators]  # fmt: skip
                if decorators != list(updated.decorators):
                    self.need.add("contextlib")
                    updated = updated.with_changes(decorators=decorators)
            return self._synchronous(updated)

        def leave_For(self, original: Any, updated: Any) -> Any:
            if self.in_kept and updated.asynchronous is not None:
                # async for over the SDK's messages (or a generator of the file made plain):
                # each next() on a worker thread; any other async iterator as it is
                if isinstance(updated.iter, cst.Call) and self._blocking(updated.iter, iterating=True):
                    self.need.add("claude_sdkurl.threads")
                    wrapped = cst.Call(func=cst.parse_expression("claude_sdkurl.threads.iterate"), args=[cst.Arg(updated.iter)])
                    return updated.with_changes(iter=wrapped)
                return updated
            return self._synchronous(updated)

        def leave_With(self, original: Any, updated: Any) -> Any:
            if self.in_kept and updated.asynchronous is not None:
                items = []
                for item in updated.items:  # async with ClaudeSDKClient(...): entered on a worker thread
                    if isinstance(item.item, cst.Call) and _dotted(cst, item.item.func) in self.sdk_names:
                        self.need.add("claude_sdkurl.threads")
                        item = item.with_changes(item=cst.Call(func=cst.parse_expression("claude_sdkurl.threads.entered"),
                                                               args=[cst.Arg(item.item)]))  # fmt: skip
                    items.append(item)
                return updated.with_changes(items=items)
            return self._unwrap_timeout(original, self._synchronous(updated))

        def _blocking(self, call: Any, iterating: bool = False) -> bool:
            """A call that blocks once ported: an SDK function or method, or an ``async def`` of
            the file that becomes plain."""
            name = _dotted(cst, call.func)
            last = name.rpartition(".")[2]
            if name in self.converted or name in self.sdk_names:
                return True
            return isinstance(call.func, cst.Attribute) and (last in _RECEIVERS if iterating else last in _SDK_METHODS)

        # ---------------------------------------------------------- imports

        def leave_ImportFrom(self, original: Any, updated: Any) -> Any:
            module = _dotted(cst, original.module) if original.module is not None else ""  # before renaming
            if module == "claude_agent_sdk" or module.startswith("claude_agent_sdk."):
                if "._internal" in module:
                    self._note(original, "_internal")
                if not isinstance(updated.names, cst.ImportStar):
                    for alias in updated.names:
                        self.sdk_names.add(alias.asname.name.value if alias.asname else alias.name.value)
                return updated.with_changes(module=cst.parse_expression("claude_sdkurl" + module[len("claude_agent_sdk"):]))
            return updated

        def leave_Name(self, original: Any, updated: Any) -> Any:
            if self.keep_acm and updated.value == "asynccontextmanager":
                return updated
            renamed = _RENAMES.get(updated.value)
            return updated.with_changes(value=renamed) if renamed else updated

        # ---------------------------------------------------------- async syntax

        def _synchronous(self, node: Any) -> Any:
            """``async def``/``async for``/``async with`` -> the plain statement."""
            return node.with_changes(asynchronous=None) if node.asynchronous is not None else node

        def leave_CompFor(self, original: Any, updated: Any) -> Any:
            if self.in_kept:
                return updated
            return self._synchronous(updated)  # [x async for x in ...]

        def leave_Await(self, original: Any, updated: Any) -> Any:
            if self.in_kept:
                # in a framework hook: the SDK's blocking calls (and the file's async defs made
                # plain) run on a worker thread; any other await stays
                call = updated.expression
                if isinstance(call, cst.Call) and self._blocking(call):
                    self.need.add("asyncio")
                    args = [cst.Arg(call.func), *call.args]
                    args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args]
                    args = [*(a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for a in args[:-1]), args[-1]]
                    return updated.with_changes(expression=cst.Call(func=cst.parse_expression("asyncio.to_thread"), args=args))
                return updated
            if _dotted(cst, updated.expression) in self.tasks:  # await task -> task.result()
                return cst.Call(func=cst.Attribute(value=updated.expression, attr=cst.Name("result")))
            if isinstance(updated.expression, cst.Name) and updated.expression.value in self.deferred:
                return cst.Call(func=updated.expression)  # await coro -> coro(): the call runs now
            if not self._known_awaitable(updated.expression):
                self.unsure.append((self._line(original), cst.Module([]).code_for_node(original.expression)))
            return updated.expression

        def visit_Assign(self, node: Any) -> None:
            value = node.value
            targets = [_dotted(cst, t.target) for t in node.targets]
            if isinstance(value, cst.Call) and _dotted(cst, value.func).partition(".")[2] in _PRIMITIVES:
                self.primitives.update(targets)
            if isinstance(value, (cst.ListComp, cst.GeneratorExp)):
                value = value.elt  # [create_task(f(x)) for x in xs]: a list of tasks
            if isinstance(value, cst.Call) and self._makes_task(value):
                self.tasks.update(targets)
            if self._coroutines(node.value) is not None and all(isinstance(t.target, cst.Name) for t in node.targets):
                self.deferred.update(targets)

        def _coroutines(self, value: Any) -> Any:
            """``f(x)``, ``[f(x) for ...]``, ``(f(x) for ...)`` or ``[f(x), g(y)]`` where every
            ``f`` is an ``async def`` of the file (coroutines made, not awaited): the same with
            each call deferred (``functools.partial``); ``None`` for anything else."""
            def local(call: Any) -> bool:
                return isinstance(call, cst.Call) and _dotted(cst, call.func) in local_async

            if local(value):
                return self._partial(value) if value.args else value.func
            if isinstance(value, (cst.ListComp, cst.GeneratorExp)) and local(value.elt):
                return value.with_changes(elt=self._partial(value.elt) if value.elt.args else value.elt.func)
            if isinstance(value, cst.List) and value.elements and all(local(e.value) for e in value.elements):
                return value.with_changes(elements=[e.with_changes(value=self._partial(e.value) if e.value.args else e.value.func)
                                                    for e in value.elements])  # fmt: skip
            return None

        def leave_Assign(self, original: Any, updated: Any) -> Any:
            targets = [_dotted(cst, t.target) for t in updated.targets]
            if targets and all(t in self.deferred for t in targets):
                deferred = self._coroutines(updated.value)
                if deferred is not None:
                    self.need.add("functools")
                    return updated.with_changes(value=deferred)
            return updated

        def visit_WithItem(self, node: Any) -> None:
            if isinstance(node.item, cst.Call) and _dotted(cst, node.item.func) in _GROUPS and node.asname is not None:
                self.groups.add(_dotted(cst, node.asname.name))

        def _makes_task(self, call: Any) -> bool:
            loop, _, attr = _dotted(cst, call.func).partition(".")
            return attr in _TASK_MAKERS and (loop in _LOOPS or loop in self.groups)

        def _known_awaitable(self, expression: Any) -> bool:
            call = expression.func if isinstance(expression, cst.Call) else None
            if call is None:
                return False
            name = _dotted(cst, call)
            last = name.rpartition(".")[2]
            return (
                name in local_async
                or name in self.sdk_names
                or (isinstance(call, cst.Attribute) and last in _SDK_METHODS)
                or name.startswith(("time.", "queue.", "threading.", "asyncio.", "anyio.", "trio.", "claude_sdkurl."))  # rewritten or marked
                or name.rpartition(".")[0] in self.primitives  # q.get() of a queue made here
            )

        # ---------------------------------------------------------- loop libraries

        def leave_Call(self, original: Any, updated: Any) -> Any:
            name = _dotted(cst, updated.func)
            loop, _, attr = name.partition(".")
            if self.in_kept:
                return updated  # a framework hook's own async code: as it is
            self._passed_along(original, name)
            if loop in self.groups and attr == "create_task":  # tg.create_task(f(x))
                return self._first_as_call(original, updated, None, "create_task")
            if loop not in _LOOPS or not attr:
                return updated
            if name in _GROUPS:
                self.need.add("claude_sdkurl.threads")
                return updated.with_changes(func=cst.parse_expression("claude_sdkurl.threads.TaskGroup"), args=[])
            if attr in _TASK_MAKERS:
                return self._first_as_call(original, updated, "claude_sdkurl.threads.create_task", "create_task")
            if attr == "current_task" and loop == "asyncio":
                self.need.add("claude_sdkurl.threads")
                return updated.with_changes(func=cst.parse_expression("claude_sdkurl.threads.current_task"))
            if attr == "wait_for":
                return self._first_as_call(original, updated, "claude_sdkurl.threads.wait_for", "wait_for")
            if attr == "run" and updated.args:
                target = updated.args[0].value
                if loop == "asyncio" and isinstance(target, cst.Call):
                    return target  # asyncio.run(main()) -> main()
                if loop == "asyncio" and isinstance(target, cst.Name) and target.value in self.deferred:
                    return cst.Call(func=target)  # coro = main(); asyncio.run(coro) -> coro()
                if loop in ("anyio", "trio"):
                    return cst.Call(func=target, args=[a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in updated.args[1:]])
            if attr == "sleep":
                sleep = "claude_sdkurl.threads.sleep" if makes_tasks else "time.sleep"  # a cancel point
                self.need.add(sleep.rpartition(".")[0])
                return updated.with_changes(func=cst.parse_expression(sleep))
            if attr == "gather" and loop == "asyncio":
                calls = self._as_calls(updated.args)
                if calls is not None:
                    self.need.update(("functools", "claude_sdkurl.threads"))
                    return updated.with_changes(func=cst.parse_expression("claude_sdkurl.threads.gather"), args=calls)
            if attr in _PRIMITIVES:
                module, cls = _PRIMITIVES[attr]
                self.need.add(module)
                return updated.with_changes(func=cst.parse_expression(f"{module}.{cls}"))
            if attr in _ADVICE and attr != "timeout":
                self._note(original, attr)
            elif attr != "timeout":
                self.todo.append((self._line(original), f"{name}() has no rewrite: replace it with its thread form"))
                if self.notes:
                    self.notes[-1].append(f"{name}() has no rewrite: replace it with its thread form")
            return updated

        def _passed_along(self, original: Any, name: str) -> None:
            """An ``async def`` of the file made plain, passed (not called) to something that is
            not ours: if that calls it as a coroutine function (a framework's hook), it must stay
            async. Marked: the command cannot tell."""
            last = name.rpartition(".")[2]
            if name.startswith(("functools.", "claude_sdkurl.", "asyncio.", "anyio.", "trio.")) or last in ("start_soon", "create_task", "run"):
                return
            if name in self.sdk_names or name.partition(".")[0] in self.sdk_names:
                return  # the SDK takes plain functions wherever it took async ones
            for arg in original.args:
                if isinstance(arg.value, cst.Name) and arg.value.value in self.converted and (arg.keyword is None or arg.keyword.value != "lifespan"):
                    text = (f"{arg.value.value} is passed to {name or 'a call'}, which may call it as a coroutine function "
                            "(a framework's hook): if so, keep it async and run its SDK calls with asyncio.to_thread")  # fmt: skip
                    self.todo.append((self._line(original), text))
                    if self.notes:
                        self.notes[-1].append(text)

        def _first_as_call(self, original: Any, updated: Any, func: str | None, advice: str) -> Any:
            """``create_task(f(x))``/``wait_for(f(x), s)`` -> the same with
            ``functools.partial(f, x)`` (``f`` alone without arguments), on ``func``
            (``None``: the same function); a task made here passes as it is; anything
            else is left, marked."""
            args = list(updated.args)
            first = args[0].value if args and args[0].keyword is None and not args[0].star else None
            if isinstance(first, cst.Call):
                args[0] = args[0].with_changes(value=self._partial(first) if first.args else first.func)
                if first.args:
                    self.need.add("functools")
            elif first is None or _dotted(cst, first) not in self.tasks | self.deferred:
                self._note(original, advice)
                return updated
            if func is not None:
                self.need.add(func.rpartition(".")[0])
            return updated.with_changes(func=cst.parse_expression(func) if func else updated.func, args=args)

        def _as_calls(self, args: Sequence[Any]) -> list[Any] | None:
            """The arguments of ``asyncio.gather`` as calls not yet made: each ``f(a, k=b)`` (a
            coroutine being created) becomes ``functools.partial(f, a, k=b)``, its arguments
            evaluated now as the coroutine's were; ``*[f(x) for x in xs]`` likewise inside the
            comprehension. ``None`` (no rewrite) for anything else: a coroutine made earlier
            has already run by the time the ported program gets here."""
            out = []
            for arg in args:
                if arg.keyword is not None:
                    if arg.keyword.value != "return_exceptions":
                        return None
                    out.append(arg)
                    continue
                value = arg.value
                if _dotted(cst, value) in self.tasks | self.deferred:  # tasks made here, or calls deferred here
                    out.append(arg)
                elif arg.star == "" and isinstance(value, cst.Call):
                    out.append(arg.with_changes(value=self._partial(value)))
                elif arg.star == "*" and isinstance(value, (cst.ListComp, cst.GeneratorExp)) and isinstance(value.elt, cst.Call):
                    out.append(arg.with_changes(value=value.with_changes(elt=self._partial(value.elt))))
                else:
                    return None
            return out

        def _partial(self, call: Any) -> Any:
            first = cst.Arg(value=call.func, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if call.args else cst.MaybeSentinel.DEFAULT)
            return cst.Call(func=cst.parse_expression("functools.partial"), args=[first, *call.args])

        def leave_Attribute(self, original: Any, updated: Any) -> Any:
            name = _dotted(cst, updated)
            if name in ("asyncio.TimeoutError", "anyio.TimeoutError"):
                return cst.Name("TimeoutError")
            if name.endswith(".CancelledError") and name.partition(".")[0] in ("asyncio", "anyio"):
                self.need.add("claude_sdkurl.threads")
                return cst.parse_expression("claude_sdkurl.threads.CancelledError")
            return updated

        def _unwrap_timeout(self, original: Any, updated: Any) -> Any:
            """``with asyncio.timeout(s): <one loop over a receiver>`` -> the loop with timeout=s."""
            items = updated.items
            if len(items) != 1 or not isinstance(items[0].item, cst.Call):
                return updated
            if _dotted(cst, items[0].item.func) not in ("asyncio.timeout", "anyio.fail_after"):
                return updated
            seconds = items[0].item.args[0].value if items[0].item.args else None
            body = list(updated.body.body)
            loops = [s for s in body if isinstance(s, cst.For)]
            plain = all(isinstance(s, cst.For) or not _has(cst, s, cst.Await) for s in original.body.body)
            loop = loops[0] if len(loops) == 1 else None
            call = loop.iter if loop is not None else None
            receiver = isinstance(call, cst.Call) and _dotted(cst, call.func).rpartition(".")[2] in _RECEIVERS
            if seconds is None or not plain or not receiver or items[0].asname is not None or loop is None or call is None:
                self._note(original, "timeout", above=False)  # this statement's notes are written already
                return updated.with_changes(leading_lines=[*updated.leading_lines, cst.EmptyLine(comment=cst.Comment(f"{MARK} {_ADVICE['timeout']}"))])
            timed = call.with_changes(args=[*_with_last_comma(cst, call.args), cst.Arg(keyword=cst.Name("timeout"), value=seconds, equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))])
            new_body = [s.with_changes(iter=timed) if s is loop else s for s in body]
            first = new_body[0].with_changes(leading_lines=[*updated.leading_lines, *new_body[0].leading_lines])
            return cst.FlattenSentinel([first, *new_body[1:]])

    return Porter()


def _with_last_comma(cst: Any, args: Sequence[Any]) -> list[Any]:
    if not args:
        return []
    return [*args[:-1], args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))]


def _has(cst: Any, node: Any, kind: Any) -> bool:
    found = []

    class Finder(cst.CSTVisitor):  # type: ignore[misc]
        def on_visit(self, n: Any) -> bool:
            if isinstance(n, kind):
                found.append(n)
            return not found

    node.visit(Finder())
    return bool(found)


def _fix_imports(cst: Any, module: Any, porter: Any) -> Any:
    """Add the stdlib modules the rewrites call; drop ``import asyncio/anyio/trio`` no longer
    used (the comments and blank lines above a dropped line stay, above the next statement).
    The module's names are collected once, and only where a loop library is imported."""
    kept: list[Any] = []
    carried: list[Any] = []  # the leading lines of a dropped import, for the next statement
    used: set[str] | None = None
    for stmt in module.body:
        names = _plain_imports(cst, stmt)
        loops = set(names) & set(_LOOPS)
        if loops and used is None:
            used = _names_used(cst, module, skip=lambda s: bool(set(_plain_imports(cst, s)) & set(_LOOPS)))
        unused = loops - (used or set())
        if unused:  # a loop library no longer used: drop it from the import
            imp = stmt.body[0]
            aliases = [a for a in imp.names if _dotted(cst, a.name) not in unused]
            if not aliases:
                carried += list(stmt.leading_lines)
                continue
            aliases[-1] = aliases[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            stmt = stmt.with_changes(body=[imp.with_changes(names=aliases)])
        if carried:
            own = list(stmt.leading_lines)
            if carried[-1].comment is None and own and own[0].comment is None:
                own = own[1:]  # one blank line where the import was, not two
            stmt = stmt.with_changes(leading_lines=[*carried, *own])
            carried = []
        kept.append(stmt)
    present = {n for stmt in kept for n in _plain_imports(cst, stmt)}
    missing = sorted(porter.need - present)
    footer = list(module.footer)
    if carried:  # the dropped import was the last statement: its comments go to the footer
        footer = [*carried, *footer]
    if missing:
        at = next((i for i, s in enumerate(kept) if _plain_imports(cst, s) or _is_from_import(cst, s)), 0)
        if at == 0 and kept and _is_docstring(cst, kept[0]):
            at = 1
        while at < len(kept) and _is_from_future(cst, kept[at]):
            at += 1
        kept[at:at] = [cst.parse_statement(f"import {name}\n") for name in missing]
    if kept and module.body and kept[0] is not module.body[0] and not missing:
        # the file's first statement was dropped: no blank line left at its top
        lines = list(kept[0].leading_lines)
        while lines and lines[0].comment is None:
            lines.pop(0)
        kept[0] = kept[0].with_changes(leading_lines=lines)
    return module.with_changes(body=kept, footer=footer)


def _plain_imports(cst: Any, stmt: Any) -> list[str]:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Import):
        return [_dotted(cst, a.name) for a in stmt.body[0].names if a.asname is None]
    return []


def _is_from_import(cst: Any, stmt: Any) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, cst.ImportFrom) for s in stmt.body)


def _is_from_future(cst: Any, stmt: Any) -> bool:
    return _is_from_import(cst, stmt) and any(
        isinstance(s, cst.ImportFrom) and s.module is not None and _dotted(cst, s.module) == "__future__" for s in stmt.body
    )


def _is_docstring(cst: Any, stmt: Any) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _names_used(cst: Any, module: Any, skip: Any) -> set[str]:
    """Every name the module refers to, outside the top-level statements ``skip(stmt)`` is true of."""
    used: set[str] = set()

    class Collect(cst.CSTVisitor):  # type: ignore[misc]
        def visit_Name(self, node: Any) -> None:
            used.add(node.value)

    for stmt in module.body:
        if not skip(stmt):
            stmt.visit(Collect())
    return used


# ---------------------------------------------------------------- command line


def _files(paths: Sequence[str]) -> list[Path]:
    """The files named, and the ``*.py`` below the directories named (symlinked directories are
    not followed, so a link loop is walked once)."""
    found: list[Path] = []
    for p in map(Path, paths):
        if not p.is_dir():
            found.append(p)
            continue
        for top, dirs, names in os.walk(p):
            dirs.sort()
            found += [Path(top, n) for n in sorted(names) if n.endswith(".py")]
    return found


def _read(path: Path) -> tuple[str, str]:
    """The file's text and its encoding, as Python reads a source file (PEP 263: a BOM or a
    ``coding:`` line, else UTF-8)."""
    with open(path, "rb") as f:
        data = f.read()
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding), encoding


def _write(path: Path, text: str, encoding: str) -> None:
    """Replace the file's contents at once: written to a temporary file beside it (its mode
    copied), flushed to disk, then renamed over it; a write cut short (a full disk, a size limit)
    leaves the file as it was. A symlink is followed: its target is written, the link stays."""
    target = Path(os.path.realpath(path))
    mode = stat.S_IMODE(target.stat().st_mode)
    if not mode & 0o222 or not os.access(target, os.W_OK):
        raise PermissionError("the file is read-only")
    data = text.encode(encoding)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".port-tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _reason(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """The command (see the module doc). Exit 0: done (or nothing to do); 1 with ``--check``
    when a file would change or has places left; 2: a file could not be read, parsed or
    written (each such file is named on one line; the other files are ported all the same).

    Each file is written whole or not at all (see :func:`_write`); a run is not all-or-nothing
    across files: the files that could be ported are written."""
    parser = argparse.ArgumentParser(prog="python -m claude_sdkurl.port", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", help="files or directories (*.py below them)")
    parser.add_argument("-w", "--write", action="store_true", help="write the ported files in place")
    parser.add_argument("--check", action="store_true", help="exit 1 if any file still needs porting")
    args = parser.parse_args(argv)
    results: list[tuple[Ported, str]] = []
    status = 0
    for path in _files(args.paths):
        try:
            source, encoding = _read(path)
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError) as error:
            print(f"claude_sdkurl.port: {path}: cannot read: {_reason(error)}", file=sys.stderr)
            status = 2
            continue
        try:
            results.append((port_source(source, str(path)), encoding))
        except PortError as error:
            print(f"claude_sdkurl.port: {error}", file=sys.stderr)
            status = 2
    written: list[Ported] = []
    for r, encoding in results:
        if not r.changed and not r.todo:
            continue
        if args.write and r.changed:
            try:
                _write(Path(r.path), r.after, encoding)
            except (OSError, UnicodeEncodeError) as error:
                print(f"claude_sdkurl.port: {r.path}: not written: {_reason(error)}", file=sys.stderr)
                status = 2
                continue
            written.append(r)
        elif not args.check:
            sys.stdout.write(r.diff())
    ported = [r for r, _ in results]
    left = [(r.path, line, text) for r in ported for line, text in r.todo]
    unsure = [(r.path, line, text) for r in ported for line, text in r.unsure]
    changed = written if args.write else [r for r in ported if r.changed]
    print(f"claude_sdkurl.port: {len(changed)} file(s) {'written' if args.write else 'to change'}, "
          f"{len(left)} place(s) left for you", file=sys.stderr)  # fmt: skip
    for where, line, text in left:
        print(f"  {where}:{line}: {text}", file=sys.stderr)
    if unsure:
        print("  awaits removed whose target is not an SDK call or a function of the file (check each):", file=sys.stderr)
        for where, line, text in unsure:
            print(f"  {where}:{line}: await {text}", file=sys.stderr)
    if status:
        return status
    return 1 if args.check and (changed or left) else 0


if __name__ == "__main__":
    sys.exit(main())
