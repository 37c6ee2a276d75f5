"""What a program pays before the CLI even starts: the package imports each public name when it
is first asked for, and a one-query program loads neither asyncio, attrs nor OpenTelemetry
(issue 33: a whole one-query program within 1.1x of the same work driven by hand; see
``bench/bench_program.py``). Each program runs in a fresh interpreter: this process has
imported everything long ago."""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import claude_sdkurl
from claude_sdkurl.testing import MockMessagesAPI, STDIO_CLI_VERSION, install_cli, offline_env, text


def fresh(code: str, env: dict[str, str] | None = None, cwd: str | None = None) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


OURS = "import sys; print(sorted(m for m in sys.modules if m == 'claude_sdkurl' or m.startswith('claude_sdkurl.')))"


def test_importing_the_package_loads_only_the_package() -> None:
    loaded = json.loads(fresh("import json, claude_sdkurl; " + OURS.replace("print(", "print(json.dumps(")[:-1] + "))"))
    # (_shown: where display registers how the types show themselves; the package says how to load it)
    assert loaded == ["claude_sdkurl", "claude_sdkurl._shown", "claude_sdkurl._version"]


def test_every_public_name_is_the_object_of_its_home_module() -> None:
    """The lazy table and the names the type checker sees (the ``TYPE_CHECKING`` imports) agree:
    each name of ``__all__`` is there, ``from claude_sdkurl import *`` gives them all, and a name
    not exported is an AttributeError."""
    code = (
        "import claude_sdkurl, importlib\n"
        "ns = {}\nexec('from claude_sdkurl import *', ns)\n"
        "missing = [n for n in claude_sdkurl.__all__ if n not in ns]\n"
        "homes = {}\n"
        "for n in claude_sdkurl.__all__:\n"
        "    v = getattr(claude_sdkurl, n)\n"
        "    homes[n] = getattr(v, '__module__', None) if not isinstance(v, type(claude_sdkurl)) else v.__name__\n"
        "print(missing, sorted(set(claude_sdkurl.__all__) - set(dir(claude_sdkurl))))\n"
        "try:\n    claude_sdkurl.not_a_name\nexcept AttributeError as e:\n    print(e)\n"
    )
    out = fresh(code).splitlines()
    assert out[0] == "[] []"
    assert out[1] == "module 'claude_sdkurl' has no attribute 'not_a_name'"


@pytest.mark.parametrize("package", ["claude_sdkurl", "claude_sdkurl.sessions"])
def test_the_names_the_type_checker_reads_are_the_ones_served(package: str) -> None:
    """A lazy package's ``TYPE_CHECKING`` imports (what mypy and editors read) name exactly its
    ``__all__``, and each is the object the package hands out at run time."""
    module = importlib.import_module(package)
    assert module.__file__ is not None
    tree = ast.parse(Path(module.__file__).read_text())
    [checking] = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    seen = {}
    for node in checking.body:
        assert isinstance(node, ast.ImportFrom) and node.level >= 1
        for alias in node.names:
            if node.module is None:  # from . import client
                seen[alias.name] = importlib.import_module(f"{package}.{alias.name}")
            else:
                home = importlib.import_module("." * node.level + node.module, package)
                seen[alias.name] = getattr(home, alias.name)
    assert sorted(seen) == sorted(set(module.__all__) - {"__version__"})
    for name, value in seen.items():
        assert getattr(module, name) is value, name


@pytest.mark.parametrize("order", ["module first", "function first"])
def test_query_and_prewarm_stay_functions_whatever_imports_their_modules(order: str) -> None:
    """``claude_sdkurl.query`` and ``claude_sdkurl.prewarm`` are functions defined in modules of
    the same names; importing those modules (as our own code does, lazily) must not put the
    module in the function's place."""
    steps = ["import claude_sdkurl.query, claude_sdkurl.prewarm", "from claude_sdkurl import query, prewarm"]
    if order == "function first":
        steps.reverse()
    code = (
        "import sys, claude_sdkurl\n" + "\n".join(steps) + "\n"
        "import claude_sdkurl.client, claude_sdkurl.spares, claude_sdkurl.approvals\n"
        "print(type(claude_sdkurl.query).__name__, type(claude_sdkurl.prewarm).__name__,\n"
        "      type(sys.modules['claude_sdkurl.query']).__name__, type(sys.modules['claude_sdkurl.prewarm']).__name__)\n"
    )
    assert fresh(code).split() == ["function", "function", "module", "module"]


def test_the_launch_environment_does_not_import_opentelemetry_for_a_program_without_it() -> None:
    """No span can be active in a program that never loaded OpenTelemetry: its context is not
    asked (35 ms of import), and an inherited trace context stays as it is, as the official SDK
    leaves it when no span is active."""
    code = (
        "import sys\nfrom claude_sdkurl import ClaudeAgentOptions\nfrom claude_sdkurl._engine.cli import build_env\n"
        "env = build_env(ClaudeAgentOptions())\n"
        "print(env.get('TRACEPARENT'), env.get('TRACESTATE'), sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    pytest.importorskip("opentelemetry.propagate")  # the test extra installs it: the import must be avoidable
    env = {**os.environ, "TRACEPARENT": "00-inherited-0000000000000001-01", "TRACESTATE": "k=v"}
    assert fresh(code, env).split() == ["00-inherited-0000000000000001-01", "k=v", "[]"]


ONE_QUERY = {
    "query": (
        "from claude_sdkurl import ClaudeAgentOptions, ResultMessage, query\n"
        "for m in query('hi', ClaudeAgentOptions(cli_path=os.environ['CLI'])):\n"
        "    if isinstance(m, ResultMessage):\n        print(m.result)\n"
    ),
    "client": (
        "from claude_sdkurl import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage\n"
        "with ClaudeSDKClient(ClaudeAgentOptions(cli_path=os.environ['CLI'])) as client:\n"
        "    client.query('hi')\n"
        "    for m in client.receive_response():\n"
        "        if isinstance(m, ResultMessage):\n            print(m.result)\n"
    ),
}


def one_query_program(tmp_path: Path, before: str = "", after: str = "", program: str = "query") -> list[str]:
    """Run a one-query program (``query()`` or a client) on the real CLI in a fresh interpreter
    (``before`` runs ahead of its imports, ``after`` once the answer is printed); check its answer
    and its one model call, and return the lines ``after`` printed."""
    with MockMessagesAPI() as api:
        api.enqueue(text("pong"))
        (tmp_path / "work").mkdir()
        env = {**os.environ, **offline_env(api.url, tmp_path), "CLI": str(install_cli(STDIO_CLI_VERSION))}
        code = f"import os, sys\n{before}{ONE_QUERY[program]}{after}"
        answer, *printed = fresh(code, env, str(tmp_path / "work")).splitlines()
        assert answer == "pong" and len(api.message_requests()) == 1
    return printed


@pytest.mark.realcli
def test_a_one_query_program_loads_nothing_it_does_not_use(tmp_path: Path) -> None:
    """The real CLI, one prompt, plain Python: no event loop library, no attrs, no
    OpenTelemetry, no JSON Schema, no WebSocket library, no session store, no pool."""
    top, ours = one_query_program(
        tmp_path,
        after="print(sorted({m.split('.')[0] for m in sys.modules}))\n"
        "print(sorted(m for m in sys.modules if m.startswith('claude_sdkurl.')))\n",
    )
    loaded = set(eval(top))
    assert not loaded & {"asyncio", "attr", "attrs", "opentelemetry", "jsonschema", "websockets", "sqlite3", "ssl"}, loaded
    assert not {m for m in eval(ours) if m.split(".")[1] in ("spares", "conversations", "stores", "mcp", "batch", "settings")}


@pytest.mark.realcli
@pytest.mark.parametrize("program", ["query", "client"])
def test_a_one_query_program_starts_the_cli_before_it_loads_the_session(program: str, tmp_path: Path) -> None:
    """The CLI's process starts as soon as the launch is planned (by ``query()`` or a client's
    connect): the session's own modules (the protocol, the control handlers, the workers),
    ``logging`` and the pools' modules load while it boots, not before (what the program had
    loaded is read at the moment it starts the CLI)."""
    spy = (
        "import subprocess\n"
        "at_spawn = []\n"
        "real = subprocess.Popen._execute_child\n"
        "def spy(self, args, *rest, **kw):\n"
        "    if args[0] == os.environ['CLI'] and '--input-format' in args and not at_spawn:\n"
        "        at_spawn.append(sorted(m for m in sys.modules if m.startswith('claude_sdkurl') or m == 'logging'))\n"
        "    return real(self, args, *rest, **kw)\n"
        "subprocess.Popen._execute_child = spy\n"
    )
    after = "print(at_spawn[0])\nprint('claude_sdkurl._engine.session' in sys.modules)\n"
    loaded, later = one_query_program(tmp_path, before=spy, after=after, program=program)
    at_spawn = set(eval(loaded))
    assert {"claude_sdkurl.types", "claude_sdkurl._engine.launch", "claude_sdkurl._engine.transport.stdio"} <= at_spawn
    late = {"claude_sdkurl._engine.session", "claude_sdkurl._engine.protocol", "claude_sdkurl._engine.control", "claude_sdkurl._engine.workers",
            "claude_sdkurl.prewarm", "claude_sdkurl._engine.spares", "claude_sdkurl.ledger", "logging"}  # fmt: skip
    if program == "client":
        late.discard("claude_sdkurl.ledger")  # a client has its ledger (client.ledger) from the start
    assert not at_spawn & late, at_spawn & late
    assert later == "True"


def test_public_submodules_are_attributes_of_the_package_as_they_were() -> None:
    """The eager package left ``claude_sdkurl.sessions``, ``.stores``, ``.spawn``... on the
    package after ``import claude_sdkurl``; the lazy one imports them when asked, and a name that
    is neither a public name nor a submodule is an AttributeError (``hasattr`` says False)."""
    code = (
        "import claude_sdkurl, sys\n"
        "print(claude_sdkurl.sessions.list_sessions is claude_sdkurl.list_sessions, claude_sdkurl.stores.__name__,\n"
        "      claude_sdkurl.spawn.__name__, claude_sdkurl.constants.HOOK_EVENTS is claude_sdkurl.HOOK_EVENTS,\n"
        "      hasattr(claude_sdkurl, 'nothing_here'), hasattr(claude_sdkurl, '_private'), 'claude_sdkurl.notebook' in sys.modules)\n"
    )
    assert fresh(code).split() == ["True", "claude_sdkurl.stores", "claude_sdkurl.spawn", "True", "False", "False", "False"]


def test_a_deferred_logger_logs_as_the_logger_of_its_name(caplog: pytest.LogCaptureFixture) -> None:
    """The loggers of the modules loaded before the CLI starts (``_log.get_logger``) load
    ``logging`` at their first message, and their records are the named logger's: its level, its
    handlers, the exception of ``exception()``."""
    import logging

    from claude_sdkurl._engine.log import get_logger

    assert "logging" not in fresh("import sys\nfrom claude_sdkurl._engine.log import get_logger\nget_logger('x')\nprint(sorted(sys.modules))\n")
    deferred = get_logger("claude_sdkurl.test-deferred")
    caplog.set_level(logging.INFO, logger="claude_sdkurl.test-deferred")
    deferred.debug("not at this level")
    deferred.warning("seen %s", 1)
    try:
        raise ValueError("boom")
    except ValueError:
        deferred.exception("failed")
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("claude_sdkurl.test-deferred", "WARNING", "seen 1"),
        ("claude_sdkurl.test-deferred", "ERROR", "failed"),
    ]
    assert caplog.records[1].exc_info is not None and caplog.records[1].exc_info[0] is ValueError
    assert deferred.isEnabledFor(logging.INFO) and not deferred.isEnabledFor(logging.DEBUG)
