"""The package's layering, read from its imports (stdlib ``ast``, nothing is imported).

Two things (docs/design.md): the areas a user meets, at the top of the package, and the engine
under them, ``_engine/``. Rules:

* the ground floor (``_version``, ``_errors``, ``types``: the public vocabulary; ``_files``, the one
  way a file is replaced whole; ``_shown``, where
  ``display`` registers how the types show themselves in Jupyter) imports nothing of ours but
  itself, except one name for type checkers only: ``types`` -> ``mcp`` (``SdkMcpServer``, under
  ``TYPE_CHECKING``; never at run time);
* the engine (``_engine/``) imports only the ground floor and itself: never an area (what an area
  adds to a run, it registers: ``_engine.observe``, ``_engine.start.register_ready``); inside it,
* the engine's own ground (``usercode``, ``cancel``, ``deadline``, ``trace``, ``log``, ``limits``, ``lifecycle``)
  imports only the ground floor and itself;
* the sans-I/O core (``protocol``, ``parse``, ``run``) only those and itself;
* ``transport/`` only those and itself;
* the store mechanics a run needs (``paths``, ``resume``, ``storecall``, ``mirror``, ``carried``)
  only those and themselves;
* ``sessions/`` (the transcripts wing) imports only the ground floor, the engine's ground and store
  mechanics, and itself: never the session, the launch or the control handlers;
* ``stores/`` the same, and ``sessions``;
* no import cycle, counting every import (module level, inside functions and under
  ``TYPE_CHECKING``), but that type checkers' name.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import claude_sdkurl

PACKAGE = Path(claude_sdkurl.__file__).parent

GROUND = {"_version", "_errors", "_shown", "_files", "types"}
BACK_DOOR = {("types", "mcp")}  # a name for type checkers (test_the_type_checkers_name_is_never_imported_at_run_time)
ENGINE_GROUND = {f"_engine.{m}" for m in ("usercode", "cancel", "deadline", "trace", "log", "limits", "owned", "lifecycle")}
CORE = {"_engine.protocol", "_engine.parse", "_engine.run"}
STORE_MECHANICS = {f"_engine.{m}" for m in ("paths", "resume", "storecall", "mirror", "carried")}


def _area(module: str) -> str:
    """A module's room: its top-level name, or ``_engine.<name>`` inside the engine."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "_engine" and len(parts) > 1 else parts[0]


def _allowed(module: str) -> set[str] | None:
    """The rooms ``module`` may import, ``None`` for the public areas (free)."""
    area = _area(module)
    if area in GROUND:
        return set(GROUND)
    if area in ENGINE_GROUND:
        return GROUND | ENGINE_GROUND
    if area in CORE:
        return GROUND | ENGINE_GROUND | CORE
    if area == "_engine.transport":
        return GROUND | ENGINE_GROUND | {area}
    if area in STORE_MECHANICS:
        return GROUND | ENGINE_GROUND | STORE_MECHANICS
    if area.startswith("_engine"):
        return GROUND | {"_engine*"}  # any room of the engine
    if area == "sessions":
        return GROUND | ENGINE_GROUND | STORE_MECHANICS | {"sessions"}
    if area == "stores":
        return GROUND | ENGINE_GROUND | STORE_MECHANICS | {"sessions", "stores"}
    return None


def modules(root: Path) -> dict[str, Path]:
    """Dotted names relative to the package (``sessions._paths``, ``sessions`` for its
    ``__init__``) -> files."""
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts) or "__init__"] = path
    return found


def imports(root: Path) -> Iterator[tuple[str, str]]:
    """``(importer, imported)`` for every relative import inside the package, both as
    dotted names relative to it."""
    known = modules(root)
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        here = [] if name == "__init__" else name.split(".")
        base = here if is_package else here[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            up = base[: len(base) - (node.level - 1)] if node.level > 1 else base
            target = [*up, *(node.module.split(".") if node.module else [])]
            for alias in node.names:
                full = ".".join([*target, alias.name])
                dotted = full if full in known else ".".join(target)
                if dotted and dotted != name:
                    yield name, dotted


def layer_breaks(root: Path) -> list[str]:
    breaks = []
    for importer, imported in sorted(set(imports(root))):
        allowed = _allowed(importer)
        room = _area(imported)
        if allowed is None or room in allowed or ("_engine*" in allowed and room.startswith("_engine")) \
                or (_area(importer), room) in BACK_DOOR:  # fmt: skip
            continue
        breaks.append(f"{importer} imports {imported}")
    return breaks


def cycles(root: Path) -> list[set[str]]:
    """Strongly connected groups of more than one module (Tarjan), back door excluded."""
    graph: dict[str, set[str]] = {m: set() for m in modules(root)}
    for a, b in imports(root):
        if (a, b) not in BACK_DOOR:
            graph[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(group)

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_each_level_imports_only_below_it() -> None:
    assert layer_breaks(PACKAGE) == []


def test_no_import_cycles() -> None:
    assert cycles(PACKAGE) == []


def test_sessions_never_import_the_session_or_the_launch() -> None:
    engine = {"_engine.session", "_engine.launch", "_engine.control", "_engine.cli", "_engine.workers", "client", "query", "prewarm"}
    assert [(a, b) for a, b in imports(PACKAGE) if _area(a) == "sessions" and _area(b) in engine] == []


def test_the_checks_catch_a_climb_and_a_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sessions").mkdir(parents=True)
    (pkg / "_engine").mkdir()
    for name in ("__init__.py", "types.py", "ledger.py", "_engine/__init__.py", "sessions/__init__.py"):
        (pkg / name).write_text("")
    (pkg / "_engine" / "session.py").write_text("from . import paths\n\ndef f():\n    from .. import ledger\n")
    (pkg / "_engine" / "paths.py").write_text("from .. import types\n\ndef f():\n    from . import session\n")
    (pkg / "sessions" / "_stored.py").write_text("from .._engine import session\n")
    assert layer_breaks(pkg) == ["_engine.paths imports _engine.session", "_engine.session imports ledger",
                                 "sessions._stored imports _engine.session"]  # fmt: skip
    assert cycles(pkg) == [{"_engine.session", "_engine.paths"}]


def test_the_type_checkers_name_is_never_imported_at_run_time() -> None:
    """``types`` refers to ``mcp.SdkMcpServer`` under ``TYPE_CHECKING`` only, and imports
    ``display`` nowhere (it did inside its ``_repr_*_`` methods: the circle types <-> display)."""
    tree = ast.parse((PACKAGE / "types.py").read_text(encoding="utf-8"))
    guarded = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
               for n in ast.walk(node)}  # fmt: skip
    upward = [(node.lineno, node.module, id(node) in guarded) for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and node.level and node.module in ("mcp", "display")]  # fmt: skip
    assert [(module, guarded) for _, module, guarded in upward] == [("mcp", True)], upward


def test_a_message_shows_itself_with_the_display_loaded_on_first_use() -> None:
    import subprocess
    import sys

    code = ("import sys, claude_sdkurl.types as t\nassert 'claude_sdkurl.display' not in sys.modules\n"
            "m = t.AssistantMessage(content=[t.TextBlock('hi **there**')], model='m')\n"
            "print(m._repr_markdown_()); print(t.TextBlock('x')._repr_markdown_()); print('claude_sdkurl.display' in sys.modules)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:4] == ["**Claude** · `m`", "", "hi **there**", "x"] and done.stdout.strip().endswith("True")


def test_the_planners_never_call_back_up() -> None:
    """Options are planned in one pass down (docs/design.md, "The walk from query()"): the
    helpers ``launch`` calls never import it, nor the session that takes the plan over."""
    planners = {"_engine.cli", "_engine.resume", "_engine.paths", "_engine.storecall", "_engine.transport", "_engine.run",
                "_engine.limits", "_engine.log"}  # fmt: skip
    deciders = {"_engine.launch", "_engine.start", "_engine.session", "_engine.control", "_engine.workers"}
    assert [(a, b) for a, b in imports(PACKAGE) if _area(a) in planners and _area(b) in deciders] == []


def test_the_engine_is_one_package_and_the_top_holds_the_areas() -> None:
    """The machine room in one folder: the only private modules left at the top are the ground
    floor's (``_errors``, ``_version``: the official SDK's names; ``_shown``, ``_files``)."""
    top = {p.stem for p in PACKAGE.iterdir() if p.name.startswith("_") and p.name not in ("__init__.py", "__main__.py", "__pycache__")}
    assert top == {"_errors", "_version", "_shown", "_files", "_engine"}, sorted(top)
    for name in ("_engine.session", "_engine.protocol", "_engine.run", "_engine.transport", "_engine.launch", "_engine.mirror"):
        assert name in modules(PACKAGE)


def test_importing_the_package_imports_no_optional_or_heavy_library() -> None:
    """``import claude_sdkurl`` is what every program pays: optional extras and heavy libraries
    are imported where they are used. jsonschema took 1.2 s to import here (rfc3987-syntax, which
    Jupyter installs, builds a grammar at import): now only in-process MCP servers import it;
    websockets only a session on the WebSocket transport (CLIs up to 2.1.120)."""
    import subprocess
    import sys

    code = ("import sys; import claude_sdkurl, claude_sdkurl.client, claude_sdkurl.query, claude_sdkurl.batch, "
            "claude_sdkurl.sessions, claude_sdkurl.stores; print(sorted({m.split('.')[0] for m in sys.modules}))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = set(eval(done.stdout))
    heavy = {"jsonschema", "IPython", "ipywidgets", "opentelemetry", "libcst", "psycopg", "redis", "dask", "distributed", "ray",
             "pandas", "matplotlib", "numpy", "mcp", "claude_agent_sdk", "websockets"}  # fmt: skip
    assert not loaded & heavy, sorted(loaded & heavy)
