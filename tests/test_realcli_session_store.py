"""``session_store`` on the REAL CLIs: transcripts mirrored into the store, resume and
continue from the store on a machine without the transcript, and stores that fail,
hang or answer garbage.

Both CLI versions: 2.1.120 sends no transcript_mirror frames over --sdk-url, so with a
store the SDK runs it over stdio (checked below); forcing the WebSocket is refused.
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import claude_sdkurl._engine.mirror as mirror_module
from claude_sdkurl import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeClient,
    InMemorySessionStore,
    MirrorErrorMessage,
    ResultMessage,
    SessionStoreError,
    UnsupportedOptionError,
    get_session_messages_from_store,
    list_sessions_from_store,
    list_subagents,
    list_subagents_from_store,
    project_key_for_directory,
    query,
)
from claude_sdkurl.stores import SQLiteSessionStore
from claude_sdkurl.testing import MockMessagesAPI, install_cli, offline_env, text, tool_use
from claude_sdkurl.types import SessionKey

from .conftest import child_pids, local_entries

pytestmark = pytest.mark.realcli

VERSIONS = ["2.1.120", "2.1.330"]
NOT_MIRRORED = {"api-request", "api-request-blob", "api-request-shape"}  # the CLI keeps these to itself


@pytest.fixture(params=VERSIONS)
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def work() -> Iterator[Path]:
    """The project directory: the same path on every 'machine' (the store key is derived from it)."""
    with tempfile.TemporaryDirectory(prefix="claude-sdkurl-proj-") as d:
        yield Path(d)


def machine(version: str, api: MockMessagesAPI, work: Path, root: Path, **kw: Any) -> ClaudeAgentOptions:
    """Options for the real CLI with a HOME of its own: another machine, as far as transcripts go."""
    home = Path(tempfile.mkdtemp(dir=root))
    return ClaudeAgentOptions(cli_path=str(install_cli(version)), env=offline_env(api.url, home), cwd=str(work), **kw)


def run(options: ClaudeAgentOptions, prompt: str = "hello") -> tuple[list[Any], str]:
    messages = list(query(prompt, options))
    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert results and not results[0].is_error
    return messages, results[0].session_id


class SpyStore(InMemorySessionStore):
    """Records what the store held when each append returned, and can be made to fail or hang."""

    def __init__(self) -> None:
        super().__init__()
        self.appends = 0
        self.fail: BaseException | None = None
        self.hang = threading.Event()  # set: appends block until release is set
        self.release = threading.Event()

    def append(self, key: SessionKey, entries: Any) -> None:
        self.appends += 1
        if self.hang.is_set():
            self.release.wait(30)
        if self.fail is not None:
            raise self.fail
        super().append(key, entries)


def test_the_store_mirrors_the_local_transcript(
    version: str, api: MockMessagesAPI, work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every mirrored entry is the CLI's own, in its order; the turn is in the store before
    its result is seen; a subagent's transcript is mirrored under its subpath."""
    api.responder = lambda r: (
        text("sub done") if "SUBTASK" in json.dumps(r.messages()[:1])
        else tool_use("Agent", {"description": "s", "prompt": "SUBTASK: hi", "subagent_type": "general-purpose"})
        if r.last_user_text() == "delegate please" and not r.tool_results()
        else text("main done")
    )  # fmt: skip
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    options = machine(version, api, work, tmp_path, session_store=store, allowed_tools=["Agent", "Task"])
    at_result: list[list[Any]] = []
    with ClaudeClient(options) as client:
        assert client._session is not None and client._session.transport_name == "stdio"
        client.query("delegate please")
        for m in client.receive_response():
            if isinstance(m, ResultMessage):
                at_result.append(store.load({"project_key": project_key_for_directory(work), "session_id": m.session_id}) or [])
                sid = m.session_id
        time.sleep(0.5 if version == "2.1.330" else 0)  # 2.1.330: the background subagent's turn
    key: SessionKey = {"project_key": project_key_for_directory(work), "session_id": sid}
    stored = store.load(key) or []
    local = local_entries(options, sid)
    assert stored == [e for e in local if e.get("type") not in NOT_MIRRORED]
    assert any(e.get("type") == "assistant" for e in at_result[0]), "the turn was in the store before its result"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(Path(options.env["HOME"], ".claude")))  # read that machine's disk
    agents = list_subagents(sid, str(work))
    assert agents and list_subagents_from_store(store, sid, str(work)) == agents
    for agent in agents:
        (path,) = Path(options.env["HOME"], ".claude", "projects").glob(f"*/{sid}/subagents/**/agent-{agent}.jsonl")
        on_disk = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        (subpath,) = store.list_subkeys(key)
        mirrored = [e for e in store.load({**key, "subpath": subpath}) or [] if e.get("type") != "agent_metadata"]
        assert mirrored == [e for e in on_disk if e.get("type") not in NOT_MIRRORED]
    (info,) = list_sessions_from_store(store, str(work))
    assert info.session_id == sid and info.first_prompt == "delegate please"
    store.close()


def test_forcing_the_websocket_with_a_store_is_refused(api: MockMessagesAPI, work: Path, tmp_path: Path) -> None:
    options = machine("2.1.120", api, work, tmp_path, session_store=InMemorySessionStore(), transport="websocket")
    with pytest.raises(UnsupportedOptionError, match="transcript_mirror"):
        list(query("hi", options))
    assert api.message_requests() == [] and child_pids() == []


def test_two_machines_share_a_conversation_through_postgres(
    version: str, api: MockMessagesAPI, work: Path, tmp_path: Path, postgres_url: str
) -> None:
    """Machine A talks, mirrored to PostgreSQL; machine B (another HOME, no transcript)
    resumes it from the store, and the model sees the whole history; machine C continues
    the latest session from the store (not an older one of the same project); machine D forks
    it from the store."""
    from claude_sdkurl.stores.postgres import PostgresSessionStore

    table = f"two_machines_{version.replace('.', '_')}"
    with PostgresSessionStore(postgres_url, table=table) as store_a:
        older = machine(version, api, work, tmp_path, session_store=store_a)
        _, sid_older = run(older, "an older session about OSTRICHES")
        time.sleep(0.05)  # distinct modification times
        a = machine(version, api, work, tmp_path, session_store=store_a)
        _, sid = run(a, "remember the word PELICAN")
        assert sid != sid_older
    api.enqueue("it was PELICAN")
    with PostgresSessionStore(postgres_url, table=table) as store_b:  # another connection, as another machine
        b = machine(version, api, work, tmp_path, session_store=store_b, resume=sid)
        assert not list(Path(b.env["HOME"]).rglob("*.jsonl"))
        messages, sid_b = run(b, "which word?")
        assert sid_b == sid
        history = json.dumps(api.message_requests()[-1].body["messages"])
        assert "remember the word PELICAN" in history and "which word?" in history
        assert not list(Path(b.env["HOME"]).rglob("*.jsonl")), "B resumed from a temporary copy, now removed"
        texts = [json.dumps(m.message) for m in get_session_messages_from_store(store_b, sid, str(work))]
        assert any("PELICAN" in t for t in texts) and any("which word?" in t for t in texts)
    with PostgresSessionStore(postgres_url, table=table) as store_c:
        c = machine(version, api, work, tmp_path, session_store=store_c, continue_conversation=True)
        _, sid_c = run(c, "and now?")
        assert sid_c == sid
        history = json.dumps(api.message_requests()[-1].body["messages"])
        assert "which word?" in history and "OSTRICHES" not in history
        # machine D forks it from the store: a new session, in the store, with the whole history
        d = machine(version, api, work, tmp_path, session_store=store_c, resume=sid, fork_session=True)
        _, sid_d = run(d, "a branch")
        assert sid_d != sid
        forked = json.dumps([m.message for m in get_session_messages_from_store(store_c, sid_d, str(work))])
        assert "remember the word PELICAN" in forked and "a branch" in forked


def test_a_failing_store_is_reported_and_the_turn_goes_on(version: str, api: MockMessagesAPI, work: Path, tmp_path: Path) -> None:
    store = SpyStore()
    store.fail = ConnectionError("database is down")
    options = machine(version, api, work, tmp_path, session_store=store)
    messages, sid = run(options)
    errors = [m for m in messages if isinstance(m, MirrorErrorMessage)]
    assert errors and "database is down" in errors[0].error and errors[0].key["session_id"] == sid  # type: ignore[index]
    kinds = [type(m).__name__ for m in messages]
    assert kinds.index("MirrorErrorMessage") < kinds.index("ResultMessage")  # reported with its turn
    assert any(isinstance(m, AssistantMessage) for m in messages)
    assert store.appends >= 3  # tried again before giving up
    assert any(e.get("type") == "assistant" for e in local_entries(options, sid)), "the local transcript is whole"


def test_a_hanging_store_times_out_and_the_turn_goes_on(
    version: str, api: MockMessagesAPI, work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mirror_module, "SEND_TIMEOUT_SECONDS", 0.5)
    store = SpyStore()
    store.hang.set()
    try:
        options = machine(version, api, work, tmp_path, session_store=store)
        started = time.monotonic()
        messages, _ = run(options)
        assert time.monotonic() - started < 20
        errors = [m for m in messages if isinstance(m, MirrorErrorMessage)]
        assert errors and "timed out" in errors[0].error
        assert isinstance(messages[-1], ResultMessage) or any(isinstance(m, ResultMessage) for m in messages)
    finally:
        store.release.set()  # the hung call returns, and its helper thread ends


def test_eager_flush_appends_as_frames_arrive(api: MockMessagesAPI, work: Path, tmp_path: Path) -> None:
    counts = {}
    for mode in ("batched", "eager"):
        store = SpyStore()
        api.enqueue(tool_use("Bash", {"command": "echo hi"}), text("done"))
        options = machine(
            "2.1.330", api, work, tmp_path, session_store=store, session_store_flush=mode,  # type: ignore[arg-type]
            allowed_tools=["Bash"], permission_mode="acceptEdits",
        )  # fmt: skip
        _, sid = run(options)
        counts[mode] = store.appends
        stored = store.get_entries({"project_key": project_key_for_directory(work), "session_id": sid})
        # every entry the CLI wrote, in its order, once: however the appends were cut
        assert stored == [e for e in local_entries(options, sid) if e.get("type") not in NOT_MIRRORED]
        assert [e["type"] for e in stored if e.get("type") in ("user", "assistant")] == ["user", "assistant", "user", "assistant"]
    assert counts["eager"] > counts["batched"] >= 1


class OddStore(InMemorySessionStore):
    def __init__(self, behaviour: str) -> None:
        super().__init__()
        self.behaviour = behaviour
        self.release = threading.Event()

    def load(self, key: SessionKey) -> Any:
        if self.behaviour == "hang":
            self.release.wait(30)
        if self.behaviour == "raise":
            raise PermissionError("no access to sessions")
        if self.behaviour == "garbage":
            return "not a list"
        return super().load(key)

    def list_sessions(self, project_key: str) -> Any:
        return [{"session_id": "x"}] if self.behaviour == "garbage" else super().list_sessions(project_key)


@pytest.mark.parametrize("behaviour", ["hang", "raise", "garbage"])
def test_resume_from_a_bad_store_is_a_typed_error_and_starts_nothing(
    behaviour: str, api: MockMessagesAPI, work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a temporary folder of this test's own: /tmp is shared with whatever else runs on the machine
    # (another test run's resumed sessions were taken for this one's leftovers)
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    store = OddStore(behaviour)
    sid = "8d2b1c3e-0000-4000-8000-000000000001"
    store.append({"project_key": project_key_for_directory(work), "session_id": sid}, [{"type": "user", "uuid": "u"}])
    options = machine("2.1.330", api, work, tmp_path, session_store=store, resume=sid, load_timeout_ms=500)
    started = time.monotonic()
    try:
        with pytest.raises(SessionStoreError) as info:
            list(query("hi", options))
        assert time.monotonic() - started < 5
        assert {"hang": "timed out after 500ms", "raise": "no access", "garbage": "not a list"}[behaviour] in str(info.value)
        if behaviour == "garbage":
            store.behaviour = "garbage"
            with pytest.raises(SessionStoreError, match="list_sessions"):
                list(query("hi", machine("2.1.330", api, work, tmp_path, session_store=store, continue_conversation=True)))
    finally:
        store.release.set()
    assert api.message_requests() == [] and child_pids() == []
    assert not list(private_tmp.glob("*claude-resume-*")), "no temporary config dir left behind"
