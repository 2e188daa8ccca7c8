"""The bootstrap over items (or clusters of items), as weight matrices, and its intervals.

A resample is represented by how often each item was drawn, so metrics become weighted
sums; resamples are produced in chunks to bound memory (at most `CHUNK_CELLS` resamples ×
items a chunk, whatever the items: 200 resamples of 165k labelled items were a 0.26 GB array,
several at once, issue 39). How the resamples are chunked does not change them: numpy's
`Generator.integers` draws the same stream in one call or many. The
leave-one-unit-out jackknife is the same kind of weight matrix (zero for the unit left out).
Which interval a metric gets is decided in `calibration.intervals`.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from scipy import stats

CHUNK = 250  # resamples a chunk at most
CHUNK_CELLS = 1 << 22  # resamples × items a chunk at most: 32 MB a float64 array


def chunk_rows(n_items: int) -> int:
    """Resamples (or jackknife rows) a chunk holds over `n_items` items: `CHUNK` up to ~16k
    items, fewer above, at least one."""
    return max(1, min(CHUNK, CHUNK_CELLS // max(n_items, 1)))


def resample_weights(
    rng: np.random.Generator, n_items: int, resamples: int, clusters: np.ndarray | None = None
) -> Iterator[np.ndarray]:
    """Yield (chunk, n_items) draw counts; with `clusters` (a cluster code per item) whole
    clusters are drawn with replacement and each item inherits its cluster's count."""
    n_units = n_items if clusters is None else int(clusters.max()) + 1
    rows = chunk_rows(n_items)  # a chunk is (rows, n_items) weights, clustered or not
    done = 0
    while done < resamples:
        size = min(rows, resamples - done)
        draws = rng.integers(0, n_units, size=(size, n_units))
        draws += (np.arange(size) * n_units)[:, None]  # in place: one array less
        counts = np.bincount(draws.ravel(), minlength=size * n_units).reshape(size, n_units)
        del draws
        weights = counts if clusters is None else counts[:, clusters]
        del counts
        yield weights.astype(np.float64)
        done += size


def percentile_interval(samples: np.ndarray, confidence: float = 0.95) -> list[float] | None:
    """The percentile interval of the finite resample values, or None if there are none."""
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return None
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return [float(low), float(high)]


def bca_interval(
    samples: np.ndarray, point: float, jackknife: np.ndarray, confidence: float = 0.95
) -> list[float] | None:
    """Efron's BCa interval: percentiles of the bootstrap shifted by the bias correction z0
    (share of resamples below the point, ties counted half) and the acceleration a from the
    jackknife skewness; None when the jackknife or the resamples cannot define them."""
    finite = samples[np.isfinite(samples)]
    if finite.size == 0 or not np.all(np.isfinite(jackknife)) or jackknife.size < 3:
        return None
    below = (np.sum(finite < point) + 0.5 * np.sum(finite == point)) / finite.size
    if below <= 0 or below >= 1:
        return None
    z0 = stats.norm.ppf(below)
    spread = jackknife.mean() - jackknife
    denominator = 6 * float((spread**2).sum()) ** 1.5
    acceleration = float((spread**3).sum()) / denominator if denominator > 0 else 0.0
    tails = stats.norm.ppf([(1 - confidence) / 2, (1 + confidence) / 2])
    shifted = z0 + (z0 + tails) / (1 - acceleration * (z0 + tails))
    low, high = np.quantile(finite, stats.norm.cdf(shifted))
    return [float(low), float(high)]


def bootstrap_se(samples: np.ndarray) -> float | None:
    finite = samples[np.isfinite(samples)]
    return float(finite.std(ddof=1)) if finite.size >= 2 else None


def jackknife_weights(
    units: np.ndarray, left_out: np.ndarray | None = None
) -> Iterator[np.ndarray]:
    """Yield (chunk, n_items) weights of the leave-one-unit-out jackknife: row k is 1 for
    every item but those of unit `left_out[k]` (`units`: a unit code 0..U−1 per item;
    `left_out`: the units to leave out in turn, all of them by default)."""
    if left_out is None:
        left_out = np.arange(int(units.max()) + 1 if units.size else 0)
    rows = chunk_rows(len(units))
    for start in range(0, len(left_out), rows):
        chunk = left_out[start : start + rows]
        yield (units[None, :] != chunk[:, None]).astype(np.float64)
