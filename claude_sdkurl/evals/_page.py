"""A scorecard as one HTML page: a plot of each cell's pass rate with its 95 % interval (inline
SVG, no script, nothing fetched), the table, and the failures. Every name and text from a run is
escaped: a task named ``<script>`` is shown, never run."""

from __future__ import annotations

from html import escape
from typing import Any

# The page reads a Scorecard and its Regressions by their fields, not their module (which
# imports this one to show itself): ``Scorecard`` and ``Regression`` here are those shapes.
Scorecard = Any
Regression = Any

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
ROW, WIDTH = 22, 420  # pixels: a row per cell; the 0..100 % axis
LABEL = 40  # characters of a cell's name shown beside the plot (the whole name is its dot's tooltip)


def _label(task: str, target: str) -> str:
    """``task · target`` in at most LABEL characters: the task's name is cut, the target's kept."""
    room = max(8, LABEL - len(target) - 3)
    return f"{task if len(task) <= room else task[: room - 1] + '…'} · {target}"


def plot(card: Scorecard) -> str:
    """Pass rates as dots on a 0..100 % axis, each with its Wilson interval as a line: an SVG."""
    cells = card.cells()
    colour = {t: COLOURS[i % len(COLOURS)] for i, t in enumerate(card.targets)}
    labels = [_label(c.task, c.target) for c in cells]
    LEFT = 16 + 7 * max((len(label) for label in labels), default=10)  # noqa: N806 - room for the longest name
    height = ROW * (len(cells) + 2)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + WIDTH + 90}" height="{height}" role="img" '
           f'aria-label="pass rate per task and target, with 95 % intervals" font-family="sans-serif" font-size="12">']  # fmt: skip
    for pct in (0, 25, 50, 75, 100):
        x = LEFT + WIDTH * pct / 100
        out.append(f'<line x1="{x}" y1="{ROW / 2}" x2="{x}" y2="{height - ROW}" stroke="#ddd"/>')
        out.append(f'<text x="{x}" y="{height - 6}" text-anchor="middle" fill="#666">{pct}%</text>')
    for i, c in enumerate(cells):
        y = ROW * (i + 1)
        lo, hi = c.interval
        out.append(f'<text x="{LEFT - 8}" y="{y + 4}" text-anchor="end">{escape(labels[i])}</text>')
        out.append(f'<line x1="{LEFT + WIDTH * lo:.1f}" y1="{y}" x2="{LEFT + WIDTH * hi:.1f}" y2="{y}" stroke="{colour[c.target]}" '
                   f'stroke-width="3" opacity="0.45"/>')  # fmt: skip
        out.append(f'<circle cx="{LEFT + WIDTH * c.rate:.1f}" cy="{y}" r="5" fill="{colour[c.target]}"><title>'
                   f'{escape(c.task)} on {escape(c.target)}: {c.passes}/{c.n}, 95 % interval {lo:.0%} to {hi:.0%}</title></circle>')  # fmt: skip
        out.append(f'<text x="{LEFT + WIDTH + 10}" y="{y + 4}" fill="#333">{c.passes}/{c.n}</text>')
    out.append("</svg>")
    return "\n".join(out)


def table(card: Scorecard, regressions: list[Regression] | None = None) -> str:
    """The scorecard's rows as an HTML table; a row with a regression is marked."""
    flagged = {(r.task, r.target) for r in regressions or []}
    head = "".join(f"<th>{escape(h)}</th>" for h in card.HEADERS)
    rows = []
    for row in card.rows():
        mark = ' class="regressed"' if (row[0], row[1]) in flagged else ""
        rows.append(f"<tr{mark}>" + "".join(f"<td>{escape(v)}</td>" for v in row) + "</tr>")
    return f'<table class="scorecard"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def page(card: Scorecard, title: str = "Evals", regressions: list[Regression] | None = None) -> str:
    """The whole page (see the module doc)."""
    passed = sum(a.passed for a in card.attempts)
    failures = [a for a in card.attempts if not a.passed]
    alike: dict[tuple[str, str, str], list[int]] = {}  # the same failure in several runs: one line
    for a in failures:
        alike.setdefault((a.task, a.target, a.error or "; ".join(a.failures)), []).append(a.run)
    listed = "".join(f"<li><b>{escape(task)}</b> on {escape(target)} (run{'s' if len(runs) > 1 else ''} {', '.join(map(str, runs))}): "
                     f"{escape(why)}</li>" for (task, target, why), runs in list(alike.items())[:200])  # fmt: skip
    gate = ""
    if regressions is not None:
        gate = ("<p class=ok>Gate: passed.</p>" if not regressions else
                f"<p class=bad>Gate: {'failed' if any(not r.undecided for r in regressions) else 'undecided'}.</p><ul>" + "".join(f"<li>{escape(str(r))}</li>" for r in regressions) + "</ul>")  # fmt: skip
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222 }}
table.scorecard {{ border-collapse: collapse; margin: 1em 0 }}
table.scorecard td, table.scorecard th {{ border-bottom: 1px solid #ddd; padding: 4px 10px; text-align: left }}
tr.regressed td {{ background: #fde2e2 }}
.ok {{ color: #2a7a2a }} .bad {{ color: #b00020; font-weight: bold }}
</style></head><body>
<h1>{escape(title)}</h1>
<p>{passed}/{len(card.attempts)} attempts passed · ${card.cost_usd:.4f}{f" · the judge ${card.judge_cost_usd:.4f}" if card.judge_cost_usd else ""}</p>
{gate}
{plot(card)}
{table(card, regressions)}
{"<h2>Failures</h2><ul>" + listed + "</ul>" if failures else ""}
</body></html>
"""
