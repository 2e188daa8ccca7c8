"""What the page benchmarks share (bench_workbench.py, bench_dashboard.py): percentiles of
per-request times, their table, and the statistics PostgreSQL keeps on a live database."""

from __future__ import annotations

import statistics

from sqlalchemy import text

from service.db.engine import make_engine


def percentile(values: list[float], share: float) -> float:
    """The `share` quantile of `values` (the nearest rank at or below it)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def print_times(times: dict[str, list[float]], rounds: int) -> None:
    """p50, p95 and the mean of each kind of request, in milliseconds."""
    print(f"{'request':<14} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}   ({rounds} rounds)")
    for name, values in times.items():
        print(f"{name:<14} {percentile(values, 0.5):8.1f} {percentile(values, 0.95):8.1f} "
              f"{statistics.fmean(values):8.1f}")  # fmt: skip


def analyze(url: str) -> None:
    """ANALYZE a PostgreSQL database after a bulk load (autovacuum would, on a live one)."""
    if not url.startswith("postgresql"):
        return
    engine = make_engine(url)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text("ANALYZE"))
    engine.dispose()
