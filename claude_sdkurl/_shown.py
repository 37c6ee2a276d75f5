"""How the types show themselves in Jupyter, without ``types`` importing ``display``.

A message's ``_repr_markdown_`` (and ``_ipython_display_``) ask :func:`render` here. What renders
is :mod:`claude_sdkurl.display`, above ``types``: it registers its functions when it loads
(:func:`register`), and the package's ``__init__`` (which runs before ``types`` can be imported)
tells this module how to load it (:data:`loader`), so the first object shown loads it. Ground
floor: it imports nothing of ours.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_renderers: dict[str, Callable[[Any], Any]] = {}
loader: Callable[[], object] | None = None  # loads the module that registers (set by the package's __init__)


def register(**renderers: Callable[[Any], Any]) -> None:
    """``message=``, ``block=`` (each object -> Markdown) and ``show=`` (what ``display(obj)`` does)."""
    _renderers.update(renderers)


def render(kind: str, obj: Any) -> Any:
    """``kind``'s renderer applied to ``obj`` (the renderers loaded first if need be)."""
    if kind not in _renderers and loader is not None:
        loader()
    return _renderers[kind](obj)
