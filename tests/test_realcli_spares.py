"""Spare CLIs claimed later (``claude_sdkurl.spares``), on the real CLI 2.1.330 over stdio.

The hostile cases first: every refusal ends in a cold start that gives what a cold start gives,
a spare that dies parked is replaced, nothing outlives a closed pool or a killed program, parking
folders are private and go away. Then what a claim binds: the folder (where a tool runs), the
permission mode, extra directories, the model, across folders and threads.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import ClaudeAgentOptions, ClaudeClient, ResultMessage, SystemMessage, query
from claude_sdkurl.spares import SparePool, resident_mb
from claude_sdkurl.testing import MockMessagesAPI, offline_env, text, tool_use

from .test_notebook_magic import clis_with

pytestmark = pytest.mark.realcli


@pytest.fixture
def host(cli_paths: dict[str, Path], api: MockMessagesAPI, home: Path) -> ClaudeAgentOptions:
    return ClaudeAgentOptions(cli_path=str(cli_paths["stdio"]), env=offline_env(api.url, home))


def folder(home: Path, name: str) -> Path:
    path = home / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def parked(pool: SparePool, n: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with pool._cond:
            if len(pool._parked) >= n:
                return
        time.sleep(0.05)
    raise AssertionError(f"{n} spare(s) not parked within {timeout} s: {pool.errors}")


def init_of(messages: list) -> dict:
    return next(m.data for m in messages if isinstance(m, SystemMessage) and m.subtype == "init")


def answer(messages: list) -> str | None:
    return next(m.result for m in reversed(messages) if isinstance(m, ResultMessage))


# --------------------------------------------------------------------------- hostile cases


def test_a_folder_whose_settings_refuse_the_claim_gets_a_cold_start_with_the_same_answer(
    host: ClaudeAgentOptions, api: MockMessagesAPI, home: Path
) -> None:
    project = folder(home, "pinned")
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps({"model": "claude-pinned-model"}))
    options = dataclasses.replace(host, cwd=str(project), setting_sources=["project"])
    cold = list(query("hello", options))
    with SparePool(1, dataclasses.replace(host, setting_sources=["project"])) as pool:
        parked(pool, 1)
        served = len(api.message_requests())
        warm = list(pool.query("hello", options))
        assert pool.stats["refused:project_settings_not_claimable"] == 1 and pool.stats["claimed"] == 0
        # the prompt that went out behind the refused claim reached no model: one call, the cold start's
        assert len(api.message_requests()) == served + 1
    assert answer(warm) == answer(cold) == "pong"
    assert init_of(warm)["cwd"] == init_of(cold)["cwd"] == str(project)
    assert api.message_requests()[-1].body["model"] == api.message_requests()[-2].body["model"] == "claude-pinned-model"


@pytest.mark.parametrize("where", ["no-such-folder", "a-file"])
def test_a_folder_a_cold_start_refuses_fails_as_it_does_and_spends_no_spare(host: ClaudeAgentOptions, home: Path, where: str) -> None:
    """A missing folder, or a file where the folder should be: the error a cold start gives (the
    official SDK's words: "Working directory does not exist", "Not a directory"), and the parked
    spare is not claimed for it (it was ended by the CLI's cwd_not_found before)."""
    if where == "a-file":
        (home / where).write_text("not a folder\n")
    options = dataclasses.replace(host, cwd=str(home / where))
    with pytest.raises(Exception) as cold:
        list(query("hello", options))
    assert ("Working directory does not exist" if where == "no-such-folder" else "Not a directory") in str(cold.value)
    with SparePool(1, host) as pool:
        parked(pool, 1)
        spare = pool._parked[0].pid()
        with pytest.raises(Exception) as warm:
            list(pool.query("hello", options))
        assert not any(k.startswith("refused:") for k in pool.stats) and pool.stats["claimed"] == 0
        assert [s.pid() for s in pool._parked] == [spare]  # still parked, untouched
    assert type(warm.value) is type(cold.value) and str(warm.value) == str(cold.value)


def test_an_environment_variable_read_at_start_up_is_refused_and_starts_cold(
    host: ClaudeAgentOptions, api: MockMessagesAPI, home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    options = dataclasses.replace(host, env={**host.env, "SOMETHING_AT_START": "1"}, cwd=str(folder(home, "a")))
    with SparePool(1, host) as pool, caplog.at_level(logging.WARNING, logger="claude_sdkurl.spares"):
        parked(pool, 1)
        messages = list(pool.query("hello", options))
        assert pool.stats["refused:env_key_not_claimable"] == 1 and pool.stats["claimed"] == 0
        [line] = [r.getMessage() for r in caplog.records if "refused the claim" in r.getMessage()]
        assert line.count("Control request 'claim_session' failed:") == 1 and "env_key_not_claimable" in line
        assert len(api.message_requests()) == 1  # the cold start's only: the refused spare asked nothing
    assert answer(messages) == "pong" and init_of(messages)["cwd"] == options.cwd


def test_options_that_do_not_fit_never_touch_a_spare(host: ClaudeAgentOptions, home: Path) -> None:
    resumed = dataclasses.replace(host, resume="00000000-0000-4000-8000-000000000000", cwd=str(folder(home, "a")))
    other_tools = dataclasses.replace(host, allowed_tools=["Read"], cwd=str(folder(home, "a")))
    fewer_env = dataclasses.replace(host, env={k: v for k, v in host.env.items() if k != "LANG"}, cwd=str(folder(home, "a")))
    with SparePool(1, host) as pool:
        parked(pool, 1)
        with pytest.raises(Exception):
            list(pool.query("hello", resumed))  # a claim would ignore resume: cold, as without a pool
        assert answer(list(pool.query("hello", other_tools))) == "pong"  # bound at the spare's start
        assert answer(list(pool.query("hello", fewer_env))) == "pong"  # a claim cannot unset a variable
        assert pool.stats["claimed"] == 0 and len(pool._parked) == 1


def test_a_spare_that_dies_parked_is_replaced(host: ClaudeAgentOptions, home: Path) -> None:
    with SparePool(1, host) as pool:
        parked(pool, 1)
        victim = pool._parked[0].pid()
        assert victim is not None
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while pool._parked and pool._parked[0].alive and time.monotonic() < deadline:
            time.sleep(0.05)
        assert answer(list(pool.query("hello", dataclasses.replace(host, cwd=str(folder(home, "a")))))) == "pong"
        assert pool.stats["replaced"] == 1
        parked(pool, 1)  # refilled
        assert pool._parked[0].pid() != victim


def test_parking_folders_are_private_and_go_away(host: ClaudeAgentOptions, home: Path) -> None:
    spares = home / ".claude" / "spares"
    with SparePool(2, host) as pool:
        parked(pool, 2)
        folders = sorted(spares.iterdir())
        assert len(folders) == 2 and all(stat.S_IMODE(f.stat().st_mode) == 0o700 for f in folders)
        assert answer(list(pool.query("hello", dataclasses.replace(host, cwd=str(folder(home, "a")))))) == "pong"
        deadline = time.monotonic() + 5
        while any(f.exists() for f in folders[:1]) and not all(f.exists() for f in folders) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert list(spares.iterdir()) == []  # the claimed one's and the closed pool's, all gone
    assert clis_with(home) == []


def test_a_pool_closed_while_spares_start_leaves_no_cli(host: ClaudeAgentOptions, home: Path) -> None:
    pool = SparePool(3, host)
    time.sleep(0.2)  # starting, not parked yet
    pool.close()
    deadline = time.monotonic() + 2
    while clis_with(home) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert clis_with(home) == []
    assert answer(list(query("hello", dataclasses.replace(host, cwd=str(folder(home, "a")))))) == "pong"  # cold: no pool now


def test_a_program_killed_outright_leaves_no_spare(host: ClaudeAgentOptions, home: Path) -> None:
    code = ("import sys, time, json\nfrom claude_sdkurl import ClaudeAgentOptions\nfrom claude_sdkurl.spares import SparePool\n"
            f"pool = SparePool(3, ClaudeAgentOptions(cli_path={host.cli_path!r}, env=json.loads(sys.argv[1])))\n"
            "while len(pool._parked) < 3: time.sleep(0.05)\nprint('parked', flush=True)\ntime.sleep(60)\n")  # fmt: skip
    program = subprocess.Popen([sys.executable, "-c", code, json.dumps(host.env)], stdout=subprocess.PIPE, text=True)
    assert program.stdout is not None and program.stdout.readline().strip() == "parked"
    assert len(clis_with(home)) >= 3
    spares = home / ".claude" / "spares"
    left = sorted(spares.iterdir())
    assert len(left) == 3
    # a pool of another program, still alive, opens beside it: the living owner's folders stay
    with SparePool(1, host) as beside:
        assert beside.stats["abandoned"] == 0 and all(f.exists() for f in left)
    program.kill()
    program.wait(10)
    deadline = time.monotonic() + 2
    while clis_with(home) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert clis_with(home) == []
    assert all(f.exists() for f in left)  # nothing of the killed program removed them
    stranger = spares / "not-ours"
    stranger.mkdir()  # a folder that is not a parking folder is never touched
    with SparePool(1, host) as pool:  # the next pool removes them: their owner is gone
        assert pool.stats["abandoned"] == 3
        assert not any(f.exists() for f in left) and stranger.exists()
        parked(pool, 1)
        assert len(list(spares.glob("spare-*"))) == 1  # its own, locked, and parked
    assert stranger.exists() and list(spares.glob("spare-*")) == []


def test_a_memory_cap_counts_the_spare_it_is_about_to_start(host: ClaudeAgentOptions, home: Path) -> None:
    """A cap of two and a half spares' memory: two park, never a third (the cap counts the spare
    about to start, measured as the largest parked one, not only the ones parked)."""
    with SparePool(1, host) as pool:
        parked(pool, 1)
        time.sleep(1.0)  # settled after its initialize
        one = pool.memory_mb()
    assert one > 20
    with SparePool(5, host, max_memory_mb=2.5 * one) as pool:
        parked(pool, 2)
        time.sleep(3.0)  # long enough for a third to start and park, were it allowed to
        assert len(pool._parked) == 2 and pool.stats["started"] == 2
        assert pool.memory_mb() <= 2.5 * one


def test_a_memory_cap_keeps_the_pool_small_and_idle_spares_are_reaped(host: ClaudeAgentOptions, home: Path) -> None:
    with SparePool(3, host, max_memory_mb=1) as pool:  # one spare alone is over: no second one
        parked(pool, 1)
        time.sleep(1.5)
        assert len(pool._parked) == 1 and pool.stats["started"] == 1
        rss = resident_mb(pool._parked[0].pid() or 0)
        assert rss is not None and 20 < rss < 2000 and pool.memory_mb() == pytest.approx(rss, rel=0.5)
    with SparePool(1, host, idle_timeout=0.5) as pool:
        parked(pool, 1)
        time.sleep(0.8)
        assert answer(list(pool.query("hello", dataclasses.replace(host, cwd=str(folder(home, "a")))))) == "pong"
        assert pool.stats["reaped"] == 1 and pool.stats["cold"] == 1 and pool.stats["claimed"] == 0


# --------------------------------------------------------------------------- what a claim binds


def test_claims_across_folders_run_tools_there_with_the_claimed_permission_mode(
    host: ClaudeAgentOptions, api: MockMessagesAPI, home: Path
) -> None:
    modes = ["default", "acceptEdits", "plan", "dontAsk", "acceptEdits"]
    host = dataclasses.replace(host, allowed_tools=["Bash(pwd)"])  # the pool's rules: every query's
    with SparePool(2, host) as pool:
        parked(pool, 2)
        for i, mode in enumerate(modes):
            where = folder(home, f"project-{i}")
            api.enqueue(tool_use("Bash", {"command": "pwd"}), text(f"done {i}"))
            messages = list(pool.query("where am I?", dataclasses.replace(host, cwd=str(where), permission_mode=mode)))
            assert init_of(messages)["cwd"] == str(where) and init_of(messages)["permissionMode"] == mode
            if mode != "plan":  # plan mode runs no command
                assert api.message_requests()[-1].tool_results()[0]["content"] == str(where)
            assert answer(messages) == f"done {i}"
            assert sum(1 for r in api.message_requests() if r.last_user_text() == "where am I?" and not r.tool_results()) == i + 1  # sent once
            assert any(p.name.endswith(f"project-{i}") for p in (home / ".claude" / "projects").iterdir())  # its transcript there
        assert pool.stats["claimed"] == 5 - pool.stats["cold"] and pool.stats["claimed"] >= 3


def test_an_extra_directory_and_the_model_follow_the_claim(host: ClaudeAgentOptions, api: MockMessagesAPI, home: Path) -> None:
    extra = folder(home, "shared-docs")
    (extra / "notes.txt").write_text("the launch code is 4-8-15")
    options = dataclasses.replace(host, cwd=str(folder(home, "app")), add_dirs=[str(extra)], model="claude-sonnet-4-6")
    with SparePool(1, host) as pool:
        parked(pool, 1)
        api.enqueue(tool_use("Read", {"file_path": str(extra / "notes.txt")}), text("read it"))
        messages = list(pool.query("read the notes", options))
        assert pool.stats["claimed"] == 1
    assert "4-8-15" in str(api.message_requests()[-1].tool_results()[0]["content"])
    assert {r.body["model"] for r in api.message_requests()} == {"claude-sonnet-4-6"}
    assert answer(messages) == "read it"


def test_agents_and_an_appended_system_prompt_follow_the_claim(host: ClaudeAgentOptions, api: MockMessagesAPI, home: Path) -> None:
    from claude_sdkurl import AgentDefinition

    options = dataclasses.replace(host, cwd=str(folder(home, "app")),
                                  agents={"reviewer": AgentDefinition(description="Reviews code", prompt="You review code.")},
                                  system_prompt={"type": "preset", "preset": "claude_code", "append": "Always answer in French."})  # fmt: skip
    with SparePool(1, host) as pool:
        parked(pool, 1)
        messages = list(pool.query("hello", options))
        assert pool.stats["claimed"] == 1
    assert "reviewer" in init_of(messages).get("agents", [])
    assert "Always answer in French." in json.dumps(api.message_requests()[-1].body.get("system"))


def test_a_client_and_plain_query_take_spares_from_any_thread(host: ClaudeAgentOptions, api: MockMessagesAPI, home: Path) -> None:
    with SparePool(2, host) as pool:
        parked(pool, 2)
        client = pool.client(dataclasses.replace(host, cwd=str(folder(home, "chat"))))
        try:
            for prompt in ("first", "second"):
                client.query(prompt)
                assert answer(list(client.receive_response(timeout=60))) == "pong"
            assert "first" in str(api.message_requests()[-1].messages())  # one conversation
        finally:
            client.disconnect()
        results: dict[int, str | None] = {}

        def ask(i: int) -> None:  # plain query(): the open pool serves it
            results[i] = answer(list(query(f"q{i}", dataclasses.replace(host, cwd=str(folder(home, f"t{i}"))))))

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert results == {i: "pong" for i in range(6)}
        assert pool.stats["claimed"] >= 2 and pool.stats["claimed"] + pool.stats["cold"] == 7
    assert clis_with(home) == []


def test_a_claimed_session_resumes_cold_with_its_history(host: ClaudeAgentOptions, api: MockMessagesAPI, home: Path) -> None:
    where = str(folder(home, "story"))
    with SparePool(1, host) as pool:
        parked(pool, 1)
        api.enqueue(text("The code is 4-8-15."))
        first = list(pool.query("remember the code", dataclasses.replace(host, cwd=where)))
        assert pool.stats["claimed"] == 1
    session_id = next(m.session_id for m in first if isinstance(m, ResultMessage))
    again = list(query("what was the code?", dataclasses.replace(host, cwd=where, resume=session_id)))
    assert answer(again) == "pong" and "4-8-15" in str(api.message_requests()[-1].messages())


def test_run_batch_on_threads_takes_spares(host: ClaudeAgentOptions, api: MockMessagesAPI, home: Path) -> None:
    from claude_sdkurl.batch import run_batch

    options = dataclasses.replace(host, cwd=str(folder(home, "batch")))
    with SparePool(2, host) as pool:
        parked(pool, 2)
        result = run_batch([f"item {i}" for i in range(4)], options, max_concurrency=2)
        assert pool.stats["claimed"] >= 2
    assert [i.text for i in result.items] == ["pong"] * 4 and not result.failed
    assert len(api.message_requests()) == 4  # one call an item, claimed or cold


def test_a_spare_dying_as_it_is_claimed_ends_cold_and_leaves_nothing(host: ClaudeAgentOptions, home: Path) -> None:
    with SparePool(1, host) as pool:
        parked(pool, 1)
        spare = pool._parked[0]
        os.kill(spare.pid() or 0, signal.SIGKILL)  # no wait: the pool may not have seen it die yet
        assert answer(list(pool.query("hello", dataclasses.replace(host, cwd=str(folder(home, "a")))))) == "pong"
        assert pool.stats["replaced"] + pool.stats["refused:claim_failed"] == 1 and pool.stats["claimed"] == 0
        assert not spare.park.exists() and spare.session.closed


# --------------------------------------------------------------------------- when a taken spare is replaced


def record_spare_starts(monkeypatch: pytest.MonkeyPatch, api: MockMessagesAPI) -> list[tuple[float, int]]:
    """(when, model calls the mock had received) for each spare start from now on."""
    from claude_sdkurl._engine import spares as _spares

    starts: list[tuple[float, int]] = []
    real = _spares.Spare.start

    def start(self: _spares.Spare) -> None:
        starts.append((time.monotonic(), len(api.message_requests())))
        real(self)

    monkeypatch.setattr(_spares.Spare, "start", start)
    return starts


def test_the_replacement_starts_after_the_claimed_session_first_answers(
    host: ClaudeAgentOptions, api: MockMessagesAPI, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CLI's start-up is a burst of CPU; begun at the claim it slowed the claimed session's own
    set-up (first message 193 ms instead of 150 on two cores). The replacement starts once the
    claimed session's model has answered: the model call was made before it began."""
    monkeypatch.setattr("claude_sdkurl._engine.spares.REFILL_AT_LATEST", 60.0)  # only the answer may trigger it
    with SparePool(1, host) as pool:
        parked(pool, 1)
        starts = record_spare_starts(monkeypatch, api)
        messages = list(pool.query("hello", dataclasses.replace(host, cwd=str(folder(home, "a")))))
        assert answer(messages) == "pong" and pool.stats["claimed"] == 1
        parked(pool, 1)
        assert len(starts) == 1 and starts[0][1] == 1, starts  # after the one model call, not at the claim


def test_a_slow_model_does_not_hold_the_replacement_back(
    host: ClaudeAgentOptions, api: MockMessagesAPI, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a model that takes its time, the replacement starts REFILL_AT_LATEST after the claim,
    before the answer: the pool is not left empty for as long as the model thinks."""
    from claude_sdkurl._engine import spares as _spares

    api.enqueue(text("slow", delay=1.0, chunk=2))  # two deltas: at least 2 s
    with SparePool(1, host) as pool:
        parked(pool, 1)
        starts = record_spare_starts(monkeypatch, api)
        claimed_at = time.monotonic()
        first = None
        for m in pool.query("hello", dataclasses.replace(host, cwd=str(folder(home, "b")))):
            if first is None and not isinstance(m, SystemMessage):
                first = time.monotonic()
        assert first is not None and len(starts) == 1
        assert claimed_at + _spares.REFILL_AT_LATEST <= starts[0][0] < first, (claimed_at, starts, first)


def test_a_claimed_session_closed_before_any_answer_is_replaced_at_its_close(
    host: ClaudeAgentOptions, api: MockMessagesAPI, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("claude_sdkurl._engine.spares.REFILL_AT_LATEST", 60.0)
    with SparePool(1, host) as pool:
        parked(pool, 1)
        starts = record_spare_starts(monkeypatch, api)
        client = pool.client(dataclasses.replace(host, cwd=str(folder(home, "c"))))
        assert pool.stats["claimed"] == 1 and starts == []
        client.disconnect()  # no prompt, no answer: the close is what starts the replacement
        parked(pool, 1, timeout=30)
        assert len(starts) == 1 and starts[0][1] == 0


def test_a_pool_closed_with_a_replacement_pending_starts_none_and_leaves_no_thread(
    host: ClaudeAgentOptions, api: MockMessagesAPI, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("claude_sdkurl._engine.spares.REFILL_AT_LATEST", 60.0)
    api.enqueue(text("slow", delay=2.0, chunk=2))
    pool = SparePool(1, host)
    try:
        parked(pool, 1)
        starts = record_spare_starts(monkeypatch, api)
        client = pool.client(dataclasses.replace(host, cwd=str(folder(home, "d"))))
        assert [t.name for t in threading.enumerate()].count("claude-sdkurl-refill") == 1
    finally:
        pool.close()
    assert "claude-sdkurl-refill" not in [t.name for t in threading.enumerate()]
    client.disconnect()  # its close would have refilled an open pool
    assert starts == [] and pool.stats["started"] == 1


# --------------------------------------------------------------------------- settings and a title in the claim


def effective(client: ClaudeClient) -> dict:
    answer = client.get_settings()
    return dict(answer.get("effective", answer))


def test_settings_a_claim_cannot_carry_start_cold_and_leave_the_spare_parked(host: ClaudeAgentOptions, home: Path) -> None:
    """Hook settings (in force before a claimed overlay could be), settings over a host's own,
    a settings file that cannot be read, a title the host set and the query does not: each
    starts cold with the answer a cold start gives, and the parked spare stays for the next."""
    titled = dataclasses.replace(host, title="host title")
    cases = [
        (host, {"settings": json.dumps({"hooks": {"Stop": []}})}),
        (host, {"settings": json.dumps({"disableAllHooks": True})}),
        (host, {"settings": "no-such-settings.json"}),
        (dataclasses.replace(host, settings=json.dumps({"cleanupPeriodDays": 3})), {"settings": json.dumps({"cleanupPeriodDays": 7})}),
        (titled, {}),
    ]
    for n, (pool_options, change) in enumerate(cases):
        options = dataclasses.replace(pool_options, cwd=str(folder(home, f"case-{n}")), **change)
        if pool_options is titled:
            options = dataclasses.replace(options, title=None)
        with SparePool(1, pool_options) as pool:
            parked(pool, 1)
            pid = pool._parked[0].pid()
            assert outcome(lambda: pool.query("hello", options)) == outcome(lambda: query("hello", options)), change
            assert pool.stats["claimed"] == 0 and [s.pid() for s in pool._parked] == [pid], (change, dict(pool.stats))


def outcome(run: Any) -> str | None:
    """The answer, or the type of the error (a missing settings file fails a cold start too)."""
    try:
        return answer(list(run()))
    except Exception as e:
        return type(e).__name__


@pytest.mark.parametrize("overlay", [{"cleanupPeriodDays": "x"}, {"permissions": "nope"}], ids=["ahead", "after"])
def test_settings_the_cli_refuses_end_the_spare_and_start_cold_with_the_same_answer(
    host: ClaudeAgentOptions, api: MockMessagesAPI, home: Path, overlay: dict
) -> None:
    """A value the CLI refuses, sent ahead of the claim or after it: ``settings_not_applied``,
    the spare ends before any prompt reached it (one model call: the cold start's), and the
    query gets what a cold start with the same settings gets (2.1.330 skips the bad key)."""
    options = dataclasses.replace(host, cwd=str(folder(home, "bad")), settings=json.dumps(overlay))
    cold = list(query("hello", options))
    with SparePool(1, host) as pool:
        parked(pool, 1)
        served = len(api.message_requests())
        warm = list(pool.query("hello", options))
        assert pool.stats["refused:settings_not_applied"] == 1 and pool.stats["claimed"] == 0, dict(pool.stats)
        assert len(api.message_requests()) == served + 1
    assert answer(warm) == answer(cold) == "pong"


def test_settings_and_a_title_follow_the_claim(host: ClaudeAgentOptions, api: MockMessagesAPI, home: Path) -> None:
    """The overlay as JSON text or as a file beside the folder: the keys that go ahead of the
    claim and those that follow it are in force (the model's request carries the settings'
    model), and the session has the title."""
    project = folder(home, "titled")
    (project / "claim-settings.json").write_text(json.dumps({"cleanupPeriodDays": 9, "model": "claude-from-file"}))
    forms = {"text": json.dumps({"cleanupPeriodDays": 7, "model": "claude-from-text"}), "file": "claim-settings.json"}
    with SparePool(1, host) as pool:
        for form, settings in forms.items():
            parked(pool, 1)
            options = dataclasses.replace(host, cwd=str(project), settings=settings, title=f"title {form}")
            client = pool.client(options)
            try:
                got = effective(client)
                client.query("hello")
                result = [m for m in client.receive_response() if isinstance(m, ResultMessage)][-1]
            finally:
                client.disconnect()
            expected = json.loads(settings) if form == "text" else json.loads((project / settings).read_text())
            assert got["cleanupPeriodDays"] == expected["cleanupPeriodDays"] and got["model"] == expected["model"]
            assert api.message_requests()[-1].body["model"] == expected["model"]
            lines = [json.loads(x) for x in local_transcript(host, project, result.session_id).read_text().splitlines()]
            assert {"type": "custom-title", "customTitle": f"title {form}", "sessionId": result.session_id} in lines
        assert pool.stats["claimed"] == 2, dict(pool.stats)


def local_transcript(host: ClaudeAgentOptions, project: Path, session_id: str) -> Path:
    [found] = (Path(host.env["HOME"]) / ".claude" / "projects").glob(f"*/{session_id}.jsonl")
    return found


def test_a_thinking_budget_follows_the_claim_as_a_cold_start_sends_it(
    host: ClaudeAgentOptions, api: MockMessagesAPI, home: Path
) -> None:
    """TypeScript's claim took ``maxThinkingTokens`` without applying it (measured for issue 33);
    ours sets it after the claim: the model's request carries the budget a cold start's carries."""
    # (a model that takes a budget: on 2.1.330 the default one thinks adaptively whatever the budget)
    options = dataclasses.replace(host, cwd=str(folder(home, "thinking")), max_thinking_tokens=4000, model="claude-sonnet-4-5-20250929")
    list(query("hello", options))
    cold = api.message_requests()[-1].body.get("thinking")
    with SparePool(1, host) as pool:
        parked(pool, 1)
        assert answer(list(pool.query("hello", options))) == "pong" and pool.stats["claimed"] == 1
    claimed = api.message_requests()[-1].body.get("thinking")
    assert cold is not None and cold.get("budget_tokens") == 4000 and claimed == cold, (cold, claimed)


def test_a_settings_file_changed_after_the_check_is_claimed_as_it_was_read(
    host: ClaudeAgentOptions, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The overlay is read once per take: a settings file removed between the fit check and the
    claim (say, another process rewriting it) does not leave the claimed session without the
    permissions it was checked with; it runs with what was read."""
    from claude_sdkurl._engine import spares as _spares

    project = folder(home, "rewritten")
    settings = project / "claim-settings.json"
    settings.write_text(json.dumps({"permissions": {"deny": ["Bash"]}, "cleanupPeriodDays": 5}))
    real = _spares.SparePool._take_spare

    def take_spare(self: SparePool, wait: bool) -> Any:
        settings.unlink()  # after the check, before the claim
        return real(self, wait)

    with SparePool(1, host) as pool:
        parked(pool, 1)
        monkeypatch.setattr(_spares.SparePool, "_take_spare", take_spare)
        client = pool.client(dataclasses.replace(host, cwd=str(project), settings=settings.name))
        try:
            got = effective(client)
        finally:
            client.disconnect()
        assert pool.stats["claimed"] == 1
    assert got["permissions"]["deny"] == ["Bash"] and got["cleanupPeriodDays"] == 5, got
