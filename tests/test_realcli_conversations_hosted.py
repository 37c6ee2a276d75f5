"""The in-process conversation tests of ``tests/test_realcli_conversations.py``, run again through
a session host (a real ``python -m claude_sdkurl.host`` process, the real CLI 2.1.330): the same
calls on ``Conversations(options, host=...)``, the same outcomes a user sees (answers, each turn's
history, never more CLIs than allowed, never two on one conversation). Where the host's way
differs it is said at the test (a turn left mid-way is interrupted, its CLI stays live).

Left out, and why: the lease tests (a store shared by two ``Conversations`` in this process: with
a host, the host is the one holder; its leases are tested in ``tests/test_realcli_host.py``), and
closing with turns under way (with ``host=`` a ``close()`` stops nothing: the CLIs are the host's).
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import ClaudeAgentOptions, Conversations, ResultMessage

from .test_realcli_conversations import PROMPT, MostAtOnce, echo, user_texts
from .test_realcli_conversations_outlive import live_clis
from .test_realcli_host import Host, hosts, sock  # noqa: F401 - fixtures

pytestmark = pytest.mark.realcli


@pytest.fixture
def options(cli_paths: dict[str, Path], api: Any, home: Path) -> ClaudeAgentOptions:
    from claude_sdkurl.testing import offline_env

    api.responder = echo
    return ClaudeAgentOptions(cli_path=str(cli_paths["stdio"]), env=offline_env(api.url, home), cwd=str(home / "work"))


@pytest.fixture
def hosted(options: ClaudeAgentOptions, sock: Path, hosts: list[Host]) -> Callable[..., Conversations]:  # noqa: F811
    """``hosted("--max-live", "5")``: a host started with those flags, and conversations on it."""

    def make(*flags: str) -> Conversations:
        hosts.append(Host(sock, *flags))
        return Conversations(options, host=sock)

    return make


def host_clis(home: Path, host: Host) -> list[int]:
    """The live CLIs of this test that are the host's children (a CLI's fork before its exec has
    the CLI's command line and environment too: seen under load, it is not one)."""
    found = []
    for pid in live_clis(home):
        try:
            parent = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == host.proc.pid:
            found.append(pid)
    return found


def resumes(home: Path, host: Host) -> list[str | None]:
    """For each of the host's live CLIs, the session it resumed (``None``: a new one)."""
    out = []
    for pid in host_clis(home, host):
        try:
            args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        out.append(args[args.index(b"--resume") + 1].decode() if b"--resume" in args else None)
    return out


def test_twelve_conversations_over_five_clis_from_ten_threads(hosted: Callable[..., Conversations], api: Any, home: Path,
                                                              hosts: list[Host]) -> None:  # noqa: F811 # fmt: skip
    chats = hosted("--max-live", "5", "--idle-timeout", "3600")
    keys = [f"conv-{i}" for i in range(12)]
    sends = [(k, n) for k in keys for n in range(2)]
    random.Random(7).shuffle(sends)
    served: dict[str, list[str]] = {k: [] for k in keys}
    answers: dict[str, str | None] = {}
    errors: list[BaseException] = []
    lock = threading.Lock()
    busy: set[str] = set()
    todo = list(sends)

    def worker() -> None:
        while True:
            with lock:  # (one turn at a time per conversation from here, so its order is known)
                if not todo:
                    return
                item = next((s for s in todo if s[0] not in busy), None)
                if item is not None:
                    todo.remove(item)
                    busy.add(item[0])
            if item is None:
                time.sleep(0.01)
                continue
            key, n = item
            prompt = f"{key} message {n}"
            with lock:
                served[key].append(prompt)
            try:
                result = [m for m in chats.send(key, prompt) if isinstance(m, ResultMessage)][-1]
                with lock:
                    answers[prompt] = result.result
            except BaseException as e:
                with lock:
                    errors.append(e)
            finally:
                with lock:
                    busy.discard(key)

    most = MostAtOnce.during(lambda: resumes(home, hosts[0]), worker, threads=10)
    assert not errors, errors[:3]
    assert chats.live() <= 5
    assert answers == {f"{k} message {n}": f"echo: {k} message {n}" for k, n in sends}
    assert most["clis"] <= 5 and most["shared"] == 0, most
    for request in api.message_requests():  # every turn: its conversation's history, in order, nothing else
        said = user_texts(request)
        key = PROMPT.match(said[-1]).group(1)  # type: ignore[union-attr]
        assert said == served[key][: served[key].index(said[-1]) + 1], (said, served[key])


def test_a_turn_left_mid_way_and_the_next_has_the_history(hosted: Callable[..., Conversations], api: Any, home: Path,
                                                           hosts: list[Host]) -> None:  # noqa: F811 # fmt: skip
    chats = hosted("--max-live", "2")
    assert [m for m in chats.send("conv-1", "conv-1 message 0")]  # whole turns work
    stream = chats.send("conv-1", "tell me a story")
    next(iter(stream))
    stream.close()  # left mid-turn: through the host, the turn is interrupted and the CLI stays live
    last = [m for m in chats.send("conv-1", "conv-1 message 1") if isinstance(m, ResultMessage)][-1]
    assert last.result == "echo: conv-1 message 1"
    # the story's request, if the CLI got as far as making it before the interrupt (it may not
    # have: then nothing was asked of the model at all), was cut
    asked = [r for r in api.message_requests() if r.last_user_text() == "tell me a story"]
    deadline = time.monotonic() + 15  # (the mock sees the cut at its next write; the story streams for about 19 s)
    while not all(r.cut for r in asked) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(r.cut for r in asked), "the model's answer to a turn nobody reads streamed on to its end"
    print(f"the story was asked of the model {len(asked)} time(s), cut each time")
    assert user_texts(api.message_requests()[-1]) == ["conv-1 message 0", "conv-1 message 1"]
    assert len(host_clis(home, hosts[0])) == 1  # the same CLI goes on


def test_a_cli_killed_while_its_conversation_waits_is_woken_afresh(hosted: Callable[..., Conversations], api: Any, home: Path,
                                                                   hosts: list[Host]) -> None:  # noqa: F811 # fmt: skip
    chats = hosted("--max-live", "2")
    list(chats.send("conv-1", "conv-1 message 0"))
    (pid,) = host_clis(home, hosts[0])
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.5)
    last = [m for m in chats.send("conv-1", "conv-1 message 1") if isinstance(m, ResultMessage)][-1]
    assert last.result == "echo: conv-1 message 1"
    assert user_texts(api.message_requests()[-1]) == ["conv-1 message 0", "conv-1 message 1"]
    assert len(host_clis(home, hosts[0])) == 1 and host_clis(home, hosts[0]) != [pid]  # a new CLI took the conversation on


def test_idle_conversations_hibernate_on_their_own(hosted: Callable[..., Conversations], api: Any, home: Path) -> None:
    chats = hosted("--max-live", "3", "--idle-timeout", "0.5")
    list(chats.send("conv-1", "conv-1 message 0"))
    list(chats.send("conv-2", "conv-2 message 0"))
    deadline = time.monotonic() + 20
    while (chats.live() or live_clis(home)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert chats.live() == 0 and live_clis(home) == []
    list(chats.send("conv-2", "conv-2 message 1"))
    assert user_texts(api.message_requests()[-1]) == ["conv-2 message 0", "conv-2 message 1"]


def test_bad_input_is_a_typed_error_and_starts_nothing(hosted: Callable[..., Conversations], options: ClaudeAgentOptions,
                                                       sock: Path, home: Path) -> None:  # noqa: F811 # fmt: skip
    chats = hosted()
    with pytest.raises(ValueError):
        Conversations(options, host=sock, max_live=0)
    with pytest.raises(ValueError):
        Conversations(ClaudeAgentOptions(resume="x"), host=sock)
    with pytest.raises(ValueError):
        chats.send("", "hello")
    with pytest.raises(TypeError):
        chats.send("k", b"hello")  # type: ignore[arg-type]
    chats.close()
    with pytest.raises(RuntimeError, match="closed"):
        chats.send("conv-9", "hello")
    assert live_clis(home) == []
