"""Many prompts at once, on any ``concurrent.futures.Executor``.

::

    from claude_sdkurl.batch import run_batch

    result = run_batch(prompts, options, max_concurrency=8)           # threads in this process
    result = run_batch(prompts, options, executor=dask_client.get_executor())  # a Dask cluster
    result = run_batch(prompts, options, executor=RayExecutor())               # Ray (after ray.init())
    print(result.total_cost_usd, result.failed)

Each prompt is one :func:`claude_sdkurl.query`, run by :func:`run_one` wherever
the executor runs it. An item that fails is a :class:`BatchItem` with a named
``error`` (the exception's type and text), never an exception that ends the
batch. With ``checkpoint=path`` each finished item is appended to a JSON-lines
file as it finishes; ``resume=path`` (or a :class:`BatchResult`) skips the
prompts already finished there, so a half-done batch goes on where it stopped;
with a ``session_store`` in the options and ``continue_prompt``, an item that
failed mid-session goes on with its session from the store instead of starting
over (on any worker: the store is shared).
Options travel to remote workers by pickling: a field that cannot be pickled is
named in :class:`UnpicklableOptionError` before anything is submitted.

The driver (this process) meets limits and faults for every executor alike (see
:class:`RetryPolicy`): a rate limit pauses the batch and one probe at a time decides when it
goes on; transient faults run an item again a bounded number of times; a
``max_total_cost_usd`` budget gives each item a share as its ``max_budget_usd`` and starts
nothing once it is spent. Workers never wait on a limit holding a CLI.

The package, one room per concern:

=================  ==============================================================
``_item``          :class:`BatchItem`, :class:`BatchProgress`, an item's table row
``_checkpoint``    the checkpoint file: written 0600 a line at a time, read back
``_result``        :class:`BatchResult` (and :meth:`~BatchResult.load`), :class:`BatchStopped`
``_retry``         what a run's end means for retrying; :class:`RetryPolicy`
``_one``           :func:`run_one`: one prompt, wherever an executor runs it
``_elsewhere``     runs on threads or other processes, stopping them; :class:`RayExecutor`
``_decisions``     pauses, probes, retries and the budget (no I/O)
``_progress``      the progress line
``_driver``        :func:`run_batch` and its :class:`~._driver.Driver`
=================  ==============================================================
"""

from __future__ import annotations

from ._checkpoint import CheckpointError
from ._driver import run_batch
from ._elsewhere import RayExecutor, UnpicklableOptionError, picklable
from ._item import BatchItem, BatchProgress
from ._one import run_one
from ._result import BatchResult, BatchStopped
from ._retry import RetryPolicy

__all__ = [
    "BatchItem",
    "BatchProgress",
    "BatchResult",
    "BatchStopped",
    "CheckpointError",
    "RayExecutor",
    "RetryPolicy",
    "UnpicklableOptionError",
    "picklable",
    "run_batch",
    "run_one",
]
