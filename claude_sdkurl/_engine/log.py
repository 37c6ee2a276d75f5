"""Loggers for the modules a one-shot query loads before its CLI starts.

Importing :mod:`logging` costs about 5 ms, and those modules seldom log, so theirs is
loaded at the first message they log (by then, or soon after, the session's own modules
have loaded it anyway). A logger here stands for ``logging.getLogger(name)`` in every way
that matters to the caller and to whoever configures logging: records go to the real
logger of the same name. A debug message while :mod:`logging` is not loaded at all is dropped
without loading it: nobody has configured logging then, and the record would go nowhere (the
last-resort handler shows warnings and up).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from logging import Logger


class _Deferred:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attr: str) -> Any:
        if attr == "debug" and "logging" not in sys.modules:
            return _dropped
        import logging

        return getattr(logging.getLogger(self.name), attr)

    def __repr__(self) -> str:
        return f"<logger {self.name} (logging loaded at first use)>"


def _dropped(*args: Any, **kwargs: Any) -> None:
    return None


def get_logger(name: str) -> Logger:
    """``logging.getLogger(name)``, with :mod:`logging` imported when a method is first used."""
    return cast("Logger", _Deferred(name))
