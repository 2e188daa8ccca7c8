"""The simulation that chose how many fixed-sequence chains a selective threshold runs
(calibration/selective.py: `chain_plan`, SPLIT_FROM).

Procedures compared, at α = δ = 0.1 by default:
- four chains: δ/4 each, started at n0, 2·n0, 4·n0, 8·n0 trusted items (n0 = 36), qadi's
  procedure before issue 41;
- one chain: the full δ, started at the fewest items a perfect record can pass on (22);
- by size: what qadi runs now (`chain_plan`: one chain below SPLIT_FROM items, four from it).

Confidence models (known P(agree | confidence), so the truth has no coin-flip noise):
- planted: c ~ U(0.2, 1), right with probability c (the model of issue 41, point 9);
- honest: c ~ Beta(5, 2), right with probability 0.4 + 0.6 c (tests/stats/test_selective.py);
- overconfident top: c ~ U(0.2, 1), right with probability 0.75 where c ≥ 0.9 (the judge's
  surest verdicts are its worst) and 0.9 + 0.1 (c − 0.2)/0.7 below: poorly monotone, so a
  walk from the strictest threshold stops at once and only a chain started further down
  certifies anything.

Each repetition draws n calibration items, calibrates, and measures on a population of
200,000 items the true coverage and true disagreement of the trusted verdicts. Printed per
(model, n, procedure): the mean trusted share, the abstention rate (no threshold), and the
realised risk P(true disagreement among trusted > α), which must stay ≤ δ.

docs/explanation/selective-judging.md quotes the table. Run:
    .venv/bin/python tests/perf/selective_chains.py [--reps 1000] [--sizes 200 400 1000 3000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from calibration.selective import (  # noqa: E402
    CHAINS,
    GRID,
    Chains,
    calibrate_threshold,
    min_items,
)

POPULATION = 200_000


def planted(rng, n):
    c = rng.uniform(0.2, 1.0, n)
    return c, c


def honest(rng, n):
    c = rng.beta(5, 2, n)
    return c, 0.4 + 0.6 * c


def overconfident_top(rng, n):
    c = rng.uniform(0.2, 1.0, n)
    return c, np.where(c >= 0.9, 0.75, 0.9 + 0.1 * (c - 0.2) / 0.7)


MODELS = {"planted": planted, "honest": honest, "overconfident top": overconfident_top}


def four_chains(alpha: float, delta: float) -> Chains:
    start = min_items(alpha, delta / CHAINS)
    return Chains(tuple(start * 2**i for i in range(CHAINS)), delta / CHAINS)


def one_chain(alpha: float, delta: float) -> Chains:
    return Chains((min_items(alpha, delta),), delta)


PROCEDURES = {"four chains": four_chains, "one chain": one_chain, "by size": None}


class Truth:
    """True coverage and disagreement of every grid threshold on a large population."""

    def __init__(self, model, seed: int) -> None:
        c, p = model(np.random.default_rng(seed), POPULATION)
        order = np.argsort(-c)
        c, miss = c[order], np.cumsum(1 - p[order])
        above = np.searchsorted(-c, -GRID, side="right")  # items with confidence ≥ t
        self.coverage = above / POPULATION
        self.risk = np.where(above > 0, miss[np.maximum(above - 1, 0)] / np.maximum(above, 1), 0)

    def at(self, threshold: float | None) -> tuple[float, float]:
        if threshold is None:
            return 0.0, 0.0
        i = int(np.searchsorted(GRID, threshold - 1e-9))
        return float(self.risk[i]), float(self.coverage[i])


def simulate(model, n: int, reps: int, alpha: float, delta: float, seed: int) -> dict:
    truth = Truth(model, seed)
    rng = np.random.default_rng(seed + n)
    out = {name: [0.0, 0, 0] for name in PROCEDURES}
    for _ in range(reps):
        c, p = model(rng, n)
        agree = (rng.uniform(size=n) < p).astype(float)
        for name, make in PROCEDURES.items():
            plan = make(alpha, delta) if make else None
            found = calibrate_threshold(c, agree, alpha, delta, chains=plan)
            risk, covered = truth.at(found.threshold)
            out[name][0] += covered / reps
            out[name][1] += found.threshold is None
            out[name][2] += risk > alpha
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 400, 1000, 3000])
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--delta", type=float, default=0.1)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    args = parser.parse_args()
    start = time.monotonic()
    print("| model | n | procedure | trusted share | abstains | P(risk > α) |")
    print("|---|---|---|---|---|---|")
    for m, name in enumerate(args.models):
        for n in args.sizes:
            found = simulate(MODELS[name], n, args.reps, args.alpha, args.delta, seed=100 * m)
            for procedure, (share, abstained, failed) in found.items():
                print(f"| {name} | {n} | {procedure} | {share:.3f} | "
                      f"{abstained / args.reps:.2f} | {failed / args.reps:.3f} |")  # fmt: skip
    print(f"\n{args.reps} repetitions per row, α = {args.alpha}, δ = {args.delta}; "
          f"{time.monotonic() - start:.0f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
