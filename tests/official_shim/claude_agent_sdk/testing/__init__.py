from claude_sdkurl.testing import run_session_store_conformance as _run


async def run_session_store_conformance(make_store, *, skip_optional=frozenset()):  # type: ignore[no-untyped-def]
    """The official suite is awaited; ours is a plain call (it drives async stores itself)."""
    _run(make_store, skip_optional=skip_optional)
