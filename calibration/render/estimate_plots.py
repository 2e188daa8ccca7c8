"""The estimate figure (matplotlib, Agg): per judge, three intervals side by side."""

from __future__ import annotations

from typing import Any

from calibration.render.plots import _png, legend_if_labelled, plt

PARTS = (
    ("judge_only", "judge only", "C1"),
    ("human_only", "humans only", "C2"),
    (None, "PPI", "C0"),
)


def three_intervals(stratum: str, rows: list[tuple[str, dict[str, Any]]], confidence: str) -> bytes:
    """Judge-only (biased), human-only and PPI estimates with their intervals, per judge; an
    interval the JSON marks unreliable is drawn faint with an x and labelled so."""
    fig, ax = plt.subplots(figsize=(max(5.0, 1.3 * len(rows)), 3.6))
    for k, (key, label, color) in enumerate(PARTS):
        points: dict[bool, tuple[list, list, list]] = {}
        for j, (_, block) in enumerate(rows):
            part = block if key is None else block.get(key) or {}
            value, ci = part.get("estimate"), part.get("ci")
            if value is None:
                continue
            lo, hi = ci if ci else (value, value)
            xs, ys, errs = points.setdefault(part.get("reliable") is not False, ([], [], [[], []]))
            xs.append(j + (k - 1) * 0.22)
            ys.append(value)
            errs[0].append(value - lo)
            errs[1].append(hi - value)
        for reliable, (xs, ys, errs) in points.items():
            style = {"fmt": "o"} if reliable else {"fmt": "x", "alpha": 0.45}
            name = label if reliable else f"{label} (unreliable)"
            ax.errorbar(xs, ys, yerr=errs, capsize=3, color=color, label=name, **style)
    ax.set_xticks(range(len(rows)), [judge for judge, _ in rows], rotation=20, ha="right")
    ax.set_ylabel("mean score")
    ax.set_title(f"{stratum}: {confidence} intervals")
    legend_if_labelled(ax, fontsize=7)  # a stratum where no judge has an estimate has none
    return _png(fig)
