"""What the notebook says, without a kernel (issue 60, items 6-9): every flag explained, advice
that is not what the user already did, bypass as root, and no secret of the options on screen.
The kernel side of each is in tests/test_notebook_magic.py."""

from __future__ import annotations

import dataclasses
import os

import pytest

from claude_sdkurl import ClaudeAgentOptions
from claude_sdkurl.notebook._agent import _unasked, parser


def test_every_flag_of_the_help_says_what_it_does() -> None:
    actions = [a for a in parser()._actions if a.option_strings]
    assert len(actions) >= 13
    assert [a.option_strings[0] for a in actions if not a.help] == []


def test_the_advice_never_names_a_rule_the_user_already_wrote() -> None:
    said = _unasked(ClaudeAgentOptions(allowed_tools=["Read", "Bash(git *)"], can_use_tool=lambda *a: None))
    assert said is not None and "`Read` runs without asking" in said
    assert "`Bash(git *)` say" not in said and "Read(./src/**)" in said  # a narrower rule of the tool named
    said = _unasked(ClaudeAgentOptions(allowed_tools=["Bash"], can_use_tool=lambda *a: None))
    assert said is not None and "`Bash(git *)`" in said
    said = _unasked(ClaudeAgentOptions(allowed_tools=["Read", "Read(./src/**)"], can_use_tool=lambda *a: None))
    assert said is not None and "Read(./src/**)" not in said


@pytest.mark.skipif(os.geteuid() != 0, reason="the CLI's refusal is for root alone")
def test_bypass_as_root_says_what_it_takes_instead_of_every_tool_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IS_SANDBOX", raising=False)
    options = ClaudeAgentOptions(permission_mode="bypassPermissions", can_use_tool=lambda *a: None)
    said = _unasked(options)
    assert said is not None and "IS_SANDBOX=1" in said and "runs without asking" not in said
    assert "IS_SANDBOX=1" in (_unasked(dataclasses.replace(options, env={"IS_SANDBOX": "yes"})) or "")  # the CLI takes "1" alone
    sandboxed = _unasked(dataclasses.replace(options, env={"IS_SANDBOX": "1"}))
    assert sandboxed is not None and "Every tool runs without asking" in sandboxed


def test_options_shown_in_a_notebook_mask_secret_values_and_print_unchanged() -> None:
    from IPython.lib.pretty import pretty

    options = ClaudeAgentOptions(env={"ANTHROPIC_API_KEY": "sk-ant-api03-very-secret-value", "DB_PASSWORD": "hunter2hunter2",
                                      "EDITOR": "vim"}, model="claude-sonnet-4-6")  # fmt: skip
    shown = pretty(options)
    assert "very-secret" not in shown and "hunter2" not in shown
    assert "'ANTHROPIC_API_KEY': '<hidden>'" in shown and "'EDITOR': 'vim'" in shown and "claude-sonnet-4-6" in shown
    assert "very-secret" in repr(options)  # repr() is the dataclass's, as the official SDK's
