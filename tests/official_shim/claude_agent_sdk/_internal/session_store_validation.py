from claude_sdkurl._launch import _check_store_options as validate_session_store_options  # noqa: F401
from claude_sdkurl.sessions._storecall import implements as _store_implements  # noqa: F401
