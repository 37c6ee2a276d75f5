"""MkDocs hook (mkdocs.yml ``hooks:``): our docstrings use Sphinx roles (``:class:`X```), which
Markdown renders as the role's name before a code span. Each becomes a cross-reference that
mkdocs-autorefs resolves once every page is built: a link to the object's entry where the API
reference has one, its name in code where it has none (a private helper). ``~`` shows the last
part of the name, as in Sphinx; a name relative to the docstring's module (``.x``, a bare name) is
shown without a link: the page does not say which module it came from.
"""

from __future__ import annotations

import html
import re
from typing import Any

_ROLE = re.compile(r":(?:class|func|meth|data|attr|mod|exc|obj):<code>([^<]*)</code>")
_ROLE_LEFT = re.compile(r":(?:class|func|meth|data|attr|mod|exc|obj):(?=<code>|<a )")


def _home(name: str) -> str | None:
    """``claude_sdkurl.X.rest`` spelled from X's home module (``claude_sdkurl.client.ClaudeClient``),
    where the reference may have documented it."""
    import claude_sdkurl

    parts = name.split(".")
    if len(parts) < 2 or parts[0] != "claude_sdkurl":
        return None
    home = getattr(claude_sdkurl, "_HOME", {}).get(parts[1])
    if home is None:
        return None
    return ".".join(["claude_sdkurl", *home.strip(".").split("."), *parts[1:]])


def _reference(match: re.Match[str]) -> str:
    target = html.unescape(match.group(1)).strip()
    short = target.startswith("~")
    target = target.lstrip("~")
    shown = target.rsplit(".", 1)[-1] if short else target.lstrip(".")
    code = f"<code>{html.escape(shown)}</code>"
    if not target.startswith("claude_sdkurl"):
        return code  # relative or bare: no module to resolve it against here
    slug = _home(target)
    extra = f' slug="{html.escape(slug)}"' if slug and slug != target else ""
    return f'<autoref identifier="{html.escape(target)}"{extra} optional>{code}</autoref>'


def on_page_content(html_text: str, **_: Any) -> str:
    return _ROLE_LEFT.sub("", _ROLE.sub(_reference, html_text))
