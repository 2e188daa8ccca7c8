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


RATIO_UNITS = ("n", "mad", "signed_error")


def report_of(
    table: GradeTable,
    options,
    rng: np.random.Generator,
    level: str = "ordinal",
    names: tuple[str, ...] = RATIO_UNITS,
    values: np.ndarray | None = None,
) -> dict:
    """The judges' blocks of a report (overall and per stratum `s`), as `calibrate` writes
    them, from qadi's own `block_metrics` (by default MAD and signed error on 1–5: what drift
    and the bias flags read), without the alt-test and the renderings a full report also
    pays for."""
    from calibration.blocks import block_metrics
    from calibration.metrics import METRIC_UNITS

    metrics = [m for m in METRIC_UNITS if m.name in names]
    values = np.arange(1.0, 6.0) if values is None else values
    blocks = {"overall": block_metrics(table, metrics, level, values, options, rng)}
    for value in table.attribute_values("s"):
        sub = table.subset(table.mask("s", value))
        blocks[f"s={value}"] = block_metrics(sub, metrics, level, values, options, rng)
    return {
        "scale": {"level": level},
        "options": {"confidence": options.confidence},
        "judges": {
            judge: {
                "overall": blocks["overall"][judge],
                "strata": {k: b[judge] for k, b in blocks.items() if k != "overall"},
            }
            for judge in table.judges
        },
    }


def labelled(
    rng: np.random.Generator,
    reps: int,
    n: int,
    humans: int,
    prevalence: np.ndarray,
    human_accuracy: float,
    judge_accuracy: float | np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(judge (reps, n), humans (reps, n, m)) label codes: each rater gives the true label
    with its accuracy, else one of the other labels at random."""
    levels = len(prevalence)
    truth = rng.choice(levels, size=(reps, n), p=prevalence)

    def rate(accuracy, shape, reference):
        other = (reference + rng.integers(1, levels, shape)) % levels
        return np.where(rng.random(shape) < accuracy, reference, other).astype(float)

    human = rate(human_accuracy, (reps, n, humans), truth[..., None])
    return rate(judge_accuracy, (reps, n), truth), human


def advantage_gap(judge: np.ndarray, humans: np.ndarray) -> float:
    """d̄ = P(W_h) − P(W_f) against the first annotator, accuracy scoring, written out in
    numpy (the alt-test's null is d̄ ≥ ε)."""
    others = humans[..., 1:]
    judge_score = (others == judge[..., None]).mean(-1)
    human_score = (others == humans[..., :1]).mean(-1)
    return float((human_score >= judge_score).mean() - (judge_score >= human_score).mean())


@lru_cache(maxsize=64)
def boundary_accuracy(levels: int, humans: int, human_accuracy: float, epsilon: float) -> float:
    """The judge accuracy at which d̄ = ε exactly: the least favourable judge of the null
    ('worse than the annotators' by the test's own margin), by bisection on 200,000 items."""
    low, high = 0.0, 1.0
    prevalence = np.full(levels, 1 / levels)
    for _ in range(20):
        middle = (low + high) / 2
        rng = np.random.default_rng(99)
        judge, human = labelled(rng, 1, 200_000, humans, prevalence, human_accuracy, middle)
        if advantage_gap(judge, human) > epsilon:
            low = middle
        else:
            high = middle
    return (low + high) / 2
