"""The rewrites themselves (:class:`Porter`, a ``libcst`` transformer) and :func:`port_source`,
which parses a program, runs them and fixes its imports."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any, TypeVar

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ._find import (
    _ADVICE,
    _GROUPS,
    _PRIMITIVES,
    _RECEIVERS,
    _RENAMES,
    _SDK_METHODS,
    _STARTS,
    _TASK_MAKERS,
    Survey,
    _dotted,
    _handed,
    survey,
)
from ._imports import _fix_imports
from ._ported import _LOOPS, MARK, PortError, Ported, has_work

_Async = TypeVar("_Async", cst.FunctionDef, cst.For, cst.With, cst.CompFor)  # what can be async


def port_source(source: str, path: str = "<string>", ported_elsewhere: frozenset[str] = frozenset()) -> Ported:
    """Port one program's text (see the module doc). :class:`PortError` if it does not parse,
    or is more than the parsers can take (nested too deep, too large). ``ported_elsewhere``:
    the ``async def`` names of the other files ported in the same run (a function of the file
    handed to one of them is not marked: that one is made plain too). The marks the file
    carries from an earlier port count as places left, and are not written twice."""
    try:
        return _port(source, path, ported_elsewhere)
    except RecursionError:
        raise PortError(f"{path}: too deeply nested for Python's parser (RecursionError)") from None
    except MemoryError:
        raise PortError(f"{path}: too large for Python's parser (MemoryError)") from None


def _port(source: str, path: str, ported_elsewhere: frozenset[str]) -> Ported:
    try:  # Python's own parser first: its line numbers are the ones people expect
        tree = ast.parse(source, path)
        module = cst.parse_module(source)
    except SyntaxError as bad:
        raise PortError(f"{path}:{bad.lineno}:{bad.offset}: does not parse: {bad.msg}") from None
    except ValueError as bad:  # a NUL byte, say
        raise PortError(f"{path}: does not parse: {bad}") from None
    except cst.ParserSyntaxError as bad:
        raise PortError(f"{path}:{bad.editor_line}:{bad.editor_column}: not Python this tool can read: {bad.message}") from None
    marked = _marks_in(source) if MARK in source else []
    if not has_work(source):
        return Ported(path, source, source, marked)
    lines = _Lines(module, tree)
    porter = Porter(lines, survey(tree), ported_elsewhere)
    after = module.visit(porter)
    text = _fix_imports(after, porter).code
    lines.resolve()
    left = [(int(line[0]), t) for line, t in porter.todo]
    found = {t for _, t in left}
    todo = sorted([*left, *((line, t) for line, t in marked if t not in found)], key=lambda place: place[0])
    return Ported(path, source, text, todo, [(int(line[0]), t) for line, t in porter.unsure])


# The nodes whose lines a port reports (a mark's place, a removed await), and their kinds in
# Python's own tree.
_KINDS: dict[type, tuple[type, ...]] = {cst.Call: (ast.Call,), cst.Await: (ast.Await,), cst.ImportFrom: (ast.ImportFrom,),
                                        cst.With: (ast.With, ast.AsyncWith)}  # fmt: skip


class _Lines:
    """The lines of the places a port reports. libcst's positions cost a second generation of the
    whole module's code with every node's place tracked (as much again as parsing it); Python's
    own tree has every node's line already. The rewrites meet the nodes of each kind in
    :data:`_KINDS` in the order of the text (a walk that visits a node before what is inside it,
    in the order of the text); so the n-th ``Call`` met is the n-th ``ast.Call`` by place
    (start, then the longer first). The porter counts them as it goes (:meth:`enter`,
    :meth:`leave`); a place asked for is a number, filled in at the end (:meth:`resolve`). Where
    the two trees' counts of a kind differ, libcst's positions are worked out after all."""

    def __init__(self, module: cst.Module, tree: ast.Module) -> None:
        self.module, self.tree = module, tree
        self.counts: dict[type, int] = dict.fromkeys(_KINDS, 0)
        self.open: dict[type, list[int]] = {kind: [] for kind in _KINDS}
        self.current: dict[type, tuple[int, int]] = {}  # kind -> (id, ordinal) of the node being left
        self.asked: list[tuple[list[int], cst.CSTNode, int | None]] = []  # (its line, to fill in; the node; its ordinal)

    def enter(self, node: cst.CSTNode) -> None:
        kind = type(node)
        self.open[kind].append(self.counts[kind])
        self.counts[kind] += 1

    def leave(self, node: cst.CSTNode) -> None:
        self.current[type(node)] = (id(node), self.open[type(node)].pop())

    def __call__(self, node: cst.CSTNode) -> list[int]:
        """The line of ``node`` (one being left now), as a one-item list filled in by :meth:`resolve`."""
        line = [0]
        here = self.current.get(type(node))
        self.asked.append((line, node, here[1] if here is not None and here[0] == id(node) else None))
        return line

    def resolve(self) -> None:
        if not self.asked:
            return
        wanted = {type(node) for _, node, _ in self.asked}
        by_kind: dict[type, list[ast.AST]] = {kind: [] for kind in wanted}
        for each in ast.walk(self.tree):
            for kind in wanted:
                if isinstance(each, _KINDS[kind]):
                    by_kind[kind].append(each)
        for found in by_kind.values():
            found.sort(key=lambda n: (n.lineno, n.col_offset, -(n.end_lineno or 0), -(n.end_col_offset or 0)))  # type: ignore[attr-defined]
        positions: Any = None
        for line, node, ordinal in self.asked:
            found = by_kind[type(node)]
            if ordinal is not None and len(found) == self.counts[type(node)]:
                line[0] = int(found[ordinal].lineno)  # type: ignore[attr-defined]
                continue
            if positions is None:  # the module itself, not a copy: the nodes asked about are its own
                positions = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)
            try:
                line[0] = int(positions[node].start.line)
            except KeyError:
                line[0] = 0


class Porter(cst.CSTTransformer):
    """The rewrites of one module (see the package doc), and what they leave for a person:
    ``todo`` (marked places), ``unsure`` (removed awaits of unknown targets) and ``need`` (the
    standard-library modules the rewritten code calls)."""

    def __init__(self, lines: Any, found: Survey, ported_elsewhere: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.lines = lines  # node -> its line in the original text
        self.local_async = found.local_async  # the file's async def names
        self.ported_elsewhere = ported_elsewhere  # async def names of the run's other files (made plain there)
        self.makes_tasks = found.makes_tasks  # its sleeps become claude_sdkurl.threads.sleep, a cancel point
        self.kept = found.kept  # the async defs an async framework awaits (by their place): they stay async
        self.async_seen = 0  # the async defs met so far (the place of the next one)
        self.todo: list[tuple[Any, str]] = []  # (its line, to be filled in: see _Lines; the text)
        self.unsure: list[tuple[Any, str]] = []
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
        # async (a framework hook: see _find.survey). Inside one, loop-library code is
        # left as it is, and the SDK's blocking calls go to a worker thread.
        self.inside: list[bool] = []
        self.kept_names = found.kept_names
        self.converted = self.local_async - found.kept_names  # async defs of the file that become plain
        # an @asynccontextmanager that stays async keeps its name; the ones made plain then
        # become @contextlib.contextmanager
        self.keep_acm = found.keeps_acm

    @property
    def in_kept(self) -> bool:
        return bool(self.inside) and self.inside[-1]

    # ---------------------------------------------------------- notes on statements

    def _line(self, node: cst.CSTNode) -> Any:
        """The line of the node being left (filled in after the walk: see :class:`_Lines`)."""
        return self.lines(node)

    def _note(self, node: cst.CSTNode, key: str, above: bool = True) -> None:
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
        return updated.with_changes(leading_lines=_with_marks(updated.leading_lines, lines))

    # Notes (``# claude_sdkurl.port:`` comments) go above the statement being left: a simple
    # statement line, an if, for, while, with, try, def or class opens a list on the way in and
    # writes its notes as comments on the way out, first thing in its leave_*.
    # (Typed visit_/leave_ methods, not on_visit/on_leave: those ran for every node of the
    # module, and cost as much as all the rewrites together.)
    def _open(self, node: cst.CSTNode) -> None:
        self.notes.append([])

    visit_SimpleStatementLine = visit_If = visit_While = visit_Try = visit_ClassDef = _open

    def visit_With(self, node: cst.With) -> None:
        self.notes.append([])
        self.lines.enter(node)

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine) -> Any:
        return self._close(updated)

    def leave_If(self, original: cst.If, updated: cst.If) -> Any:
        return self._close(updated)

    def leave_While(self, original: cst.While, updated: cst.While) -> Any:
        return self._close(updated)

    def leave_Try(self, original: cst.Try, updated: cst.Try) -> Any:
        return self._close(updated)

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> Any:
        return self._close(updated)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.notes.append([])
        kept = False
        if node.asynchronous is not None:
            kept = self.async_seen in self.kept
            self.async_seen += 1
        self.inside.append(kept)

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        updated = self._close(updated)
        if self.inside.pop():
            return updated  # a framework hook: stays async
        if self.keep_acm and original.asynchronous is not None:
            decorators = [d.with_changes(decorator=cst.parse_expression("contextlib.contextmanager"))
                          if _dotted(d.decorator).endswith("asynccontextmanager") else d for d in updated.decorators]  # fmt: skip
            if decorators != list(updated.decorators):
                self.need.add("contextlib")
                updated = updated.with_changes(decorators=decorators)
        return self._synchronous(updated)

    def leave_For(self, original: cst.For, updated: cst.For) -> cst.For:
        updated = self._close(updated)
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
        self.lines.leave(original)
        updated = self._close(updated)
        if self.in_kept and updated.asynchronous is not None:
            items = []
            for item in updated.items:  # async with ClaudeSDKClient(...): entered on a worker thread
                if isinstance(item.item, cst.Call) and _dotted(item.item.func) in self.sdk_names:
                    self.need.add("claude_sdkurl.threads")
                    item = item.with_changes(item=cst.Call(func=cst.parse_expression("claude_sdkurl.threads.entered"),
                                                           args=[cst.Arg(item.item)]))  # fmt: skip
                items.append(item)
            return updated.with_changes(items=items)
        return self._unwrap_timeout(original, self._synchronous(updated))

    def _blocking(self, call: cst.Call, iterating: bool = False) -> bool:
        """A call that blocks once ported: an SDK function or method, or an ``async def`` of
        the file that becomes plain."""
        name = _dotted(call.func)
        last = name.rpartition(".")[2]
        if name in self.converted or name in self.sdk_names:
            return True
        return isinstance(call.func, cst.Attribute) and (last in _RECEIVERS if iterating else last in _SDK_METHODS)

    # ---------------------------------------------------------- imports

    def _enter_counted(self, node: cst.CSTNode) -> None:
        self.lines.enter(node)

    visit_ImportFrom = visit_Await = visit_Call = _enter_counted

    def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom) -> cst.ImportFrom:
        self.lines.leave(original)
        module = _dotted(original.module) if original.module is not None else ""  # before renaming
        if module == "claude_agent_sdk" or module.startswith("claude_agent_sdk."):
            if "._internal" in module:
                self._note(original, "_internal")
            if not isinstance(updated.names, cst.ImportStar):
                for alias in updated.names:
                    bound = alias.asname.name if alias.asname else alias.name
                    if isinstance(bound, cst.Name):
                        self.sdk_names.add(bound.value)
            return updated.with_changes(module=cst.parse_expression("claude_sdkurl" + module[len("claude_agent_sdk"):]))
        return updated

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        if self.keep_acm and updated.value == "asynccontextmanager":
            return updated
        renamed = _RENAMES.get(updated.value)
        return updated.with_changes(value=renamed) if renamed else updated

    # ---------------------------------------------------------- async syntax

    def _synchronous(self, node: _Async) -> _Async:
        """``async def``/``async for``/``async with`` -> the plain statement."""
        return node.with_changes(asynchronous=None) if node.asynchronous is not None else node

    def leave_CompFor(self, original: cst.CompFor, updated: cst.CompFor) -> cst.CompFor:
        if self.in_kept:
            return updated
        return self._synchronous(updated)  # [x async for x in ...]

    def leave_Await(self, original: cst.Await, updated: cst.Await) -> cst.BaseExpression:
        self.lines.leave(original)
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
        if self._is_task(updated.expression):  # await task -> task.result()
            return cst.Call(func=cst.Attribute(value=updated.expression, attr=cst.Name("result")))
        if isinstance(updated.expression, cst.Name) and updated.expression.value in self.deferred:
            return cst.Call(func=updated.expression)  # await coro -> coro(): the call runs now
        if not self._known_awaitable(updated.expression):
            self.unsure.append((self._line(original), cst.Module([]).code_for_node(original.expression)))
        return updated.expression

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        targets = [_dotted(t.target) for t in node.targets]
        if isinstance(value, cst.Call) and _dotted(value.func).partition(".")[2] in _PRIMITIVES:
            self.primitives.update(targets)
        if isinstance(value, (cst.ListComp, cst.GeneratorExp)):
            value = value.elt  # [create_task(f(x)) for x in xs]: a list of tasks
        if isinstance(value, cst.Call) and self._makes_task(value):
            self.tasks.update(targets)
        if isinstance(value, cst.Call) and _dotted(value.func) in _GROUPS:
            self.groups.update(targets)  # tg = asyncio.TaskGroup(); async with tg: ...
        if self._coroutines(node.value) is not None and all(isinstance(t.target, cst.Name) for t in node.targets):
            self.deferred.update(targets)

    def _coroutines(self, value: Any) -> Any:
        """``f(x)``, ``[f(x) for ...]``, ``(f(x) for ...)`` or ``[f(x), g(y)]`` where every
        ``f`` is an ``async def`` of the file (coroutines made, not awaited): the same with
        each call deferred (``functools.partial``); ``None`` for anything else."""
        def local(call: Any) -> bool:
            return isinstance(call, cst.Call) and _dotted(call.func) in self.local_async

        if local(value):
            return self._partial(value) if value.args else value.func
        if isinstance(value, (cst.ListComp, cst.GeneratorExp)) and local(value.elt):
            elt: Any = value.elt
            return value.with_changes(elt=self._partial(elt) if elt.args else elt.func)
        if isinstance(value, cst.List) and value.elements and all(local(e.value) for e in value.elements):
            calls: list[Any] = [e.value for e in value.elements]
            return value.with_changes(elements=[e.with_changes(value=self._partial(c) if c.args else c.func)
                                                for e, c in zip(value.elements, calls)])  # fmt: skip
        return None

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
        targets = [_dotted(t.target) for t in updated.targets]
        if targets and all(t in self.deferred for t in targets):
            deferred = self._coroutines(updated.value)
            if deferred is not None:
                self.need.add("functools")
                return updated.with_changes(value=deferred)
        return updated

    def _is_task(self, expression: cst.BaseExpression) -> bool:
        """A task made here: its name, an element of a list of them (``tasks[0]``)."""
        if isinstance(expression, cst.Subscript):
            expression = expression.value
        return _dotted(expression) in self.tasks

    def _comprehension(self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp) -> None:
        # [await t for t in tasks]: the element is visited before its ``for``, so look ahead
        comp: cst.CompFor | None = node.for_in
        while comp is not None:
            self._element_of_tasks(comp.target, comp.iter)
            comp = comp.inner_for_in

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def visit_For(self, node: cst.For) -> None:
        self.notes.append([])
        self._element_of_tasks(node.target, node.iter)  # for t in tasks: await t

    def _element_of_tasks(self, target: cst.BaseExpression, iterated: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name) and _dotted(iterated) in self.tasks:
            self.tasks.add(target.value)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if isinstance(node.item, cst.Call) and _dotted(node.item.func) in _GROUPS and node.asname is not None:
            self.groups.add(_dotted(node.asname.name))

    def _makes_task(self, call: cst.Call) -> bool:
        loop, _, attr = _dotted(call.func).partition(".")
        return attr in _TASK_MAKERS and (loop in _LOOPS or loop in self.groups)

    def _known_awaitable(self, expression: cst.BaseExpression) -> bool:
        call = expression.func if isinstance(expression, cst.Call) else None
        if call is None:
            return False
        name = _dotted(call)
        last = name.rpartition(".")[2]
        return (
            name in self.local_async
            or name in self.sdk_names
            or (isinstance(call, cst.Attribute) and last in _SDK_METHODS)
            or name.startswith(("time.", "queue.", "threading.", "asyncio.", "anyio.", "trio.", "claude_sdkurl."))  # rewritten or marked
            or name.rpartition(".")[0] in self.primitives  # q.get() of a queue made here
        )

    # ---------------------------------------------------------- loop libraries

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        self.lines.leave(original)
        name = _dotted(updated.func)
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
            sleep = "claude_sdkurl.threads.sleep" if self.makes_tasks else "time.sleep"  # a cancel point
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
            self._mark(original, f"{name}() has no rewrite: replace it with its thread form")
        return updated

    def _passed_along(self, original: cst.Call, name: str) -> None:
        """An ``async def`` of the file made plain, passed (not called) to something that is
        not ours: if that calls it as a coroutine function (a framework's hook), it must stay
        async. Marked: the command cannot tell. A task group's ``start_soon``/``start`` always
        calls it so: handing a function of the file to a group not made here is marked too."""
        last = name.rpartition(".")[2]
        receiver = name.rpartition(".")[0]
        if last in _STARTS and original.args and original.args[0].keyword is None:
            handed = _handed(original.args[0].value)
            if receiver not in self.groups and handed in self.local_async:
                # (a group made here is a claude_sdkurl.threads.TaskGroup now: it takes plain functions)
                self._mark(original, f"{handed} is handed to {name}, a task group not made here: anyio and trio call it "
                                     "as a coroutine function on their event loop, and this code no longer runs there: "
                                     "keep this function and the one handed over async (the SDK's calls with "
                                     "asyncio.to_thread), or make the group here")  # fmt: skip
            return
        if name.startswith(("functools.", "claude_sdkurl.", "asyncio.", "anyio.", "trio.")) or last in ("create_task", "run"):
            return
        if name in self.sdk_names or name.partition(".")[0] in self.sdk_names:
            return  # the SDK takes plain functions wherever it took async ones
        if name in self.converted or (last in self.ported_elsewhere and last not in self.local_async):
            return  # a function of this program that the port made plain: it calls what it is given plainly too
        for arg in original.args:
            if isinstance(arg.value, cst.Name) and arg.value.value in self.converted and (arg.keyword is None or arg.keyword.value != "lifespan"):
                self._mark(original, f"{arg.value.value} is passed to {name or 'a call'}, which may call it as a coroutine "
                                     "function (a framework's hook): if so, keep it async and run its SDK calls with "
                                     "asyncio.to_thread")  # fmt: skip

    def _mark(self, original: cst.CSTNode, text: str) -> None:
        """A place left for a person, with its own words (see :meth:`_note` for the usual ones)."""
        self.todo.append((self._line(original), text))
        if self.notes:
            self.notes[-1].append(text)

    def _first_as_call(self, original: cst.Call, updated: cst.Call, func: str | None, advice: str) -> cst.Call:
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
        elif first is None or _dotted(first) not in self.tasks | self.deferred:
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
            if _dotted(value) in self.tasks | self.deferred:  # tasks made here, or calls deferred here
                out.append(arg)
            elif arg.star == "" and isinstance(value, cst.Call):
                out.append(arg.with_changes(value=self._partial(value)))
            elif arg.star == "*" and isinstance(value, (cst.ListComp, cst.GeneratorExp)) and isinstance(value.elt, cst.Call):
                out.append(arg.with_changes(value=value.with_changes(elt=self._partial(value.elt))))
            else:
                return None
        return out

    def _partial(self, call: cst.Call) -> cst.Call:
        first = cst.Arg(value=call.func, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if call.args else cst.MaybeSentinel.DEFAULT)
        return cst.Call(func=cst.parse_expression("functools.partial"), args=[first, *call.args])

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        name = _dotted(updated)
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
        if _dotted(items[0].item.func) not in ("asyncio.timeout", "anyio.fail_after"):
            return updated
        seconds = items[0].item.args[0].value if items[0].item.args else None
        body = list(updated.body.body)
        loops = [s for s in body if isinstance(s, cst.For)]
        plain = all(isinstance(s, cst.For) or not _has(s, cst.Await) for s in original.body.body)
        loop = loops[0] if len(loops) == 1 else None
        call: Any = loop.iter if loop is not None else None
        receiver = isinstance(call, cst.Call) and _dotted(call.func).rpartition(".")[2] in _RECEIVERS
        if seconds is None or not plain or not receiver or items[0].asname is not None or loop is None or call is None:
            self._note(original, "timeout", above=False)  # this statement's notes are written already
            mark = cst.EmptyLine(comment=cst.Comment(f"{MARK} {_ADVICE['timeout']}"))
            return updated.with_changes(leading_lines=_with_marks(updated.leading_lines, [mark]))
        timed = call.with_changes(args=[*_with_last_comma(call.args), cst.Arg(keyword=cst.Name("timeout"), value=seconds, equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))])
        new_body = [s.with_changes(iter=timed) if s is loop else s for s in body]
        first = new_body[0].with_changes(leading_lines=[*updated.leading_lines, *new_body[0].leading_lines])
        return cst.FlattenSentinel([first, *new_body[1:]])



def _with_marks(leading: Sequence[cst.EmptyLine], marks: Sequence[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """A statement's leading lines with the marks it does not carry already (a file ported
    twice keeps one of each)."""
    present = {line.comment.value for line in leading if line.comment is not None}
    return [*leading, *(m for m in marks if m.comment is not None and m.comment.value not in present)]


def _marks_in(source: str) -> list[tuple[int, str]]:
    """The marks a file carries already (ported before, and not yet seen to): ``(line, text)``."""
    found = []
    for number, line in enumerate(source.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith(MARK):
            found.append((number, stripped[len(MARK):].strip()))
    return found


def _with_last_comma(args: Sequence[Any]) -> list[Any]:
    if not args:
        return []
    return [*args[:-1], args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))]


def _has(node: Any, kind: Any) -> bool:
    found = []

    class Finder(cst.CSTVisitor):  
        def on_visit(self, n: Any) -> bool:
            if isinstance(n, kind):
                found.append(n)
            return not found

    node.visit(Finder())
    return bool(found)
