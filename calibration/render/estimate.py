"""Markdown and self-contained HTML renderings of an estimate (Jinja2 templates in
calibration/render/templates/), with one figure per stratum: the judge-only, human-only and
judge-corrected (PPI) intervals of every judge side by side."""

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


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"


def interval_text(part: dict[str, Any] | None) -> str:
    """'3.120 [2.900, 3.340]', with '⚠ unreliable' after an interval the JSON marks so."""
    if not part or part.get("estimate") is None:
        return "—"
    ci = part.get("ci")
    text = _fmt(part["estimate"])
    if not ci:
        return text
    text = f"{text} [{_fmt(ci[0])}, {_fmt(ci[1])}]"
    if part.get("clipped_to_scale"):
        text = f"{text} (clipped to the scale)"
    return f"{text} ⚠ unreliable" if part.get("reliable") is False else text


def unreliable_notes(report: dict[str, Any]) -> list[str]:
    """One line per interval marked unreliable: where, which, and why."""
    notes = []
    for stratum, rows in sections(report):
        for judge, block in rows:
            for name, part in (("PPI", block), *_parts(block)):
                if part.get("reliable") is False:
                    notes.append(f"{judge}, {stratum}, {name}: unreliable: {part['unreliable']}")
    return notes


def _parts(block: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (name, block[key])
        for name, key in (("judge only", "judge_only"), ("humans only", "human_only"))
        if key in block
    ]


_ENV.filters.update(fmt=_fmt, interval=interval_text)


def sections(report: dict[str, Any]) -> list[tuple[str, list[tuple[str, dict[str, Any]]]]]:
    """[(stratum, [(judge, block)])], overall first."""
    judges = report["judges"]
    strata = sorted({s for data in judges.values() for s in data["strata"]})
    out = [("overall", [(j, data["overall"]) for j, data in judges.items()])]
    for stratum in strata:
        out.append(
            (
                stratum,
                [(j, d["strata"][stratum]) for j, d in judges.items() if stratum in d["strata"]],
            )
        )
    return out


def _context(report: dict[str, Any]) -> dict[str, Any]:
    return {
        "report": report,
        "notes": unreliable_notes(report),
        "sections": sections(report),
        "confidence": f"{100 * (1 - report['alpha']):g}%",
        "budgets": [
            (stratum, judge, block["budget"])
            for stratum, rows in sections(report)
            for judge, block in rows
            if "budget" in block
        ],
        "compares": [(j, d["compare"]) for j, d in report["judges"].items() if "compare" in d],
    }


def to_markdown(report: dict[str, Any]) -> str:
    return _ENV.get_template("estimate.md.j2").render(**_context(report))


def to_html(report: dict[str, Any], standalone: bool = True) -> str:
    """A self-contained page, or (standalone=False) a section to put inside another report."""
    from calibration.render.estimate_plots import three_intervals  # matplotlib only when drawn

    context = _context(report)
    figures = {
        stratum: base64.b64encode(three_intervals(stratum, rows, context["confidence"])).decode()
        for stratum, rows in context["sections"]
    }
    return _ENV.get_template("estimate.html.j2").render(
        **context, figures=figures, standalone=standalone
    )
