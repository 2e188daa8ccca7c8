"""Selective judging with a guarantee: when may a judge's verdict stand without an expert?

Reference: Jung, Brahman, Choi, "Trust or Escalate: LLM Judges with Provable Guarantees for
Human Agreement", ICLR 2025 (arXiv 2407.18370), §2 (selective evaluation, fixed-sequence
testing) and §3 (cascaded selective evaluation); the authors' code is
github.com/jaehunjung1/cascaded-selective-evaluation (`cascaded_evaluation/util.py`).

A judge answers with a verdict and a confidence c ∈ [0, 1] (its token probability of the
chosen rating, or the share of a panel that agrees with it). A verdict is *trusted* when
c ≥ λ. The guarantee, for a threshold λ̂ chosen on n SME-labelled calibration items:

    P( P(judge disagrees with the humans | c ≥ λ̂) ≤ α ) ≥ 1 − δ

over the draw of the calibration items, assuming they and the future items are exchangeable
(drawn from the same distribution: same rubric, judge, prompt template and kind of item).

How λ̂ is chosen (fixed-sequence testing; Bauer 1991; "learn then test", Angelopoulos et al.
2021, §3): the candidate thresholds are a fixed grid, tested from the strictest down. At λ,
n_λ calibration items have c ≥ λ and k_λ of them disagree; H0(λ): R(λ) > α is rejected when
the exact binomial p-value P(Bin(n_λ, α) ≤ k_λ) ≤ δ (equivalently the one-sided
Clopper–Pearson upper bound of R(λ) at 1 − δ is ≤ α). The walk stops at the first λ not
rejected; λ̂ is the last rejected one. Each test is run at the full δ, yet the chance that any
rejected hypothesis is true is ≤ δ, because the order was fixed before the labels were seen.

Where qadi departs from the reference code (and why):
- When no threshold passes, the judge abstains on everything (`threshold: null`). The
  reference returns its strictest candidate instead, which trusts verdicts the test never
  certified.
- Where the walk starts. A walk that starts at the strictest threshold tests it on the few
  items confident enough to pass it; one chance disagreement there ends the walk, and the
  judge trusts almost nothing (measured in tests/stats/test_selective.py: a cheap judge that
  is right on 75% of items trusted 24–31% of them). The reference starts wherever 30 items
  pass. qadi picks its chains by the calibration size alone (`chain_plan`): from SPLIT_FROM
  items on, four chains, started where n0, 2·n0, 4·n0 and 8·n0 calibration items pass, each
  at δ/4 (Bonferroni: the chance that any chain rejects a true hypothesis stays ≤ δ),
  keeping the most lenient threshold any chain certified; the same judge then trusted
  47–85%. Below SPLIT_FROM, one chain at the full δ started at n0: the later chains would
  start where little is left to test, and the split of δ costs the first chain more than
  they win (tests/perf/selective_chains.py). n0 = ⌈log(δ') / log(1 − α)⌉ at a chain's level
  δ' is the fewest items on which a perfect record can pass, so no chain starts with a test
  that cannot reject. Since the plan depends on n, α and δ only, never on the labels, the
  guarantee holds for each plan and so for the rule. A larger `min_items` can be asked for.
- A cascade (a cheap judge first, escalating to stronger ones, then to SMEs) is calibrated as
  one selective evaluator: a single common threshold t applies to every stage's confidence,
  the first stage with c ≥ t decides, and one fixed-sequence walk over t tests the
  disagreement of the cascade's decided verdicts. The guarantee then covers the cascade's
  trusted verdicts as a whole with the full δ and needs no split of δ across stages: there is
  one family of hypotheses, ordered before the labels are seen. The reference instead
  calibrates each stage on the items the earlier stages passed on, reusing δ at every stage;
  that needs a union bound (δ/K per stage) and is still not exact, because which items reach
  stage k depends on the labels through the earlier thresholds. A common threshold assumes
  the stages' confidences are on a comparable scale (probabilities are); where they are not,
  calibrate the judges separately.
- Monotonicity: the guarantee does not need the disagreement rate to fall as confidence
  rises (fixed-sequence testing controls its error for any order). What monotonicity buys is
  coverage: a confidence band with more disagreement above a cleaner one ends the walk early.
  `monotonicity` reports the disagreement rate in confidence bins and where it rises, so a
  lead can see why a judge's coverage is low (heuristic confidences of small judges are
  known to be non-monotone).
- The guarantee is per calibration cell (judge or cascade, and stratum): each cell's
  statement holds with probability ≥ 1 − δ. Across S cells at once it holds with
  probability ≥ 1 − S·δ (Bonferroni), which the report states.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field
from scipy import stats

Agreement = Literal["exact", "within"]
GRID = np.round(np.linspace(0.0, 1.0, 1001), 3)  # candidate thresholds, strictest first below
CHAINS = 4  # the most chains: started at n0, 2·n0, 4·n0, 8·n0 trusted items, δ/4 each
SPLIT_FROM = 500  # calibration items from which δ is split over CHAINS chains (chain_plan)
METHOD = (
    "fixed-sequence testing over a fixed threshold grid, {chains}, exact binomial test of "
    "H0: P(disagree | confidence ≥ λ) > α (Jung et al. 2025, §2)"
)
CASCADE_METHOD = (
    "fixed-sequence testing over a threshold common to every stage, {chains}; the first "
    "stage whose confidence reaches it decides (qadi's exact variant of Jung et al. 2025, §3)"
)


class AgreementRule(BaseModel):
    """When a judge's verdict counts as agreeing with the humans (stated in every report
    and guarantee): `exact` for labels and ratings (the verdict is the humans' majority,
    any tied mode), `within` for interval scores (|verdict − humans' mean| ≤ tolerance)."""

    rule: Literal["exact", "within"]
    tolerance: float = Field(default=0.0, ge=0)


def verdicts_agree(a: float, b: float, rule: AgreementRule) -> bool:
    """Two verdicts agree under `rule` (panel agreement compares judges with each other)."""
    if rule.rule == "exact":
        return bool(np.isclose(a, b))
    return abs(a - b) <= rule.tolerance + 1e-9


class Bin(BaseModel):
    """Disagreement among calibration verdicts whose confidence falls in [low, high)."""

    low: float
    high: float
    n: int
    disagreement: float


class Monotonicity(BaseModel):
    """Does disagreement fall as confidence rises? (coverage, not validity, depends on it)"""

    bins: list[Bin]
    monotone: bool
    note: str | None = None


class Threshold(BaseModel):
    """The calibrated threshold of one judge or cascade in one stratum, and its guarantee."""

    method: str
    alpha: float = Field(description="target disagreement with the humans among trusted verdicts")
    delta: float = Field(description="chance the guarantee fails over the calibration draw")
    threshold: float | None = Field(description="trust when confidence ≥ this; null: abstain")
    n_calibration: int = Field(description="SME-labelled items with a verdict and a confidence")
    n_trusted: int = Field(description="calibration items trusted at the threshold")
    coverage: float | None = Field(description="share of calibration items trusted")
    agreement: float | None = Field(description="realised agreement of the trusted ones")
    agreement_lower_bound: float | None = Field(
        description="1 − Clopper-Pearson upper bound of disagreement at 1 − a chain's level "
        "(δ with one chain, δ/k with k)"
    )
    min_items: int = Field(description="fewest trusted items a candidate threshold needs")
    tested: int = Field(description="candidate thresholds tested before the walk stopped")
    stages: dict[str, int] = Field(default_factory=dict, description="trusted per stage")
    reason: str | None = None
    monotonicity: dict[str, Monotonicity] = Field(
        default_factory=dict, description="per stage: disagreement by confidence bin"
    )


def min_items(alpha: float, delta: float) -> int:
    """Fewest items on which a perfect record (no disagreement) rejects R > α at level δ:
    (1 − α)^n ≤ δ."""
    return max(1, math.ceil(math.log(delta) / math.log(1.0 - alpha) - 1e-12))


def disagreement_upper_bound(k: int, n: int, delta: float) -> float:
    """One-sided Clopper–Pearson upper bound of a disagreement rate at confidence 1 − δ."""
    if n == 0:
        return 1.0
    return 1.0 if k >= n else float(stats.beta.ppf(1.0 - delta, k + 1, n - k))


def deciding_stage(confidence: np.ndarray, t: float) -> np.ndarray:
    """Per item, the first stage whose confidence reaches t, or −1 when none does (escalated
    to the SMEs). `confidence` is items × stages; NaN (no confidence) never reaches t."""
    reached = np.nan_to_num(confidence, nan=-1.0) >= t
    first = reached.argmax(axis=1)
    return np.where(reached.any(axis=1), first, -1)


@dataclass(frozen=True)
class Chains:
    """The fixed-sequence chains one calibration runs: each starts at the strictest threshold
    with at least its start's trusted items and tests at `level` (δ split evenly over the
    chains, Bonferroni). Chosen from n, α and δ alone (`chain_plan`), never from the labels,
    so the guarantee holds for whichever plan a calibration set gets."""

    starts: tuple[int, ...]
    level: float

    def describe(self) -> str:
        """The plan as a method string names it (every stored guarantee carries it)."""
        starts = ", ".join(str(s) for s in self.starts)
        if len(self.starts) == 1:
            return f"1 chain at the full δ, started at {starts} trusted items"
        k = len(self.starts)
        return f"{k} chains at δ/{k} each (Bonferroni), started at {starts} trusted items"


def chain_plan(
    n: int, alpha: float, delta: float, requested_min_items: int | None = None
) -> Chains:
    """The chains for n calibration items (n, α and δ only: never the labels).

    Below SPLIT_FROM items, one chain at the full δ, started at the fewest items a perfect
    record can pass on. Split four ways, δ/4 raises that start (22 → 36 items at α = δ =
    0.1) and every test's bar, and the later chains start where few thresholds are left to
    test: at 400 items of the planted-confidence model the four chains trusted 0.040 of the
    items and abstained in 71% of runs, one chain 0.066 and 40%. From SPLIT_FROM on, CHAINS
    chains at δ/CHAINS, started at n0, 2·n0, 4·n0, 8·n0: a walk from the strictest
    threshold stops at the first chance disagreement among the surest verdicts, and a chain
    started further down still certifies the lenient thresholds (an honest judge at 1,000
    items: 0.166 with one chain, 0.242 with four). tests/perf/selective_chains.py measures
    both over n and confidence models; docs/explanation/selective-judging.md has the table.
    """
    count = CHAINS if n >= SPLIT_FROM else 1
    start = max(min_items(alpha, delta / count), requested_min_items or 0)
    return Chains(tuple(start * 2**i for i in range(count)), delta / count)


def calibrate_threshold(
    confidence: np.ndarray,
    agree: np.ndarray,
    alpha: float,
    delta: float,
    stage_names: list[str] | None = None,
    requested_min_items: int | None = None,
    chains: Chains | None = None,
) -> Threshold:
    """The threshold of a judge (one column) or a cascade (columns in escalation order).

    `confidence` and `agree` are items × stages: stage k's confidence in its verdict on item
    i and whether that verdict agrees with the humans (NaN where stage k gave no verdict).
    Every row is an SME-labelled calibration item. `chains` overrides `chain_plan` (to
    compare procedures; a stored guarantee names the plan it was certified with).
    """
    confidence, agree = _as_matrix(confidence), _as_matrix(agree)
    names = stage_names or [f"stage {k + 1}" for k in range(confidence.shape[1])]
    n = confidence.shape[0]
    plan = chains or chain_plan(n, alpha, delta, requested_min_items)
    floor = plan.starts[0]
    template = METHOD if confidence.shape[1] == 1 else CASCADE_METHOD
    method = template.format(chains=plan.describe())
    usable = ~np.isnan(confidence) & ~np.isnan(agree)
    confidence = np.where(usable, confidence, np.nan)
    grid = GRID[::-1]
    trusted, disagree = _counts(confidence, agree)
    reached, tested = -1, 0
    for start in plan.starts:
        last, steps = _walk(trusted, disagree, start, alpha, plan.level)
        reached, tested = max(reached, last), tested + steps
    last = None if reached < 0 else float(grid[reached])
    monotone = {
        name: monotonicity(confidence[:, k], agree[:, k]) for k, name in enumerate(names)
    }
    if last is None:
        reason = (
            f"no threshold passes: {n} calibration item(s), the test needs ≥ {floor} trusted "
            f"items with disagreement certified ≤ {alpha} at δ = {delta}"
        )
        return Threshold(
            method=method,
            alpha=alpha,
            delta=delta,
            threshold=None,
            n_calibration=n,
            n_trusted=0,
            coverage=0.0 if n else None,
            agreement=None,
            agreement_lower_bound=None,
            min_items=floor,
            tested=tested,
            reason=reason,
            monotonicity=monotone,
        )
    stage = deciding_stage(confidence, last)
    decided = stage >= 0
    n_t = int(decided.sum())
    k = int(n_t - agree[decided, stage[decided]].sum())
    return Threshold(
        method=method,
        alpha=alpha,
        delta=delta,
        threshold=last,
        n_calibration=n,
        n_trusted=n_t,
        coverage=n_t / n,
        agreement=1 - k / n_t,
        agreement_lower_bound=1 - disagreement_upper_bound(k, n_t, plan.level),
        min_items=floor,
        tested=tested,
        stages={name: int((stage == j).sum()) for j, name in enumerate(names)},
        monotonicity=monotone,
    )


def _walk(
    trusted: np.ndarray, disagree: np.ndarray, start: int, alpha: float, level: float
) -> tuple[int, int]:
    """One fixed-sequence chain from the strictest threshold with ≥ `start` trusted items:
    the grid index of its last rejection (−1 if none) and how many tests it ran."""
    testable = np.flatnonzero(trusted >= start)
    passed = stats.binom.cdf(disagree[testable], trusted[testable], alpha) <= level
    stop = len(passed) if passed.all() else int(np.argmin(passed))
    return (-1 if stop == 0 else int(testable[stop - 1])), min(stop + 1, len(passed))


def _counts(confidence: np.ndarray, agree: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Trusted items and disagreements among them at every threshold of GRID, strictest first.

    Stage k decides item i for the thresholds t in (P, C]: C is its confidence and P the
    highest confidence of the stages before it (which would otherwise have decided). Each
    such interval adds one trusted item (and its disagreement) to a difference array over
    the grid, so the counts cost O(items × stages + grid) rather than a pass per threshold.
    """
    conf = np.nan_to_num(confidence, nan=-np.inf)
    miss = np.nan_to_num(1.0 - agree, nan=0.0)
    earlier = np.maximum.accumulate(
        np.c_[np.full(conf.shape[0], -np.inf), conf[:, :-1]], axis=1
    )
    decides = conf > earlier
    low = np.searchsorted(GRID, earlier[decides], side="right")
    high = np.searchsorted(GRID, conf[decides], side="right")
    size = len(GRID) + 1
    trusted = np.bincount(low, minlength=size) - np.bincount(high, minlength=size)
    weights = miss[decides]
    disagree = np.bincount(low, weights, size) - np.bincount(high, weights, size)
    trusted, disagree = np.cumsum(trusted)[:-1], np.rint(np.cumsum(disagree)[:-1])
    return trusted[::-1], disagree[::-1].astype(np.int64)


def monotonicity(confidence: np.ndarray, agree: np.ndarray, bins: int = 5) -> Monotonicity:
    """Disagreement of one judge's verdicts by confidence quantile bin; a rise of more than
    two standard errors between neighbouring bins is reported as non-monotone."""
    ok = ~np.isnan(confidence) & ~np.isnan(agree)
    conf, hit = confidence[ok], agree[ok]
    if conf.size < 2 * bins:
        return Monotonicity(bins=[], monotone=True, note="too few verdicts to bin")
    edges = np.unique(np.quantile(conf, np.linspace(0, 1, bins + 1)))
    found: list[Bin] = []
    for low, high in zip(edges[:-1], edges[1:], strict=True):
        inside = (conf >= low) & ((conf < high) | (high == edges[-1]))
        if inside.any():
            rate = float(1 - hit[inside].mean())
            n = int(inside.sum())
            found.append(Bin(low=float(low), high=float(high), n=n, disagreement=rate))
    neighbours = zip(found[:-1], found[1:], strict=True)
    rises = [(a, b) for a, b in neighbours if b.disagreement - a.disagreement > 2 * _se(a, b)]
    note = None
    if rises:
        where = ", ".join(f"[{b.low:.2f}, {b.high:.2f})" for _, b in rises)
        note = (
            f"disagreement rises with confidence at {where}: the guarantee still holds, but "
            "the threshold walk may stop early and trust fewer verdicts"
        )
    return Monotonicity(bins=found, monotone=not rises, note=note)


def agreement_exact(verdict: np.ndarray, humans: np.ndarray) -> np.ndarray:
    """Agreement for labels and ordinal ratings: the verdict equals the humans' majority
    (any of the tied modes). `humans` is items × raters with NaN where a rater is missing.
    Computed over the labelled items only, all at once: a rater's mark is a mode when no
    other value was given more often on the item (NaN equals nothing, so it counts 0)."""
    out = np.full(verdict.shape, np.nan)
    rows = np.flatnonzero(~np.isnan(verdict) & ~np.isnan(humans).all(axis=1))
    marks = humans[rows]
    given = (marks[:, :, None] == marks[:, None, :]).sum(axis=2)
    modes = given == given.max(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        out[rows] = (modes & np.isclose(marks, verdict[rows, None])).any(axis=1)
    return out


def agreement_within(verdict: np.ndarray, reference: np.ndarray, tolerance: float) -> np.ndarray:
    """Agreement for interval scores (e.g. 0–100): |verdict − human reference| ≤ tolerance."""
    with np.errstate(invalid="ignore"):
        hit = (np.abs(verdict - reference) <= tolerance + 1e-9).astype(float)
    return np.where(np.isnan(verdict) | np.isnan(reference), np.nan, hit)


def _as_matrix(values: np.ndarray) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    return array[:, None] if array.ndim == 1 else array


def _se(a: Bin, b: Bin) -> float:
    pooled = (a.disagreement * a.n + b.disagreement * b.n) / (a.n + b.n)
    return math.sqrt(max(pooled * (1 - pooled), 1e-12) * (1 / a.n + 1 / b.n))
