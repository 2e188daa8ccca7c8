"""How a metric is one registered unit, and how all units are evaluated for many resamples.

A metric names the per-item features it sums, turns their weighted sums into a value, says
which levels it applies to, and why it is undefined when it is. Features are computed once
per (judge, block) and summed for every resample with one matrix product (DESIGN.md: no
Python loop per resample); a metric that is not a function of weighted sums gives
`per_resample` instead and is evaluated row by row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy import sparse

NO_PAIRS = "no item has both a score from this judge and a human score"
LEVELS = frozenset({"nominal", "ordinal", "interval"})


@dataclass
class JudgeInputs:
    """One judge on one block of items: scores (label codes for nominal), the reference,
    the humans, and the scale they live on."""

    judge: np.ndarray  # (n,)
    ref: np.ndarray  # (n,) reference of the humans, NaN without humans
    human: np.ndarray  # (n, m)
    level: str
    values: np.ndarray  # sorted grid of every score (codes 0..L-1 for nominal)
    scale_range: float

    @cached_property
    def ok(self) -> np.ndarray:
        """Items with this judge's score and at least one human score."""
        return ~np.isnan(self.judge) & ~np.isnan(self.ref)

    @cached_property
    def rank_levels(self) -> tuple[np.ndarray, np.ndarray]:
        """The sorted distinct judge and reference scores on `ok` items (the rank tables'
        axes), computed once per judge and block rather than once per batch of resamples."""
        judge, ref = self.judge[self.ok], self.ref[self.ok]
        return np.unique(np.round(judge, 9)), np.unique(np.round(ref, 9))

    @cached_property
    def pair(self) -> np.ndarray:
        """(item, human) pairs on items in `ok`."""
        return self.ok[:, None] & ~np.isnan(self.human)


@dataclass(frozen=True)
class Feature:
    """A per-item quantity: a vector (n,) stacked with the others, or a matrix (n, k)."""

    compute: Callable[[JudgeInputs], np.ndarray | sparse.spmatrix]
    vector: bool = True


@dataclass(frozen=True)
class Ratio:
    """A metric that is factor · Σ numerator / Σ denominator over items (a mean or a share):
    its value follows from the two features, and its standard error is the linearised one
    of a ratio (`calibration.intervals.ratio_se`), so its interval is Student t."""

    numerator: str
    denominator: str
    factor: Callable[[JudgeInputs], float] = lambda _: 1.0

    def value(self, sums: dict[str, np.ndarray], inputs: JudgeInputs) -> np.ndarray:
        return self.factor(inputs) * sums[self.numerator] / sums[self.denominator]


@dataclass(frozen=True)
class Moments:
    """A correlation whose standard error is a function of weighted sums of per-item
    columns, so each resample gets its own SE (the studentized bootstrap on Fisher's z):
    `columns` per item, `value_se` maps rows of their sums to (value, SE)."""

    columns: Callable[[JudgeInputs], np.ndarray]
    value_se: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Metric:
    """One metric: `value` maps the weighted sums of the features in `needs` to one value
    per weight row (or `per_resample` computes it from one row of weights); `levels` it
    applies to, `inapplicable` / `undefined` say why it is null. A `ratio` metric needs
    neither `value` nor `needs`: both follow from it. `bounds` clip its interval;
    `moments` and `jackknife_z` choose its interval (calibration/intervals.py)."""

    name: str
    value: Callable[[dict[str, np.ndarray], JudgeInputs], np.ndarray] | None = None
    needs: tuple[str, ...] = ()
    levels: frozenset[str] = LEVELS
    inapplicable: str = ""  # why it is null at a level it does not apply to
    undefined: Callable[[JudgeInputs], str] = field(
        default=lambda _: "no variation among the ratings (expected disagreement is 0)"
    )
    per_resample: Callable[[np.ndarray, JudgeInputs], float] | None = None
    ratio: Ratio | None = None
    bounds: tuple[float, float] | None = None
    moments: Moments | None = None  # Pearson r: studentized bootstrap on Fisher's z
    jackknife_z: bool = False  # τ-b, ρ, κ, α: t interval on Fisher's z, jackknife SE

    def __post_init__(self) -> None:
        if self.ratio is not None:
            object.__setattr__(self, "value", self.ratio.value)
            object.__setattr__(self, "needs", (self.ratio.numerator, self.ratio.denominator))


class Prepared:
    """The metrics of one judge on one block, with their features computed once, ready to
    be evaluated for any batch of item weights (B, n): one row per resample."""

    def __init__(
        self, metrics: Sequence[Metric], features: dict[str, Feature], inputs: JudgeInputs
    ) -> None:
        self.inputs = inputs
        self.live = [m for m in metrics if inputs.level in m.levels]
        needed = sorted({name for m in self.live for name in m.needs})
        self.vectors = [n for n in needed if features[n].vector]
        columns = [features[n].compute(inputs) for n in self.vectors]
        self.dense = np.column_stack(columns) if columns else np.zeros((len(inputs.judge), 0))
        # matrix features side by side, transposed once: one sparse product per batch
        matrices = {
            n: sparse.csr_matrix(features[n].compute(inputs))
            for n in needed
            if not features[n].vector
        }
        widths = np.cumsum([0, *(m.shape[1] for m in matrices.values())])
        self.spans = {n: (widths[k], widths[k + 1]) for k, n in enumerate(matrices)}
        self.stacked = sparse.hstack(list(matrices.values())).tocsr() if matrices else None

    def feature(self, name: str) -> np.ndarray:
        """The per-item values of one vector feature this judge's metrics need."""
        return self.dense[:, self.vectors.index(name)]

    @property
    def width(self) -> int:
        """Columns of the matrix features (0 without any)."""
        return 0 if self.stacked is None else self.stacked.shape[1]

    def run(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        """Values for each row of `weights` (one judge; `Group` shares the products)."""
        stacked = (
            np.zeros((len(weights), 0))
            if self.stacked is None
            else np.asarray((self.stacked.T @ weights.T).T)
        )
        return self.evaluate(weights, weights @ self.dense, stacked)

    def evaluate(
        self, weights: np.ndarray, dense: np.ndarray, stacked: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Metric values from the weighted sums of this judge's vector and matrix features."""
        sums = {n: dense[:, k] for k, n in enumerate(self.vectors)}
        sums.update({n: stacked[:, a:b] for n, (a, b) in self.spans.items()})
        out = {}
        with np.errstate(divide="ignore", invalid="ignore"):
            for metric in self.live:
                if metric.per_resample is not None:
                    values = [metric.per_resample(row, self.inputs) for row in weights]
                else:
                    values = metric.value(sums, self.inputs)
                out[metric.name] = np.asarray(values, dtype=float)
        return out


class Group:
    """Several judges on the same items: their features side by side, so a batch of
    resamples costs one dense and one sparse product for all of them."""

    def __init__(self, prepared: dict[str, Prepared]) -> None:
        """`prepared`: at least one judge, all on the same items."""
        self.prepared = prepared
        self.dense = np.hstack([p.dense for p in prepared.values()])
        matrices = [p.stacked.T for p in prepared.values() if p.stacked is not None]
        self.stacked_t = sparse.vstack(matrices).tocsr() if matrices else None
        self.dense_cuts = np.cumsum([0, *(p.dense.shape[1] for p in prepared.values())])
        self.sparse_cuts = np.cumsum([0, *(p.width for p in prepared.values())])

    def run(self, weights: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
        dense = weights @ self.dense
        if self.stacked_t is None:  # only vector features: no sparse product to pay for
            stacked = np.zeros((len(weights), 0))
        else:
            stacked = (self.stacked_t @ np.ascontiguousarray(weights.T)).T
        d, c = self.dense_cuts, self.sparse_cuts
        return {
            judge: p.evaluate(weights, dense[:, d[k] : d[k + 1]], stacked[:, c[k] : c[k + 1]])
            for k, (judge, p) in enumerate(self.prepared.items())
        }


def reason(metric: Metric, inputs: JudgeInputs) -> str:
    """Why `metric` is null for this judge and block, in words a reader can act on."""
    if not inputs.ok.any():
        return NO_PAIRS
    if inputs.level not in metric.levels:
        return metric.inapplicable
    return metric.undefined(inputs)
