"""CPU that `JudgeClient.complete` itself adds to a judge call, with LiteLLM's call replaced
by an instant stub, so machine load from other processes hardly moves the figure. Used to
check that a one-deployment judge's hot path did not get slower when judges with several
deployments (routed through `litellm.Router`) were added; run it on both versions.

With --live, the whole call instead, against a server that answers at once
(tests/perf/instant_llm.py, its own process), `--in-flight` calls at a time, one client after
the other in this process, each measured by this process's CPU per call and calls/s (issue
40): a bare aiohttp loop (the floor), `JudgeClient.complete` on the lean transport and on
LiteLLM's `hosted_vllm/` route, `litellm.acompletion` on its `openai/` route (through the
OpenAI SDK, and through LiteLLM's own HTTP handler, qadi's default) and its `aiohttp_openai/`
route, and the `openai` SDK alone on httpx and on aiohttp (`openai.DefaultAioHttpClient`;
that row needs the `httpx-aiohttp` package, which qadi does not depend on, and says so when
it is missing). Ratios are against the bare loop of the same run (run first and last,
averaged).

Run: .venv/bin/python tests/perf/bench_client_overhead.py [--calls 50000] [--repeats 5]
     .venv/bin/python tests/perf/bench_client_overhead.py --live [--calls 3000] [--in-flight 32]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
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
HANDLER = "EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER"


async def instant(**_: object) -> object:
    return REPLY


async def run(client: JudgeClient, calls: int) -> float:
    """Microseconds of process CPU per call."""
    messages = [{"role": "user", "content": "grade"}]
    started = time.process_time()
    for _ in range(calls):
        await client.complete("judge", messages, {"type": "json_object"}, max_tokens=64)
    return (time.process_time() - started) / calls * 1e6


MESSAGES = [
    {"role": "system", "content": "You grade answers against a rubric. Reply in JSON."},
    {"role": "user", "content": "Rubric: the answer is correct.\nAnswer: 4\nGrade it."},
]
FORMAT = {
    "type": "json_schema",
    "json_schema": {
        "name": "verdict",
        "schema": {
            "type": "object",
            "properties": {"rating": {"type": "integer", "minimum": 1, "maximum": 5}},
            "required": ["rating"],
        },
    },
}
SAMPLING = {"temperature": 0, "max_tokens": 64, "logprobs": True, "top_logprobs": 10}


async def in_flight(calls: int, width: int, call) -> tuple[float, float]:
    """(process CPU seconds per call, calls per second) of `calls` calls, `width` at a time."""
    semaphore = asyncio.Semaphore(width)

    async def one() -> None:
        async with semaphore:
            await call()

    await asyncio.gather(*(one() for _ in range(min(width, calls))))  # connections open
    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one() for _ in range(calls)))
    wall, used = time.perf_counter() - started, time.process_time() - cpu
    return used / calls, calls / wall


async def bare_aiohttp(
    api_base: str, calls: int, width: int, bodies: list[dict] | None = None
) -> tuple[float, float]:
    """The floor: aiohttp posting `bodies` in turn (a rating request by default) and
    decoding each reply whole with msgspec (the fastest full decoding: on a criteria reply
    with token probabilities this loop took 5.41 ms a call with `response.json()`, 4.42 with
    msgspec, bench_regrade.py --lean), no other work."""
    import aiohttp
    import msgspec

    default = {"model": "judge", "messages": MESSAGES, "response_format": FORMAT, **SAMPLING}
    sent = itertools.cycle(bodies or [default])
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def call() -> None:
            body = next(sent)
            async with session.post(f"{api_base}/chat/completions", json=body) as response:
                assert msgspec.json.decode(await response.read())["choices"]

        return await in_flight(calls, width, call)


async def judge_client(api_base: str, transport: str, calls: int, width: int):
    params = {"model": "hosted_vllm/judge", "api_base": api_base}
    entry = {"model_name": "judge", "litellm_params": params, "transport": transport}
    client = JudgeClient(parse_config({"model_list": [entry], "qadi": {"num_retries": 0}}))

    async def call() -> None:
        outcome = await client.complete("judge", MESSAGES, FORMAT, **SAMPLING)
        assert outcome.status == "ok", outcome.error

    return await in_flight(calls, width, call)


async def litellm_route(api_base: str, route: str, calls: int, width: int, sdk: bool = False):
    """`litellm.acompletion` on `route`; `sdk`: through the OpenAI SDK, not LiteLLM's own
    HTTP handler (qadi's default for OpenAI-compatible routes, judges/__init__.py)."""
    os.environ[HANDLER] = "false" if sdk else "true"  # LiteLLM reads it at every call

    async def call() -> None:
        response = await litellm.acompletion(
            model=f"{route}judge", messages=MESSAGES, api_base=api_base, api_key="x",
            response_format=FORMAT, num_retries=0, **SAMPLING,
        )  # fmt: skip
        assert response.choices[0].message.content

    return await in_flight(calls, width, call)


async def openai_sdk(api_base: str, aiohttp: bool, calls: int, width: int):
    import openai

    transport = {"http_client": openai.DefaultAioHttpClient()} if aiohttp else {}
    async with openai.AsyncOpenAI(
        base_url=api_base, api_key="x", max_retries=0, **transport
    ) as sdk:

        async def call() -> None:
            response = await sdk.chat.completions.create(
                model="judge", messages=MESSAGES, response_format=FORMAT, **SAMPLING
            )
            assert response.choices[0].message.content

        return await in_flight(calls, width, call)


def has_httpx_aiohttp() -> bool:
    import importlib.util

    return importlib.util.find_spec("httpx_aiohttp") is not None


def live(calls: int, width: int) -> None:
    from tests.perf.instant_llm import start

    process, api_base = start()
    clients = {
        "bare aiohttp loop": lambda: bare_aiohttp(api_base, calls, width),
        "JudgeClient, lean transport": lambda: judge_client(api_base, "lean", calls, width),
        "JudgeClient, litellm hosted_vllm/": lambda: judge_client(
            api_base, "litellm", calls, width
        ),
        "litellm.acompletion openai/, SDK": lambda: litellm_route(
            api_base, "openai/", calls, width, sdk=True
        ),
        "litellm.acompletion openai/, handler": lambda: litellm_route(
            api_base, "openai/", calls, width
        ),
        "litellm.acompletion aiohttp_openai/": lambda: litellm_route(
            api_base, "aiohttp_openai/", calls, width
        ),
        "openai SDK, httpx": lambda: openai_sdk(api_base, False, calls, width),
    }
    if has_httpx_aiohttp():
        clients["openai SDK, aiohttp"] = lambda: openai_sdk(api_base, True, calls, width)
    else:
        print("openai SDK, aiohttp: not measured (pip install httpx-aiohttp)")
    clients["bare aiohttp loop, again"] = lambda: bare_aiohttp(api_base, calls, width)
    try:
        measured = {name: asyncio.run(run_one()) for name, run_one in clients.items()}
    finally:
        process.terminate()
    floor = (measured["bare aiohttp loop"][0] + measured["bare aiohttp loop, again"][0]) / 2
    print(f"calls={calls} in flight={width}, server answering at once (instant_llm.py)")
    for name, (cpu, rate) in measured.items():
        print(
            f"{name:38s} CPU per call {1000 * cpu:6.3f} ms ({cpu / floor:5.1f}x the bare loop)  "
            f"{rate:7.0f} calls/s"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--live", action="store_true", help="whole calls, to a live server")
    parser.add_argument("--in-flight", type=int, default=32)
    args = parser.parse_args()
    if args.live:
        live(args.calls or 3000, args.in_flight)
        return
    args.calls = args.calls or 50_000
    params = {"model": "openai/gpt-4.1", "api_base": "http://127.0.0.1:9/v1", "api_key": "sk-x"}
    client = JudgeClient(
        parse_config({"model_list": [{"model_name": "judge", "litellm_params": params}]})
    )
    litellm.acompletion = instant
    per_call = [asyncio.run(run(client, args.calls)) for _ in range(args.repeats)]
    print(
        f"calls={args.calls} repeats={args.repeats}: JudgeClient.complete CPU per call "
        f"median {statistics.median(per_call):.1f} us (min {min(per_call):.1f})"
    )


if __name__ == "__main__":
    main()
