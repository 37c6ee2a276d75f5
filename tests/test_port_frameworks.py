"""The porting command and async frameworks: what the framework calls and awaits (a lifespan,
a websocket handler, middleware, a route that reads the request, what those hand to their own
task groups) stays async, with the SDK's blocking calls on a worker thread; other routes become
plain functions (FastAPI runs those on its thread pool); what the command cannot decide it
marks. A FastAPI service ported and served next to the original on the official SDK."""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest

from claude_sdkurl.port import port_source
from claude_sdkurl.testing import MockMessagesAPI, offline_env, text

from .test_port import _run, official_cli

SERVICE = Path(__file__).parent / "fixtures" / "fastapi_service.py"
WORKER = Path(__file__).parent / "fixtures" / "fastapi_worker.py"


def test_framework_hooks_stay_async_and_routes_become_plain() -> None:
    result = port_source(SERVICE.read_text(), "fastapi_service.py")
    out = result.after
    assert result.todo == [] and result.unsure == []
    assert "@asynccontextmanager\nasync def lifespan(app):" in out  # the framework enters it with async with
    assert "async with anyio.create_task_group() as tg:" in out and "async def heartbeat():" in out  # its own task group's work
    assert "await anyio.sleep(0.02)" in out
    assert "async with claude_sdkurl.threads.entered(ClaudeSDKClient(ClaudeAgentOptions())) as client:" in out
    assert "def ask(q: str):\n    return {\"answer\": answer(q)}" in out and "async def ask" not in out
    assert "def stream():\n        for message in client.receive_response():" in out
    assert "async def echo(request: Request):\n    body = await request.json()" in out  # reads the request: stays async
    assert 'await asyncio.to_thread(answer, body["q"])' in out


def test_hooks_of_other_frameworks_and_what_cannot_be_decided() -> None:
    result = port_source(textwrap.dedent(
        """
        import asyncio
        from starlette.middleware.base import BaseHTTPMiddleware
        from claude_agent_sdk import ClaudeSDKClient, query

        class Audit(BaseHTTPMiddleware):
            async def dispatch(self, request, call_next):
                async for m in query(prompt="audit"):
                    pass
                return await call_next(request)

        @app.websocket("/ws")
        async def talk(ws):
            await ws.accept()
            client = ClaudeSDKClient()
            await client.connect()
            await client.query(await ws.receive_text())
            async for m in client.receive_response():
                await ws.send_text(str(m))

        async def startup():
            await asyncio.sleep(0)

        app.add_event_handler("startup", startup)
        """
    ))
    out = result.after
    assert "async def dispatch(self, request, call_next):" in out
    assert "async for m in claude_sdkurl.threads.iterate(query(prompt=\"audit\")):" in out and "return await call_next(request)" in out
    assert "async def talk(ws):" in out and "await ws.accept()" in out
    assert "await asyncio.to_thread(client.connect)" in out and "await asyncio.to_thread(client.query, await ws.receive_text())" in out
    assert "async for m in claude_sdkurl.threads.iterate(client.receive_response()):" in out
    # a function of the file handed to something that may await it: marked, never "0 places left"
    assert "def startup():" in out and [t for _, t in result.todo if "startup is passed to app.add_event_handler" in t]


def test_what_a_lifespan_hands_its_task_group_stays_async() -> None:
    """A worker's method handed to ``start_soon``, a function handed to ``start`` and a
    ``functools.partial`` of one: anyio calls each as a coroutine function, so each stays async
    (made plain, anyio ran the worker inline and the service hung at its start)."""
    result = port_source(WORKER.read_text(), WORKER.name)
    out = result.after
    assert result.todo == [] and result.unsure == []
    assert "    async def run(self):\n" in out and "await anyio.sleep(0.01)" in out
    assert "async for message in claude_sdkurl.threads.iterate(query(prompt=prompt, options=ClaudeAgentOptions())):" in out
    assert "async def ticker(state, *, task_status=anyio.TASK_STATUS_IGNORED):" in out and "async def note(state, text):" in out
    assert "def submit(job_id: str, prompt: str):" in out and "async def submit" not in out  # a route: plain


def test_a_function_handed_to_a_task_group_made_elsewhere_is_marked() -> None:
    """A plain function now (it runs on a thread) cannot hand a coroutine function to an anyio
    group the lifespan made: marked, never "0 places left". To a group made here (a
    claude_sdkurl.threads.TaskGroup once ported) it runs as it is, ``start`` included."""
    result = port_source(textwrap.dedent(
        """
        import anyio
        from claude_agent_sdk import query

        async def job(prompt):
            async for m in query(prompt=prompt):
                pass

        async def ready(*, task_status=anyio.TASK_STATUS_IGNORED):
            task_status.started(1)

        @app.post("/later")
        async def later(prompt: str):
            app.state.tg.start_soon(job, prompt)

        async def now(prompt):
            async with anyio.create_task_group() as tg:
                tg.start_soon(job, prompt)
                await tg.start(ready)
        """
    ))
    marked = [t for _, t in result.todo]
    assert len(marked) == 1 and marked[0].startswith("job is handed to app.state.tg.start_soon, a task group not made here")
    out = result.after
    assert "with claude_sdkurl.threads.TaskGroup() as tg:\n        tg.start_soon(job, prompt)\n        tg.start(ready)" in out


@pytest.mark.realcli
@pytest.mark.parametrize("service", [SERVICE, WORKER], ids=["service", "worker"])
def test_a_ported_fastapi_service_answers_like_the_original(tmp_path: Path, service: Path) -> None:
    (tmp_path / "original").mkdir()
    (tmp_path / "ported").mkdir()
    shutil.copy(service, tmp_path / "original" / service.name)
    (tmp_path / "ported" / service.name).write_text(port_source(service.read_text(), service.name).after)
    cli = official_cli()
    outputs = []
    with MockMessagesAPI(lambda r: text(f"answer to: {r.last_user_text()}")) as api:
        home = tmp_path / "home"
        for side in ("original", "ported"):
            shutil.rmtree(home, ignore_errors=True)
            (home / "work").mkdir(parents=True)
            env = {**os.environ, **offline_env(api.url, home), "CLAUDE_SDKURL_CLI": str(cli)}
            outputs.append(_run(tmp_path / side / service.name, [], env, home / "work"))
    assert outputs[0] == outputs[1]
    assert outputs[1][1].splitlines() == EXPECTED[service]


EXPECTED = {
    SERVICE: [
        "{'answer': 'answer to: one'}",
        "answer to: two [success]",
        "answer to: three [success]",
        "{'answer': 'answer to: four', 'heartbeat': True}",
    ],
    WORKER: [
        "{'queued': 'a'}",
        "{'queued': 'b'}",
        "{'done': 'answer to: job a', 'ticker': 'ticking', 'notes': ['started']}",
        "{'done': 'answer to: job b', 'ticker': 'ticking', 'notes': ['started']}",
        "ticked",
    ],
}
