"""The Alternative Annotator Test (Calderon, Reichart, Dror, ACL 2025, arXiv 2501.10970),
checked on cases computed by hand. The procedure is the authors' `alt_test` in
github.com/nitaytech/AltTest `alt_test_example.ipynb`; their full published table is
reproduced by `tests/perf/alt_test_published.py` (52/52 pairs, see that script)."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError
from scipy import stats

from calibration.alt_test import (
    MIN_ITEMS_FLOOR,
    alignment,
    alt_test,
    alt_test_family,
    by_rejections,
    one_sided_p,
    robust_p,
)
from calibration.calibrate import CalibrationOptions, calibrate
from calibration.degenerate import (
    COPY_MARGIN,
    constant_reason,
    copy_test,
    identical_reason,
    near_constant_reason,
)
from calibration.formats.interchange import LabelRow
from calibration.scoring import AlignContext, majority_weights
from calibration.trust import partial_conjunction

A, B = 0.0, 1.0
NAN = np.nan
# items x (h0, h1, h2, h3) and the judge; labels coded A = 0, B = 1
HUMANS = np.array(
    [
        [A, A, A, A],  # item1: h3 labelled only this item
        [A, B, B, NAN],  # item2
        [B, B, A, NAN],  # item3
        [A, A, B, NAN],  # item4
        [A, NAN, NAN, NAN],  # item5: one human only -> not eligible
        [A, B, A, NAN],  # item6: no judge label -> not eligible
    ]
)
JUDGE = np.array([A, B, A, B, B, NAN])
NAMES3 = ["h0", "h1", "h2"]


def test_hand_computed_alt_test_with_a_skipped_annotator():
    # h0 (R = h1, h2 and on item1 also h3):
    #   item1 R={A,A,A}: S(J=A)=1,  S(h0=A)=1   -> W_f=1, W_h=1, d=0
    #   item2 R={B,B}:   S(J=B)=1,  S(h0=A)=0   -> W_f=1, W_h=0, d=-1
    #   item3 R={B,A}:   S(J=A)=.5, S(h0=B)=.5  -> d=0
    #   item4 R={A,B}:   S(J=B)=.5, S(h0=A)=.5  -> d=0
    #   d = [0,-1,0,0]: mean -0.25, sd 0.5, se 0.25, t = (-0.25-0.2)/0.25 = -1.8, df 3
    # h1 and h2: every item ties (d = 0, W_f = 1), sd 0 and mean 0 < ε -> t = -inf, p = 0
    # h3: one eligible item < min_items = 2 -> skipped
    # BY (m=3, H_3 = 11/6, q=.05): thresholds k/3 · .05/(11/6) = .00909, .01818, .02727;
    #   sorted p = 0, 0, 0.0848 -> the two zeros rejected, h0 not. ω = 2/3, ρ = (1+1+1)/3.
    result = alt_test(JUDGE, HUMANS, ["h0", "h1", "h2", "h3"], "accuracy", 0.2, min_items=2)
    tests = {t.annotator: t for t in result.annotators}
    assert set(tests) == {"h0", "h1", "h2"}
    assert tests["h0"].n == 4 and tests["h1"].n == 4
    assert tests["h0"].p_value == pytest.approx(stats.t.cdf(-1.8, df=3))
    assert tests["h1"].p_value == 0.0 and tests["h2"].p_value == 0.0
    assert [tests[h].rejected for h in ("h0", "h1", "h2")] == [False, True, True]
    assert tests["h0"].advantage == 1.0
    assert result.winning_rate == pytest.approx(2 / 3)
    assert result.advantage_probability == 1.0
    assert result.passed and result.tested == 3
    [skipped] = result.skipped
    assert skipped.annotator == "h3" and skipped.n == 1
    assert "fewer than min_items=2" in skipped.reason


def test_a_higher_epsilon_helps_the_judge_and_min_items_skips_everyone():
    # ε = 0.8: h0 has t = (-0.25-0.8)/0.25 = -4.2, p = t.cdf(-4.2, 3) ≈ 0.0123 <= .02727
    # (its rank-3 threshold), so all three are rejected: ω = 1.
    generous = alt_test(JUDGE, HUMANS, ["h0", "h1", "h2", "h3"], "accuracy", 0.8, min_items=2)
    assert stats.t.cdf(-4.2, df=3) < 0.05 * 3 / 3 / (11 / 6)
    assert generous.winning_rate == 1.0
    nobody = alt_test(JUDGE, HUMANS, ["h0", "h1", "h2", "h3"], "accuracy", 0.2, min_items=5)
    assert nobody.tested == 0 and nobody.winning_rate is None
    assert nobody.advantage_probability is None and not nobody.passed
    assert len(nobody.skipped) == 4


def test_benjamini_yekutieli_with_ties():
    # m = 3, H_3 = 1 + 1/2 + 1/3 = 11/6; thresholds k/3 · 0.05 · 6/11 = .00909, .01818, .02727
    # tied p = .01, .01: rank 1 fails (.01 > .00909) but rank 2 passes (.01 <= .01818): the
    # step-up rejects both tied hypotheses; .2 is kept.
    assert by_rejections([0.01, 0.2, 0.01]) == [True, False, True]
    # .001 <= .00909; .02 > .01818; .03 > .02727 -> only the first
    assert by_rejections([0.03, 0.001, 0.02]) == [False, True, False]
    # an undefined p-value counts in the family (m = 2: thresholds .0167, .0333 with H_2
    # = 1.5) but is never rejected: .02 > .0167 at rank 1 -> nothing rejected
    assert by_rejections([0.02, float("nan")]) == [False, False]
    assert by_rejections([0.02]) == [True]  # m = 1: threshold .05
    assert by_rejections([]) == []


def test_neg_rmse_alignment_by_hand():
    # x = 3 against R = {1, 5}: -sqrt(((3-1)² + (3-5)²) / 2) = -2; against {3}: 0
    others = np.array([[1.0, 5.0, NAN], [3.0, NAN, NAN]])
    assert alignment(np.array([3.0, 3.0]), others, "neg_rmse").tolist() == [-2.0, 0.0]
    # accuracy: x = 1 against {1, 5} -> 0.5
    assert alignment(np.array([1.0]), others[:1], "accuracy").tolist() == [0.5]


def test_strata_share_one_benjamini_yekutieli_family():
    # Stratum "good": the judge is at least as close to the others as each human, and closer
    # on a third of the items. Stratum "mixed": the h0 case above (p = 0.0848) plus two
    # ties (p = 0). BY runs once over the 6 p-values.
    # on each item one human is the odd one out and the judge takes the majority label
    humans_good = np.array([[A, B, B], [B, A, B], [B, B, A], [A, A, B], [A, B, A], [B, A, A]])
    judge_good = np.array([B, B, B, A, A, A])
    # for the odd human S(h)=0 < S(J)=1 (d=-1), for the others S(h)=.5 = S(J)=.5 (d=0).
    family = alt_test_family(
        {
            "good": (judge_good, humans_good),
            "mixed": (JUDGE[:4], HUMANS[:4, :3]),
        },
        ["h0", "h1", "h2"],
        "accuracy",
        0.2,
        min_items=2,
    )
    good = family["good"].annotators
    # each human is the odd one out on 2 of 6 items: d = [-1,-1,0,0,0,0], mean -1/3,
    # sd = sqrt((2·(2/3)² + 4·(1/3)²)/5) = sqrt(4/15), t = (-1/3-0.2)/(sqrt(4/15)/sqrt(6))
    t = (-1 / 3 - 0.2) / (np.sqrt(4 / 15) / np.sqrt(6))
    assert good[0].p_value == pytest.approx(stats.t.cdf(t, df=5))
    p_good = stats.t.cdf(t, df=5)  # ≈ 0.0246
    # family p-values: 3 × p_good, 0.0848, 0, 0; BY m=6, H_6 = 49/20:
    # sorted 0, 0, p_good×3, .0848; thresholds k · .05/(6 · 2.45) = .0034 k
    # rank 5 threshold .0170 < p_good ≈ .0246 -> only the two zeros rejected
    assert p_good > 5 * 0.05 / (6 * 49 / 20)
    assert family["good"].winning_rate == 0.0
    assert family["mixed"].winning_rate == pytest.approx(2 / 3)
    # alone, "good" would be its own family of 3 with threshold .0273 at rank 3: all rejected
    alone = alt_test(judge_good, humans_good, ["h0", "h1", "h2"], "accuracy", 0.2, 2)
    assert p_good <= 0.05 / (11 / 6)
    assert alone.winning_rate == 1.0


def test_report_alt_test_on_labels_and_the_required_flag():
    rows = []
    for i in range(20):
        for h, label in enumerate(["A", "B", "B"] if i % 2 else ["A", "A", "B"]):
            rows.append(LabelRow(item_id=f"i{i}", rater=f"h{h}", rater_kind="human", score=label))
        rows.append(LabelRow(item_id=f"i{i}", rater="J", rater_kind="judge", score="B"))
    options = CalibrationOptions(level="nominal", bootstrap=0, alt_min_items=20)
    report = calibrate(rows, options)
    assert report["judges"]["J"]["alt_test"]["overall"]["scoring"] == "accuracy"
    with pytest.raises(ValueError, match="alt_test: needs at least 3 human annotators"):
        calibrate(rows, options.model_copy(update={"alt_test": True, "alt_min_items": 25}))


def test_min_items_below_the_floor_is_refused_naming_the_field():
    with pytest.raises(ValidationError) as raised:
        CalibrationOptions(level="nominal", alt_min_items=MIN_ITEMS_FLOOR - 1)
    [error] = raised.value.errors()
    assert error["loc"] == ("alt_min_items",)
    assert f"below the floor of {MIN_ITEMS_FLOOR} items" in error["msg"]
    assert CalibrationOptions(level="nominal", alt_min_items=MIN_ITEMS_FLOOR).alt_min_items == 20


def test_one_sided_p_is_scipys_ttest_1samp_written_out():
    """The authors call scipy's ttest_1samp; qadi computes the same t and t(n − 1) cdf without
    scipy's per-call overhead: equal to 1e-12, zero-variance cases (±inf, NaN) included."""
    import warnings

    rng = np.random.default_rng(8)
    cases = [np.zeros(5), np.full(6, -1.0), np.ones(4), np.full(5, 0.2), np.array([1.0])]
    cases += [rng.choice([-1.0, 0.0, 1.0], size=int(rng.integers(2, 50))) for _ in range(300)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for d in cases:
            for epsilon in (0.0, 0.1, 0.2):
                expected = stats.ttest_1samp(d, epsilon, alternative="less").pvalue
                got = one_sided_p(d, epsilon)
                assert (np.isnan(got) and np.isnan(expected)) or got == pytest.approx(
                    expected, abs=1e-12
                )


def test_clusters_of_one_item_give_the_authors_p_and_shared_clusters_widen_it():
    d = np.array([-1.0, 0.0, 0.0, -1.0, 0.0, 1.0, -1.0, 0.0, 0.0, -1.0])
    ones = np.ones(10)
    assert robust_p(d, ones, np.arange(10), 0.2) == pytest.approx(one_sided_p(d, 0.2))
    # two clusters of five: CR1 on 1 df -> far less certain than 10 independent items.
    # By hand: mean −0.3; cluster sums −2 and −1, residuals −2 + 1.5 = −0.5 and +0.5;
    # Var = 2/1 · (0.25 + 0.25) / 10² = 0.01, SE 0.1, t = (−0.3 − 0.2)/0.1 = −5 on 1 df
    paired = robust_p(d, ones, np.repeat([0, 1], 5), 0.2)
    assert paired == pytest.approx(stats.t.cdf(-5.0, 1))
    assert paired > 2 * one_sided_p(d, 0.2)  # 0.063 against 0.022


def test_the_verdicts_p_floors_the_variance_at_the_null():
    """All ties over 20 items: the authors' t-test says p = 0 (variance 0); under the null
    mean(d) >= ε the variance of d is at least ε(1 − ε), so the verdict's p is the t(19) cdf
    of −ε / √(ε(1 − ε)/20)."""
    d = np.zeros(20)
    assert one_sided_p(d, 0.2) == 0.0
    floored = robust_p(d, np.ones(20), None, 0.2, null_floor=True)
    assert floored == pytest.approx(stats.t.cdf(-0.2 / np.sqrt(0.2 * 0.8 / 20), 19))
    assert floored > 0.01


def test_balanced_accuracy_weights_each_majority_class_equally():
    # others' labels: majority A on items 0-2, B on item 3, a tie A/B on item 4
    others = np.array([[A, A], [A, A], [A, A], [B, B], [A, B]])
    weights = majority_weights(others, AlignContext())
    # memberships: A 3.5 items, B 1.5 items; per item 1/3.5 (A), 1/1.5 (B), the tie half each;
    # scaled to mean 1 over 5 items with 2 classes: × 5/2
    a, b = 1 / 3.5, 1 / 1.5
    expected = np.array([a, a, a, b, (a + b) / 2]) * 5 / 2
    assert weights == pytest.approx(expected)
    assert weights.sum() == pytest.approx(5.0)  # mean 1; each class's share of it 5/2


def test_jaccard_scores_tag_sets():
    labels = ["a|b", "a", '["b", "c"]', "c|a|b"]
    others = np.array([[1.0, 2.0], [3.0, np.nan]])
    got = alignment(np.array([0.0, 0.0]), others, "jaccard", AlignContext(labels))
    # {a,b} vs {a}: 1/2, vs {b,c}: 1/3 -> mean 5/12; {a,b} vs {a,b,c}: 2/3
    assert got == pytest.approx([5 / 12, 2 / 3])
    with pytest.raises(ValueError, match="jaccard compares labels"):
        alignment(np.array([0.0]), others[:1], "jaccard", AlignContext())


def test_constant_and_copying_judges_are_named():
    humans = np.array([[A, B, A], [B, B, A], [A, A, B], [B, A, B]] * 3)
    constant = np.full(12, A)
    assert constant_reason(constant, humans, AlignContext(["ok", "bad"])) == (
        "constant: the judge gave 'ok' on all 12 items"
    )
    copy = humans[:, 1].copy()
    # the judge equals h1 on 12/12; h0 agrees with h1 on 6/12, h2 on 3/12
    assert identical_reason(copy, humans, NAMES3) == (
        "reproduces annotator h1: the same score on 100% of 12 shared items "
        "(next closest, h0: 50%)"
    )
    assert identical_reason(humans[:, 0], humans[:, :1].repeat(3, 1), NAMES3) is None  # all agree
    # 19 of 20 items A (95%) while the humans say A on 30 of 60 scores (50%): near-constant;
    # humans who also say A 95% of the time make the same judge unremarkable
    mostly = np.array([A] * 19 + [B])
    spread = np.array([[A, B, A], [B, A, B]] * 10)
    assert near_constant_reason(mostly, spread) == (
        "near-constant: the judge gave 0 on 95% of 20 items, the humans on 50% of their scores"
    )
    assert near_constant_reason(mostly, mostly[:, None].repeat(3, 1)) is None


def test_partial_conjunction_by_hand():
    # m = 3, u = 2: (3 − 2 + 1) · p_(2); m = 4, u = 2: 3 · p_(2); None counts as 1
    assert partial_conjunction([0.01, 0.2, 0.002]) == pytest.approx(0.02)
    assert partial_conjunction([0.01, None, 0.03, 0.5]) == pytest.approx(0.09)
    assert partial_conjunction([0.6, 0.7, 0.9]) == 1.0


def test_copy_test_reads_the_tetrads_of_chance_corrected_agreement():
    """seen = P(J = h) − Σ_k p_J(k) p_h(k) on shared items; implied = mean over the ordered
    pairs (b, c) of the other annotators of e_Jb·e_hc / e_bc — computed here by loops."""
    rng = np.random.default_rng(4)
    truth = rng.integers(0, 3, 200)
    humans = np.column_stack([np.where(rng.random(200) < 0.8, truth, (truth + 1) % 3)
                              for _ in range(3)]).astype(float)  # fmt: skip
    judge = np.where(rng.random(200) < 0.7, humans[:, 0], truth).astype(float)

    def e(x, y):
        chance = sum(np.mean(x == k) * np.mean(y == k) for k in range(3))
        return np.mean(x == y) - chance

    raters = [judge, humans[:, 0], humans[:, 1], humans[:, 2]]
    found = {name: (p, seen, implied) for name, p, seen, implied in
             copy_test(judge, humans, NAMES3, labels=3)}  # fmt: skip
    for a, name in enumerate(NAMES3, start=1):
        b, c = (k for k in (1, 2, 3) if k != a)
        implied = (e(raters[0], raters[b]) * e(raters[a], raters[c]) / e(raters[b], raters[c])
                   + e(raters[0], raters[c]) * e(raters[a], raters[b]) / e(raters[c], raters[b])) / 2
        assert found[name][1] == pytest.approx(e(raters[0], raters[a]))
        assert found[name][2] == pytest.approx(implied)
    assert found["h0"][0] < 0.01 < min(found["h1"][0], found["h2"][0])


def test_copy_test_p_value_is_the_leave_one_out_jackknife_computed_by_loops():
    """The test's SE is the delete-a-group jackknife (200 items: one item a group) of the
    excess e_Ja − implied − margin·(e_aa − common), recomputed here item left out by item
    left out (the code takes each left-out group's sums as the total less the group's)."""
    rng = np.random.default_rng(9)
    truth = rng.integers(0, 3, 200)
    humans = np.column_stack([np.where(rng.random(200) < 0.75, truth, (truth + 1) % 3)
                              for _ in range(3)]).astype(float)  # fmt: skip
    judge = np.where(rng.random(200) < 0.3, humans[:, 0], truth).astype(float)
    raters = np.column_stack([judge, humans])

    def e(x, y):
        chance = sum(np.mean(x == k) * np.mean(y == k) for k in range(3))
        return np.mean(x == y) - chance

    def excess(rows, a):
        r = rows.T
        pairs = [(b, c) for b in (1, 2, 3) for c in (1, 2, 3) if len({a, b, c}) == 3]
        implied = np.mean([e(r[0], r[b]) * e(r[a], r[c]) / e(r[b], r[c]) for b, c in pairs])
        common = np.mean([e(r[a], r[b]) * e(r[a], r[c]) / e(r[b], r[c]) for b, c in pairs])
        return e(r[0], r[a]) - implied - COPY_MARGIN * (e(r[a], r[a]) - common)

    found = {name: p for name, p, *_ in copy_test(judge, humans, NAMES3, labels=3)}
    for a, name in enumerate(NAMES3, start=1):
        left_out = np.array([excess(np.delete(raters, i, axis=0), a) for i in range(200)])
        se = np.sqrt(199 / 200 * np.sum((left_out - left_out.mean()) ** 2))
        expected = stats.t.sf(excess(raters, a) / se, 199)
        assert found[name] == pytest.approx(expected, rel=1e-9), name


def test_the_chance_check_is_a_test_even_without_resamples():
    """With --bootstrap 0, κ keeps an interval (the jackknife on Fisher's z), and a κ with no
    interval at all is not taken as agreement beyond chance on its point value."""
    from calibration.calibrate import CalibrationOptions, calibrate
    from calibration.degenerate import chance_reason
    from calibration.formats.interchange import GradeRow

    rng = np.random.default_rng(8)
    rows = []
    for i in range(40):
        truth = float(rng.integers(1, 6))
        for h in range(3):
            rows.append(GradeRow(item_id=f"i{i}", rater=f"h{h}", rater_kind="human",
                                 score=float(np.clip(truth + rng.integers(-1, 2), 1, 5))))  # fmt: skip
        rows.append(GradeRow(item_id=f"i{i}", rater="J", rater_kind="judge", score=truth))
    report = calibrate(rows, CalibrationOptions(scale_min=1, scale_max=5, bootstrap=0))
    block = report["judges"]["J"]["overall"]
    assert block["ci_method"]["cohen_kappa"] == "jackknife_z"
    assert block["ci"]["cohen_kappa"][0] > 0
    assert chance_reason(block, "ordinal") is None
    bare = {"cohen_kappa": 0.4, "ci": {"cohen_kappa": None}}
    assert chance_reason(bare, "ordinal") == (
        "no agreement beyond chance shown: Cohen's κ = 0.400 has no interval "
        "(run with --bootstrap > 0)"
    )
