"""A calibration report: every judge against the humans, overall and per stratum, with CIs,
the alt-test per judge and stratum, per-criterion agreement, and the trust map first.

Pure computation over interchange rows; `calibrate` returns the JSON of DESIGN.md
("Calibration report JSON"), `build_calibration` the typed `CalibrationReport`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from calibration import design
from calibration.agreement import alpha, alpha_features, check_labels
from calibration.alt_test import MIN_ANNOTATORS, alt_test_family
from calibration.blocks import block_metrics, clusters_of, number, resamples, unit_codes
from calibration.cell_tests import METHODS as CELL_TESTS
from calibration.checks import check_attributes, check_pairs, check_scale, check_strata
from calibration.columns import columns_of
from calibration.criteria import criterion_blocks
from calibration.formats.interchange import Row, as_labels
from calibration.intervals import METHODS, alpha_interval
from calibration.metrics import METRIC_UNITS, human_alpha_reason, reference_scores
from calibration.options import CalibrationOptions
from calibration.report import (
    CalibrationReport,
    HumanBlock,
    JudgeAltTest,
    JudgeReport,
    MetricBlock,
)
from calibration.scoring import SCORINGS, AlignContext
from calibration.selective_report import selective_section, wanted
from calibration.table import GradeTable, build_table
from calibration.trust import PROCEDURES, trust_map

__all__ = ["CalibrationOptions", "build_calibration", "calibrate"]


def calibrate(
    rows: Iterable[Row], options: CalibrationOptions, inputs: dict[str, Any] | None = None
) -> dict[str, Any]:
    return build_calibration(rows, options, inputs).as_json()


def build_calibration(
    rows: Iterable[Row], options: CalibrationOptions, inputs: dict[str, Any] | None = None
) -> CalibrationReport:
    level = options.effective_level
    columns = columns_of(as_labels(rows) if level == "nominal" else rows)
    check_scale(columns, options)
    check_attributes(columns, options)
    table = build_table(columns)
    check_strata(table, options)
    check_pairs(table)
    values = _values(table)
    if level == "nominal":
        check_labels(len(values))
    rng = np.random.default_rng(options.seed)
    humans = _humans(table, level, values, options, rng)
    ref = reference_scores(table.human_scores, options.reference, table.humans)
    weights = design.table_weights(table, ref)
    masks = {"overall": np.ones(table.n_items, dtype=bool)}
    for attribute in options.by:
        for value in table.attribute_values(attribute):
            masks[f"{attribute}={value}"] = table.mask(attribute, value)
    computed = {
        name: block_metrics(
            table.subset(mask), METRIC_UNITS, level, values, options, rng,
            {judge: w.subset(mask) for judge, w in weights.items()},
        )  # fmt: skip
        for name, mask in masks.items()
    }
    criteria = criterion_blocks(columns, options, rng)
    # judges with no model behind them, as the caller knows them (service: by their route)
    stand_ins = set((inputs or {}).get("stand_ins") or ())
    judges = {
        judge: JudgeReport(
            overall=MetricBlock(**computed["overall"][judge]),
            strata={
                name: MetricBlock(**computed[name][judge]) for name in masks if name != "overall"
            },
            alt_test=_judge_alt_test(table, j, options),
            criteria=criteria.get(judge, {}),
            stand_in=judge in stand_ins,
        )
        for j, judge in enumerate(table.judges)
    }
    if options.alt_test:
        _require_alt_test(judges, options)
    selective = None
    if wanted(table, options.selective):
        selective = selective_section(
            table,
            level,
            options.scale_range,
            options.reference,
            options.by,
            options.selective,
            (inputs or {}).get("judge_versions"),
            interval_level=options.confidence,
            classes=_jury_classes(table, level, options),
        )
    trust = trust_map(
        judges,
        options.epsilon,
        level,
        options.alt_min_items,
        None if level == "nominal" else options.scale_range,
    )
    for row in trust.rows:
        row.stand_in = row.judge in stand_ins
    return CalibrationReport(
        trust=trust,
        methods=report_methods(),
        design=design_block(table, ref, bool(weights)),
        scale={"min": options.scale_min, "max": options.scale_max, "level": level}
        | ({"labels": table.labels} if table.labels is not None else {}),
        reference=options.reference,
        n_items=table.n_items,
        humans=humans,
        judges=judges,
        selective=selective,
        options={
            **options.model_dump(
                include={"bootstrap", "seed", "cluster", "by", "confidence", "selective"}
            ),
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

    clusters = clusters_of(table, options.cluster)
    context = AlignContext(labels=table.labels)

    def family(masks: dict[str, np.ndarray]):
        data = {
            k: (
                table.judge_scores[m, j],
                table.human_scores[m],
                None if clusters is None else clusters[m],
            )
            for k, m in masks.items()
        }
        return alt_test_family(
            data,
            table.humans,
            options.scoring,
            options.epsilon,
            options.alt_min_items,
            context=context,
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


def report_methods() -> dict[str, dict[str, str]]:
    """The glossary of every method name a report uses (`ci_method`, alt-test, trust map)."""
    return {
        "intervals": METHODS,
        "alt_test_scoring": {unit.name: unit.description for unit in SCORINGS},
        "alt_test": {
            "t": "one-sided t-test of mean(d) (the authors' ttest_1samp)",
            "t_cr1": "one-sided t-test with the CR1 cluster-robust SE, t(G − 1)",
            "weighted_t": "one-sided t-test of the weighted mean of d (linearised SE)",
            "weighted_t_cr1": "weighted mean of d with the CR1 cluster-robust SE, t(G − 1)",
            "p_verdict": "the same test with Var(d) floored at ε(1 − ε) (trust verdict)",
        },
        "trust": PROCEDURES,
        "cell_tests": CELL_TESTS,
    }


WEIGHTED = ("mad", "mad_pp", "signed_error", "signed_error_pp", "exact_match", "judge_higher",
            "judge_lower", "within_one")  # fmt: skip
UNWEIGHTED = (
    "kendall_tau, spearman_rho, pearson_r, cohen_kappa, krippendorff_alpha, human_alpha, the "
    "per-criterion blocks, the alt-test (ω, ρ, the verdicts) and the chance check"
)


def design_block(table: GradeTable, ref: np.ndarray, weighted: bool) -> dict[str, Any]:
    """How the labels were chosen and what that means for each number (the JSON's `design`):
    with a design, the means and shares are weighted to the judged items and everything
    else still describes the labelled items only, which the report says, never silently."""
    out = design.summary(table, ref)
    if not weighted:
        return out
    out["weighted_metrics"] = list(WEIGHTED)
    out["unweighted"] = (
        f"{UNWEIGHTED} are computed on the labelled items as they are: they describe the "
        "labelled items, not the judged population the weighted means and shares stand for"
    )
    out["warnings"] = [out["unweighted"], *out["warnings"]]
    return out


def _jury_classes(table: GradeTable, level: str, options) -> list[float] | None:
    """The verdicts a jury can return, from the scale alone: its labels' codes, or the whole
    numbers of an ordinal scale; None (the fit's own) where the scale gives none."""
    if table.labels is not None:
        return [float(code) for code in range(len(table.labels))]
    low, high = options.scale_min, options.scale_max
    whole = low is not None and high is not None and float(low).is_integer()
    if level == "ordinal" and whole and float(high).is_integer() and high - low <= 100:
        return [float(v) for v in range(int(low), int(high) + 1)]
    return None


def _values(table: GradeTable) -> np.ndarray:
    if table.labels is not None:
        return np.arange(len(table.labels), dtype=float)
    scores = np.concatenate([table.human_scores.ravel(), table.judge_scores.ravel()])
    return np.unique(np.round(scores[~np.isnan(scores)], 9))


def _humans(table, level, values, options, rng) -> HumanBlock:
    """Krippendorff's α among the humans, with the interval rule of the metric blocks, over
    the items humans scored (judge-only items would only dilute the resamples)."""
    table = table.subset((~np.isnan(table.human_scores)).any(axis=1))
    feats = alpha_features(table.human_scores, level, values)
    point = number(alpha(np.ones((1, table.n_items)), feats)[0])
    samples = [alpha(w, feats) for w in resamples(table, options, rng)]
    if point is None:
        reason = human_alpha_reason(table.human_scores)
        return HumanBlock(
            n_raters=len(table.humans),
            human_alpha=None,
            ci={"human_alpha": None},
            ci_method={"human_alpha": None},
            undefined={"human_alpha": reason},
        )
    pairable = (~np.isnan(table.human_scores)).sum(1) >= 2
    interval = alpha_interval(
        feats,
        point,
        np.concatenate(samples) if samples else None,
        unit_codes(table, options),
        pairable,
        options.cluster is not None,
        options.confidence,
    )
    return HumanBlock(
        n_raters=len(table.humans),
        human_alpha=point,
        ci={"human_alpha": interval.ci},
        ci_method={"human_alpha": interval.method},
    )
