"""A calibration report: every judge against the humans, overall and per stratum, with CIs,
the alt-test per judge and stratum, per-criterion agreement, and the trust map first.

Pure computation over interchange rows; `calibrate` returns the JSON of DESIGN.md
("Calibration report JSON"), `build_calibration` the typed `CalibrationReport`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from calibration.agreement import alpha, alpha_features
from calibration.alt_test import MIN_ANNOTATORS, alt_test_family
from calibration.blocks import block_metrics, number, resamples
from calibration.bootstrap import percentile_interval
from calibration.checks import check_attributes, check_scale
from calibration.criteria import criterion_blocks
from calibration.interchange import Row, as_labels
from calibration.metrics import METRIC_UNITS, human_alpha_reason
from calibration.options import CalibrationOptions
from calibration.report import (
    CalibrationReport,
    HumanBlock,
    JudgeAltTest,
    JudgeReport,
    MetricBlock,
)
from calibration.table import GradeTable, build_table
from calibration.trust import trust_map

__all__ = ["CalibrationOptions", "build_calibration", "calibrate"]


def calibrate(
    rows: Iterable[Row], options: CalibrationOptions, inputs: dict[str, Any] | None = None
) -> dict[str, Any]:
    return build_calibration(rows, options, inputs).as_json()


def build_calibration(
    rows: Iterable[Row], options: CalibrationOptions, inputs: dict[str, Any] | None = None
) -> CalibrationReport:
    level = options.effective_level
    rows = as_labels(rows) if level == "nominal" else list(rows)
    check_scale(rows, options)
    check_attributes(rows, options)
    table = build_table(rows)
    values = _values(table)
    rng = np.random.default_rng(options.seed)
    humans = _humans(table, level, values, options, rng)
    blocks = {"overall": table}
    for attribute in options.by:
        for value in table.attribute_values(attribute):
            blocks[f"{attribute}={value}"] = table.subset(table.mask(attribute, value))
    computed = {
        name: block_metrics(sub, METRIC_UNITS, level, values, options, rng)
        for name, sub in blocks.items()
    }
    criteria = criterion_blocks(rows, options, rng)
    judges = {
        judge: JudgeReport(
            overall=MetricBlock(**computed["overall"][judge]),
            strata={
                name: MetricBlock(**computed[name][judge]) for name in blocks if name != "overall"
            },
            alt_test=_judge_alt_test(table, j, options),
            criteria=criteria.get(judge, {}),
        )
        for j, judge in enumerate(table.judges)
    }
    if options.alt_test:
        _require_alt_test(judges, options)
    return CalibrationReport(
        trust=trust_map(judges, options.epsilon, options.alt_min_items),
        scale={"min": options.scale_min, "max": options.scale_max, "level": level}
        | ({"labels": table.labels} if table.labels is not None else {}),
        reference=options.reference,
        n_items=table.n_items,
        humans=humans,
        judges=judges,
        options={
            **options.model_dump(include={"bootstrap", "seed", "cluster", "by", "confidence"}),
            "alt_test": {
                "epsilon": options.epsilon,
                "min_items": options.alt_min_items,
                "scoring": options.scoring,
                "required": options.alt_test,
            },
        },
        inputs={**(inputs or {}), "attribute_conflicts": table.conflicts[:20]},
    )


def _judge_alt_test(table: GradeTable, j: int, options: CalibrationOptions) -> JudgeAltTest:
    """The overall family, then one BY family per `--by` attribute over its strata."""

    def family(masks: dict[str, np.ndarray]):
        data = {k: (table.judge_scores[m, j], table.human_scores[m]) for k, m in masks.items()}
        return alt_test_family(
            data, table.humans, options.scoring, options.epsilon, options.alt_min_items
        )

    everything = np.ones(table.n_items, dtype=bool)
    strata = {}
    for attribute in options.by:
        masks = {
            f"{attribute}={value}": table.mask(attribute, value)
            for value in table.attribute_values(attribute)
        }
        strata.update(family(masks))
    return JudgeAltTest(overall=family({"overall": everything})["overall"], strata=strata)


def _require_alt_test(judges: dict[str, JudgeReport], options: CalibrationOptions) -> None:
    short = {
        name: judge.alt_test.overall.tested
        for name, judge in judges.items()
        if judge.alt_test.overall.tested < MIN_ANNOTATORS
    }
    if short or not judges:
        found = ", ".join(f"{name}: {n}" for name, n in short.items()) or "no judges"
        raise ValueError(
            f"alt_test: needs at least {MIN_ANNOTATORS} human annotators with "
            f">= {options.alt_min_items} items shared with each judge ({found} testable)"
        )


def _values(table: GradeTable) -> np.ndarray:
    if table.labels is not None:
        return np.arange(len(table.labels), dtype=float)
    scores = np.concatenate([table.human_scores.ravel(), table.judge_scores.ravel()])
    return np.unique(np.round(scores[~np.isnan(scores)], 9))


def _humans(table, level, values, options, rng) -> HumanBlock:
    feats = alpha_features(table.human_scores, level, values)
    point = number(alpha(np.ones((1, table.n_items)), feats)[0])
    samples = [alpha(w, feats) for w in resamples(table, options, rng)]
    ci = percentile_interval(np.concatenate(samples), options.confidence) if samples else None
    return HumanBlock(
        n_raters=len(table.humans),
        human_alpha=point,
        ci={"human_alpha": ci if point is not None else None},
        undefined={}
        if point is not None
        else {"human_alpha": human_alpha_reason(table.human_scores)},
    )
