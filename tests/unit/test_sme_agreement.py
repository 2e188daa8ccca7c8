"""The SMEs' agreement and leniency over the overlap items (calibration/sme_agreement.py),
against values computed here by hand: α by the `krippendorff` package, the t and CR1
intervals and the tests by scipy, Holm by its definition."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy import stats

from calibration.sme_agreement import OverlapLabel, sme_agreement

# two SMEs on 8 items of a 1-5 scale: badr minus amira is 1, 0, 1, 0, -1, 1, 0, 1
AMIRA = [1, 3, 4, 2, 5, 3, 1, 2]
BADR = [2, 3, 5, 2, 4, 4, 1, 3]


def labels(scores: dict[str, list[float | None]], prefix: str = "i") -> list[OverlapLabel]:
    """One label per (item, rater) with a score; None: the rater did not grade the item."""
    return [
        OverlapLabel(item_id=f"{prefix}{i}", rater=rater, score=score)
        for rater, column in scores.items()
        for i, score in enumerate(column)
        if score is not None
    ]


def by_rater(result) -> dict:
    return {r.rater: r for r in result.raters}


@pytest.mark.parametrize("level", ["ordinal", "interval"])
def test_alpha_is_krippendorffs(level):
    result = sme_agreement(labels({"amira": AMIRA, "badr": BADR}), level, 1, 5)
    expected = krippendorff.alpha(reliability_data=[AMIRA, BADR], level_of_measurement=level)
    assert result.alpha.estimate == pytest.approx(expected, abs=1e-12)
    assert result.alpha.level == level
    assert result.n_items == 8 and result.n_raters == 2


@pytest.mark.parametrize("level", ["ordinal", "interval"])
def test_alpha_interval_is_the_jackknife_on_fishers_z(level):
    """tanh(z ± t(n − 1)·SE), SE the leave-one-item-out jackknife SE of z = atanh(α), every
    α by the krippendorff package: the rule of the report's human_alpha."""
    result = sme_agreement(labels({"amira": AMIRA, "badr": BADR}), level, 1, 5)
    data = np.array([AMIRA, BADR], dtype=float)
    n = data.shape[1]
    point = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    left_out = np.array([
        krippendorff.alpha(reliability_data=np.delete(data, i, axis=1),
                           level_of_measurement=level)
        for i in range(n)
    ])  # fmt: skip
    z = np.arctanh(left_out)
    se = np.sqrt((n - 1) / n * ((z - z.mean()) ** 2).sum())
    half = stats.t.ppf(0.975, n - 1) * se
    expected = np.tanh([np.arctanh(point) - half, np.arctanh(point) + half])
    assert result.alpha.method == "jackknife_z"
    assert result.alpha.ci == pytest.approx(expected, abs=1e-10)


def test_leniency_is_the_mean_difference_with_a_t_interval():
    result = by_rater(sme_agreement(labels({"amira": AMIRA, "badr": BADR}), "ordinal", 1, 5))
    d = [1, 0, 1, 0, -1, 1, 0, 1]  # badr − amira, by hand
    mean = 3 / 8
    s = np.sqrt(sum((x - mean) ** 2 for x in d) / 7)
    half = stats.t.ppf(0.975, 7) * s / np.sqrt(8)
    badr, amira = result["badr"], result["amira"]
    assert badr.mean_difference == pytest.approx(mean) and badr.n_items == 8
    assert badr.ci == pytest.approx([mean - half, mean + half])
    assert amira.mean_difference == pytest.approx(-mean)
    assert amira.ci == pytest.approx([-mean - half, -mean + half])
    assert badr.method == amira.method == "t"
    p = stats.ttest_1samp(d, 0).pvalue
    assert badr.p_value == pytest.approx(p) and amira.p_value == pytest.approx(p)


def test_two_smes_are_one_question_counted_once():
    """With two SMEs her leniency is his with the sign turned: one test, so the Holm family
    has one member and the adjusted p is the p (Holm over two copies would double it)."""
    result = sme_agreement(labels({"amira": AMIRA, "badr": BADR}), "ordinal", 1, 5)
    for rater in result.raters:
        assert rater.adjusted_p == pytest.approx(rater.p_value)
    assert any("counted once" in note for note in result.notes)


# three SMEs, round robin over 18 items: (a, b) on items 0-5, (b, c) on 6-11, (a, c) on 12-17;
# carim grades higher than the others (by 0 or 1 point)
THREE = {
    "aya": [3, 4, 4, 1, 3, 5, None, None, None, None, None, None, 2, 3, 1, 4, 2, 3],
    "bilal": [3, 3, 4, 2, 2, 5, 2, 4, 3, 1, 3, 2, None, None, None, None, None, None],
    "carim": [None] * 6 + [3, 5, 3, 2, 3, 3, 3, 3, 2, 5, 2, 4],
}


def differences(rater: str) -> list[float]:
    """Her score minus the other's on each of her items, by hand from the table."""
    others = [name for name in THREE if name != rater]
    out = []
    for i, mine in enumerate(THREE[rater]):
        if mine is None:
            continue
        (other,) = [THREE[o][i] for o in others if THREE[o][i] is not None]
        out.append(mine - other)
    return out


def test_holm_across_three_smes_and_the_flags():
    result = by_rater(sme_agreement(labels(THREE), "ordinal", 1, 5))
    p = {name: stats.ttest_1samp(differences(name), 0).pvalue for name in THREE}
    order = sorted(p, key=p.get)
    running, holm = 0.0, {}
    for k, name in enumerate(order):  # Holm: max over the prefix of (m − k)·p_(k), capped at 1
        running = max(running, (3 - k) * p[name])
        holm[name] = min(running, 1.0)
    for name in THREE:
        assert result[name].mean_difference == pytest.approx(np.mean(differences(name)))
        assert result[name].p_value == pytest.approx(p[name])
        assert result[name].adjusted_p == pytest.approx(holm[name])
    assert holm["carim"] <= 0.05 < holm["aya"] and holm["bilal"] > 0.05  # the data's premise
    assert result["carim"].flagged == "lenient"
    assert result["aya"].flagged is None and result["bilal"].flagged is None


def test_a_harsh_sme_is_flagged_harsh():
    harsh = dict(THREE)
    harsh["carim"] = [None if v is None else max(1, v - 2) for v in THREE["carim"]]
    result = by_rater(sme_agreement(labels(harsh), "ordinal", 1, 5))
    assert result["carim"].mean_difference < 0 and result["carim"].flagged == "harsh"


def test_clustered_interval_is_cr1_on_clusters_minus_one_df():
    """12 items in 6 prompts of 2: Var = G/(G − 1)·Σ_g (Σ_{i∈g} e_i)² / n², t(G − 1)."""
    amira = [1, 3, 4, 2, 5, 3, 1, 2, 4, 3, 2, 5]
    badr = [2, 3, 5, 2, 4, 4, 1, 3, 5, 3, 3, 5]
    prompts = {f"i{i}": f"p{i // 2}" for i in range(12)}
    result = sme_agreement(labels({"amira": amira, "badr": badr}), "interval", 1, 5, prompts)
    d = np.array(badr, float) - np.array(amira, float)
    e = d - d.mean()
    sums = [e[2 * g] + e[2 * g + 1] for g in range(6)]
    se = np.sqrt(6 / 5 * sum(s * s for s in sums) / 12**2)
    half = stats.t.ppf(0.975, 5) * se
    badr_row = by_rater(result)["badr"]
    assert badr_row.method == "t_cr1" and badr_row.units == 6 and result.n_clusters == 6
    assert badr_row.ci == pytest.approx([d.mean() - half, d.mean() + half])
    assert badr_row.p_value == pytest.approx(2 * stats.t.sf(d.mean() / se, 5))
    assert result.alpha.units == 6 and result.alpha.method == "jackknife_z"


def test_fewer_than_five_items_give_no_interval_and_say_why():
    result = sme_agreement(labels({"amira": AMIRA[:4], "badr": BADR[:4]}), "ordinal", 1, 5)
    assert result.alpha.estimate is not None and result.alpha.ci is None
    assert result.alpha.no_interval.startswith("4 unit(s), fewer than 5")
    for rater in result.raters:
        assert rater.ci is None and rater.p_value is None and rater.flagged is None
        assert rater.no_interval.startswith("4 unit(s), fewer than 5")
    assert any(note.startswith("α: 4 unit(s)") for note in result.notes)
    assert any(note.startswith("amira: 4 unit(s)") for note in result.notes)


def test_fewer_than_five_clusters_give_no_interval():
    prompts = {f"i{i}": f"p{i % 4}" for i in range(8)}
    result = sme_agreement(labels({"amira": AMIRA, "badr": BADR}), "ordinal", 1, 5, prompts)
    assert result.alpha.ci is None and result.alpha.no_interval.startswith("4 cluster(s)")
    assert all(r.ci is None and r.no_interval.startswith("4 cluster(s)") for r in result.raters)


def test_every_difference_equal_is_not_certainty():
    """badr one point above amira on all 20 items: SE 0 gives no interval; the test is the
    bounded-scale exact bound (R / (R + 1))^(n − 1) = 0.8^19 on a 1-5 scale."""
    amira = [1, 2, 3, 4] * 5
    result = by_rater(
        sme_agreement(labels({"amira": amira, "badr": [a + 1 for a in amira]}), "ordinal", 1, 5)
    )
    badr = result["badr"]
    assert badr.ci is None and "standard error of 0" in badr.no_interval
    assert badr.test == "bounded_constant" and badr.p_value == pytest.approx(0.8**19)
    assert badr.adjusted_p == pytest.approx(0.8**19)  # one question, counted once
    assert badr.flagged == "lenient" and result["amira"].flagged == "harsh"


def test_items_with_one_label_are_left_out_and_counted():
    paired = labels({"amira": AMIRA, "badr": BADR})
    single = [OverlapLabel(item_id="late", rater="amira", score=5),
              OverlapLabel(item_id="late2", rater="carim", score=1)]  # fmt: skip
    with_single = sme_agreement(paired + single, "ordinal", 1, 5)
    without = sme_agreement(paired, "ordinal", 1, 5)
    assert with_single.n_unpaired == 2 and without.n_unpaired == 0
    assert with_single.n_items == 8 and with_single.n_raters == 2  # carim: no paired item
    assert with_single.alpha == without.alpha and with_single.raters == without.raters
    assert any(note.startswith("2 overlap item(s) have one label") for note in with_single.notes)


def test_three_labels_on_an_item_compare_her_with_the_others_mean():
    scores = {"a": [1, 2, 3, 4, 5, 3], "b": [2, 2, 3, 5, 4, 3], "c": [None] * 5 + [5]}
    result = by_rater(sme_agreement(labels(scores), "ordinal", 1, 5))
    # a's differences: 1−2, 0, 0, 4−5, 5−4, and on the last item 3 − (3 + 5)/2 = −1
    assert result["a"].mean_difference == pytest.approx((-1 + 0 + 0 - 1 + 1 - 1) / 6)
    assert result["c"].mean_difference == pytest.approx(2.0) and result["c"].n_items == 1


def test_the_same_score_everywhere_has_no_alpha():
    result = sme_agreement(labels({"a": [3] * 6, "b": [3] * 6}), "ordinal", 1, 5)
    assert result.alpha.estimate is None and "the same" in result.alpha.undefined


def test_no_paired_item_yet():
    result = sme_agreement([OverlapLabel(item_id="x", rater="a", score=3)], "ordinal", 1, 5)
    assert result.n_items == 0 and result.raters == [] and result.alpha.estimate is None


def test_the_interval_names_its_method_and_the_report_its_assumptions():
    result = sme_agreement(labels(THREE), "ordinal", 1, 5, {f"i{i}": f"p{i % 6}" for i in range(18)})
    assert result.alpha.method in result.methods["intervals"]
    for rater in result.raters:
        assert rater.method in result.methods["intervals"]
        assert rater.test in result.methods["tests"]
    assert result.procedure.startswith("Holm")
    assert any("equally spaced" in a for a in result.assumptions)
    assert any("cluster" in a for a in result.assumptions)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: sme_agreement([], "nominal", 1, 5), "level: 'nominal' is not one of"),
        (lambda: sme_agreement([], "ordinal", 5, 1), "scale_max: 1 must be above scale_min 5"),
        (lambda: sme_agreement([], "ordinal", 1, 5, confidence=1.5), "confidence: 1.5"),
        (
            lambda: sme_agreement(labels({"a": [1, 6], "b": [1, 2]}), "ordinal", 1, 5),
            "labels[1].score: 6 is outside the scale 1–5",
        ),
        (
            lambda: sme_agreement(labels({"a": [1]}) + labels({"a": [2]}), "ordinal", 1, 5),
            "labels[1]: a second label by 'a' on item 'i0'",
        ),
    ],
)
def test_bad_input_is_refused_naming_the_field(call, message):
    with pytest.raises(ValueError) as refused:
        call()
    assert str(refused.value).startswith(message)
    assert "\n" not in str(refused.value)
