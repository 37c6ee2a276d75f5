"""Session stores: where mirrored transcripts live (``ClaudeAgentOptions(session_store=...)``).

* :class:`InMemorySessionStore`: the official reference store, for tests.
* :class:`SQLiteSessionStore`: embedded, stdlib only; a file shared by the
  processes of one machine.
* ``claude_sdkurl.stores.postgres.PostgresSessionStore`` (``pip install
  'claude-sdkurl[postgres]'``) and ``claude_sdkurl.stores.redis.RedisSessionStore``
  (``[redis]``): the servers you already run, shared by many machines.

All pass ``claude_sdkurl.testing.run_session_store_conformance``.
"""

from ._memory import InMemorySessionStore
from .sqlite import SQLiteSessionStore

__all__ = ["InMemorySessionStore", "SQLiteSessionStore"]
