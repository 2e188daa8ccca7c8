"""Multiple-comparison control: adjusted p-values (q-values) for a family of tests.

One place for every family qadi decides over (drift cells of a night, trust-map verdicts
across judges × strata, probes across judges × perturbations, alt-test annotators), so each
decision names its procedure in the JSON and a reader finds the rule by its noun.

- `bh`: Benjamini & Hochberg (1995), step-up; controls the false discovery rate at q for
  independent or positively dependent (PRDS) tests.
- `by`: Benjamini & Yekutieli (2001), BH with q divided by Σ 1/i; controls the FDR under
  any dependence (the alt-test authors' choice).
- `holm`: Holm (1979), step-down Bonferroni; controls the family-wise error rate under any
  dependence. Use it where a single false alarm is what the user pays for (an alarm wakes
  someone) and the family is small.

An undefined p-value (NaN, e.g. a test on too few items) is never rejected but counts in
the family as p = 1, so dropping untestable cells cannot make the others easier to reject.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from scipy import stats

Procedure = Literal["bh", "by", "holm"]

DESCRIPTIONS: dict[str, str] = {
    "bh": "Benjamini-Hochberg step-up (FDR; independent or positively dependent tests)",
    "by": "Benjamini-Yekutieli step-up (FDR; any dependence)",
    "holm": "Holm step-down (family-wise error rate; any dependence)",
}


def adjust(p_values: Sequence[float | None], procedure: Procedure = "bh") -> list[float]:
    """Adjusted p-values in input order: reject a test when its adjusted value is ≤ the level."""
    if len(p_values) == 0:
        return []
    p = np.array([1.0 if v is None else v for v in p_values], dtype=float)
    p = np.clip(np.nan_to_num(p, nan=1.0), 0.0, 1.0)
    if procedure in ("bh", "by"):
        return [float(v) for v in stats.false_discovery_control(p, method=procedure)]
    if procedure == "holm":
        return [float(v) for v in _holm(p)]
    raise ValueError(f"procedure: '{procedure}' is not one of {sorted(DESCRIPTIONS)}")


def reject(
    p_values: Sequence[float | None], level: float, procedure: Procedure = "bh"
) -> list[bool]:
    """Which tests of the family are rejected at `level` (FDR q or FWER α by procedure)."""
    return [q <= level for q in adjust(p_values, procedure)]


def _holm(p: np.ndarray) -> np.ndarray:
    """Holm's adjusted p: max over the sorted prefix of (m − k) · p_(k), capped at 1."""
    m = len(p)
    order = np.argsort(p, kind="stable")
    scaled = (m - np.arange(m)) * p[order]
    adjusted_sorted = np.minimum(np.maximum.accumulate(scaled), 1.0)
    out = np.empty(m)
    out[order] = adjusted_sorted
    return out
