"""Metric blocks: point values, intervals (with their method and standard error) and null
reasons of registered metrics for every judge on a (sub)table, all judges sharing the same
resamples. Which interval a metric gets is the rule of `calibration.intervals`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from calibration.bootstrap import jackknife_weights, resample_weights
from calibration.design import Weights
from calibration.intervals import (
    BCA_MAX_UNITS,
    MIN_CLUSTERS,
    Interval,
    bootstrap_interval,
    fisher_z_interval,
    hajek_interval,
    jackknife_z_interval,
    ratio_interval,
    units_of,
)
from calibration.metrics import FEATURES, reference_scores
from calibration.options import CalibrationOptions
from calibration.registry import Group, JudgeInputs, Metric, Prepared, reason
from calibration.table import GradeTable


def clusters_of(table: GradeTable, attribute: str | None) -> np.ndarray | None:
    """A cluster code 0..G−1 per item (an item without the attribute is its own cluster)."""
    if attribute is None:
        return None
    labels = [a.get(attribute, f"<item {i}>") for i, a in enumerate(table.attributes)]
    _, codes = np.unique(labels, return_inverse=True)
    return codes


def resamples(table: GradeTable, options: CalibrationOptions, rng):
    if options.bootstrap == 0 or table.n_items == 0:
        return iter(())
    return resample_weights(
        rng, table.n_items, options.bootstrap, clusters_of(table, options.cluster)
    )


def unit_codes(table: GradeTable, options: CalibrationOptions) -> np.ndarray:
    """The independent unit of each item: itself, or its cluster."""
    clusters = clusters_of(table, options.cluster)
    return np.arange(table.n_items) if clusters is None else clusters


def jackknife(
    group: Group, units: np.ndarray, left_out: np.ndarray
) -> dict[str, dict[str, np.ndarray]]:
    """Leave-one-unit-out values of every metric of every judge, one row per unit of
    `left_out` (the units holding labelled items; leaving out any other changes nothing)."""
    out: dict[str, dict[str, list[np.ndarray]]] = {}
    for weights in jackknife_weights(units, left_out):
        for judge, values in group.run(weights).items():
            for metric, row in values.items():
                out.setdefault(judge, {}).setdefault(metric, []).append(row)
    return {j: {m: np.concatenate(v) for m, v in ms.items()} for j, ms in out.items()}


def block_metrics(
    table: GradeTable,
    metrics: Sequence[Metric],
    level: str,
    values: np.ndarray,
    options: CalibrationOptions,
    rng: np.random.Generator,
    design: dict[str, Weights] | None = None,
) -> dict[str, dict[str, Any]]:
    """Point, interval, SE and null reasons of `metrics` for every judge on this (sub)table;
    all judges share the resamples and, per batch of resamples, two matrix products.

    `design`: each judge's design weights over this table (`calibration.design`), which the
    means and shares are weighted by (Hájek); {} or None: the labels are a uniform sample.
    Items without any human score carry no metric: they are dropped before resampling, so
    every choice below (BCa or percentile, bootstrap-t or t) counts labelled units."""
    if not table.judges:
        return {}
    design = design or {}
    ref = reference_scores(table.human_scores, options.reference, table.humans)
    problems = {}
    for j, judge in enumerate(table.judges):
        if judge in design:
            judged = ~np.isnan(table.judge_scores[:, j])
            problems[judge] = design[judge].problem(judged & ~np.isnan(ref), judged)
    keep = (~np.isnan(table.human_scores)).any(axis=1)
    table, ref = table.subset(keep), ref[keep]
    design = {judge: weights.subset(keep) for judge, weights in design.items()}
    prepared = {
        judge: Prepared(
            metrics,
            FEATURES,
            JudgeInputs(
                table.judge_scores[:, j],
                ref,
                table.human_scores,
                level,
                values,
                options.scale_range,
            ),
        )
        for j, judge in enumerate(table.judges)
    }
    group = Group(prepared)
    points = group.run(np.ones((1, table.n_items)))
    units = unit_codes(table, options)
    clusters = None if options.cluster is None else units
    weighted = {j: w.weights for j, w in design.items() if w.weights is not None}
    studentized = {j: p for j, p in prepared.items() if _studentize(p, options)}
    moments = _moments(studentized, metrics, set(weighted))
    samples: dict[str, dict[str, list[np.ndarray]]] = {j: {} for j in prepared}
    for weights in resamples(table, options, rng):
        for judge, drawn in group.run(weights).items():
            for metric, values in drawn.items():
                samples[judge].setdefault(metric, []).append(values)
        for (judge, metric), matrix in moments.items():
            samples[judge].setdefault(f"{metric}:moments", []).append(weights @ matrix)
    labelled_units = _labelled_units(prepared, units)
    wanted = any(m.jackknife_z for m in metrics) or (
        options.bootstrap > 0 and any(m.ratio is None for m in metrics)
    )  # τ-b, ρ, κ and α use the jackknife even without resamples
    needs_jackknife = wanted and 0 < labelled_units.size <= BCA_MAX_UNITS
    jack = jackknife(group, units, labelled_units) if needs_jackknife else {}
    return {
        judge: _block(
            metrics,
            points[judge],
            {m: np.concatenate(v) for m, v in samples[judge].items()},
            _rows_with_data(jack.get(judge, {}), labelled_units, units[p.inputs.ok]),
            p,
            clusters,
            options.confidence,
            Design(weighted.get(judge), problems.get(judge)),
        )
        for judge, p in prepared.items()
    }


def _studentize(prepared: Prepared, options: CalibrationOptions) -> bool:
    """The bootstrap-t for this judge's ratio metrics: resampled items (not clusters) and at
    most `BCA_MAX_UNITS` labelled items of its own."""
    small = int(prepared.inputs.ok.sum()) <= BCA_MAX_UNITS
    return options.bootstrap > 0 and options.cluster is None and small


def _moments(
    prepared: dict[str, Prepared], metrics, weighted: set[str]
) -> dict[tuple[str, str], np.ndarray]:
    """Per judge and studentized metric, the item columns whose resampled sums give each
    resample's own SE: (a, b, a², ab, b²) of a ratio (`intervals.studentized`; not for a
    judge whose ratios are design-weighted, which get `t_hajek`), the moment columns of
    Pearson's r (`calibration.correlation`)."""
    out = {}
    for judge, p in prepared.items():
        for m in metrics:
            if m not in p.live:
                continue
            if m.ratio is not None and judge not in weighted:
                a, b = p.feature(m.ratio.numerator), p.feature(m.ratio.denominator)
                out[(judge, m.name)] = np.column_stack([a, b, a * a, a * b, b * b])
            elif m.moments is not None:
                out[(judge, m.name)] = m.moments.columns(p.inputs)
    return out


def _labelled_units(prepared: dict[str, Prepared], units: np.ndarray) -> np.ndarray:
    """The units holding an item some judge shares with the humans."""
    ok = np.zeros(len(units), dtype=bool)
    for p in prepared.values():
        ok |= p.inputs.ok
    return np.unique(units[ok])


def _rows_with_data(
    jack: dict[str, np.ndarray], left_out: np.ndarray, own: np.ndarray
) -> dict[str, np.ndarray]:
    """The jackknife rows whose left-out unit holds items of this judge (`own`: its units);
    the others repeat the point value and would shrink the acceleration."""
    rows = np.isin(left_out, own)
    return {metric: values[rows] for metric, values in jack.items()}


@dataclass(frozen=True)
class Design:
    """One judge's design weights on a block (None: uniform) and why they cannot be used."""

    weights: np.ndarray | None = None
    problem: str | None = None


def _block(
    metrics, point, samples, jack, prepared: Prepared, clusters, confidence, design: Design
) -> dict:
    inputs = prepared.inputs
    values = {m.name: number(point[m.name][0]) if m.name in point else None for m in metrics}
    values["n"] = int(point["n"][0])
    units = units_of(inputs.ok, clusters)
    intervals: dict[str, Interval] = {}
    undefined: dict[str, str] = {}
    for m in metrics:
        if m.name == "n" or values[m.name] is None:
            continue
        if m.ratio is not None and design.problem:
            values[m.name] = None
            undefined[m.name] = f"cannot be weighted by the labelling design: {design.problem}"
        elif m.ratio is not None and design.weights is not None:
            values[m.name], intervals[m.name] = hajek_interval(
                m, prepared, design.weights, clusters, confidence
            )
        elif m.ratio is not None:
            intervals[m.name] = ratio_interval(
                m, values[m.name], prepared, clusters, confidence, samples.get(f"{m.name}:moments")
            )
        else:
            intervals[m.name] = _other_interval(
                m, values[m.name], prepared, samples, jack.get(m.name), units, clusters, confidence
            )
    undefined.update({m.name: reason(m, inputs) for m in metrics if values[m.name] is None
                      and m.name not in undefined})  # fmt: skip
    named = [m.name for m in metrics]
    return {
        **values,
        "ci": {name: _get(intervals, name, "ci") for name in named},
        "se": {name: _get(intervals, name, "se") for name in named},
        "ci_method": {name: _get(intervals, name, "method") for name in named},
        "units": units,
        "df": {n: i.df for n, i in intervals.items() if i.df is not None},
        "no_interval": {n: i.missing for n, i in intervals.items() if i.missing},
        "undefined": undefined,
    }


def _other_interval(
    metric: Metric, value, prepared, samples, jack, units: int, clusters, confidence
) -> Interval:
    """Pearson r on Fisher's z (items), τ-b, ρ, κ and α by the jackknife on Fisher's z
    (units, at least `MIN_CLUSTERS` clusters), and otherwise — or where those cannot be formed — BCa
    or percentile bootstrap (`calibration.intervals`)."""
    found = None
    if metric.moments is not None and clusters is None:
        resampled = samples.get(f"{metric.name}:moments")
        found = fisher_z_interval(metric, value, prepared, confidence, resampled)
    elif metric.jackknife_z and (clusters is None or units >= MIN_CLUSTERS):
        found = jackknife_z_interval(value, jack, units, confidence)
    if found is not None:
        return found
    return bootstrap_interval(
        samples.get(metric.name), value, jack, units, clusters is not None, confidence
    )


def _get(intervals: dict[str, Interval], name: str, field: str):
    interval = intervals.get(name)
    return None if interval is None else getattr(interval, field)


def number(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
