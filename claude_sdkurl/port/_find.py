"""What a program is made of, before anything is rewritten: the names the rewrites know, a
node's dotted name, the file's ``async def``s, whether it makes tasks, and which of its
functions an async framework calls and awaits (those stay ``async``). The survey walks Python's
own tree (``ast``); the rewrites walk libcst's."""

from __future__ import annotations

import ast
import dataclasses
import sys

import libcst as cst

from ._ported import _LOOPS
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


# Decorators of an async framework's routes (FastAPI, Starlette, Quart, Sanic...): an endpoint
# becomes a plain def (the framework runs those on its thread pool) unless it takes the request
# or a websocket itself (it awaits them: it stays async). Hooks the framework awaits stay async.
_ROUTES = {"get", "post", "put", "delete", "patch", "options", "head", "trace", "api_route", "route"}
_ASYNC_HOOKS = {"websocket", "websocket_route", "middleware", "on_event", "exception_handler", "lifespan"}
_CONNECTIONS = {"Request", "WebSocket", "HTTPConnection"}


@dataclasses.dataclass
class Survey:
    """What a module is made of, from one walk over Python's own tree of it (a tenth of the cost
    of a walk over libcst's): the ``async def`` names of the file, whether it makes tasks (then
    its sleeps become ``claude_sdkurl.threads.sleep``, a cancel point), which ``async def``s an
    async framework calls and awaits (they stay ``async``: by their place among the file's
    ``async def``s in the order of the text, ``kept``, which a walk over libcst's tree meets in
    the same order), their names, and whether one of those is an ``@asynccontextmanager``."""

    local_async: set[str]
    makes_tasks: bool
    kept: set[int]
    kept_names: set[str]
    keeps_acm: bool


def survey(tree: ast.Module) -> Survey:
    """One walk over ``tree`` (see :class:`Survey`). Kept: a ``lifespan=`` function, websocket
    handlers, middleware and event handlers, a route that takes the request or a websocket
    itself, a middleware class's ``dispatch``, and what those hand to their own loop."""
    lifespans: set[str] = set()
    functions: list[tuple[ast.AsyncFunctionDef, bool]] = []  # (async def, inside a middleware class)
    tasks = False
    middleware: list[bool] = []

    def walk(node: ast.AST) -> None:
        nonlocal tasks
        if isinstance(node, ast.ClassDef):
            middleware.append(any(_adotted(b).endswith("Middleware") for b in node.bases))
        elif isinstance(node, ast.AsyncFunctionDef):
            functions.append((node, bool(middleware and middleware[-1])))
        elif isinstance(node, ast.Call):
            name = _adotted(node.func)
            loop, _, attr = name.partition(".")
            if name in _GROUPS or (loop in _LOOPS and attr in (*_TASK_MAKERS, "wait_for")):
                tasks = True
            for keyword in node.keywords:
                if keyword.arg == "lifespan" and isinstance(keyword.value, ast.Name):
                    lifespans.add(keyword.value.id)
        for child in ast.iter_child_nodes(node):
            walk(child)
        if isinstance(node, ast.ClassDef):
            middleware.pop()

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))  # (as deep as the parser went)
    walk(tree)
    functions.sort(key=lambda f: (f[0].lineno, f[0].col_offset))  # the order of the text
    kept: set[int] = set()
    for ordinal, (node, in_middleware) in enumerate(functions):
        hooks = [_adotted(d.func if isinstance(d, ast.Call) else d).rpartition(".")[2] for d in node.decorator_list]
        params = [*node.args.posonlyargs, *node.args.args]
        takes_connection = any(p.annotation is not None and _adotted(p.annotation).rpartition(".")[2] in _CONNECTIONS for p in params)
        if (node.name in lifespans or any(h in _ASYNC_HOOKS for h in hooks)
                or (any(h in _ROUTES for h in hooks) and takes_connection)
                or (in_middleware and node.name in ("dispatch", "__call__"))):  # fmt: skip
            kept.add(ordinal)
    # What a kept hook hands to its own task group or loop (tg.start_soon(f), await tg.start(f),
    # create_task(f()), gather(f())) is awaited by the loop: it stays async too, and so on down.
    # A method handed over (tg.start_soon(worker.run)) is known by its name alone: every async
    # def of that name stays async.
    by_name: dict[str, list[int]] = {}
    for ordinal, (node, _) in enumerate(functions):
        by_name.setdefault(node.name, []).append(ordinal)
    spawned: dict[int, set[str]] = {}  # each kept function's body is walked once
    grew = True
    while grew:
        grew = False
        for ordinal in sorted(kept):
            if ordinal not in spawned:
                spawned[ordinal] = _spawned(functions[ordinal][0])
            for name in spawned[ordinal]:
                for target in by_name.get(name, []):
                    if target not in kept:
                        kept.add(target)
                        grew = True
    kept_nodes = [functions[i][0] for i in kept]
    return Survey(
        local_async={node.name for node, _ in functions},
        makes_tasks=tasks,
        kept=kept,
        kept_names={node.name for node in kept_nodes},
        keeps_acm=any("asynccontextmanager" in _adotted(d) for node in kept_nodes for d in node.decorator_list),
    )


_STARTS = ("start_soon", "start")  # a task group's or nursery's: they take a coroutine function


def _handed(value: cst.BaseExpression) -> str:
    """The function name of what is handed to a loop uncalled: ``f``, ``obj.f`` (``f``),
    ``functools.partial(f, ...)`` (``f``); ``""`` for anything else."""
    if isinstance(value, cst.Call) and _dotted(value.func) in ("functools.partial", "partial") and value.args:
        return _handed(value.args[0].value)
    return _dotted(value).rpartition(".")[2]


def _ahanded(value: ast.expr) -> str:
    """:func:`_handed` on Python's tree."""
    if isinstance(value, ast.Call) and _adotted(value.func) in ("functools.partial", "partial") and value.args:
        return _ahanded(value.args[0])
    return _adotted(value).rpartition(".")[2]


def _spawned(function: ast.AsyncFunctionDef) -> set[str]:
    """Names of the functions ``function`` hands to a loop: ``x.start_soon(f, ...)``,
    ``x.start(f, ...)`` (``f`` may be a method or a ``functools.partial``), ``create_task(f(...))``,
    ``ensure_future(f(...))``, ``gather(f(...), ...)``."""
    found: set[str] = set()
    for statement in function.body:
        for node in ast.walk(statement):
            if not isinstance(node, ast.Call):
                continue
            last = _adotted(node.func).rpartition(".")[2]
            if last in _STARTS and node.args and not isinstance(node.args[0], ast.Starred):
                name = _ahanded(node.args[0])
                if name:
                    found.add(name)
            elif last in ("create_task", "ensure_future", "gather", "wait_for", "shield"):
                for arg in node.args:
                    if isinstance(arg, ast.Call):
                        found.add(_adotted(arg.func).rpartition(".")[2])
    return found


def _adotted(node: ast.AST | None) -> str:
    """``a.b.c`` for a Name/Attribute chain of Python's tree, ``""`` otherwise."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        left = _adotted(node.value)
        return f"{left}.{node.attr}" if left else ""
    return ""


def _dotted(node: cst.CSTNode | None) -> str:
    """``a.b.c`` for a Name/Attribute chain, ``""`` otherwise."""
    if isinstance(node, cst.Name):
        return str(node.value)
    if isinstance(node, cst.Attribute):
        left = _dotted(node.value)
        return f"{left}.{node.attr.value}" if left else ""
    return ""
