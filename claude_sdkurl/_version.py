"""Versions: ours, and the official SDK release whose surface we mirror."""

__version__ = "0.1.0"

OFFICIAL_SDK_VERSION = "0.2.189"
"""The ``claude-agent-sdk`` release this package is a drop-in for; the CLI sees it
in ``CLAUDE_AGENT_SDK_VERSION`` as it would from the official SDK."""
