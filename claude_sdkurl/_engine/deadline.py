"""A point in time that a series of waits must not pass (after websockets' sync ``Deadline``).

Written once here so that "how long may this next wait be" is not computed by
hand at every site: ``Deadline(None)`` never passes, and :meth:`Deadline.left`
never goes below zero.
"""

from __future__ import annotations

import time


class Deadline:
    """``seconds`` from now (``None``: no deadline)."""

    __slots__ = ("at",)

    def __init__(self, seconds: float | None) -> None:
        self.at = None if seconds is None else time.monotonic() + seconds

    def left(self) -> float | None:
        """Seconds until the deadline (0 once passed), or ``None`` without one."""
        if self.at is None:
            return None
        return max(0.0, self.at - time.monotonic())

    def passed(self) -> bool:
        return self.at is not None and time.monotonic() >= self.at

    def bound(self, seconds: float | None) -> float | None:
        """The shorter of ``seconds`` and what is left (``None`` is "no bound")."""
        left = self.left()
        if left is None:
            return seconds
        return left if seconds is None else min(seconds, left)
