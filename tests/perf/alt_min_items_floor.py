"""The simulation that chose the alt-test's floor on `--alt-min-items` (MIN_ITEMS_FLOOR = 20).

For each configuration of a grid — 3 or 5 annotators; 2, 3 or 5 labels (accuracy scoring) or
1–5 scores (neg_rmse); annotators 70–98% accurate (labels) or with rounding noise 0.2–0.8
(scores); ε 0.05, 0.1, 0.2 — the judge is put exactly at the null's edge: its accuracy (or
noise) is set by bisection on 100,000 items so that d̄ = P(W_h) − P(W_f) = ε against the
first annotator, i.e. worse than the annotators by the test's own margin. The authors' test
(`calibration.alt_test.alt_test`, the authors' procedure) is then run on REPS data sets of
n items per annotator, n = 5 … 30, and the share of data sets in which it "passes" that judge
(a false pass) is printed: per n, the largest false-pass rate over the configurations the
floor is claimed for (annotators up to 95% accurate, ε ≥ 0.1), and over all.

docs/statistics.md ("Alt-test and the trust map") quotes the result. Run:
    .venv/bin/python tests/perf/alt_min_items_floor.py [--reps 1000] [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from calibration.alt_test import alt_test, annotator_indicators  # noqa: E402
from calibration.scoring import AlignContext  # noqa: E402
from tests.stats.simulate import labelled, scores  # noqa: E402

SIZES = (5, 8, 12, 16, 20, 25, 30)


def draw(rng, config, reps: int, n: int, judge_level: float):
    """(judge (reps, n), humans (reps, n, m)) for one configuration and judge parameter."""
    kind, m, levels, human, _ = config
    if kind == "labels":
        prevalence = np.full(levels, 1 / levels)
        return labelled(rng, reps, n, m, prevalence, human, judge_level)
    truth = rng.integers(1, 6, (reps, n)).astype(float)
    humans = scores(rng, truth[..., None].repeat(m, -1), 0.0, human)
    return scores(rng, truth, 0.0, judge_level), humans


def gap(config, judge_level: float) -> float:
    """d̄ against the first annotator on 100,000 items (qadi's alignment of the scoring)."""
    rng = np.random.default_rng(99)
    judge, humans = draw(rng, config, 1, 100_000, judge_level)
    scoring = "accuracy" if config[0] == "labels" else "neg_rmse"
    wins_f, wins_h = annotator_indicators(judge[0], humans[0], 0, scoring)
    return float(wins_h.mean() - wins_f.mean())


def boundary(config) -> float:
    """The judge parameter at which d̄ = ε: accuracy (labels, higher is better) or noise
    (scores, lower is better), by bisection."""
    epsilon = config[4]
    low, high = (0.0, 1.0) if config[0] == "labels" else (0.0, 4.0)
    better_is_high = config[0] == "labels"
    for _ in range(18):
        middle = (low + high) / 2
        worse = gap(config, middle) > epsilon
        if worse == better_is_high:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def grid(quick: bool):
    label_accuracy = (0.7, 0.95) if quick else (0.7, 0.8, 0.9, 0.95, 0.98)
    noise = (0.2, 0.8) if quick else (0.2, 0.5, 0.8)
    annotators = (3,) if quick else (3, 5)
    epsilons = (0.1, 0.2) if quick else (0.05, 0.1, 0.2)
    for m, eps in itertools.product(annotators, epsilons):
        for levels, acc in itertools.product((2, 3, 5) if not quick else (2,), label_accuracy):
            yield ("labels", m, levels, acc, eps)
        for sd in noise:
            yield ("scores", m, 5, sd, eps)


def claimed(config) -> bool:
    """The configurations the floor is claimed for (docs/statistics.md): annotators at most
    95% accurate — for scores, rounding noise of at least 0.3 (noise 0.2 leaves 98.8% of the
    scores on the truth) — and ε ≥ 0.1."""
    kind, _, _, human, eps = config
    return eps >= 0.1 and (human <= 0.95 if kind == "labels" else human >= 0.3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000, help="data sets per configuration")
    parser.add_argument("--quick", action="store_true", help="a small grid (minutes)")
    args = parser.parse_args()
    start = time.monotonic()
    worst = {n: [0.0, 0.0] for n in SIZES}  # n -> [claimed configurations, all]
    for index, config in enumerate(grid(args.quick)):
        level = boundary(config)
        rates = []
        scoring = "accuracy" if config[0] == "labels" else "neg_rmse"
        context = AlignContext() if config[0] == "scores" else None
        names = [f"h{k}" for k in range(config[1])]
        for n in SIZES:
            rng = np.random.default_rng(1000 * index + n)
            judge, humans = draw(rng, config, args.reps, n, level)
            passed = sum(
                alt_test(judge[r], humans[r], names, scoring, config[4], min_items=2,
                         context=context).passed  # fmt: skip
                for r in range(args.reps)
            )
            rate = passed / args.reps
            rates.append(f"{n}: {rate:.3f}")
            worst[n][1] = max(worst[n][1], rate)
            if claimed(config):
                worst[n][0] = max(worst[n][0], rate)
        print(f"{config}: {', '.join(rates)}", file=sys.stderr, flush=True)
    print("| n per annotator | largest false-pass rate (annotators ≤ 95%, ε ≥ 0.1) | over the whole grid |")
    print("|---|---|---|")
    for n in SIZES:
        print(f"| {n} | {worst[n][0]:.3f} | {worst[n][1]:.3f} |")
    print(f"\n{args.reps} data sets per configuration and n; {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
