"""What every `qadi` command pays for at start-up: the CLI's import loads none of the heavy
libraries that only some commands use (SciPy, NumPy, pandas, LiteLLM); each is imported by
the command that needs it (tests/perf/bench_start_up.py measures the difference)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("scipy", "numpy", "pandas", "litellm", "ray", "pyarrow")


def loaded_by(module: str, heavy: tuple[str, ...]) -> list[str]:
    """Which of `heavy` a fresh interpreter has loaded once it has imported `module`."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import json, sys, {module}; "
            f"print(json.dumps([m for m in {heavy!r} if m in sys.modules]))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(loaded.stdout)


def test_importing_the_command_line_loads_no_heavy_library():
    assert loaded_by("service.cli", HEAVY) == []


def test_the_regrade_loads_litellm_only_for_a_judge_that_uses_it():
    """LiteLLM's import is ~4 s of CPU: judges/client.py imports it when a judge goes
    through it, never for a regrade whose judges are all lean (the service imports it
    whatever its judges, for its log redaction: service/api/access_log.py)."""
    assert loaded_by("service.regrading.local", ("litellm",)) == []
