"""The service's CPU per `POST /judge`, thread by thread (issue 40): the event loop's thread
against the threads that run the group commits' database work. SQLite releases the GIL, so a
py-spy profile with `--gil` hardly shows the database threads; /proc/PID/task/*/stat does.

One worker, a fresh SQLite file (or QADI_TEST_POSTGRES_URL), a lean `hosted_vllm/` judge
against tests/perf/instant_llm.py, 200 requests to warm up and then --requests counted, at
--concurrency in flight. QADI_* settings in the environment reach the service (e.g.
QADI_COMMIT_LINGER_MS).

Run: .venv/bin/python tests/perf/service_threads.py [--requests 2000] [--concurrency 32]
     [--no-logprobs]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.conftest import free_port, wait_for_http  # noqa: E402
from tests.perf.bench_service import body, drive, stat_cpu_seconds  # noqa: E402
from tests.perf.load_judge import Service, migrated_database  # noqa: E402


def thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of each thread of process `pid`, by thread id."""
    seconds = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            seconds[int(task.name)] = stat_cpu_seconds(task / "stat")
        except FileNotFoundError:  # the thread ended meanwhile
            continue
    return seconds


def judge_entry(api_base: str, logprobs: bool) -> dict:
    return {
        "model_name": "bench-judge",
        "litellm_params": {"model": "hosted_vllm/meta-llama/Llama-3.1-8B", "api_base": api_base},
        "transport": "lean",
        **({} if logprobs else {"logprobs": False}),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--no-logprobs", action="store_true")
    args = parser.parse_args()
    from tests.perf.instant_llm import start

    process, api_base = start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            url = migrated_database(workdir)
            config = workdir / "judges.yaml"
            entry = judge_entry(api_base, not args.no_logprobs)
            config.write_text(yaml.safe_dump({"model_list": [entry], "qadi": {"num_retries": 0}}))
            service = Service(url, config, free_port(), workdir)
            service.start()
            try:
                base = f"http://127.0.0.1:{service.port}"
                wait_for_http(f"{base}/healthz")
                asyncio.run(drive(base, "/judge", body, 200, args.concurrency))
                before = thread_cpu(service.process.pid)
                seconds, latency, _ = asyncio.run(
                    drive(base, "/judge", body, args.requests, args.concurrency)
                )
                after = thread_cpu(service.process.pid)
            finally:
                service.stop()
    finally:
        process.terminate()
    main_thread = service.process.pid  # the event loop runs on the process's first thread
    per_request = {
        tid: 1000 * (cpu - before.get(tid, 0.0)) / args.requests for tid, cpu in after.items()
    }
    loop = per_request.pop(main_thread, 0.0)
    others = sorted((ms for ms in per_request.values() if ms >= 0.005), reverse=True)
    print(
        f"requests={args.requests} concurrency={args.concurrency} "
        f"logprobs={not args.no_logprobs}: {args.requests / seconds:.0f} req/s, "
        f"p50 {1000 * statistics.median(latency):.0f} ms; service CPU per request "
        f"{loop + sum(others):.3f} ms: event loop {loop:.3f} ms, other threads "
        + ", ".join(f"{ms:.3f}" for ms in others)
        + " ms"
    )


if __name__ == "__main__":
    main()
