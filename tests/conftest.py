"""Fixtures: real Claude Code CLIs (installed by the test session itself), the mock API,
and leak checks.

Real-CLI tests never skip: if npm cannot install the pinned CLI, they fail.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import ClaudeAgentOptions
from claude_sdkurl._engine.transport import Transport, TransportCallbacks
from claude_sdkurl.testing import (
    NEWEST_CLI_VERSION,
    STDIO_CLI_VERSION,
    WEBSOCKET_CLI_VERSION,
    MockMessagesAPI,
    install_cli,
    offline_env,
)

from .servers import descendants

TRANSPORTS = ["websocket", "stdio"]
CLI_VERSION = {"websocket": WEBSOCKET_CLI_VERSION, "stdio": STDIO_CLI_VERSION}


@pytest.fixture(scope="session")
def cli_paths() -> dict[str, Path]:
    """Both real CLIs: 2.1.120 (WebSocket) and a pinned current one (stdio)."""
    return {name: install_cli(version) for name, version in CLI_VERSION.items()}


@pytest.fixture
def api() -> Iterator[MockMessagesAPI]:
    with MockMessagesAPI() as mock:
        yield mock


@pytest.fixture
def home() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="claude-sdkurl-home-") as d:
        (Path(d) / "work").mkdir()
        yield Path(d)


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def stdio_cli_version() -> str:
    """The CLI a stdio test runs (a module may run its stdio tests on the newest too: see
    :func:`with_the_newest_cli`)."""
    return STDIO_CLI_VERSION


def with_the_newest_cli(metafunc: pytest.Metafunc) -> None:
    """For a module's ``pytest_generate_tests``: its tests that take ``transport`` run on the
    WebSocket CLI, the pinned stdio CLI and the newest one (:data:`NEWEST_CLI_VERSION`)."""
    if "transport" not in metafunc.fixturenames or any(
        "transport" in m.args[0] for m in metafunc.definition.iter_markers("parametrize")
    ):
        return
    metafunc.parametrize(
        ("transport", "stdio_cli_version"),
        [("websocket", STDIO_CLI_VERSION), ("stdio", STDIO_CLI_VERSION), ("stdio", NEWEST_CLI_VERSION)],
        ids=["websocket", "stdio", f"stdio-{NEWEST_CLI_VERSION}"],
    )


OptionsFactory = Callable[..., ClaudeAgentOptions]


@pytest.fixture
def make_options(
    cli_paths: dict[str, Path], api: MockMessagesAPI, home: Path, transport: str, stdio_cli_version: str
) -> OptionsFactory:
    """Options that run the real CLI for ``transport`` against the mock API, offline."""
    cli = cli_paths[transport] if transport != "stdio" or stdio_cli_version == STDIO_CLI_VERSION else install_cli(stdio_cli_version)

    def make(**overrides: Any) -> ClaudeAgentOptions:
        env = offline_env(api.url, home)
        env.update(overrides.pop("env", {}))
        kw: dict[str, Any] = {
            "cli_path": str(cli),
            "env": env,
            "cwd": str(home / "work"),
            "transport": transport,
        }
        kw.update(overrides)
        return ClaudeAgentOptions(**kw)

    return make


def local_entries(options: ClaudeAgentOptions, session_id: str) -> list[dict[str, Any]]:
    """The entries of the transcript the CLI wrote for ``session_id`` under the HOME of ``options.env``."""
    (path,) = Path(options.env["HOME"], ".claude", "projects").glob(f"*/{session_id}.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def ctrl_c() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt in the main thread, however the test run was started:
    a run started in the background from a shell inherits SIGINT ignored, and a library
    (Ray) may have installed a handler of its own; either would make a Ctrl-C test hang."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def control_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """The control requests the SDK sends, in order, each with how it ended: ``"answered"``
    or the name of the exception it raised."""
    from claude_sdkurl._engine.session import Session

    calls: list[tuple[str, str]] = []
    original = Session.control

    def spy(self: Session, request: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        try:
            answer = original(self, request, timeout)
        except Exception as e:
            calls.append((request["subtype"], type(e).__name__))
            raise
        calls.append((request["subtype"], "answered"))
        return answer

    monkeypatch.setattr(Session, "control", spy)
    return calls


# ---------------------------------------------------------------------- processes and leaks


class StandInTransport(Transport):
    """A transport with no CLI behind it: ``callbacks`` is what it was started with (a test feeds
    ``on_data``/``on_exit`` itself); what is sent goes nowhere."""

    name, can_end_input = "stdio", True

    def start(self, callbacks: TransportCallbacks) -> None:
        self.callbacks = callbacks

    def wait_ready(self, timeout: float) -> None:
        pass

    def send(self, line: str) -> None:
        pass

    def close(self) -> None:
        pass


def children_of(parent: int) -> list[int]:
    """Live (non-zombie) processes whose parent is ``parent``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == parent and fields[0] != "Z":
            found.append(int(entry))
    return found


def child_pids() -> list[int]:
    """Live (non-zombie) processes whose parent is this test process, but for those started
    through ``multiprocessing`` (pool workers and the helpers it keeps for the whole session once a
    test used a process pool, as the Dask and process-pool batch tests do): never a CLI of ours."""
    return [pid for pid in children_of(os.getpid()) if not _multiprocessing_helper(pid)]


def processes(where: str, match: Callable[[bytes], bool]) -> list[int]:
    """Live processes of this machine, but this one, whose ``/proc/<pid>/<where>`` (``cmdline``,
    ``environ``) satisfies ``match``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/{where}", "rb") as f:
                if match(f.read()):
                    found.append(int(pid))
        except OSError:
            pass
    return found


def _multiprocessing_helper(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"multiprocessing" in f.read()
    except OSError:
        return False


def stop_leftovers(keep: Collection[int] = ()) -> list[str]:
    """Kill (SIGKILL, by PID) this test process's live children that are no multiprocessing
    helper and not in ``keep``, and everything they started; reap them. Returns what was found,
    each as ``"pid name"``, for the failure message (empty when nothing was left)."""
    pids = [pid for pid in child_pids() if pid not in keep]
    if not pids:
        return []
    found = []
    for pid in descendants(pids):
        try:
            with open(f"/proc/{pid}/comm") as f:
                found.append(f"{pid} {f.read().strip()}")
            os.kill(pid, signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass
    for pid in pids:  # our own children: reaped here, so no zombie is left either
        deadline = time.monotonic() + 5
        try:
            while os.waitpid(pid, os.WNOHANG) == (0, 0) and time.monotonic() < deadline:
                time.sleep(0.02)
        except ChildProcessError:
            pass  # reaped by its Popen already
    return found


@contextlib.contextmanager
def local_ray(num_cpus: int) -> Iterator[Any]:
    """A real local Ray instance (GCS, raylet, workers) for the block, shut down after it
    whatever happens. When Ray cannot start (its node times out on a machine that is too busy)
    what it had started is killed and the test fails saying so, with the load average: the
    machine, not the product, is the cause."""
    ray = pytest.importorskip("ray")  # in the test extra: never skipped in CI
    before = set(child_pids())
    try:
        ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    except Exception as e:
        try:
            ray.shutdown()
        finally:
            left = stop_leftovers(keep=before)
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        pytest.fail(f"Ray could not start on this machine (load average {load} on {os.cpu_count()} cores): "
                    f"{type(e).__name__}: {e}; its processes were stopped: {left}. "
                    "Not a failure of claude_sdkurl: run the test again on a quieter machine.", pytrace=False)  # fmt: skip
    try:
        yield ray
    finally:
        ray.shutdown()


def cli_pid() -> int:
    """The one CLI child process of this test (waits briefly for it)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        pids = child_pids()
        if pids:
            return pids[0]
        time.sleep(0.02)
    raise AssertionError("no CLI child process")


def kill_cli(sig: int = signal.SIGSEGV) -> None:
    os.kill(cli_pid(), sig)


def sdk_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("claude-sdkurl"))


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture(autouse=True)
def no_leaks(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test must leave no thread, no child process and no descriptor behind.

    ``@pytest.mark.foreign_fds`` exempts descriptors only, for tests whose harness
    (nbclient's ZeroMQ context) keeps its own open in this process.
    """
    check_fds = request.node.get_closest_marker("foreign_fds") is None
    # ``foreign_threads``: a library the test drives (Dask) keeps a process-wide thread pool of its own
    only_ours = request.node.get_closest_marker("foreign_threads") is not None
    threads_before = set(threading.enumerate())
    fds_before = open_fds()
    yield

    def extra_threads() -> list[str]:
        extra = sorted(t.name for t in set(threading.enumerate()) - threads_before)
        return [n for n in extra if n.startswith("claude-sdkurl")] if only_ours else extra

    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (
        extra_threads() or child_pids() or (check_fds and open_fds() > fds_before)
    ):
        # websockets.sync's serve_forever leaves its selector (an epoll fd) in a reference
        # cycle; it is released by the cycle collector, not by refcounting.
        gc.collect()
        time.sleep(0.05)
    # A process left behind is stopped here, with all it started, so that the failure stays
    # this test's alone: the next test's check must not find it (a Ray that failed to start
    # once left four processes that failed every later test).
    leaked = stop_leftovers()
    assert extra_threads() == [], f"leaked threads: {extra_threads()}"
    assert leaked == [], f"leaked processes (killed now): {leaked}"
    if check_fds:
        assert open_fds() <= fds_before, f"leaked descriptors: {open_fds()} > {fds_before}"


# ---------------------------------------------------------------------- real database servers


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server on 127.0.0.1 for this test session (see tests/servers.py)."""
    from .servers import PostgresServer

    server = PostgresServer().start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A real redis-server on 127.0.0.1 for this test session (see tests/servers.py)."""
    from .servers import RedisServer

    server = RedisServer().start()
    try:
        yield server.url
    finally:
        server.stop()
