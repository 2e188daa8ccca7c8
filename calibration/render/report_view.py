"""What a calibration report shows, as strings: the view both templates print (Markdown and
HTML). Judges ranked as in the trust map, headline metrics fitting the scale, small-n cells
marked, inputs spelled out; the numbers themselves stay in the JSON."""

from __future__ import annotations

from typing import Any

from calibration.alt_test import MIN_ANNOTATORS
from calibration.formatting import drift_line, fmt, input_lines, spelled, with_interval
from calibration.report import NO_JUDGE
from calibration.trust import SMALL_N

ORDINAL_HEADLINE = (
    ("n", "n"),
    ("mad", "MAD"),
    ("signed_error", "signed error"),
    ("exact_match", "exact match"),
    ("within_one", "within ±1"),
    ("kendall_tau", "Kendall τ-b"),
    ("krippendorff_alpha", "α (humans + judge)"),
)
# A 0–100 scale: an exact match is all but impossible (always 0.000), so the headline is
# the error in points of the scale and the linear and rank correlations.
INTERVAL_HEADLINE = (
    ("n", "n"),
    ("mad", "MAD"),
    ("mad_pp", "MAD (% of scale)"),
    ("signed_error", "signed error"),
    ("pearson_r", "Pearson r"),
    ("spearman_rho", "Spearman ρ"),
    ("krippendorff_alpha", "α (humans + judge)"),
)

NOMINAL_HEADLINE = (
    ("n", "n"),
    ("exact_match", "exact match"),
    ("cohen_kappa", "Cohen κ (mean over humans)"),
    ("krippendorff_alpha", "α (humans + judge)"),
)
HEADLINES = {
    "nominal": NOMINAL_HEADLINE,
    "ordinal": ORDINAL_HEADLINE,
    "interval": INTERVAL_HEADLINE,
}
VERDICTS = {
    "replace": ("✓", "may replace the SMEs"),
    "not_replacement": ("✗", "not a replacement"),
    "insufficient": ("⚠", f"insufficient: fewer than {MIN_ANNOTATORS} annotators testable"),
}
ARROWS = {"lenient": "↑", "harsh": "↓", None: ""}
STAND_IN_NOTE = (
    "a stand-in judge: deterministic, no model behind it (judges/standins.py); its verdicts "
    "show the pipeline at work, not a model's quality"
)


def _cell(block: dict[str, Any], metric: str) -> str:
    """A value with its interval; n with † when too few items for the intervals to hold."""
    value = block.get(metric)
    if metric == "n":
        return f"{value} †" if value < SMALL_N else str(value)
    return with_interval(value, (block.get("ci") or {}).get(metric))


def _stand_in(report: dict[str, Any], judge: str) -> bool:
    return bool(report["judges"].get(judge, {}).get("stand_in"))


def ranked_judges(report: dict[str, Any]) -> list[str]:
    """Judges in the trust map's overall order (best first), as the docs promise."""
    order = {r["judge"]: r["rank"] for r in report["trust"]["rows"] if r["stratum"] == "overall"}
    return sorted(report["judges"], key=lambda j: (order.get(j, len(order) + 1), j))


def _trust_cell(row: dict[str, Any]) -> dict[str, str]:
    mark, meaning = VERDICTS[row["verdict"]]
    if row.get("missing"):  # insufficient: say what is missing, not ω and ρ that are not there
        text = f"{mark} {row['missing']}" + (f" {ARROWS[row['bias']]}" if row["bias"] else "")
        return {"verdict": row["verdict"], "text": text, "title": meaning}
    text = f"{mark} ω {fmt(row['winning_rate'], 2)} ρ {fmt(row['advantage_probability'], 2)}"
    text += f" {ARROWS[row['bias']]}" if row["bias"] else ""
    text += " †" if row["small_n"] else ""
    title = f"{meaning}: {row['reason']}" if row.get("reason") else meaning
    return {"verdict": row["verdict"], "text": text, "title": title}


def _reasons(trust: dict[str, Any]) -> list[str]:
    """'stratum · judge: why not replace', for every cell with a reason (older reports: none)."""
    rows = [r for r in trust["rows"] if r.get("reason")]
    return [f"{r['stratum']} · {r['judge']}: {r['reason']}" for r in rows]


def _ranked(row: dict[str, Any]) -> str:
    rho = fmt(row["advantage_probability"], 2)
    return f"{row['rank']}. {row['judge']} ({row['verdict']}, ρ {rho})"


def _trust(report: dict[str, Any]) -> dict[str, Any]:
    trust = report["trust"]
    strata = list(trust["best"])
    cells = {(r["judge"], r["stratum"]): _trust_cell(r) for r in trust["rows"]}
    empty = {"verdict": "none", "text": "—", "title": "no data"}
    grid = [
        {
            "judge": judge,
            "stand_in": _stand_in(report, judge),
            "cells": [cells.get((judge, s), empty) for s in strata],
        }
        for judge in ranked_judges(report)
    ]
    ranking = [
        {
            "stratum": stratum,
            "best": trust["best"][stratum] or NO_JUDGE,
            "order": [_ranked(r) for r in trust["rows"] if r["stratum"] == stratum],
        }
        for stratum in strata
    ]
    return {
        "epsilon": trust["epsilon"],
        "q": trust["q"],
        "procedures": trust.get("procedures") or {},
        "reasons": _reasons(trust),
        "strata": strata,
        "grid": grid,
        "ranking": ranking,
        "small_n": SMALL_N,
        "verdicts": VERDICTS,
    }


def _sections(report: dict[str, Any], headline) -> list[dict[str, Any]]:
    strata = sorted({s for data in report["judges"].values() for s in data["strata"]})
    sections = []
    for title, stratum in [("Overall", None)] + [(s, s) for s in strata]:
        rows = []
        for judge in ranked_judges(report):
            data = report["judges"][judge]
            block = data["overall"] if stratum is None else data["strata"].get(stratum)
            if block is not None:
                rows.append(
                    {
                        "judge": judge,
                        "stand_in": _stand_in(report, judge),
                        "small": block["n"] < SMALL_N,
                        "cells": [_cell(block, m) for m, _ in headline],
                    }
                )
        sections.append({"title": title, "rows": rows})
    return sections


def _annotators(report: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for judge in ranked_judges(report):
        result = report["judges"][judge]["alt_test"]["overall"]
        out.append(
            {
                "judge": judge,
                "stand_in": _stand_in(report, judge),
                "scoring": result["scoring"],
                "tests": [
                    [
                        t["annotator"],
                        str(t["n"]),
                        fmt(t["p_value"], 4),
                        "yes" if t["rejected"] else "no",
                        fmt(t["advantage"], 3),
                        fmt(t.get("p_verdict"), 4),
                    ]
                    for t in result["annotators"]
                ],
                "skipped": [f"{s['annotator']}: {s['reason']}" for s in result["skipped"]],
            }
        )
    return out


def _criteria(report: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for judge, data in report["judges"].items():
        rows = [
            [
                name,
                str(c["n"]),
                fmt(c["judge_met_rate"]),
                fmt(c["human_met_rate"]),
                _cell(c, "agreement"),
                _cell(c, "cohen_kappa"),
                f"ω {fmt(c['alt_test']['winning_rate'], 2)} "
                f"ρ {fmt(c['alt_test']['advantage_probability'], 2)}",
                fmt(c["points_at_stake"], 2),
            ]
            for name, c in sorted(
                data.get("criteria", {}).items(),
                key=lambda kv: -(kv[1]["points_at_stake"] or 0),
            )
        ]
        if rows:
            out.append({"judge": judge, "rows": rows})
    return out


def _heading(report: dict[str, Any]) -> str:
    """What the report covers: nightly or not, rubric versions, window or source file."""
    inputs = report.get("inputs") or {}
    parts = ["nightly" if "drift" in report else "ad hoc"]
    parts += inputs.get("rubric_versions") or []
    window = inputs.get("window") or {}
    if window.get("until"):
        parts.append(spelled({"since": window.get("since"), "until": window["until"]}))
    elif inputs.get("source") not in (None, "database"):
        parts.append(str(inputs["source"]).rsplit("/", 1)[-1])
    return " · ".join(parts)


def _drift(report: dict[str, Any]) -> dict[str, Any] | None:
    """Overall changes in full; changes within strata counted, listed in a closed block, so
    the banner never pushes the trust map off the first screen."""
    found = report.get("drift")
    if found is None:
        return None
    changes = found["changes"]
    tested = found.get("tested")
    return {
        "previous": found["previous_report"],
        "any": bool(changes),
        "rule": (
            f"Welch's test per judge × stratum × metric (Fisher's exact test where both "
            f"reports' units were all equal, untested below 5 units), Benjamini–Hochberg over "
            f"{tested} cells, q ≤ {found.get('q')}"
            if tested is not None
            else "the value left the previous 95% interval"  # a report stored before the test
        ),
        "overall": [drift_line(c) for c in changes if c.get("stratum", "overall") == "overall"],
        "strata": [drift_line(c) for c in changes if c.get("stratum", "overall") != "overall"],
    }


def _trend_table(report: dict[str, Any]) -> list[list[str]]:
    """Rows of (date, judge, MAD [CI], signed error [CI]) for the Markdown trend."""
    return [
        [
            point["at"][:10],
            judge,
            with_interval(block.get("mad"), block.get("mad_ci")),
            with_interval(block.get("signed_error"), block.get("signed_error_ci")),
        ]
        for point in report.get("history") or []
        for judge in ranked_judges(report)
        if (block := point["judges"].get(judge)) is not None
    ]


def selective_view(section: dict[str, Any] | None) -> dict[str, Any] | None:
    """Trust at request time: per judge or cascade and stratum, the threshold chosen, on how
    many items, the coverage it buys and the agreement it certifies."""
    if not section:
        return None
    rows = []
    for row in section["rows"]:
        result = row["result"]
        threshold = result["threshold"]
        notes = [m["note"] for m in result.get("monotonicity", {}).values() if m.get("note")]
        rows.append(
            [
                row["evaluator"],
                row["stratum"],
                str(result["n_calibration"]),
                "abstain" if threshold is None else f"{threshold:.3f}",
                fmt(result["coverage"]),
                fmt(result["agreement"]),
                "—" if threshold is None else f"≥ {1 - section['alpha']:g}",
                "; ".join(filter(None, [result.get("reason"), *notes, _unbound(section, row)])),
            ]
        )
    return {
        "title": (
            f"Trust at request time: α = {section['alpha']}, δ = {section['delta']}, "
            f"{section['confidence']} confidence"
        ),
        "method": section["method"],
        "agreement": section["agreement_text"],
        "assumptions": section["assumptions"],
        "notes": section.get("notes") or [],
        "rows": rows,
        "separation": [_separation_row(row) for row in section.get("separation") or []],
    }


def _separation_row(row: dict[str, Any]) -> list[str]:
    """judge, source, items (agreed), AUROC [interval], ECE (a calibrated judge's), the
    reliability bins as "mean confidence → share agreeing (n)", note."""
    interval = row.get("auroc_interval")
    auroc = fmt(row.get("auroc"))
    if interval:
        auroc += f" [{interval[0]:.2f}, {interval[1]:.2f}]"
    ece = fmt(row.get("ece"))
    if row.get("ece_calibrated_reference") is not None:
        ece += f" (calibrated: {row['ece_calibrated_reference']:.3f})"
    bins = "; ".join(
        f"{b['mean_confidence']:.2f} → {b['agreement']:.2f} ({b['n']})" for b in row["bins"]
    )
    return [row["evaluator"], row["source"], f"{row['n']} ({row['n_agree']} agreed)", auroc,
            ece, bins or "—", row.get("note") or ""]  # fmt: skip


def _unbound(section: dict[str, Any], row: dict[str, Any]) -> str | None:
    if section.get("bound") and not row.get("binding"):
        return "not applied at request time: its items were graded by several versions"
    return None


def view(report: dict[str, Any]) -> dict[str, Any]:
    """Everything the templates print, as strings; the numbers stay in the JSON."""
    scale = report["scale"]
    headline = HEADLINES[scale["level"]]
    options = report.get("options", {})
    if scale["level"] == "nominal":
        described = f"Labels {', '.join(scale.get('labels') or [])} (nominal)"
    else:
        described = f"Scale {scale['min']:g}–{scale['max']:g} ({scale['level']})"
    return {
        "heading": _heading(report),
        "confidence": f"{100 * float(options.get('confidence') or 0.95):g}%",
        "design": (report.get("design") or {}).get("warnings") or [],
        "drift": _drift(report),
        "history": len(report.get("history") or []),
        "trend_table": _trend_table(report),
        "trust": _trust(report),
        "selective": selective_view(report.get("selective")),
        "stand_ins": [j for j in ranked_judges(report) if _stand_in(report, j)],
        "stand_in_note": STAND_IN_NOTE,
        "scale": described,
        "reference": report["reference"],
        "n_items": report["n_items"],
        "n_raters": report["humans"]["n_raters"],
        "human_alpha": fmt(report["humans"]["human_alpha"]),
        "headline": [label for _, label in headline],
        "sections": _sections(report, headline),
        "annotators": _annotators(report),
        "criteria": _criteria(report),
        "undefined": [
            f"{judge}: {metric} — {why}"
            for judge, data in report["judges"].items()
            for metric, why in data["overall"].get("undefined", {}).items()
        ],
        "inputs": input_lines(report.get("inputs") or {})
        + [
            f"bootstrap: {options.get('bootstrap')} resamples, seed {options.get('seed')}, "
            f"cluster {options.get('cluster') or 'items'}"
        ],
    }
