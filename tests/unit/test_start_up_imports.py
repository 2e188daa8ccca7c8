"""What every `qadi` command pays for at start-up: the CLI's import loads none of the heavy
libraries that only some commands use (SciPy, NumPy, pandas, LiteLLM); each is imported by
the command that needs it (tests/perf/bench_start_up.py measures the difference)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("scipy", "numpy", "pandas", "litellm", "ray", "pyarrow")


def test_importing_the_command_line_loads_no_heavy_library():
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys, service.cli; "
            f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(loaded.stdout) == []
