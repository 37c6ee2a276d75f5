"""The pytest plugin of claude_sdkurl (loaded by its entry point once the package is
installed): tapes for the tests of programs built on this SDK. A package of its own, so that
loading it imports nothing of claude_sdkurl until a test asks for a tape.

A test marked ``@pytest.mark.claude_tape`` (or asking for the ``claude_tape`` fixture) replays
the tapes in ``tapes/<module>/<test name>/`` beside its file, and records them when they are
missing. ``--record-tapes``, as pytest-recording / vcrpy name it:

* ``once`` (default): replay what is there; record a test that has no tapes yet;
* ``none``: replay only; a test with no tapes fails (what CI should run);
* ``all``: record every marked test again.

The marker takes ``mode="stub"`` (``"inert"``, ``"stub"``, ``"verify"``) and ``scrub=[...]``,
regular expressions taken out of the tapes before they are written (API keys, tokens and the
home folder always are); the ``claude_tape_scrub`` ini option adds patterns for every test.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

RECORD_MODES = ("once", "none", "all")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("claude_sdkurl", "claude_sdkurl tapes")
    group.addoption(
        "--record-tapes",
        action="store",
        default="once",
        choices=RECORD_MODES,
        help="claude_tape tests: once (record what is missing), none (replay only), all (record again)",
    )
    parser.addini("claude_tape_scrub", "regular expressions taken out of every tape", type="linelist", default=[])


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "claude_tape(mode='stub', scrub=()): replay this test's claude_sdkurl sessions from tapes/<module>/<test>/, "
        "recording them when missing (--record-tapes)",
    )


def tape_folder(node: pytest.Item) -> Path:
    """Where a test's tapes are: ``tapes/<module>/<test name>/`` beside its file."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", node.name).strip("_")
    return Path(str(node.path)).parent / "tapes" / Path(str(node.path)).stem / name


@pytest.fixture
def claude_tape(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Replays (or records) this test's sessions; yields the player or the recorder."""
    from claude_sdkurl.tapes import record, replay

    marker = request.node.get_closest_marker("claude_tape")
    options: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    mode = options.get("mode", "stub")
    scrub = [*request.config.getini("claude_tape_scrub"), *options.get("scrub", ())]
    folder = tape_folder(request.node)
    record_mode = request.config.getoption("--record-tapes")
    have = folder.is_dir() and any(folder.glob("*.jsonl"))
    if record_mode == "all" or (record_mode == "once" and not have):
        if folder.is_dir():
            for old in folder.glob("*.jsonl"):
                old.unlink()
        with record(folder, scrub=scrub) as recorder:
            yield recorder
        return
    if not have:
        pytest.fail(f"no tapes for this test in {folder} (--record-tapes=none); record them with --record-tapes=once")
    with replay(folder, mode=mode) as player:
        yield player


@pytest.fixture(autouse=True)
def _claude_tape_marker(request: pytest.FixtureRequest) -> None:
    """A test with the marker gets the fixture without asking for it."""
    if request.node.get_closest_marker("claude_tape") is not None:
        request.getfixturevalue("claude_tape")
