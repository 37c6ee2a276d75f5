"""A batch's checkpoint file, the hostile cases (no CLI): torn at every byte of its last line
(what a crash mid-write leaves), corrupt in the middle, edited by hand, and who may read it."""

from __future__ import annotations

import dataclasses
import json
import logging
import stat
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl.batch import BatchItem, BatchResult, CheckpointError, run_batch

from .test_batch_driver import Scripted


def _items(n: int) -> list[BatchItem]:
    return [BatchItem(index=i, prompt=f"p{i}", text=f"answer {i} ✓", total_cost_usd=0.01, session_id=f"s{i}") for i in range(n)]


def _lines(items: list[BatchItem]) -> list[bytes]:
    return [(json.dumps(dataclasses.asdict(i)) + "\n").encode() for i in items]


def _answer(ran: list[int]) -> Any:
    def answer(index: int, prompt: str, attempt: int, options: Any) -> BatchItem:
        ran.append(index)
        return BatchItem(index=index, prompt=prompt, text=f"answer {index}", total_cost_usd=0.01)

    return answer


def test_a_last_line_torn_at_any_byte_is_skipped_with_a_warning_and_repaired(tmp_path: Path,
                                                                               caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    whole = _lines(_items(3))
    last = whole[-1]
    for cut in range(1, len(last)):  # every byte of the last line but its end
        path = tmp_path / f"cp{cut}.jsonl"
        path.write_bytes(b"".join(whole[:-1]) + last[:cut])
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="claude_sdkurl.batch"):
            loaded = BatchResult.load(path)
        complete_json = cut == len(last) - 1  # everything but the newline: the item is whole
        assert [i.index for i in loaded.items] == ([0, 1, 2] if complete_json else [0, 1]), cut
        if not complete_json:
            assert any(f"{path}:3" in r.getMessage() and "torn" in r.getMessage() for r in caplog.records), cut
    # the next run repairs the file before it appends: no line is glued onto the fragment
    path = tmp_path / "cp.jsonl"
    path.write_bytes(b"".join(whole[:-1]) + last[:17])
    ran: list[int] = []
    prompts = ["p0", "p1", "p2", "p3"]
    result = run_batch(prompts, executor=Scripted(_answer(ran)), checkpoint=path, resume=path)
    assert sorted(ran) == [2, 3] and [i.ok for i in result.items] == [True] * 4
    again = BatchResult.load(path)
    assert [i.index for i in again.items] == [0, 1, 2, 3]
    assert all(json.loads(line) for line in path.read_text().splitlines())  # every line whole


def test_a_corrupt_line_in_the_middle_is_a_typed_error_naming_file_and_line(tmp_path: Path) -> None:
    whole = _lines(_items(4))
    cases = {
        "json": b"{not json\n",
        "fields": b'{"index": 1, "prompt": "p1", "no_such_field": 3}\n',
        "bytes": b'{"index": 1, "prompt": "\xff\xfe"}\n',
        "shape": b"[1, 2, 3]\n",
        "types": b'{"index": "one", "prompt": "p1"}\n',
        "state": b'{"state": "paused", "probe_at": "soon"}\n',
    }
    for name, bad in cases.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(whole[0] + bad + whole[2] + whole[3])
        with pytest.raises(CheckpointError) as caught:
            BatchResult.load(path)
        assert caught.value.path == str(path) and caught.value.line == 2, name
        assert f"{path}:2" in str(caught.value)
        # a batch resumed from it starts nothing, and the file is left as it was
        before = path.read_bytes()
        ran: list[int] = []
        with pytest.raises(CheckpointError):
            run_batch(["p0", "p1", "p2", "p3"], executor=Scripted(_answer(ran)), checkpoint=path, resume=path)
        assert ran == [] and path.read_bytes() == before


def test_a_checkpoint_is_created_private(tmp_path: Path) -> None:
    path = tmp_path / "cp.jsonl"
    run_batch(["p0"], executor=Scripted(_answer([])), checkpoint=path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_checkpoint_that_cannot_be_written_starts_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "cp.jsonl"
    path.write_text("")
    path.chmod(0o400)
    folder.chmod(0o500)
    ran: list[int] = []
    try:
        if _root_ignores_modes(path):
            path = tmp_path / "not-a-dir" / "cp.jsonl"  # as root, only a missing folder refuses
            (tmp_path / "not-a-dir").write_text("a file where the folder should be")
        with pytest.raises(OSError):
            run_batch(["p0", "p1"], executor=Scripted(_answer(ran)), checkpoint=path)
        assert ran == []
    finally:
        folder.chmod(0o700)


def _root_ignores_modes(path: Path) -> bool:
    try:
        with open(path, "a"):
            return True
    except PermissionError:
        return False
