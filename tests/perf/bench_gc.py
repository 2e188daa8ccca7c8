"""What the cyclic garbage collector costs a regrade, with and without `service.collector`'s
`start_up_frozen` (issue 40).

In this process, after everything a regrade imports is loaded (qadi, LiteLLM, aiohttp,
SQLAlchemy): the batch core regrades N answers into a fresh SQLite database with a
`hosted_vllm/` judge on the lean transport, against a server that answers at once
(tests/perf/instant_llm.py), as `qadi regrade` does, once with the start-up objects frozen
and once without, alternating, --rounds times. Each run's CPU per call (a run of N less a run
of --small, so the set-up is left out) and the collector's own time in it (gc.callbacks),
and the two CPU figures' ratio in each round.

Run: .venv/bin/python tests/perf/bench_gc.py [--answers 4000] [--small 400] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from contextlib import nullcontext
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from judges import AnswerRecord, Grader, GradeRequest, JudgesConfig  # noqa: E402
from rubrics import library_rubric  # noqa: E402
from service.collector import start_up_frozen  # noqa: E402
from service.db.engine import make_engine, make_sessionmaker, upgrade  # noqa: E402
from service.regrading.local import options  # noqa: E402
from service.stores.judgments import project_batcher  # noqa: E402
from tests.perf.bench_regrade import RUBRIC, bench_answer, hosted_vllm_entry  # noqa: E402
from tests.perf.instant_llm import start  # noqa: E402


class CollectorClock:
    """The collector's CPU seconds and collections by generation, from gc.callbacks."""

    def __init__(self) -> None:
        self.seconds: Counter = Counter()
        self.collections: Counter = Counter()
        self._started = 0.0
        gc.callbacks.append(self._tick)

    def _tick(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.process_time()
        else:
            self.seconds[info["generation"]] += time.process_time() - self._started
            self.collections[info["generation"]] += 1

    def reset(self) -> None:
        self.seconds.clear()
        self.collections.clear()


def regrade(workdir: Path, api_base: str, count: int, frozen: bool) -> float:
    """CPU seconds of this process to regrade `count` answers, as `qadi regrade` does."""
    url = f"sqlite:///{workdir / f'{time.monotonic_ns()}.db'}"
    upgrade(url)
    entry = hosted_vllm_entry(api_base, transport="lean", logprobs=False)
    config = JudgesConfig.model_validate({"model_list": [entry]})
    rubric = library_rubric(RUBRIC)
    factory = make_sessionmaker(make_engine(url))
    batcher = project_batcher(Grader(config), factory, "default", options(64, False, False))
    requests = (
        GradeRequest.from_answer(rubric, AnswerRecord(**bench_answer(i)), ["bench-judge"])
        for i in range(count)
    )
    started = time.process_time()
    with start_up_frozen() if frozen else nullcontext():
        stats = asyncio.run(batcher.run(requests))
    spent = time.process_time() - started
    factory.kw["bind"].dispose()
    if stats.calls["ok"] != count:
        raise SystemExit(f"expected {count} ok calls, got {dict(stats.calls)}")
    return spent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answers", type=int, default=4000)
    parser.add_argument("--small", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    process, api_base = start()
    clock = CollectorClock()
    ratios = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            regrade(workdir, api_base, args.small, False)  # lazy imports and first connections
            print(f"objects the collector tracks after start-up: {len(gc.get_objects()):,}")
            for round_ in range(1, args.rounds + 1):
                per_call = {}
                for frozen in (False, True):
                    small = regrade(workdir, api_base, args.small, frozen)
                    clock.reset()
                    big = regrade(workdir, api_base, args.answers, frozen)
                    per_call[frozen] = (big - small) / (args.answers - args.small)
                    collected = ", ".join(
                        f"gen{g} {clock.collections[g]}x {1000 * clock.seconds[g]:.0f} ms"
                        for g in sorted(clock.seconds)
                    )
                    label = "start-up frozen" if frozen else "not frozen     "
                    print(
                        f"round {round_}, {label}: CPU per call {1000 * per_call[frozen]:.3f} ms;"
                        f" collector in the {args.answers}-answer run: {collected or 'none'}"
                    )
                ratios.append(per_call[True] / per_call[False])
    finally:
        process.terminate()
    print(
        f"frozen / not frozen, CPU per call: {', '.join(f'{r:.2f}' for r in ratios)} "
        f"(median {statistics.median(ratios):.2f})"
    )


if __name__ == "__main__":
    main()
