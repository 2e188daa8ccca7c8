"""PPI++ mean (calibration/ppi.py, calibration/estimate.py) against ppi_py, scipy's t
interval, hand-computed CR2 and weighted cases, and the Bell-McCaffrey df against its dense
matrix formula. References: Angelopoulos, Duchi, Zrnic 2023, arXiv:2311.01453 (PPI++),
through its authors' package ppi_py (ppi-python, test extra); Bell & McCaffrey 2002 (CR2 and
its df). Coverage at small n and few clusters is simulated in tests/stats/test_estimates.py.

ppi_py uses z quantiles and ddof-0 variances (its large-n assumptions); qadi uses t and
small-sample variances and cross-fits λ. So the reference checks are: the same-sample point
estimate equals ppi_py's exactly; qadi's own (cross-fitted) estimate and interval converge to
ppi_py's as n grows.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from scipy import stats

from calibration.estimate import EstimateOptions, estimate
from calibration.formats.interchange import GradeRow
from calibration.ppi import bell_mccaffrey_df, classical_mean, ppi_mean, t_interval


def _rows(y: np.ndarray, f: np.ndarray, f_unl: np.ndarray, **attrs) -> list[GradeRow]:
    rows = []
    for i, (human, judge) in enumerate(zip(y, f, strict=True)):
        rows.append(GradeRow(item_id=f"l{i:05d}", rater="sme", rater_kind="human", score=human))
        rows.append(GradeRow(item_id=f"l{i:05d}", rater="J", rater_kind="judge", score=judge))
    for i, judge in enumerate(f_unl):
        rows.append(GradeRow(item_id=f"u{i:05d}", rater="J", rater_kind="judge", score=judge))
    return rows


def _sample(seed: int, n: int, big_n: int):
    rng = np.random.default_rng(seed)
    truth = rng.normal(3.4, 0.8, n + big_n)
    judge = 0.6 * truth + rng.normal(0.9, 0.5, n + big_n) + 0.3 * (seed % 3)
    return truth[:n], judge[:n], judge[n:]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n,big_n", [(150, 550), (30, 2000), (400, 100), (5, 60)])
def test_same_sample_point_estimate_is_ppi_py_s(seed: int, n: int, big_n: int) -> None:
    """λ fitted on all labels (one fold) is ppi_py's λ, and the estimate is ppi_py's."""
    y, f, f_unl = _sample(seed, n, big_n)
    fit = ppi_mean(y, f, f_unl, np.arange(n), np.arange(n, n + big_n))
    assert fit.estimate == pytest.approx(
        float(np.squeeze(ppi_mean_pointestimate(y, f, f_unl))), abs=1e-9
    )


@pytest.mark.parametrize("seed", range(3))
def test_estimate_and_interval_converge_to_ppi_py_as_n_grows(seed: int) -> None:
    """qadi's reported PPI (cross-fitted λ, t, HC2) against ppi_py (same-sample λ, z,
    ddof 0): the estimates differ by a vanishing share of the standard error and the
    widths' ratio goes to 1 (t_{n-1}/z and the ddof factor at n = 10 make it 1.2)."""
    gaps, ratios = [], []
    for n in (10, 100, 1000, 5000):
        y, f, f_unl = _sample(seed, n, 2 * n)
        block = estimate(_rows(y, f, f_unl), EstimateOptions())["judges"]["J"]["overall"]
        lo, hi = (float(np.squeeze(v)) for v in ppi_mean_ci(y, f, f_unl, alpha=0.05))
        se = (hi - lo) / (2 * stats.norm.ppf(0.975))
        reference = float(np.squeeze(ppi_mean_pointestimate(y, f, f_unl)))
        gaps.append(abs(block["estimate"] - reference) / se)
        ratios.append((block["ci"][1] - block["ci"][0]) / (hi - lo))
    assert ratios[0] > 1.05 and abs(ratios[-1] - 1) < 0.005, ratios
    assert all(abs(r - 1) <= abs(p - 1) + 0.01 for p, r in pairwise(ratios))
    assert gaps[-1] < 0.05, gaps


def test_human_and_judge_intervals_are_scipy_s_t_intervals() -> None:
    y, f, f_unl = _sample(4, 12, 40)
    block = estimate(_rows(y, f, f_unl), EstimateOptions(alpha=0.1))["judges"]["J"]["overall"]
    for part, x in ((block["human_only"], y), (block["judge_only"], np.concatenate([f, f_unl]))):
        expected = stats.t.interval(0.9, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
        assert part["ci"] == pytest.approx(list(expected), abs=1e-9)
        assert part["df"] == pytest.approx(len(x) - 1)
        assert f"t with {len(x) - 1:.1f} df" in part["method"]
    assert block["method"].startswith("PPI++") and "cross-fitted" in block["method"]


def test_the_json_names_methods_and_assumptions() -> None:
    y, f, f_unl = _sample(1, 20, 50)
    report = estimate(_rows(y, f, f_unl), EstimateOptions())
    assert "Angelopoulos" in report["methods"]["ppi"] and "cross-fitted" in report["methods"]["ppi"]
    assert "Bell-McCaffrey" in report["methods"]["variance"]
    assert any("independent" in line for line in report["assumptions"])
    assert report["design"]["weights"] == "uniform"


def test_lambda_clipped_at_zero_for_an_anticorrelated_judge() -> None:
    rng = np.random.default_rng(3)
    y = rng.normal(size=200)
    f, f_unl = -y + rng.normal(0, 0.1, 200), rng.normal(size=500)
    block = estimate(_rows(y, f, f_unl), EstimateOptions())["judges"]["J"]["overall"]
    assert block["lambda"] == 0.0
    assert block["estimate"] == pytest.approx(y.mean(), abs=1e-12)
    assert block["ci"] == pytest.approx(block["human_only"]["ci"], abs=1e-12)


def test_cross_fitting_applies_each_fold_the_other_fold_s_lambda() -> None:
    # Fold 0 = labels 0, 2; fold 1 = labels 1, 3. λ of fold 0 comes from labels 1, 3 alone:
    # Y = (3, 4), f = (2, 3): Cov (1/n) = 0.25; Var(f ∪ f~) of [1,2,2,3,2,4] (ddof 1) = 16/15;
    # 1 + n/N = 3 → λ = 0.25 / 3.2 = 0.078125. Fold 1's from labels 0, 2: Y = (1, 2),
    # f = (1, 2) → the same 0.078125.
    y, f, f_unl = np.array([1.0, 3, 2, 4]), np.array([1.0, 2, 2, 3]), np.array([2.0, 4])
    fit = ppi_mean(y, f, f_unl, np.arange(4), np.arange(4, 6), folds=np.array([0, 1, 0, 1]))
    assert fit.lam == pytest.approx(0.078125)
    # θ = mean(Y) − λ(1 + n/N)(mean(f) − mean(f ∪ f~)) = 2.5 − 0.234375 (2 − 7/3)
    assert fit.estimate == pytest.approx(2.5 + 0.234375 / 3)


def test_clustered_cr2_variance_by_hand() -> None:
    # Labelled: items 0,1 (cluster a), 2 (cluster b), 3 (cluster c); unlabelled: 4 (b), 5 (c).
    # Y = [1, 3, 2, 4], f = [1, 2, 2, 3], f~ = [2, 4]; λ fitted on all labels = 15/64 (ppi_py's),
    # λ' = 3λ = 45/64, mean(f ∪ f~) = 7/3.
    # Rectified r = Y − λ'(f − 7/3) = [1.9375, 3.234375, 2.234375, 3.53125], θ = 2.734375.
    # ψ labels = (r − θ)/4 = [−0.19921875, 0.125, −0.125, 0.19921875];
    # ψ judge = λ'(f − 7/3)/6 over all six = [−0.15625, −0.0390625, −0.0390625, 0.078125,
    #   −0.0390625, 0.1953125].
    # Cluster sums, labels: a −0.07421875, b −0.125, c 0.19921875; judge: a −0.1953125,
    # b −0.078125, c 0.2734375. Joint sum of squares = 11053/32768 = 0.3373108.
    # CR2 leverage 1/(1 − share): labels a 2 (2 of 4), b and c 4/3; judge 3/2 each (2 of 6).
    # Corrections: labels 1·0.07421875² + (1/3)(0.125² + 0.19921875²) = 0.0239461;
    # judge (1/2)(0.1953125² + 0.078125² + 0.2734375²) = 0.0595093.  V = 0.4207662.
    y, f, f_unl = np.array([1.0, 3, 2, 4]), np.array([1.0, 2, 2, 3]), np.array([2.0, 4])
    clusters = np.array([0, 0, 1, 2, 1, 2])
    fit = ppi_mean(y, f, f_unl, np.arange(4), np.arange(4, 6))
    assert fit.lam == pytest.approx(0.234375)
    assert fit.estimate == pytest.approx(2.734375)
    assert fit.variance(clusters) == pytest.approx(41363 / 98304, abs=1e-12)


def test_one_item_per_cluster_reduces_to_the_plain_variance() -> None:
    rng = np.random.default_rng(5)
    y, f_unl = rng.normal(size=40), rng.normal(size=90)
    f = y + rng.normal(0, 0.3, 40)
    fit = ppi_mean(y, f, f_unl, np.arange(40), np.arange(40, 130))
    assert fit.variance(np.arange(130)) == pytest.approx(fit.variance(None), rel=1e-12)
    assert fit.df(np.arange(130)) <= fit.df(None)  # clusters: the labels' df alone


def test_equal_clusters_give_cr1_and_g_minus_1_df() -> None:
    # Six clusters of four labels: CR2 leverage 1/(1 − 1/6) = 6/5 = CR1's G/(G − 1), df 5.
    rng = np.random.default_rng(2)
    x = rng.normal(size=24)
    codes = np.repeat(np.arange(6), 4)
    mean = classical_mean(x, np.arange(24))
    cr0 = np.sum(np.bincount(codes, weights=(x - x.mean()) / 24) ** 2)
    assert mean.variance(codes) == pytest.approx(6 / 5 * cr0)
    assert mean.df(codes) == pytest.approx(5)


def test_weighted_mean_by_hand() -> None:
    # x = [1, 2, 4], design weights d = [1, 1, 2] (the third item had half the chance):
    # Hájek mean = (1 + 2 + 8)/4 = 2.75; ψ = d(x − 2.75)/4 = [−0.4375, −0.1875, 0.625];
    # HC2 leverage 1/(1 − d/4) = [4/3, 4/3, 2] → V = (4/3)(0.19140625 + 0.03515625)
    # + 2 · 0.390625 = 0.30208333 + 0.78125 = 1.08333333.
    mean = classical_mean(np.array([1.0, 2, 4]), np.arange(3), np.array([1.0, 1, 2]))
    assert mean.estimate == pytest.approx(2.75)
    assert mean.variance(None) == pytest.approx(1.0833333333)


def _bell_mccaffrey_dense(codes: np.ndarray, weights: np.ndarray) -> float:
    """(tr W)² / tr W² with W = C^{1/2} Uᵀ U C^{1/2} built as matrices (no algebra)."""
    n = len(codes)
    d = weights
    hat = np.outer(np.ones(n), d) / d.sum()  # the weighted mean's hat matrix, 1 dᵀ / Σd
    groups = np.unique(codes)
    a = np.array([d * (codes == g) for g in groups])  # rows: d ∘ 1_g
    u = a @ (np.eye(n) - hat)  # rows: ((I − H)ᵀ a_g)ᵀ
    share = a.sum(axis=1) / d.sum()
    root = np.sqrt(1 / (1 - share))
    w = root[:, None] * (u @ u.T) * root[None, :]
    return float(np.trace(w) ** 2 / np.sum(w * w))


@pytest.mark.parametrize("seed", range(4))
def test_bell_mccaffrey_df_matches_the_dense_matrix_formula(seed: int) -> None:
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 6, 30)
    weights = rng.uniform(0.5, 4, 30)
    _, dense = np.unique(codes, return_inverse=True)
    assert bell_mccaffrey_df(dense, weights) == pytest.approx(
        _bell_mccaffrey_dense(dense, weights), rel=1e-9
    )
    assert bell_mccaffrey_df(np.arange(12), np.ones(12)) == pytest.approx(11)


def test_t_interval() -> None:
    lo, hi = t_interval(1.0, 0.25, 4, 0.05)
    assert hi - 1.0 == pytest.approx(stats.t.ppf(0.975, 4) * 0.5)
    assert lo == pytest.approx(2 - hi)


def test_labelled_items_in_one_cluster_give_no_interval() -> None:
    y, f, f_unl = np.array([1.0, 3, 2]), np.array([1.0, 2, 2]), np.array([2.0, 4])
    rows = _rows(y, f, f_unl)
    for row in rows:
        row.attributes["prompt"] = "p1" if row.item_id.startswith("l") else row.item_id
    block = estimate(rows, EstimateOptions(cluster="prompt"))["judges"]["J"]["overall"]
    assert block["ci"] is None and "two clusters" in block["undefined"]
    assert block["estimate"] is not None


def test_labels_without_variation_are_marked_unreliable() -> None:
    y, f, f_unl = np.array([3.0, 3, 3]), np.array([3.0, 3, 3]), np.array([2.0, 4, 3])
    block = estimate(_rows(y, f, f_unl), EstimateOptions())["judges"]["J"]["overall"]
    assert block["human_only"]["ci"] == [3.0, 3.0]
    assert block["human_only"]["reliable"] is False
    assert "no variation" in block["human_only"]["unreliable"]
