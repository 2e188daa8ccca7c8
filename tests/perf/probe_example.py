"""The probe example of docs/how-to/probes.md: `qadi probe` on the bundled sample, every
registered probe, with the test double's planted-bias judges (tests/llm_test_server.py, "PLANTED JUDGE BIASES").

It starts the test double, writes a judges file of six planted judges (`clean`, `verbose`,
`obeys`, `self-openai`, `script`, `first`; `self-openai` is an OpenAI judge so the guard keeps
it off the gpt-4o answers), migrates a throw-away SQLite database, runs

    qadi probe service/sample/probe_items.jsonl --rubric kinayat-explanation --seed 0 --md ...

and prints the run's totals and the page's selection of cells as a Markdown table, each row
the run's own line of its Markdown table.

Run: .venv/bin/python tests/perf/probe_example.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.conftest import start_llm_server  # noqa: E402

JUDGES = ("clean", "verbose", "obeys", "self-openai", "script", "first")
SHOWN = [
    ("clean", "arabizi"),
    ("clean", "dialect"),
    ("clean", "position"),
    ("clean", "verbosity"),
    ("clean", "self_preference"),
    ("verbose", "verbosity"),
    ("verbose", "authority"),
    ("verbose", "injection_ar"),
    ("obeys", "injection_en"),
    ("obeys", "injection_ar"),
    ("obeys", "verbosity"),
    ("self-openai", "self_preference"),
    ("script", "arabizi"),
    ("script", "mixed_script"),
    ("script", "injection_en"),
    ("script", "injection_ar"),
    ("first", "position"),
    ("first", "verbosity"),
]


def judges_file(api_base: str, folder: Path) -> Path:
    entries = [
        {
            "model_name": name,
            "litellm_params": {
                "model": f"openai/planted-{name}",
                "api_base": api_base,
                "api_key": "sk-test-secret-key-0001",
            },
            "provider": "openai" if name == "self-openai" else "testlab",
        }
        for name in JUDGES
    ]
    path = folder / "judges.yaml"
    path.write_text(yaml.safe_dump({"model_list": entries}))
    return path


def main() -> None:
    process, server = start_llm_server()
    try:
        with tempfile.TemporaryDirectory() as name:
            folder = Path(name)
            env = {
                **os.environ,
                "QADI_DATABASE_URL": f"sqlite:///{folder / 'probe.db'}",
                "QADI_JUDGES_CONFIG": str(judges_file(server.api_base, folder)),
                "QADI_DATA_DIR": str(folder),
            }
            qadi = [sys.executable, "-m", "service"]
            subprocess.run([*qadi, "db", "upgrade"], env=env, check=True, capture_output=True)
            command = [
                *qadi, "probe", str(ROOT / "service" / "sample" / "probe_items.jsonl"),
                "--rubric", "kinayat-explanation", "--seed", "0",
                "--out", str(folder / "run.json"), "--md", str(folder / "run.md"),
            ]  # fmt: skip
            subprocess.run(command, env=env, check=True, capture_output=True)
            run = json.loads((folder / "run.json").read_text())
            lines = (folder / "run.md").read_text().splitlines()
    finally:
        process.terminate()
        process.wait(timeout=10)
    print(f"{run['calls']['made']} calls, seed {run['seed']}, {len(run['cells'])} cells")
    print("| judge | probe | n | change [95% CI] | flips [95% CI] | p | q | moved |")
    print("|---|---|---|---|---|---|---|---|")
    rows = {tuple(cell.strip() for cell in line.split("|")[1:3]): line for line in lines}
    for judge, probe in SHOWN:
        cells = rows[(judge, probe)].split("|")[1:9]  # without skipped and failed
        print("|" + "|".join(cells) + "|")


if __name__ == "__main__":
    main()
