"""The SMEs' agreement and leniency over the workbench's overlap items
(calibration/sme_agreement.py): the leniency interval covers an SME's planted leniency at 10
and 20 overlap items, and with few prompts; no SME of six unbiased ones is flagged more than
5% of the time; α's interval covers the α of the generating model at 30 and 60 items.

Each SME grades clip(round(truth + her offset + her prompt effect + N(0, 0.7²)), 1, 5) on the
1–5 scale (truth uniform on 1–5), or clip(round(truth + offset + N(0, 12²)), 0, 100) on a
0–100 scale (truth 100·Beta(5, 2)). The truths — each pair's mean difference, the population
α — are measured on a million (α: 400,000) items with plain numpy and the `krippendorff`
package, never qadi's code.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations

import krippendorff
import numpy as np
import pytest

from calibration.sme_agreement import OverlapLabel, sme_agreement
from tests.stats.conftest import Reps, check_rate, record

NOISE = 0.7
OFFSETS = {"aya": 0.6, "bilal": 0.0, "carim": -0.3}  # planted leniency on the 1–5 scale


@dataclass(frozen=True)
class Scale:
    """How an SME's score is made from the item's truth on one scale."""

    low: int
    high: int
    noise: float

    def truth(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.high == 5:
            return rng.integers(1, 6, n).astype(float)
        return 100 * rng.beta(5, 2, n)

    def score(self, rng, truth: np.ndarray, offset) -> np.ndarray:
        noisy = truth + offset + rng.normal(0, self.noise, truth.shape)
        return np.clip(np.round(noisy), self.low, self.high)


FIVE = Scale(1, 5, NOISE)
HUNDRED = Scale(0, 100, 12.0)


@lru_cache(maxsize=16)
def pair_difference(a: float, b: float, prompt_sd: float = 0.0, n: int = 1_000_000) -> float:
    """E[x_a − x_b] on one item for SMEs with offsets a and b, each with her own prompt
    effect N(0, prompt_sd²) (prompts drawn independently: one per item here)."""
    rng = np.random.default_rng(2024)
    truth = FIVE.truth(rng, n)
    x = FIVE.score(rng, truth, a + rng.normal(0, prompt_sd, n))
    y = FIVE.score(rng, truth, b + rng.normal(0, prompt_sd, n))
    return float((x - y).mean())


def leniency_truth(rater: str, prompt_sd: float = 0.0) -> float:
    """Her expected mean difference: half her items with each of the two others."""
    others = [o for o in OFFSETS if o != rater]
    return float(np.mean([pair_difference(OFFSETS[rater], OFFSETS[o], prompt_sd)
                          for o in others]))  # fmt: skip


def round_robin(
    rng: np.random.Generator, per_pair: int, prompts: int = 0, prompt_sd: float = 0.0
) -> tuple[list[OverlapLabel], dict[str, str] | None]:
    """Three SMEs, `per_pair` items for each pair (each SME 2·per_pair items); with `prompts`
    the items of every pair are spread evenly over the prompts, and each SME has an effect
    N(0, prompt_sd²) per prompt, so her differences within a prompt are correlated."""
    names = list(OFFSETS)
    effect = rng.normal(0, prompt_sd, (len(names), max(prompts, 1)))
    labels, clusters = [], {}
    for first, second in combinations(range(len(names)), 2):
        truth = FIVE.truth(rng, per_pair)
        prompt = np.arange(per_pair) % prompts if prompts else np.zeros(per_pair, dtype=int)
        for k in (first, second):
            scores = FIVE.score(rng, truth, OFFSETS[names[k]] + effect[k, prompt])
            labels += [OverlapLabel(item_id=f"{first}{second}-{i}", rater=names[k], score=s)
                       for i, s in enumerate(scores)]  # fmt: skip
        clusters.update({f"{first}{second}-{i}": f"p{prompt[i]}" for i in range(per_pair)})
    return labels, (clusters if prompts else None)


def covered(result, truth: dict[str, float], hits: dict[str, int]) -> None:
    for row in result.raters:
        ci = row.ci
        hits[row.rater] += ci is not None and ci[0] <= truth[row.rater] <= ci[1]


@pytest.mark.parametrize("n", [10, 20])
def test_leniency_interval_covers_a_planted_offset_at_small_n(n):
    """10 and 20 overlap items per SME (5 and 10 with each peer): value ± t(n − 1)·s/√n."""
    reps = Reps(fast=400, long=4000).n
    truth = {name: leniency_truth(name) for name in OFFSETS}
    rng = np.random.default_rng(700 + n)
    hits = dict.fromkeys(OFFSETS, 0)
    for _ in range(reps):
        labels, _ = round_robin(rng, n // 2)
        covered(sme_agreement(labels, "ordinal", 1, 5, resamples=0), truth, hits)
    for name, offset in OFFSETS.items():
        check_rate("95% t interval covers an SME's leniency", hits[name], reps, 0.95,
                   "at_least", f"{n} items per SME, offset {offset:+g}")  # fmt: skip


@pytest.mark.parametrize("prompts", [5, 10])
def test_leniency_interval_covers_with_few_prompts(prompts):
    """Items in few prompts with an SME × prompt effect N(0, 0.5²): CR1 with t(G − 1); each
    SME has 4 items per prompt (2 with each peer)."""
    reps = Reps(fast=400, long=4000).n
    truth = {name: leniency_truth(name, 0.5) for name in OFFSETS}
    rng = np.random.default_rng(750 + prompts)
    hits = dict.fromkeys(OFFSETS, 0)
    for _ in range(reps):
        labels, clusters = round_robin(rng, 2 * prompts, prompts, 0.5)
        result = sme_agreement(labels, "ordinal", 1, 5, clusters, resamples=0)
        assert {row.method for row in result.raters} <= {"t_cr1", None}
        covered(result, truth, hits)
    for name, offset in OFFSETS.items():
        check_rate("95% CR1 t interval covers an SME's leniency", hits[name], reps, 0.95,
                   "at_least", f"{prompts} prompts, SME × prompt sd 0.5, offset {offset:+g}")  # fmt: skip


def random_pairs(rng, smes: int, items: int, offsets: np.ndarray) -> list[OverlapLabel]:
    """`items` overlap items, each graded by a pair of SMEs drawn at random."""
    pairs = list(combinations(range(smes), 2))
    chosen = rng.integers(0, len(pairs), items)
    truth = FIVE.truth(rng, items)
    labels = []
    for i, p in enumerate(chosen):
        for k in pairs[p]:
            score = FIVE.score(rng, truth[i : i + 1], offsets[k])[0]
            labels.append(OverlapLabel(item_id=f"i{i}", rater=f"sme{k}", score=score))
    return labels


@pytest.mark.parametrize(("smes", "items"), [(6, 60), (2, 20)])
def test_no_sme_of_an_unbiased_team_is_flagged(smes, items):
    """Every SME unbiased: the chance that any is flagged lenient or harsh, Holm across the
    SMEs (six SMEs with about 20 items each; two SMEs, one question counted once)."""
    reps = Reps(fast=600, long=6000).n
    rng = np.random.default_rng(800 + smes)
    any_flag = 0
    for _ in range(reps):
        result = sme_agreement(random_pairs(rng, smes, items, np.zeros(smes)), "ordinal", 1, 5,
                               resamples=0)  # fmt: skip
        any_flag += any(row.flagged for row in result.raters)
    check_rate("any SME of an unbiased team flagged lenient/harsh", any_flag, reps, 0.05,
               "at_most", f"{smes} SMEs, {items} overlap items in random pairs")  # fmt: skip


def test_a_lenient_sme_is_found_among_six():
    """One SME a point above the others (clipping at 5 leaves her about 0.7 above them):
    flagged lenient in at least 80% of teams with 120 overlap items (about 40 each); the
    power with 60 items (about 20 each) is recorded, not targeted."""
    reps = Reps(fast=200, long=2000).n
    rng = np.random.default_rng(850)
    offsets = np.array([1.0, 0, 0, 0, 0, 0])
    for items in (60, 120):
        found = 0
        for _ in range(reps):
            result = sme_agreement(random_pairs(rng, 6, items, offsets), "ordinal", 1, 5,
                                   resamples=0)  # fmt: skip
            found += {r.rater: r.flagged for r in result.raters}["sme0"] == "lenient"
        setting = f"6 SMEs, {items} overlap items in random pairs"
        if items == 60:
            record("an SME 1 point lenient is flagged lenient (power)", found / reps, setting)
        else:
            check_rate("an SME 1 point lenient is flagged lenient", found, reps, 0.8, "at_least",
                       setting)  # fmt: skip


def two_smes(rng, scale: Scale, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Two SMEs on n items, the second 0.3 points (1–5) or 5 points (0–100) more lenient."""
    truth = scale.truth(rng, n)
    offset = 0.3 if scale.high == 5 else 5.0
    return scale.score(rng, truth, 0.0), scale.score(rng, truth, offset)


def interval_alpha(first: np.ndarray, second: np.ndarray) -> float:
    """Interval α of two coders on every unit, from its definition (Krippendorff 2011):
    D_o = mean (x − y)², D_e = 2·Var(all 2N values, ddof 1), α = 1 − D_o / D_e."""
    pooled = np.concatenate([first, second])
    return float(1 - np.mean((first - second) ** 2) / (2 * pooled.var(ddof=1)))


@lru_cache(maxsize=4)
def population_alpha(scale: Scale, level: str, n: int = 400_000) -> float:
    """α of the generating model on 400,000 items: the krippendorff package from the items'
    value counts (ordinal), the definition above (interval: the package's (N, V, V) array of
    101 values would take 30 GB; the definition is checked against it on 2,000 items)."""
    first, second = two_smes(np.random.default_rng(99), scale, n)
    domain = np.arange(scale.low, scale.high + 1)
    if level == "interval":
        small = krippendorff.alpha(reliability_data=[first[:2000], second[:2000]],
                                   level_of_measurement="interval")  # fmt: skip
        assert interval_alpha(first[:2000], second[:2000]) == pytest.approx(small, abs=1e-9)
        return interval_alpha(first, second)
    counts = (first[:, None] == domain).astype(float) + (second[:, None] == domain)
    return float(krippendorff.alpha(value_counts=counts, value_domain=domain,
                                     level_of_measurement=level))  # fmt: skip


@pytest.mark.parametrize(
    ("scale", "level", "n"),
    [(FIVE, "ordinal", 30), (FIVE, "ordinal", 60), (HUNDRED, "interval", 30),
     (HUNDRED, "interval", 60)],
)  # fmt: skip
def test_alpha_interval_covers_the_models_alpha(scale, level, n):
    """The report's rule for α (jackknife on Fisher's z, BCa where it cannot be formed) on
    two SMEs' overlap items."""
    reps = Reps(fast=400, long=4000).n
    truth = population_alpha(scale, level)
    rng = np.random.default_rng(900 + n + scale.high)
    hits = 0
    methods = set()
    for _ in range(reps):
        first, second = two_smes(rng, scale, n)
        labels = [OverlapLabel(item_id=f"i{i}", rater=rater, score=s)
                  for rater, column in (("a", first), ("b", second))
                  for i, s in enumerate(column)]  # fmt: skip
        result = sme_agreement(labels, level, scale.low, scale.high, resamples=1000,
                               seed=int(rng.integers(2**31)))  # fmt: skip
        ci = result.alpha.ci
        hits += ci is not None and ci[0] <= truth <= ci[1]
        methods.add(result.alpha.method)
    assert methods <= {"jackknife_z", "bca"}
    check_rate("95% interval covers the SMEs' α", hits, reps, 0.95, "at_least",
               f"{level} {scale.low}–{scale.high}, n = {n}, α = {truth:.2f}")  # fmt: skip
