"""Build the notebook's JupyterLab extension (``labextension/``: copy and insert-as-a-new-cell on
the code blocks of ``%%claude`` answers) into ``claude_sdkurl/notebook/labextensions/claude-sdkurl-notebook/``
(named as its package, as JupyterLab serves it), the
prebuilt form JupyterLab loads (shipped in the package; no Node needed to use it).

Needs Node.js and npm (JupyterLab's own builder comes from npm into a temporary folder) and
JupyterLab (the test extra). Run it after changing anything under ``labextension/``:
``tests/test_labextension.py`` fails while the built copy is older than its source.

    .venv/bin/python tools/build_labextension.py
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "labextension"
BUILT = ROOT / "claude_sdkurl" / "notebook" / "labextensions" / "claude-sdkurl-notebook"


def source_digest() -> str:
    """The sha256 of the extension's source files (what the built copy was made from)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in SOURCE.rglob("*") if p.is_file() and "node_modules" not in p.parts):
        digest.update(path.relative_to(SOURCE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def main() -> int:
    import jupyterlab

    staging = Path(jupyterlab.__file__).parent / "staging"
    with tempfile.TemporaryDirectory(prefix="claude-sdkurl-labext-") as tmp:
        work = Path(tmp) / "ext"
        shutil.copytree(SOURCE, work)
        package = json.loads((work / "package.json").read_text())
        package["jupyterlab"]["outputDir"] = "build"
        (work / "package.json").write_text(json.dumps(package, indent=2))
        npm = shutil.which("npm")
        node = shutil.which("node")
        if not npm or not node:
            print("needs Node.js and npm on PATH", file=sys.stderr)
            return 2
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=work, check=True)
        builder = work / "node_modules" / "@jupyterlab" / "builder" / "lib" / "build-labextension.js"
        subprocess.run([node, str(builder), "--core-path", str(staging), "."], cwd=work, check=True,
                       env={**os.environ, "NODE_ENV": "production"})  # fmt: skip
        if BUILT.exists():
            shutil.rmtree(BUILT)
        shutil.copytree(work / "build", BUILT)
    (BUILT / "source.sha256").write_text(source_digest() + "\n")
    print(f"built {BUILT.relative_to(ROOT)}: {sorted(p.name for p in (BUILT / 'static').iterdir())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
