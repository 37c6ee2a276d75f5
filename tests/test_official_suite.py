"""The official package's own session tests, run against us.

The test session downloads the official sdist (``claude-agent-sdk`` at the version we
track, from the package index, cached in ``~/.cache/claude_sdkurl/sdist``), copies its
session test files, and runs them with ``tests/official_shim`` first on the path: there
``import claude_agent_sdk`` gives our functions (the store ones wrapped as coroutines,
as the official ones are) and the private helpers those tests import mapped onto ours.

Not run, each for a reason:

* ``test_session_resume.py``, ``test_transcript_mirror.py``,
  ``test_session_store_anyio.py``: they drive the official engine's internals
  (``Query``, ``SubprocessCLITransport``, ``InternalClient``); our resume and mirror
  are tested on the real CLIs instead (``test_realcli_session_store.py``).
* :data:`NOT_APPLICABLE`: two tests that hold every store load on an ``anyio.Event`` of
  the test's own loop; our loads run on threads (each with a loop of its own when the
  store is ``async``), so the event can never wake them. The bound they check (16 loads
  at once) is checked here with a thread gate
  (:func:`test_store_listing_loads_at_most_16_sessions_at_once`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import claude_sdkurl as ours
from claude_sdkurl._version import OFFICIAL_SDK_VERSION

SHIM = Path(__file__).parent / "official_shim"
FILES = [
    "test_sessions.py",
    "test_session_mutations.py",
    "test_session_helpers_store.py",
    "test_session_import.py",
    "test_session_summary.py",
    "test_session_store_conformance.py",
]
NOT_APPLICABLE = [
    "test_session_helpers_store.py::TestListSessionsFromStore::test_load_concurrency_is_bounded",
    "test_session_summary.py::TestListSessionsFromStoreFastPath::test_gap_fill_bounded_concurrency",
]


def official_tests() -> Path:
    """The official sdist's ``tests/`` directory, downloaded once."""
    cache = Path(os.environ.get("CLAUDE_SDKURL_SDIST_CACHE", Path.home() / ".cache" / "claude_sdkurl" / "sdist"))
    unpacked = cache / f"claude_agent_sdk-{OFFICIAL_SDK_VERSION}"
    if not (unpacked / "tests").is_dir():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
             f"claude-agent-sdk=={OFFICIAL_SDK_VERSION}", "-d", str(cache)],
            check=True, capture_output=True, timeout=300,
        )  # fmt: skip
        with tarfile.open(cache / f"claude_agent_sdk-{OFFICIAL_SDK_VERSION}.tar.gz") as archive:
            archive.extractall(cache, filter="data")
    return unpacked / "tests"


def test_the_official_session_tests_pass_on_us(tmp_path: Path) -> None:
    source = official_tests()
    for name in FILES:
        shutil.copy(source / name, tmp_path / name)
    (tmp_path / "conftest.py").write_text(
        "import pytest\n\n\n@pytest.fixture\ndef anyio_backend() -> str:\n    return 'asyncio'\n"
    )
    deselect = [arg for test in NOT_APPLICABLE for arg in ("--deselect", test)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SHIM), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "anyio", "--timeout", "60",
         "-o", "addopts=", "--rootdir", str(tmp_path), *deselect, *FILES],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    tail = done.stdout[-3000:]
    assert done.returncode == 0, tail
    summary = re.search(r"(\d+) passed, (\d+) deselected", tail)
    assert summary is not None, tail
    assert int(summary.group(1)) >= 290 and int(summary.group(2)) == len(NOT_APPLICABLE), tail
    assert "claude_sdkurl" in subprocess.run(  # the shim, not the official package, was tested
        [sys.executable, "-c", "import claude_agent_sdk as m; print(m.list_sessions.__module__)"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip


def test_store_listing_loads_at_most_16_sessions_at_once() -> None:
    """The bound the two not-applicable official tests check, with a thread gate."""
    gate = threading.Event()
    lock = threading.Lock()
    now = {"in": 0, "peak": 0}

    class Slow(ours.InMemorySessionStore):
        def list_session_summaries(self, project_key: str) -> Any:
            return []  # every session must be loaded

        def load(self, key: Any) -> Any:
            with lock:
                now["in"] += 1
                now["peak"] = max(now["peak"], now["in"])
            gate.wait(10)
            with lock:
                now["in"] -= 1
            return super().load(key)

    store = Slow()
    for i in range(40):
        sid = f"7a1e0000-0000-4000-8000-{i:012d}"
        key = {"project_key": ours.project_key_for_directory("/w"), "session_id": sid}
        ours.InMemorySessionStore.append(store, key, [{"type": "user", "uuid": "u", "message": {"role": "user", "content": "x"}}])  # type: ignore[arg-type, list-item]
    result: list[Any] = []
    reader = threading.Thread(target=lambda: result.append(ours.list_sessions_from_store(store, "/w")))
    reader.start()
    deadline = time.monotonic() + 10
    while now["in"] < 16 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # a 17th load would have started by now
    assert now["peak"] == 16
    gate.set()
    reader.join(10)
    assert len(result[0]) == 40 and now["peak"] == 16
