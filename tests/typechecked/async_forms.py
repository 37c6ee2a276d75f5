"""Type-checked with the package (tests/test_typing.py, ``warn_unused_ignores``): the official
SDK's async forms stay type errors on this package (each ignore below must be needed, or mypy
fails), and the plain forms type-check. Issue 69, item 5: the run-time error for the same forms
(``NotAsyncError``) is defined where type checkers do not look."""

from __future__ import annotations

from claude_sdkurl import ClaudeClient, query


async def official_forms() -> None:
    async for m in query("x"):  # type: ignore[attr-defined]
        print(m)
    await query("x")  # type: ignore[misc]


async def official_client(client: ClaudeClient) -> None:
    async with client:  # type: ignore[attr-defined]
        pass
    await client.query("x")  # type: ignore[misc]
    async for n in client.receive_response():  # type: ignore[attr-defined]
        print(n)


def plain_forms() -> None:
    for m in query("x"):
        print(m)
    with ClaudeClient() as client:
        client.query("x")
        for n in client.receive_response():
            print(n)
