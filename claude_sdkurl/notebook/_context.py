"""The kernel as context: notebook variables turned into content blocks, and the kernel's
own MCP tools (list and read variables; run code only when allowed, each run approved)."""

from __future__ import annotations

import ast
import base64
import contextlib
import io
import threading
from collections.abc import Callable
from typing import Any

from ..mcp import create_sdk_mcp_server, tool
from ..types import McpSdkServerConfig

MAX_REPR = 4000  # characters of an object's repr sent to the model
SAMPLE_ROWS = 5  # rows of a DataFrame sent as its sample


class ContextError(ValueError):
    """A variable named for the model does not exist or cannot be shown."""


def figure_png(fig: Any) -> bytes:
    """The PNG a matplotlib figure (or axes) is sent as."""
    fig = getattr(fig, "figure", None) or fig  # axes -> their figure
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return buf.getvalue()


def _library(obj: Any) -> str:
    return (type(obj).__module__ or "").split(".")[0]


def _is_figure(obj: Any) -> bool:
    return _library(obj) == "matplotlib" and hasattr(getattr(obj, "figure", None) or obj, "savefig")


def _is_frame(obj: Any) -> bool:
    return _library(obj) == "pandas" and hasattr(obj, "dtypes") and hasattr(obj, "head")


def _clip(s: str, n: int = MAX_REPR) -> str:
    return s if len(s) <= n else f"{s[:n]}\n… ({len(s) - n:,} more characters)"


def describe(name: str, obj: Any) -> list[dict[str, Any]]:
    """Content blocks for one variable: a DataFrame as its schema and a sample, a figure as
    a PNG image, anything else by its repr (clipped). Raises :class:`ContextError`."""
    try:
        if _is_figure(obj):
            data = base64.b64encode(figure_png(obj)).decode("ascii")
            return [{"type": "text", "text": f"`{name}`: a matplotlib figure, the image below."},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}]  # fmt: skip
        if _is_frame(obj):
            rows, cols = obj.shape
            columns = "\n".join(f"- {c} ({t})" for c, t in obj.dtypes.astype(str).items())
            sample = obj.head(SAMPLE_ROWS).to_csv()
            text = (f"`{name}`: a pandas DataFrame, {rows:,} rows × {cols:,} columns.\nColumns:\n{columns}\n"
                    f"First {min(rows, SAMPLE_ROWS)} rows (CSV):\n```csv\n{sample}```")  # fmt: skip
            return [{"type": "text", "text": _clip(text, MAX_REPR * 2)}]
        return [{"type": "text", "text": f"`{name}` ({type(obj).__name__}):\n```\n{_clip(repr(obj))}\n```"}]
    except Exception as e:
        raise ContextError(f"--with {name}: it cannot be shown ({type(e).__name__}: {e})") from e


def attach(names: list[str], namespace: dict[str, Any]) -> list[dict[str, Any]]:
    """Content blocks for every named variable, checked before anything starts."""
    missing = [n for n in names if n not in namespace]
    if missing:
        raise ContextError(f"--with: no variable named {', '.join(map(repr, missing))} in the notebook")
    blocks: list[dict[str, Any]] = [{"type": "text", "text": "Variables from the notebook:"}]
    for name in names:
        blocks += describe(name, namespace[name])
    return blocks


def _visible(namespace: dict[str, Any]) -> dict[str, Any]:
    hidden = {"In", "Out", "get_ipython", "exit", "quit", "open"}
    return {k: v for k, v in namespace.items()
            if not k.startswith("_") and k not in hidden and type(v).__name__ not in ("module", "function", "type", "builtin_function_or_method")}  # fmt: skip


def _summary(obj: Any) -> str:
    if _is_frame(obj):
        return f"DataFrame {obj.shape[0]}×{obj.shape[1]}"
    if _is_figure(obj):
        return "matplotlib figure"
    shape = getattr(obj, "shape", None)
    text = f"{type(obj).__name__}" + (f" shape {tuple(shape)}" if shape is not None else "")
    if isinstance(obj, (int, float, str, bool)):
        text += f" = {_clip(repr(obj), 60)}"
    elif hasattr(obj, "__len__"):
        with contextlib.suppress(Exception):
            text += f", {len(obj)} items"
    return text


def kernel_server(namespace: dict[str, Any], run_on_kernel: Callable[[Callable[[], Any]], Any] | None,
                  approve: Callable[[str], str | None] | None = None) -> McpSdkServerConfig:
    """An in-process MCP server named ``kernel``: ``list_variables`` and ``read_variable``
    (read-only), and ``run_code`` when ``run_on_kernel`` is given (it runs a function on
    the kernel's main thread and returns its result). ``approve(code)`` is asked before every
    run, whatever the CLI's permission mode or rules: ``None`` runs it, a string refuses it
    (the model is told that string)."""

    @tool("list_variables", "List the notebook's variables: name, type, size.", {})
    def list_variables(args: dict[str, Any]) -> dict[str, Any]:
        lines = [f"{k}: {_summary(v)}" for k, v in sorted(_visible(namespace).items())]
        return {"content": [{"type": "text", "text": "\n".join(lines) or "(no variables)"}]}

    @tool("read_variable", "Read one notebook variable: a DataFrame's schema and first rows, a figure as an image, "
          "anything else by its repr.", {"name": str})  # fmt: skip
    def read_variable(args: dict[str, Any]) -> dict[str, Any]:
        name = str(args.get("name", ""))
        if name not in namespace:
            return {"content": [{"type": "text", "text": f"no variable named {name!r}"}], "is_error": True}
        try:
            return {"content": describe(name, namespace[name])}
        except ContextError as e:
            return {"content": [{"type": "text", "text": str(e)}], "is_error": True}

    tools = [list_variables, read_variable]
    if run_on_kernel is not None:

        @tool("run_code", "Run Python code in the notebook's kernel (its variables are yours to use and change); "
              "returns what it printed and the value of its last expression.", {"code": str})  # fmt: skip
        def run_code(args: dict[str, Any]) -> dict[str, Any]:
            code = str(args.get("code", ""))
            refused = approve(code) if approve is not None else None
            if refused is not None:
                return {"content": [{"type": "text", "text": refused}], "is_error": True}
            output, error = run_on_kernel(lambda: _execute(code, namespace))
            return {"content": [{"type": "text", "text": _clip(output) or "(no output)"}], "is_error": error}

        tools.append(run_code)
    return create_sdk_mcp_server("kernel", tools=tools)


def _execute(code: str, namespace: dict[str, Any]) -> tuple[str, bool]:
    """Run ``code`` in ``namespace``: (what it printed, plus its last expression's repr; whether it failed)."""
    out = io.StringIO()
    try:
        tree = ast.parse(code, mode="exec")
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        assert last is None or isinstance(last, ast.Expr)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            exec(compile(tree, "<claude>", "exec"), namespace)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), "<claude>", "eval"), namespace)
                if value is not None:
                    out.write(repr(value) + "\n")
        return out.getvalue(), False
    except BaseException as e:  # the model's code: any failure is its answer
        return out.getvalue() + f"{type(e).__name__}: {e}\n", True


def on_main_thread(loop: Any) -> Callable[[Callable[[], Any]], Any]:
    """A ``run_on_kernel`` for :func:`kernel_server`: runs on the kernel's event loop (its
    main thread, free while a ``%%claude`` cell awaits or the kernel is idle)."""

    def run(fn: Callable[[], Any]) -> Any:
        if loop is None:
            return fn()
        done = threading.Event()
        box: dict[str, Any] = {}

        def call() -> None:
            try:
                box["value"] = fn()
            except BaseException as e:
                box["error"] = e
            finally:
                done.set()

        loop.call_soon_threadsafe(call)
        done.wait()
        if "error" in box:
            raise box["error"]
        return box["value"]

    return run
