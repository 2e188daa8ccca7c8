"""POST /judge against an instant backend, compared with sending the same judge requests
(messages and JSON schema) through `litellm.acompletion` directly, at the same concurrency
(DESIGN.md: throughput >= 60% of the direct calls, <= 6 ms of service CPU per request).
The direct calls run before and after the service (the machine's speed drifts; the two are
averaged, as tests/perf/bench_regrade.py does), and their own process CPU per call is
LiteLLM's cost, printed as its share of the service's CPU per request.

With --lean (issue 40), against a server that answers at once (tests/perf/instant_llm.py)
with a `hosted_vllm/` judge: the service on LiteLLM (`transport: litellm`, the route before
issue 40) and then on the lean transport, each one's CPU per request and throughput, and
their ratio (targets: lean <= 3 ms of service CPU per request, >= 2.5x the throughput).

Run: .venv/bin/python tests/perf/bench_service.py [--requests 2000] [--concurrency 32]
[--project NAME] [--lean] (PostgreSQL when QADI_TEST_POSTGRES_URL is set, else a temporary SQLite
file). With --project the service grades as that project (made here; QADI_PROJECT with auth
off), the path whose cache keys and answer hashes carry the project; without it, the default
project's, whose keys are those of before projects.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import aiohttp  # noqa: E402
import yaml  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.conftest import free_port, start_llm_server, wait_for_http  # noqa: E402
from tests.perf.bench_regrade import hosted_vllm_entry  # noqa: E402
from tests.perf.load_judge import Service, migrated_database  # noqa: E402
from tests.perf.page_times import percentile  # noqa: E402


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc (Linux)."""
    return stat_cpu_seconds(Path(f"/proc/{pid}/stat"))


def stat_cpu_seconds(stat: Path) -> float:
    """User + system CPU time in a /proc `stat` file: a process's, or a thread's
    (/proc/PID/task/TID/stat)."""
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def timed(n: int, concurrency: int, call) -> tuple[float, list[float], float]:
    """Wall seconds, latencies, and this process's CPU seconds, of `n` calls."""
    semaphore = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def one(i: int) -> None:
        async with semaphore:
            started = time.perf_counter()
            await call(i)
            latencies.append(time.perf_counter() - started)

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one(i) for i in range(n)))
    return time.perf_counter() - started, latencies, time.process_time() - cpu


def body(i: int) -> dict:
    return {
        "kind": "rubric",
        "response": f"answer {i}",
        "candidate_model": "qwen-2.5",
        "rubric_id": "iraqi-linguistic-shaku-maku",
    }


def planned_call(grader, i: int):
    """The judge call (messages, response format) POST /judge plans for `body(i)`."""
    from judges import GradeRequest
    from rubrics import library_rubric

    request = GradeRequest(
        rubric=library_rubric(body(i)["rubric_id"]),
        **{k: v for k, v in body(i).items() if k not in ("kind", "rubric_id")},
    )
    return grader.plan(request).call


async def direct(config: dict, n: int, concurrency: int):
    """The judge call POST /judge makes for the same body, sent with litellm.acompletion."""
    import litellm

    from judges import Grader, parse_config

    grader = Grader(parse_config(config))
    params = config["model_list"][0]["litellm_params"]

    async def call(i: int) -> None:
        judge_call = planned_call(grader, i)
        response = await litellm.acompletion(
            messages=judge_call.messages,
            response_format=judge_call.response_format,
            temperature=0,
            num_retries=0,
            **params,
        )
        assert response.choices[0].message.content

    return await timed(n, concurrency, call)


async def drive(base: str, path: str, payload, n: int, concurrency: int):
    """`timed` POSTs of `payload(i)` to `path`, after one to warm up, each answered 200.

    Sent by aiohttp, not httpx: httpx costs ~2.9 ms of CPU per call here against aiohttp's
    ~0.15 ms (issue 40), and under it the driver could not keep `concurrency` requests in
    the service (with an instant judge and no token probabilities, 1-6 of 32 were inside
    POST /judge at a time, so its group commit ran rounds of ~1.7 requests, against 15-20
    with aiohttp): the figures were the driver's, not the service's at 32 in flight."""
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(
        base, connector=connector, timeout=aiohttp.ClientTimeout(total=60)
    ) as client:

        async def call(i: int) -> None:
            async with client.post(path, json=payload(i)) as response:
                text = await response.text()
                assert response.status == 200, text

        await call(-1)  # warm up (POST /judge stores the library rubric on first use)
        return await timed(n, concurrency, call)


async def through_service(base: str, n: int, concurrency: int):
    return await drive(base, "/judge", body, n, concurrency)


def serve(config: dict, requests: int, concurrency: int, env: dict | None = None):
    """(wall seconds, latencies, service CPU seconds) of `requests` POST /judge, one worker,
    a fresh temporary database (PostgreSQL when QADI_TEST_POSTGRES_URL is set)."""
    seconds, latency, before, after = served(config, requests, concurrency, env)
    return seconds, latency, after - before


def service_cpu(service: Service) -> float:
    """The CPU seconds of a running service's process."""
    return cpu_seconds(service.process.pid)


def served(
    config: dict,
    requests: int,
    concurrency: int,
    env: dict | None = None,
    read: Callable[[Service], Any] = service_cpu,
    warm_up: int = 0,
):
    """(wall seconds, latencies, `read(service)` before and after) of `requests` POST /judge
    to a service of the judges `config` (see `serve`), after `warm_up` requests."""
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        url = migrated_database(workdir)
        judges = workdir / "judges.yaml"
        judges.write_text(yaml.safe_dump(config))
        service = Service(url, judges, free_port(), workdir, env or {})
        service.start()
        try:
            base = f"http://127.0.0.1:{service.port}"
            wait_for_http(f"{base}/healthz")
            if warm_up:
                asyncio.run(through_service(base, warm_up, concurrency))
            before = read(service)
            seconds, latency, _ = asyncio.run(through_service(base, requests, concurrency))
            return seconds, latency, before, read(service)
        finally:
            service.stop()


def print_runs(measured: dict[str, list], prefix: str, width: int):
    """One line per set-up of its runs' (req/s, ms CPU per request, latencies), and the mean
    req/s and CPU per request of each."""
    for setup, runs in measured.items():
        latency = [x for run in runs for x in run[2]]
        print(
            f"{prefix}{setup:{width}s}: "
            + ", ".join(f"{rate:6.1f} req/s {cpu:5.2f} ms CPU/req" for rate, cpu, _ in runs)
            + f"  p50 {1000 * statistics.median(latency):6.1f} ms"
        )
    rate = {s: statistics.mean(r[0] for r in runs) for s, runs in measured.items()}
    cpu = {s: statistics.mean(r[1] for r in runs) for s, runs in measured.items()}
    return rate, cpu


def lean_against_litellm(requests: int, concurrency: int) -> None:
    """The service with a hosted_vllm/ judge on each transport, against an instant server."""
    from tests.perf.instant_llm import start

    process, api_base = start()
    measured = {}
    try:
        for transport in ("litellm", "lean", "lean, no logprobs") * 2:  # the machine drifts
            entry = hosted_vllm_entry(
                api_base,
                transport=transport.split(",")[0],
                **({"logprobs": False} if "no logprobs" in transport else {}),
            )
            config = {"model_list": [entry], "qadi": {"num_retries": 0}}
            seconds, latency, cpu = serve(config, requests, concurrency)
            runs = measured.setdefault(transport, [])
            runs.append((requests / seconds, 1000 * cpu / (requests + 1), latency))
    finally:
        process.terminate()
    print(f"requests={requests} concurrency={concurrency} backend: instant_llm.py, hosted_vllm/")
    rate, cpu = print_runs(measured, "POST /judge, ", 17)
    for lean in ("lean", "lean, no logprobs"):
        print(
            f"{lean} / litellm: throughput {rate[lean] / rate['litellm']:.2f}x (target >= 2.5), "
            f"service CPU per request {cpu[lean]:.2f} ms vs {cpu['litellm']:.2f} ms "
            "(target <= 3 ms)"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--project", default=None, help="grade as this project")
    parser.add_argument("--lean", action="store_true", help="lean vs LiteLLM, hosted_vllm/")
    args = parser.parse_args()
    if args.lean:
        lean_against_litellm(args.requests, args.concurrency)
        return
    llm, server = start_llm_server()
    try:
        config = {
            "model_list": [
                {
                    "model_name": "bench-judge",
                    "litellm_params": {
                        "model": "openai/gpt-4.1",
                        "api_base": server.api_base,
                        "api_key": "x",
                    },
                }
            ],
            "qadi": {"num_retries": 0},
        }
        before = asyncio.run(direct(config, args.requests, args.concurrency))
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            url = migrated_database(workdir)
            env = {}
            if args.project:
                from service.db.engine import make_engine, make_sessionmaker, session_scope
                from service.stores.projects import ensure_project

                with session_scope(make_sessionmaker(make_engine(url))) as session:
                    ensure_project(session, args.project)
                env["QADI_PROJECT"] = args.project
            judges = workdir / "judges.yaml"
            judges.write_text(yaml.safe_dump(config))
            service = Service(url, judges, free_port(), workdir, env)
            service.start()
            try:
                wait_for_http(f"http://127.0.0.1:{service.port}/healthz")
                cpu_before = cpu_seconds(service.process.pid)
                service_seconds, service_latency, _ = asyncio.run(
                    through_service(
                        f"http://127.0.0.1:{service.port}", args.requests, args.concurrency
                    )
                )
                service_cpu = cpu_seconds(service.process.pid) - cpu_before
            finally:
                service.stop()
        after = asyncio.run(direct(config, args.requests, args.concurrency))
    finally:
        llm.terminate()
    direct_seconds = (before[0] + after[0]) / 2
    direct_latency = before[1] + after[1]
    litellm_cpu = (before[2] + after[2]) / 2
    n = args.requests
    print(
        f"requests={n} concurrency={args.concurrency} backend latency=0 ({url.split(':')[0]}) "
        f"project={args.project or 'default'}"
    )
    print(
        f"litellm.acompletion:   {n / direct_seconds:7.1f} calls/s  (before {n / before[0]:.1f}, "
        f"after {n / after[0]:.1f})  p50 "
        f"{1000 * statistics.median(direct_latency):6.1f} ms  p99 "
        f"{1000 * percentile(direct_latency, 0.99):6.1f} ms"
    )
    print(
        f"POST /judge:           {n / service_seconds:7.1f} req/s    p50 "
        f"{1000 * statistics.median(service_latency):6.1f} ms  p99 "
        f"{1000 * percentile(service_latency, 0.99):6.1f} ms"
    )
    print(
        f"service CPU per request: {1000 * service_cpu / (n + 1):.1f} ms "
        "(the service, the clients and the test double share the machine's cores)"
    )
    print(
        f"LiteLLM's own CPU per call (the direct runs' process): {1000 * litellm_cpu / n:.1f} ms "
        f"= {100 * (litellm_cpu / n) / (service_cpu / (n + 1)):.0f}% of the service's"
    )
    print(
        f"throughput ratio: {direct_seconds / service_seconds:.2f} (target >= 0.60); "
        "service CPU target <= 6 ms per request"
    )


if __name__ == "__main__":
    main()
