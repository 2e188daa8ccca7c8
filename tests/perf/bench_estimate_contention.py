"""POST /judge latency while heavy reads compute over a database of N judgments (POST
/estimates, or with --heavy report POST /calibration/reports), with them in the serving
process's thread pool (QADI_REPORT_WORKERS=0, as before issue 39), in a report worker
process at the serving process's priority (QADI_REPORT_NICE=0) and in one at a lower
priority (the defaults: 1 worker, niceness 10), in one run, each against its idle baseline.

Judges are the stand-ins (no network); auth is off; one service process each time.

With --url, over that database instead (e.g. judgment_db.py's 10M on PostgreSQL, whose
own query processes then compete too), and --setups picks the set-ups to run.

Run: PYTHONPATH=. .venv/bin/python tests/perf/bench_estimate_contention.py --judgments 100000
     PYTHONPATH=. .venv/bin/python tests/perf/bench_estimate_contention.py --heavy report
     PYTHONPATH=. .venv/bin/python tests/perf/bench_estimate_contention.py \
         --url postgresql+psycopg://.../tenm --setups 1:10 --seconds 150
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from service.db.engine import upgrade
from tests.conftest import ROOT, free_port
from tests.perf.judgment_db import populate
from tests.perf.load_judge import Service

ESTIMATE = {"rubric": "kinayat-explanation", "by": ["candidate_model"], "scale_min": 1,
            "scale_max": 5}  # fmt: skip
REPORT = {"rubric": "kinayat-explanation", "by": ["candidate_model"], "bootstrap": 500}
HEAVY = {"estimates": ("/estimates", ESTIMATE), "report": ("/calibration/reports", REPORT)}
SETUPS = ["0:0", "1:0", "1:10"]  # in the serving process's threads; a worker; a niced worker


def body(number: int) -> dict:
    return {"rubric_id": "kinayat-explanation", "candidate_model": "gpt-4o",
            "judges": ["stand-in-good"], "response": f"answer {number} about patience",
            "reference": "patience brings relief"}  # fmt: skip


async def judge_latencies(client: httpx.AsyncClient, seconds: float, start: int) -> list[float]:
    """POST /judge one after another for `seconds`, each a new answer (no cache hit)."""
    latencies, number, stop = [], start, time.monotonic() + seconds
    while time.monotonic() < stop:
        began = time.perf_counter()
        response = await client.post("/judge", json=body(number))
        assert response.status_code == 200, response.text
        latencies.append(time.perf_counter() - began)
        number += 1
    return latencies


async def heavy_until(client: httpx.AsyncClient, heavy: str, stop: asyncio.Event) -> int:
    """The heavy request, one after another until `stop`: how many ran."""
    path, request = HEAVY[heavy]
    done = 0
    while not stop.is_set():
        response = await client.post(path, json=request, timeout=600)
        assert response.is_success, response.text
        done += 1
    return done


async def measure(base: str, seconds: float, heavy: str) -> dict[str, list[float] | int]:
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        await client.post("/judge", json=body(-1))  # the library rubric stored on first use
        path, request = HEAVY[heavy]
        await client.post(path, json=request, timeout=600)  # the worker started
        idle = await judge_latencies(client, seconds, 0)
        stop = asyncio.Event()
        running = asyncio.create_task(heavy_until(client, heavy, stop))
        busy = await judge_latencies(client, seconds, 1_000_000)
        stop.set()
        done = await running
    return {"idle": idle, "busy": busy, "done": done}


def p(values: list[float], q: float) -> float:
    return 1000 * sorted(values)[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--judgments", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--heavy", choices=sorted(HEAVY), default="estimates")
    parser.add_argument("--url", help="a database of judgments to use (else SQLite, made here)")
    parser.add_argument("--setups", nargs="+", default=SETUPS,
                        help="QADI_REPORT_WORKERS:QADI_REPORT_NICE pairs")  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        url = args.url or f"sqlite:///{workdir / 'bench.db'}"
        if args.url:
            upgrade(url)
        else:
            populate(url, args.judgments)
        print(f"judgments={args.url or f'{args.judgments} (SQLite)'}, {args.seconds:.0f} s per "
              f"phase, POST {HEAVY[args.heavy][0]} {HEAVY[args.heavy][1]}")  # fmt: skip
        for workers, nice in (setup.split(":") for setup in args.setups):
            service = Service(url, ROOT / "service/sample/judges.yaml", free_port(), workdir,
                              {"QADI_REPORT_WORKERS": workers, "QADI_REPORT_NICE": nice})  # fmt: skip
            service.start()
            try:
                base = f"http://127.0.0.1:{service.port}"
                found = asyncio.run(measure(base, args.seconds, args.heavy))
            finally:
                service.stop()
            idle, busy = found["idle"], found["busy"]
            print(
                f"QADI_REPORT_WORKERS={workers} QADI_REPORT_NICE={nice}: POST /judge p50/p95 idle "
                f"{p(idle, .5):.1f}/{p(idle, .95):.1f} ms, during {args.heavy} "
                f"{p(busy, .5):.1f}/{p(busy, .95):.1f} ms (p50 ratio "
                f"{statistics.median(busy) / statistics.median(idle):.2f}; "
                f"{found['done']} x POST {HEAVY[args.heavy][0]} ran)"
            )


if __name__ == "__main__":
    main()
