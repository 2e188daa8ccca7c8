"""Percentile bootstrap over items (or clusters of items), as weight matrices.

A resample is represented by how often each item was drawn, so metrics become weighted
sums; resamples are produced in chunks to bound memory (chunk × items floats).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

CHUNK = 250


def resample_weights(
    rng: np.random.Generator, n_items: int, resamples: int, clusters: np.ndarray | None = None
) -> Iterator[np.ndarray]:
    """Yield (chunk, n_items) draw counts; with `clusters` (a cluster code per item) whole
    clusters are drawn with replacement and each item inherits its cluster's count."""
    n_units = n_items if clusters is None else int(clusters.max()) + 1
    done = 0
    while done < resamples:
        size = min(CHUNK, resamples - done)
        draws = rng.integers(0, n_units, size=(size, n_units))
        offsets = draws + (np.arange(size) * n_units)[:, None]
        counts = np.bincount(offsets.ravel(), minlength=size * n_units).reshape(size, n_units)
        weights = counts if clusters is None else counts[:, clusters]
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
