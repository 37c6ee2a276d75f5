"""The package's layering, read from its imports (stdlib ``ast``, nothing is imported).

Rules (docs/design.md):

* the ground floor (``_version``, ``_errors``, ``_usercode``, ``_deadline``, ``_cancel``, ``_trace``,
  ``_log``, ``_limits``, ``types``) imports nothing of ours above it, except the one back door:
  ``types`` -> ``display`` (inside the ``_repr_*_`` methods) and ``types`` ->
  ``mcp`` (for type checkers);
* the sans-I/O core (``_protocol``, ``_parse``, ``_run``) imports only the
  ground and itself;
* ``_transport/`` imports only the ground and itself;
* ``sessions/`` (the transcripts wing) imports only the ground and itself:
  never the engine (``_session``, ``_launch``, ``_control``, ...);
* ``stores/`` imports only the ground, ``sessions`` and itself;
* no import cycle, counting every import (module level, inside functions and
  under ``TYPE_CHECKING``), but the back door's.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import claude_sdkurl

PACKAGE = Path(claude_sdkurl.__file__).parent

GROUND = {"_version", "_errors", "_usercode", "_deadline", "_cancel", "_trace", "_log", "_limits", "types"}
BACK_DOOR = {("types", "display"), ("types", "mcp")}
CORE = {"_protocol", "_parse", "_run"}


def _area(module: str) -> str:
    return module.split(".")[0]


def _allowed(module: str) -> set[str] | None:
    """The areas ``module`` may import, ``None`` for the engine and the public face (free)."""
    area = _area(module)
    if area in GROUND:
        return set(GROUND)
    if area in CORE:
        return GROUND | CORE
    if area in ("_transport", "sessions"):
        return GROUND | {area}
    if area == "stores":
        return GROUND | {"sessions", "stores"}
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
        if allowed is None or _area(imported) in allowed or (_area(importer), _area(imported)) in BACK_DOOR:
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


def test_sessions_never_import_the_engine() -> None:
    engine = {"_session", "_launch", "_control", "_cli", "_workers", "client", "query", "prewarm"}
    assert [(a, b) for a, b in imports(PACKAGE) if _area(a) == "sessions" and _area(b) in engine] == []


def test_the_checks_catch_a_climb_and_a_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sessions").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "types.py").write_text("")
    (pkg / "_session.py").write_text("from .sessions import _paths\n")
    (pkg / "sessions" / "__init__.py").write_text("from ._paths import x\n")
    (pkg / "sessions" / "_paths.py").write_text("from .. import types\n\ndef f():\n    from .._session import y\n")
    assert layer_breaks(pkg) == ["sessions._paths imports _session"]
    assert cycles(pkg) == [{"_session", "sessions._paths"}]


@pytest.mark.parametrize("name", ["sessions._mirror", "sessions._resume", "sessions._storecall", "_usercode"])
def test_the_layout_the_readme_draws(name: str) -> None:
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
