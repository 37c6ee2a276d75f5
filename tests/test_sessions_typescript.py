"""The TypeScript SDK's session functions we took (``archive_session``/``unarchive_session``,
``list_sessions(include_programmatic=...)``, ``get_session_messages(include_system_messages=...)``),
answered alike by both SDKs on transcripts the real CLI 2.1.330 wrote; and the archive record,
which writes the user's files, under hostile cases first.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

import claude_sdkurl as ours
from claude_sdkurl import ClaudeAgentOptions, query
from claude_sdkurl.testing import MockMessagesAPI, install_cli, offline_env, text

from .typescript_sdk import typescript_sdk

pytestmark = pytest.mark.realcli

NODE = r"""
import * as sdk from '@anthropic-ai/claude-agent-sdk';
const [what, ...args] = JSON.parse(process.argv[2]);
let out;
if (what === 'list') out = await sdk.listSessions(args[0]);
else if (what === 'messages') out = await sdk.getSessionMessages(args[0], args[1]);
else if (what === 'archive') out = await sdk.archiveSession(args[0], args[1]);
else if (what === 'unarchive') out = await sdk.unarchiveSession(args[0], args[1]);
process.stdout.write(JSON.stringify(out ?? null));
"""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A HOME with two sessions the real CLI wrote through us (entry point sdk-py), one
    rewritten as if the CLI's own terminal wrote it (entry point cli), and the Node runner."""
    home = tmp_path_factory.mktemp("home")
    work = home / "work"
    work.mkdir()
    cli = install_cli("2.1.330")
    ids = []
    with MockMessagesAPI() as api:
        for prompt in ("first prompt", "second prompt"):
            api.enqueue(text(f"answer to {prompt}"))
            options = ClaudeAgentOptions(cli_path=str(cli), env=offline_env(api.url, home), cwd=str(work))
            ids.append(list(query(prompt, options))[-1].session_id)
    [project] = (home / ".claude" / "projects").iterdir()
    terminal = project / f"{ids[1]}.jsonl"
    lines = [json.loads(line) for line in terminal.read_text().splitlines() if line.strip()]
    for entry in lines:
        if entry.get("entrypoint") == "sdk-py":
            entry["entrypoint"] = "cli"
    # a system entry on the conversation's chain, as a compaction leaves one
    # a system entry in the conversation's chain (as a compaction leaves one): before the last prompt
    last_user = next(e for e in reversed(lines) if e.get("type") == "user")
    notice = {"type": "system", "subtype": "informational", "content": "NOTICE-9", "level": "info",
              "uuid": str(uuid.uuid4()), "parentUuid": last_user.get("parentUuid"), "sessionId": ids[1],
              "timestamp": last_user["timestamp"], "isSidechain": False, "cwd": str(work), "entrypoint": "cli",
              "userType": "external", "version": last_user.get("version")}  # fmt: skip
    last_user["parentUuid"] = notice["uuid"]
    lines.insert(lines.index(last_user), notice)
    terminal.write_text("".join(json.dumps(e) + "\n" for e in lines))
    runner = home / "runner"
    runner.mkdir()
    (runner / "node_modules").symlink_to(typescript_sdk().parent.parent)
    (runner / "run.mjs").write_text(NODE)
    return {"home": home, "work": str(work), "ids": ids, "project": project, "runner": runner}


def _typescript(world: dict[str, Any], *call: Any) -> Any:
    env = {**os.environ, "HOME": str(world["home"]), "CLAUDE_CONFIG_DIR": str(world["home"] / ".claude")}
    done = subprocess.run(["node", "run.mjs", json.dumps(call)], cwd=world["runner"], env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.fixture
def at_home(world: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("HOME", str(world["home"]))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(world["home"] / ".claude"))
    for session_id in world["ids"]:
        shutil.rmtree(world["project"] / session_id, ignore_errors=True)  # no archive left by a test before
    return world


def _listing(rows: list[Any]) -> list[tuple[str, Any]]:
    return [(r.session_id, r.archived) for r in rows]


def _ts_listing(rows: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(r["sessionId"], r.get("archived")) for r in rows]


def test_include_programmatic_leaves_out_what_typescript_leaves_out(at_home: dict[str, Any]) -> None:
    w = at_home
    for include in (True, False):
        mine = ours.list_sessions(w["work"], include_programmatic=include)
        theirs = _typescript(w, "list", {"dir": w["work"], "includeProgrammatic": include})
        assert _listing(mine) == _ts_listing(theirs)
    assert [r.session_id for r in ours.list_sessions(w["work"], include_programmatic=False)] == [w["ids"][1]]
    assert len(ours.list_sessions(w["work"])) == 2  # the default lists both, as before


def test_include_system_messages_as_typescript(at_home: dict[str, Any]) -> None:
    w = at_home
    for include in (False, True):
        mine = ours.get_session_messages(w["ids"][1], w["work"], include_system_messages=include)
        theirs = _typescript(w, "messages", w["ids"][1], {"dir": w["work"], "includeSystemMessages": include})
        assert [(m.type, m.uuid) for m in mine] == [(m["type"], m["uuid"]) for m in theirs]
    kinds = [m.type for m in ours.get_session_messages(w["ids"][1], w["work"], include_system_messages=True)]
    assert "system" in kinds and "system" not in [m.type for m in ours.get_session_messages(w["ids"][1], w["work"])]


def test_an_archive_either_sdk_writes_the_other_reads(at_home: dict[str, Any]) -> None:
    w = at_home
    first, second = w["ids"]
    assert _listing(ours.list_sessions(w["work"])) == _ts_listing(_typescript(w, "list", {"dir": w["work"]}))
    ours.archive_session(first, w["work"])
    assert dict(_ts_listing(_typescript(w, "list", {"dir": w["work"]})))[first] is True
    _typescript(w, "archive", second, {"dir": w["work"]})
    assert dict(_listing(ours.list_sessions(w["work"]))) == {first: True, second: True}
    _typescript(w, "unarchive", first, {"dir": w["work"]})
    ours.unarchive_session(second, w["work"])
    assert dict(_listing(ours.list_sessions(w["work"]))) == {first: False, second: False}
    assert _listing(ours.list_sessions(w["work"])) == _ts_listing(_typescript(w, "list", {"dir": w["work"]}))
    assert ours.get_session_info(first, w["work"]).archived is False


# ------------------------------------------------------------------ hostile cases


@pytest.mark.parametrize("forged", ["../../etc/passwd", "not-a-uuid", "", "11111111-1111-4111-8111-11111111111/"])
def test_a_forged_or_path_like_id_is_refused_and_writes_nothing(at_home: dict[str, Any], forged: str) -> None:
    before = sorted(p.name for p in at_home["project"].iterdir())
    with pytest.raises(ValueError):
        ours.archive_session(forged)
    assert sorted(p.name for p in at_home["project"].iterdir()) == before


def test_a_session_that_is_not_there_is_not_found(at_home: dict[str, Any]) -> None:
    with pytest.raises(FileNotFoundError, match="not found"):
        ours.archive_session(str(uuid.uuid4()))


def test_the_record_is_private_and_whole(at_home: dict[str, Any]) -> None:
    w = at_home
    ours.archive_session(w["ids"][0])
    record = w["project"] / w["ids"][0] / "archived.json"
    assert record.stat().st_mode & 0o777 == 0o600 and record.parent.stat().st_mode & 0o777 == 0o700
    assert json.loads(record.read_text())["archived"] is True
    assert [p.name for p in record.parent.iterdir()] == ["archived.json"]  # no temporary left


def test_a_record_edited_on_disk_archives_nothing_and_breaks_nothing(at_home: dict[str, Any]) -> None:
    w = at_home
    record = w["project"] / w["ids"][0] / "archived.json"
    record.parent.mkdir(mode=0o700)
    for damage in (b"{torn", b'{"archived": "yes"}', b"[]", b"\x00" * 10, b'{"archived": true}' + b" " * 9000):
        record.write_bytes(damage)
        rows = dict(_listing(ours.list_sessions(w["work"])))
        assert rows[w["ids"][0]] in (None, True) and len(rows) == 2
        assert rows[w["ids"][0]] is None or damage.startswith(b'{"archived": true}')


def test_a_prompt_sent_after_the_archive_unarchives(at_home: dict[str, Any]) -> None:
    w = at_home
    ours.archive_session(w["ids"][0])
    record = w["project"] / w["ids"][0] / "archived.json"
    record.write_text(json.dumps({"archived": True, "at": "2000-01-01T00:00:00.000Z", "by": "sdk"}))  # before every prompt
    assert dict(_listing(ours.list_sessions(w["work"])))[w["ids"][0]] is False
    assert dict(_ts_listing(_typescript(w, "list", {"dir": w["work"]})))[w["ids"][0]] is False


def test_a_write_cut_short_keeps_the_old_record(at_home: dict[str, Any]) -> None:
    w = at_home
    ours.archive_session(w["ids"][0])
    record = w["project"] / w["ids"][0] / "archived.json"
    kept = record.read_bytes()
    code = (
        "import resource, sys, signal; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
        "resource.setrlimit(resource.RLIMIT_FSIZE, (10, 10)); import claude_sdkurl as c; "
        f"c.unarchive_session({w['ids'][0]!r})"
    )
    env = {**os.environ, "HOME": str(w["home"]), "CLAUDE_CONFIG_DIR": str(w["home"] / ".claude")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "File too large" in done.stderr
    assert record.read_bytes() == kept  # whole or not at all
    assert [p.name for p in record.parent.iterdir()] == ["archived.json"]


def test_an_unwritable_folder_is_a_clear_error(at_home: dict[str, Any]) -> None:
    if os.geteuid() == 0:
        # root writes anyway: show it with a file where the folder must be instead
        w = at_home
        (w["project"] / w["ids"][0]).write_text("in the way")
        try:
            with pytest.raises(OSError):
                ours.archive_session(w["ids"][0])
        finally:
            (w["project"] / w["ids"][0]).unlink()
        return
    raise AssertionError("run as root here; the mode case needs a non-root user")


# ------------------------------------------------------------------ settings resolution

NODE_SETTINGS = r"""
import * as sdk from '@anthropic-ai/claude-agent-sdk';
const opts = JSON.parse(process.argv[2]);
const resolved = await sdk.resolveSettings(opts);
process.stdout.write(JSON.stringify({resolved, filtered: sdk.filterEscalatingDefaultMode(resolved)}));
"""


@pytest.mark.parametrize(
    ("mode", "mode_in", "kept"),
    [("bypassPermissions", "project", False), ("bypassPermissions", "local", False), ("bypassPermissions", "user", True),
     ("acceptEdits", "local", True), ("acceptEdits", "project", False)],
)  # fmt: skip
def test_settings_resolve_as_typescript_resolves_them(
    world: dict[str, Any], tmp_path: Path, mode: str, mode_in: str, kept: bool
) -> None:
    home = tmp_path / "home"
    project = tmp_path / "proj"
    (home / ".claude").mkdir(parents=True)
    (project / ".claude").mkdir(parents=True)
    files = {
        "user": home / ".claude" / "settings.json",
        "project": project / ".claude" / "settings.json",
        "local": project / ".claude" / "settings.local.json",
    }
    layers: dict[str, dict[str, Any]] = {
        "user": {"outputStyle": "Concise", "permissions": {"allow": ["Read"]}},
        "project": {"outputStyle": "Explanatory", "includeCoAuthoredBy": False},
        "local": {"cleanupPeriodDays": 12},
    }
    layers[mode_in].setdefault("permissions", {})["defaultMode"] = mode
    for name, path in files.items():
        path.write_text(json.dumps(layers[name]))
    managed = {"permissions": {"deny": ["Bash(rm:*)"]}}
    env = {**os.environ, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}
    runner = world["runner"]
    (runner / "settings.mjs").write_text(NODE_SETTINGS)
    done = subprocess.run(["node", "settings.mjs", json.dumps({"cwd": str(project), "managedSettings": managed})],
                          cwd=runner, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    theirs = json.loads(done.stdout)
    with MockMessagesAPI() as api:
        options = ClaudeAgentOptions(cli_path=str(install_cli("2.1.330")), env={**offline_env(api.url, home), "CLAUDE_CONFIG_DIR": str(home / ".claude")})
        mine = ours.resolve_settings(project, managed_settings=managed, options=options)
        assert api.message_requests() == []  # resolving asks no model
    assert mine["effective"] == theirs["resolved"]["effective"]
    assert mine["provenance"] == {k: {"source": v["source"]} for k, v in theirs["resolved"]["provenance"].items()}
    filtered = ours.filter_escalating_default_mode(mine)
    assert filtered == theirs["filtered"]
    # a file committed with the repository may not escalate the mode (nor, to auto or bypass, a local one)
    assert ("defaultMode" in filtered.get("permissions", {})) is kept
