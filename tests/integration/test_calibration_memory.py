"""Peak memory of `qadi calibrate --from-db` grows by at most BOUND per judgment (issue 39):
measured in a fresh process at 10k and 100k judgments (tests/perf/judgment_db.py). Before the
SQL-side selection every judgment was an ORM object with its rationale and raw reply: 9.3 KB
per judgment here (366 MB at 20k, 2.07 GB at 200k); after, 1.6 KB (229 and 517 MB), most of it
the calibration's own per-item work; with judgments kept as columns (calibration/columns.py)
and the alt-test on labelled items only, 136 bytes (226 and 239 MB at 10k and 100k); with the
grades as columns too and the pivot without a sort or a copy of the whole table, 97 bytes
(225 and 233 MB); with criterion tables of the human-marked items only and resamples chunked
by the items, 66 bytes (215 and 221 MB). Each
peak is the child's own (VmHWM, tests/perf/bench_reports_at_scale.py): its ru_maxrss carried
the test process's, which `populate` grows (1.1 GB for both sizes in a full CI run)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.perf.bench_reports_at_scale import MEASURE
from tests.perf.judgment_db import populate

BOUND = 400  # bytes of peak memory per judgment added


def peak_kb(url: str, out: str) -> int:
    args = ["calibrate", "--from-db", "--rubric", "kinayat-explanation", "--bootstrap", "100",
            "--out", out]  # fmt: skip
    env = {**os.environ, "QADI_DATABASE_URL": url, "PYTHONPATH": os.getcwd()}
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, *args], env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout.strip().splitlines()[-1].split()[0])


def test_calibrate_from_db_memory_per_judgment_is_bounded(tmp_path):
    peaks = {}
    for size in (10_000, 100_000):
        url = f"sqlite:///{tmp_path / f'{size}.db'}"
        judgments = populate(url, size)["judgments"]
        peaks[judgments] = peak_kb(url, str(tmp_path / f"{size}.json")) * 1024
    (small, low), (large, high) = sorted(peaks.items())
    per_judgment = (high - low) / (large - small)
    assert per_judgment <= BOUND, f"{per_judgment:.0f} bytes per judgment; peaks {peaks}"
