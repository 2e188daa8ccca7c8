"""How well a confidence separates agreement from disagreement, with known truth
(calibration/confidence_quality.py): the AUROC interval covers the true AUROC at its level at
small n, with ties and near perfect separation; the ECE of a calibrated judge sits at its
stated reference and an overconfident judge's does not.

Binormal planted confidence: a verdict the SMEs agree with has X ~ N(μ, 1), one they do not
X ~ N(0, 1), the confidence is Φ(X) (a monotone map, so the AUROC is Φ(μ/√2) exactly).
Repetitions in which the SMEs agree with every verdict or none have no AUROC and are not
counted (the report says so instead); at 20 items and 70% agreement they are 3 in 2000.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from calibration.confidence_quality import auroc_interval, separation
from tests.stats.conftest import Reps, check_rate, check_value

LEVEL = 0.95
AGREE = 0.7


def binormal(rng, n: int, mu: float) -> tuple[np.ndarray, np.ndarray]:
    agree = rng.random(n) < AGREE
    return stats.norm.cdf(rng.normal(size=n) + mu * agree), agree


def tied(rng, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Three confidence values (a panel of two judges, or a sharp token distribution)."""
    level = rng.choice(3, size=n, p=TIED_SHARE)
    return TIED_LEVELS[level], rng.random(n) < TIED_AGREE[level]


TIED_LEVELS, TIED_SHARE, TIED_AGREE = (np.array([0.4, 0.7, 1.0]), np.array([0.2, 0.3, 0.5]),
                                       np.array([0.4, 0.6, 0.9]))  # fmt: skip


def tied_truth() -> float:
    pos = TIED_SHARE * TIED_AGREE / (TIED_SHARE * TIED_AGREE).sum()
    neg = TIED_SHARE * (1 - TIED_AGREE) / (TIED_SHARE * (1 - TIED_AGREE)).sum()
    return float(sum(pos[i] * neg[j] * (1.0 if i > j else 0.5 if i == j else 0.0)
                     for i in range(3) for j in range(3)))  # fmt: skip


def coverage(draw, truth: float, reps: int, seed: int) -> tuple[int, int]:
    rng = np.random.default_rng(seed)
    hits = counted = 0
    for _ in range(reps):
        confidence, agree = draw(rng)
        if agree.all() or not agree.any():
            continue
        low, high = auroc_interval(confidence, agree, LEVEL)
        counted += 1
        hits += low <= truth <= high
    return hits, counted


@pytest.mark.parametrize(("n", "mu"), [(20, 1.0), (20, 3.0), (40, 2.0), (150, 1.0)])
def test_the_auroc_interval_covers_at_small_n_and_near_perfect_separation(n, mu):
    truth = float(stats.norm.cdf(mu / np.sqrt(2)))
    hits, counted = coverage(lambda rng: binormal(rng, n, mu), truth, Reps(400, 4000).n, n)
    check_rate("confidence: AUROC interval covers", hits, counted, LEVEL, "at_least",
               f"binormal, AUROC {truth:.2f}, n={n}")  # fmt: skip


def test_the_auroc_interval_covers_with_tied_confidences():
    hits, counted = coverage(lambda rng: tied(rng, 30), tied_truth(), Reps(400, 4000).n, 7)
    check_rate("confidence: AUROC interval covers", hits, counted, LEVEL, "at_least",
               f"3 tied values, AUROC {tied_truth():.2f}, n=30")  # fmt: skip


def test_a_calibrated_judges_ece_sits_at_its_reference_and_an_overconfident_ones_above():
    rng = np.random.default_rng(11)
    reps, n = Reps(200, 2000).n, 60
    gap, above = [], 0
    for _ in range(reps):
        confidence = rng.beta(5, 2, n)
        honest = rng.random(n) < confidence  # agrees with probability exactly its confidence
        found = separation("j", "token", confidence, honest.astype(float), LEVEL)
        gap.append(found.ece - found.ece_calibrated_reference)
        overconfident = rng.random(n) < confidence - 0.25
        found = separation("j", "token", confidence, overconfident.astype(float), LEVEL)
        above += found.ece > found.ece_calibrated_reference
    # the reference is the calibrated ECE's mean: the honest judge's gap averages to 0
    check_value("confidence: calibrated ECE − reference (mean)", float(np.mean(gap)),
                3 * float(np.std(gap)) / np.sqrt(reps), f"Beta(5, 2) confidence, n={n}")  # fmt: skip
    check_rate("confidence: overconfidence shows above the reference", above, reps, 0.95,
               "at_least", f"agreement = confidence − 0.25, n={n}")  # fmt: skip
