"""A calibrated jury: several judges' verdicts pooled into one verdict with one confidence.

A panel's raw agreement (`panel` confidence) treats every judge alike; a jury weighs them by
how well their verdicts predict the SMEs'. For labels and ratings (exact agreement), each
judge j that gave verdict v_ij on item i with confidence c_ij (its token or sampling
confidence, 0 where it has none) adds w_j + u_j·c_ij to the score of class v_ij; the jury's
probability of class k is the softmax of the scores (log-linear opinion pooling, Genest &
Zidek 1986), its verdict the most probable class and its confidence that probability. The
classes are the scale's values (its labels, or its whole numbers), fixed before any label is
read; a vote outside them, or only from judges of weight 0, counts for nothing and gives no
verdict rather than a uniform guess.

The weights w, u ≥ 0 are fitted by log-loss (the SMEs' majority as the target; a tie: any of
the tied classes) with a small ridge penalty, so a weak judge gets a small weight rather than
being dropped, and a judge whose confidence means something gets it counted. They are fitted
on a fit fold of the labels only (a fixed third, by a hash of the item id): the labels that
certify the jury's threshold (calibration/selective.py) are never the ones its weights were
fitted on, so its guarantee is the exact one of any single evaluator, for these weights. A
jury decides only where each of its judges gave a verdict: with one missing it would be
another evaluator than the one calibrated.
"""

from __future__ import annotations

import hashlib

import numpy as np
from pydantic import BaseModel, Field
from scipy import optimize

FIT_SHARE = 1 / 3
MIN_FIT_ITEMS = 20
RIDGE = 1e-3  # per fit item, on every weight
MAX_WEIGHT = 50.0
METHOD = (
    "log-linear pooling of the judges' verdicts, class score Σ_j (w_j + u_j·confidence_j); "
    "w, u ≥ 0 fitted by ridge-penalised log-loss on a fit third of the labels (by item-id "
    "hash), the threshold certified on the other two thirds"
)


class JuryFit(BaseModel):
    """A jury's members and the weights fitted for them."""

    members: list[str]
    classes: list[float] = Field(description="the verdicts the jury can return")
    weights: dict[str, float] = Field(description="w_j: what a member's vote counts")
    confidence_weights: dict[str, float] = Field(
        description="u_j: what its confidence adds to its vote"
    )
    n_fit: int = Field(description="labelled items the weights were fitted on")
    method: str = METHOD


JURY_PREFIX = "jury:"


def jury_key(members: list[str]) -> str:
    """The name of a jury as a report row and a cascade stage: 'jury:a+b+c'."""
    return JURY_PREFIX + "+".join(members)


def stage_members(stage: str) -> list[str]:
    """The judges of a cascade stage: a jury's ('jury:a+b'), or the judge it names."""
    return stage.removeprefix(JURY_PREFIX).split("+") if stage.startswith(JURY_PREFIX) else [stage]


def in_fit_fold(item: str) -> bool:
    """The fixed third of items whose labels fit a jury's weights (never certify it)."""
    digest = hashlib.sha256(f"jury-fit:{item}".encode()).hexdigest()
    return int(digest[:13], 16) / 16**13 < FIT_SHARE


def fit(
    members: list[str],
    votes: np.ndarray,
    confidence: np.ndarray,
    modes: list[set[float]],
    classes: list[float],
) -> JuryFit:
    """Weights for `members` from the fit items: `votes` and `confidence` are items ×
    members (NaN where none), `modes` the SMEs' majority classes of each item."""
    onehot = _onehot(votes, classes)  # items × members × classes
    conf = np.nan_to_num(confidence, nan=0.0)[:, :, None] * onehot
    target = np.array([[k in m for k in classes] for m in modes], dtype=float)
    n, j = votes.shape
    ridge = RIDGE * n

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        p = _probabilities(onehot, conf, theta[:j], theta[j:])
        on_target = (p * target).sum(axis=1)
        q = p * target / on_target[:, None]
        value = -np.log(on_target).sum() + ridge * (theta**2).sum()
        residual = p - q  # d loss / d score
        grad = np.concatenate(
            [np.einsum("ik,ijk->j", residual, onehot), np.einsum("ik,ijk->j", residual, conf)]
        )
        return float(value), grad + 2 * ridge * theta

    start = np.concatenate([np.ones(j), np.zeros(j)])
    found = optimize.minimize(
        loss, start, jac=True, method="L-BFGS-B", bounds=[(0.0, MAX_WEIGHT)] * (2 * j)
    )
    w, u = found.x[:j], found.x[j:]
    return JuryFit(
        members=members,
        classes=classes,
        weights={m: round(float(x), 6) for m, x in zip(members, w, strict=True)},
        confidence_weights={m: round(float(x), 6) for m, x in zip(members, u, strict=True)},
        n_fit=n,
    )


def verdicts(
    jury: JuryFit, votes: np.ndarray, confidence: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The jury's verdict and confidence per item; NaN where one of its judges gave no
    verdict (a jury decides with all its judges), or where no vote counts (none is one of its
    classes, or only judges it gives no weight cast them)."""
    onehot = _onehot(votes, jury.classes)
    w = np.array([jury.weights[m] for m in jury.members])
    u = np.array([jury.confidence_weights[m] for m in jury.members])
    conf = np.nan_to_num(confidence, nan=0.0)[:, :, None] * onehot
    p = _probabilities(onehot, conf, w, u)
    # a verdict needs a vote that counts: one of the jury's classes, from a judge it weighs;
    # otherwise the pooled probabilities are uniform and the "verdict" would be invented
    counted = np.einsum("ijk,j->i", onehot, w) + np.einsum("ijk,j->i", conf, u)
    voted = (counted > 0) & ~np.isnan(votes).any(axis=1)  # every judge, as at request time
    verdict = np.where(voted, np.asarray(jury.classes)[p.argmax(axis=1)], np.nan)
    return verdict, np.where(voted, p.max(axis=1), np.nan)


def _probabilities(
    onehot: np.ndarray, conf: np.ndarray, w: np.ndarray, u: np.ndarray
) -> np.ndarray:
    """items × classes: the softmax of each class's pooled score."""
    scores = np.einsum("ijk,j->ik", onehot, w) + np.einsum("ijk,j->ik", conf, u)
    scores -= scores.max(axis=1, keepdims=True)
    p = np.exp(scores)
    return p / p.sum(axis=1, keepdims=True)


def _onehot(votes: np.ndarray, classes: list[float]) -> np.ndarray:
    return np.stack([np.isclose(votes, k) for k in classes], axis=2).astype(float)
