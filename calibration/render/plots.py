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


def legend_if_labelled(ax, **options: Any) -> None:
    """The axes' legend, when something on them is labelled: a figure with nothing to plot
    (no estimate, no change) would otherwise get matplotlib's empty-legend warning."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**options)


def _interval(block: dict[str, Any], metric: str) -> tuple[float, float, float] | None:
    value, ci = block.get(metric), (block.get("ci") or {}).get(metric)
    if value is None:
        return None
    lo, hi = ci if ci else (value, value)
    return value, value - lo, hi - value


PANEL = (3.4, 2.6)  # inches per judge panel; at 110 dpi three panels fit a 1200 px page
COLUMNS = 3


def _panels(count: int):
    """A grid of small multiples, one panel per judge, sharing the y axis."""
    cols = min(COLUMNS, max(1, count))
    rows = -(-count // cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(PANEL[0] * cols, PANEL[1] * rows), sharey=True, squeeze=False
    )
    for ax in axes.ravel()[count:]:
        ax.set_visible(False)
    return fig, axes.ravel()


def metric_by_stratum(report: dict[str, Any], judges: list[str], metric: str, label: str) -> bytes:
    """Small multiples: per judge, the point and interval (at the report's confidence) of
    `metric` overall and per stratum (one colour; strata on the x axis, so ten strata do not
    need ten colours)."""
    strata = ["overall", *sorted({s for j in judges for s in report["judges"][j]["strata"]})]
    fig, axes = _panels(len(judges))
    for ax, judge in zip(axes, judges, strict=False):
        data = report["judges"][judge]
        for k, stratum in enumerate(strata):
            block = data["overall"] if stratum == "overall" else data["strata"].get(stratum, {})
            got = _interval(block, metric)
            if got is not None:
                colour = "C0" if stratum == "overall" else "C7"
                ax.errorbar([k], [got[0]], yerr=[[got[1]], [got[2]]], fmt="o", capsize=3,
                            color=colour)  # fmt: skip
        if metric.startswith("signed"):
            ax.axhline(0, color="grey", linewidth=0.8)
        ax.set_xticks(range(len(strata)), strata, rotation=35, ha="right", fontsize=7)
        ax.set_title(judge, fontsize=9)
    axes[0].set_ylabel(label)
    level = 100 * float((report.get("options") or {}).get("confidence") or 0.95)
    fig.suptitle(f"{label} per judge, overall and per stratum ({level:g}% CI)", fontsize=10)
    fig.tight_layout()
    return _png(fig)


def trend(history: list[dict[str, Any]], judges: list[str]) -> bytes:
    """Small multiples: per judge, MAD and signed error over the nightly reports, each a
    line with each report's interval as a band, so a judge degrading over weeks shows as a
    rising line."""
    from calibration.history import series

    fig, axes = _panels(len(judges))
    for ax, judge in zip(axes, judges, strict=False):
        for metric, colour, label in (("mad", "C0", "MAD"), ("signed_error", "C3", "signed")):
            points = series(history, judge, metric)
            xs = [at[:10] for at in points["at"]]
            ax.plot(range(len(xs)), points["value"], marker="o", color=colour, label=label)
            ax.fill_between(range(len(xs)), points["low"], points["high"], color=colour,
                            alpha=0.2)  # fmt: skip
        ax.axhline(0, color="grey", linewidth=0.8)
        ticks = [at[:10] for at in series(history, judge, "mad")["at"]]
        ax.set_xticks(range(len(ticks)), ticks, rotation=35, ha="right", fontsize=7)
        ax.set_title(judge, fontsize=9)
    axes[0].legend(fontsize=7)
    fig.suptitle("MAD and signed error per nightly report (each report's CI as a band)",
                 fontsize=10)  # fmt: skip
    fig.tight_layout()
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


def reliability(judge: str, source: str, bins: list[dict[str, Any]]) -> bytes:
    """Share of verdicts the SMEs agree with against the mean confidence, per confidence bin
    (point area by items), and the diagonal a calibrated confidence would lie on."""
    fig, ax = plt.subplots(figsize=(4, 4))
    ax.plot([0, 1], [0, 1], color="grey", linewidth=0.8, linestyle="--", label="calibrated")
    x = [b["mean_confidence"] for b in bins]
    y = [b["agreement"] for b in bins]
    sizes = [12 + 4 * b["n"] for b in bins]
    ax.plot(x, y, color="C0", linewidth=1)
    ax.scatter(x, y, s=sizes, color="C0", alpha=0.7, label="bins (area: items)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel(f"{source} confidence")
    ax.set_ylabel("share the SMEs agree with")
    ax.set_title(f"Reliability: {judge}")
    ax.legend(fontsize=7, loc="upper left")
    return _png(fig)
