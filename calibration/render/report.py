"""Markdown and self-contained HTML renderings of a calibration report (Jinja2 templates in
`calibration/render/templates/`), opening with the trust map.

The JSON report holds the numbers; `report_view.view` turns them into the strings both
templates show; the per-item pairs needed for Bland–Altman plots and confusion matrices come
from the same grade rows, via `item_pairs`.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

import numpy as np
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from calibration.formats.interchange import Row
from calibration.metrics import reference_scores
from calibration.render.report_view import ranked_judges, view
from calibration.table import build_table

_ENV = Environment(
    loader=PackageLoader("calibration.render", "templates"),
    autoescape=select_autoescape(["html"]),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def item_pairs(rows: Iterable[Row], reference: str) -> dict[str, dict[str, np.ndarray]]:
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


def to_markdown(report: dict[str, Any]) -> str:
    return _ENV.get_template("report.md.j2").render(**view(report))


def _img(png: bytes, alt: str) -> dict[str, str]:
    return {"alt": alt, "src": "data:image/png;base64," + base64.b64encode(png).decode()}


def _plots(report: dict[str, Any], pairs) -> list[dict[str, str]]:
    from calibration.render import plots  # matplotlib: imported only when a report is drawn

    judges = ranked_judges(report)
    images = []
    if judges and report["scale"]["level"] != "nominal":
        for metric, label in (("mad", "MAD"), ("signed_error", "signed error")):
            png = plots.metric_by_stratum(report, judges, metric, label)
            images.append(_img(png, f"{label} per judge and stratum"))
    for judge in judges:
        data = (pairs or {}).get(judge)
        if data is None:
            continue
        images.append(
            _img(
                plots.bland_altman(judge, data["scores"], data["reference"]),
                f"Bland-Altman {judge}",
            )
        )
        if report["scale"]["level"] == "ordinal" and len(data["pairs"]):
            levels = np.unique(data["pairs"])
            images.append(_img(plots.confusion(judge, data["pairs"], levels), f"confusion {judge}"))
    for row in (report.get("selective") or {}).get("separation") or []:
        if row["bins"]:
            png = plots.reliability(row["evaluator"], row["source"], row["bins"])
            images.append(_img(png, f"reliability diagram {row['evaluator']}"))
    return images


def _trend(report: dict[str, Any]) -> dict[str, str] | None:
    """MAD and signed error per judge over the stored nightly reports, with CI bands."""
    history = report.get("history") or []
    if len(history) < 2 or report["scale"]["level"] == "nominal":
        return None
    from calibration.render import plots

    return _img(plots.trend(history, ranked_judges(report)), "trend per judge")


def to_html(report: dict[str, Any], pairs: dict[str, dict[str, np.ndarray]] | None = None) -> str:
    """One self-contained file: the trust map, tables, embedded PNG plots."""
    return _ENV.get_template("report.html.j2").render(
        **view(report), plots=_plots(report, pairs), trend=_trend(report)
    )
