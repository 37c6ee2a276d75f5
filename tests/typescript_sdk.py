"""The pinned TypeScript SDK, installed by the test session (npm, once, cached), for the tests
that compare our surface and our wire with it. Not vendored: fetched like the official sdist."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

TYPESCRIPT_SDK_VERSION = "0.3.333"
_lock = threading.Lock()


def typescript_sdk() -> Path:
    """The folder of ``@anthropic-ai/claude-agent-sdk@0.3.333`` (``sdk.d.ts``, ``sdk.mjs``),
    under an npm prefix whose ``node_modules`` a Node script can import it from. npm installs
    into a staging folder beside it, renamed into place once whole, so a run cut short (or
    another session installing at the same time) never leaves a half-installed prefix behind."""
    root = Path(os.environ.get("CLAUDE_SDKURL_CLI_CACHE") or Path.home() / ".cache" / "claude_sdkurl" / "cli")
    prefix = root.parent / f"ts-sdk-{TYPESCRIPT_SDK_VERSION}"
    package = prefix / "node_modules" / "@anthropic-ai" / "claude-agent-sdk"
    with _lock:
        if not (package / "sdk.d.ts").is_file():
            npm = shutil.which("npm")
            assert npm, "npm is needed to fetch the TypeScript SDK for the parity tests"
            prefix.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{prefix.name}-", dir=prefix.parent))
            try:
                subprocess.run(
                    [npm, "install", "--no-audit", "--no-fund", "--omit=optional", "--prefix", str(staging),
                     f"@anthropic-ai/claude-agent-sdk@{TYPESCRIPT_SDK_VERSION}", "zod@4"],
                    check=True, capture_output=True, timeout=600,
                )  # fmt: skip
                if not (package / "sdk.d.ts").is_file():  # (not made by another session meanwhile)
                    if prefix.exists():
                        shutil.rmtree(prefix)
                    staging.rename(prefix)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    return package


def _block(text: str, start: str) -> str:
    i = text.index(start)
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return re.sub(r"/\*.*?\*/", "", text[i : j + 1], flags=re.S)
    raise ValueError(start)


def surface(dts: str) -> tuple[list[str], list[str], list[tuple[str, str | None, str | None]]]:
    """From ``sdk.d.ts``: the ``Query`` methods, the ``Options`` fields, and each member of the
    ``SDKMessage`` union with its ``type`` and ``subtype``."""
    query = _block(dts, "export declare interface Query extends")
    methods = re.findall(r"^    ([A-Za-z_]\w*)\s*[(<]", query, re.M)
    options = re.findall(r"^    ([A-Za-z_]\w*)\??:", _block(dts, "export declare type Options = {"), re.M)
    union = re.search(r"export declare type SDKMessage = ([^;]*);", dts)
    assert union is not None
    kinds = []
    for name in (n.strip() for n in union.group(1).split("|")):
        body = _block(dts, f"export declare type {name} = ")
        kind = re.search(r"\btype: '(\w+)'", body)
        sub = re.search(r"\bsubtype: '(\w+)'", body)
        kinds.append((name, kind.group(1) if kind else None, sub.group(1) if sub else None))
    return methods, options, kinds


def functions(dts: str) -> list[str]:
    """The top-level functions ``sdk.d.ts`` exports."""
    return sorted(set(re.findall(r"^export declare function (\w+)", dts, re.M)))


def constant(dts: str, name: str) -> list[str]:
    """A ``readonly [...]`` string table of ``sdk.d.ts``."""
    found = re.search(rf"export declare const {name}: readonly \[(.*?)\];", dts)
    assert found is not None, name
    return [a or b for a, b in re.findall(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"", found.group(1))]
