"""Reports over a large database (issue 39): wall time, CPU and peak memory of each command
that reads the judgments, run as a user runs it (a fresh `qadi` process each), printed with
the command line.

Build the database first with tests/perf/judgment_db.py (1M on SQLite, 10M on PostgreSQL:
`--judgments 1000000 --copies 10 --until now`), then:

    PYTHONPATH=. .venv/bin/python tests/perf/bench_reports_at_scale.py URL [--bootstrap 200]

The issue's goals: 10M judgments on PostgreSQL in <= 3 min and <= 2 GB peak memory per
command, 1M on SQLite in <= 1 min. CPU time (user + system of the qadi process) is printed
beside the wall time because on this shared 2-core machine the wall time also counts other
work's turns; the database server's own time is in the wall time only.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

RUBRIC = "kinayat-explanation"

# run the CLI in this child and print its own peak RSS (KB) and CPU seconds. VmHWM, not
# ru_maxrss: Linux carries a process's peak through fork and exec into its child's
# ru_maxrss, so a child of a big process (a long test run) reported its parent's peak.
MEASURE = """
import resource, sys
from service.cli import app
try:
    app(sys.argv[1:])
except SystemExit as exc:
    assert exc.code in (None, 0, 3), exc.code  # 3: a nightly that found drift
use = resource.getrusage(resource.RUSAGE_SELF)
status = open("/proc/self/status").read().split("VmHWM:")[1]
print(int(status.split()[0]), use.ru_utime + use.ru_stime)
"""


# `POST /estimates` over the database as its report worker computes it (service/reporting/
# pool.py): the worker's function in a fresh process, the request's own work (a few ms) left out
WORKER = """
import resource, sys
from calibration.estimate import EstimateOptions
from service.reporting.estimates import estimate_over_database
from service.stores.calibration import Selection
from service.stores.projects import DEFAULT_PROJECT
estimate_over_database(sys.argv[1], DEFAULT_PROJECT, Selection(rubric=sys.argv[2]),
                       EstimateOptions(by=["candidate_model"]))
use = resource.getrusage(resource.RUSAGE_SELF)
status = open("/proc/self/status").read().split("VmHWM:")[1]
print(int(status.split()[0]), use.ru_utime + use.ru_stime)
"""
POST_ESTIMATES = "POST /estimates by candidate_model (the report worker's work)"


def commands(out: str, bootstrap: int) -> dict[str, list[str]]:
    return {
        "calibrate --from-db": ["calibrate", "--from-db", "--rubric", RUBRIC, "--bootstrap",
                                str(bootstrap), "--out", f"{out}/c.json"],
        "calibrate --from-db --by candidate_model": [
            "calibrate", "--from-db", "--rubric", RUBRIC, "--by", "candidate_model",
            "--bootstrap", str(bootstrap), "--out", f"{out}/cb.json"],
        "estimate --from-db --by candidate_model": [
            "estimate", "--from-db", "--rubric", RUBRIC, "--by", "candidate_model",
            "--out", f"{out}/e.json"],
        "report nightly --window 24h": ["report", "nightly", "--rubric", RUBRIC, "--window",
                                        "24h", "--bootstrap", str(bootstrap), "--out-dir", out],
    }  # fmt: skip


def run(url: str, args: list[str], code: str = MEASURE) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak MB) of one command in a fresh process."""
    env = {**os.environ, "QADI_DATABASE_URL": url, "PYTHONPATH": os.getcwd()}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *args], env=env,
                          capture_output=True, text=True)  # fmt: skip
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"qadi {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    peak_kb, cpu = done.stdout.strip().splitlines()[-1].split()
    return wall, float(cpu), int(peak_kb) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="a database built by tests/perf/judgment_db.py")
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--only", help="run the commands whose name contains this")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        print("| command | wall | CPU (qadi) | peak memory |\n|---|---|---|---|")
        for name, line in commands(out, args.bootstrap).items():
            if args.only and args.only not in name:
                continue
            wall, cpu, peak = run(args.url, line)
            print(f"| `qadi {' '.join(line).replace(out, 'OUT')}` | {wall:.1f} s | "
                  f"{cpu:.1f} s | {peak:.0f} MB |", flush=True)  # fmt: skip
        if not args.only or args.only in POST_ESTIMATES:
            wall, cpu, peak = run(args.url, [args.url, RUBRIC], WORKER)
            print(f"| {POST_ESTIMATES} | {wall:.1f} s | {cpu:.1f} s | {peak:.0f} MB |")


if __name__ == "__main__":
    main()
