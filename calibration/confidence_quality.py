"""How well a judge's confidence tells its agreements with the SMEs from its disagreements.

A selective threshold (calibration/selective.py) is only as useful as the confidence it
thresholds: a confidence that does not separate the verdicts the SMEs agree with from those
they do not buys no coverage, however many labels there are. Per judge and confidence source
the report shows:

- AUROC: the probability that a verdict the SMEs agree with has a higher confidence than one
  they disagree with (ties count one half; the Mann–Whitney statistic). 0.5 is no separation.
  Its interval is Newcombe's Method 5 (Newcombe 2006, Stat Med 25:559–573), a score-type
  interval on the Hanley–McNeil variance: it stays inside [0, 1] and, unlike a Wald interval
  on DeLong's variance, exists at an AUROC of 1, which a good judge on few disagreements
  often shows (tests/stats/test_confidence_quality.py: coverage at 20 items). Assumes
  independent items.
- ECE, the expected calibration error: the item-weighted mean gap |mean confidence − share
  agreeing| over equal-width confidence bins. The confidence is the judge's probability of
  its own verdict, the SMEs' agreement another event, so ECE says whether that probability can
  be read as a chance of agreeing with the experts. ECE is biased upward at small n (a bin's
  share of agreement is noisy even when the confidence is exact), so beside it stands the ECE
  a perfectly calibrated judge would show on the same confidences (Monte Carlo, seeded).
- The reliability diagram: per bin, the mean confidence against the share agreeing.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, Field
from scipy import optimize, stats

ECE_BINS = 10
ECE_REFERENCE_DRAWS = 200
AUROC_METHOD = "Mann-Whitney AUROC (ties one half); Newcombe's (2006) Method 5 interval"
ECE_METHOD = (
    f"{ECE_BINS} equal-width confidence bins, item-weighted mean |confidence − agreement|; "
    f"reference: the mean ECE of a perfectly calibrated judge on the same confidences "
    f"({ECE_REFERENCE_DRAWS} seeded draws)"
)


class ReliabilityBin(BaseModel):
    low: float
    high: float
    n: int
    mean_confidence: float
    agreement: float = Field(description="share of the bin's verdicts the SMEs agree with")


class Separation(BaseModel):
    """One judge's confidence, judged by the SMEs' agreement with its verdicts."""

    evaluator: str
    source: str = Field(description="where the confidence comes from (token, panel, ...)")
    n: int = Field(description="labelled items with a confidence and a known agreement")
    n_agree: int
    auroc: float | None = None
    auroc_interval: tuple[float, float] | None = None
    ece: float | None = None
    ece_calibrated_reference: float | None = Field(
        default=None, description="the mean ECE of a perfectly calibrated judge here"
    )
    bins: list[ReliabilityBin] = Field(default_factory=list)
    note: str | None = None


def separation(
    evaluator: str, source: str, confidence: np.ndarray, agree: np.ndarray, level: float
) -> Separation:
    """The judge's AUROC with its `level` interval, its ECE and reliability bins, over the
    items where both the confidence and the agreement are known."""
    known = np.isfinite(confidence) & np.isfinite(agree)
    conf, hit = confidence[known], agree[known].astype(bool)
    n, n_agree = int(conf.size), int(hit.sum())
    if n == 0:
        return Separation(evaluator=evaluator, source=source, n=0, n_agree=0,
                          note="no labelled item with a confidence")  # fmt: skip
    bins = reliability_bins(conf, hit)
    out = Separation(
        evaluator=evaluator,
        source=source,
        n=n,
        n_agree=n_agree,
        ece=round(ece(bins, n), 6),
        ece_calibrated_reference=round(calibrated_ece(conf), 6),
        bins=bins,
    )
    if n_agree in (0, n):
        what = "agreed with" if n_agree == n else "disagreed with"
        return out.model_copy(update={"note": f"the SMEs {what} every verdict: no AUROC"})
    interval = auroc_interval(conf, hit, level)
    return out.model_copy(update={"auroc": round(auroc(conf, hit), 6), "auroc_interval": interval})


def auroc(confidence: np.ndarray, agree: np.ndarray) -> float:
    """P(confidence of an agreed verdict > that of a disputed one), ties one half."""
    ranks = stats.rankdata(confidence)
    n1, n0 = int(agree.sum()), int((~agree).sum())
    return float((ranks[agree].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def auroc_interval(
    confidence: np.ndarray, agree: np.ndarray, level: float
) -> tuple[float, float]:
    """Newcombe's (2006) Method 5: the θ with (AUROC − θ)² ≤ z² V(θ), V the Hanley–McNeil
    variance at θ with both group sizes replaced by N* = (m + n)/2 (m agreed, n disputed):
    V(θ) = θ(1 − θ)/(mn) · [1 + (N* − 1)(1 − θ)/(2 − θ) + (N* − 1)θ/(1 + θ)]."""
    m, n = int(agree.sum()), int((~agree).sum())
    area = auroc(confidence, agree)
    z2 = stats.norm.ppf(0.5 + level / 2) ** 2
    half_n = (m + n) / 2

    def outside(theta: float) -> float:  # > 0 where θ lies outside the interval
        variance = theta * (1 - theta) / (m * n)
        variance *= 1 + (half_n - 1) * ((1 - theta) / (2 - theta) + theta / (1 + theta))
        return (area - theta) ** 2 - z2 * variance

    inside = min(max(area, 1e-12), 1 - 1e-12)  # a θ the interval holds, even at 0 or 1
    low = 0.0 if area <= 0 else optimize.brentq(outside, 0.0, inside)
    high = 1.0 if area >= 1 else optimize.brentq(outside, inside, 1.0)
    return round(low, 6), round(high, 6)


def reliability_bins(confidence: np.ndarray, agree: np.ndarray) -> list[ReliabilityBin]:
    """The non-empty equal-width bins of [0, 1] (the last one closed)."""
    index = np.minimum((confidence * ECE_BINS).astype(int), ECE_BINS - 1)
    out = []
    for b in range(ECE_BINS):
        inside = index == b
        if inside.any():
            out.append(
                ReliabilityBin(
                    low=b / ECE_BINS,
                    high=(b + 1) / ECE_BINS,
                    n=int(inside.sum()),
                    mean_confidence=round(float(confidence[inside].mean()), 6),
                    agreement=round(float(agree[inside].mean()), 6),
                )
            )
    return out


def ece(bins: list[ReliabilityBin], n: int) -> float:
    return sum(b.n * abs(b.mean_confidence - b.agreement) for b in bins) / n


def calibrated_ece(confidence: np.ndarray) -> float:
    """The mean ECE when every verdict agrees with probability exactly its confidence: what
    sampling noise alone gives on these n items."""
    rng = np.random.default_rng(20261129)
    draws = rng.random((ECE_REFERENCE_DRAWS, confidence.size)) < confidence[None, :]
    return float(np.mean([ece(reliability_bins(confidence, d), confidence.size) for d in draws]))
