"""A `qadi` command's start-up with and without `service.collector.fewer_collections` (the
`qadi` entry point, `service/__main__.py`).

The same command, `qadi regrade --dry-run` of 20 answers into a fresh SQLite database (it
imports what a regrade imports, LiteLLM included, and makes no call), started two ways,
alternating, --rounds times: through the entry point (`python -m service`), and through
the CLI object alone (`python -c "from service.cli import app; app()"`), as the console
script started it before. Each process's CPU (user + system, from the parent's rusage), and
the ratio of the medians.

Run: .venv/bin/python tests/perf/bench_start_up.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.perf.bench_regrade import RUBRIC, fresh_database, write_inputs  # noqa: E402

WAYS = {
    "entry point (fewer collections)": [sys.executable, "-m", "service"],
    "CLI object alone (before)": [sys.executable, "-c", "from service.cli import app; app()"],
}


def cpu_of(command: list[str], env: dict[str, str]) -> float:
    """CPU seconds of one run of `command`, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        fresh_database(workdir)
        answers, config = write_inputs(workdir, 20, "http://127.0.0.1:9/v1")
        env = {**os.environ, "QADI_DATABASE_URL": f"sqlite:///{workdir / 'qadi.db'}"}
        command = ["regrade", str(answers), "--rubric", RUBRIC, "--judges", "bench-judge",
                   "--config", str(config), "--dry-run"]  # fmt: skip
        cpu: dict[str, list[float]] = {way: [] for way in WAYS}
        for round_ in range(args.rounds):
            ways = list(WAYS.items())
            for way, start in ways if round_ % 2 == 0 else reversed(ways):
                cpu[way].append(cpu_of([*start, *command], env))
    print(f"qadi regrade --dry-run, 20 answers; {args.rounds} rounds, alternating")
    for way, seconds in cpu.items():
        each = ", ".join(f"{s:.2f}" for s in seconds)
        print(f"{way:32s}: median {statistics.median(seconds):.2f} s CPU ({each})")
    new, old = (statistics.median(seconds) for seconds in cpu.values())
    print(f"ratio entry point / before: {new / old:.2f}")


if __name__ == "__main__":
    main()
