"""Level nominal (labels), per-criterion agreement, the trust map and metric units.

References: scikit-learn's `cohen_kappa_score` and the `krippendorff` package, computed on
the same labels independently of qadi."""

from __future__ import annotations

import json

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from calibration.agreement import MAX_NOMINAL_LABELS
from calibration.calibrate import CalibrationOptions, calibrate
from calibration.formats.interchange import GradeRow, LabelRow, parse_csv
from calibration.registry import JudgeInputs, Metric, Prepared
from calibration.render.report import to_html, to_markdown
from calibration.report import NO_JUDGE

LABELS = ["A", "B", "tie"]


def label_rows(n=120, seed=5):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        truth = rng.integers(0, 3)
        for h in range(3):
            if h == 0 or rng.random() > 0.15:
                label = truth if rng.random() < 0.75 else rng.integers(0, 3)
                rows.append(
                    LabelRow(
                        item_id=f"i{i}",
                        rater=f"h{h}",
                        rater_kind="human",
                        score=LABELS[label],
                        attributes={"lang": ["ar", "en"][i % 2]},
                    )
                )
        for judge, accuracy in (("good", 0.85), ("coin", 0.0)):
            label = truth if rng.random() < accuracy else rng.integers(0, 3)
            rows.append(
                LabelRow(
                    item_id=f"i{i}",
                    rater=judge,
                    rater_kind="judge",
                    score=LABELS[label],
                    attributes={"lang": ["ar", "en"][i % 2]},
                )
            )
    return rows


CODES = {label: c for c, label in enumerate(LABELS)}
coded = np.vectorize(lambda v: np.nan if v is None else CODES[v], otypes=[float])


def matrices(rows, judge):
    items = sorted({r.item_id for r in rows})
    index = {item: k for k, item in enumerate(items)}
    human = np.full((len(items), 3), None, dtype=object)
    judged = np.full(len(items), None, dtype=object)
    for r in rows:
        if r.rater_kind == "human":
            human[index[r.item_id], int(r.rater[1])] = r.score
        elif r.rater == judge:
            judged[index[r.item_id]] = r.score
    return human, judged


def test_nominal_metrics_match_scikit_learn_and_krippendorff():
    rows = label_rows()
    report = calibrate(rows, CalibrationOptions(level="nominal", bootstrap=200, seed=1))
    assert report["scale"] == {"min": None, "max": None, "level": "nominal", "labels": LABELS}
    for judge in ("good", "coin"):
        human, judged = matrices(rows, judge)
        kappas = []
        for h in range(3):
            shared = [k for k in range(len(judged)) if human[k, h] is not None]
            kappas.append(cohen_kappa_score(judged[shared].tolist(), human[shared, h].tolist()))
        pairs = [
            (judged[k], human[k, h])
            for k in range(len(judged))
            for h in range(3)
            if human[k, h] is not None
        ]
        block = report["judges"][judge]["overall"]
        assert block["n"] == len(judged)
        assert block["cohen_kappa"] == pytest.approx(np.mean(kappas), abs=1e-12)
        assert block["exact_match"] == pytest.approx(np.mean([a == b for a, b in pairs]))
        with_judge = np.column_stack([coded(human), coded(judged)]).T
        assert block["krippendorff_alpha"] == pytest.approx(
            krippendorff.alpha(reliability_data=with_judge, level_of_measurement="nominal")
        )
        assert block["human_alpha"] == pytest.approx(
            krippendorff.alpha(reliability_data=coded(human).T, level_of_measurement="nominal")
        )
        lo, hi = block["ci"]["cohen_kappa"]
        assert lo <= block["cohen_kappa"] <= hi
        for metric in ("mad", "signed_error", "kendall_tau", "pearson_r", "within_one"):
            assert block[metric] is None and block["ci"][metric] is None
            assert block["undefined"][metric]
    assert "nominal labels have no order" in report["judges"]["good"]["overall"]["undefined"]["mad"]
    assert report["judges"]["good"]["overall"]["cohen_kappa"] > 0.6
    assert abs(report["judges"]["coin"]["overall"]["cohen_kappa"]) < 0.2
    json.dumps(report, allow_nan=False)


def test_labels_read_from_csv_and_numbers_become_labels_at_level_nominal():
    text = "item_id,rater,rater_kind,score\ni1,h1,human,Yes\ni1,J,judge,Partially\n"
    rows = parse_csv(text, level="nominal")
    assert [r.score for r in rows] == ["Yes", "Partially"]
    with pytest.raises(ValueError, match="row 2: score"):
        parse_csv(text)  # numeric level: a label is a format error naming the field
    numeric = [
        GradeRow(item_id="i", rater=r, rater_kind=k, score=2.0)
        for r, k in (("h", "human"), ("J", "judge"))
    ]
    report = calibrate(numeric, CalibrationOptions(level="nominal", bootstrap=0))
    assert report["scale"]["labels"] == ["2"]
    assert report["judges"]["J"]["overall"]["exact_match"] == 1.0


def test_trust_map_comes_first_with_verdicts_bias_and_best():
    rows = label_rows(n=160)
    report = calibrate(
        rows, CalibrationOptions(level="nominal", bootstrap=100, by=["lang"], epsilon=0.2)
    )
    trust = report["trust"]
    assert list(report)[0] == "trust"
    assert trust["epsilon"] == 0.2 and trust["q"] == 0.05
    strata = {r["stratum"] for r in trust["rows"]}
    assert strata == {"overall", "lang=ar", "lang=en"}
    overall = {r["judge"]: r for r in trust["rows"] if r["stratum"] == "overall"}
    assert overall["good"]["rank"] == 1 and overall["coin"]["rank"] == 2
    assert overall["good"]["advantage_probability"] > overall["coin"]["advantage_probability"]
    assert overall["coin"]["verdict"] == "not_replacement"
    for judge, row in overall.items():
        alt = report["judges"][judge]["alt_test"]["overall"]
        assert row["winning_rate"] == alt["winning_rate"]
        assert row["bias"] is None  # labels have no signed error
    assert trust["best"]["overall"] in (None, "good")
    assert set(report["judges"]["good"]["alt_test"]["strata"]) == {"lang=ar", "lang=en"}
    markdown = to_markdown(report)
    assert markdown.index("Trust map") < markdown.index("## Overall")
    assert "| good | " in markdown.split("### Ranking")[0]
    html = to_html(report)
    assert html.index("<table class='trust'>") < html.index("<table class='metrics'>")


def test_two_humans_are_insufficient_and_no_judge_is_best():
    rows = [r for r in label_rows() if r.rater != "h2"]
    report = calibrate(rows, CalibrationOptions(level="nominal", bootstrap=0))
    rows_ = report["trust"]["rows"]
    assert {r["verdict"] for r in rows_} == {"insufficient"}
    assert report["trust"]["best"] == {"overall": None}
    assert f"best: {NO_JUDGE}" in to_markdown(report)


def test_bias_arrow_when_the_signed_error_interval_excludes_zero():
    rng = np.random.default_rng(2)
    rows = []
    for i in range(80):
        truth = float(rng.integers(1, 4))
        for h in range(3):
            rows.append(
                GradeRow(
                    item_id=f"i{i}",
                    rater=f"h{h}",
                    rater_kind="human",
                    score=truth + rng.integers(-1, 2),
                )
            )
        rows.append(GradeRow(item_id=f"i{i}", rater="soft", rater_kind="judge", score=truth + 2))
        rows.append(GradeRow(item_id=f"i{i}", rater="hard", rater_kind="judge", score=truth - 2))
    report = calibrate(rows, CalibrationOptions(scale_min=-1, scale_max=6, bootstrap=200))
    bias = {r["judge"]: r["bias"] for r in report["trust"]["rows"]}
    assert bias == {"soft": "lenient", "hard": "harsh"}
    assert "↑" in to_markdown(report) and "↓" in to_markdown(report)


def test_per_criterion_agreement_with_rubric_weights():
    # item k: humans h0, h1 and judge J mark criteria c1 (weight 10) and c2 (weight -5)
    marks = [  # (h0, h1, J) for c1, then for c2
        ((True, True, True), (False, False, True)),
        ((True, False, True), (False, False, True)),
        ((False, False, True), (True, True, True)),
        ((True, True, True), (False, False, False)),
        ((False, True, False), (False, True, True)),
        ((False, False, False), (False, False, False)),
    ]
    rows = []
    for k, (c1, c2) in enumerate(marks):
        for rater, kind, m1, m2 in (
            ("h0", "human", c1[0], c2[0]),
            ("h1", "human", c1[1], c2[1]),
            ("J", "judge", c1[2], c2[2]),
        ):
            rows.append(
                GradeRow(
                    item_id=f"i{k}",
                    rater=rater,
                    rater_kind=kind,
                    score=50.0,
                    criteria={"c1": m1, "c2": m2},
                )
            )
    options = CalibrationOptions(
        scale_min=0, scale_max=100, bootstrap=200, criterion_weights={"c1": 10.0, "c2": -5.0}
    )
    criteria = calibrate(rows, options)["judges"]["J"]["criteria"]
    c1 = criteria["c1"]
    # c1: judge met on 4 of 6 items; humans met on 6 of 12 marks; pairs agreeing:
    # i0 2, i1 1, i2 0, i3 2, i4 1, i5 2 -> 8 of 12
    assert c1["n"] == 6
    assert c1["judge_met_rate"] == pytest.approx(4 / 6)
    assert c1["human_met_rate"] == pytest.approx(6 / 12)
    assert c1["agreement"] == pytest.approx(8 / 12)
    assert c1["points_at_stake"] == pytest.approx(10 * (1 - 8 / 12))
    judge = [m[0][2] for m in marks]
    expected = np.mean([cohen_kappa_score(judge, [m[0][h] for m in marks]) for h in (0, 1)])
    assert c1["cohen_kappa"] == pytest.approx(expected)
    c2 = criteria["c2"]
    # c2: judge met on 4 of 6; agreeing pairs: i0 0, i1 0, i2 2, i3 2, i4 1, i5 2 -> 7 of 12
    assert c2["agreement"] == pytest.approx(7 / 12)
    assert c2["points_at_stake"] == pytest.approx(5 * (1 - 7 / 12))
    assert c2["judge_met_rate"] > c2["human_met_rate"]  # the judge flags c2 too often
    assert c1["alt_test"]["scoring"] == "accuracy" and c1["alt_test"]["tested"] == 0
    assert "Per-criterion agreement" in to_markdown(calibrate(rows, options))


def test_a_metric_that_is_not_a_weighted_sum_takes_the_per_resample_path():
    # the largest |judge - reference| among the items a resample drew
    worst = Metric(
        "worst_error",
        per_resample=lambda w, d: float(np.max(np.abs(d.judge - d.ref)[(w > 0) & d.ok])),
    )
    inputs = JudgeInputs(
        judge=np.array([1.0, 4.0, 3.0]),
        ref=np.array([1.0, 2.0, 2.5]),
        human=np.array([[1.0], [2.0], [2.5]]),
        level="interval",
        values=np.array([1.0, 2.0, 2.5, 3.0, 4.0]),
        scale_range=4.0,
    )
    got = Prepared([worst], {}, inputs).run(np.array([[1.0, 1.0, 1.0], [2.0, 0.0, 1.0]]))
    assert got["worst_error"].tolist() == [2.0, 0.5]  # |4-2| with item 2; |3-2.5| without


def test_no_rows_or_no_judges_give_an_empty_trust_map_not_a_crash():
    empty = calibrate([], CalibrationOptions(scale_min=1, scale_max=5, bootstrap=20))
    trust = {k: v for k, v in empty["trust"].items() if k != "procedures"}
    assert trust == {"epsilon": 0.2, "q": 0.05, "rows": [], "best": {"overall": None}}
    assert empty["humans"]["human_alpha"] is None
    assert "Trust map" in to_markdown(empty) and "<table class='trust'>" in to_html(empty)
    humans_only = [
        GradeRow(item_id=f"i{i}", rater=f"h{h}", rater_kind="human", score=float(1 + (i + h) % 5))
        for i in range(10)
        for h in range(2)
    ]
    report = calibrate(humans_only, CalibrationOptions(scale_min=1, scale_max=5, bootstrap=20))
    assert report["judges"] == {} and report["humans"]["n_raters"] == 2


def test_many_labels_stay_linear_in_memory_and_too_many_are_refused():
    """Issue 24 item 9: 2,000 items with 1,000 labels used to build items × L × L coincidence
    and confusion arrays (16 GB here); the nominal features now grow with L, not L²."""
    import resource

    rng = np.random.default_rng(6)
    rows = []
    for i in range(2000):
        truth = int(rng.integers(1000))
        for h in range(3):
            label = truth if rng.random() < 0.8 else int(rng.integers(1000))
            rows.append(LabelRow(item_id=f"i{i}", rater=f"h{h}", rater_kind="human",
                                 score=f"l{label}"))  # fmt: skip
        rows.append(LabelRow(item_id=f"i{i}", rater="j", rater_kind="judge", score=f"l{truth}"))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = calibrate(rows, CalibrationOptions(level="nominal", bootstrap=100))
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert len(report["scale"]["labels"]) > 900 and grown_mib < 1500
    assert 0.5 < report["judges"]["j"]["overall"]["cohen_kappa"] <= 1
    many = [LabelRow(item_id=f"i{i}", rater="h", rater_kind="human", score=f"x{i}")
            for i in range(MAX_NOMINAL_LABELS + 1)]  # fmt: skip
    with pytest.raises(ValueError, match=f"level: {MAX_NOMINAL_LABELS + 1} distinct labels"):
        calibrate(many, CalibrationOptions(level="nominal", bootstrap=0))


def test_kappa_over_many_labels_matches_scikit_learn():
    """Above 40 labels κ is computed from label counts (3L columns per human), not confusion
    matrices: the same Cohen's κ as scikit-learn's, human by human."""
    rng = np.random.default_rng(12)
    truth = rng.integers(0, 45, 90)
    humans = [np.where(rng.random(90) < 0.7, truth, rng.integers(0, 45, 90)) for _ in range(2)]
    judge = np.where(rng.random(90) < 0.6, truth, rng.integers(0, 45, 90))
    rows = [LabelRow(item_id=f"i{i}", rater=f"h{k}", rater_kind="human", score=f"l{h[i]}")
            for k, h in enumerate(humans) for i in range(90)]  # fmt: skip
    rows += [LabelRow(item_id=f"i{i}", rater="j", rater_kind="judge", score=f"l{judge[i]}")
             for i in range(90)]  # fmt: skip
    report = calibrate(rows, CalibrationOptions(level="nominal", bootstrap=0))
    assert len(report["scale"]["labels"]) > 40
    expected = np.mean([cohen_kappa_score(judge, h) for h in humans])
    assert report["judges"]["j"]["overall"]["cohen_kappa"] == pytest.approx(expected)
