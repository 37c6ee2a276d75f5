"""The session host (issue 55), on the real CLI 2.1.330: a real host process
(``python -m claude_sdkurl.host``) owns the CLIs, real worker processes
(``tests/conversation_worker.py``) attach with ``Conversations(..., host=...)``.

Hostile first: another user's process, a second host, a directory that is not private, an option
the host cannot carry, no host at all, a worker killed with a permission request pending, the host
killed mid-turn. Then what the host is for: turns from several workers on one live CLI.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import ClaudeAgentOptions, Conversations, HookMatcher, PermissionResultDeny, ResultMessage
from claude_sdkurl.host import HostError, HostGoneError, HostOptionError, HostUnreachableError, serve
from claude_sdkurl.testing import MockMessagesAPI, Reply, offline_env, text, tool_use
from claude_sdkurl.testing.mock_api import RecordedRequest

from .test_realcli_conversations_outlive import Worker, _cmdline, _pids, history_echo, live_clis, prompts, slow_tool

pytestmark = pytest.mark.realcli


def bash_when(ending: str, command: str) -> Any:
    """The model: a prompt ending in ``ending`` gets a Bash call of ``command``; a tool's result,
    what the tool said; any other prompt, the history's prompts."""

    def model(request: RecordedRequest) -> Reply:
        said, results = prompts(request), request.tool_results()
        if said[-1].endswith(ending) and not results:
            return tool_use("Bash", {"command": command})
        if results:
            return text(f"tool said: {json.dumps(results[-1].get('content'))[:300]}")
        return text(" | ".join(said))

    return model


class Host:
    """A session host process at ``path``; stopped (its process group killed) by the fixture."""

    def __init__(self, path: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.path = path
        self.proc = subprocess.Popen([sys.executable, "-m", "claude_sdkurl.host", "--socket", str(path), *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                                     env={**os.environ, **(env or {})})  # fmt: skip
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert "session host at" in line, (line, self.proc.stderr.read() if self.proc.poll() is not None and self.proc.stderr else "")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(60)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def stopped(pid: int) -> bool:
    """Whether the process is stopped (SIGSTOP): it would sit on a SIGTERM."""
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] in ("T", "t")
    except (OSError, IndexError):
        return False


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[list[Host]]:
    started: list[Host] = []
    yield started
    for host in started:
        if host.proc.poll() is None and not stopped(host.proc.pid):  # asked to stop first: its close() removes what its CLIs had made
            host.proc.send_signal(signal.SIGTERM)  # (a resumed session's config folder), which a kill leaves
            try:
                host.proc.wait(15)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(host.proc.pid, signal.SIGKILL)  # the host and anything of its group
        except ProcessLookupError:
            pass
        host.kill()


@pytest.fixture
def sock() -> Iterator[Path]:
    """Where the host listens: in a directory of its own under /tmp (pytest's own is 0700 all the
    way, which would keep another user out before the host's directory is even reached)."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="claude-sdkurl-hosttest-"))
    yield base / "host" / "host.sock"
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def settings(cli_paths: dict[str, Path], api: MockMessagesAPI, home: Path, sock: Path) -> dict[str, Any]:
    api.responder = history_echo
    return {"cli": str(cli_paths["stdio"]), "env": offline_env(api.url, home), "cwd": str(home / "work"), "host": str(sock)}


def long_or_history(words: int) -> Any:
    """The model: a prompt ending in "long" gets ``words`` words streamed slowly; any other, the
    history's prompts (so an answer shows what the model was given)."""

    def model(request: RecordedRequest) -> Reply:
        said = prompts(request)
        if said[-1].endswith("long"):
            return Reply([{"type": "text", "text": "word " * words}], chunk=10, delay=0.05)
        return text(" | ".join(said))

    return model


def options_of(settings: dict[str, Any], **kw: Any) -> ClaudeAgentOptions:
    kw.setdefault("allowed_tools", ["Bash"])
    return ClaudeAgentOptions(cli_path=settings["cli"], env=settings["env"], cwd=settings["cwd"], **kw)


CONNECT_AS_NOBODY = """
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("refused", e.errno); sys.exit(0)
try:
    s.sendall(b'{"op": "ping"}\\n')
    print("answered" if s.recv(100) else "closed")
except (ConnectionResetError, BrokenPipeError):
    print("closed")  # closed with what was sent unread
"""


def as_nobody(path: Path) -> str:
    def drop() -> None:
        os.setgid(65534)
        os.setuid(65534)

    # (the system's Python: the test's own lives where nobody may run it)
    ran = subprocess.run(["/usr/bin/python3", "-c", CONNECT_AS_NOBODY, str(path)], capture_output=True, text=True, timeout=60,
                         preexec_fn=drop, cwd="/")  # fmt: skip
    return ran.stdout.strip() or ran.stderr.strip()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to run a process as another user")
def test_only_this_users_processes_attach_and_one_host_serves_a_socket(settings: dict[str, Any], sock: Path, hosts: list[Host],
                                                                        api: MockMessagesAPI, tmp_path: Path) -> None:  # fmt: skip
    hosts.append(Host(sock))
    assert stat.S_IMODE(os.stat(sock.parent).st_mode) == 0o700 and stat.S_IMODE(os.stat(sock).st_mode) & 0o077 == 0
    os.chmod(sock.parent.parent, 0o755)  # (the base the test made: open, so only the host's own directory decides)
    assert as_nobody(sock).startswith("refused 13")  # the directory keeps them out (EACCES)
    os.chmod(sock.parent, 0o755)
    os.chmod(sock, 0o777)
    try:  # with the directory opened by mistake, the host itself closes another user's connection unread
        assert as_nobody(sock) == "closed"
    finally:
        os.chmod(sock.parent, 0o700)
    second = subprocess.run([sys.executable, "-m", "claude_sdkurl.host", "--socket", str(sock)], capture_output=True, text=True, timeout=60)
    assert second.returncode == 2 and "already serves" in second.stderr
    assert Conversations(options_of(settings), host=sock).live() == 0  # the first host still serves

    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    os.chmod(loose, 0o755)
    with pytest.raises(HostError, match="not a private directory"):
        serve(loose / "host.sock")
    assert not (loose / "host.sock").exists()
    assert api.message_requests() == []


def test_what_cannot_reach_the_host_is_a_typed_error_and_nothing_is_sent(settings: dict[str, Any], sock: Path, api: MockMessagesAPI) -> None:
    def hook(*_: Any) -> dict[str, Any]:
        return {}

    with pytest.raises(HostOptionError, match="stderr"):
        Conversations(options_of(settings, stderr=print), host=sock)  # a callback the host does not ask back
    chats = Conversations(options_of(settings, hooks={"PreToolUse": [HookMatcher(hooks=[hook])]}), host=sock)  # no host there
    with pytest.raises(HostUnreachableError, match="nothing was sent"):
        list(chats.send("k", "chat #1: hello"))
    with pytest.raises(ValueError):
        Conversations(options_of(settings), host=sock, max_live=2)  # the host's own settings decide that
    assert api.message_requests() == []


def test_a_worker_killed_with_a_permission_pending_denies_and_the_next_worker_goes_on(
    settings: dict[str, Any], sock: Path, hosts: list[Host], api: MockMessagesAPI, home: Path
) -> None:
    api.responder = bash_when("touch it", f"touch {home}/touched")
    hosts.append(Host(sock))
    asking = Worker({**settings, "can_use_tool": "block", "allowed_tools": []})
    asking.ask("k", "chat #1: touch it")
    asked = asking.read()
    assert asked["asked"] == "Bash"  # the question reached the worker that sent the turn
    clis = live_clis(home)
    assert len(clis) == 1
    asking.kill()  # with the question unanswered
    later = Worker({**settings, "can_use_tool": "allow", "allowed_tools": []})
    try:
        answer = later.send("k", "chat #2: what happened?")
        assert "error" not in answer, answer
        assert not (home / "touched").exists()  # nothing ran that nobody decided
        requests = api.message_requests()
        denied = [r for r in requests if r.tool_results()]
        assert denied and "went away" in json.dumps(denied[0].tool_results()), "the model is told why"
        assert prompts(requests[-1])[-2:] == ["chat #1: touch it", "chat #2: what happened?"]  # the whole history
        assert live_clis(home) == clis  # the same CLI, live all along: no wake
    finally:
        later.stop()


def test_the_host_killed_mid_turn_is_a_typed_error_and_a_new_host_goes_on(settings: dict[str, Any], sock: Path, hosts: list[Host],
                                                                          api: MockMessagesAPI, home: Path) -> None:  # fmt: skip
    api.responder = long_or_history(2000)
    # leases of 600 s, a send waits 20 s: only a host that takes its dead predecessor's lease over goes on
    first = Host(sock, "--lease-ttl", "600", "--lease-wait", "20")
    hosts.append(first)
    chats = Conversations(options_of(settings, include_partial_messages=True), host=sock)
    assert [m for m in chats.send("k", "chat #1: hello") if isinstance(m, ResultMessage)][-1].result == "chat #1: hello"
    turn = chats.send("k", "chat #2: long")
    next(m for m in turn if type(m).__name__ == "StreamEvent")  # streaming
    killed = time.monotonic()
    first.kill()
    with pytest.raises(HostGoneError):
        for _ in turn:
            pass
    told = time.monotonic() - killed
    print(f"the caller was told {told:.2f} s after the host was killed")
    assert told < 10  # (the promise is 2 s; the end of the socket is immediate, bounded for a busy machine)
    deadline = time.monotonic() + 60
    while live_clis(home) and time.monotonic() < deadline:  # the host's CLI goes with it (its orphan watcher)
        time.sleep(0.2)
    assert live_clis(home) == []
    hosts.append(Host(sock, "--lease-ttl", "600", "--lease-wait", "20"))
    began = time.monotonic()
    result = [m for m in chats.send("k", "chat #3: again") if isinstance(m, ResultMessage)][-1]
    print(f"the first message after the restart took {time.monotonic() - began:.2f} s (a wake; the lease is 600 s)")
    said = result.result.split(" | ")
    assert said[0] == "chat #1: hello" and said[-1] == "chat #3: again" and said.count("chat #1: hello") == 1, said


def test_turns_from_several_workers_run_on_one_live_cli_in_order(settings: dict[str, Any], sock: Path, hosts: list[Host],
                                                                 api: MockMessagesAPI, home: Path) -> None:  # fmt: skip
    hosts.append(Host(sock))
    workers = [Worker(settings) for _ in range(3)]
    try:
        answers = [workers[i % 3].send("k", f"chat #{i}: from worker {i % 3}") for i in range(6)]
        assert [a.get("error") for a in answers] == [None] * 6, answers
        assert answers[-1]["text"] == " | ".join(f"chat #{i}: from worker {i % 3}" for i in range(6))
        assert len({a["session_id"] for a in answers}) == 1
        clis = live_clis(home)
        assert len(clis) == 1  # one CLI served every worker: no hand-over, no wake
        resumed = [r for r in api.message_requests()]
        assert len(resumed) == 6
        # two workers at once on one key: served one after the other, each with the other's turn in its history
        workers[0].ask("k", "chat #6: at once A")
        workers[1].ask("k", "chat #7: at once B")
        both = [workers[0].read(), workers[1].read()]
        assert [b.get("error") for b in both] == [None, None], both
        longer, shorter = sorted((b["text"] for b in both), key=len, reverse=True)
        assert longer.startswith(shorter) and live_clis(home) == clis
    finally:
        for worker in workers:
            worker.stop()
    assert live_clis(home) == clis  # the workers are gone; the host's CLI is not


ENSURE_AND_SEND = """
import json, sys
from claude_sdkurl import ClaudeAgentOptions, Conversations, ResultMessage
from claude_sdkurl import host
settings = json.loads(sys.argv[1])
where = host.ensure(settings["host"])
options = ClaudeAgentOptions(cli_path=settings["cli"], env=settings["env"], cwd=settings["cwd"])
result = [m for m in Conversations(options, host=where).send("k", sys.argv[2]) if isinstance(m, ResultMessage)][-1]
print(json.dumps({"text": result.result, "host": host.HostLink(where).ping()}))
"""


def hosts_serving(sock: Path) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                args = open(f"/proc/{entry}/cmdline", "rb").read().split(b"\0")
                state = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if b"claude_sdkurl.host" in args and str(sock).encode() in args and state != "Z":
                found.append(int(entry))
    return found


def test_processes_that_ask_at_once_start_one_host_that_outlives_them(settings: dict[str, Any], sock: Path, home: Path) -> None:
    try:
        callers = [subprocess.Popen([sys.executable, "-c", ENSURE_AND_SEND, json.dumps(settings), f"chat #{i}: from caller {i}"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(3)]  # fmt: skip
        said = []
        for caller in callers:
            out, err = caller.communicate(timeout=300)
            assert caller.returncode == 0, err[-2000:]
            said.append(json.loads(out))
        assert len({s["host"] for s in said}) == 1  # one host served all three
        assert hosts_serving(sock) == [said[0]["host"]]  # and it is still there, its starter gone
        assert len(max((s["text"] for s in said), key=len).split(" | ")) == 3  # one conversation, three turns
        assert stat.S_IMODE(os.stat(sock.parent / "host.log").st_mode) == 0o600
    finally:
        for pid in hosts_serving(sock):
            os.killpg(pid, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while (hosts_serving(sock) or live_clis(home)) and time.monotonic() < deadline:
            time.sleep(0.2)


def test_a_conversation_another_holder_keeps_busy_is_the_same_typed_error_through_the_host(
    settings: dict[str, Any], sock: Path, hosts: list[Host], api: MockMessagesAPI
) -> None:
    """A program running the same conversation in-process (same store: the CLIs' config
    directory) holds it mid-turn; a send through the host waits ``--lease-wait`` and raises
    ``ConversationBusyError``, the type it would have in-process; nothing was sent."""
    from claude_sdkurl.conversations import ConversationBusyError

    api.responder = long_or_history(400)
    hosts.append(Host(sock, "--lease-wait", "1"))
    with Conversations(options_of(settings)) as here:
        turn = here.send("k", "chat #1: long")
        next(iter(turn))  # mid-turn: the lease is held here
        served = len(api.message_requests())
        with pytest.raises(ConversationBusyError):
            list(Conversations(options_of(settings), host=sock).send("k", "chat #2: through the host"))
        assert "chat #2" not in json.dumps([r.messages() for r in api.message_requests()[served:]])
        list(turn)


def test_a_caller_that_leaves_mid_stream_leaves_the_cli_live_and_the_next_message_whole(
    settings: dict[str, Any], sock: Path, hosts: list[Host], api: MockMessagesAPI, home: Path
) -> None:
    """A caller stops reading mid-answer (a browser gone, a request cancelled): the host
    interrupts that turn and reads it to its end; the CLI stays live, and the next message,
    sent at once, runs after it with the whole history."""
    from claude_sdkurl import StreamEvent

    api.responder = long_or_history(2000)
    hosts.append(Host(sock))
    chats = Conversations(options_of(settings, include_partial_messages=True), host=sock)
    list(chats.send("k", "chat #1: hello"))
    clis = live_clis(home)
    turn = chats.send("k", "chat #2: long")
    next(m for m in turn if isinstance(m, StreamEvent))
    turn.close()  # gone mid-stream
    result = [m for m in chats.send("k", "chat #3: again") if isinstance(m, ResultMessage)][-1]
    said = (result.result or "").split(" | ")
    assert said[0] == "chat #1: hello" and said[-1] == "chat #3: again" and any("chat #2" in s for s in said), said
    assert live_clis(home) == clis  # the same CLI: no wake
    history = json.dumps(api.message_requests()[-1].messages())
    assert "[Request interrupted by user]" in history and history.count("word") < 200  # cut, not streamed on to its end


def test_hooks_run_in_the_callers_process_and_behave_as_in_process(settings: dict[str, Any], sock: Path, hosts: list[Host],
                                                                    api: MockMessagesAPI, home: Path) -> None:  # fmt: skip
    """``options.hooks`` through the host: each callback runs in the process that sent the turn
    and its answer decides as in-process. The same three turns in-process and through the host:
    a call the hook denies (not run), a call parked (``approvals.parking``: the run ends with it
    waiting), a hook that raises; what the model was told and what ran are the same."""
    from claude_sdkurl.approvals import parked, parking

    ran = home / "ran.log"

    def model(request: RecordedRequest) -> Reply:
        said = prompts(request)
        if request.tool_results():
            return text(f"tool said: {json.dumps(request.tool_results()[-1].get('content'))[:200]}")
        return tool_use("Bash", {"command": f"echo {said[-1].split(': ')[1]} >> {ran}"})

    api.responder = model
    seen: list[tuple[str, int]] = []

    def deny_rm(hook_input: Any, tool_use_id: Any, context: Any) -> dict[str, Any]:
        seen.append((hook_input["tool_input"]["command"], os.getpid()))
        if "refuse" in hook_input["tool_input"]["command"]:
            return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                           "permissionDecisionReason": "not this one"}}  # fmt: skip
        if "explode" in hook_input["tool_input"]["command"]:
            raise RuntimeError("the hook broke")
        return {}

    hooks = {"PreToolUse": [HookMatcher(hooks=[deny_rm]), parking(lambda name, tool_input: "park" if "later" in str(tool_input) else None)]}
    outcomes: dict[str, list[Any]] = {}
    hosts.append(Host(sock))
    for where in ("in-process", "host"):
        options = options_of(settings, hooks=hooks)
        chats = Conversations(options, host=sock) if where == "host" else Conversations(options, store=home / "inproc.sqlite3")
        try:
            got = []
            for i, word in enumerate(("refuse", "later", "explode", "fine")):
                result = [m for m in chats.send(f"{where}-k", f"chat #{i}: {word}") if isinstance(m, ResultMessage)][-1]
                got.append((word, result.result, parked(result) is not None))
                print(where, got[-1], flush=True)
            outcomes[where] = got
        finally:
            chats.close()
    assert outcomes["host"] == outcomes["in-process"], outcomes
    assert [g[2] for g in outcomes["host"]] == [False, True, False, False]  # the parked one waits
    assert "not this one" in str(outcomes["host"][0][1])
    assert {pid for _, pid in seen} == {os.getpid()}  # every hook ran here, the sending process
    assert ran.read_text().split().count("refuse") == 0 and ran.read_text().split().count("later") == 0


def page_of(host: Host) -> str:
    """The host's page's ``/events`` address, with the token it announced."""
    import urllib.parse

    assert host.proc.stderr is not None
    announced = host.proc.stderr.readline()
    url = urllib.parse.urlsplit(announced.split("watch at ", 1)[1].strip())
    return f"ws://{url.netloc}/events?token={urllib.parse.parse_qs(url.query)['token'][0]}"


def test_one_page_shows_every_workers_sessions_labelled_by_the_worker(settings: dict[str, Any], sock: Path, hosts: list[Host]) -> None:
    """``--relay``: the host's page shows the sessions of every attached worker, each row
    labelled with the worker (pid and machine) that sent its last turn; a ``query()`` whose CLI
    the host started (``host.spawner()``) too, labelled with its caller."""
    import socket as socket_

    from websockets.sync.client import connect

    from claude_sdkurl import query
    from claude_sdkurl.host import spawner

    host = Host(sock, "--relay", "127.0.0.1:0")
    hosts.append(host)
    events = page_of(host)
    workers = [Worker(settings), Worker(settings)]
    try:
        workers[0].send("alice", "chat #1: hello")
        workers[1].send("bob", "chat #1: hello")
        hosted = list(query(prompt="chat #1: a query", options=options_of(settings, spawn_claude_code_process=spawner(sock))))
        assert isinstance(hosted[-1], ResultMessage) and hosted[-1].result == "chat #1: a query"
        with connect(events, open_timeout=10) as page:
            labels: dict[str, str] = {}
            deadline = time.monotonic() + 60
            while len(labels) < 3 and time.monotonic() < deadline:
                frame = json.loads(page.recv(timeout=max(0.1, deadline - time.monotonic())))
                for row in frame.get("sessions") or []:
                    if row.get("label"):
                        labels[row["session_id"]] = row["label"]
        machine = socket_.gethostname()
        callers = [w.proc.pid for w in workers] + [os.getpid()]
        assert sorted(labels.values()) == sorted(f"worker {pid}@{machine}" for pid in callers), labels
        assert labels[hosted[-1].session_id] == f"worker {os.getpid()}@{machine}"
    finally:
        for worker in workers:
            worker.stop()


def test_a_host_frozen_past_its_lease_has_its_clis_stopped_by_their_fences(settings: dict[str, Any], sock: Path, hosts: list[Host],
                                                                           api: MockMessagesAPI, home: Path, tmp_path: Path) -> None:  # fmt: skip
    """The host SIGSTOPped (a paused container) while its CLI runs a tool: the CLI and the tool
    are killed by the CLI's fence, not by the frozen host, before the lease can run out; an
    in-process holder of the same store then goes on with the history."""
    log = tmp_path / "ran.log"
    api.responder = slow_tool(log)
    host = Host(sock, "--lease-ttl", "4")
    hosts.append(host)
    caller = Worker({**settings, "allowed_tools": ["Bash"]})
    frozen_at = None
    try:
        caller.ask("chat", "chat #1: work")
        deadline = time.monotonic() + 120
        while not any(str(log) in _cmdline(p) for p in _pids()) and time.monotonic() < deadline:
            time.sleep(0.05)  # the tool's shell is running
        (cli,) = live_clis(home)
        os.kill(host.proc.pid, signal.SIGSTOP)
        frozen_at = time.monotonic()
        while cli in live_clis(home) and time.monotonic() - frozen_at < 60:
            time.sleep(0.02)
        gone = time.monotonic() - frozen_at
        print(f"the frozen host's CLI was stopped {gone:.2f} s after the freeze (lease 4 s)")
        assert gone < 4.0
        with Conversations(options_of(settings), store=None, lease_wait=60) as here:  # the same store: the CLIs' config dir
            result = [m for m in here.send("chat", "chat #2: after the freeze") if isinstance(m, ResultMessage)][-1]
        assert (result.result or "").startswith("chat #1: work") and (result.result or "").endswith("chat #2: after the freeze")
        while time.monotonic() - frozen_at < 10:  # past the end the tool's sleep would have had
            time.sleep(0.2)
        assert not log.exists()
    finally:
        if frozen_at is not None:
            os.kill(host.proc.pid, signal.SIGCONT)
        caller.kill()


def test_in_process_mcp_tools_run_in_the_callers_process_through_the_host(settings: dict[str, Any], sock: Path, hosts: list[Host],
                                                                          api: MockMessagesAPI, home: Path) -> None:  # fmt: skip
    """An in-process MCP server (``create_sdk_mcp_server``) of the sending process: through the
    host its tool runs here, in the caller, and the model is told what it would be told
    in-process."""
    from claude_sdkurl import create_sdk_mcp_server, tool

    @tool("add", "Add two numbers", {"a": int, "b": int})
    def add(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": f"sum={args['a'] + args['b']} pid={os.getpid()}"}]}

    class OnFire:
        """A server whose handle() itself raises on a tool call (not the tool: the server)."""

        def __init__(self) -> None:
            self.inner = create_sdk_mcp_server("calc", tools=[add])["instance"]

        def handle(self, message: dict[str, Any]) -> Any:
            if message.get("method") == "tools/call":
                raise ValueError("the calculator is on fire")
            return self.inner.handle(message)

    def model(request: RecordedRequest) -> Reply:
        if request.tool_results():
            return text(f"tool said: {json.dumps(request.tool_results()[-1].get('content'))}")
        return tool_use("mcp__calc__add", {"a": 2, "b": 3})

    api.responder = model
    hosts.append(Host(sock))
    told = {}
    for where in ("in-process", "host"):
        for server in ("works", "on fire"):
            calc = create_sdk_mcp_server("calc", tools=[add]) if server == "works" else {"type": "sdk", "name": "calc", "instance": OnFire()}
            options = options_of(settings, mcp_servers={"calc": calc}, allowed_tools=["mcp__calc__add"])
            chats = Conversations(options, host=sock) if where == "host" else Conversations(options, store=home / "inproc.sqlite3")
            try:
                told[where, server] = [m for m in chats.send(f"{where}-{server}", "chat #1: add") if isinstance(m, ResultMessage)][-1].result
            finally:
                chats.close()
    assert told["host", "works"] == told["in-process", "works"] and f"sum=5 pid={os.getpid()}" in str(told["host", "works"]), told
    # a server that raises: the CLI is told its error, as in-process (the turn goes on), in the same words
    assert told["host", "on fire"] == told["in-process", "on fire"] and "the calculator is on fire" in str(told["host", "on fire"]), told


def test_after_the_host_restarts_its_page_lists_the_conversations_the_store_keeps_to_read(
    settings: dict[str, Any], sock: Path, hosts: list[Host], home: Path
) -> None:
    """Issue 55, item 4: the host restarted, its page still lists every conversation of its CLIs'
    config directory (each user's folder a project of its own), with its transcript; deciding
    or continuing from that listing is refused (the host's conversations hold leases)."""
    from websockets.sync.client import connect

    first = Host(sock, env={"HOME": str(home)})
    hosts.append(first)
    ids = []
    for user in ("alice", "bob"):
        (home / user).mkdir()
        chats = Conversations(ClaudeAgentOptions(cli_path=settings["cli"], env=settings["env"], cwd=str(home / user)), host=sock)
        list(chats.send(user, f"chat #1: I am {user}"))
        ids.append(chats.session_id(user) or "")
    first.kill()
    second = Host(sock, "--relay", "127.0.0.1:0", "--steer", env={"HOME": str(home)})
    hosts.append(second)
    with connect(page_of(second), open_timeout=10) as page:
        frame = json.loads(page.recv(timeout=30))
        while frame.get("k") != "stored":
            frame = json.loads(page.recv(timeout=30))
        assert sorted(row["session_id"] for row in frame["stored"]) == sorted(ids) and frame["resumable"] is False
        page.send(json.dumps({"op": "history", "session": f"stored:{ids[0]}"}))
        while (frame := json.loads(page.recv(timeout=30))).get("k") != "history":
            pass
        assert "I am alice" in json.dumps(frame["lines"])
        for op in ({"op": "continue", "session_id": ids[0], "text": "hello again"},
                   {"op": "decide_parked", "session_id": ids[0], "tool_use_id": "toolu_1", "tool_name": "Bash", "input": {}, "allow": True}):
            page.send(json.dumps({**op, "id": op["op"]}))
            while (frame := json.loads(page.recv(timeout=30))).get("k") != "done" or frame.get("id") != op["op"]:
                pass
            assert "listed to read" in str(frame["error"]), frame  # steering is on: the listing itself refuses


def test_two_workers_at_once_on_one_key_are_each_asked_only_about_their_own_turn(
    settings: dict[str, Any], sock: Path, hosts: list[Host], api: MockMessagesAPI, home: Path
) -> None:
    """A permission question goes to the worker whose turn asks it. Two workers send to one
    conversation at once; the second waits for the first's turn. Each turn runs a Bash call;
    each worker's ``can_use_tool`` must be asked about its own command only (the second
    worker, waiting, must not decide the first one's call)."""

    def model(request: RecordedRequest) -> Reply:
        said = prompts(request)
        if request.tool_results():
            return text(" | ".join(said))
        return Reply([{"type": "tool_use", "id": f"toolu_{len(said)}", "name": "Bash",
                       "input": {"command": f"touch {home}/{said[-1].split(': ')[1]}"}}], delay=0.5)  # fmt: skip

    api.responder = model
    hosts.append(Host(sock))
    workers = [Worker({**settings, "can_use_tool": "allow", "allowed_tools": []}) for _ in range(2)]
    try:
        workers[0].ask("k", "chat #1: first")
        time.sleep(0.3)  # (the second sends while the first's turn is under way; order is not asserted on it)
        workers[1].ask("k", "chat #2: second")
        asked: list[list[str]] = [[], []]
        for i, worker in enumerate(workers):
            while "key" not in (line := worker.read()):
                asked[i].append(line["input"]["command"])
            assert "error" not in line, line
        assert asked == [[f"touch {home}/first"], [f"touch {home}/second"]], asked
    finally:
        for worker in workers:
            worker.kill()


# ---------------------------------------------------------------------- query() and ClaudeClient on the host


def host_children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid``."""
    found = []
    for entry in _pids():
        try:
            fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry))
    return found


def test_a_caller_killed_with_a_permission_pending_leaves_nothing_running_on_the_host(
    settings: dict[str, Any], sock: Path, hosts: list[Host], api: MockMessagesAPI, home: Path
) -> None:
    api.responder = lambda request: (text("never") if request.tool_results() else tool_use("Bash", {"command": f"touch {home}/touched"}))
    hosts.append(Host(sock))
    caller = f"""
import sys, time
from claude_sdkurl import ClaudeAgentOptions, query
from claude_sdkurl.host import spawner
def ask(name, tool_input, context):
    print("asked", name, flush=True)
    time.sleep(600)
options = ClaudeAgentOptions(cli_path={settings['cli']!r}, env={settings['env']!r}, cwd={settings['cwd']!r},
                             can_use_tool=ask, spawn_claude_code_process=spawner({str(sock)!r}))
for message in query(prompt="chat #1: touch it", options=options):
    pass
"""
    worker = subprocess.Popen([sys.executable, "-c", caller], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert worker.stdout is not None
        line = worker.stdout.readline()
        assert line.strip() == "asked Bash", (line, worker.stderr.read() if worker.poll() is not None else "")  # type: ignore[union-attr]
        clis = live_clis(home)
        assert len(clis) == 1 and host_children(hosts[0].proc.pid) == clis  # the host's child, not the caller's
        worker.kill()
        worker.wait(30)
        deadline = time.monotonic() + 30
        while live_clis(home) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert live_clis(home) == [], "a CLI whose caller is gone runs on in the host"
        time.sleep(1)
        assert not (home / "touched").exists()  # nothing ran that nobody decided
        results = [b for r in api.message_requests() for b in r.tool_results()]
        assert all(b.get("is_error") for b in results), results  # the model heard of no tool that ran
    finally:
        worker.kill()
        worker.wait()
        for stream in (worker.stdout, worker.stderr):
            stream.close()  # type: ignore[union-attr]


def test_query_and_a_client_run_on_the_host_end_as_in_process_with_callbacks_here(
    settings: dict[str, Any], sock: Path, hosts: list[Host], api: MockMessagesAPI, home: Path
) -> None:
    from claude_sdkurl import ClaudeSDKClient, PermissionResultAllow, query
    from claude_sdkurl.host import spawner

    api.responder = bash_when("run it", f"touch {home}/ran && echo ran-$((20+22))")
    hosts.append(Host(sock))
    asked: list[tuple[str, int, list[int]]] = []

    def allow(name: str, tool_input: dict[str, Any], context: Any) -> PermissionResultAllow:
        asked.append((name, os.getpid(), host_children(hosts[0].proc.pid)))
        return PermissionResultAllow()

    def run(hosted: bool) -> list[tuple[str, str]]:
        extra = {"spawn_claude_code_process": spawner(sock)} if hosted else {}
        options = options_of(settings, allowed_tools=[], can_use_tool=allow, **extra)
        seen = [(type(m).__name__, getattr(m, "result", None) or "") for m in query(prompt="chat #1: run it", options=options)]
        with ClaudeSDKClient(options) as client:
            for prompt in ("chat #2: first", "chat #3: second"):
                client.query(prompt)
                seen += [(type(m).__name__, getattr(m, "result", None) or "") for m in client.receive_response()]
        return seen

    here = run(hosted=False)
    requests_here = len(api.message_requests())
    there = run(hosted=True)
    assert there == here, (there, here)  # the same messages, the same results
    assert len(api.message_requests()) == 2 * requests_here  # the same calls to the model
    assert any("ran-42" in result for _, result in there)
    assert ("ResultMessage", "chat #2: first | chat #3: second") in there  # the client's history, kept across turns
    (in_process, on_host) = asked
    assert in_process[1] == on_host[1] == os.getpid()  # asked here both times
    assert in_process[2] == [] and len(on_host[2]) == 1  # the hosted CLI was the host's child


# ---------------------------------------------------------------------- more than one machine


def test_a_host_given_a_store_it_cannot_open_says_so_and_serves_nothing(sock: Path) -> None:
    for flags, said in ((["--store", "postgresql://nobody@127.0.0.1:1/none"], "the store cannot be opened"),
                        (["--store", "ftp://example/x"], "not ftp://"),
                        (["--session-store", "/tmp/transcripts.db"], "postgresql://... or redis://...")):  # fmt: skip
        ran = subprocess.run([sys.executable, "-m", "claude_sdkurl.host", "--socket", str(sock), *flags], capture_output=True,
                             text=True, timeout=120)  # fmt: skip
        assert ran.returncode == 2 and said in ran.stderr, (flags, ran.stderr)
        assert not sock.exists()  # nothing listened


def test_hosts_on_two_machines_sharing_postgresql_go_on_with_one_conversation(settings: dict[str, Any], api: MockMessagesAPI,
                                                                              home: Path, hosts: list[Host], postgres_url: str,
                                                                              tmp_path: Path) -> None:  # fmt: skip
    """Two hosts with homes of their own (two machines with the application at the same path),
    given one PostgreSQL for the conversations' leases (``--store``) and their transcripts
    (``--session-store``); each message of the conversation lands on the other machine's worker
    and host: each answer carries the whole history, and never two CLIs run the conversation."""
    import tempfile

    from .test_realcli_conversations_outlive import Sampler

    tag = f"{os.getpid()}_{time.monotonic_ns()}"
    shared = ("--store", f"{postgres_url}#conv_{tag}", "--session-store", f"{postgres_url}#sess_{tag}", "--lease-ttl", "5")
    import shutil

    machines: list[Worker] = []
    base = Path(tempfile.mkdtemp(prefix="claude-sdkurl-hosts-"))  # (short: a socket's path is at most 107 bytes)
    sampler = None
    try:
        for name in ("a", "b"):
            own = home / name
            own.mkdir()
            hosts.append(Host(base / name / "host.sock", *shared))
            machines.append(Worker({**settings, "host": str(base / name / "host.sock"), "env": {**settings["env"], "HOME": str(own)}}))
        sampler = Sampler(home / "a", home / "b")
        answers = [machines[n % 2].send("alice", f"alice #{n}: on machine {'ab'[n % 2]}") for n in range(1, 5)]
    finally:
        for m in machines:
            m.kill()
        if sampler is not None:
            sampler.stop()
        shutil.rmtree(base, ignore_errors=True)
    assert sampler is not None
    for n, answer in enumerate(answers, 1):
        assert "error" not in answer, answer
        assert answer["text"].split(" | ") == [f"alice #{i}: on machine {'ab'[i % 2]}" for i in range(1, n + 1)], answer
    assert len({a["session_id"] for a in answers}) >= 1
    assert sampler.most == 1 and sampler.samples > 10, sampler.overlaps  # one CLI on the conversation, on either machine


def test_a_workers_spare_pool_parks_its_spares_on_the_host(settings: dict[str, Any], sock: Path, hosts: list[Host],
                                                            api: MockMessagesAPI, home: Path) -> None:  # fmt: skip
    """``SparePool`` with ``host.spawner()``: the spares' CLIs are started (and parked) by the host,
    a query claims one and answers as a cold one would; the pool's close stops them on the host."""
    from claude_sdkurl import SparePool, query
    from claude_sdkurl.host import spawner

    api.responder = history_echo
    hosts.append(Host(sock))
    options = ClaudeAgentOptions(cli_path=settings["cli"], env=settings["env"], spawn_claude_code_process=spawner(sock))
    from .test_realcli_spares import parked

    with SparePool(1, options) as pool:
        parked(pool, 1)
        spare = host_children(hosts[0].proc.pid)
        assert len(spare) == 1 and spare == live_clis(home)  # the spare: the host's child, not ours
        claimed = list(query(prompt="chat #1: from a spare", options=dataclasses.replace(options, cwd=settings["cwd"])))
        assert pool.stats["claimed"] == 1, dict(pool.stats)
        assert isinstance(claimed[-1], ResultMessage) and claimed[-1].result == "chat #1: from a spare"
    deadline = time.monotonic() + 30
    while live_clis(home) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_clis(home) == []  # the pool closed: its spares are gone from the host too


def test_a_batch_on_threads_runs_each_item_on_the_host(settings: dict[str, Any], sock: Path, hosts: list[Host],
                                                       api: MockMessagesAPI, home: Path) -> None:  # fmt: skip
    """``run_batch`` with ``host.spawner()``: each item's CLI is the host's child (sampled), every
    answer is right, and the costs are those of the calls the mock served."""
    from claude_sdkurl.batch import run_batch
    from claude_sdkurl.host import spawner

    from .test_realcli_conversations import MostAtOnce

    api.responder = history_echo
    hosts.append(Host(sock))
    options = options_of(settings, spawn_claude_code_process=spawner(sock))
    prompts = [f"chat #{i}: item {i}" for i in range(4)]
    seen_parents: set[int] = set()

    def parents() -> list[str | None]:
        found = live_clis(home)
        for pid in found:
            try:
                parent = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if parent not in found:  # (a CLI's fork before its exec looks like a CLI: its parent is one)
                seen_parents.add(parent)
        return []

    result: list[Any] = []
    MostAtOnce.during(parents, lambda: result.append(run_batch(prompts, options, max_concurrency=2)), threads=1)
    (batch,) = result
    assert [i.text for i in batch.items] == prompts and not batch.failed
    assert seen_parents == {hosts[0].proc.pid}, seen_parents  # every CLI the host's
    served = [r.served_usage for r in api.message_requests() if r.served_usage]
    assert batch.total_tokens("output_tokens") == sum(u["output_tokens"] for u in served)


# ---------------------------------------------------------------------- bounds through the host (issue 68)


def test_a_worker_frozen_with_a_question_pending_bounds_neither_the_next_send_nor_the_turn(
    settings: dict[str, Any], sock: Path, hosts: list[Host], api: MockMessagesAPI, home: Path
) -> None:
    """Worker A is SIGSTOPped with a ``can_use_tool`` question pending. B's ``send(timeout=5)`` on
    the same conversation raises ``ConversationBusyError`` at 5 s, as in-process; after the
    host's ``--answer-timeout`` the question is denied with a reason the model sees, nothing runs
    that nobody decided, and B's next send goes on with the history on the same live CLI."""
    from claude_sdkurl.conversations import ConversationBusyError

    api.responder = bash_when("touch it", f"touch {home}/touched")
    hosts.append(Host(sock, "--answer-timeout", "10"))
    asking = Worker({**settings, "can_use_tool": "block", "allowed_tools": []})
    try:
        asking.ask("k", "chat #1: touch it")
        assert asking.read()["asked"] == "Bash"
        os.kill(asking.proc.pid, signal.SIGSTOP)
        frozen = time.monotonic()
        clis = live_clis(home)
        # B runs the same deploy's options as A (a can_use_tool of its own, never asked here): a
        # worker made later whose launch-time options differed would restart the CLI on its turn
        # (tests/test_realcli_deploy.py), and this test is about the same live CLI going on
        chats = Conversations(options_of(settings, allowed_tools=[], can_use_tool=lambda *a: PermissionResultDeny(message="B was not asked")),
                              host=sock)  # fmt: skip
        began = time.monotonic()
        with pytest.raises(ConversationBusyError, match="nothing was sent"):
            list(chats.send("k", "chat #2: from B", timeout=5))
        took = time.monotonic() - began
        print(f"B's send(timeout=5) raised after {took:.2f} s")
        assert 4.9 <= took < 40
        result = [m for m in chats.send("k", "chat #3: after", timeout=120) if isinstance(m, ResultMessage)][-1]
        print(f"A's question was answered for it; B's next turn ended {time.monotonic() - frozen:.2f} s after A froze")
        assert time.monotonic() - frozen >= 9  # (not before the answer timeout: the question held the turn)
        requests = api.message_requests()
        denied = [r for r in requests if r.tool_results()]
        assert denied and "did not answer within 10 s" in json.dumps(denied[0].tool_results()), "the model is told why"
        assert not (home / "touched").exists()
        assert prompts(requests[-1]) == ["chat #1: touch it", "chat #3: after"]  # B's timed-out message was never sent
        assert (result.result or "").endswith("chat #3: after") and live_clis(home) == clis  # the same CLI: no wake
    finally:
        os.kill(asking.proc.pid, signal.SIGCONT)
        asking.kill()


def test_a_host_frozen_mid_tool_call_is_a_typed_error_within_ten_seconds(settings: dict[str, Any], sock: Path, hosts: list[Host],
                                                                         api: MockMessagesAPI, home: Path, tmp_path: Path) -> None:  # fmt: skip
    """The host SIGSTOPped while its CLI runs a tool: the caller's turn raises ``HostGoneError``
    once the host has been silent 10 s (the heartbeats stopped), instead of waiting for ever; the
    CLI's fence stops the CLI and the tool meanwhile."""
    log = tmp_path / "ran.log"
    api.responder = slow_tool(log)
    host = Host(sock)
    hosts.append(host)
    chats = Conversations(options_of(settings), host=sock)
    turn = chats.send("k", "chat #1: work")
    next(iter(turn))
    deadline = time.monotonic() + 120
    while not any(str(log) in _cmdline(p) for p in _pids()) and time.monotonic() < deadline:
        time.sleep(0.05)  # the tool's shell is running
    os.kill(host.proc.pid, signal.SIGSTOP)
    frozen = time.monotonic()
    try:
        with pytest.raises(HostGoneError, match="sent nothing for 10 s"):
            for _ in turn:
                pass
        took = time.monotonic() - frozen
        print(f"the caller was told {took:.2f} s after the host froze")
        assert 9.9 <= took < 40
    finally:
        os.kill(host.proc.pid, signal.SIGCONT)


def test_a_host_restarted_while_another_machines_host_holds_a_conversation_takes_over_only_its_own(
    settings: dict[str, Any], api: MockMessagesAPI, home: Path, hosts: list[Host], postgres_url: str
) -> None:
    """Two machines' hosts share PostgreSQL (leases of 600 s). Machine a's host is killed and
    started again: its own conversation answers at once with its history (taken over), while a
    conversation machine b's host holds mid-turn (its caller deciding a Bash call) is still b's (a
    send through a raises ``ConversationBusyError``, nothing is sent); once b's turn has ended, a
    message through a has b hand it over, with its whole history."""
    import shutil
    import tempfile
    import threading

    from claude_sdkurl import PermissionResultAllow
    from claude_sdkurl.conversations import ConversationBusyError

    api.responder = bash_when("touch it", f"touch {home}/touched")
    asked, decide = threading.Event(), threading.Event()

    def deciding(*_: Any) -> Any:
        asked.set()
        decide.wait(120)
        return PermissionResultAllow()

    tag = f"{os.getpid()}_{time.monotonic_ns()}"
    shared = ("--store", f"{postgres_url}#conv_{tag}", "--session-store", f"{postgres_url}#sess_{tag}", "--lease-ttl", "600",
              "--lease-wait", "3")  # fmt: skip
    base = Path(tempfile.mkdtemp(prefix="claude-sdkurl-hosts-"))
    try:
        machine: dict[str, Conversations] = {}
        for name in ("a", "b"):
            (home / name).mkdir()
            hosts.append(Host(base / name / "host.sock", *shared))
            machine[name] = Conversations(options_of({**settings, "env": {**settings["env"], "HOME": str(home / name)}},
                                                     allowed_tools=[], can_use_tool=deciding if name == "b" else None),
                                          host=base / name / "host.sock")  # fmt: skip

        def said(name: str, key: str, prompt: str) -> list[str]:
            result = [m for m in machine[name].send(key, prompt) if isinstance(m, ResultMessage)][-1]
            return (result.result or "").split(" | ")

        assert said("a", "alice", "alice #1: on a") == ["alice #1: on a"]
        bobs = machine["b"].send("bob", "bob #1: touch it")
        finishing = threading.Thread(target=lambda: list(bobs))
        finishing.start()
        assert asked.wait(120)  # b holds bob, mid-turn
        hosts[0].kill()
        hosts.append(Host(base / "a" / "host.sock", *shared))
        began = time.monotonic()
        assert said("a", "alice", "alice #2: after the restart") == ["alice #1: on a", "alice #2: after the restart"]
        print(f"a's first message after its restart took {time.monotonic() - began:.2f} s (leases of 600 s)")
        served = len(api.message_requests())
        with pytest.raises(ConversationBusyError):
            list(machine["a"].send("bob", "bob #2: through a while b is busy"))
        assert "bob #2" not in json.dumps([r.messages() for r in api.message_requests()[served:]])
        decide.set()  # b's turn ends
        finishing.join(120)
        assert said("a", "bob", "bob #3: through a") == ["bob #1: touch it", "bob #3: through a"]  # b handed it over
    finally:
        decide.set()
        shutil.rmtree(base, ignore_errors=True)
