"""Instructions per `qadi regrade` call on the lean transport, counted by valgrind, for
changes too small for CPU time on a machine whose speed drifts (here one build's CPU per
call varied by a third within a day; its instruction count by under 2%).

Each tree regrades --small and then --answers answers against tests/perf/instant_llm.py
under `valgrind --tool=cachegrind --cache-sim=no`; instructions per call are the
difference over the difference in answers, so the start-up is left out. With --base REV
a git worktree of REV is measured first and the ratio printed.

Instructions are not time: what the kernel does (sockets, the GIL's futex) and cache
misses are not counted, and a slow client under valgrind finds more replies waiting per
wake-up than a fast one. So this compares qadi's own work between two builds; the CPU per
call is `bench_regrade.py --lean`'s.

Run: .venv/bin/python tests/perf/bench_instructions.py [--base REV] [--answers 1100]
     [--small 100] [--logprobs]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.perf.bench_regrade import (  # noqa: E402
    RUBRIC,
    fresh_database,
    hosted_vllm_entry,
    write_inputs,
)
from tests.perf.trees import trees_to_compare  # noqa: E402


def instructions(tree: Path, workdir: Path, count: int, api_base: str, logprobs: bool) -> int:
    """Instructions of one `qadi regrade` of `count` answers by the code in `tree`."""
    fresh_database(workdir)
    how = {"transport": "lean"} if logprobs else {"transport": "lean", "logprobs": False}
    answers, config = write_inputs(workdir, count, api_base, hosted_vllm_entry(api_base, **how))
    command = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        f"--cachegrind-out-file={workdir / 'cachegrind.out'}",
        sys.executable,
        "-m",
        "service",
        "regrade",
        str(answers),
        *("--rubric", RUBRIC, "--judges", "bench-judge", "--config", str(config)),
        *("--concurrency", "64", "--out", str(workdir / "results.jsonl")),
    ]
    env = {
        **os.environ,
        "QADI_DATABASE_URL": f"sqlite:///{workdir / 'qadi.db'}",
        "PYTHONHASHSEED": "0",  # the same hashing, so the same work, in every run
    }
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"the regrade under valgrind failed in {tree}:\n{done.stderr[-3000:]}")
    return int(found.group(1).replace(",", ""))


def per_call(tree: Path, args: argparse.Namespace, api_base: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        small = instructions(tree, workdir, args.small, api_base, args.logprobs)
        big = instructions(tree, workdir, args.answers, api_base, args.logprobs)
    return (big - small) / (args.answers - args.small)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", help="a git revision to compare the working tree with")
    parser.add_argument("--answers", type=int, default=1100)
    parser.add_argument("--small", type=int, default=100, help="the start-up run's answers")
    parser.add_argument("--logprobs", action="store_true", help="ask for token logprobs")
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
    print(f"answers={args.answers} small={args.small} logprobs={args.logprobs} "
          "backend: instant_llm.py, valgrind cachegrind")  # fmt: skip
    first = next(iter(counts.values()))
    for label, count in counts.items():
        print(f"{label:14s}: {count / 1000:8.1f} k instructions per call ({count / first:.3f})")


if __name__ == "__main__":
    main()
