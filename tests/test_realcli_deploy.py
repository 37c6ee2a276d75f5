"""Issue 68, items 2 and 4, on the real CLI 2.1.330 and a real session host process: a deploy
with other options reaches every conversation's next turn (a new model by a control request on
the live CLI; a rotated API key and a new tool list by one restart with the conversation's
history), the transcript stays one chain and its cost is counted once, checked against the
calls the mock served; a rolling deploy (an older worker's turns between the newer's) restarts
no CLI; and a message typed on a relay's page between two sends leaves each send with its own
turn, in-process and through the host. The guards line by line: ``tests/test_conversations_options.py``."""

from __future__ import annotations

import dataclasses
import json
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import ClaudeAgentOptions, Conversations, ResultMessage
from claude_sdkurl._engine.session import outside_of
from claude_sdkurl.testing import MockMessagesAPI, offline_env, text

from .test_notebook_magic import answered, page_message
from .test_realcli_conversations_hosted import host_clis
from .test_realcli_host import Host, hosts, sock  # noqa: F401 - fixtures

pytestmark = pytest.mark.realcli

MODEL_A, MODEL_B = "claude-sonnet-4-5", "claude-haiku-4-5"


def results(chats: Conversations, key: str, prompt: str, **kw: Any) -> list[ResultMessage]:
    return [m for m in chats.send(key, prompt, **kw) if isinstance(m, ResultMessage)]


def chain_prompts(home: Path, session_id: str) -> tuple[int, list[str]]:
    """How many transcripts this test's CLIs wrote, and the user prompts on the branch that ends
    at the session's last entry (walked back by ``parentUuid``), oldest first."""
    files = list((home / ".claude" / "projects").rglob("*.jsonl"))
    (path,) = [f for f in files if f.stem == session_id]
    entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    by_uuid = {e["uuid"]: e for e in entries if isinstance(e.get("uuid"), str)}
    last = [e for e in entries if e.get("type") in ("user", "assistant")][-1]
    prompts: list[str] = []
    entry: dict[str, Any] | None = last
    while entry is not None:
        content = (entry.get("message") or {}).get("content")
        if entry.get("type") == "user" and isinstance(content, str):
            prompts.append(content)
        elif entry.get("type") == "user" and isinstance(content, list):
            prompts += [b["text"] for b in content if b.get("type") == "text" and b.get("text", "").startswith("turn ")][-1:]
        entry = by_uuid.get(entry.get("parentUuid") or "")
    return len(files), [p for p in reversed(prompts) if p.startswith("turn ")]


def test_a_deploy_reaches_each_conversations_next_turn_once_one_chain_its_cost_counted_once(
    cli_paths: dict[str, Path], api: MockMessagesAPI, home: Path, sock: Path, hosts: list[Host]  # noqa: F811
) -> None:
    """Four deploys, each a new ``Conversations`` (a worker made later) with other options: a new
    model (set on the live CLI), a rotated API key and a new tool list (each one restart, resumed),
    then an older worker still alive sending between the newest's turns (no restart: its own
    model by a control request, the newest's key and tools)."""
    api.responder = lambda r: text(f"echo: {r.last_user_text()}")
    hosts.append(Host(sock))
    base = ClaudeAgentOptions(cli_path=str(cli_paths["stdio"]), env=offline_env(api.url, home), cwd=str(home / "work"),
                              model=MODEL_A)  # fmt: skip

    def deploy(**changes: Any) -> Conversations:
        time.sleep(0.01)  # (each deploy's workers are made after the last's)
        options = dataclasses.replace(base, **changes)
        return Conversations(options, host=sock)

    v1 = deploy()
    v2 = deploy(model=MODEL_B)
    rotated = {**base.env, "ANTHROPIC_API_KEY": "sk-ant-rotated-key"}
    v3 = deploy(model=MODEL_B, env=rotated)
    v4 = deploy(model=MODEL_B, env=rotated, tools=["Read", "Grep"])
    said: list[tuple[str, ResultMessage]] = []
    pids: list[list[int]] = []
    for n, chats in enumerate([v1, v2, v3, v4, v4, v1, v4]):
        (result,) = results(chats, "alice", f"turn {n}")
        assert result.result == f"echo: turn {n}" and not result.is_error, result
        said.append((f"turn {n}", result))
        pids.append(host_clis(home, hosts[0]))
    served = api.message_requests()
    # a model set on a live CLI: the CLI checks it with a one-token call of its own (not in its totals)
    checks = [r for r in served if r.body.get("max_tokens") == 1]
    assert [(r.last_user_text(), r.body["model"]) for r in checks] == [("Hi", MODEL_B), ("Hi", MODEL_A), ("Hi", MODEL_B)]
    requests = [r for r in served if r not in checks]
    assert [r.last_user_text() for r in requests] == [f"turn {n}" for n in range(7)]  # one call a turn: nothing paid again
    assert [r.body["model"] for r in requests] == [MODEL_A, MODEL_B, MODEL_B, MODEL_B, MODEL_B, MODEL_A, MODEL_B]
    keys = [r.headers.get("x-api-key") for r in requests]
    assert keys == ["sk-ant-test-key"] * 2 + ["sk-ant-rotated-key"] * 5  # the older worker's turn too: the newest's key
    tools = [sorted(t["name"] for t in r.body.get("tools", [])) for r in requests]
    assert len(tools[0]) > 2 and tools[2] == tools[0] and all(t == ["Grep", "Read"] for t in tools[3:])
    # the CLI: one until the key changed, one more for the tools, then no other (the old worker's turn too)
    assert all(len(p) == 1 for p in pids), pids
    assert pids[0] == pids[1] and pids[1] != pids[2] and pids[2] != pids[3] and pids[3] == pids[4] == pids[5] == pids[6], pids
    # one session, one transcript, one chain holding every turn in order
    (session_id,) = {r.session_id for _, r in said}
    files, prompts = chain_prompts(home, session_id)
    assert files == 1 and prompts == [f"turn {n}" for n in range(7)], (files, prompts)
    # the cost, counted once: the CLI's running total after each turn is the one before plus that
    # turn's call at its model's price (each price read off live turns: the first; the fourth and fifth)
    totals = [r.total_cost_usd or 0.0 for _, r in said]
    price = {MODEL_A: totals[0], MODEL_B: totals[4] - totals[3]}
    assert price[MODEL_A] > 0 and price[MODEL_B] > 0 and price[MODEL_A] != pytest.approx(price[MODEL_B]), price
    expected = [sum(price[r.body["model"]] for r in requests[: n + 1]) for n in range(7)]
    assert totals == pytest.approx(expected, rel=1e-9), (totals, expected)


def page_of(host: Host) -> str:
    """The host's ``/ws`` (the notes' frontends), with its token, from the line it announces."""
    assert host.proc.stderr is not None
    announced = host.proc.stderr.readline()
    url = urllib.parse.urlsplit(announced.split("watch at ", 1)[1].strip())
    return f"ws://{url.netloc}/ws?token={urllib.parse.parse_qs(url.query)['token'][0]}"


def frontend_says(url: str, frame: dict[str, Any], until: Callable[[dict[str, Any]], bool], timeout: float = 60) -> None:
    from websockets.sync.client import connect

    with connect(url, open_timeout=10) as ws:
        ws.send(json.dumps(frame))
        end = time.monotonic() + timeout
        while not until(json.loads(ws.recv(timeout=max(0.1, end - time.monotonic())))):
            pass


def check_page_turns(chats: Conversations, url: str) -> None:
    """A page's message between two sends: the program's next send, and each later one, gives
    its own turn's answer; with ``outside=True`` the page's turn comes first, marked."""
    assert [r.result for r in results(chats, "k", "first")] == ["answer to: first"]
    session_id = chats.session_id("k")
    assert session_id
    frontend_says(url, page_message("From the page", session_id), answered("From the page"))
    assert [r.result for r in results(chats, "k", "second")] == ["answer to: second"]  # was: the page's answer
    assert [r.result for r in results(chats, "k", "third")] == ["answer to: third"]  # was: second's, for ever
    frontend_says(url, page_message("Again from the page", session_id), answered("Again from the page"))
    messages = list(chats.send("k", "fourth", outside=True))
    ends = [i for i, m in enumerate(messages) if isinstance(m, ResultMessage)]
    assert [(messages[i].result, outside_of(messages[i])) for i in ends] == [  # type: ignore[attr-defined]
        ("answer to: Again from the page", "turn"), ("answer to: fourth", None)]  # fmt: skip
    assert all(outside_of(m) == "turn" for m in messages[: ends[0] + 1]) and not any(outside_of(m) for m in messages[ends[0] + 1:])


def test_a_message_from_the_relays_page_between_two_sends_in_process(cli_paths: dict[str, Path], api: MockMessagesAPI,
                                                                      home: Path) -> None:  # fmt: skip
    from claude_sdkurl import relay

    api.responder = lambda r: text(f"answer to: {r.last_user_text()}")
    options = ClaudeAgentOptions(cli_path=str(cli_paths["stdio"]), env=offline_env(api.url, home), cwd=str(home / "work"))
    serving = relay.serve(port=0, steer=True, token="deploy-relay-token-0123456789", announce=False)
    try:
        with Conversations(options, store=":memory:") as chats:
            check_page_turns(chats, f"ws://127.0.0.1:{serving.port}/ws?token=deploy-relay-token-0123456789")
            assert chats.stats["outside"] == 2
    finally:
        serving.close()


def test_a_message_from_the_hosts_page_between_two_sends(cli_paths: dict[str, Path], api: MockMessagesAPI, home: Path,
                                                          sock: Path, hosts: list[Host]) -> None:  # noqa: F811 # fmt: skip
    api.responder = lambda r: text(f"answer to: {r.last_user_text()}")
    host = Host(sock, "--relay", "127.0.0.1:0", "--steer")
    hosts.append(host)
    options = ClaudeAgentOptions(cli_path=str(cli_paths["stdio"]), env=offline_env(api.url, home), cwd=str(home / "work"))
    check_page_turns(Conversations(options, host=sock), page_of(host))
