"""Run the CLI elsewhere while callbacks stay here: ``ClaudeAgentOptions(spawn_claude_code_process=...)``.

See :mod:`claude_sdkurl._transport.spawn` for how the environment travels.
"""

from ._transport.spawn import SpawnedProcess, Spawner, SpawnOptions, command_prefix_spawner

__all__ = ["SpawnOptions", "SpawnedProcess", "Spawner", "command_prefix_spawner"]
