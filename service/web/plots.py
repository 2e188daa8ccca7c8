"""Small server-rendered SVG charts for the dashboard: lines with interval bands over a run of
reports, and stacked daily bars of request outcomes. Plain SVG text (no JavaScript, no CDN,
no matplotlib, which takes a tenth of a second a figure): each chart carries a title and a
description for screen readers, and every number it draws is also in a table on the page."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 56, 130, 16, 36
# colour-blind-safe (Okabe-Ito), dark enough on white for the lines and their labels
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#8C6D00", "#56B4E9", "#000000")


@dataclass(frozen=True)
class Series:
    """One line: a value per x position (None: no point), with its interval if any."""

    label: str
    values: list[float | None]
    low: list[float | None] | None = None
    high: list[float | None] | None = None


def lines(title: str, x_labels: list[str], series: list[Series], y_name: str) -> str:
    """A line chart, one line (and band) per series, x the reports in order."""
    numbers = [v for s in series for v in [*s.values, *(s.low or []), *(s.high or [])]
               if v is not None]  # fmt: skip
    if not numbers or not x_labels:
        return ""
    low, high = _range(numbers)
    x = _x_positions(len(x_labels))

    def y(value: float) -> float:
        return TOP + (HEIGHT - TOP - BOTTOM) * (1 - (value - low) / (high - low))

    described = f"{y_name} per report, {len(x_labels)} report(s)"
    parts = [_frame(title, described), _y_axis(low, high, y)]
    for k, line in enumerate(series):
        colour = COLOURS[k % len(COLOURS)]
        if line.low and line.high:
            band = [(x[i], y(line.low[i]), y(line.high[i])) for i in range(len(x_labels))
                    if line.low[i] is not None and line.high[i] is not None]  # fmt: skip
            if len(band) > 1:
                top = " ".join(f"{a:.1f},{b:.1f}" for a, b, _ in band)
                bottom = " ".join(f"{a:.1f},{c:.1f}" for a, _, c in reversed(band))
                parts.append(f'<polygon points="{top} {bottom}" fill="{colour}" '
                             'fill-opacity="0.15" stroke="none"/>')  # fmt: skip
            for a, b, c in band:
                parts.append(f'<line x1="{a:.1f}" y1="{b:.1f}" x2="{a:.1f}" y2="{c:.1f}" '
                             f'stroke="{colour}" stroke-opacity="0.5"/>')  # fmt: skip
        points = [(x[i], y(v)) for i, v in enumerate(line.values) if v is not None]
        if len(points) > 1:
            path = " ".join(f"{a:.1f},{b:.1f}" for a, b in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                         'stroke-width="2"/>')  # fmt: skip
        for a, b in points:
            parts.append(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{colour}"/>')
        if points:
            parts.append(_legend(k, line.label, colour))
    parts.append(_x_axis(x_labels, x))
    return "".join(parts) + "</svg>"


def stacked_bars(title: str, days: list[str], groups: dict[str, list[int]]) -> str:
    """One bar per day, stacked by group (trusted, audited, escalated, uncalibrated)."""
    totals = [sum(values[i] for values in groups.values()) for i in range(len(days))]
    if not days or not any(totals):
        return ""
    top = max(totals)
    x = _x_positions(len(days))
    width = max(2.0, (WIDTH - LEFT - RIGHT) / max(len(days), 1) * 0.7)

    def y(value: float) -> float:
        return TOP + (HEIGHT - TOP - BOTTOM) * (1 - value / top)

    parts = [_frame(title, f"requests per day, {len(days)} day(s)"), _y_axis(0, top, y)]
    base = [0] * len(days)
    for k, (name, values) in enumerate(groups.items()):
        colour = COLOURS[k % len(COLOURS)]
        for i, value in enumerate(values):
            if value:
                y0, y1 = y(base[i] + value), y(base[i])
                parts.append(f'<rect x="{x[i] - width / 2:.1f}" y="{y0:.1f}" width="{width:.1f}" '
                             f'height="{y1 - y0:.1f}" fill="{colour}"/>')  # fmt: skip
                base[i] += value
        parts.append(_legend(k, name, colour))
    parts.append(_x_axis(days, x))
    return "".join(parts) + "</svg>"


def _range(numbers: list[float]) -> tuple[float, float]:
    low, high = min(numbers), max(numbers)
    if high - low < 1e-9:
        low, high = low - 1, high + 1
    pad = (high - low) * 0.08
    return low - pad, high + pad


def _x_positions(n: int) -> list[float]:
    span = WIDTH - LEFT - RIGHT
    return [LEFT + span / 2] if n == 1 else [LEFT + span * i / (n - 1) for i in range(n)]


def _frame(title: str, description: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'class="chart" aria-label="{escape(title)}"><title>{escape(title)}</title>'
        f"<desc>{escape(description)}; the numbers are in the table below</desc>"
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>'
    )


def _y_axis(low: float, high: float, y) -> str:
    ticks = [low + (high - low) * k / 4 for k in range(5)]
    parts = [f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}" stroke="#4a5563"/>']
    for tick in ticks:
        at = y(tick)
        parts.append(f'<text x="{LEFT - 6}" y="{at + 4:.1f}" font-size="11" '
                     f'text-anchor="end" fill="#1b1f24">{tick:.3g}</text>'
                     f'<line x1="{LEFT}" y1="{at:.1f}" x2="{WIDTH - RIGHT}" y2="{at:.1f}" '
                     'stroke="#c9d1da" stroke-width="0.5"/>')  # fmt: skip
    return "".join(parts)


def _x_axis(labels: list[str], x: list[float]) -> str:
    base = HEIGHT - BOTTOM
    parts = [f'<line x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}" stroke="#4a5563"/>']
    shown = {0, len(labels) - 1, *range(0, len(labels), max(1, len(labels) // 5))}
    for i in sorted(shown):
        parts.append(f'<text x="{x[i]:.1f}" y="{base + 16}" font-size="11" text-anchor="middle" '
                     f'fill="#1b1f24">{escape(labels[i])}</text>')  # fmt: skip
    return "".join(parts)


def _legend(k: int, label: str, colour: str) -> str:
    y = TOP + 4 + 16 * k
    x = WIDTH - RIGHT + 10
    return (f'<rect x="{x}" y="{y}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{x + 14}" y="{y + 9}" font-size="11" fill="#1b1f24">'
            f"{escape(label[:18])}</text>")  # fmt: skip
