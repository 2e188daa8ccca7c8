"""Calibration speed: 10,000 human-graded items × 6 judges × 3 humans on a 1-5 scale,
2000 bootstrap resamples, every metric with CIs, overall plus two strata attributes.

Prints the wall time of `calibrate` and the speed-up over a plain loop that calls scipy
and the krippendorff package once per resample (timed on a slice of resamples, scaled).
Target (DESIGN.md): <= 20 s on 2 cores.

Then the SummEval-sized case: 6,400 items × 6 judges × 3 humans, 2000 resamples, one `--by`
attribute, with the alt-test per judge and stratum and the trust map: <= 10 s.

Run: .venv/bin/python tests/perf/bench_calibration.py [--items 10000] [--resamples 2000]
     .venv/bin/python tests/perf/bench_calibration.py --summeval-only
"""

from __future__ import annotations

import argparse
import time

import krippendorff
import numpy as np
from scipy import stats

from calibration.calibrate import CalibrationOptions, calibrate
from calibration.formats.interchange import GradeRow


def synthetic_rows(n_items: int, seed: int = 7) -> list[GradeRow]:
    rng = np.random.default_rng(seed)
    dialects = ["egyptian", "iraqi", "levantine", "gulf"]
    categories = ["cultural", "linguistic"]
    rows = []
    for i in range(n_items):
        truth = rng.integers(1, 6)
        attrs = {"dialect": dialects[i % 4], "category": categories[(i // 4) % 2]}
        for h in range(3):
            score = np.clip(truth + rng.integers(-1, 2), 1, 5)
            if rng.random() < 0.95:
                rows.append(
                    GradeRow(
                        item_id=f"i{i}",
                        rater=f"sme{h}",
                        rater_kind="human",
                        score=float(score),
                        attributes=attrs,
                    )
                )
        for j in range(6):
            score = np.clip(truth + rng.integers(-1, 2) + (j % 3 == 0), 1, 5)
            if rng.random() < 0.97:
                rows.append(
                    GradeRow(
                        item_id=f"i{i}",
                        rater=f"judge{j}",
                        rater_kind="judge",
                        score=float(score),
                        attributes=attrs,
                    )
                )
    return rows


def naive_loop_seconds(rows: list[GradeRow], n_items: int, resamples: int) -> float:
    """One judge, overall only, scipy + krippendorff per resample; returns seconds per resample
    per (judge × block)."""
    human = np.full((n_items, 3), np.nan)
    judge = np.full(n_items, np.nan)
    index = {f"i{i}": i for i in range(n_items)}
    for r in rows:
        if r.rater_kind == "human":
            human[index[r.item_id], int(r.rater[3:])] = r.score
        elif r.rater == "judge0":
            judge[index[r.item_id]] = r.score
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    for _ in range(resamples):
        idx = rng.integers(0, n_items, n_items)
        h, j = human[idx], judge[idx]
        ref = np.nanmean(h, 1)
        ok = ~np.isnan(j) & ~np.isnan(ref)
        x, y = j[ok], ref[ok]
        np.mean(np.abs(x - y)), np.mean(x - y)
        stats.kendalltau(x, y), stats.spearmanr(x, y), stats.pearsonr(x, y)
        krippendorff.alpha(
            reliability_data=np.column_stack([h, j])[ok].T, level_of_measurement="ordinal"
        )
        krippendorff.alpha(reliability_data=h[ok].T, level_of_measurement="ordinal")
    return (time.perf_counter() - started) / resamples


SUMMEVAL_ITEMS = 6_400  # 1,600 summaries x 4 dimensions, as the SummEval expert annotations


def summeval_sized(resamples: int) -> float:
    """Wall seconds of the SummEval-sized report with the alt-test and the trust map."""
    rows = synthetic_rows(SUMMEVAL_ITEMS)
    options = CalibrationOptions(
        scale_min=1, scale_max=5, bootstrap=resamples, seed=1, by=["dialect"], alt_test=True
    )
    started = time.perf_counter()
    report = calibrate(rows, options)
    wall = time.perf_counter() - started
    rows_ = report["trust"]["rows"]
    print(
        f"SummEval-sized: items={SUMMEVAL_ITEMS} judges=6 humans=3 resamples={resamples} "
        f"by=dialect: {wall:.2f} s  (target <= 10 s); trust map rows={len(rows_)}, "
        f"best overall={report['trust']['best']['overall']}"
    )
    return wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--slice", type=int, default=20, help="resamples timed in the naive loop")
    parser.add_argument("--summeval-only", action="store_true")
    args = parser.parse_args()
    summeval_sized(args.resamples)
    if args.summeval_only:
        return
    rows = synthetic_rows(args.items)
    options = CalibrationOptions(
        scale_min=1, scale_max=5, bootstrap=args.resamples, seed=1, by=["dialect", "category"]
    )
    started = time.perf_counter()
    report = calibrate(rows, options)
    wall = time.perf_counter() - started
    blocks = 1 + 4 + 2
    per_resample = naive_loop_seconds(rows, args.items, args.slice)
    # the naive loop over every (judge × block) pays roughly the per-resample cost scaled by
    # the block's share of items; overall + two partitions of the items = 3 full passes
    naive_total = per_resample * args.resamples * 6 * 3
    print(f"items={args.items} judges=6 humans=3 resamples={args.resamples} blocks={blocks}")
    print(f"qadi calibrate: {wall:.2f} s  (target <= 20 s)")
    print(
        f"plain loop, scipy once per resample: {per_resample * 1000:.1f} ms per resample "
        f"per judge-pass -> {naive_total:.0f} s scaled to the same work"
    )
    print(f"speed-up: {naive_total / wall:.0f}x")
    judge0 = report["judges"]["judge0"]["overall"]
    print(
        f"judge0 overall: mad={judge0['mad']:.3f} tau={judge0['kendall_tau']:.3f} "
        f"alpha={judge0['krippendorff_alpha']:.3f} ci(alpha)={judge0['ci']['krippendorff_alpha']}"
    )


if __name__ == "__main__":
    main()
