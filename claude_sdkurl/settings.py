"""Settings as Claude Code resolves them, for a host that must know before it starts a session
(TypeScript's ``resolveSettings`` and ``filterEscalatingDefaultMode``).

:func:`resolve_settings` asks the CLI itself: it starts one (no prompt, no model call), reads
its ``get_settings`` answer, and stops it, so the merge is the CLI's own and not a second
implementation of it. That costs a CLI start (about 0.3 s); the answer is what a session with
the same ``cwd``, ``setting_sources`` and ``managed_settings`` would run with.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from .client import ClaudeClient
from .types import ClaudeAgentOptions, SettingSource

# the CLI's names for its sources, and TypeScript's
_SOURCE_NAMES = {
    "userSettings": "user",
    "projectSettings": "project",
    "localSettings": "local",
    "policySettings": "managed",
    "flagSettings": "flag",
}
_ESCALATING = frozenset({"bypassPermissions", "auto", "acceptEdits"})
_UNTRUSTED_FOR = {"auto": {"project", "local"}, "bypassPermissions": {"project", "local"}, "acceptEdits": {"project"}}


def resolve_settings(
    cwd: str | Path | None = None,
    setting_sources: list[SettingSource] | None = None,
    managed_settings: dict[str, Any] | None = None,
    *,
    options: ClaudeAgentOptions | None = None,
) -> dict[str, Any]:
    """The settings a session in ``cwd`` would run with: ``{"effective": ..., "provenance":
    {key: {"source": ...}}, "sources": [{"source", "settings"}, ...]}``, sources from the
    lowest precedence to the highest, named as TypeScript names them (``user``, ``project``,
    ``local``, ``flag``, ``managed``).

    ``setting_sources`` (default: all) and ``managed_settings`` as the options of that name;
    ``options`` gives the rest of the launch (``cli_path``, ``env``, a ``settings`` flag layer).
    ``permissions.defaultMode`` is reported as the files set it: see
    :func:`filter_escalating_default_mode`.
    """
    base = options or ClaudeAgentOptions()
    launch = dataclasses.replace(
        base,
        cwd=cwd if cwd is not None else base.cwd,
        setting_sources=setting_sources if setting_sources is not None else base.setting_sources,
        managed_settings=managed_settings if managed_settings is not None else base.managed_settings,
        # it runs nothing, so the mode it starts in is moot; and a defaultMode of bypassPermissions
        # in the settings would stop a CLI started as root
        permission_mode="default",
    )
    with ClaudeClient(launch) as client:
        answer = client.get_settings()
    sources = [
        {"source": _SOURCE_NAMES.get(str(s.get("source")), str(s.get("source"))), "settings": s.get("settings") or {}}
        for s in answer.get("sources") or []
    ]
    effective = answer.get("effective") or {}
    provenance: dict[str, dict[str, str]] = {}
    for key in effective:
        for source in reversed(sources):  # the highest precedence that sets it
            if key in source["settings"]:
                provenance[key] = {"source": source["source"]}
                break
    return {"effective": effective, "provenance": provenance, "sources": sources}


def filter_escalating_default_mode(resolved: dict[str, Any]) -> dict[str, Any]:
    """``resolved["effective"]`` without a ``permissions.defaultMode`` that escalates
    (``bypassPermissions``, ``auto``, ``acceptEdits``) when a file committed with the repository
    set it (``project``; for ``auto`` and ``bypassPermissions`` also ``local``): the trust filter
    the CLI applies before it honours such a mode."""
    effective = dict(resolved.get("effective") or {})
    mode = (effective.get("permissions") or {}).get("defaultMode")
    if mode not in _ESCALATING:
        return effective
    for source in reversed(resolved.get("sources") or []):
        if "defaultMode" in ((source.get("settings") or {}).get("permissions") or {}):
            if source.get("source") in _UNTRUSTED_FOR[mode]:
                effective["permissions"] = {k: v for k, v in effective["permissions"].items() if k != "defaultMode"}
            break
    return effective
