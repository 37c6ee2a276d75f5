"""The porting command and the user's files, the hostile cases: a write cut short, a file it
may not write, input Python's parser cannot take, a declared encoding, a symlink loop. Each
file is ported whole or left as it was, and one bad file never stops the others."""

from __future__ import annotations

import os
import resource
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl.port import main, port_source

PROGRAM = textwrap.dedent(
    """\
    import asyncio
    from claude_agent_sdk import query


    async def main():
        async for message in query(prompt="hi"):
            print(message)
        await asyncio.sleep(0)


    asyncio.run(main())
    """
)


def _big_program(lines: int) -> str:
    body = "".join(f"    x{i} = {i}  # filler line {i} to make the file large\n" for i in range(lines))
    return PROGRAM.replace("async def main():\n", "async def main():\n" + body)


def _port_with_file_size_limit(path: Path, limit: int) -> subprocess.CompletedProcess[str]:
    """``python -m claude_sdkurl.port -w path`` in a child whose files may not grow past ``limit``
    bytes (``RLIMIT_FSIZE``: what a full disk does to a write, cut short)."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([sys.executable, "-m", "claude_sdkurl.port", "-w", str(path)], preexec_fn=cap,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_a_write_cut_short_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    original = _big_program(1000)
    assert len(original.encode()) > 40_000
    app.write_text(original)
    done = _port_with_file_size_limit(app, 8192)
    assert done.returncode == 2, done.stderr
    assert app.read_text() == original  # not its first 8,192 bytes
    assert f"{app}: not written" in done.stderr and "File too large" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.py"]  # no temporary file left


def test_a_read_only_file_is_reported_and_the_others_are_ported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, locked, last = (tmp_path / f"{n}.py" for n in ("a", "b", "c"))
    for f in (first, locked, last):
        f.write_text(PROGRAM)
    locked.chmod(0o444)
    assert main(["-w", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{locked}: not written: the file is read-only" in err
    assert locked.read_text() == PROGRAM and stat.S_IMODE(locked.stat().st_mode) == 0o444
    assert "claude_agent_sdk" not in first.read_text() and "claude_agent_sdk" not in last.read_text()
    assert "2 file(s) written" in err


def test_the_mode_of_a_written_file_is_kept_and_a_symlink_stays_a_symlink(tmp_path: Path) -> None:
    script = tmp_path / "tool.py"
    script.write_text("#!/usr/bin/env python3\n" + PROGRAM)
    script.chmod(0o751)
    link = tmp_path / "link_to_tool.py"
    link.symlink_to(script.name)
    assert main(["-w", str(link)]) == 0
    assert link.is_symlink() and "claude_sdkurl" in script.read_text()
    assert stat.S_IMODE(script.stat().st_mode) == 0o751


def test_input_the_parser_cannot_take_is_named_and_the_rest_goes_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "deep.py"
    deep.write_text("import asyncio\nx = " + "+".join(["1"] * 50_000) + "\n")
    unary = tmp_path / "unary.py"
    unary.write_text("import asyncio\nx = " + "-" * 200_000 + "1\n")
    binary = tmp_path / "binary.py"
    binary.write_bytes(b"import asyncio\nx = '\xff\xfe'\n")
    good = tmp_path / "good.py"
    good.write_text(PROGRAM)
    before = {p: p.read_bytes() for p in (deep, unary, binary)}
    assert main(["-w", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    for p in (deep, unary, binary):
        assert p.read_bytes() == before[p]
        lines = [line for line in err.splitlines() if str(p) in line]
        assert len(lines) == 1, err  # one line naming the file
    assert "Traceback" not in err
    assert "can't decode" in err or "decode" in err
    assert "claude_sdkurl" in good.read_text()


def test_a_declared_encoding_is_read_and_written_in_that_encoding(tmp_path: Path) -> None:
    app = tmp_path / "latin.py"
    source = "# -*- coding: latin-1 -*-\n" + PROGRAM.replace('"hi"', '"café"')
    app.write_bytes(source.encode("latin-1"))
    assert main(["-w", str(app)]) == 0
    data = app.read_bytes()
    assert "café".encode("latin-1") in data and "café".encode() not in data
    assert "claude_sdkurl" in data.decode("latin-1")
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + PROGRAM.encode())
    assert main(["-w", str(bom)]) == 0
    assert bom.read_bytes().startswith(b"\xef\xbb\xbf") and b"claude_sdkurl" in bom.read_bytes()


def test_a_symlink_loop_is_named_and_the_rest_goes_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "loop.py").symlink_to("loop.py")
    sub = tmp_path / "pkg"
    sub.mkdir()
    (sub / "again").symlink_to("..")  # a directory loop: walked once
    good = sub / "good.py"
    good.write_text(PROGRAM)
    assert main(["-w", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'loop.py'}: cannot read" in err and "Traceback" not in err
    assert "claude_sdkurl" in good.read_text()


def test_a_comment_above_a_removed_import_is_kept() -> None:
    source = textwrap.dedent(
        """\
        # %% [cell 1] setup
        # the loop library, used below
        import asyncio
        # %% [cell 2] run
        from claude_agent_sdk import query


        async def main():
            await asyncio.sleep(1)


        asyncio.run(main())
        """
    )
    after = port_source(source).after
    assert "import asyncio" not in after
    assert "# %% [cell 1] setup\n# the loop library, used below\n" in after
    assert after.index("# %% [cell 1]") < after.index("# %% [cell 2]")


def test_a_long_module_is_ported_whole() -> None:
    # (its time per MB is bench/bench_port_size.py's: the old import fixer walked the module
    # once per top-level statement)
    source = "import asyncio\n" + "".join(f"v{i} = {i}\n" for i in range(3000)) + "asyncio.run(main())\n"
    after = port_source(source).after
    assert after.endswith("v2999 = 2999\nmain()\n") and "import asyncio" not in after


def test_nothing_is_written_without_w(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text(PROGRAM)
    mtime = os.stat(app).st_mtime_ns
    assert main([str(app)]) == 0
    assert app.read_text() == PROGRAM and os.stat(app).st_mtime_ns == mtime


def test_a_file_of_notebook_cells_keeps_every_cell_header() -> None:
    """The official example of IPython cells: removing ``import asyncio`` from the second cell
    keeps that cell's header (before, the header went with the import and two cells merged)."""
    from .test_official_suite import official_tests

    source = (official_tests().parent / "examples" / "streaming_mode_ipython.py").read_text()
    after = port_source(source, "streaming_mode_ipython.py").after
    headers = [line for line in source.splitlines() if line.startswith("# ")]
    assert len(headers) > 10
    ported = [line for line in after.splitlines() if line.startswith("# ") and not line.startswith("# claude_sdkurl.port:")]
    assert ported == headers  # every comment line, in order
    assert "import asyncio" not in after.split("STREAMING WITH REAL-TIME DISPLAY")[1].split("# ====")[1]
    assert "\n\n\n\nfrom claude_sdkurl import" not in after  # no run of blank lines where the import was


CANCEL_ON_DISCONNECT = textwrap.dedent(
    """\
    import asyncio


    async def stream():
        me = asyncio.current_task()

        async def client_gone():
            await asyncio.sleep(0.2)
            print("client went away")
            me.cancel()

        watcher = asyncio.create_task(client_gone())
        print("streaming")
        try:
            await asyncio.sleep(30)  # a long answer being streamed
            print("finished")
        except asyncio.CancelledError:
            print("stopped streaming")
        await watcher
        print("done")


    asyncio.run(stream())
    """
)


def test_a_cancel_on_disconnect_with_current_task_runs_like_the_original(tmp_path: Path) -> None:
    result = port_source(CANCEL_ON_DISCONNECT)
    assert result.todo == [] and "claude_sdkurl.threads.current_task()" in result.after
    assert _both(tmp_path, CANCEL_ON_DISCONNECT, result.after) == "streaming\nclient went away\nstopped streaming\ndone\n"


def _both(tmp_path: Path, original: str, ported: str) -> str:
    """Run the original program and its port; both must succeed and print the same: that output."""
    outputs = []
    for name, source in (("original.py", original), ("ported.py", ported)):
        (tmp_path / name).write_text(source)
        outputs.append(subprocess.run([sys.executable, str(tmp_path / name)], capture_output=True, text=True, timeout=60))
    assert [o.returncode for o in outputs] == [0, 0], outputs[1].stderr
    assert outputs[0].stdout == outputs[1].stdout
    return outputs[1].stdout


DEFERRED = textwrap.dedent(
    """\
    import asyncio
    import threading

    started = []
    lock = threading.Lock()


    async def worker(x):
        started.append(x)
        await asyncio.sleep(0.3)
        return x * 2


    async def main():
        coros = [worker(x) for x in range(4)]  # made now, run when gathered
        print("made", started)
        print(await asyncio.gather(*coros))
        one = worker(5)
        print(await one)
        pair = [worker(1), worker(2)]
        task = asyncio.create_task(worker(7))
        print(await asyncio.gather(*pair), await task)


    coro = main()
    asyncio.run(coro)
    """
)


def test_coroutines_made_now_and_awaited_later_run_like_the_original(tmp_path: Path) -> None:
    """Coroutines built in a list and gathered later, one awaited later, one run by
    asyncio.run: each becomes a deferred call that runs when awaited or gathered (before, the
    workers ran one by one where the list was built, then gather raised TypeError)."""
    result = port_source(DEFERRED)
    assert result.todo == [] and result.unsure == []
    assert "coros = [functools.partial(worker, x) for x in range(4)]" in result.after
    assert "claude_sdkurl.threads.gather(*coros)" in result.after and "print(one())" in result.after
    assert _both(tmp_path, DEFERRED, result.after) == "made []\n[0, 2, 4, 6]\n10\n[2, 4] 14\n"


GROUP_TASKS = textwrap.dedent(
    """\
    import asyncio


    async def f(x):
        await asyncio.sleep(0.05)
        return x * 10


    async def main():
        tg = asyncio.TaskGroup()  # made apart from its async with
        async with tg:
            t = tg.create_task(f(1))
        print(await t)
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(f(i)) for i in range(3)]
        print([await one for one in tasks])
        print(await tasks[0])
        for one in tasks:
            print(await one)


    asyncio.run(main())
    """
)


def test_tasks_of_a_task_group_are_awaited_as_tasks(tmp_path: Path) -> None:
    """``await t`` of a task from a task group made apart from its ``async with``, of an element
    of a list of tasks (a comprehension, an index, a loop): ``t.result()`` (before: the task
    object itself was printed, silently, and a group assigned apart ran its calls at once)."""
    result = port_source(GROUP_TASKS)
    assert result.unsure == [] and result.todo == []
    assert _both(tmp_path, GROUP_TASKS, result.after) == "10\n[0, 10, 20]\n0\n0\n10\n20\n"


def test_the_lines_reported_are_libcsts_positions(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lines of marks and removed awaits come from Python's own tree by the order of the
    text (a tenth of the cost of libcst's positions): on the official package's examples and
    tests and on anyio's sources (async code of every shape: f-strings, chained calls,
    decorators, nested awaits) each equals libcst's position of the same node."""
    import anyio
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from claude_sdkurl.port import _rewrite

    from .test_official_suite import official_tests

    compared: list[tuple[int, int]] = []
    resolve = _rewrite._Lines.resolve

    def checked(self: Any) -> None:
        resolve(self)
        positions = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)
        compared.extend((line[0], positions[node].start.line) for line, node, _ in self.asked)

    monkeypatch.setattr(_rewrite._Lines, "resolve", checked)
    sdist = official_tests().parent
    # every other official test file and every third of anyio's (largest first) hold the shapes
    # at a third of the time (34 s all of them, on 2 cores)
    theirs = sorted(Path(anyio.__file__).parent.rglob("*.py"), key=lambda p: (-p.stat().st_size, str(p)))[::3]
    files = [*sorted((sdist / "examples").glob("*.py")), *sorted(official_tests().glob("*.py"))[::2], *theirs]
    for path in files:
        port_source(path.read_text(encoding="utf-8"), str(path))
    assert len(compared) > 500
    assert [pair for pair in compared if pair[0] != pair[1]] == []


APP = """
from claude_agent_sdk import query
from helpers import later
from steps import step


async def on_message(text):
    async for message in query(prompt=text):
        print(message)


async def main():
    await step(on_message)
    await later(on_message)
"""

HELPERS = """
async def later(callback):
    # a helper of the program's own: async, but neither the SDK nor a loop library
    await callback("hello")
"""

STEPS = """
import asyncio


async def step(callback):
    await asyncio.sleep(0)
    await callback("hi")
"""


def test_a_function_handed_to_a_helper_file_the_command_leaves_alone_is_marked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 57, item 16: helpers.py has ``async def``s but uses neither the SDK nor a loop
    library, so the command leaves it as it is, async: a function of app.py handed to it (which
    will await it) is marked for a person. Handed to steps.py, ported in the same run (it uses
    asyncio), it is not: steps.step is made plain there too."""
    for name, text in (("app.py", APP), ("helpers.py", HELPERS), ("steps.py", STEPS)):
        (tmp_path / name).write_text(text)
    assert main([str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "1 place(s) left for you" in err, err
    (left,) = [line for line in err.splitlines() if " is passed to " in line]
    assert "app.py:14: on_message is passed to later," in left, left  # the helper's call, not step's
