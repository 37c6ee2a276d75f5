"""What a program is made of, before anything is rewritten: the names the rewrites know, a
node's dotted name, the file's ``async def``s, whether it makes tasks, and which of its
functions an async framework calls and awaits (those stay ``async``)."""

from __future__ import annotations

from typing import Any

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


def _local_async_functions(module: cst.Module) -> tuple[set[str], bool]:
    """The ``async def`` names of the file, and whether it makes tasks (then its sleeps
    become ``claude_sdkurl.threads.sleep``, a cancel point)."""
    names: set[str] = set()
    tasks = []

    class Finder(cst.CSTVisitor):  
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            if node.asynchronous is not None:
                names.add(node.name.value)

        def visit_Call(self, node: cst.Call) -> None:
            name = _dotted(node.func)
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


def _framework_hooks(module: cst.Module) -> set[int]:
    """The ``async def`` nodes (by ``id``) an async framework calls and awaits, which stay
    ``async``: a ``lifespan=`` function, websocket handlers, middleware and event handlers, a
    route that takes the request or a websocket itself, a middleware class's ``dispatch``."""
    kept: set[int] = set()
    lifespans: set[str] = set()
    functions: list[tuple[cst.FunctionDef, bool]] = []  # (async def node, inside a middleware class)

    class Finder(cst.CSTVisitor):  
        def __init__(self) -> None:
            super().__init__()
            self.middleware: list[bool] = []

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            self.middleware.append(any(_dotted(b.value).endswith("Middleware") for b in node.bases))

        def leave_ClassDef(self, node: cst.ClassDef) -> None:
            self.middleware.pop()

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            if node.asynchronous is not None:
                functions.append((node, bool(self.middleware and self.middleware[-1])))

        def visit_Call(self, node: cst.Call) -> None:
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == "lifespan" and isinstance(arg.value, cst.Name):
                    lifespans.add(arg.value.value)

    module.visit(Finder())
    for node, in_middleware in functions:
        hooks = [_dotted(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator).rpartition(".")[2]
                 for d in node.decorators]  # fmt: skip
        takes_connection = any(
            p.annotation is not None and _dotted(p.annotation.annotation).rpartition(".")[2] in _CONNECTIONS
            for p in node.params.params
        )
        if (node.name.value in lifespans or any(h in _ASYNC_HOOKS for h in hooks)
                or (any(h in _ROUTES for h in hooks) and takes_connection)
                or (in_middleware and node.name.value in ("dispatch", "__call__"))):  # fmt: skip
            kept.add(id(node))
    # What a kept hook hands to its own task group or loop (tg.start_soon(f), await tg.start(f),
    # create_task(f()), gather(f())) is awaited by the loop: it stays async too, and so on down.
    # A method handed over (tg.start_soon(worker.run)) is known by its name alone: every async
    # def of that name stays async.
    by_name: dict[str, list[cst.FunctionDef]] = {}
    for node, _ in functions:
        by_name.setdefault(node.name.value, []).append(node)
    grew = True
    while grew:
        grew = False
        for node, _ in functions:
            if id(node) not in kept:
                continue
            for name in _spawned(node):
                for target in by_name.get(name, []):
                    if id(target) not in kept:
                        kept.add(id(target))
                        grew = True
    return kept


_STARTS = ("start_soon", "start")  # a task group's or nursery's: they take a coroutine function


def _handed(value: cst.BaseExpression) -> str:
    """The function name of what is handed to a loop uncalled: ``f``, ``obj.f`` (``f``),
    ``functools.partial(f, ...)`` (``f``); ``""`` for anything else."""
    if isinstance(value, cst.Call) and _dotted(value.func) in ("functools.partial", "partial") and value.args:
        return _handed(value.args[0].value)
    return _dotted(value).rpartition(".")[2]


def _spawned(function: cst.FunctionDef) -> set[str]:
    """Names of the functions ``function`` hands to a loop: ``x.start_soon(f, ...)``,
    ``x.start(f, ...)`` (``f`` may be a method or a ``functools.partial``), ``create_task(f(...))``,
    ``ensure_future(f(...))``, ``gather(f(...), ...)``."""
    found: set[str] = set()

    class Spawns(cst.CSTVisitor):  
        def visit_Call(self, node: cst.Call) -> None:
            last = _dotted(node.func).rpartition(".")[2]
            if last in _STARTS and node.args and node.args[0].keyword is None and not node.args[0].star:
                name = _handed(node.args[0].value)
                if name:
                    found.add(name)
            elif last in ("create_task", "ensure_future", "gather", "wait_for", "shield"):
                for arg in node.args:
                    if isinstance(arg.value, cst.Call):
                        found.add(_dotted(arg.value.func).rpartition(".")[2])

    function.body.visit(Spawns())
    return found


def _async_defs(positions: Any) -> list[cst.FunctionDef]:
    """Every ``async def`` node the position metadata knows (the module being ported)."""
    return [n for n in positions if isinstance(n, cst.FunctionDef) and n.asynchronous is not None]


def _dotted(node: cst.CSTNode | None) -> str:
    """``a.b.c`` for a Name/Attribute chain, ``""`` otherwise."""
    if isinstance(node, cst.Name):
        return str(node.value)
    if isinstance(node, cst.Attribute):
        left = _dotted(node.value)
        return f"{left}.{node.attr.value}" if left else ""
    return ""
