"""`qadi regrade --engine ray --ray-workers 2` against the default engine, in one run, on the
same input: answers graded by one judge on the LLM test double answering after 100 ms, each
engine into a fresh SQLite database with a results file. Prints both times and their ratio.

The default engine runs C calls in flight in total; the ray engine runs C per actor, so it is
given C / workers to keep the same number in flight. Both times are the `wall time` qadi
reports; the ray engine's includes starting a local Ray and the actor pool, so the ray command
is run a second time (it then makes no call) to show what that start-up costs.

Run: .venv/bin/python tests/perf/bench_regrade_ray.py [--answers 2000] [--concurrency 64]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from service.db.engine import upgrade  # noqa: E402
from tests.perf.bench_regrade import (  # noqa: E402
    LATENCY,
    arguments,
    regrade,
    start_slow_llm_server,
    write_inputs,
)

WORKERS = 2


def fresh_database(workdir: Path) -> None:
    (workdir / "qadi.db").unlink(missing_ok=True)
    upgrade(f"sqlite:///{workdir / 'qadi.db'}")


def calls_made(server) -> int:
    return httpx.get(f"{server.base}/_control/calls").json()["count"]


def main() -> None:
    args = arguments(2000)
    process, server = start_slow_llm_server()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            answers, config = write_inputs(workdir, args.answers, server.api_base)
            fresh_database(workdir)
            local, local_total = regrade(workdir, answers, config, args.concurrency)
            calls = calls_made(server)
            fresh_database(workdir)
            per_actor = str(max(1, args.concurrency // WORKERS))
            ray_options = ("--engine", "ray", "--ray-workers", str(WORKERS))
            ray, ray_total = regrade(workdir, answers, config, per_actor, *ray_options)
            ray_calls = calls_made(server) - calls
            # the same command again: no call, so its time is Ray's and the pool's start-up
            # plus the lookups of what is stored
            rerun, _ = regrade(workdir, answers, config, per_actor, *ray_options)
            rerun_calls = calls_made(server) - calls - ray_calls
    finally:
        process.terminate()
    n = args.answers
    print(f"answers={n} concurrency={args.concurrency} in total, latency {LATENCY * 1000:.0f} ms")
    print(f"default engine:               {local:6.2f} s  {n / local:6.1f} calls/s")
    print(
        f"--engine ray --ray-workers 2: {ray:6.2f} s  {n / ray:6.1f} calls/s "
        f"(whole process {ray_total:.1f} s; default {local_total:.1f} s)"
    )
    print(f"ratio ray / default (wall time of the run): {ray / local:.2f}")
    print(f"ray rerun (start-up and lookups only): {rerun:6.2f} s")
    print(
        f"ratio ray / default with the rerun's time taken off the ray run: "
        f"{(ray - rerun) / local:.2f}"
    )
    print(f"backend calls: default {calls}, ray {ray_calls}, ray rerun {rerun_calls}")


if __name__ == "__main__":
    main()
