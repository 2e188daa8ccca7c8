"""Does a live guarantee still hold on the labels that arrived after it was fitted?

A request-time guarantee (calibration/selective.py) says: among verdicts trusted at λ̂, the
share that disagrees with the SMEs is at most α, for items exchangeable with the calibration
items. Judges drift, providers change models behind a name, the traffic changes; the
guarantee's assumption can stop holding while nothing qadi binds it to changes. The labels
that keep arriving test it: SME labels of *trusted* verdicts made after the fit (the audit
share of POST /judge, drawn at random among trusted verdicts, and calibration samples whose
verdict the live threshold would have trusted) are a random sample of what the guarantee
covers, and none of them took part in the fit.

The test (one-sided exact binomial; Clopper & Pearson 1934): H0: R ≤ α (the guarantee
holds) against H1: R > α, with k disagreements among n fresh trusted labels,
p = P(Bin(n, α) ≥ k). The guarantee fails the audit when p ≤ `level`. Under H0 the chance of a
false alarm is at most `level` (exactly `level` or less when R = α; less when R < α). A slice
of labels is tested once: testing the same growing pile after every label would raise false
alarms with every look, so the caller tests disjoint slices (service: each `audit_slice`
labels), and each slice's alarm is a `level`-test of its own.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, Field
from scipy import stats

from calibration.selective import deciding_stage

METHOD = (
    "one-sided exact binomial test of H0: P(disagree | trusted) ≤ α on fresh SME labels of "
    "trusted verdicts made after the fit (Clopper & Pearson 1934)"
)


class Audit(BaseModel):
    """One slice of fresh labels tested against one live guarantee."""

    method: str = METHOD
    alpha: float
    level: float = Field(description="false-alarm rate of the test when the guarantee holds")
    n: int = Field(description="fresh labels of verdicts the guarantee trusted")
    disagreements: int
    rate: float | None
    p_value: float | None = Field(description="P(Bin(n, α) ≥ disagreements)")
    passed: bool | None = Field(description="null: no label to test")
    reason: str


def audit(agree: np.ndarray, alpha: float, level: float = 0.05) -> Audit:
    """Test a live guarantee at disagreement `alpha` on `agree`, one bool per fresh label of a
    trusted verdict (True: the verdict agreed with the SMEs)."""
    agree = np.asarray(agree, dtype=bool)
    n = int(agree.size)
    k = int(n - agree.sum())
    if n == 0:
        return Audit(alpha=alpha, level=level, n=0, disagreements=0, rate=None, p_value=None,
                     passed=None, reason="no fresh label of a trusted verdict yet")  # fmt: skip
    p_value = float(stats.binom.sf(k - 1, n, alpha))  # P(X ≥ k)
    passed = p_value > level
    verdict = "holds" if passed else "fails"
    reason = (
        f"{k} of {n} fresh labels disagree ({k / n:.3f}); the guarantee ≤ {alpha:g} {verdict} "
        f"at level {level:g} (p = {p_value:.3g})"
    )
    return Audit(alpha=alpha, level=level, n=n, disagreements=k, rate=k / n, p_value=p_value,
                 passed=passed, reason=reason)  # fmt: skip


def trusted_agreement(confidence: np.ndarray, agree: np.ndarray, threshold: float) -> np.ndarray:
    """Per item the guarantee trusted (its first stage whose confidence reaches `threshold`
    decides), whether that verdict agreed with the SMEs: what `audit` tests. `confidence`
    and `agree` are items × stages (one stage for a judge, several for a cascade); items
    whose deciding verdict has no agreement (no human grade) are left out."""
    confidence = np.asarray(confidence, dtype=float).reshape(len(confidence), -1)
    agree = np.asarray(agree, dtype=float).reshape(len(agree), -1)
    stage = deciding_stage(confidence, threshold)
    decided = stage >= 0
    found = agree[decided, stage[decided]]
    return found[~np.isnan(found)].astype(bool)
