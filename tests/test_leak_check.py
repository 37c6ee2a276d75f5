"""The suite's own guard (``no_leaks`` and ``local_ray`` of ``tests/conftest.py``): a test that
leaves processes behind fails alone, with those processes killed, so the test after it passes
(issue 58: a Ray that failed to start once left four processes, and every later test failed
its leak check); a Ray that cannot start says the machine is the cause. Each case runs in a
pytest session of its own (pytester), with the real conftest's fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .servers import alive

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    pytester.makeconftest("from tests.conftest import no_leaks  # noqa: F401  (autouse)\n")
    return pytester


def test_a_test_that_leaves_a_process_tree_fails_alone_and_the_next_one_passes(inner: pytest.Pytester) -> None:
    inner.makepyfile(
        test_probe="""
        import subprocess, time
        from pathlib import Path

        def test_starts_a_stand_in_for_ray_then_fails():
            # a child that ignores SIGTERM (as a busy raylet may), with a child of its own
            subprocess.Popen(["sh", "-c", "trap '' TERM; sleep 300 & echo $! > grandchild; wait"])
            while not Path("grandchild").exists() or not Path("grandchild").read_text().strip():
                time.sleep(0.02)
            assert False, "failing on purpose"

        def test_the_next_test():
            pass
        """
    )
    result = inner.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", timeout=120)
    # the test's own failure, its leak check's error naming the processes, and the next test green
    result.assert_outcomes(failed=1, errors=1, passed=1)
    result.stdout.re_match_lines([r".*leaked processes \(killed now\): \['\d+ sh', '\d+ sleep'\]"])
    assert "failing on purpose" in result.stdout.str()
    grandchild = int((inner.path / "grandchild").read_text())
    assert not alive(grandchild)  # the whole tree went, not only the test's own child


def test_a_ray_that_cannot_start_leaves_nothing_and_says_the_machine_is_the_cause(inner: pytest.Pytester) -> None:
    inner.makepyfile(
        test_probe="""
        import subprocess
        import pytest
        from tests.conftest import local_ray

        def test_ray_times_out(monkeypatch):
            ray = pytest.importorskip("ray")
            def init(**kw):  # what ray.init() did at load 20-30: processes started, then a time-out
                subprocess.Popen(["sleep", "300"])
                raise Exception("The current node timed out during startup.")
            monkeypatch.setattr(ray, "init", init)
            with local_ray(2):
                raise AssertionError("never reached")

        def test_the_next_test():
            pass
        """
    )
    result = inner.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", timeout=120)
    result.assert_outcomes(failed=1, passed=1)  # no leak-check error: local_ray stopped its processes
    result.stdout.re_match_lines([r"Ray could not start on this machine \(load average [\d.]+, [\d.]+, [\d.]+ on \d+ cores\): "
                                  r"Exception: The current node timed out during startup\.; its processes were stopped: "
                                  r"\['\d+ sleep'\]\. Not a failure of claude_sdkurl"])  # fmt: skip
