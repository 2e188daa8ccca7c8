"""The probe figure (matplotlib, Agg): each judge's mean change under each probe, with its
interval; a filled marker where the change is a discovery (q ≤ the run's q)."""

from __future__ import annotations

from typing import Any

from calibration.render.plots import _png, legend_if_labelled, plt


def effects(report: dict[str, Any]) -> bytes:
    return _png(figure(report))


def figure(report: dict[str, Any]) -> plt.Figure:
    """The figure itself (the PNG is `effects`); a legend entry per judge it plotted."""
    probes = [p["name"] for p in report["probes"]]
    judges = report["judges"]
    fig, ax = plt.subplots(figsize=(7.0, max(2.4, 0.42 * len(probes) + 1.2)))
    step = 0.7 / max(1, len(judges))
    for j, judge in enumerate(judges):
        color = f"C{j % 10}"
        for cell in report["cells"]:
            if cell["judge"] != judge or cell.get("mean_change") is None:
                continue
            y = probes.index(cell["probe"]) + (j - (len(judges) - 1) / 2) * step
            mean, ci = cell["mean_change"], cell.get("ci") or [cell["mean_change"]] * 2
            ax.plot(ci, [y, y], color=color, linewidth=1.2)
            ax.plot(
                [mean],
                [y],
                marker="o",
                color=color,
                markerfacecolor=color if cell["moved"] else "white",
                label=judge if cell is _first(report, judge) else None,
            )
    ax.axvline(0, color="#888", linewidth=0.8)
    ax.set_yticks(range(len(probes)), probes)
    ax.invert_yaxis()
    ax.set_xlabel("mean change of the grade (treated − baseline), points")
    q = report["options"]["q"]
    ax.set_title(f"probe effects (filled: moved, q ≤ {q:g})", fontsize=10)
    legend_if_labelled(ax, fontsize=7, loc="best")  # none when no cell has a change
    return fig


def _first(report: dict[str, Any], judge: str) -> dict[str, Any] | None:
    """The judge's first plotted cell, which carries its legend label."""
    return next(
        (c for c in report["cells"] if c["judge"] == judge and c.get("mean_change") is not None),
        None,
    )
