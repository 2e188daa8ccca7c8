"""Report figures (matplotlib, Agg): returned as PNG bytes so HTML can embed them."""

from __future__ import annotations

import io
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def _interval(block: dict[str, Any], metric: str) -> tuple[float, float, float] | None:
    value, ci = block.get(metric), (block.get("ci") or {}).get(metric)
    if value is None:
        return None
    lo, hi = ci if ci else (value, value)
    return value, value - lo, hi - value


def metric_by_stratum(report: dict[str, Any], metric: str, label: str) -> bytes:
    """Point and 95% CI of `metric` per judge, overall and in every stratum."""
    judges = list(report["judges"])
    strata = ["overall", *sorted({s for j in judges for s in report["judges"][j]["strata"]})]
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(judges) * max(1, len(strata)) / 2), 4))
    width = 0.8 / len(strata)
    for k, stratum in enumerate(strata):
        xs, ys, errs = [], [], [[], []]
        for j, judge in enumerate(judges):
            data = report["judges"][judge]
            block = data["overall"] if stratum == "overall" else data["strata"].get(stratum, {})
            got = _interval(block, metric)
            if got is None:
                continue
            xs.append(j - 0.4 + width * (k + 0.5))
            ys.append(got[0])
            errs[0].append(got[1])
            errs[1].append(got[2])
        ax.errorbar(xs, ys, yerr=errs, fmt="o", capsize=3, label=stratum)
    if metric.startswith("signed"):
        ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_xticks(range(len(judges)), judges, rotation=20, ha="right")
    ax.set_ylabel(label)
    ax.set_title(f"{label} per judge (95% CI)")
    ax.legend(fontsize=7, ncol=2)
    return _png(fig)


def bland_altman(judge: str, scores: np.ndarray, reference: np.ndarray) -> bytes:
    """Difference (judge − reference) against their mean, with bias and 95% limits."""
    fig, ax = plt.subplots(figsize=(5, 3.6))
    mean, diff = (scores + reference) / 2, scores - reference
    ax.scatter(mean, diff, s=8, alpha=0.4)
    if diff.size:
        bias, sd = diff.mean(), diff.std(ddof=1) if diff.size > 1 else 0.0
        ax.axhline(bias, color="C1", label=f"bias {bias:+.2f}")
        for limit in (bias - 1.96 * sd, bias + 1.96 * sd):
            ax.axhline(limit, color="C1", linestyle="--", linewidth=0.8)
        ax.legend(fontsize=7)
    ax.set_xlabel("mean of judge and reference")
    ax.set_ylabel("judge − reference")
    ax.set_title(f"Bland–Altman: {judge}")
    return _png(fig)


def confusion(judge: str, pairs: np.ndarray, levels: np.ndarray) -> bytes:
    """Counts of (human score, judge score) over every (item, human) pair."""
    index = {v: i for i, v in enumerate(levels)}
    matrix = np.zeros((len(levels), len(levels)), dtype=int)
    for judge_score, human_score in pairs:
        matrix[index[human_score], index[judge_score]] += 1
    fig, ax = plt.subplots(figsize=(4, 3.6))
    ax.imshow(matrix, cmap="Blues")
    for (r, c), count in np.ndenumerate(matrix):
        ax.text(c, r, str(count), ha="center", va="center", fontsize=8)
    labels = [f"{v:g}" for v in levels]
    ax.set_xticks(range(len(levels)), labels)
    ax.set_yticks(range(len(levels)), labels)
    ax.set_xlabel("judge")
    ax.set_ylabel("human")
    ax.set_title(f"Judge vs human: {judge}")
    return _png(fig)
