"""The notebooks run top to bottom in a real Jupyter kernel, offline (real CLI + mock model)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = [pytest.mark.realcli, pytest.mark.foreign_fds]

NOTEBOOKS = Path(__file__).parent.parent / "notebooks"

EXPECTED = {
    "quickstart": ["2 + 2 = **4**", "Once upon a time", "cost: $0.", "| cost (session so far) |"],
    "permissions_and_hooks": ["no deleting in this notebook", "| error: True", "Created it.", "('PostToolUse', 'Bash')"],
    "in_process_tools": ["19 + 23 = 42", "the tool answered: [{'type': 'text', 'text': '42'}]"],
    "claude_magic": ["Hello! I am **Claude**", "<summary>⚙ <code>Bash ls</code>", "**Lima** sold the most", "this turn cost $"],
    "multi_turn_client": ["Claude: Nice to meet you, Ada.", "Claude: Your name is Ada.", "mcpServers"],
}


def _outputs(nb: nbformat.NotebookNode) -> str:
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                parts.append(out["text"])
            elif "data" in out:
                parts.extend(str(v) for v in out["data"].values())
    return "\n".join(parts)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_notebook_runs_offline(name: str, cli_paths: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLAUDE_SDKURL_LIVE", raising=False)
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == []
    text = _outputs(nb)
    for expected in EXPECTED[name]:
        assert expected in text, f"{expected!r} not in the outputs of {name}"
    assert "offline (mock model)" in text
    # money shown as money: no float noise such as 0.00047999999999999996 in what a reader sees
    # (the richest form of each output: a dataclass's text/plain repr stays exact, as in the official SDK)
    shown = "\n".join(o["text"] if o.get("output_type") == "stream" else str(o.get("data", {}).get("text/markdown") or o.get("data", {}).get("text/plain", ""))
                      for c in nb.cells for o in c.get("outputs", []))  # fmt: skip
    assert not re.search(r"\d\.\d*(?:9{6,}|0{6,})\d", shown), re.findall(r"\S*\d\.\d*(?:9{6,}|0{6,})\d\S*", shown)
