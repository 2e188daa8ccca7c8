"""CPU that `JudgeClient.complete` itself adds to a judge call, with LiteLLM's call replaced
by an instant stub, so machine load from other processes hardly moves the figure. Used to
check that a one-deployment judge's hot path did not get slower when judges with several
deployments (routed through `litellm.Router`) were added; run it on both versions.

Run: .venv/bin/python tests/perf/bench_client_overhead.py [--calls 50000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import litellm  # noqa: E402

from judges import parse_config  # noqa: E402
from judges.client import JudgeClient  # noqa: E402

REPLY = object()


async def instant(**_: object) -> object:
    return REPLY


async def run(client: JudgeClient, calls: int) -> float:
    """Microseconds of process CPU per call."""
    messages = [{"role": "user", "content": "grade"}]
    started = time.process_time()
    for _ in range(calls):
        await client.complete("judge", messages, {"type": "json_object"}, max_tokens=64)
    return (time.process_time() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    params = {"model": "openai/gpt-4.1", "api_base": "http://127.0.0.1:9/v1", "api_key": "sk-x"}
    client = JudgeClient(parse_config({"model_list": [{"model_name": "judge",
                                                       "litellm_params": params}]}))
    litellm.acompletion = instant
    per_call = [asyncio.run(run(client, args.calls)) for _ in range(args.repeats)]
    print(f"calls={args.calls} repeats={args.repeats}: JudgeClient.complete CPU per call "
          f"median {statistics.median(per_call):.1f} us (min {min(per_call):.1f})")


if __name__ == "__main__":
    main()
