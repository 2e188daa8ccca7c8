"""Issue 16 items 1, 2 and 4 at the library level: drift per stratum, history, what a report
prints (ranked judges, scale-fit metrics, small-n marker, rounded inputs, small multiples),
and what a calibration refuses (scores outside the scale, unknown strata)."""

from __future__ import annotations

import re
import struct

import pytest

from calibration.calibrate import CalibrationOptions, calibrate
from calibration.checks import CalibrationInputError
from calibration.drift import drift
from calibration.history import history_point, series
from calibration.interchange import GradeRow
from calibration.render import to_html, to_markdown
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


def block(n, mad, mad_ci, signed, signed_ci):
    return {
        "n": n,
        "mad": mad,
        "signed_error": signed,
        "ci": {"mad": mad_ci, "signed_error": signed_ci},
    }


def test_drift_names_judge_metric_and_stratum_with_both_intervals():
    before = {
        "judges": {
            "j": {
                "overall": block(100, 0.5, [0.4, 0.6], 0.0, [-0.1, 0.1]),
                "strata": {
                    "d=a": block(60, 0.5, [0.3, 0.7], 0.0, [-0.2, 0.2]),
                    "d=b": block(10, 0.5, [0.3, 0.7], 0.0, [-0.2, 0.2]),
                },
            }
        }
    }
    after = {"judges": {"j": {"overall": block(100, 0.55, [0.45, 0.65], 0.3, [0.2, 0.4]),
                             "strata": {"d=a": block(60, 0.9, [0.8, 1.0], 0.1, [0.0, 0.2]),
                                        "d=b": block(10, 2.0, [1.0, 3.0], 1.0, [0.5, 1.5])}}}}  # fmt: skip
    found = drift(after, before)
    # overall MAD 0.55 is inside [0.4, 0.6]; signed 0.3 is outside [-0.1, 0.1];
    # d=a MAD 0.9 outside [0.3, 0.7], signed 0.1 inside [-0.2, 0.2]; d=b has 10 < 50 items
    assert [(c["stratum"], c["metric"]) for c in found] == [
        ("overall", "signed_error"),
        ("d=a", "mad"),
    ]
    assert found[1] == {
        "judge": "j", "metric": "mad", "stratum": "d=a", "value": 0.9, "ci": [0.8, 1.0],
        "previous": 0.5, "previous_ci": [0.3, 0.7],
    }  # fmt: skip


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
