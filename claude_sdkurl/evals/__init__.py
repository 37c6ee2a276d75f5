"""Evals: does a change to an agent program still do the job, cost the same, and never do what it
must not? Offline, in CI, on the real CLI.

A :class:`Task` is a prompt, a workspace folder copied fresh for each attempt, and checks; a
:class:`Target` is options, or a *program*: a function that runs the agent the way your code does
(its ``can_use_tool``, hooks and in-process tools included). :func:`run_eval` runs every task on
every target ``runs`` times, on threads, and returns a :class:`Scorecard`: per task and target, the
pass rate with its Wilson interval, cost, turns and time. :func:`gate` compares a scorecard with a
baseline and names what got worse beyond the noise.

Checks cost no tokens: they read the attempt's messages, its workspace, and what the session's
wire carried (each ``can_use_tool`` decision and hook call, whoever made them), see
:mod:`claude_sdkurl.evals.checks`.
"""

from __future__ import annotations

from . import checks
from ._attempt import Attempt
from ._run import FAULTS, Target, Task, run_eval, variants
from ._scorecard import (Cell, Regression, Scorecard, assert_gate, detectable, gate, looks_from, max_runs_for, power, runs_needed,
                         wilson)

__all__ = ["FAULTS", "Attempt", "Cell", "Regression", "Scorecard", "Target", "Task", "assert_gate", "checks", "detectable", "gate", "looks_from",
           "max_runs_for", "power", "run_eval", "runs_needed", "variants", "wilson"]
