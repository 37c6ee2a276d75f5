"""Which calls :func:`approvals.parked_in` offers for a decision, from transcript entries as the
CLI 2.1.330 writes them (the ``hook_deferred_tool`` attachment after the call): only a call a
hook deferred, that the session really has, with no result yet, under a well-formed id; shown
with the session's own name and input, not the attachment's."""

from __future__ import annotations

from typing import Any

from claude_sdkurl.approvals import Parked, parked_in

SID = "1f8fbd58-5023-46ae-8d79-2edecba7d17d"


def call(use_id: str, command: str) -> dict[str, Any]:
    return {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": use_id, "name": "Bash", "input": {"command": command}}]}}  # fmt: skip


def deferred(use_id: str, command: str, at: str = "2026-11-28T21:52:03.900Z") -> dict[str, Any]:
    return {"type": "attachment", "timestamp": at, "attachment": {
        "type": "hook_deferred_tool", "toolUseID": use_id, "toolName": "Bash", "toolInput": {"command": command}}}  # fmt: skip


def result(use_id: str) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use_id, "content": "ok"}]}}


def test_only_a_deferred_real_unanswered_call_is_offered_with_the_sessions_own_input() -> None:
    entries = [
        call("toolu_1", "echo one"), deferred("toolu_1", "echo one"), result("toolu_1"),  # answered since
        call("toolu_2", "echo two"),  # never deferred (a CLI killed mid-call looks like this)
        deferred("toolu_3", "echo three"),  # no such call in the session
        call("../../etc/passwd", "echo four"), deferred("../../etc/passwd", "echo four"),  # path-like id
        call("toolu_5", "rm -rf build"), deferred("toolu_5", "echo harmless"),  # the attachment edited
    ]
    assert parked_in(SID, entries) == [Parked(SID, "toolu_5", "Bash", {"command": "rm -rf build"}, "2026-11-28T21:52:03.900Z")]
    assert parked_in(SID, [*entries, result("toolu_5")]) == []
    assert parked_in(SID, [{"type": "attachment", "attachment": "not a dict"}, {"message": None}, "junk"]) == []  # type: ignore[list-item]
