"""Session helpers on hand-made transcripts: corrupt lines, unknown entry types, long
project paths, bad ids; compared with the official functions where both answer."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import claude_agent_sdk as official
import pytest

import claude_sdkurl as ours

from .compare import plain
from claude_sdkurl._engine.paths import project_dir_name as _sanitize_path

SID = "3f2a9c1e-0000-4000-8000-00000000000a"


def _entry(kind: str, uuid: str, parent: str | None, content: Any, ts: str) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": SID,
        "timestamp": ts,
        "cwd": "/somewhere",
        "message": {"role": kind, "content": content},
    }


def write_project(config: Path, project: str, lines: list[str]) -> Path:
    directory = config / "projects" / _sanitize_path(project)
    directory.mkdir(parents=True)
    path = directory / f"{SID}.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))
    return tmp_path


LINES = [
    json.dumps(_entry("user", "u1", None, "first question", "2026-01-01T00:00:00.000Z")),
    "{this is not json",
    json.dumps(["a", "list", "not", "an", "object"]),
    json.dumps({"type": "brand-new-entry-kind", "uuid": "x1", "parentUuid": "u1", "whatever": True}),
    json.dumps(_entry("assistant", "a1", "u1", [{"type": "text", "text": "an answer"}], "2026-01-01T00:00:01.000Z")),
    json.dumps({"type": "custom-title", "customTitle": "My title", "sessionId": SID}),
]


def test_corrupt_lines_and_unknown_entries_are_skipped_with_a_warning(
    config: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_project(config, "/work/p", LINES)
    with caplog.at_level(logging.WARNING, "claude_sdkurl.sessions"):
        messages = ours.get_session_messages(SID, "/work/p")
    assert [m.uuid for m in messages] == ["u1", "a1"]
    assert "skipped 2 corrupt line(s)" in caplog.text
    assert plain(messages) == plain(official.get_session_messages(SID, "/work/p"))
    assert plain(ours.list_sessions("/work/p")) == plain(official.list_sessions("/work/p"))
    info = ours.get_session_info(SID, "/work/p")
    assert info is not None and info.custom_title == "My title" and info.first_prompt == "first question"


def test_import_skips_corrupt_lines_where_the_official_stops(config: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_project(config, "/work/p", LINES)
    store = ours.InMemorySessionStore()
    with caplog.at_level(logging.WARNING, "claude_sdkurl.sessions"):
        ours.import_session_to_store(SID, store, directory="/work/p")
    key = {"project_key": _sanitize_path("/work/p"), "session_id": SID}
    assert [e.get("uuid") for e in store.get_entries(key)] == ["u1", "x1", "a1", None]  # type: ignore[arg-type]
    assert "skipped 2 corrupt line(s)" in caplog.text
    with pytest.raises(json.JSONDecodeError):
        asyncio.run(official.import_session_to_store(SID, official.InMemorySessionStore(), directory="/work/p"))
    assert [m.uuid for m in ours.get_session_messages_from_store(store, SID, "/work/p")] == ["u1", "a1"]


def test_a_half_written_last_line_is_not_reported(config: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = write_project(config, "/work/p", LINES[:1])
    with path.open("a") as f:
        f.write('{"type":"assistant","uuid":"a2",')  # the CLI is writing it now
    with caplog.at_level(logging.WARNING, "claude_sdkurl.sessions"):
        assert [m.uuid for m in ours.get_session_messages(SID, "/work/p")] == ["u1"]
    assert "corrupt" not in caplog.text


def test_long_project_paths_hash_as_the_cli_does(config: Path) -> None:
    long = "/work/" + "deep-directory/" * 20 + "p"
    assert ours.project_key_for_directory(long) == official.project_key_for_directory(long)
    assert len(ours.project_key_for_directory(long)) > 200
    write_project(config, long, LINES)
    assert plain(ours.list_sessions(long)) == plain(official.list_sessions(long)) != []


@pytest.mark.parametrize("bad", ["", "not-a-uuid", "../../etc/passwd", SID.upper() + "x"])
def test_bad_session_ids(config: Path, bad: str) -> None:
    write_project(config, "/work/p", LINES)
    assert ours.get_session_messages(bad, "/work/p") == official.get_session_messages(bad, "/work/p") == []
    assert ours.get_session_info(bad) is None
    for mutate in (ours.rename_session, ours.tag_session):
        with pytest.raises(ValueError, match="Invalid session_id"):
            mutate(bad, "x")
    with pytest.raises(ValueError):
        ours.fork_session(bad)
    with pytest.raises(ValueError):
        ours.delete_session(bad)


def test_missing_sessions_raise_file_not_found(config: Path) -> None:
    missing = "3f2a9c1e-0000-4000-8000-0000000000ff"
    for call in (
        lambda: ours.rename_session(missing, "t"),
        lambda: ours.tag_session(missing, "t"),
        lambda: ours.delete_session(missing),
        lambda: ours.fork_session(missing),
        lambda: ours.import_session_to_store(missing, ours.InMemorySessionStore()),
    ):
        with pytest.raises(FileNotFoundError):
            call()


TRICKY_PROMPTS = [
    {"type": "user", "isMeta": True, "message": {"role": "user", "content": "meta, never the prompt"}},
    {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]}},
    {"type": "user", "message": {"role": "user", "content": "<command-name>/review</command-name> args"}},
    {"type": "user", "message": {"role": "user", "content": "<local-command-stdout>ok</local-command-stdout>"}},
    {"type": "user", "message": {"role": "user", "content": "[Request interrupted by user]"}},
    {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "  "}, {"type": "text", "text": "long\n" + "y" * 300}]}},
]


@pytest.mark.parametrize("upto", range(1, len(TRICKY_PROMPTS) + 1))
def test_first_prompt_rules_match_the_official(config: Path, upto: int) -> None:
    """The first-prompt rules (meta, tool results, slash commands as a fallback, skipped
    patterns, flattening and the 200-character cut), on disk and in the store summary fold."""
    entries = [
        {**e, "uuid": f"u{i}", "parentUuid": f"u{i - 1}" if i else None, "sessionId": SID, "timestamp": f"2026-01-01T00:00:0{i}.000Z"}
        for i, e in enumerate(TRICKY_PROMPTS[:upto])
    ]
    write_project(config, "/work/p", [json.dumps(e) for e in entries])
    assert plain(ours.list_sessions("/work/p")) == plain(official.list_sessions("/work/p"))
    key = {"project_key": "k", "session_id": SID}
    mine = ours.fold_session_summary(None, key, entries)  # type: ignore[arg-type]
    theirs = official.fold_session_summary(None, key, entries)  # type: ignore[arg-type]
    assert mine == theirs
    if upto == len(TRICKY_PROMPTS):
        assert mine["data"]["first_prompt"].startswith("long y") and mine["data"]["first_prompt"].endswith("\u2026")
    elif upto >= 3:
        assert mine["data"]["command_fallback"] == "/review"


def test_field_scanners_match_the_official_on_random_text() -> None:
    """The head/tail field scanners (no JSON parse: they must work on cut lines) against the
    official ones, on seeded random text with escapes, both spacings, and cuts anywhere."""
    import random

    from claude_agent_sdk._internal import sessions as theirs

    from claude_sdkurl.sessions import _text as mine

    rng = random.Random(12)
    pieces = ['"customTitle":"', '"customTitle": "', '\\"', "\\\\", '"', "a", "é", "\n", "{", "}", ","]
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        text = text[: rng.randint(0, len(text))]
        for ours_, official_ in ((mine.first_field, theirs._extract_json_string_field), (mine.last_field, theirs._extract_last_json_string_field)):
            assert ours_(text, "customTitle") == official_(text, "customTitle"), (ours_.__name__, text)
