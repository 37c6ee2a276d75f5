"""Claude Code in Jupyter: ``%load_ext claude_sdkurl``, then ``%%claude`` cells.

- The cell is the prompt; the answer streams in as Markdown, tool calls folded (open one
  for its input and output), the turn's cost and tokens at the end, the turn in ``_claude``
  (a :class:`CellRun`).
- Cells continue one conversation (``--new`` starts another, ``--resume ID``,
  ``--continue``); flags ``--model``, ``--cwd``, ``--permission-mode``, ``--allowed-tools``,
  ``--max-budget-usd``; ``%claude prompt`` for one line.
- A tool call the permission rules do not settle shows Allow / Deny / Always allow buttons
  (ipywidgets); the kernel stays free while the cell waits (see ``_magic``).
- ``--with df fig`` attaches variables (a DataFrame's schema and sample, a figure as a
  PNG); ``--kernel-tools`` lets the agent list and read them, ``--allow-kernel-exec``
  also run code in the kernel, each run approved with the buttons.
- The stop button interrupts the turn, keeps what it showed, and stops the CLI; the next
  cell goes on with the conversation. ``--background`` returns at once.

Base options for every cell: ``configure(ClaudeAgentOptions(...))``.
"""

from ._agent import CellRun, NotebookAgent
from ._context import figure_png
from ._magic import agent, configure, load_ipython_extension, unload_ipython_extension

__all__ = ["CellRun", "NotebookAgent", "agent", "configure", "figure_png", "load_ipython_extension", "unload_ipython_extension"]
