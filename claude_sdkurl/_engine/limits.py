"""Sizes shared by the protocol core and the launch plan (a module of its own so that
planning a launch does not load the protocol)."""

DEFAULT_MAX_LINE = 256 * 1024 * 1024  # bytes in one NDJSON line; far above any real message
