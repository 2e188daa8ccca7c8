"""Issue 16 items 1, 2 and 4 at the library level: drift per stratum, history, what a report
prints (ranked judges, scale-fit metrics, small-n marker, rounded inputs, small multiples),
and what a calibration refuses (scores outside the scale, unknown strata)."""

from __future__ import annotations

import math
import re
import struct
import warnings

import pytest
from scipy import stats

from calibration.calibrate import CalibrationOptions, calibrate
from calibration.checks import CalibrationInputError
from calibration.drift import drift
from calibration.formats.interchange import GradeRow
from calibration.history import history_point, series
from calibration.render.report import to_html, to_markdown
from tests.perf.bench_calibration import synthetic_rows


def grade(item, rater, kind, score, **attrs) -> GradeRow:
    return GradeRow(item_id=item, rater=rater, rater_kind=kind, score=score, attributes=attrs)


def two_judges(items: int = 60) -> list[GradeRow]:
    """3 humans agree on (i % 5) + 1; 'a-off' is 2 points away everywhere, 'z-exact' agrees:
    the better judge sorts last by name, so only a ranking puts it first."""
    rows = []
    for i in range(items):
        truth = float(i % 5 + 1)
        side = "north" if i < items - 5 else "south"  # 'south' has 5 items: small n
        rows += [grade(f"i{i}", f"sme{h}", "human", truth, region=side) for h in range(3)]
        rows.append(grade(f"i{i}", "z-exact", "judge", truth, region=side))
        rows.append(grade(f"i{i}", "a-off", "judge", 5.0 if truth <= 2 else 1.0, region=side))
    return rows


def png_width(src: str) -> int:
    """Width from the PNG header (IHDR, big-endian at byte 16), read without matplotlib."""
    import base64

    data = base64.b64decode(src.removeprefix("data:image/png;base64,"))
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">I", data[16:20])[0]


def test_judges_are_ranked_and_small_strata_flagged():
    options = CalibrationOptions(scale_min=1, scale_max=5, bootstrap=50, by=["region"])
    report = calibrate(two_judges(), options, {"source": "/tmp/x/grades.csv"})
    markdown = to_markdown(report)
    overall = markdown.split("## Overall")[1].split("## region")[0]
    assert overall.index("z-exact") < overall.index("a-off")  # ranked, not alphabetical
    trust = markdown.split("## Trust map")[1].split("### Ranking")[0]
    assert trust.index("z-exact") < trust.index("a-off")
    south = markdown.split("## region=south")[1].split("##")[0]
    assert "| 5 † |" in south  # 5 items < 50: flagged
    assert "| 55 |" in markdown.split("## region=north")[1].split("##")[0]
    assert "ad hoc · grades.csv" in markdown.splitlines()[2]


def test_headline_metrics_fit_the_scale():
    ordinal = calibrate(two_judges(), CalibrationOptions(scale_min=1, scale_max=5, bootstrap=0))
    text = to_markdown(ordinal)
    assert "exact match" in text and "within ±1" in text and "MAD (% of scale)" not in text
    rows = [grade(r.item_id, r.rater, r.rater_kind, r.score * 20) for r in two_judges()]
    interval = calibrate(rows, CalibrationOptions(scale_min=0, scale_max=100, bootstrap=0))
    text = to_markdown(interval)
    assert "exact match" not in text and "within ±1" not in text
    assert "MAD (% of scale)" in text and "Pearson r" in text


def test_inputs_are_spelled_out_and_rounded():
    inputs = {
        "source": "database",
        "rubric_versions": ["kinayat-explanation@1"],
        "judge_models": [
            {
                "judge": "gpt",
                "model": "openai/gpt-4o",
                "template": "t",
                "template_hash": "sha256:ab",
            }
        ],
        "window": {"since": "2026-11-01T00:00:00.123456", "until": "2026-11-02T00:00:00.5"},
        "failed_judgments_excluded": {"parse_error": 2},
        "weight": 6.388437500000002,
    }
    options = CalibrationOptions(scale_min=1, scale_max=5, bootstrap=20)
    markdown = to_markdown(calibrate(two_judges(), options, inputs))
    section = markdown.split("## Inputs")[1]
    assert "{" not in section and "[" not in section  # no Python reprs
    assert "judge models: gpt = openai/gpt-4o (template t, sha256:ab)" in section
    assert "window: 2026-11-01 00:00 → 2026-11-02 00:00" in section
    assert "failed judgments excluded: parse_error 2" in section
    assert "weight: 6.388" in section
    assert not re.search(r"\d\.\d{5,}", markdown)  # every float rounded
    assert "kinayat-explanation@1 · 2026-11-01 00:00 → 2026-11-02 00:00" in markdown


def test_plots_are_small_multiples_that_fit_the_page():
    """6 judges × (overall + 4 dialects + 2 categories) used to draw one 2,135 px figure with
    a colour per stratum; now one panel per judge, three to a row, at most 1,200 px wide."""
    options = CalibrationOptions(scale_min=1, scale_max=5, bootstrap=50, by=["dialect", "category"])
    html = to_html(calibrate(synthetic_rows(200), options))
    sources = re.findall(r'alt="([^"]+)" src="(data:image/png;base64,[^"]+)"', html)
    widths = {alt: png_width(src) for alt, src in sources}
    assert "MAD per judge and stratum" in widths
    assert max(widths.values()) <= 1200, widths
    assert "img{max-width:100%" in html


def test_scores_outside_the_declared_scale_are_refused_by_row():
    rows = two_judges(10) + [grade("i3", "z-exact", "judge", 80.0), grade("x", "sme0", "human", 90)]
    with pytest.raises(CalibrationInputError) as refused:
        calibrate(rows, CalibrationOptions(scale_min=1, scale_max=5, bootstrap=0))
    assert refused.value.field == "score"
    assert refused.value.problems == [
        "item i3 rater z-exact score 80 is outside 1–5",
        "item x rater sme0 score 90 is outside 1–5",
    ]


def test_unknown_strata_attribute_is_refused():
    options = CalibrationOptions(scale_min=1, scale_max=5, bootstrap=0, by=["region", "dialekt"])
    with pytest.raises(
        CalibrationInputError, match="unknown attribute 'dialekt'; the grades carry region"
    ):
        calibrate(two_judges(10), options)


def block(n, mad, mad_ci, signed, signed_ci, se=None):
    """A stored metric block; `se` (mad, signed) and units as a report writes them today,
    none as a report stored before the two-sample drift test."""
    out = {"n": n, "mad": mad, "signed_error": signed,
           "ci": {"mad": mad_ci, "signed_error": signed_ci}}  # fmt: skip
    if se is not None:
        out |= {"se": {"mad": se[0], "signed_error": se[1]}, "units": n}
    return out


def welch(diff, se1, n1, se2, n2):
    """Two-sided Welch p, written out here from the textbook formula."""
    var = se1**2 + se2**2
    df = var**2 / (se1**4 / (n1 - 1) + se2**4 / (n2 - 1))
    return 2 * stats.t.sf(abs(diff) / math.sqrt(var), df)


def test_drift_is_welch_per_cell_with_benjamini_hochberg_over_the_night():
    # the previous report is an old one (no se): its SE is its interval's half-width / 1.96
    before = {
        "judges": {
            "j": {
                "overall": block(100, 0.5, [0.4, 0.6], 0.0, [-0.1, 0.1]),
                "strata": {"d=a": block(60, 0.5, [0.3, 0.7], 0.0, [-0.2, 0.2])},
            }
        }
    }
    after = {"judges": {"j": {"overall": block(100, 0.55, [0.45, 0.65], 0.3, [0.2, 0.4],
                                               se=(0.05, 0.05)),
                             "strata": {"d=a": block(60, 0.9, [0.8, 1.0], 0.1, [0.0, 0.2],
                                                     se=(0.05, 0.05))}}}}  # fmt: skip
    found = drift(after, before)
    z = stats.norm.ppf(0.975)
    old_overall, old_stratum = 0.1 / z, 0.2 / z
    p = {
        ("overall", "mad"): welch(0.05, 0.05, 100, old_overall, 100),
        ("overall", "signed_error"): welch(0.3, 0.05, 100, old_overall, 100),
        ("d=a", "mad"): welch(0.4, 0.05, 60, old_stratum, 60),
        ("d=a", "signed_error"): welch(0.1, 0.05, 60, old_stratum, 60),
    }
    got = {(c["stratum"], c["metric"]): c for c in found["cells"]}
    assert {k: c["p_value"] for k, c in got.items()} == pytest.approx(p)
    # BH by hand: sort the four p-values, q_(k) = min over j >= k of 4 p_(j) / j
    ordered = sorted(p, key=p.get)
    q, running = {}, 1.0
    for rank in range(4, 0, -1):
        key = ordered[rank - 1]
        running = min(running, 4 * p[key] / rank)
        q[key] = running
    assert {k: c["q_value"] for k, c in got.items()} == pytest.approx(q)
    # overall signed error (+0.3, z ≈ 4.2) and the stratum's MAD (+0.4, z ≈ 3.8) drift;
    # the MAD +0.05 overall and the stratum's signed error +0.1 (z ≈ 0.95) do not
    assert [(c["stratum"], c["metric"]) for c in found["changes"]] == [
        ("overall", "signed_error"),
        ("d=a", "mad"),
    ]
    assert found["tested"] == 4 and found["procedure"] == "bh" and found["q"] == 0.05
    change = found["changes"][1]
    assert change["previous_se_source"] == "interval" and change["se"] == 0.05
    assert (change["value"], change["ci"], change["previous"], change["previous_ci"]) == (
        0.9,
        [0.8, 1.0],
        0.5,
        [0.3, 0.7],
    )


def test_the_same_night_twice_is_not_drift_and_nothing_to_compare_is_not_drift():
    report = {"judges": {"j": {"overall": block(40, 0.5, [0.4, 0.6], 0.1, [0.0, 0.2],
                                                se=(0.05, 0.05))}}}  # fmt: skip
    same = drift(report, report)
    assert same["tested"] == 2 and same["changes"] == []
    assert all(c["p_value"] == 1.0 for c in same["cells"])
    assert drift(report, None) == drift(report, None) | {"tested": 0, "cells": [], "changes": []}


def test_history_points_and_series():
    report = {"judges": {"j": {"overall": block(40, 0.5, [0.4, 0.6], -0.1, None)}}}
    point = history_point(report, "2026-11-02T00:00:00", "r1")
    assert point == {
        "report": "r1",
        "at": "2026-11-02T00:00:00",
        "judges": {"j": {"n": 40, "mad": 0.5, "mad_ci": [0.4, 0.6], "signed_error": -0.1,
                         "signed_error_ci": None}},
    }  # fmt: skip
    later = history_point(
        {"judges": {"k": {"overall": block(5, 1.0, [0.5, 1.5], 0, [0, 0])}}}, "2026-11-03", None
    )
    assert series([point, later], "j", "signed_error") == {
        "at": ["2026-11-02T00:00:00"], "value": [-0.1], "low": [-0.1], "high": [-0.1]
    }  # fmt: skip


def test_the_reports_print_their_confidence_level_not_95():
    options = CalibrationOptions(scale_min=1, scale_max=5, bootstrap=50, confidence=0.9)
    report = calibrate(two_judges(), options)
    markdown, html = to_markdown(report), to_html(report)
    assert "Values with 90% intervals" in markdown and "95%" not in markdown
    assert "90% intervals in brackets" in html and "95%" not in html


def test_queued_labels_weight_the_means_and_the_reports_warn_about_the_rest():
    """60 judged items in two strata of 30; the humans labelled 20 of stratum a and 5 of b,
    each with the stratum's labelled share as inclusion_prob: the report's signed error is
    the stratified mean (½ the mean gap in a + ½ in b), the correlations are not weighted,
    and every rendering says so."""
    rows = []
    for i in range(60):
        stratum, truth = ("a", 2.0 + i % 2) if i < 30 else ("b", 4.0 - i % 2)
        judged = truth + (1.0 if stratum == "a" else 0.0)  # +1 in a, exact in b
        labelled = i < 20 or 30 <= i < 35
        share = 20 / 30 if stratum == "a" else 5 / 30
        rows.append(grade(f"i{i}", "J", "judge", judged, s=stratum,
                          inclusion_stratum=f"s={stratum}"))  # fmt: skip
        if labelled:
            rows.append(
                GradeRow(
                    item_id=f"i{i}",
                    rater="sme",
                    rater_kind="human",
                    score=truth,
                    inclusion_prob=share,
                    attributes={"s": stratum, "inclusion_stratum": f"s={stratum}"},
                )
            )
    report = calibrate(rows, CalibrationOptions(scale_min=1, scale_max=5, bootstrap=50))
    block = report["judges"]["J"]["overall"]
    assert block["signed_error"] == pytest.approx(0.5 * 1.0 + 0.5 * 0.0)  # unweighted: 0.8
    assert block["ci_method"]["signed_error"] == "t_hajek"
    assert block["ci_method"]["kendall_tau"] == "jackknife_z"
    assert "signed_error" in report["design"]["weighted_metrics"]
    assert "describe the labelled items" in report["design"]["unweighted"]
    assert "Labelling design" in to_markdown(report)
    assert 'id="design"' in to_html(report)


def test_the_alt_test_table_columns_match_their_headers():
    options = CalibrationOptions(scale_min=1, scale_max=5, bootstrap=50, alt_min_items=20)
    report = calibrate(two_judges(), options)
    markdown = to_markdown(report)
    table = markdown.split("### z-exact")[1].split("###")[0]
    header, _, first = [line for line in table.splitlines() if line.startswith("|")][:3]
    cells = dict(zip(header.split("|"), first.split("|"), strict=True))
    test = report["judges"]["z-exact"]["alt_test"]["overall"]["annotators"][0]
    assert float(cells[" advantage "]) == pytest.approx(test["advantage"], abs=5e-4)


def test_the_label_multiplier_travels_from_the_estimate_to_the_history_and_the_dashboard():
    """Each SME label worth effective_n / n_labelled labels (30 / 10 = 3 for j); a judge
    without an effective n (no unlabelled items) has none, never a made-up 1."""
    from service.recalibration.runner import dashboard_summary

    estimate = {"judges": {
        "j": {"overall": {"effective_n": 30.0, "n_labelled": 10},
              "strata": {"candidate_model=m": {"estimate": 3.1, "ci": [2.9, 3.3],
                                               "n_labelled": 4, "effective_n": 6.0}}},
        "k": {"overall": {"effective_n": None, "n_labelled": 10}, "strata": {}},
    }}  # fmt: skip
    report = {
        "judges": {name: {"overall": block(40, 0.5, [0.4, 0.6], -0.1, None)} for name in "jk"},
        "estimate": estimate,
        "trust": {"rows": [{"stratum": "overall", "judge": "j", "verdict": "replace"},
                           {"stratum": "overall", "judge": "k", "verdict": "insufficient"}]},
    }  # fmt: skip
    point = history_point(report, "2026-11-02", "r1")
    assert point["judges"]["j"]["label_multiplier"] == 3.0
    assert point["judges"]["k"]["label_multiplier"] is None
    summary = dashboard_summary(report, None)
    assert [r["label_multiplier"] for r in summary["trust_rows"]] == [3.0, None]
    assert summary["estimate"]["judges"]["j"]["candidate_model=m"]["label_multiplier"] == 1.5


def test_an_estimate_figure_without_estimates_draws_no_empty_legend():
    """A stratum where no judge has an estimate (imported scorer grades left out of a rubric
    report) renders without matplotlib's empty-legend warning, as one with estimates does."""
    from calibration.render.estimate_plots import three_intervals

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        empty = three_intervals("overall", [("judge-a", {})], "95%")
        drawn = three_intervals(
            "overall", [("judge-a", {"estimate": 3.1, "ci": [2.9, 3.3]})], "95%"
        )
    assert empty.startswith(b"\x89PNG") and drawn.startswith(b"\x89PNG")
