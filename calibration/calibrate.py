"""A calibration report: every judge against the humans, overall and per stratum, with CIs.

Pure computation over interchange rows; the report dict has the keys of DESIGN.md
("Calibration report JSON") plus `undefined` reasons for null metrics.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field, model_validator

from calibration.bootstrap import percentile_interval, resample_weights
from calibration.interchange import GradeRow
from calibration.metrics import (
    METRICS,
    alpha,
    alpha_features,
    judge_features,
    metric_batch,
    reference_scores,
)
from calibration.table import GradeTable, build_table

NO_PAIRS = "no item has both a score from this judge and a human score"


class CalibrationOptions(BaseModel):
    scale_min: float
    scale_max: float
    level: Literal["ordinal", "interval"] | None = Field(
        default=None, description="default: ordinal for integer scales of at most 11 points"
    )
    reference: str = "mean"
    by: list[str] = Field(default_factory=list)
    bootstrap: int = Field(default=2000, ge=0)
    seed: int = 0
    cluster: str | None = None
    confidence: float = Field(default=0.95, gt=0, lt=1)

    @model_validator(mode="after")
    def _check(self) -> CalibrationOptions:
        if self.scale_min >= self.scale_max:
            raise ValueError(f"scale: min {self.scale_min} must be below max {self.scale_max}")
        return self

    @property
    def effective_level(self) -> str:
        if self.level:
            return self.level
        integral = float(self.scale_min).is_integer() and float(self.scale_max).is_integer()
        return "ordinal" if integral and self.scale_max - self.scale_min <= 10 else "interval"


def calibrate(
    rows: Iterable[GradeRow], options: CalibrationOptions, inputs: dict[str, Any] | None = None
) -> dict[str, Any]:
    table = build_table(rows)
    level = options.effective_level
    values = _values(table)
    rng = np.random.default_rng(options.seed)
    out_of_scale = _out_of_scale(table, options)
    report: dict[str, Any] = {
        "scale": {"min": options.scale_min, "max": options.scale_max, "level": level},
        "reference": options.reference,
        "n_items": table.n_items,
        "humans": _humans(table, level, values, options, rng),
        "judges": {},
        "options": {
            "bootstrap": options.bootstrap,
            "seed": options.seed,
            "cluster": options.cluster,
            "by": options.by,
            "confidence": options.confidence,
        },
        "inputs": {**(inputs or {}), "attribute_conflicts": table.conflicts[:20]},
    }
    if out_of_scale:
        report["inputs"]["out_of_scale"] = out_of_scale
    blocks = {"overall": table}
    for attribute in options.by:
        for value in table.attribute_values(attribute):
            blocks[f"{attribute}={value}"] = table.subset(table.mask(attribute, value))
    computed = {
        name: _block_metrics(sub, options, level, values, rng) for name, sub in blocks.items()
    }
    for judge in table.judges:
        report["judges"][judge] = {
            "overall": computed["overall"][judge],
            "strata": {name: computed[name][judge] for name in blocks if name != "overall"},
        }
    return report


def _values(table: GradeTable) -> np.ndarray:
    scores = np.concatenate([table.human_scores.ravel(), table.judge_scores.ravel()])
    return np.unique(np.round(scores[~np.isnan(scores)], 9))


def _out_of_scale(table: GradeTable, options: CalibrationOptions) -> list[str]:
    scores = np.concatenate([table.human_scores.ravel(), table.judge_scores.ravel()])
    scores = scores[~np.isnan(scores)]
    bad = scores[(scores < options.scale_min) | (scores > options.scale_max)]
    if bad.size:
        return [f"{bad.size} score(s) outside {options.scale_min}-{options.scale_max}"]
    return []


def _clusters(table: GradeTable, attribute: str | None) -> np.ndarray | None:
    if attribute is None:
        return None
    labels = [a.get(attribute, f"<item {i}>") for i, a in enumerate(table.attributes)]
    _, codes = np.unique(labels, return_inverse=True)
    return codes


def _humans(table, level, values, options, rng) -> dict[str, Any]:
    feats = alpha_features(table.human_scores, level, values)
    point = alpha(np.ones((1, table.n_items)), feats)[0]
    samples = [alpha(w, feats) for w in _weights(table, options, rng)]
    result: dict[str, Any] = {"n_raters": len(table.humans), "human_alpha": _number(point)}
    ci = percentile_interval(np.concatenate(samples), options.confidence) if samples else None
    result["ci"] = {"human_alpha": ci if result["human_alpha"] is not None else None}
    if result["human_alpha"] is None:
        result["undefined"] = {"human_alpha": _human_alpha_reason(table.human_scores)}
    return result


def _weights(table: GradeTable, options: CalibrationOptions, rng):
    if options.bootstrap == 0 or table.n_items == 0:
        return iter(())
    return resample_weights(
        rng, table.n_items, options.bootstrap, _clusters(table, options.cluster)
    )


def _block_metrics(table, options, level, values, rng) -> dict[str, dict[str, Any]]:
    """The full metric block for every judge on this (sub)table, sharing the resamples."""
    ordinal = level == "ordinal"
    scale_range = options.scale_max - options.scale_min
    ref = reference_scores(table.human_scores, options.reference, table.humans)
    features = {
        judge: judge_features(table.judge_scores[:, j], ref, table.human_scores, level, values)
        for j, judge in enumerate(table.judges)
    }
    ones = np.ones((1, table.n_items))
    points = {j: metric_batch(ones, f, scale_range, ordinal) for j, f in features.items()}
    samples: dict[str, dict[str, list[np.ndarray]]] = {
        j: {m: [] for m in METRICS} for j in features
    }
    for weights in _weights(table, options, rng):
        for judge, feats in features.items():
            for metric, values_ in metric_batch(weights, feats, scale_range, ordinal).items():
                samples[judge][metric].append(values_)
    blocks = {}
    for j, judge in enumerate(table.judges):
        point = {m: _number(points[judge][m][0]) for m in METRICS}
        point["n"] = int(points[judge]["n"][0])
        ci = {}
        for metric in METRICS:
            draws = samples[judge][metric]
            ci[metric] = (
                percentile_interval(np.concatenate(draws), options.confidence)
                if draws and point[metric] is not None
                else None
            )
        undefined = _reasons(point, table, ref, j, ordinal)
        blocks[judge] = {**point, "ci": ci, **({"undefined": undefined} if undefined else {})}
    return blocks


def _number(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def _reasons(point, table: GradeTable, ref, j: int, ordinal: bool) -> dict[str, str]:
    """Why each null metric is null, in words a reader of the report can act on."""
    reasons: dict[str, str] = {}
    judge = table.judge_scores[:, j]
    ok = ~np.isnan(judge) & ~np.isnan(ref)
    for metric in METRICS:
        if point[metric] is not None:
            continue
        if point["n"] == 0:
            reasons[metric] = NO_PAIRS
        elif metric == "within_one" and not ordinal:
            reasons[metric] = "within_one is defined for ordinal scales only"
        elif metric in ("kendall_tau", "spearman_rho", "pearson_r"):
            if ok.sum() < 2:
                reasons[metric] = "fewer than two items"
            elif np.ptp(judge[ok]) == 0:
                reasons[metric] = "the judge's scores are constant"
            else:
                reasons[metric] = "the reference scores are constant"
        elif metric == "human_alpha":
            reasons[metric] = _human_alpha_reason(table.human_scores[ok])
        else:
            reasons[metric] = "no variation among the ratings (expected disagreement is 0)"
    return reasons


def _human_alpha_reason(human: np.ndarray) -> str:
    if human.size == 0 or (~np.isnan(human)).sum(1).max(initial=0) < 2:
        return "fewer than two human ratings on every item"
    return "no variation among the human ratings (expected disagreement is 0)"
