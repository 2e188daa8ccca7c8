"""Instructions per `qadi regrade` call, or per `POST /judge` with --service, on the lean
transport, counted by valgrind, for changes too small for CPU time on a machine whose speed
drifts (here one build's CPU per call varied by a third within a day; its instruction count
by under 2%).

Each tree regrades --small and then --answers answers against tests/perf/instant_llm.py
under `valgrind --tool=cachegrind --cache-sim=no`; instructions per call are the
difference over the difference in answers, so the start-up is left out. With --service the
service (`qadi serve`, one worker, SQLite) runs under valgrind instead and is sent --small
and then --answers `POST /judge`s, 32 in flight, as `bench_service.py` sends them, each
run counted from its start to its stop. With --base REV a git worktree of REV is measured
first and the ratio printed.

Instructions are not time: what the kernel does (sockets, the GIL's futex) and cache
misses are not counted, and a slow client under valgrind finds more replies waiting per
wake-up than a fast one. So this compares qadi's own work between two builds; the CPU per
call is `bench_regrade.py --lean`'s.

Run: .venv/bin/python tests/perf/bench_instructions.py [--base REV] [--answers 1100]
     [--small 100] [--logprobs] [--service]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import yaml  # noqa: E402

from tests.conftest import free_port  # noqa: E402
from tests.perf.bench_regrade import (  # noqa: E402
    RUBRIC,
    fresh_database,
    hosted_vllm_entry,
    write_inputs,
)
from tests.perf.bench_service import body, drive  # noqa: E402
from tests.perf.load_judge import Service, migrated_database  # noqa: E402
from tests.perf.trees import trees_to_compare  # noqa: E402

VALGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=no"]


def counted(done_stderr: str, failed: bool, tree: Path, what: str) -> int:
    """The instructions cachegrind reports, or exit naming what failed."""
    found = re.search(r"I\s+refs:\s+([\d,]+)", done_stderr)
    if failed or found is None:
        raise SystemExit(f"the {what} under valgrind failed in {tree}:\n{done_stderr[-3000:]}")
    return int(found.group(1).replace(",", ""))


def judge_entry(api_base: str, logprobs: bool) -> dict:
    how = {"transport": "lean"} if logprobs else {"transport": "lean", "logprobs": False}
    return hosted_vllm_entry(api_base, **how)


def regrade_instructions(tree: Path, workdir: Path, count: int, api_base: str, logprobs: bool):
    """Instructions of one `qadi regrade` of `count` answers by the code in `tree`."""
    fresh_database(workdir)
    answers, config = write_inputs(workdir, count, api_base, judge_entry(api_base, logprobs))
    command = [
        *VALGRIND,
        f"--cachegrind-out-file={workdir / 'cachegrind.out'}",
        *(sys.executable, "-m", "service", "regrade", str(answers)),
        *("--rubric", RUBRIC, "--judges", "bench-judge", "--config", str(config)),
        *("--concurrency", "64", "--out", str(workdir / "results.jsonl")),
    ]
    env = {
        **os.environ,
        "QADI_DATABASE_URL": f"sqlite:///{workdir / 'qadi.db'}",
        "PYTHONHASHSEED": "0",  # the same hashing, so the same work, in every run
    }
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    return counted(done.stderr, done.returncode != 0, tree, "regrade")


def service_instructions(tree: Path, workdir: Path, count: int, api_base: str, logprobs: bool):
    """Instructions of the service in `tree`, from its start to its stop, having answered
    `count` POST /judge (and one to warm up) on a fresh SQLite database."""
    (workdir / "qadi.db").unlink(missing_ok=True)
    url = migrated_database(workdir, f"sqlite:///{workdir / 'qadi.db'}", tree)
    config = workdir / "judges.yaml"
    entry = judge_entry(api_base, logprobs)
    config.write_text(yaml.safe_dump({"model_list": [entry], "qadi": {"num_retries": 0}}))
    valgrind = (*VALGRIND, f"--cachegrind-out-file={workdir / 'cachegrind.out'}")
    service = Service(url, config, free_port(), workdir, {"PYTHONHASHSEED": "0"},  # as above
                      tree=tree, prefix=valgrind)  # fmt: skip
    (workdir / "service.log").unlink(missing_ok=True)
    try:
        service.start(timeout=900)
        asyncio.run(drive(f"http://127.0.0.1:{service.port}", "/judge", body, count, 32))
    finally:
        service.stop(timeout=600)
    # uvicorn stops cleanly on SIGTERM and then raises it again, so it ends killed by it
    failed = service.process.returncode not in (0, -signal.SIGTERM)
    return counted((workdir / "service.log").read_text(), failed, tree, "service")


def per_call(tree: Path, args: argparse.Namespace, api_base: str) -> float:
    measure = service_instructions if args.service else regrade_instructions
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        small = measure(tree, workdir, args.small, api_base, args.logprobs)
        big = measure(tree, workdir, args.answers, api_base, args.logprobs)
    return (big - small) / (args.answers - args.small)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", help="a git revision to compare the working tree with")
    parser.add_argument("--answers", type=int, default=1100)
    parser.add_argument("--small", type=int, default=100, help="the start-up run's answers")
    parser.add_argument("--logprobs", action="store_true", help="ask for token logprobs")
    parser.add_argument("--service", action="store_true", help="POST /judge, not regrade")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt install valgrind)")
    from tests.perf.instant_llm import start

    with trees_to_compare(args.base) as trees:
        process = None
        try:
            process, api_base = start()
            counts = {label: per_call(tree, args, api_base) for label, tree in trees.items()}
        finally:
            if process is not None:
                process.terminate()
    what = "POST /judge (service)" if args.service else "qadi regrade"
    print(f"{what}: answers={args.answers} small={args.small} logprobs={args.logprobs} "
          "backend: instant_llm.py, valgrind cachegrind")  # fmt: skip
    first = next(iter(counts.values()))
    for label, count in counts.items():
        print(f"{label:14s}: {count / 1000:8.1f} k instructions per call ({count / first:.3f})")


if __name__ == "__main__":
    main()
