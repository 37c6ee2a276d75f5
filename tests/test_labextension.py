"""The notebook's JupyterLab extension (copy / insert-as-a-new-cell on the code blocks of
``%%claude`` answers) ships prebuilt, current with its source, where JupyterLab finds it.

What it does in a page is checked in a real browser (``tests/test_notebook_browser.py``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILT = ROOT / "claude_sdkurl" / "notebook" / "labextensions" / "claude-sdkurl-notebook"


def test_the_built_extension_is_made_from_the_source_as_it_is() -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from build_labextension import source_digest
    finally:
        sys.path.remove(str(ROOT / "tools"))
    recorded = (BUILT / "source.sha256").read_text().strip()
    assert recorded == source_digest(), "labextension/ changed: run tools/build_labextension.py"
    package = json.loads((BUILT / "package.json").read_text())
    assert package["name"] == BUILT.name  # JupyterLab serves an extension's files under its name
    assert (BUILT / package["jupyterlab"]["_build"]["load"]).is_file()


def test_a_wheel_puts_the_extension_where_jupyterlab_looks(tmp_path: Path) -> None:
    tree = tmp_path / "src"  # built from a copy: pip leaves a build/ folder where it builds
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "test-artifacts", "mutants",
                                                              "site", "node_modules", "__pycache__", ".mypy_cache"))  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(tree)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = tmp_path.glob("claude_sdkurl-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shared = [n.split(".data/data/", 1)[1] for n in names if ".data/data/share/jupyter/labextensions/" in n]
    load = json.loads((BUILT / "package.json").read_text())["jupyterlab"]["_build"]["load"]
    assert "share/jupyter/labextensions/claude-sdkurl-notebook/package.json" in shared
    assert f"share/jupyter/labextensions/claude-sdkurl-notebook/{load}" in shared
