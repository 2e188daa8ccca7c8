"""Markdown and HTML renderings of a probe run (Jinja2 templates in calibration/render/templates/):
the probe table and the effects figure, standalone or as a section of a calibration report
(then with the trust-map marks the run gave)."""

from __future__ import annotations

import base64
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

_ENV = Environment(
    loader=PackageLoader("calibration.render", "templates"),
    autoescape=select_autoescape(["html.j2"]),
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


def change_text(cell: dict[str, Any]) -> str:
    """'+0.62 [+0.31, +0.93]'; a cell whose changes are all equal says so, beside its
    bounded interval ('+1.00 [+0.23, +1.46] all 18 equal'), never a zero-width interval."""
    if cell.get("mean_change") is None:
        return "—"
    ci = cell.get("ci")
    text = f"{cell['mean_change']:+.2f}"
    text = f"{text} [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else text
    return f"{text} all {cell['n']} equal" if cell.get("degenerate") else text


def flips_text(cell: dict[str, Any]) -> str:
    if cell.get("flip_rate") is None:
        return "—"
    lo, hi = cell["flip_ci"]
    return f"{cell['flip_rate']:.2f} [{lo:.2f}, {hi:.2f}] ↑{cell['flips_up']} ↓{cell['flips_down']}"


def _p(value: float | None) -> str:
    return "—" if value is None else f"{value:.2g}"


def _counts(counts: dict[str, int]) -> str:
    return "; ".join(f"{reason}: {n}" for reason, n in counts.items()) or ""


_ENV.filters.update(change=change_text, flips=flips_text, p=_p, counts=_counts)


def _marks(trust: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [row for row in (trust or {}).get("rows", []) if row.get("probes")]


def to_markdown(report: dict[str, Any], trust: dict[str, Any] | None = None) -> str:
    return _ENV.get_template("probes.md.j2").render(report=report, marks=_marks(trust))


def to_html(
    report: dict[str, Any], standalone: bool = True, trust: dict[str, Any] | None = None
) -> str:
    """A self-contained page, or (standalone=False) a section inside a calibration report."""
    from calibration.render.probe_plots import effects  # matplotlib only when drawn

    figure = base64.b64encode(effects(report)).decode() if report["cells"] else None
    return _ENV.get_template("probes.html.j2").render(
        report=report, figure=figure, standalone=standalone, marks=_marks(trust)
    )
