"""Where POST /judge spends its CPU: py-spy samples the service under bench_service's load
and this prints each function's inclusive share of the busy samples (idle waits dropped).

With --lean, a `hosted_vllm/` judge on the lean transport (issue 40) against a server that
answers at once (tests/perf/instant_llm.py), so what is left is qadi's own CPU; with
--no-logprobs too, that judge asks for no token probabilities (its entry's `logprobs: false`).

Run: pip install py-spy && .venv/bin/python tests/perf/profile_service.py [--requests 800]
     [--top 40] [--out stacks.txt] [--lean [--no-logprobs]]  (needs ptrace rights: root, or CAP_SYS_PTRACE)
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.conftest import free_port, start_llm_server, wait_for_http  # noqa: E402
from tests.perf.bench_service import through_service  # noqa: E402
from tests.perf.load_judge import Service, migrated_database  # noqa: E402

IDLE = ("wait", "select", "epoll")


def record(out: Path, requests: int, lean: bool = False, logprobs: bool = True) -> None:
    if lean:
        from tests.perf.instant_llm import start

        llm, api_base = start()
        params = {"model": "hosted_vllm/meta-llama/Llama-3.1-8B", "api_base": api_base}
    else:
        llm, server = start_llm_server()
        params = {"model": "openai/gpt-4.1", "api_base": server.api_base, "api_key": "x"}
    config = {
        "model_list": [
            {"model_name": "bench-judge", "litellm_params": params}
            | ({} if logprobs else {"logprobs": False})
        ],
        "qadi": {"num_retries": 0},
    }
    try:
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            judges = workdir / "judges.yaml"
            judges.write_text(yaml.safe_dump(config))
            service = Service(migrated_database(workdir), judges, free_port(), workdir)
            service.start()
            try:
                wait_for_http(f"http://127.0.0.1:{service.port}/healthz")
                spy = subprocess.Popen(
                    ["py-spy", "record", "--gil", "--format", "raw", "-r", "200", "-o", str(out)]
                    + ["-p", str(service.process.pid)],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                time.sleep(1)
                asyncio.run(through_service(f"http://127.0.0.1:{service.port}", requests, 32))
                spy.send_signal(2)
                spy.wait(timeout=60)
            finally:
                service.stop()
    finally:
        llm.terminate()


def summarize(stacks: Path, top: int) -> None:
    inclusive: collections.Counter = collections.Counter()
    busy = 0
    for line in stacks.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        # idle: waiting in a selector, a condition, or a thread pool's C-level queue
        if any(k in frames[-1] for k in IDLE) or frames[-1].startswith("_worker ("):
            continue
        if any("Condition.wait" in f for f in frames):
            continue
        busy += int(count)
        names = {f.split(" (")[0] + " (" + f.rsplit("/", 1)[-1].split(":")[0] + ")" for f in frames}
        for name in names:
            inclusive[name] += int(count)
    print(f"busy samples: {busy}")
    for name, count in inclusive.most_common(top):
        print(f"{100 * count / busy:5.1f}%  {name}")


def add_output_options(parser: argparse.ArgumentParser, stacks: str) -> None:
    """--top (the functions printed) and --out (where py-spy's samples go, `stacks` in the
    temporary directory by default): every profile script's."""
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / stacks)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=800)
    add_output_options(parser, "qadi-stacks.txt")
    parser.add_argument("--lean", action="store_true", help="a hosted_vllm/ judge, lean")
    parser.add_argument("--no-logprobs", action="store_true", help="--lean: logprobs: false")
    args = parser.parse_args()
    record(args.out, args.requests, args.lean, not args.no_logprobs)
    summarize(args.out, args.top)


if __name__ == "__main__":
    main()
