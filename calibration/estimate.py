"""Judge-corrected mean scores (PPI++), overall and per stratum, per judge.

Pure computation over interchange rows; the dict has the keys of DESIGN.md ("Estimate JSON"),
plus `compare` (with `--compare A,B`), `budget` (with `--target-halfwidth`), `undefined`
reasons, and what every interval rests on: `methods` and `assumptions` for the report, and in
each interval its `method`, `df` and `reliable` (with the reason when false). For judge J, an
item is *labelled* when it has J's score and a human reference (mean of its human scores by
default), *unlabelled* when it has J's score and no human score; items humans graded but J
did not are outside J's estimate. Labels are weighted by their design (calibration/design.py);
the math is calibration/ppi.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from calibration import design
from calibration.budget import BudgetModel, label_budget
from calibration.finite import first_non_finite
from calibration.formats.interchange import GradeRow
from calibration.metrics import reference_scores
from calibration.ppi import CROSSFIT_FOLDS, MeanEstimate, classical_mean, ppi_mean, t_interval
from calibration.table import GradeTable, build_table

TOO_FEW = "fewer than two labelled items (items with this judge's and a human score)"
ONE_CLUSTER = "the cluster-robust variance needs labelled items in at least two clusters"
# Below this many clusters holding labels a cluster-robust interval is printed but marked
# unreliable: docs/statistics.md ("Clusters") and tests/stats/test_estimates.py show CR1 with
# t_{G-1} falling to 0.80-0.90 coverage below 5 unequal clusters, and CR2 with Bell-McCaffrey
# df, which holds there for normal cluster effects, resting its whole width on a few cluster
# totals being near normal, which nothing can check with fewer than five.
MIN_CLUSTERS = 5


class EstimateOptions(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False)

    alpha: float = Field(default=0.05, gt=0, lt=1)
    reference: str = "mean"
    by: list[str] = Field(default_factory=list)
    cluster: str | None = None
    compare: list[str] | None = Field(
        default=None, min_length=2, max_length=2, description="two values of the first `by`"
    )
    target_halfwidth: float | None = Field(default=None, gt=0)
    budget_quantile: float = Field(
        default=0.8,
        ge=0.5,
        lt=1,
        description="the budget's labels reach the target half-width with this probability",
    )
    scale_min: float | None = None
    scale_max: float | None = None

    @model_validator(mode="after")
    def _check(self) -> EstimateOptions:
        if self.compare and not self.by:
            raise ValueError("compare: needs a `by` attribute whose values A and B it compares")
        low, high = self.scale_min, self.scale_max
        if low is not None and high is not None and low >= high:
            raise ValueError(f"scale: min {self.scale_min} must be below max {self.scale_max}")
        return self


@dataclass
class Fit:
    """One judge on one block of items: the three means and the arrays behind them."""

    judged: np.ndarray  # table indices of the items this judge graded in the block
    labelled: np.ndarray  # table indices of the labelled ones
    unlabelled: np.ndarray
    y: np.ndarray
    f: np.ndarray
    f_unlabelled: np.ndarray
    weights: np.ndarray | None  # the labels' design weights; None: uniform
    ppi: MeanEstimate | None
    human: MeanEstimate | None
    judge: MeanEstimate | None
    undefined: str | None = None


def estimate(
    rows: Iterable[GradeRow], options: EstimateOptions, inputs: dict[str, Any] | None = None
) -> dict[str, Any]:
    return estimate_table(build_table(rows), options, inputs)


def estimate_table(
    table: GradeTable, options: EstimateOptions, inputs: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`estimate` on a built table (the simulations in tests/stats build tables directly)."""
    if not table.judges:
        raise ValueError("grades: no judge scores (rater_kind=judge) to correct")
    if not table.humans:
        raise ValueError("grades: no human scores (rater_kind=human) to correct the judges by")
    ref = reference_scores(table.human_scores, options.reference, table.humans)
    clusters = _cluster_codes(table, options.cluster)
    masks = {"overall": np.ones(table.n_items, dtype=bool)}
    for attribute in options.by:
        for value in table.attribute_values(attribute):
            masks[f"{attribute}={value}"] = table.mask(attribute, value)
    if options.compare:
        _check_compare(options, masks)
    plan = design.summary(table, ref)
    report: dict[str, Any] = {
        "alpha": options.alpha,
        "reference": options.reference,
        "methods": _methods(options, plan),
        "assumptions": _assumptions(options, plan),
        "design": plan,
        "judges": {},
        "options": options.model_dump(exclude_none=True),
        "inputs": {**(inputs or {}), **_input_notes(table, options)},
    }
    for j, judge in enumerate(table.judges):
        scores = table.judge_scores[:, j]
        judged = ~np.isnan(scores)
        weights = design.judge_weights(table, judged, judged & ~np.isnan(ref))
        # a fit holds arrays over its items (~0.5 GB a judge at 10M judgments, issue 39):
        # each is dropped once its block is made, unless the comparisons read it after
        fits, blocks = {}, {}
        for name, mask in masks.items():
            fit = _fit(scores, ref, mask, weights, clusters)
            blocks[name] = _block(fit, clusters, options)
            if options.compare:
                fits[name] = fit
            del fit
        entry: dict[str, Any] = {"overall": blocks.pop("overall"), "strata": blocks}
        if options.compare:
            entry["compare"] = _compare(fits, clusters, options)
        _refuse_non_finite(table, judge, entry)
        report["judges"][judge] = entry
    return report


def _refuse_non_finite(table: GradeTable, judge: str, entry: dict[str, Any]) -> None:
    """A judge's estimates hold finite numbers only; else ValueError naming the value
    (judge, stratum, which estimate) and why. Scores are finite numbers of any size and
    weights are bounded (MIN_INCLUSION_PROB), but sums and squares of scores near 1e308
    overflow: an answer holding the NaN that follows fails to serialise (a 500) and, stored
    in a report, every later read of it (issue 42.9)."""
    found = first_non_finite(entry, f"judges.{judge}")
    if found is None:
        return
    path, value = found
    scores = np.concatenate([table.human_scores.ravel(), table.judge_scores.ravel()])
    sizes = f"the largest |score| is {float(np.nanmax(np.abs(scores))):.3g}"
    if not np.isnan(table.inclusion_prob).all():
        sizes += f", the smallest inclusion_prob {float(np.nanmin(table.inclusion_prob)):.3g}"
    raise ValueError(
        f"grades: {path} cannot be computed ({value}): its sums and squares overflow on "
        f"these grades ({sizes})"
    )


def _methods(options: EstimateOptions, plan: dict[str, Any]) -> dict[str, str]:
    variance = (
        f"CR2 cluster-robust variance over `{options.cluster}` (Bell & McCaffrey 2002; CR1's "
        f"G/(G-1) for equal-sized clusters), Bell-McCaffrey df (G-1 for equal-sized clusters); "
        f"intervals from fewer than {MIN_CLUSTERS} clusters are marked unreliable"
        if options.cluster
        else "HC2 variance (the ddof-1 variance for equal weights), Bell-McCaffrey df "
        "(n-1 for equal weights)"
    )
    return {
        "ppi": "PPI++ mean (Angelopoulos, Duchi & Zrnic 2023, arXiv:2311.01453, §2) with the "
        f"power-tuning λ cross-fitted over {CROSSFIT_FOLDS} folds (Zrnic & Candès 2024, "
        "Cross-prediction-powered inference, §2), written through the judge's mean over all "
        "judged items; Student t interval, df combined over the labelled and judged samples "
        "by Welch-Satterthwaite",
        "human_only": "mean of the human reference over the labelled items; Student t interval",
        "judge_only": "mean of the judge's scores over every item it graded (biased by the "
        "judge's error); Student t interval",
        "variance": variance,
        "weights": "labels weighted by 1/inclusion probability, Hájek-normalised (Zrnic & "
        f"Candès 2024, Active Statistical Inference, §3): {plan['weights']}"
        if plan["weights"] != "uniform"
        else "uniform: no label carries inclusion_prob",
        "compare": "difference of two strata's estimates; clusters shared by the two (the same "
        "prompt) pair them, with the smaller side's df",
        "budget": f"{options.budget_quantile:g} predictive quantile of the half-width after m "
        "more labels (calibration/budget.py)",
    }


def _assumptions(options: EstimateOptions, plan: dict[str, Any]) -> list[str]:
    out = [
        "the labelled items are a probability sample of the judged items: uniform, or drawn "
        "with the recorded inclusion probabilities (see `design`)",
        "t quantiles are exact for normal residuals; for skewed or very discrete scores with "
        "few labels coverage can fall below the nominal level",
        "an interval whose labels show no variation (variance 0) is marked unreliable: it is "
        "not evidence of zero uncertainty",
    ]
    if options.cluster:
        out.append(
            f"items in different `{options.cluster}` clusters are independent; items in one "
            "cluster may be correlated in any way"
        )
    else:
        out.append("items are independent (use --cluster when answers share a prompt)")
    if plan["weights"] != "uniform":
        out.append(plan["weights"])
    return out


def _cluster_codes(table: GradeTable, attribute: str | None) -> np.ndarray | None:
    """Cluster label per item; an item without the attribute is a cluster of its own."""
    if attribute is None:
        return None
    labels = [
        a.get(attribute, f"<item {i}>") for i, a in zip(table.items, table.attributes, strict=True)
    ]
    return np.unique(labels, return_inverse=True)[1]


def _check_compare(options: EstimateOptions, masks: dict[str, np.ndarray]) -> None:
    attribute = options.by[0]
    known = [name.split("=", 1)[1] for name in masks if name.startswith(f"{attribute}=")]
    missing = [value for value in options.compare or [] if value not in known]
    if missing:
        raise ValueError(f"compare: {missing} not among the values of {attribute}: {known}")


def _input_notes(table: GradeTable, options: EstimateOptions) -> dict[str, Any]:
    notes: dict[str, Any] = {"n_items": table.n_items, "attribute_conflicts": table.conflicts[:20]}
    if options.scale_min is not None and options.scale_max is not None:
        scores = np.concatenate([table.human_scores.ravel(), table.judge_scores.ravel()])
        outside = ((scores < options.scale_min) | (scores > options.scale_max)).sum()
        if outside:
            notes["out_of_scale"] = f"{outside} score(s) outside {options.scale_min:g}-" + (
                f"{options.scale_max:g}"
            )
    return notes


def _folds(labelled: np.ndarray, clusters: np.ndarray | None) -> np.ndarray:
    """Cross-fitting folds of the labels, whole clusters with --cluster (so a cluster's
    correlated items never fit the λ applied to one another)."""
    codes = np.arange(len(labelled)) if clusters is None else clusters[labelled]
    return np.unique(codes, return_inverse=True)[1] % CROSSFIT_FOLDS


def _fit(
    scores: np.ndarray,
    ref: np.ndarray,
    mask: np.ndarray,
    weights: design.Weights,
    clusters: np.ndarray | None,
) -> Fit:
    judged = mask & ~np.isnan(scores)
    labelled = np.flatnonzero(judged & ~np.isnan(ref))
    unlabelled = np.flatnonzero(judged & np.isnan(ref))
    y, f, f_unl = ref[labelled], scores[labelled], scores[unlabelled]
    every = np.flatnonzero(judged)
    problem = weights.problem(labelled, every)
    d = None if weights.weights is None or problem else weights.weights[labelled]
    enough = len(labelled) >= 2 and problem is None
    return Fit(
        judged=every,
        labelled=labelled,
        unlabelled=unlabelled,
        y=y,
        f=f,
        f_unlabelled=f_unl,
        weights=d,
        ppi=ppi_mean(y, f, f_unl, labelled, unlabelled, d, _folds(labelled, clusters))
        if enough
        else None,
        human=classical_mean(y, labelled, d) if enough else None,
        judge=classical_mean(scores[every], every, labelled=False) if len(every) >= 2 else None,
        undefined=problem or (None if enough else TOO_FEW),
    )


def _interval(
    estimate: MeanEstimate | None, clusters: np.ndarray | None, alpha: float, method: str
) -> dict[str, Any]:
    """Estimate, t interval, its df, method and reliability (with the reason when not)."""
    if estimate is None:
        return {"estimate": None, "ci": None}
    out: dict[str, Any] = {"estimate": estimate.estimate, "ci": None}
    if _thinnest_units(estimate, clusters) < 2:
        return {**out, "undefined": ONE_CLUSTER if clusters is not None else TOO_FEW}
    units = _units(estimate, clusters)
    variance, df = estimate.variance(clusters), estimate.df(clusters)
    out.update(
        ci=t_interval(estimate.estimate, variance, df, alpha),
        df=df,
        method=f"{method}; t with {df:.1f} df",
        reliable=True,
    )
    reason = _unreliable(variance, df, units, clusters)
    if reason:
        out.update(reliable=False, unreliable=reason)
    return out


def _units(estimate: MeanEstimate, clusters: np.ndarray | None) -> int:
    """The independent units behind the interval: labelled ones, or all for a judge mean."""
    if estimate.labelled_items().size:
        return estimate.labelled_units(clusters)
    items = estimate.items
    return len(np.unique(items if clusters is None else clusters[items]))


def _thinnest_units(estimate: MeanEstimate, clusters: np.ndarray | None) -> int:
    """The estimate's units; for a difference A − B, its thinner side's: a side in one
    cluster has no cluster-robust variance (its one cluster sum is 0 around its own mean),
    so the difference's would leave its uncertainty out, with 0 df (issue 42.9)."""
    if estimate.sides is None:
        return _units(estimate, clusters)
    return min(_units(side, clusters) for side in estimate.sides)


def _unreliable(variance: float, df: float, units: int, clusters) -> str | None:
    if clusters is not None and units < MIN_CLUSTERS:
        return (
            f"only {units} clusters hold the labels: a cluster-robust interval needs at least "
            f"{MIN_CLUSTERS} (docs/statistics.md, Clusters)"
        )
    if variance <= 0:
        return (
            "the labels show no variation (variance 0): a zero-width interval is not "
            "evidence of zero uncertainty"
        )
    if df < 1:
        return f"{df:.2f} degrees of freedom: the weights or clusters are too unequal"
    return None


def _block(fit: Fit, clusters: np.ndarray | None, options: EstimateOptions) -> dict[str, Any]:
    variance = "CR2 variance" if clusters is not None else "HC2 variance"
    weighted = "" if fit.weights is None else ", labels weighted by 1/inclusion_prob"
    block: dict[str, Any] = {
        "estimate": None,
        "ci": None,
        "n_labelled": len(fit.y),
        "n_unlabelled": len(fit.f_unlabelled),
        "lambda": None,
        "effective_n": None,
        "judge_only": _interval(fit.judge, clusters, options.alpha, f"judge mean; {variance}"),
        "human_only": _interval(
            fit.human, clusters, options.alpha, f"human mean{weighted}; {variance}"
        ),
    }
    if fit.ppi is None or fit.human is None:
        return {**block, "undefined": fit.undefined or TOO_FEW}
    method = f"PPI++ (Angelopoulos et al. 2023), cross-fitted λ{weighted}; {variance}"
    found = _interval(fit.ppi, clusters, options.alpha, method)
    block.update(found, **{"lambda": fit.ppi.lam})
    if block["ci"] is None:
        return block
    v_ppi, v_human = fit.ppi.variance(clusters), fit.human.variance(clusters)
    if v_ppi > 0:
        block["effective_n"] = len(fit.y) * v_human / v_ppi
    if options.target_halfwidth is not None:
        model = BudgetModel.from_fit(fit, clusters, block["df"])
        block["budget"] = label_budget(
            model, options.alpha, options.target_halfwidth, options.budget_quantile
        )
    return block


def label_multiplier(block: dict[str, Any]) -> float | None:
    """How many SME labels each SME label is worth beside the judge's grades: the PPI++
    block's effective_n over its labels, i.e. Var(human-only mean) / Var(PPI++ mean). 1: the
    judge adds nothing; 3: its grades make n labels as precise as 3n labels alone would be
    (what a revision of the judge buys shows here). None where the block has no effective n."""
    effective, labelled = block.get("effective_n"), block.get("n_labelled")
    return effective / labelled if effective is not None and labelled else None


def _compare(fits: dict[str, Fit], clusters, options: EstimateOptions) -> dict[str, Any]:
    """θ_A − θ_B for the PPI, human-only and judge-only means; pairs share a cluster."""
    a, b = (f"{options.by[0]}={value}" for value in options.compare or [])
    out: dict[str, Any] = {"a": a, "b": b, "paired_on": options.cluster}
    variance = "CR2 variance" if clusters is not None else "HC2 variance"
    for key, part in (("ppi", "ppi"), ("judge_only", "judge"), ("human_only", "human")):
        first, second = getattr(fits[a], part), getattr(fits[b], part)
        diff = first.minus(second) if first is not None and second is not None else None
        method = f"difference of {part} means; {variance}"
        out[key] = _interval(diff, clusters, options.alpha, method)
    out.update(out.pop("ppi"))
    if out["ci"] is None:
        reasons = [f"{s}: {why}" for s in (a, b) if (why := _side_problem(fits[s], clusters))]
        out["undefined"] = "; ".join(reasons) or f"{TOO_FEW}, or {ONE_CLUSTER}, in {a} or {b}"
    if clusters is not None:
        shared = np.intersect1d(clusters[fits[a].judged], clusters[fits[b].judged])
        out["shared_clusters"] = len(shared)
    return out


def _side_problem(fit: Fit, clusters: np.ndarray | None) -> str | None:
    """Why one side of a comparison has no interval of its own, or None."""
    if fit.undefined:
        return fit.undefined
    if clusters is not None and fit.ppi is not None and fit.ppi.labelled_units(clusters) < 2:
        return ONE_CLUSTER
    return None
