"""Issue 69, item 5: the official SDK's async forms on this synchronous package raise
:class:`NotAsyncError` (a ``TypeError``), saying what to write instead and naming the porting
command, before anything starts or is sent: ``async for`` over ``query()``'s result and a
client's ``receive_*``, ``await`` on them, ``async with`` a client, and ``await`` on each of the
client's methods that are ``async def`` in the official SDK. The same calls without ``await`` in
an ``async def`` still run; signatures, ``inspect`` and mypy see plain methods (mypy still flags
the async forms in a user's program: tests/typechecked/async_forms.py, checked by tests/test_typing.py)."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

import claude_agent_sdk as official
from claude_sdkurl import ClaudeAgentOptions, ClaudeClient, ClaudeSDKClient, NotAsyncError, ResultMessage, query
from claude_sdkurl.testing import FakeCLI, MockTransport

PORT = "python -m claude_sdkurl.port rewrites a program written for claude_agent_sdk"


def _turns(message: dict[str, Any], cli: FakeCLI) -> None:
    if message["type"] == "user":
        cli.turn("pong")


def _raised(coroutine: Any) -> NotAsyncError:
    with pytest.raises(NotAsyncError) as raised:
        asyncio.run(coroutine)
    assert isinstance(raised.value, TypeError) and PORT in str(raised.value)
    return raised.value


def test_async_for_over_query_says_to_write_for() -> None:
    transport = MockTransport(_turns)

    async def main() -> None:
        async for _ in query("hi", transport=transport):  # type: ignore[attr-defined]
            pass

    error = _raised(main())
    assert str(error).startswith("query(...) is a plain iterator in claude_sdkurl: write `for message in query(...):` (no async for).")
    assert transport._thread is None  # nothing started


def test_await_on_query_says_to_write_for() -> None:
    async def main() -> None:
        await query("hi", transport=MockTransport(_turns))  # type: ignore[misc]

    assert "nothing to await: write `for message in query(...):`" in str(_raised(main()))


@pytest.mark.parametrize("cls", [ClaudeClient, ClaudeSDKClient])
def test_async_with_a_client_says_to_write_with(cls: type[ClaudeClient]) -> None:
    transport = MockTransport(_turns)

    async def main() -> None:
        async with cls(transport=transport):  # type: ignore[attr-defined]
            pass

    error = _raised(main())
    assert str(error).startswith("ClaudeClient is synchronous in claude_sdkurl: write `with ClaudeClient(options) as client:` (no async with).")
    assert transport._thread is None


#: every method that is ``async def`` in the official ClaudeSDKClient, with arguments
AWAITED = {
    "connect": (), "query": ("hi",), "interrupt": (), "set_permission_mode": ("plan",), "set_model": ("m",),
    "rewind_files": ("u1",), "reconnect_mcp_server": ("s",), "toggle_mcp_server": ("s", True), "stop_task": ("t",),
    "get_mcp_status": (), "get_context_usage": (), "get_server_info": (), "disconnect": (),
}  # fmt: skip


def test_every_awaitable_method_of_the_official_client_is_covered() -> None:
    theirs = {n for n, f in vars(official.ClaudeSDKClient).items() if inspect.iscoroutinefunction(f) and not n.startswith("_")}
    assert theirs == set(AWAITED)


@pytest.mark.parametrize("name", sorted(AWAITED))
def test_await_on_a_client_method_says_to_drop_the_await_and_does_nothing(name: str) -> None:
    transport = MockTransport(_turns)
    client = ClaudeClient(transport=transport)
    if name != "connect":
        client.connect()

    async def main() -> None:
        await getattr(client, name)(*AWAITED[name])

    try:
        error = _raised(main())
        assert str(error).startswith(f"ClaudeClient.{name}() is synchronous in claude_sdkurl: call `client.{name}(...)` without await.")
        sent = [m for m in transport.cli.sent if m["type"] != "control_request" or m["request"]["subtype"] != "initialize"]
        assert sent == []  # no prompt, no control request went out
        assert (client._session is None) == (name == "connect")  # not connected, not disconnected
    finally:
        client.disconnect()


@pytest.mark.parametrize("method", ["receive_messages", "receive_response"])
def test_async_for_over_receive_says_to_write_for(method: str) -> None:
    with ClaudeClient(transport=MockTransport(_turns)) as client:

        async def main() -> None:
            async for _ in getattr(client, method)():
                pass

        assert str(_raised(main())).startswith(f"client.{method}() is a plain iterator in claude_sdkurl: write `for message in client.{method}():`")

        async def awaited() -> None:
            await getattr(client, method)()

        assert "nothing to await" in str(_raised(awaited()))
        client.query("still works")
        assert isinstance(list(client.receive_response())[-1], ResultMessage)


def test_the_same_calls_without_await_in_an_async_def_run() -> None:
    """Only an awaited call is refused: a program may call the synchronous client from a
    coroutine (a blocking call, its own choice), in a notebook cell with top-level await too."""

    async def main() -> list[Any]:
        with ClaudeClient(transport=MockTransport(_turns)) as client:
            client.query("hi")
            info = client.get_server_info()
            answer = [m for m in client.receive_response()]
            for message in query("again", transport=MockTransport(_turns)):
                answer.append(message)
            return [info, *answer]

    got = asyncio.run(main())
    assert isinstance(got[0], dict) and [type(m).__name__ for m in got[1:] if isinstance(m, ResultMessage)] == ["ResultMessage"] * 2


def test_a_call_awaited_later_is_pythons_own_error_and_a_plain_call_costs_no_frame_reading() -> None:
    """The check reads the caller's next instruction: ``x = client.query(); await x`` is not
    seen (Python's own TypeError then), and a caller that is not a coroutine is never read."""
    from claude_sdkurl._engine import lifecycle as _lifecycle

    with ClaudeClient(transport=MockTransport(_turns)) as client:
        before = dict(_lifecycle._awaited_at)
        client.query("sync")
        assert _lifecycle._awaited_at == before

        async def later() -> None:
            sent = client.query("hi")  # type: ignore[func-returns-value]
            await sent  # type: ignore[misc]

        with pytest.raises(TypeError) as raised:
            asyncio.run(later())
        assert not isinstance(raised.value, NotAsyncError)
        list(client.receive_response())
        list(client.receive_response())


def test_the_methods_stay_plain_functions_with_their_signatures() -> None:
    for name in AWAITED:
        ours = getattr(ClaudeClient, name)
        assert inspect.isfunction(ours) and not inspect.iscoroutinefunction(ours)
        assert ours.__name__ == name and ours.__doc__
        theirs = inspect.signature(getattr(official.ClaudeSDKClient, name))
        assert list(inspect.signature(ours).parameters)[: len(theirs.parameters)] == list(theirs.parameters), name
    assert not inspect.isasyncgenfunction(ClaudeClient.receive_response)
    assert inspect.signature(ClaudeClient.receive_response).parameters.keys() == {"self", "timeout"}


def test_what_the_check_learns_of_callers_is_bounded() -> None:
    """The answer per calling instruction is kept, at most 512 of them (a long-running program
    calling from many coroutines does not grow it for ever)."""
    from types import SimpleNamespace

    from claude_sdkurl._engine import lifecycle as _lifecycle

    async def caller() -> None:
        pass

    for offset in range(0, 2 * 700, 2):
        _lifecycle._result_awaited(SimpleNamespace(f_code=caller.__code__, f_lasti=offset))  # type: ignore[arg-type]
        assert len(_lifecycle._awaited_at) <= 512
    assert len(_lifecycle._awaited_at) > 100
