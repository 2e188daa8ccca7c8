"""The SME label budget (calibration/budget.py): the F pivot of the stated quantile by hand,
the cluster model's expected counts by enumeration, today's half-width equal to the reported
interval's. Whether the budget's labels reach the target at the stated rate is simulated in
tests/stats/test_estimates.py."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from calibration.budget import BudgetModel, Clusters, _clusters_reached, label_budget
from calibration.estimate import EstimateOptions, estimate
from calibration.formats.interchange import GradeRow


def _rows(y, f, f_unl, prompts=None) -> list[GradeRow]:
    rows = []
    for i, (human, judge) in enumerate(zip(y, f, strict=True)):
        attrs = {} if prompts is None else {"prompt": prompts[i]}
        rows.append(GradeRow(item_id=f"l{i:04d}", rater="sme", rater_kind="human", score=human, attributes=attrs))
        rows.append(GradeRow(item_id=f"l{i:04d}", rater="J", rater_kind="judge", score=judge, attributes=attrs))
    for i, judge in enumerate(f_unl):
        attrs = {} if prompts is None else {"prompt": prompts[len(y) + i]}
        rows.append(GradeRow(item_id=f"u{i:04d}", rater="J", rater_kind="judge", score=judge, attributes=attrs))
    return rows  # fmt: skip


def test_human_curve_is_the_f_pivot_by_hand() -> None:
    # After m more labels the residual variance is (ν s² + σ² χ²_m)/(ν + m), ν = n − 1, so its
    # q-quantile is s² (ν + m F_{q; m, ν}) / (ν + m) and the half-width's is
    # t_{n+m−1} √(that / (n + m)).
    rng = np.random.default_rng(0)
    y, f, f_unl = rng.normal(size=8), rng.normal(size=8), rng.normal(size=30)
    model = BudgetModel.from_arrays(y, f, f_unl)
    m = np.array([0, 1, 5, 20])
    s2, nu = np.var(y, ddof=1), 7
    pivot = np.array([1.0, *((nu + k * stats.f.ppf(0.8, k, nu)) / (nu + k) for k in m[1:])])
    expected = stats.t.ppf(0.975, nu + m) * np.sqrt(s2 * pivot / (8 + m))
    assert model.human_halfwidths(0.05, 0.8, m) == pytest.approx(expected, rel=1e-9)
    # the median (q = 0.5) asks for less than the 0.8 quantile
    assert np.all(model.human_halfwidths(0.05, 0.5, m[1:]) < model.human_halfwidths(0.05, 0.8, m[1:]))


def test_expected_labels_per_cluster_and_clusters_reached_by_enumeration() -> None:
    # Cluster 0 holds 1 label and 1 unlabelled item, cluster 1 two unlabelled items.
    # One more label: to cluster 0 (1/3) → Σn² = 4, to cluster 1 (2/3) → 2: E = 8/3, b = 4/3;
    # cluster 1 is reached with probability 2/3. Two more: every pair gives Σn² = 5, b = 5/3,
    # and cluster 1 is always reached.
    structure = Clusters(np.array([1, 0]), np.array([1, 2]), 0.0, 0.0)
    model = BudgetModel(n=1, big_n=3, var_y=1, var_f=1, cov=0, var_all=1, clusters=structure)
    assert model._labels_per_cluster(np.array([0, 1, 2])) == pytest.approx([1, 4 / 3, 5 / 3])
    assert _clusters_reached(structure, np.array([0, 1, 2])) == pytest.approx([1, 5 / 3, 2])


def _sample(seed: int, n: int = 30, big_n: int = 300):
    rng = np.random.default_rng(seed)
    truth = rng.normal(3, 1, n + big_n)
    judge = truth + rng.normal(0.4, 0.5, n + big_n)
    return truth[:n], judge[:n], judge[n:]


def test_todays_halfwidth_is_the_reported_interval_s() -> None:
    y, f, f_unl = _sample(8)
    report = estimate(_rows(y, f, f_unl), EstimateOptions(target_halfwidth=0.1))
    block = report["judges"]["J"]["overall"]
    assert block["budget"]["halfwidth"] == pytest.approx((block["ci"][1] - block["ci"][0]) / 2)
    assert block["budget"]["quantile"] == 0.8 and "probability 0.8" in block["budget"]["method"]
    prompts = [f"p{i % 40}" for i in range(len(y) + len(f_unl))]
    clustered = estimate(
        _rows(y, f, f_unl, prompts), EstimateOptions(target_halfwidth=0.1, cluster="prompt")
    )["judges"]["J"]["overall"]
    assert clustered["budget"]["halfwidth"] == pytest.approx(
        (clustered["ci"][1] - clustered["ci"][0]) / 2
    )
    assert "design effect" in clustered["budget"]["method"]


def test_a_higher_quantile_asks_for_more_labels() -> None:
    y, f, f_unl = _sample(3)
    more = {}
    for q in (0.5, 0.8, 0.95):
        options = EstimateOptions(target_halfwidth=0.2, budget_quantile=q)
        budget = estimate(_rows(y, f, f_unl), options)["judges"]["J"]["overall"]["budget"]
        more[q] = (budget["more_labels_with_judge"], budget["more_labels_without_judge"])
    assert more[0.5][0] < more[0.8][0] < more[0.95][0]
    assert more[0.5][1] < more[0.8][1] < more[0.95][1]


def test_weak_judge_is_flagged() -> None:
    rng = np.random.default_rng(1)
    y, f, f_unl = rng.normal(size=50), rng.normal(size=50), rng.normal(size=400)
    budget = estimate(_rows(y, f, f_unl), EstimateOptions(target_halfwidth=0.15))
    plan = budget["judges"]["J"]["overall"]["budget"]
    assert plan["labels_saved_share"] < 0.10
    assert plan["warning"].startswith("weak judge")


def test_a_target_below_the_judge_mean_s_floor_is_unreachable() -> None:
    # However many labels, the PPI variance keeps the judge mean's λ'² Var(f) / M.
    y, f, f_unl = _sample(5, n=20, big_n=60)
    model = BudgetModel.from_arrays(y, f, f_unl)
    plan = label_budget(model, 0.05, target=0.01, quantile=0.8)
    assert plan["more_labels_with_judge"] is None
    assert "not reachable" in plan["warning"]
    assert plan["more_labels_without_judge"] > 60  # the human mean can go on, past the items
