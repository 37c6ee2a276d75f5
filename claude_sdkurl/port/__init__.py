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
``anyio.create_task_group()``,              ``create_task`` as above, ``start_soon`` and
                                           ``start`` as they are)
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
loop code as it was (what they hand a task group with ``start_soon``/``start``, a worker's method or
a ``functools.partial`` included); in there the SDK's blocking calls run on a worker thread
(``await asyncio.to_thread(client.query, p)``, ``async for m in
claude_sdkurl.threads.iterate(...)``, ``async with claude_sdkurl.threads.entered(client)``).
Other routes become plain functions, which FastAPI and Starlette run on their thread pool. An
``async def`` of the file passed, uncalled, to something that is not ours (it may await it) is
marked, as is one handed to a task group this code did not make; passed to a function of the
program ported in the same run (``ported_elsewhere``), it is not.

Marks stay until a person removes them: a file that carries one counts as left to port
(``--check`` exits 1), and porting it again writes none twice.

Threads are cancelled cooperatively (see :mod:`claude_sdkurl.threads`): a cancelled task stops
at its next sleep, task wait or message read.

What is not rewritten, because no rewrite is safe without reading the program: a task,
``wait_for`` or ``gather`` of a coroutine made before that line (it has already run in the
port), other ``asyncio``/``anyio``/``trio`` calls,
``claude_agent_sdk._internal``, and an ``asyncio.timeout`` around anything else.
Each such place keeps its code and gets a ``# claude_sdkurl.port:`` comment that
says what to do (the concurrency recipes, docs/guide/concurrency.md, show the thread forms), and
the summary lists it. An ``await`` is always removed; one whose target is not an
SDK call, a function of the file or a rewritten primitive is listed too, since it
may be another library's coroutine that needs its synchronous client.

The package: ``_ported`` (what a port gives back; no ``libcst``), ``_find`` (what a program is
made of: its async defs, its framework hooks), ``_rewrite`` (the rewrites, :func:`port_source`),
``_imports`` (the import fix-up), ``_command`` (the command and file handling). ``libcst`` is
imported at the top of the modules that use it; only the command and :func:`port_source` here
deal with it missing.
"""

from __future__ import annotations

from typing import Any

from ._command import main
from ._ported import MARK, PortError, Ported

__all__ = ["MARK", "PortError", "Ported", "main", "port_source"]


def port_source(source: str, path: str = "<string>", ported_elsewhere: frozenset[str] = frozenset()) -> Ported:
    """Port one program's text (see the module doc). :class:`PortError` if it does not parse,
    or is more than the parsers can take (nested too deep, too large). Needs ``libcst``.
    ``ported_elsewhere``: the ``async def`` names of the other files of the same program, ported
    with it (the command passes them). Marks left by an earlier port count in ``todo`` again,
    and are never written twice."""
    try:
        from ._rewrite import port_source as port
    except ImportError as missing:  # the optional extra
        raise ImportError("claude_sdkurl.port needs libcst: pip install 'claude-sdkurl[port]'") from missing
    result: Any = port(source, path, ported_elsewhere)
    return result  # type: ignore[no-any-return]
