"""Run the CLI elsewhere (over ssh, in a container, a sandbox) while callbacks stay here.

``ClaudeAgentOptions(spawn_claude_code_process=...)`` takes either

* a function ``(SpawnOptions) -> SpawnedProcess``, as the TypeScript SDK's
  ``spawnClaudeCodeProcess``: it starts the CLI however it likes and returns a
  process-like object whose ``stdin``/``stdout`` are OS pipes (a
  ``subprocess.Popen`` is one); or
* a command prefix, ``["ssh", "box", "--"]`` or ``["docker", "exec", "-i",
  "box"]``, turned into such a function by :func:`command_prefix_spawner`.

Either way the CLI talks NDJSON over those pipes (stdio; the WebSocket would
need the far side to reach our 127.0.0.1), and ``can_use_tool``, hooks and SDK
MCP tools run in this process.

The prefix form keeps the environment the SDK sets (``options.env`` with its
API key or token, the SDK's own variables) off every command line: a small
POSIX ``sh`` bootstrap on the far side reads ``export`` lines from the CLI's
stdin up to a random end marker, then ``exec``s the CLI on the same stdin (the
shell's ``read`` takes one byte at a time from a pipe, so nothing of the NDJSON
that follows is consumed). Only the bootstrap, the CLI's path and its flags
appear in the far side's process list.

The bootstrap also watches the channel: the CLI runs as its child, and when the
process that started the bootstrap (sshd's session process) is gone, the CLI is
stopped (SIGTERM, then SIGKILL 2 s later): a dropped ssh connection leaves no
CLI running on to the end of its turn. (``docker exec``'s process outlives its
client, so there the CLI ends when it notices its closed input.)
"""

from ._engine.transport.spawn import SpawnedProcess, Spawner, SpawnOptions, command_prefix_spawner

__all__ = ["SpawnOptions", "SpawnedProcess", "Spawner", "command_prefix_spawner"]
