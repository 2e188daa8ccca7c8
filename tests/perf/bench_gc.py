"""What the cyclic garbage collector costs a regrade, with and without `service.collector`'s
`start_up_frozen` (issue 40).

In this process, after everything a regrade imports is loaded (qadi, LiteLLM, aiohttp,
SQLAlchemy): the batch core regrades N answers into a fresh SQLite database with a
`hosted_vllm/` judge on the lean transport, against a server that answers at once
(tests/perf/instant_llm.py), as `qadi regrade` does, in three set-ups alternating, --rounds
times: the collector as CPython sets it; the start-up objects frozen, CPython's thresholds
(qadi before 2026-12-02); and `start_up_frozen` as qadi runs its work (frozen, the youngest
generation collected every 10,000 net allocations instead of 700). Each run's CPU per call
(a run of N less a run of --small, so the set-up is left out) and the collector's own time in
it (gc.callbacks), and each set-up's CPU per call over the first's in each round.

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
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
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
from tests.perf.bench_regrade import (  # noqa: E402
    RUBRIC,
    alternated,
    bench_answer,
    hosted_vllm_entry,
)
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


@contextmanager
def frozen_at_cpythons_thresholds() -> Iterator[None]:
    """The start-up frozen, the thresholds left as they are (qadi before 2026-12-02)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


# how the collector runs during the work, by set-up
SETUPS = {
    "not frozen": nullcontext,
    "frozen, CPython's thresholds": frozen_at_cpythons_thresholds,
    "start_up_frozen (qadi)": start_up_frozen,
}


def regrade(workdir: Path, api_base: str, count: int, collecting=nullcontext) -> float:
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
    with collecting():
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
    rounds: list[dict[str, float]] = []  # CPU per call by set-up, each round
    try:
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            regrade(workdir, api_base, args.small)  # lazy imports and first connections
            print(f"objects the collector tracks after start-up: {len(gc.get_objects()):,}")
            for round_ in range(1, args.rounds + 1):
                per_call = {}
                for label, collecting in alternated(round_ - 1, SETUPS):
                    small = regrade(workdir, api_base, args.small, collecting)
                    clock.reset()
                    big = regrade(workdir, api_base, args.answers, collecting)
                    per_call[label] = (big - small) / (args.answers - args.small)
                    collected = ", ".join(
                        f"gen{g} {clock.collections[g]}x {1000 * clock.seconds[g]:.0f} ms"
                        for g in sorted(clock.seconds)
                    )
                    print(
                        f"round {round_}, {label:28s}: CPU per call "
                        f"{1000 * per_call[label]:.3f} ms; collector in the "
                        f"{args.answers}-answer run: {collected or 'none'}"
                    )
                rounds.append(per_call)
    finally:
        process.terminate()
    labels = list(SETUPS)
    for label, base in [(labels[1], labels[0]), (labels[2], labels[0]), (labels[2], labels[1])]:
        each = [per_call[label] / per_call[base] for per_call in rounds]
        print(
            f"{label} / {base}, CPU per call: {', '.join(f'{r:.2f}' for r in each)} "
            f"(median {statistics.median(each):.2f})"
        )


if __name__ == "__main__":
    main()
