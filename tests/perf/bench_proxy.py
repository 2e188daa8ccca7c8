"""POST /judge on a LiteLLM route against the LiteLLM proxy, both in front of the same instant
stand-in (tests/perf/instant_llm.py), 32 requests in flight each (issue 40: qadi >= 2x the
proxy's throughput).

The proxy (`litellm --config proxy.yaml`, one worker) is asked for the chat completion qadi's
judge call sends for the same POST /judge body: the same messages (so the same prompt) and the
same JSON-schema response format, no logprobs. qadi (`qadi serve`, one uvicorn worker, SQLite)
grades with an `openai/` judge on its default transport, LiteLLM, with `logprobs: false`, and,
for reference, the same judge with `transport: lean`. The ceiling of a LiteLLM route is
LiteLLM's own call: the same judge calls made with `litellm.acompletion` in this process
(`bench_service.direct`; its CPU includes planning each call, ~0.05 ms), no server around
them. Each set-up runs twice, interleaved (the machine drifts); each prints requests/s, the
server's CPU per request (the server process and its children, from /proc; this process's
for `litellm.acompletion`) and p50 latency, then the ratios to the proxy.

The proxy needs `litellm[proxy]`, which qadi does not install: the script makes its own virtual
environment (default ~/.cache/qadi-bench/litellm-proxy, or --venv PATH) and installs
`litellm[proxy]` from the package registry at the very LiteLLM version of the environment
running this script, once; a later run reuses it (a different version is reinstalled).

Run: .venv/bin/python tests/perf/bench_proxy.py [--requests 1000] [--concurrency 32] [--venv PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import yaml  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.conftest import free_port, wait_for_http  # noqa: E402
from tests.perf.bench_service import (  # noqa: E402
    cpu_seconds,
    direct,
    drive,
    planned_call,
    print_runs,
    serve,
)

VENV = Path.home() / ".cache/qadi-bench/litellm-proxy"
MODEL = "openai/gpt-4.1"
ALONE = "litellm.acompletion alone"


def proxy_venv(venv: Path) -> Path:
    """The proxy's `litellm` command, from its own environment at this LiteLLM's version; made
    (or remade) when missing or of another version, since qadi's .venv has no proxy extras."""
    spec = f"litellm[proxy]=={importlib.metadata.version('litellm')}"
    marker = venv / "qadi-bench-installed"
    if not (marker.exists() and marker.read_text() == spec):
        print(f"installing {spec} into {venv} (once) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([venv / "bin/python", "-m", "pip", "install", "-q", spec], check=True)
        marker.write_text(spec)
    return venv / "bin/litellm"


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of a process and of its live descendants (the proxy's CLI may run its
    server in a child)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            total += cpu_seconds(current)
        except OSError:
            continue
        todo += children.get(current, [])
    return total


def proxy_payload(api_base: str):
    """The proxy's request for POST /judge's body i: the judge call qadi plans for it."""
    from judges import Grader, parse_config

    grader = Grader(parse_config(judge_config(api_base, "litellm")))

    def payload(i: int) -> dict:
        call = planned_call(grader, i)
        return {
            "model": "bench-judge",
            "messages": call.messages,
            "response_format": call.response_format,
            "temperature": 0,
        }

    return payload


def through_proxy(litellm: Path, api_base: str, requests: int, concurrency: int):
    """(wall seconds, latencies, proxy CPU seconds) of `requests` chat completions."""
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "proxy.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "model_list": [
                        {
                            "model_name": "bench-judge",
                            "litellm_params": {
                                "model": MODEL,
                                "api_base": api_base,
                                "api_key": "x",
                            },
                        }
                    ],
                    "litellm_settings": {"num_retries": 0},
                    # no key, as qadi runs here (QADI_AUTH=off); the proxy refuses to start
                    # without one unless told
                    "general_settings": {"dangerously_permit_weak_or_unset_master_key": True},
                }
            )
        )
        port = free_port()
        with open(Path(tmp) / "proxy.log", "w") as log:
            proxy = subprocess.Popen(
                [litellm, "--config", config, "--host", "127.0.0.1", "--port", str(port)]
                + ["--num_workers", "1"],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "LITELLM_LOG": "ERROR"},
            )
            try:
                base = f"http://127.0.0.1:{port}"
                wait_for_http(f"{base}/health/liveliness", timeout=180, process=proxy)
                before = tree_cpu_seconds(proxy.pid)
                seconds, latency, _ = asyncio.run(
                    drive(
                        base, "/v1/chat/completions", proxy_payload(api_base), requests, concurrency
                    )  # fmt: skip
                )
                return seconds, latency, tree_cpu_seconds(proxy.pid) - before
            finally:
                proxy.terminate()
                proxy.wait(timeout=30)


def judge_config(api_base: str, transport: str) -> dict:
    """qadi's judges file: one `openai/` judge on `transport`, token probabilities off."""
    entry = {
        "model_name": "bench-judge",
        "litellm_params": {"model": MODEL, "api_base": api_base, "api_key": "x"},
        "transport": transport,
        "logprobs": False,
    }
    return {"model_list": [entry], "qadi": {"num_retries": 0}}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--venv", type=Path, default=VENV, help="the proxy's environment")
    args = parser.parse_args()
    litellm = proxy_venv(args.venv)
    from tests.perf.instant_llm import start

    backend, api_base = start()
    runs: dict[str, list[tuple[float, float, list[float]]]] = {}
    load = os.getloadavg()[0]
    try:
        for setup in ("proxy", "qadi, litellm", "qadi, lean", ALONE) * 2:
            if setup == "proxy":
                seconds, latency, cpu = through_proxy(
                    litellm, api_base, args.requests, args.concurrency
                )
            elif setup == ALONE:
                config = judge_config(api_base, "litellm")
                seconds, latency, cpu = asyncio.run(direct(config, args.requests, args.concurrency))
            else:
                config = judge_config(api_base, setup.split(", ")[1])
                seconds, latency, cpu = serve(config, args.requests, args.concurrency)
            # the warm-up request is in the CPU too
            runs.setdefault(setup, []).append(
                (args.requests / seconds, 1000 * cpu / (args.requests + 1), latency)
            )
    finally:
        backend.terminate()
    report(runs, args, (load, os.getloadavg()[0]))


def report(runs: dict, args: argparse.Namespace, load: tuple[float, float]) -> None:
    print(
        f"requests={args.requests} concurrency={args.concurrency} backend: instant_llm.py, "
        f"{MODEL}, no logprobs; load average {load[0]:.1f} -> {load[1]:.1f}"
    )
    rate, cpu = print_runs(runs, "", len(ALONE))
    for setup in ("qadi, litellm", "qadi, lean", ALONE):
        print(
            f"{setup} / proxy: throughput {rate[setup] / rate['proxy']:.2f}x (target >= 2 on "
            f"litellm), CPU per request {cpu[setup]:.2f} vs {cpu['proxy']:.2f} ms "
            f"({cpu[setup] / cpu['proxy']:.2f})"
        )


if __name__ == "__main__":
    main()
