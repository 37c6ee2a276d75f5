from claude_sdkurl.types import *  # noqa: F403
