from claude_sdkurl._engine.launch import _check_store_options as validate_session_store_options  # noqa: F401
from claude_sdkurl._engine.storecall import implements as _store_implements  # noqa: F401
