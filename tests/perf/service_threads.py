"""The service's CPU per `POST /judge`, thread by thread (issue 40): the event loop's thread
against the threads that run the group commits' database work. SQLite releases the GIL, so a
py-spy profile with `--gil` hardly shows the database threads; /proc/PID/task/*/stat does.
And the group commit's rounds in the counted requests, per step, from `GET /metrics`
(`qadi_commit_round_jobs`): how many transactions, and how many requests each shared.

One worker, a fresh SQLite file (or QADI_TEST_POSTGRES_URL), a lean `hosted_vllm/` judge
against tests/perf/instant_llm.py, 200 requests to warm up and then --requests counted, at
--concurrency in flight. QADI_* settings in the environment reach the service (e.g.
QADI_COMMIT_LINGER_MS).

Run: .venv/bin/python tests/perf/service_threads.py [--requests 2000] [--concurrency 32]
     [--no-logprobs]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import httpx  # noqa: E402

from tests.conftest import commit_rounds  # noqa: E402
from tests.perf.bench_regrade import hosted_vllm_entry  # noqa: E402
from tests.perf.bench_service import served, stat_cpu_seconds  # noqa: E402
from tests.perf.load_judge import Service  # noqa: E402


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds (user + system) of each thread of process `pid`: the process's first
    thread, which runs the event loop, as "loop", the others by thread id."""
    seconds = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            spent = stat_cpu_seconds(task / "stat")
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        seconds["loop" if task.name == str(pid) else task.name] = spent
    return seconds


def threads_and_rounds(service: Service) -> tuple[dict[str, float], dict]:
    metrics = httpx.get(f"http://127.0.0.1:{service.port}/metrics").text
    return thread_cpu(service.process.pid), commit_rounds(metrics)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--no-logprobs", action="store_true")
    args = parser.parse_args()
    from tests.perf.instant_llm import start

    process, api_base = start()
    try:
        how = {"logprobs": False} if args.no_logprobs else {}
        entry = hosted_vllm_entry(api_base, transport="lean", **how)
        config = {"model_list": [entry], "qadi": {"num_retries": 0}}
        seconds, latency, before, after = served(
            config, args.requests, args.concurrency, read=threads_and_rounds, warm_up=200
        )
    finally:
        process.terminate()
    (cpu_before, rounds_before), (cpu_after, rounds_after) = before, after
    per_request = {
        thread: 1000 * (cpu - cpu_before.get(thread, 0.0)) / args.requests
        for thread, cpu in cpu_after.items()
    }
    loop = per_request.pop("loop", 0.0)
    others = sorted((ms for ms in per_request.values() if ms >= 0.005), reverse=True)
    print(
        f"requests={args.requests} concurrency={args.concurrency} "
        f"logprobs={not args.no_logprobs}: {args.requests / seconds:.0f} req/s, "
        f"p50 {1000 * statistics.median(latency):.0f} ms; service CPU per request "
        f"{loop + sum(others):.3f} ms: event loop {loop:.3f} ms, other threads "
        + ", ".join(f"{ms:.3f}" for ms in others)
        + " ms"
    )
    for step in sorted({step for step, _ in rounds_after}):
        rounds, jobs = (
            rounds_after[step, part] - rounds_before.get((step, part), 0)
            for part in ("count", "sum")
        )
        print(f"  {step}: {rounds:.0f} transactions, {jobs / rounds:.2f} requests each")


if __name__ == "__main__":
    main()
