"""Markdown and self-contained HTML renderings of a calibration report.

The JSON report holds the numbers; the per-item pairs needed for Bland–Altman plots and
confusion matrices come from the same grade rows, via `item_pairs`.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Iterable
from typing import Any

import numpy as np

from calibration.interchange import GradeRow
from calibration.metrics import reference_scores
from calibration.table import build_table

HEADLINE = (
    ("n", "n"),
    ("mad", "MAD"),
    ("signed_error", "signed error"),
    ("exact_match", "exact match"),
    ("kendall_tau", "Kendall τ-b"),
    ("spearman_rho", "Spearman ρ"),
    ("krippendorff_alpha", "α (humans + judge)"),
)


def item_pairs(rows: Iterable[GradeRow], reference: str) -> dict[str, dict[str, np.ndarray]]:
    """Per judge: item scores and references (Bland–Altman), and (judge, human) pairs."""
    table = build_table(rows)
    ref = reference_scores(table.human_scores, reference, table.humans)
    out = {}
    for j, judge in enumerate(table.judges):
        scores = table.judge_scores[:, j]
        ok = ~np.isnan(scores) & ~np.isnan(ref)
        pair_mask = ok[:, None] & ~np.isnan(table.human_scores)
        items, raters = np.nonzero(pair_mask)
        out[judge] = {
            "scores": scores[ok],
            "reference": ref[ok],
            "pairs": np.column_stack([scores[items], table.human_scores[items, raters]]),
        }
    return out


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, int) or float(value).is_integer() and abs(value) > 10:
        return f"{value:g}"
    return f"{value:.{digits}f}"


def _cell(block: dict[str, Any], metric: str) -> str:
    value = block.get(metric)
    if metric == "n":
        return str(value)
    ci = (block.get("ci") or {}).get(metric)
    text = _fmt(value)
    if ci:
        text += f" [{_fmt(ci[0])}, {_fmt(ci[1])}]"
    return text


def _rows(report: dict[str, Any], stratum: str | None) -> list[tuple[str, list[str]]]:
    out = []
    for judge, data in report["judges"].items():
        block = data["overall"] if stratum is None else data["strata"].get(stratum)
        if block is not None:
            out.append((judge, [_cell(block, m) for m, _ in HEADLINE]))
    return out


def _strata(report: dict[str, Any]) -> list[str]:
    return sorted({s for data in report["judges"].values() for s in data["strata"]})


def _inputs_lines(report: dict[str, Any]) -> list[str]:
    inputs = report.get("inputs") or {}
    lines = [f"{key}: {value}" for key, value in inputs.items() if value not in (None, [], {})]
    options = report.get("options", {})
    lines.append(
        f"bootstrap: {options.get('bootstrap')} resamples, seed {options.get('seed')}, "
        f"cluster {options.get('cluster') or 'items'}"
    )
    return lines


def to_markdown(report: dict[str, Any]) -> str:
    scale = report["scale"]
    humans = report["humans"]
    lines = [
        "# Calibration report",
        "",
        f"Scale {scale['min']:g}–{scale['max']:g} ({scale['level']}), reference = "
        f"{report['reference']} of human scores, {report['n_items']} items, "
        f"{humans['n_raters']} human raters, human α = {_fmt(humans['human_alpha'])}.",
        "",
        "Values with 95% bootstrap intervals. Signed error > 0 means the judge is lenient.",
        "",
    ]
    header = "| judge | " + " | ".join(label for _, label in HEADLINE) + " |"
    rule = "|" + "---|" * (len(HEADLINE) + 1)
    sections = [("Overall", None)] + [(s, s) for s in _strata(report)]
    for title, stratum in sections:
        lines += [f"## {title}", "", header, rule]
        lines += [
            f"| {judge} | " + " | ".join(cells) + " |" for judge, cells in _rows(report, stratum)
        ]
        lines.append("")
    undefined = [
        f"- {judge}: {metric} — {reason}"
        for judge, data in report["judges"].items()
        for metric, reason in data["overall"].get("undefined", {}).items()
    ]
    if undefined:
        lines += ["## Undefined values", "", *undefined, ""]
    lines += ["## Inputs", "", *[f"- {line}" for line in _inputs_lines(report)], ""]
    return "\n".join(lines)


def _img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode()
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def to_html(report: dict[str, Any], pairs: dict[str, dict[str, np.ndarray]] | None = None) -> str:
    """One self-contained file: tables plus embedded PNG plots."""
    from calibration import plots  # matplotlib: imported only when a report is drawn

    esc = html.escape
    scale = report["scale"]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>qadi calibration report</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:1200px}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;"
        "font-size:13px}th{background:#f4f4f4}img{margin:8px;border:1px solid #eee}</style>",
        "</head><body><h1>Calibration report</h1>",
        f"<p>Scale {scale['min']:g}–{scale['max']:g} ({esc(scale['level'])}), reference = "
        f"{esc(report['reference'])} of human scores, {report['n_items']} items, "
        f"{report['humans']['n_raters']} human raters, human α = "
        f"{_fmt(report['humans']['human_alpha'])}. 95% bootstrap intervals in brackets; "
        "signed error &gt; 0 means the judge is lenient.</p>",
    ]
    head = (
        "<tr><th>judge</th>" + "".join(f"<th>{esc(label)}</th>" for _, label in HEADLINE) + "</tr>"
    )
    for title, stratum in [("Overall", None)] + [(s, s) for s in _strata(report)]:
        body = "".join(
            f"<tr><td>{esc(judge)}</td>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>"
            for judge, cells in _rows(report, stratum)
        )
        parts.append(f"<h2>{esc(title)}</h2><table class='metrics'>{head}{body}</table>")
    parts.append("<h2>Plots</h2>")
    if report["judges"]:
        parts.append(_img(plots.metric_by_stratum(report, "mad", "MAD"), "MAD per judge"))
        parts.append(
            _img(plots.metric_by_stratum(report, "signed_error", "signed error"), "leniency")
        )
    for judge, data in (pairs or {}).items():
        parts.append(
            _img(
                plots.bland_altman(judge, data["scores"], data["reference"]),
                f"Bland-Altman {judge}",
            )
        )
        if scale["level"] == "ordinal" and len(data["pairs"]):
            levels = np.unique(data["pairs"])
            parts.append(_img(plots.confusion(judge, data["pairs"], levels), f"confusion {judge}"))
    parts.append("<h2>Inputs</h2><ul>")
    parts += [f"<li>{esc(line)}</li>" for line in _inputs_lines(report)]
    parts.append("</ul></body></html>")
    return "\n".join(parts)
