"""Regrading throughput against the LLM test double answering after 100 ms, concurrency 64.

(a) bare `litellm.acompletion` from one process, no qadi code, sending the very requests
    qadi would send (taken from `qadi regrade --batch`): the ceiling LiteLLM allows;
(b) `qadi regrade` of the same number of answers (one judge, SQLite, results file);
(c) the ideal N × 0.1 s / 64.
Then a second `qadi regrade` over the same input, which must make zero backend calls.

With --lean (issue 40): against a server that answers at once (tests/perf/instant_llm.py),
a `hosted_vllm/` judge regraded on LiteLLM and on the lean transport, results stored in
SQLite: each one's process CPU per call (a run of N answers less a run of --small, so the
start-up is left out) and calls/s, beside a bare aiohttp loop sending the same requests
from this process, in the same rounds, and each set-up's ratio to it (target: lean <= 0.6
ms CPU per call where issue 40 measured the bare loop at 0.11-0.17 ms; on a machine of another
speed, <= 3.5x the bare loop). With --start-up
instead: each set-up's start-up, the CPU of a regrade of one answer (a process whose judges
are all lean does not import LiteLLM). --skip-litellm leaves LiteLLM's set-up out of either: with
token probabilities its call costs ~50 ms of CPU, so thousands of answers take many minutes.

Run: .venv/bin/python tests/perf/bench_regrade.py [--answers 5000] [--concurrency 64] [--lean]
     [--small 200] [--rounds 1] [--start-up] [--skip-litellm]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import httpx  # noqa: E402
import yaml  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.conftest import start_llm_server  # noqa: E402
from tests.perf.bench_client_overhead import bare_aiohttp  # noqa: E402

LATENCY = 0.1
RUBRIC = "iraqi-linguistic-shaku-maku"


def bench_answer(i: int) -> dict:
    """The i-th answer every regrade benchmark grades (tests/perf/bench_gc.py too)."""
    return {
        "item_id": f"a{i}",
        "prompt": "شنو معنى شكو؟",
        "response": f"answer {i}",
        "candidate_model": "qwen-2.5",
    }


def hosted_vllm_entry(api_base: str, **how) -> dict:
    """`bench-judge` as a `hosted_vllm/` judge at `api_base`, set up as `how` (transport,
    logprobs)."""
    return {
        "model_name": "bench-judge",
        "litellm_params": {"model": "hosted_vllm/meta-llama/Llama-3.1-8B", "api_base": api_base},
        **how,
    }


async def bare_litellm(api_base: str, bodies: list[dict], concurrency: int) -> float:
    import litellm

    semaphore = asyncio.Semaphore(concurrency)

    async def one(body: dict) -> None:
        async with semaphore:
            await litellm.acompletion(
                **{**body, "model": "openai/" + body["model"]}, api_base=api_base, api_key="x"
            )

    started = time.perf_counter()
    await asyncio.gather(*(one(body) for body in bodies))
    return time.perf_counter() - started


def regrade(
    workdir: Path, answers: Path, config: Path, concurrency: int, *extra: str, under=()
):
    """(seconds of the run as qadi reports it, seconds of the whole process); `under`: a
    command the regrade runs under (a profiler's)."""
    env = {**os.environ, "QADI_DATABASE_URL": f"sqlite:///{workdir / 'qadi.db'}"}
    started = time.perf_counter()
    done = subprocess.run(
        [
            *under,
            sys.executable,
            "-m",
            "service",
            "regrade",
            str(answers),
            "--rubric",
            RUBRIC,
            "--judges",
            "bench-judge",
            "--config",
            str(config),
            "--concurrency",
            str(concurrency),
            "--out",
            str(workdir / "results.jsonl"),
            *extra,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    total = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(done.stdout + done.stderr)
    if "--batch" in extra:
        return None, total
    wall = float(re.search(r"wall time\s+│\s+([\d.]+) s", done.stdout).group(1))
    return wall, total


def write_inputs(
    workdir: Path, count: int, api_base: str, entry: dict | None = None
) -> tuple[Path, Path]:
    """`count` answers and a judges file with one judge, `bench-judge`, at `api_base`
    (`entry`: its model_list entry instead of the default's)."""
    answers = workdir / "answers.jsonl"
    answers.write_text("".join(json.dumps(bench_answer(i)) + "\n" for i in range(count)))
    config = workdir / "judges.yaml"
    entry = entry or {
        "model_name": "bench-judge",
        "litellm_params": {"model": "openai/gpt-4.1", "api_base": api_base, "api_key": "x"},
    }
    config.write_text(yaml.safe_dump({"model_list": [entry]}))
    return answers, config


def arguments(answers: int) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answers", type=int, default=answers)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--lean", action="store_true", help="lean vs LiteLLM, hosted_vllm/")
    parser.add_argument("--small", type=int, default=200, help="--lean: the start-up run")
    parser.add_argument("--rounds", type=int, default=1, help="--lean: rounds, alternated")
    parser.add_argument("--start-up", action="store_true", help="each set-up's start-up CPU")
    parser.add_argument(
        "--skip-litellm",
        action="store_true",
        help="--lean/--start-up: the lean set-ups only (LiteLLM's costs ~50 ms a call)",
    )
    return parser.parse_args()


def fresh_database(workdir: Path) -> None:
    """An empty, migrated SQLite database at workdir/qadi.db (the previous one removed)."""
    (workdir / "qadi.db").unlink(missing_ok=True)
    subprocess.run(
        [sys.executable, "-m", "service", "db", "upgrade"],
        cwd=ROOT,
        env={**os.environ, "QADI_DATABASE_URL": f"sqlite:///{workdir / 'qadi.db'}"},
        check=True,
        capture_output=True,
    )


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def regrade_cpu(workdir: Path, count: int, api_base: str, how: dict, concurrency: int):
    """(process CPU seconds, qadi's wall seconds) of regrading `count` answers into a fresh
    SQLite database with a hosted_vllm/ judge set up as `how` (transport, logprobs)."""
    fresh_database(workdir)
    answers, config = write_inputs(workdir, count, api_base, hosted_vllm_entry(api_base, **how))
    before = children_cpu()
    wall, _ = regrade(workdir, answers, config, concurrency)
    return children_cpu() - before, wall


def lean_against_litellm(args: argparse.Namespace) -> None:
    """Each set-up of RUNS once a round, and the bare aiohttp loop each one is compared
    with (`floor_of`), the order reversed every other round (the machine's speed drifts);
    per set-up the median over rounds and every round's figure, and the median of its
    rounds' ratios to the floor's figure of the same round."""
    from tests.perf.instant_llm import start

    process, api_base = start()
    setups = chosen(args)
    floors = {floor_of(how): how for how in setups.values()}
    figures: dict[str, list[tuple[float, float]]] = {label: [] for label in [*setups, *floors]}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            bodies = {label: floor_bodies(workdir, api_base, how) for label, how in floors.items()}
            gc.freeze()  # as qadi does after its start-up (service/collector.py)
            for round_ in range(args.rounds):
                for label, how in alternated(round_, {**setups, **floors}):
                    if label in floors:
                        loop = bare_aiohttp(api_base, args.answers, args.concurrency, bodies[label])
                        figures[label].append(asyncio.run(loop))
                        continue
                    small, _ = regrade_cpu(workdir, args.small, api_base, how, args.concurrency)
                    big, wall = regrade_cpu(workdir, args.answers, api_base, how, args.concurrency)
                    cpu = (big - small) / (args.answers - args.small)
                    figures[label].append((cpu, args.answers / wall))
    finally:
        process.terminate()
    print(f"answers={args.answers} concurrency={args.concurrency} rounds={args.rounds} "
          "backend: instant_llm.py")  # fmt: skip
    for label, runs in figures.items():
        each = ", ".join(f"{1000 * c:.2f}" for c, _ in runs)
        cpu = statistics.median(c for c, _ in runs)
        calls = statistics.median(rate for _, rate in runs)
        ratio = ""
        if label in setups:
            floor = figures[floor_of(setups[label])]
            times = statistics.median(c / f for (c, _), (f, _) in zip(runs, floor, strict=True))
            ratio = f"{times:5.2f}x its bare loop; "
        print(
            f"{label:38s}: CPU per call {1000 * cpu:6.2f} ms ({ratio}rounds {each}), "
            f"{calls:6.0f} calls/s"
        )
    print(
        "target: lean, logprobs: false <= 0.6 ms CPU per call, on the machine where issue 40 "
        f"measured a bare aiohttp loop at 0.11-0.17 ms; elsewhere <= {TARGET_TIMES}x its bare loop"
    )


# issue 40's regrade target (0.6 ms a call) over the bare aiohttp loop's CPU per call it
# measured on the same machine (0.11-0.17 ms), taken at the loop's slowest: on a machine of
# another speed the target is this many times the bare loop of the same run
TARGET_TIMES = 3.5


def floor_of(how: dict) -> str:
    """The bare loop a set-up is compared with: one sending the same requests."""
    return "bare aiohttp loop" + (", logprobs: false" if how.get("logprobs") is False else "")


def floor_bodies(workdir: Path, api_base: str, how: dict, count: int = 256) -> list[dict]:
    """The bodies a regrade of `count` answers would send with the judge set up as `how`
    (sent in turn by the bare loop)."""
    fresh_database(workdir)
    answers, config = write_inputs(workdir, count, api_base, hosted_vllm_entry(api_base, **how))
    return request_bodies(workdir, answers, config)


def request_bodies(workdir: Path, answers: Path, config: Path) -> list[dict]:
    """The request bodies `qadi regrade` would send for `answers` (its --batch file)."""
    batch = workdir / "batch.jsonl"
    regrade(workdir, answers, config, 1, "--batch", str(batch))
    return [json.loads(line)["body"] for line in batch.read_text().splitlines()]


def start_ups(args: argparse.Namespace) -> None:
    """--start-up: the CPU of a regrade of one answer per set-up, --rounds times alternated,
    the median and every round's figure."""
    from tests.perf.instant_llm import start

    process, api_base = start()
    setups = chosen(args)
    cpu: dict[str, list[float]] = {label: [] for label in setups}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for round_ in range(args.rounds):
                for label, how in alternated(round_, setups):
                    one, _ = regrade_cpu(Path(tmp), 1, api_base, how, args.concurrency)
                    cpu[label].append(one)
    finally:
        process.terminate()
    for label, runs in cpu.items():
        each = ", ".join(f"{c:.2f}" for c in runs)
        print(f"qadi regrade of one answer, {label:24s}: {statistics.median(runs):.2f} s CPU "
              f"(rounds {each})")  # fmt: skip


def alternated(round_: int, setups: dict[str, Any]) -> list[tuple[str, Any]]:
    """The set-ups in order, reversed every other round (the machine's speed drifts)."""
    order = list(setups.items())
    return order if round_ % 2 == 0 else order[::-1]


def chosen(args: argparse.Namespace) -> dict[str, dict]:
    """RUNS, less LiteLLM's with --skip-litellm: with token probabilities its call costs
    ~50 ms of CPU, so a run of a few thousand answers takes minutes."""
    return {k: v for k, v in RUNS.items() if not (args.skip_litellm and k == "litellm")}


# the judge's set-ups compared: LiteLLM and lean with token logprobs (hosted_vllm/'s default,
# 10 alternatives per token), and lean without them
RUNS = {
    "litellm": {"transport": "litellm"},
    "lean": {"transport": "lean"},
    "lean, logprobs: false": {"transport": "lean", "logprobs": False},
}


def start_slow_llm_server():
    """The test double, answering every call after LATENCY seconds."""
    process, server = start_llm_server()
    httpx.post(
        f"{server.base}/_control/faults", json={"latency_min": LATENCY, "latency_max": LATENCY}
    ).raise_for_status()
    return process, server


def main() -> None:
    args = arguments(5000)
    if args.start_up:
        start_ups(args)
        return
    if args.lean:
        lean_against_litellm(args)
        return
    process, server = start_slow_llm_server()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            fresh_database(workdir)
            answers, config = write_inputs(workdir, args.answers, server.api_base)
            bodies = request_bodies(workdir, answers, config)
            # (a) runs before and after (b); the machine's speed drifts, so both are averaged
            bare_before = asyncio.run(bare_litellm(server.api_base, bodies, args.concurrency))
            before = httpx.get(f"{server.base}/_control/calls").json()["count"]
            first, first_total = regrade(workdir, answers, config, args.concurrency)
            middle = httpx.get(f"{server.base}/_control/calls").json()["count"]
            second, second_total = regrade(workdir, answers, config, args.concurrency)
            after = httpx.get(f"{server.base}/_control/calls").json()["count"]
            bare_after = asyncio.run(bare_litellm(server.api_base, bodies, args.concurrency))
            bare = (bare_before + bare_after) / 2
            fresh_database(workdir)
            two, two_total = regrade(workdir, answers, config, args.concurrency, "--workers", "2")
    finally:
        process.terminate()
    ideal = args.answers * LATENCY / args.concurrency
    n = args.answers
    print(f"answers={n} concurrency={args.concurrency} backend latency={LATENCY * 1000:.0f} ms")
    print(
        f"(a) bare litellm.acompletion: {bare:6.2f} s  {n / bare:6.1f} calls/s  "
        f"(before {bare_before:.2f} s, after {bare_after:.2f} s)"
    )
    print(
        f"(b) qadi regrade:             {first:6.2f} s  {n / first:6.1f} calls/s  "
        f"({first / bare:.2f}x of (a); whole process incl. start-up {first_total:.1f} s)"
    )
    print(
        f"(b') qadi regrade --workers 2: {two:6.2f} s  {n / two:6.1f} calls/s  "
        f"({two / bare:.2f}x of (a); whole process {two_total:.1f} s)"
    )
    print(f"(c) ideal N*latency/C:        {ideal:6.2f} s  {n / ideal:6.1f} calls/s")
    print(f"backend calls: first run {middle - before}, second run {after - middle}")
    print(
        f"second run: {second:.2f} s = {100 * second / first:.1f}% of the first "
        f"(whole process {second_total:.1f} s)"
    )


if __name__ == "__main__":
    main()
