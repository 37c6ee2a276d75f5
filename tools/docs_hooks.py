"""MkDocs hook (mkdocs.yml ``hooks:``): our docstrings use Sphinx roles (``:class:`X```), which
Markdown renders as the role's name before a code span; drop the role, keep the code span."""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:class|func|meth|data|attr|mod|exc|obj):(?=<code>|<a )")


def on_page_content(html: str, **_: Any) -> str:
    return _ROLE.sub("", html)
