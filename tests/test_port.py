"""The porting command, ``python -m claude_sdkurl.port``: each rewrite, bad input, and the
official package's own examples ported with no hand edit and run next to the originals on
the same real CLI and mock model, their output compared line for line."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from claude_sdkurl.port import MARK, PortError, main, port_source
from claude_sdkurl.testing import STDIO_CLI_VERSION, MockMessagesAPI, install_cli, offline_env, text

from .test_official_suite import official_tests


def port(code: str) -> str:
    return port_source(textwrap.dedent(code)).after


def test_imports_and_names() -> None:
    out = port(
        """
        import claude_agent_sdk
        import claude_agent_sdk as sdk
        from claude_agent_sdk import query, ClaudeAgentOptions
        from claude_agent_sdk.types import HookMatcher
        from claude_agent_sdk.testing import run_session_store_conformance
        print(claude_agent_sdk.__name__, sdk.query)
        """
    )
    assert "claude_agent_sdk" not in out
    assert "import claude_sdkurl as sdk" in out and "from claude_sdkurl.types import HookMatcher" in out
    assert "print(claude_sdkurl.__name__, sdk.query)" in out


def test_async_syntax_and_entry_points() -> None:
    out = port(
        """
        import asyncio, sys
        import anyio
        from claude_agent_sdk import ClaudeSDKClient, query

        async def main(n):
            # a comment that stays
            async with ClaudeSDKClient() as client:
                await client.query("hi")
                async for m in client.receive_response():
                    print(m)
            texts = [m async for m in query(prompt="x")]
            await asyncio.sleep(0.5)
            await anyio.sleep(1)

        if __name__ == "__main__":
            asyncio.run(main(1))
            anyio.run(main, 2)
        """
    )
    assert "async" not in out and "await" not in out
    assert "import asyncio" not in out and "import anyio" not in out and "import time" in out
    assert "# a comment that stays" in out and "import sys" in out
    assert "time.sleep(0.5)" in out and "time.sleep(1)" in out
    assert "main(1)" in out and "main(2)" in out
    assert "with ClaudeSDKClient() as client:" in out and "texts = [m for m in query(prompt=\"x\")]" in out
    compile(out, "ported", "exec")


def test_a_timeout_around_one_receiver_becomes_its_timeout() -> None:
    out = port(
        """
        import asyncio
        async def f(client):
            try:
                async with asyncio.timeout(3.0):
                    async for msg in client.receive_response():
                        print(msg)
            except asyncio.TimeoutError:
                print("late")
        """
    )
    assert "for msg in client.receive_response(timeout=3.0):" in out
    assert "except TimeoutError:" in out and "asyncio" not in out
    compile(out, "ported", "exec")


def test_async_context_managers_and_iterators_become_plain_ones() -> None:
    out = port(
        """
        import contextlib
        from contextlib import asynccontextmanager, AsyncExitStack
        from claude_agent_sdk import ClaudeSDKClient

        @asynccontextmanager
        async def session():
            async with ClaudeSDKClient() as client:
                yield client

        class Wrapper:
            async def __aenter__(self):
                return self
            async def __aexit__(self, *exc):
                return None
            def __aiter__(self):
                return self
            async def __anext__(self):
                raise StopAsyncIteration

        async def main():
            async with AsyncExitStack() as stack:
                client = await stack.enter_async_context(session())
            async with contextlib.asynccontextmanager(lambda: None)():
                pass
        """
    )
    assert "async" not in out.replace("asynccontextmanager", "X") and "asynccontextmanager" not in out
    assert "from contextlib import contextmanager, ExitStack" in out and "@contextmanager" in out
    for name in ("__enter__", "__exit__", "__iter__", "__next__", "raise StopIteration", "stack.enter_context(session())"):
        assert name in out
    compile(out, "ported", "exec")


def test_gather_runs_the_calls_at_once_on_threads() -> None:
    out = port(
        """
        import asyncio
        from claude_agent_sdk import query

        async def ask(p, n=1):
            return [m async for m in query(prompt=p)]

        async def main(prompts):
            one, two = await asyncio.gather(ask("a"), ask("b", n=2))
            many = await asyncio.gather(*[ask(p) for p in prompts], return_exceptions=True)
            made = [ask(p) for p in prompts]
            left = await asyncio.gather(*made)
        """
    )
    assert "claude_sdkurl.threads.gather(functools.partial(ask, \"a\"), functools.partial(ask, \"b\", n=2))" in out
    assert "claude_sdkurl.threads.gather(*[functools.partial(ask, p) for p in prompts], return_exceptions=True)" in out
    assert "asyncio.gather(*made)" in out and MARK in out  # coroutines made earlier: marked
    assert "import functools" in out and "import claude_sdkurl.threads" in out
    compile(out, "ported", "exec")


def test_threads_gather_is_asyncio_gather_for_calls() -> None:
    import time as time_

    from claude_sdkurl.threads import gather

    started = time_.monotonic()
    assert gather(lambda: time_.sleep(0.3) or 1, lambda: time_.sleep(0.3) or 2) == [1, 2]
    assert time_.monotonic() - started < 0.55  # at once, not one by one
    boom = ValueError("boom")

    def fail() -> None:
        raise boom

    assert gather(lambda: 1, fail, return_exceptions=True) == [1, boom]
    with pytest.raises(ValueError, match="boom"):
        gather(lambda: time_.sleep(0.2), fail)
    assert gather() == []


def test_primitives_become_queue_and_threading() -> None:
    out = port(
        """
        import asyncio
        async def f():
            q = asyncio.Queue()
            done = asyncio.Event()
            lock = asyncio.Lock()
            async with lock:
                await q.put(1)
            await done.wait()
        """
    )
    assert "q = queue.Queue()" in out and "threading.Event()" in out and "threading.Lock()" in out
    assert "import queue" in out and "import threading" in out and "with lock:" in out


def test_what_has_no_safe_rewrite_is_marked_and_listed() -> None:
    result = port_source(
        textwrap.dedent(
            """
            import asyncio
            from claude_agent_sdk._internal.query import Query
            async def f(client, other):
                task = asyncio.create_task(client.query("x"))
                results = await asyncio.gather(*pending)
                async with asyncio.timeout(2):
                    await other.fetch()
                    await other.fetch()
                await other.thing()
                box = asyncio.Queue()
                await box.get()
                await other.get()
            """
        )
    )
    out = result.after
    assert out.count(MARK) == 4, out  # _internal, create_task, gather, the timeout around other calls
    assert "asyncio.create_task" in out and "asyncio.gather(*pending)" in out  # left as they were
    assert [line for line, _ in result.todo] == [3, 5, 6, 7]
    # a queue made here is known; another object's get() may be another library's coroutine
    assert {t for _, t in result.unsure} == {"other.fetch()", "other.thing()", "other.get()"}


def test_nothing_to_port_is_left_alone_and_porting_twice_changes_nothing(tmp_path: Path) -> None:
    plain = "import os\nprint(os.getcwd())\n"
    assert port_source(plain).after == plain and not port_source(plain).changed
    source = official_tests().parent / "examples" / "quick_start.py"
    once = port_source(source.read_text()).after
    assert port_source(once).after == once


def test_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = tmp_path / "app.py"
    app.write_text("import asyncio\nasync def main():\n    await asyncio.sleep(0)\nasyncio.run(main())\n")
    assert main(["--check", str(app)]) == 1
    assert main([str(app)]) == 0 and "+    time.sleep(0)" in capsys.readouterr().out
    assert app.read_text().startswith("import asyncio")  # a diff only: nothing written
    assert main(["-w", str(tmp_path)]) == 0 and "time.sleep(0)" in app.read_text()
    assert main(["--check", str(app)]) == 0
    broken = tmp_path / "broken.py"
    broken.write_text("async def f(:\n    pass\n")
    assert main(["-w", str(broken)]) == 2
    assert "broken.py:1:" in capsys.readouterr().err and broken.read_text() == "async def f(:\n    pass\n"
    with pytest.raises(PortError, match="x.py:1"):
        port_source("def (:", "x.py")


# ---------------------------------------------------------------- the official examples

WITH_TODOS = {"streaming_mode.py", "streaming_mode_ipython.py"}  # asyncio tasks: marked, listed


def test_every_official_example_ports(tmp_path: Path) -> None:
    examples = sorted((official_tests().parent / "examples").glob("*.py"))
    assert len(examples) >= 15
    left = set()
    for source in examples:
        result = port_source(source.read_text(), source.name)
        compile(result.after, source.name, "exec")
        assert not re.search(r"^\s*(from|import) claude_agent_sdk", result.after, re.M), source.name
        code = [line for line in result.after.splitlines() if not line.lstrip().startswith("#")]
        if result.todo:
            left.add(source.name)
        else:
            assert not any(re.search(r"\b(await|async)\b", line) and '"""' not in line for line in code
                           if not re.search(r"""["'].*\b(async|await)\b.*["']""", line)), source.name  # fmt: skip
    assert left == WITH_TODOS


# (example, argv): the ones that need no person (tool_permission_callback asks on stdin) and
# no second model (the mock answers text; trio's original needs trio, not installed here).
RUNS = [
    ("quick_start.py", []),
    ("system_prompt.py", []),
    ("tools_option.py", []),
    ("max_budget_usd.py", []),
    ("include_partial_messages.py", []),
    ("stderr_callback_example.py", []),
    ("streaming_mode.py", ["basic_streaming"]),
    ("streaming_mode.py", ["multi_turn_conversation"]),
    ("streaming_mode.py", ["error_handling"]),
    ("hooks.py", ["UserPromptSubmit"]),
]


def _answer(request: object) -> object:
    last = request.last_user_text()  # type: ignore[attr-defined]
    return text(f"answer to: {last[:40]}")


def _run(script: Path, argv: list[str], env: dict[str, str], work: Path) -> tuple[int, str, str]:
    """Exit code, output and the error it ended with (its last stderr line, package names
    taken out), with what differs from run to run masked (session ids, durations, the CLI's pid, the mock's response numbers)."""
    done = subprocess.run([sys.executable, str(script), *argv], cwd=work, env=env, capture_output=True, text=True, timeout=120)
    out = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>", done.stdout)
    out = re.sub(r"\b(duration_ms|duration_api_ms|ms)\b\W+\d+", r"\1 <n>", out)
    out = re.sub(r"cc-socks/\d+\.sock", "cc-socks/<pid>.sock", out)  # the CLI's pid
    out = re.sub(r"msg_mock_\d+", "msg_mock_<n>", out)  # the mock numbers responses across both runs
    last = done.stderr.strip().splitlines()[-1] if done.returncode and done.stderr.strip() else ""
    return done.returncode, out, re.sub(r"\b(claude_agent_sdk|claude_sdkurl)\.(_errors\.)?", "", last)


@pytest.mark.realcli
@pytest.mark.parametrize(("name", "argv"), RUNS, ids=[f"{n}{' ' + a[0] if a else ''}" for n, a in RUNS])
def test_a_ported_example_behaves_like_the_original(name: str, argv: list[str], tmp_path: Path) -> None:
    source = official_tests().parent / "examples" / name
    (tmp_path / "original").mkdir()
    (tmp_path / "ported").mkdir()
    shutil.copy(source, tmp_path / "original" / name)
    (tmp_path / "ported" / name).write_text(port_source(source.read_text(), name).after)
    cli = install_cli(STDIO_CLI_VERSION)  # the official package bundles this same version
    outputs = []
    with MockMessagesAPI(_answer) as api:
        home = tmp_path / "home"  # one path for both runs, made afresh: the CLI prints its cwd
        for side in ("original", "ported"):
            shutil.rmtree(home, ignore_errors=True)
            (home / "work").mkdir(parents=True)
            env = {**os.environ, **offline_env(api.url, home), "CLAUDE_SDKURL_CLI": str(cli)}
            outputs.append(_run(tmp_path / side / name, argv, env, home / "work"))
    assert outputs[0] == outputs[1]
    assert outputs[1][1].strip()
    if name in ("quick_start.py", "system_prompt.py", "streaming_mode.py"):
        assert "answer to:" in outputs[1][1]


GATHERING = '''
import asyncio
from claude_agent_sdk import ResultMessage, query


async def answer(prompt):
    async for message in query(prompt=prompt):
        if isinstance(message, ResultMessage):
            return message.result


async def main():
    print(await asyncio.gather(*[answer(p) for p in ["one", "two", "three"]]))


asyncio.run(main())
'''


@pytest.mark.realcli
def test_a_ported_gather_runs_like_the_original(tmp_path: Path) -> None:
    (tmp_path / "original.py").write_text(GATHERING)
    (tmp_path / "ported.py").write_text(port_source(GATHERING).after)
    assert "claude_sdkurl.threads.gather" in (tmp_path / "ported.py").read_text()
    cli = install_cli(STDIO_CLI_VERSION)
    outputs = []
    with MockMessagesAPI(_answer) as api:
        for name in ("original.py", "ported.py"):
            home = tmp_path / f"home-{name}"
            (home / "work").mkdir(parents=True)
            env = {**os.environ, **offline_env(api.url, home), "CLAUDE_SDKURL_CLI": str(cli)}
            outputs.append(_run(tmp_path / name, [], env, home / "work"))
    assert outputs[0] == outputs[1] and outputs[1][0] == 0
    assert "['answer to: one', 'answer to: two', 'answer to: three']" in outputs[1][1]
