"""Data with known truth for the simulation tests: items on a 1–5 scale graded by humans and
judges, as the `GradeTable` every calibration statistic reads, plus labels for the alt-test.

The truth of a metric (the population MAD of a judge, its signed error) is measured here on
a very large sample drawn the same way — plain numpy on the generating model, never qadi's
code — so a test compares qadi's interval or decision with a number it did not compute.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from calibration.table import GradeTable


@dataclass(frozen=True)
class Judge:
    """A judge on the 1–5 scale: truth + bias + N(0, noise), rounded and clipped."""

    bias: float = 0.0
    noise: float = 0.9


def scores(rng: np.random.Generator, truth: np.ndarray, bias, noise: float) -> np.ndarray:
    return np.clip(np.round(truth + bias + rng.normal(0, noise, truth.shape)), 1, 5)


def graded(
    rng: np.random.Generator,
    n: int,
    judges: dict[str, Judge],
    humans: int = 3,
    human_noise: float = 0.7,
    strata: int = 0,
    clusters: int = 0,
    cluster_sd: float = 0.0,
) -> GradeTable:
    """n items; `strata` > 0 adds attribute `s` (s0, s1, …, in equal shares); `clusters` > 0
    adds attribute `c` with a judge offset N(0, cluster_sd) shared by the items of a cluster."""
    truth = rng.integers(1, 6, n).astype(float)
    human = scores(rng, truth[:, None].repeat(humans, 1), 0.0, human_noise)
    cluster = np.arange(n) % clusters if clusters else np.zeros(n, dtype=int)
    offset = rng.normal(0, cluster_sd, max(clusters, 1))[cluster] if clusters else 0.0
    judged = np.column_stack(
        [scores(rng, truth, j.bias + offset, j.noise) for j in judges.values()]
    )
    attributes = [
        {**({"s": f"s{i % strata}"} if strata else {}), **({"c": f"c{cluster[i]}"} if clusters else {})}
        for i in range(n)
    ]
    return GradeTable(
        items=[f"i{i}" for i in range(n)],
        humans=[f"h{k}" for k in range(humans)],
        judges=list(judges),
        human_scores=human,
        judge_scores=judged,
        attributes=attributes,
    )


@lru_cache(maxsize=32)
def population(
    judge: Judge, human_noise: float = 0.7, humans: int = 3, cluster_sd: float = 0.0,
    n: int = 1_000_000,
) -> tuple[float, float]:
    """(MAD, signed error) of a judge against the mean of the humans, on a million items (with
    the clusters' judge offsets drawn per item: clusters are drawn independently)."""
    rng = np.random.default_rng(12345)
    truth = rng.integers(1, 6, n).astype(float)
    reference = scores(rng, truth[:, None].repeat(humans, 1), 0.0, human_noise).mean(1)
    judged = scores(rng, truth, judge.bias + rng.normal(0, cluster_sd, n), judge.noise)
    return float(np.abs(judged - reference).mean()), float((judged - reference).mean())
