"""Per-criterion agreement for penalty-weighted rubrics: which criteria make a judge lenient.

For each criterion id carried in the rows' `criteria` marks (met = 1, not met = 0), per
judge: n, the judge's and the humans' met rates, agreement (share of (item, human) pairs
with the same mark), Cohen's κ with bootstrap CIs, the alt-test on the marks (`accuracy`),
and with a known rubric the points at stake = |weight| × (1 − agreement).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from calibration.alt_test import alt_test
from calibration.blocks import block_metrics, clusters_of
from calibration.columns import Columns
from calibration.formats.interchange import Row
from calibration.metrics import METRIC_UNITS
from calibration.options import CalibrationOptions
from calibration.report import CriterionBlock
from calibration.table import GradeTable, criteria_tables

UNITS = tuple(m for m in METRIC_UNITS if m.name in ("n", "exact_match", "cohen_kappa"))
MARKS = np.array([0.0, 1.0])


def criterion_blocks(
    rows: Iterable[Row] | Columns, options: CalibrationOptions, rng: np.random.Generator
) -> dict[str, dict[str, CriterionBlock]]:
    """judge -> criterion id -> block, for criteria that humans and judges both marked."""
    out: dict[str, dict[str, CriterionBlock]] = {}
    for criterion, table in criteria_tables(rows, human_marked=True).items():
        if not table.humans:
            continue  # marks from judges only: nothing to agree with
        metrics = block_metrics(table, UNITS, "nominal", MARKS, options, rng)
        for j, judge in enumerate(table.judges):
            out.setdefault(judge, {})[criterion] = _criterion(
                table, j, metrics[judge], options.criterion_weights.get(criterion), options
            )
    return out


def _criterion(
    table: GradeTable, j: int, block: dict, weight: float | None, options: CalibrationOptions
) -> CriterionBlock:
    judge = table.judge_scores[:, j]
    ok = ~np.isnan(judge) & (~np.isnan(table.human_scores)).any(1)
    pairs = table.human_scores[ok]
    agreement = block["exact_match"]
    return CriterionBlock(
        n=block["n"],
        judge_met_rate=float(judge[ok].mean()) if ok.any() else None,
        human_met_rate=float(np.nanmean(pairs)) if ok.any() else None,
        agreement=agreement,
        cohen_kappa=block["cohen_kappa"],
        ci={"agreement": block["ci"]["exact_match"], "cohen_kappa": block["ci"]["cohen_kappa"]},
        ci_method={
            "agreement": block["ci_method"]["exact_match"],
            "cohen_kappa": block["ci_method"]["cohen_kappa"],
        },
        alt_test=alt_test(
            judge,
            table.human_scores,
            table.humans,
            "accuracy",
            options.epsilon,
            options.alt_min_items,
            clusters=clusters_of(table, options.cluster),
        ),
        weight=weight,
        points_at_stake=abs(weight) * (1 - agreement)
        if weight is not None and agreement is not None
        else None,
    )
