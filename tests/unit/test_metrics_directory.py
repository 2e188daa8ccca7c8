"""A PROMETHEUS_MULTIPROC_DIR that does not exist yet is made, not a traceback at start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_metrics_directory_is_made_when_missing(tmp_path):
    folder = tmp_path / "not" / "there"
    done = subprocess.run(
        [sys.executable, "-c", "import service.metrics as m; m.STORAGE_UNAVAILABLE.inc()"],
        cwd=ROOT,
        env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(folder)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert list(folder.glob("counter_*.db"))  # the worker's values went there
