"""Issue 68, items 2 and 4, without a CLI: each turn of a ``Conversations`` runs with its sender's
options, and a turn someone else asked for (a relay's page) is passed over. The conversations
run on ``ClaudeClient`` with a stand-in CLI (``testing.MockTransport``): every start is recorded
with its options, every control request with its fields, and the stand-in keeps the session id
it was told to resume, as the real CLI does. The same paths on the real CLI, in-process and
through the session host: ``tests/test_realcli_deploy.py``."""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from claude_sdkurl import (
    ClaudeAgentOptions,
    ClaudeClient,
    Conversations,
    HookMatcher,
    PermissionResultAllow,
    ResultMessage,
    create_sdk_mcp_server,
    tool,
)
from claude_sdkurl import conversations as conversations_module
from claude_sdkurl._engine import relaunch
from claude_sdkurl._engine.session import outside_of
from claude_sdkurl.testing import FakeCLI, MockTransport


class StandIn:
    """The CLIs a ``Conversations`` starts: each a ``MockTransport``. A user line is answered
    with a turn (``answer: <prompt>``); a prompt ``ask`` first asks ``can_use_tool`` (and, with a
    ``PreToolUse`` hook registered, the hook) and says what it was told; control requests are
    answered with success unless ``refuse`` names their subtype."""

    def __init__(self) -> None:
        self.started: list[ClaudeAgentOptions] = []
        self.controls: list[dict[str, Any]] = []
        self.transports: list[MockTransport] = []
        self.refuse: set[str] = set()
        self.hook_ids: list[str] = []

    def client(self, options: ClaudeAgentOptions) -> ClaudeClient:
        transport = MockTransport(self.handle)
        if options.resume:
            transport.cli.session_id = options.resume  # a resumed session keeps its id
        self.started.append(options)
        self.transports.append(transport)
        return ClaudeClient(options, transport=transport)

    def handle(self, message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "control_request":
            request = message["request"]
            if request["subtype"] == "initialize":
                self.hook_ids = [i for ms in (request.get("hooks") or {}).values() for m in ms for i in m["hookCallbackIds"]]
                return
            self.controls.append(request)
            if request["subtype"] in self.refuse:
                cli.emit({"type": "control_response", "response": {"subtype": "error", "request_id": message["request_id"],
                                                                   "error": "not for this CLI"}})  # fmt: skip
            else:
                cli.respond(message)
        elif message["type"] == "user":
            said = message["message"]["content"]
            if said == "ask":
                told = [cli.request("can_use_tool", tool_name="Bash", input={"command": "ls"}, permission_suggestions=[])]
                told += [cli.request("hook_callback", callback_id=i, input={"hook_event_name": "PreToolUse"}) for i in self.hook_ids]
                said = repr([t["response"].get("response", t["response"]) for t in told])
            cli.turn(f"answer: {said}")

    @property
    def last(self) -> MockTransport:
        return self.transports[-1]


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> StandIn:
    made = StandIn()
    monkeypatch.setattr(conversations_module, "ClaudeClient", made.client)
    return made


@pytest.fixture
def chats() -> Iterator[Conversations]:
    with Conversations(ClaudeAgentOptions(), store=":memory:") as made:
        yield made


def said(chats: Conversations, key: str, prompt: str, options: ClaudeAgentOptions | None = None, **kw: Any) -> str | None:
    return [m for m in chats.send(key, prompt, options, **kw) if isinstance(m, ResultMessage)][-1].result


def sent_as(chats: Conversations, sender: tuple[float, str], key: str, prompt: str, options: ClaudeAgentOptions) -> str | None:
    """A turn as the session host sends a worker's: as that worker's ``Conversations``."""
    return [m for m in chats._send(key, prompt, options, None, sender, False) if isinstance(m, ResultMessage)][-1].result


def test_a_new_model_mode_or_thinking_budget_reaches_the_live_cli_by_control_request(stand_in: StandIn,
                                                                                    chats: Conversations) -> None:  # fmt: skip
    base = ClaudeAgentOptions(model="model-v1")
    assert said(chats, "k", "one", base) == "answer: one"
    assert said(chats, "k", "two", dataclasses.replace(base, model="model-v2")) == "answer: two"
    assert said(chats, "k", "three", dataclasses.replace(base, model="model-v2")) == "answer: three"  # in force: nothing sent
    assert said(chats, "k", "four", dataclasses.replace(base, model="model-v2", permission_mode="acceptEdits",
                                                        max_thinking_tokens=2000)) == "answer: four"  # fmt: skip
    assert said(chats, "k", "five", dataclasses.replace(base, model=None, max_thinking_tokens=2000)) == "answer: five"
    assert [(c["subtype"], c.get("model", c.get("mode", c.get("max_thinking_tokens")))) for c in stand_in.controls] == [
        ("set_model", "model-v2"), ("set_permission_mode", "acceptEdits"), ("set_max_thinking_tokens", 2000),
        ("set_model", None), ("set_permission_mode", "default")]  # fmt: skip
    assert len(stand_in.started) == 1 and stand_in.started[0].model == "model-v1" and chats.stats["restarted"] == 0
    # with thinking set the CLI was given no thinking budget: a budget of the turn's means nothing
    stand_in.controls.clear()
    thinking = ClaudeAgentOptions(thinking={"type": "adaptive"})
    said(chats, "t", "one", thinking)
    said(chats, "t", "two", dataclasses.replace(thinking, max_thinking_tokens=5000))
    assert stand_in.controls == [] and len(stand_in.started) == 2


def test_launch_time_fields_that_differ_restart_the_cli_once_with_its_history(stand_in: StandIn, chats: Conversations,
                                                                             caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    base = ClaudeAgentOptions(env={"ANTHROPIC_API_KEY": "sk-old-secret"}, allowed_tools=["Read"])
    said(chats, "k", "one", base)
    session = chats.session_id("k")
    rotated = dataclasses.replace(base, env={"ANTHROPIC_API_KEY": "sk-new-secret"})
    with caplog.at_level(logging.INFO, "claude_sdkurl.conversations"):
        assert said(chats, "k", "two", rotated) == "answer: two"
    assert len(stand_in.started) == 2 and stand_in.started[1].resume == session and stand_in.started[1].env == rotated.env
    assert stand_in.transports[0]._exited  # the old CLI is gone
    assert said(chats, "k", "three", rotated) == "answer: three" and len(stand_in.started) == 2  # once
    assert chats.stats["restarted"] == 1 and chats.session_id("k") == session
    logged = [r.getMessage() for r in caplog.records if "restarts" in r.getMessage()]
    assert len(logged) == 1 and "env changed" in logged[0] and "secret" not in caplog.text  # the field, never its value
    for changed in ({"tools": ["Read", "Grep"]}, {"system_prompt": "Be brief."}, {"cwd": "/tmp"}, {"max_turns": 3},
                    {"mcp_servers": {"x": {"command": "true"}}}):  # fmt: skip
        before = len(stand_in.started)
        said(chats, "k", "again", dataclasses.replace(rotated, **changed))
        said(chats, "k", "again", dataclasses.replace(rotated, **changed))
        assert len(stand_in.started) == before + 1, changed
        assert all(getattr(stand_in.started[-1], f) == v for f, v in changed.items())
        assert stand_in.started[-1].resume == session


def test_a_rolling_deploy_restarts_each_cli_once_and_never_back(stand_in: StandIn, chats: Conversations,
                                                                caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    old, new = (1000.0, "worker-old"), (2000.0, "worker-new")
    v1 = ClaudeAgentOptions(model="model-v1", env={"KEY": "v1"}, allowed_tools=["Read"])
    v2 = ClaudeAgentOptions(model="model-v2", env={"KEY": "v2"}, allowed_tools=["Read", "Grep"])
    with caplog.at_level(logging.INFO, "claude_sdkurl.conversations"):
        for n in range(3):
            assert sent_as(chats, old, "k", f"old {n}", v1) == f"answer: old {n}"
            assert sent_as(chats, new, "k", f"new {n}", v2) == f"answer: new {n}"
    assert [o.env for o in stand_in.started] == [{"KEY": "v1"}, {"KEY": "v2"}]  # once, to the newer deploy's
    # the old worker's turns ran on the newer CLI with their own model (a control request each way)
    models = [c["model"] for c in stand_in.controls if c["subtype"] == "set_model"]
    assert models == ["model-v1", "model-v2", "model-v1", "model-v2"]
    assert sum("older deploy" in r.getMessage() for r in caplog.records) == 1  # said once per older worker
    # hibernated, then woken by the old worker: with the newer deploy's launch options, the old one's model
    chats.hibernate("k")
    sent_as(chats, old, "k", "old wakes it", v1)
    assert stand_in.started[-1].env == {"KEY": "v2"} and stand_in.started[-1].model == "model-v1"
    assert stand_in.started[-1].allowed_tools == ["Read", "Grep"]
    # a rollback is a newer deploy: a worker made later, with the old options, wins
    sent_as(chats, (3000.0, "worker-rollback"), "k", "rolled back", v1)
    assert stand_in.started[-1].env == {"KEY": "v1"} and len(stand_in.started) == 4
    # two workers made at the same moment: neither replaces the other's (no back and forth)
    sent_as(chats, (3000.0, "worker-twin"), "k", "twin", v2)
    assert len(stand_in.started) == 4
    # what the log remembers of older workers stays bounded, however many came
    for n in range(70):
        sent_as(chats, (1.0, f"old worker {n}"), "k", "old", v2)
    assert len(chats._conversations["k"].older) <= 64 and len(stand_in.started) == 4


def test_each_turns_callbacks_are_its_senders(stand_in: StandIn, chats: Conversations) -> None:
    asked: list[str] = []

    def deciding(who: str) -> Any:
        def can_use_tool(name: str, tool_input: dict[str, Any], context: Any) -> PermissionResultAllow:
            asked.append(who)
            return PermissionResultAllow()

        return can_use_tool

    base = ClaudeAgentOptions(can_use_tool=deciding("first request"))
    said(chats, "k", "ask", base)
    said(chats, "k", "ask", dataclasses.replace(base, can_use_tool=deciding("second request")))
    assert asked == ["first request", "second request"] and len(stand_in.started) == 1  # the same CLI
    # an older worker's turn without a can_use_tool, on a CLI started with one: denied, and said why
    answer = sent_as(chats, (-1.0, "older"), "k", "ask", ClaudeAgentOptions())
    assert relaunch.NO_DECIDER in str(answer) and "deny" in str(answer)
    assert asked == ["first request", "second request"]


def test_a_turn_whose_hooks_differ_from_its_clis_is_denied_where_a_hook_would_decide(stand_in: StandIn,
                                                                                    chats: Conversations) -> None:  # fmt: skip
    calls: list[str] = []

    def hook(who: str) -> Any:
        def pre(hook_input: Any, tool_use_id: Any, context: Any) -> dict[str, Any]:
            calls.append(who)
            return {}

        return pre

    allow = lambda *a: PermissionResultAllow()  # noqa: E731
    newer = (2000.0, "newer")
    with_hook = ClaudeAgentOptions(can_use_tool=allow, hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[hook("newer")])]})
    sent_as(chats, newer, "k", "ask", with_hook)
    sent_as(chats, newer, "k", "ask", dataclasses.replace(with_hook, hooks={"PreToolUse": [HookMatcher(matcher="Bash",
                                                                                                     hooks=[hook("newer 2")])]}))  # fmt: skip
    assert calls == ["newer", "newer 2"]  # each turn's own hook
    two = {"PreToolUse": [HookMatcher(matcher="Bash", hooks=[hook("older"), hook("older")])]}
    answer = sent_as(chats, (1000.0, "older"), "k", "ask", ClaudeAgentOptions(can_use_tool=allow, hooks=two))
    assert calls == ["newer", "newer 2"] and relaunch.OTHER_HOOKS in str(answer)  # not the older's, by position
    assert len(stand_in.started) == 1


def test_a_live_field_the_cli_refuses_restarts_it_with_that_field(stand_in: StandIn, chats: Conversations) -> None:
    said(chats, "k", "one", ClaudeAgentOptions())
    stand_in.refuse.add("set_permission_mode")
    assert said(chats, "k", "two", ClaudeAgentOptions(permission_mode="bypassPermissions")) == "answer: two"
    assert len(stand_in.started) == 2 and stand_in.started[1].permission_mode == "bypassPermissions"
    assert stand_in.started[1].resume == chats.session_id("k") and chats.stats["restarted"] == 1
    assert said(chats, "k", "three", ClaudeAgentOptions(permission_mode="bypassPermissions")) == "answer: three"
    assert len(stand_in.started) == 2  # in force since the start: nothing sent


def test_what_a_cli_takes_at_its_start_compares_callbacks_by_presence_and_servers_by_name() -> None:
    server = create_sdk_mcp_server("calc", tools=[])
    other = create_sdk_mcp_server("calc", tools=[])
    a = ClaudeAgentOptions(can_use_tool=lambda *x: None, stderr=print, mcp_servers={"calc": server}, cwd="/srv",
                           hooks={"Stop": [HookMatcher(hooks=[lambda *x: {}])], "PreToolUse": []})  # fmt: skip
    from pathlib import Path

    b = ClaudeAgentOptions(can_use_tool=lambda *x: None, stderr=print, mcp_servers={"calc": other}, cwd=Path("/srv"),
                           hooks={"Stop": [HookMatcher(hooks=[lambda *x: {}])]}, model="other", permission_mode="plan")  # fmt: skip
    assert relaunch.changed(a, b) == []
    assert relaunch.changed(a, dataclasses.replace(b, can_use_tool=None)) == ["can_use_tool"]
    assert relaunch.changed(a, dataclasses.replace(b, stderr=None, on_elicitation=print)) == ["stderr", "on_elicitation"]
    assert relaunch.changed(a, dataclasses.replace(b, hooks={"Stop": [HookMatcher(matcher="x", hooks=[print])]})) == ["hooks"]
    assert relaunch.changed(a, dataclasses.replace(b, mcp_servers={"calc2": other})) == ["mcp_servers"]
    assert relaunch.changed(a, dataclasses.replace(b, add_dirs=("/a",))) == ["add_dirs"]
    assert relaunch.changed(dataclasses.replace(a, add_dirs=["/a"]), dataclasses.replace(b, add_dirs=("/a",))) == []
    assert relaunch.live_values(ClaudeAgentOptions()) == {"model": None, "permission_mode": "default", "max_thinking_tokens": None}
    assert conversations_module.wins((1.0, "a"), (1.0, "a")) and conversations_module.wins((2.0, "b"), (1.0, "a"))
    assert not conversations_module.wins((1.0, "b"), (1.0, "a")) and not conversations_module.wins((0.5, "b"), (1.0, "a"))


def test_a_cli_started_with_asking_callbacks_still_fits_a_spare_of_the_same_options() -> None:
    from claude_sdkurl._engine.spares import fits

    server = create_sdk_mcp_server("calc", tools=[])
    options = ClaudeAgentOptions(can_use_tool=lambda *x: None, hooks={"Stop": [HookMatcher(hooks=[lambda *x: {}])]},
                                 mcp_servers={"calc": server})  # fmt: skip
    asked = relaunch.asking(options, lambda: options)
    assert asked.can_use_tool is not options.can_use_tool and fits(options, asked)
    assert not fits(dataclasses.replace(options, can_use_tool=lambda *x: None), asked)


def test_an_in_process_server_is_the_turns_and_one_it_lacks_is_not_found() -> None:
    @tool("add", "Add", {"a": int})
    def add(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "added"}]}

    with_server = ClaudeAgentOptions(mcp_servers={"calc": create_sdk_mcp_server("calc", tools=[add])})
    turn = [with_server]
    asked = relaunch.asking(with_server, lambda: turn[0])
    instance = asked.mcp_servers["calc"]["instance"]  # type: ignore[index]
    listed = instance.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert [t["name"] for t in listed["result"]["tools"]] == ["add"]
    turn[0] = ClaudeAgentOptions()
    assert instance.handle({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["error"]["message"] == "Server 'calc' not found"
    assert instance.handle({"jsonrpc": "2.0", "method": "notifications/initialized"}) is None
    without_instance = ClaudeAgentOptions(mcp_servers={"calc": {"type": "sdk", "name": "calc"}})  # type: ignore[typeddict-item]
    assert relaunch.asking(without_instance, lambda: without_instance) is without_instance  # the launch refuses it


def test_a_turn_asked_for_outside_the_program_is_passed_over_or_yielded_marked(stand_in: StandIn, chats: Conversations) -> None:
    """Item 4: the relay's tap tells the session where someone else's turn begins and ends
    (``on_outside``); a send yields its own turn, not the page's answer one turn behind."""
    said(chats, "k", "one")
    transport = stand_in.last
    callbacks = transport._callbacks
    assert callbacks is not None and callbacks.on_outside is not None

    def page_turn(text: str) -> None:  # a message typed on the relay's page, answered between two sends
        callbacks.on_outside("turn")  # type: ignore[misc]
        transport.cli.turn(text)
        callbacks.on_outside("own")  # type: ignore[misc]

    page_turn("the page's answer")
    assert said(chats, "k", "two") == "answer: two"
    assert said(chats, "k", "three") == "answer: three" and chats.stats["outside"] == 1
    page_turn("another page answer")
    messages = list(chats.send("k", "four", outside=True))
    assert [outside_of(m) for m in messages if isinstance(m, ResultMessage)] == ["turn", None]
    assert [m.result for m in messages if isinstance(m, ResultMessage)] == ["another page answer", "answer: four"]
    # the page's turn queued behind this one: the send ends at its own result, the page's waits for the next
    done = threading.Event()
    original = stand_in.handle

    def then_the_page(message: dict[str, Any], cli: FakeCLI) -> None:
        original(message, cli)
        if message["type"] == "user" and message["message"]["content"] == "five":
            page_turn("the page, after five")
            done.set()

    transport.handler = then_the_page
    assert [m.result for m in chats.send("k", "five", timeout=10) if isinstance(m, ResultMessage)] == ["answer: five"]
    assert done.wait(10)
    assert said(chats, "k", "six", timeout=10) == "answer: six" and chats.stats["outside"] == 3


class _Pool:
    """A stand-in for the host's conversations: records who each turn's sender was, and answers
    with a page's turn (marked as the relay marks it) before its own."""

    def __init__(self) -> None:
        self.senders: list[tuple[float, str]] = []
        self.outside: list[bool] = []

    def _send(self, key: str, prompt: str, options: Any, timeout: Any, sender: tuple[float, str], outside: bool) -> Iterator[Any]:
        from claude_sdkurl._engine.parse import parse_message
        from claude_sdkurl._engine.session import OUTSIDE

        self.senders.append(sender)
        self.outside.append(outside)
        for raw, mark in (({"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1, "duration_api_ms": 1,
                             "num_turns": 1, "result": "the page's", "session_id": "s"}, "turn"),
                          ({"type": "result", "subtype": "error_during_execution", "is_error": True, "duration_ms": 1,
                            "duration_api_ms": 1, "num_turns": 1, "session_id": "s"}, "interrupted"),
                          ({"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1, "duration_api_ms": 1,
                            "num_turns": 1, "result": "own", "session_id": "s"}, "forged")):  # fmt: skip
            message = parse_message(raw)
            setattr(message, OUTSIDE, mark)
            yield message

    def interrupt(self, key: str) -> None:
        pass


def test_through_the_host_the_sender_and_the_relays_marks_travel() -> None:
    """Who sent a turn reaches the host's conversations (a caller that says nothing is the
    oldest, named by its connection: its options never win); each message's mark reaches the
    caller's copy of it, and only the two marks there are."""
    import json
    import socket
    import tempfile
    from pathlib import Path

    from claude_sdkurl.host import HostLink, _server

    base = Path(tempfile.mkdtemp(prefix="claude-sdkurl-hostmarks-"))
    host = _server.SessionHost(base / "h" / "host.sock")
    pool = _Pool()
    host._pool = lambda fields, forward: ("", pool, ClaudeAgentOptions(), None)  # type: ignore[method-assign]
    try:
        messages = list(HostLink(host.path).turn("k", "hi", ClaudeAgentOptions(), None, (12.5, "worker-a"), True))
        assert pool.senders == [(12.5, "worker-a")] and pool.outside == [True]
        assert [outside_of(m) for m in messages] == ["turn", "interrupted", None]
        for said_sender in ([12.5], ["12", "w"], [True, "w"], [1.0, ""], [1.0, 5], "w", None):
            request = {"op": "send", "key": "k", "prompt": "hi", "sender": said_sender}
            with socket.socket(socket.AF_UNIX) as conn:
                conn.connect(str(host.path))
                conn.sendall(json.dumps(request).encode() + b"\n")
                with conn.makefile("rb") as reader:
                    while json.loads(reader.readline()).get("op") not in ("end", "error"):
                        pass
            when, name = pool.senders[-1]
            assert when == float("-inf") and name.startswith("unnamed caller"), said_sender
            assert pool.outside[-1] is False
        assert len({name for _, name in pool.senders[1:]}) == len(pool.senders) - 1  # each its own: none wins over another
    finally:
        host.close()
        import shutil

        shutil.rmtree(base, ignore_errors=True)


def test_a_turn_without_a_callback_its_cli_was_started_with_gets_the_cautious_answer(capsys: pytest.CaptureFixture[str]) -> None:
    """A CLI started with callbacks (a newer deploy's) serving a turn whose options have none (an
    older worker's): permission denied and said why, an elicitation declined, a dialog left
    unanswered, stderr dropped; with them, the turn's own are called."""
    seen: list[Any] = []
    started = ClaudeAgentOptions(can_use_tool=lambda *a: PermissionResultAllow(), on_elicitation=lambda r: {"action": "accept"},
                                 on_user_dialog=lambda d: {"behavior": "cancelled"}, stderr=seen.append)  # fmt: skip
    turn = [ClaudeAgentOptions()]
    asked = relaunch.asking(started, lambda: turn[0])
    denied = asked.can_use_tool("Bash", {}, None)  # type: ignore[misc,arg-type]
    assert denied.message == relaunch.NO_DECIDER and denied.behavior == "deny"  # type: ignore[union-attr]
    assert asked.on_elicitation({}) == {"action": "decline"}  # type: ignore[misc]
    assert asked.on_user_dialog({}) is None  # type: ignore[misc]
    asked.stderr("a line")  # type: ignore[misc]
    assert seen == [] and capsys.readouterr() == ("", "")  # nowhere
    turn[0] = started
    assert isinstance(asked.can_use_tool("Bash", {}, None), PermissionResultAllow)  # type: ignore[misc,arg-type]
    assert asked.on_elicitation({}) == {"action": "accept"}  # type: ignore[misc]
    assert asked.on_user_dialog({}) == {"behavior": "cancelled"}  # type: ignore[misc]
    asked.stderr("a line")  # type: ignore[misc]
    assert seen == ["a line"]



def test_a_sends_own_turn_interrupted_from_the_page_ends_that_send_marked(stand_in: StandIn, chats: Conversations) -> None:
    """Someone on a relay's page interrupts the turn a send has under way: the send ends with its
    own result, marked ``"interrupted"`` (not passed over as someone else's turn, which would leave
    the send waiting for a result that never comes), and nothing counts as an outside turn."""
    said(chats, "k", "one")
    transport = stand_in.last
    callbacks = transport._callbacks
    assert callbacks is not None and callbacks.on_outside is not None
    original = stand_in.handle

    def interrupted_from_the_page(message: dict[str, Any], cli: FakeCLI) -> None:
        if message["type"] == "user" and message["message"]["content"] == "two":
            callbacks.on_outside("interrupt")  # type: ignore[misc]  # the page's Interrupt, during this send's turn
            cli.turn("[Request interrupted by user]")
            return
        original(message, cli)

    transport.handler = interrupted_from_the_page
    results = [m for m in chats.send("k", "two", timeout=10) if isinstance(m, ResultMessage)]
    assert [(m.result, outside_of(m)) for m in results] == [("[Request interrupted by user]", "interrupted")]
    assert chats.stats["outside"] == 0
    transport.handler = original
    assert said(chats, "k", "three", timeout=10) == "answer: three"


def test_a_newer_workers_first_turn_is_not_undone_by_an_older_worker(stand_in: StandIn, chats: Conversations) -> None:
    """The conversation's first turn came from the newer deploy: an older worker's turn after it
    runs on that CLI (its own live fields only), never restarting it back to the old options."""
    old, new = (1000.0, "worker-old"), (2000.0, "worker-new")
    v1 = ClaudeAgentOptions(model="model-v1", env={"KEY": "v1"})
    v2 = ClaudeAgentOptions(model="model-v2", env={"KEY": "v2"})
    assert sent_as(chats, new, "k", "new first", v2) == "answer: new first"
    assert sent_as(chats, old, "k", "old after", v1) == "answer: old after"
    assert sent_as(chats, new, "k", "new again", v2) == "answer: new again"
    assert [o.env for o in stand_in.started] == [{"KEY": "v2"}] and chats.stats["restarted"] == 0


def test_a_hook_timeout_or_a_servers_own_name_is_a_launch_time_change() -> None:
    """A deploy that changes only a matcher's ``timeout``, or the name an in-process MCP server
    gives itself under the same key, restarts the CLI (it read both at its start)."""
    hooks = {"PreToolUse": [HookMatcher(matcher="Bash", hooks=[lambda *x: {}], timeout=5)]}
    a = ClaudeAgentOptions(hooks=hooks, mcp_servers={"calc": create_sdk_mcp_server("calc", tools=[])})
    b = dataclasses.replace(a, hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[lambda *x: {}], timeout=30)]})
    assert relaunch.changed(a, b) == ["hooks"]
    c = dataclasses.replace(a, mcp_servers={"calc": create_sdk_mcp_server("calc2", tools=[])})
    assert relaunch.changed(a, c) == ["mcp_servers"]
    assert relaunch.changed(a, dataclasses.replace(a, mcp_servers={"calc": create_sdk_mcp_server("calc", tools=[])})) == []


def test_what_is_remembered_of_older_workers_never_passes_its_bound(stand_in: StandIn, chats: Conversations) -> None:
    new, old = ClaudeAgentOptions(env={"KEY": "v2"}), ClaudeAgentOptions(env={"KEY": "v1"})
    sent_as(chats, (2000.0, "worker-new"), "k", "new", new)
    for n in range(130):
        sent_as(chats, (1.0, f"old worker {n}"), "k", "old", old)
        assert 0 < len(chats._conversations["k"].older) <= 64, n


def test_a_sender_is_dated_by_the_wall_clock_the_workers_of_every_machine_share() -> None:
    import time as clock

    with Conversations(ClaudeAgentOptions(), store=":memory:") as made:
        assert abs(made._sender[0] - clock.time()) < 60
