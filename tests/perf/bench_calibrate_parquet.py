"""`qadi calibrate` over the database against the same data exported as Parquet (issue 39):
wall time and peak memory of `--from-db`, `--from-parquet --engine local` and
`--from-parquet --engine ray`, each in a fresh process, and that their reports are equal.

Builds a SQLite database of N judgments (tests/perf/judgment_db.py), exports it with
`qadi export`, then runs each command. Peak memory is the command's own process (os.wait4);
with Ray it is the driver's: Ray's raylet and workers are processes of their own (each file's
reduction runs there), not counted.

Run: PYTHONPATH=. .venv/bin/python tests/perf/bench_calibrate_parquet.py [--judgments 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.perf.judgment_db import populate  # noqa: E402

SOURCES = {
    "--from-db": ["--from-db"],
    "--from-parquet --engine local": ["--from-parquet", "{out}"],
    "--from-parquet --engine ray": ["--from-parquet", "{out}", "--engine", "ray"],
}
COMMON = ["--rubric", "kinayat-explanation", "--by", "candidate_model", "--bootstrap", "200"]


def run(args: list[str], url: str, log: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS (KB) of `qadi ARGS` in a fresh process."""
    env = {**os.environ, "QADI_DATABASE_URL": url, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    with log.open("w") as output:
        process = subprocess.Popen([sys.executable, "-m", "service", *args], cwd=ROOT, env=env,
                                   stdout=output, stderr=output)  # fmt: skip
        _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"qadi {' '.join(args)} failed:\n{log.read_text()[-2000:]}")
    return seconds, usage.ru_maxrss


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--judgments", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        url = f"sqlite:///{work / 'j.db'}"
        started = time.perf_counter()
        populate(url, args.judgments, seed=3)
        print(f"database of {args.judgments} judgments: {time.perf_counter() - started:.0f} s")
        seconds, peak = run(["export", str(work / "out")], url, work / "export.log")
        print(f"qadi export: {seconds:.1f} s / {peak / 1024:.0f} MB")
        reports = {}
        for name, source in SOURCES.items():
            report = work / f"{len(reports)}.json"
            command = [a.format(out=work / "out") for a in source]
            full = ["calibrate", *command, *COMMON, "--out", str(report)]
            seconds, peak = run(full, url, work / "run.log")
            reports[name] = json.loads(report.read_text(encoding="utf-8"))
            reports[name]["inputs"].pop("source")
            print(f"{name:<30} {seconds:6.1f} s / {peak / 1024:5.0f} MB")
        same = all(r == reports["--from-db"] for r in reports.values())
        print(f"reports equal (but for inputs.source): {same}")
        print("each run: qadi calibrate SOURCE " + " ".join(COMMON) + " --out report.json")


if __name__ == "__main__":
    main()
