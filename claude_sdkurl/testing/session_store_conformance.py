"""The contracts every :class:`~claude_sdkurl.types.SessionStore` must keep, as one call.

::

    from claude_sdkurl.testing import run_session_store_conformance

    def test_my_store():
        run_session_store_conformance(MyStore)   # or a function that builds one

The contracts are the official SDK's 14 (so a store that passes here passes
there, and the other way round); each runs on a new store from ``make_store``.
``make_store`` and the store's methods may be plain or ``async def``. A contract
about an optional method (``list_sessions``, ``list_session_summaries``,
``delete``, ``list_subkeys``) runs only when the store has that method of its
own and it is not named in ``skip_optional``. A broken contract is an
``AssertionError`` naming it.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

from .._engine.usercode import call_user
from ..sessions import fold_session_summary
from .._engine.storecall import implements
from ..types import SessionKey, SessionStore

OPTIONAL = frozenset({"list_sessions", "list_session_summaries", "delete", "list_subkeys"})
MAIN: SessionKey = {"project_key": "proj", "session_id": "sess"}
SUB1: SessionKey = {**MAIN, "subpath": "subagents/agent-1"}
SUB2: SessionKey = {**MAIN, "subpath": "subagents/agent-2"}


def _e(**fields: Any) -> Any:
    """An entry: stores keep entries as opaque objects; only ``type`` is required."""
    return {"type": "x", **fields}


class _Store:
    """A store under test, its methods called as plain functions."""

    def __init__(self, make: Callable[[], Any], has: frozenset[str]) -> None:
        self.inner = call_user(make)
        self.has = has

    def can(self, method: str) -> bool:
        """Whether the optional ``method`` is under test."""
        return method in self.has

    def __getattr__(self, method: str) -> Callable[..., Any]:
        bound = getattr(self.inner, method)
        return lambda *args: call_user(bound, *args)


# Each contract: (name, optional method it needs or None, body). Bodies assert.
_CONTRACTS: list[tuple[str, str | None, Callable[[_Store], None]]] = []


def _contract(name: str, needs: str | None = None) -> Callable[[Callable[[_Store], None]], Callable[[_Store], None]]:
    def register(body: Callable[[_Store], None]) -> Callable[[_Store], None]:
        _CONTRACTS.append((name, needs, body))
        return body

    return register


def _is_epoch_ms(value: Any) -> bool:
    # Epoch seconds would be under 1e12 for centuries to come: milliseconds are above it.
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 1e12


@_contract("1. load gives back what append was given, in order")
def _round_trip(s: _Store) -> None:
    s.append(MAIN, [_e(uuid="b", n=1), _e(uuid="a", n=2)])
    # Equal as objects; the bytes may differ (a store may reorder keys).
    assert s.load(MAIN) == [_e(uuid="b", n=1), _e(uuid="a", n=2)]


@_contract("2. load of an unknown key is None")
def _unknown(s: _Store) -> None:
    assert s.load({"project_key": "proj", "session_id": "nope"}) is None
    s.append(MAIN, [_e(uuid="x", n=1)])
    assert s.load({**MAIN, "subpath": "nope"}) is None


@_contract("3. appends are kept in call order")
def _order(s: _Store) -> None:
    batches = [[_e(uuid="z", n=1)], [_e(uuid="a", n=2), _e(uuid="m", n=3)], [_e(uuid="b", n=4)]]
    for batch in batches:
        s.append(MAIN, batch)
    assert s.load(MAIN) == [e for batch in batches for e in batch]


@_contract("4. append([]) changes nothing")
def _empty_append(s: _Store) -> None:
    s.append(MAIN, [_e(uuid="a", n=1)])
    s.append(MAIN, [])
    assert s.load(MAIN) == [_e(uuid="a", n=1)]


@_contract("5. a subpath is a key of its own")
def _subpath_apart(s: _Store) -> None:
    s.append(MAIN, [_e(uuid="m", n=1)])
    s.append(SUB1, [_e(uuid="s", n=1)])
    assert s.load(MAIN) == [_e(uuid="m", n=1)]
    assert s.load(SUB1) == [_e(uuid="s", n=1)]


@_contract("6. projects do not share sessions")
def _projects_apart(s: _Store) -> None:
    for project in ("A", "B"):
        s.append({"project_key": project, "session_id": "s1"}, [_e(origin=project)])
    for project in ("A", "B"):
        assert s.load({"project_key": project, "session_id": "s1"}) == [_e(origin=project)]
        if s.can("list_sessions"):
            assert len(s.list_sessions(project)) == 1


@_contract("7. list_sessions names a project's sessions, mtime in epoch ms", "list_sessions")
def _listing(s: _Store) -> None:
    for project, sid in (("proj", "a"), ("proj", "b"), ("other", "c")):
        s.append({"project_key": project, "session_id": sid}, [_e(n=1)])
    listed = s.list_sessions("proj")
    assert sorted(row["session_id"] for row in listed) == ["a", "b"]
    assert all(_is_epoch_ms(row["mtime"]) for row in listed)
    assert s.list_sessions("never-appended-project") == []


@_contract("8. list_sessions leaves subagent keys out", "list_sessions")
def _listing_main_only(s: _Store) -> None:
    main = {"project_key": "proj", "session_id": "main"}
    s.append(main, [_e(n=1)])
    s.append({**main, "subpath": "subagents/agent-1"}, [_e(n=1)])
    assert [row["session_id"] for row in s.list_sessions("proj")] == ["main"]


@_contract("9. a deleted session loads as None", "delete")
def _delete(s: _Store) -> None:
    s.delete({"project_key": "proj", "session_id": "never-written"})  # no error
    s.append(MAIN, [_e(n=1)])
    s.delete(MAIN)
    assert s.load(MAIN) is None


@_contract("10. deleting a session deletes its subagents, nothing else", "delete")
def _delete_cascades(s: _Store) -> None:
    others = [{"project_key": "proj", "session_id": "sess2"}, {"project_key": "other-proj", "session_id": "sess"}]
    for key in [MAIN, SUB1, SUB2, *others]:
        s.append(key, [_e(n=1)])
    s.delete(MAIN)
    assert s.load(MAIN) is None and s.load(SUB1) is None and s.load(SUB2) is None
    for key in others:
        left = s.load(key)
        assert left is not None and len(left) == 1
    if s.can("list_subkeys"):
        assert s.list_subkeys(MAIN) == []
    if s.can("list_sessions"):
        assert "sess" not in [row["session_id"] for row in s.list_sessions("proj")]


@_contract("11. deleting a subpath deletes that key only", "delete")
def _delete_one_subkey(s: _Store) -> None:
    for key in (MAIN, SUB1, SUB2):
        s.append(key, [_e(n=1)])
    s.delete(SUB1)
    assert s.load(SUB1) is None
    for key in (SUB2, MAIN):
        left = s.load(key)
        assert left is not None and len(left) == 1
    if s.can("list_subkeys"):
        assert s.list_subkeys(MAIN) == ["subagents/agent-2"]


@_contract("12. list_subkeys names a session's subpaths", "list_subkeys")
def _subkeys(s: _Store) -> None:
    s.append(MAIN, [_e(n=1)])
    s.append(SUB1, [_e(n=1)])
    s.append(SUB2, [_e(n=1)])
    s.append({"project_key": "proj", "session_id": "other-sess", "subpath": "subagents/agent-x"}, [_e(n=1)])
    found = s.list_subkeys(MAIN)
    assert sorted(found) == ["subagents/agent-1", "subagents/agent-2"]


@_contract("13. list_subkeys leaves the main transcript out", "list_subkeys")
def _subkeys_main_out(s: _Store) -> None:
    s.append(MAIN, [_e(n=1)])
    assert s.list_subkeys(MAIN) == []
    assert s.list_subkeys({"project_key": "proj", "session_id": "never-appended"}) == []


@_contract("14. list_session_summaries keeps the fold's record as it is", "list_session_summaries")
def _summaries(s: _Store) -> None:
    key: SessionKey = {"project_key": "proj", "session_id": "summ-sess"}
    s.append(key, [_e(timestamp="2024-01-01T00:00:00.000Z", customTitle="first"), _e(timestamp="2024-01-01T00:00:01.000Z")])
    s.append(key, [_e(timestamp="2024-01-01T00:00:02.000Z", customTitle="second")])
    s.append({"project_key": "other", "session_id": "elsewhere"}, [_e(timestamp="2024-01-01T00:00:00.000Z")])
    records = {r["session_id"]: r for r in s.list_session_summaries("proj")}
    assert set(records) == {"summ-sess"}
    record = records["summ-sess"]
    assert _is_epoch_ms(record["mtime"]) and isinstance(record["data"], dict)
    if s.can("list_sessions"):
        # The record's mtime is the store's write time, on list_sessions()' clock: never
        # older than the session (else every record would look stale to the listing).
        assert record["mtime"] >= {r["session_id"]: r["mtime"] for r in s.list_sessions("proj")}["summ-sess"]
    refolded = fold_session_summary(record, key, [_e(timestamp="2024-01-01T00:00:03.000Z")])
    assert refolded["session_id"] == "summ-sess" and refolded["mtime"] == record["mtime"]
    s.append({**key, "subpath": "subagents/agent-1"}, [_e(timestamp="2024-01-01T00:00:09.000Z", customTitle="subagent")])
    assert {r["session_id"]: r for r in s.list_session_summaries("proj")}["summ-sess"]["data"] == record["data"]
    assert s.list_session_summaries("never-appended-project") == []
    if s.can("delete"):
        s.delete(key)
        assert s.list_session_summaries("proj") == []


def run_session_store_conformance(
    make_store: Callable[[], SessionStore | Awaitable[SessionStore]],
    *,
    skip_optional: frozenset[str] = frozenset(),
) -> None:
    """Run every contract that applies on a new store each (see the module doc)."""
    unknown = set(skip_optional) - OPTIONAL
    assert not unknown, f"unknown optional methods in skip_optional: {unknown}"
    probe = call_user(make_store)
    has = frozenset(m for m in OPTIONAL if m not in skip_optional and implements(probe, m))
    for name, needs, body in _CONTRACTS:
        if needs is not None and needs not in has:
            continue
        store = _Store(make_store, has)
        try:
            body(store)
        except AssertionError as broken:
            raise AssertionError(f"SessionStore contract {name}: {broken}") from broken
