"""Metric blocks: point values, intervals (with their method and standard error) and null
reasons of registered metrics for every judge on a (sub)table, all judges sharing the same
resamples. Which interval a metric gets is the rule of `calibration.intervals`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from calibration.bootstrap import jackknife_weights, resample_weights
from calibration.intervals import (
    BCA_MAX_UNITS,
    Interval,
    bootstrap_interval,
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


def jackknife(group: Group, units: np.ndarray, needed: bool) -> dict[str, dict[str, np.ndarray]]:
    """Leave-one-unit-out values of every metric of every judge (rows: units), or {}."""
    if not needed:
        return {}
    out: dict[str, dict[str, list[np.ndarray]]] = {}
    for weights in jackknife_weights(units):
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
) -> dict[str, dict[str, Any]]:
    """Point, interval, SE and null reasons of `metrics` for every judge on this (sub)table;
    all judges share the resamples and, per batch of resamples, two matrix products."""
    if not table.judges:
        return {}
    ref = reference_scores(table.human_scores, options.reference, table.humans)
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
    moments = _ratio_moments(prepared, metrics) if _studentize(table, options) else {}
    samples: dict[str, dict[str, list[np.ndarray]]] = {j: {} for j in prepared}
    for weights in resamples(table, options, rng):
        for judge, drawn in group.run(weights).items():
            for metric, values in drawn.items():
                samples[judge].setdefault(metric, []).append(values)
        for (judge, metric), matrix in moments.items():
            samples[judge].setdefault(f"{metric}:moments", []).append(weights @ matrix)
    needs_jackknife = options.bootstrap > 0 and _bca_possible(units, metrics)
    jack = jackknife(group, units, needs_jackknife)
    return {
        judge: _block(
            metrics,
            points[judge],
            {m: np.concatenate(v) for m, v in samples[judge].items()},
            jack.get(judge, {}),
            p,
            clusters,
            options.confidence,
        )
        for judge, p in prepared.items()
    }


def _studentize(table: GradeTable, options: CalibrationOptions) -> bool:
    """The bootstrap-t for ratio metrics: resampled items (not clusters), a small block."""
    return options.bootstrap > 0 and options.cluster is None and table.n_items <= BCA_MAX_UNITS


def _ratio_moments(prepared: dict[str, Prepared], metrics) -> dict[tuple[str, str], np.ndarray]:
    """Per judge and ratio metric, the item columns (a, b, a², ab, b²) whose resampled sums
    give each resample's own linearised SE (`intervals.studentized`)."""
    out = {}
    for judge, p in prepared.items():
        for m in metrics:
            if m.ratio is not None and m in p.live:
                a, b = p.feature(m.ratio.numerator), p.feature(m.ratio.denominator)
                out[(judge, m.name)] = np.column_stack([a, b, a * a, a * b, b * b])
    return out


def _bca_possible(units: np.ndarray, metrics: Sequence[Metric]) -> bool:
    """A jackknife pass is needed when a non-ratio metric may get a BCa interval."""
    count = int(units.max()) + 1 if units.size else 0
    return any(m.ratio is None for m in metrics) and count <= BCA_MAX_UNITS


def _block(metrics, point, samples, jack, prepared: Prepared, clusters, confidence) -> dict:
    inputs = prepared.inputs
    values = {m.name: number(point[m.name][0]) if m.name in point else None for m in metrics}
    values["n"] = int(point["n"][0])
    units = units_of(inputs.ok, clusters)
    intervals: dict[str, Interval] = {}
    for m in metrics:
        if m.name == "n" or values[m.name] is None:
            continue
        if m.ratio is not None:
            intervals[m.name] = ratio_interval(
                m, values[m.name], prepared, clusters, confidence, samples.get(f"{m.name}:moments")
            )
        else:
            kept = _units_with_data(jack.get(m.name), inputs.ok, clusters)
            intervals[m.name] = bootstrap_interval(
                samples.get(m.name), values[m.name], kept, units, clusters is not None, confidence
            )
    undefined = {m.name: reason(m, inputs) for m in metrics if values[m.name] is None}
    named = [m.name for m in metrics]
    return {
        **values,
        "ci": {name: _get(intervals, name, "ci") for name in named},
        "se": {name: _get(intervals, name, "se") for name in named},
        "ci_method": {name: _get(intervals, name, "method") for name in named},
        "units": units,
        "no_interval": {n: i.missing for n, i in intervals.items() if i.missing},
        "undefined": undefined,
    }


def _get(intervals: dict[str, Interval], name: str, field: str):
    interval = intervals.get(name)
    return None if interval is None else getattr(interval, field)


def _units_with_data(
    values: np.ndarray | None, ok: np.ndarray, clusters: np.ndarray | None
) -> np.ndarray | None:
    """The jackknife rows whose left-out unit holds items of this judge (the others repeat
    the point value and would shrink the acceleration)."""
    if values is None:
        return None
    if clusters is None:
        return values[ok]
    return values[np.unique(clusters[ok])]


def number(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
