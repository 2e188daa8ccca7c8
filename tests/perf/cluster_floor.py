"""How few clusters a cluster-robust interval can rest on: the simulation behind
calibration/estimate.py's MIN_CLUSTERS (docs/statistics.md, "Clusters").

For G = 2..10 clusters, three cluster-size shapes (equal, unequal 2-40, one dominant) and two
prompt-effect shapes (normal, skewed gamma), it draws data with known mean 3 (30% of each
cluster labelled, the judge with its own prompt effect), runs `qadi estimate --cluster` on a
grade table and counts how often the 95% interval covers 3, for qadi's rule (CR2 variance,
Bell-McCaffrey df) and for the rule the issue proposed (CR1 = G/(G−1) times the cluster sum of
squared influence sums, t on G − 1 df), human-only and PPI. It also prints the median
Bell-McCaffrey df of the human-only interval.

Run: .venv/bin/python tests/perf/cluster_floor.py [--reps 1000] [--out table.md]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from calibration.estimate import EstimateOptions, _cluster_codes, estimate_table  # noqa: E402
from tests.stats.test_estimates import covers, grade_table  # noqa: E402

SHAPES = {
    "equal (10 each)": lambda rng, g: np.full(g, 10),
    "unequal (2-40)": lambda rng, g: rng.choice([2, 5, 10, 20, 40], g),
    "one of 60, rest 5": lambda rng, g: np.r_[60, np.full(g - 1, 5)],
}
EFFECTS = {
    "normal": lambda rng, g: rng.normal(0, 1, g),
    "skewed (gamma 2)": lambda rng, g: (rng.gamma(2.0, 1, g) - 2.0) / np.sqrt(2),
}


def sample(rng, sizes, effect):
    codes = np.repeat(np.arange(len(sizes)), sizes)
    y = 3 + effect[codes] + rng.normal(0, 1, len(codes))
    f = 0.5 + y + rng.normal(0, 0.3, len(sizes))[codes] + rng.normal(0, 0.5, len(codes))
    labelled = np.zeros(len(codes), dtype=bool)
    for g in range(len(sizes)):
        members = np.flatnonzero(codes == g)
        labelled[rng.choice(members, max(1, round(0.3 * len(members))), replace=False)] = True
    return grade_table(y, f, labelled, [{"prompt": f"p{c}"} for c in codes])


def cr1_covers(block: dict, fit, codes: np.ndarray, truth: float = 3.0) -> bool:
    """CR1 = G/(G−1) Σ_c S_c² over the clusters of the estimate's items, t on G_L − 1 df
    (G_L: the clusters holding labels), around the same estimate."""
    items = np.concatenate([p.items for p in fit.parts])
    influence = np.concatenate([p.influence for p in fit.parts])
    present = np.unique(codes[items])
    sums = np.bincount(codes[items], weights=influence, minlength=codes.max() + 1)[present]
    held = len(np.unique(codes[fit.labelled_items()]))
    g = len(present)
    half = stats.t.ppf(0.975, held - 1) * np.sqrt(g / (g - 1) * np.sum(sums**2))
    return abs(block["estimate"] - truth) <= half


def run(reps: int, clusters: int, shape, effect, rng) -> dict[str, float]:
    from calibration import design
    from calibration.estimate import _fit

    hits = dict.fromkeys(("CR2 human", "CR2 PPI", "CR1 human", "CR1 PPI"), 0)
    dfs = []
    for _ in range(reps):
        table = sample(rng, SHAPES[shape](rng, clusters), EFFECTS[effect](rng, clusters))
        block = estimate_table(table, EstimateOptions(cluster="prompt"))["judges"]["J"]["overall"]
        codes = _cluster_codes(table, "prompt")
        ref, scores = table.human_scores[:, 0], table.judge_scores[:, 0]
        judged = ~np.isnan(scores)
        weights = design.judge_weights(table, judged, judged & ~np.isnan(ref))
        fit = _fit(scores, ref, np.ones(table.n_items, dtype=bool), weights, codes)
        hits["CR2 human"] += covers(block["human_only"], 3.0)
        hits["CR2 PPI"] += covers(block, 3.0)
        hits["CR1 human"] += cr1_covers(block["human_only"], fit.human, codes)
        hits["CR1 PPI"] += cr1_covers(block, fit.ppi, codes)
        dfs.append(block["human_only"]["df"])
    return {**{k: v / reps for k, v in hits.items()}, "median BM df": float(np.median(dfs))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rng = np.random.default_rng(2024)
    columns = ["CR2 human", "CR2 PPI", "CR1 human", "CR1 PPI", "median BM df"]
    lines = [
        "| prompt effect | cluster sizes | G | " + " | ".join(columns) + " |",
        "|---|---|---|" + "---|" * len(columns),
    ]
    for effect in EFFECTS:
        for shape in SHAPES:
            for clusters in (2, 3, 4, 5, 6, 8, 10):
                found = run(args.reps, clusters, shape, effect, rng)
                cells = " | ".join(f"{found[c]:.3f}" for c in columns[:-1])
                lines.append(
                    f"| {effect} | {shape} | {clusters} | {cells} | {found[columns[-1]]:.1f} |"
                )
                print(lines[-1], flush=True)
    text = "\n".join(lines)
    print(f"\n{text}\n\n{args.reps} repetitions per row; 95% intervals, truth 3")
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
