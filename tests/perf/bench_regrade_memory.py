"""Peak memory of `qadi regrade` against the size of its input (issue 39: bounded by its
concurrency, not its input; ≤ 1 GB at 1M answers).

Each size runs in a fresh process and a fresh SQLite database against the LLM test double,
with the CI test's input (tests/integration/test_regrade_memory.py): one answer in ten is new
text, the other nine repeat one graded earlier and are answered from the store, each with its
line in --out. Prints the peak resident memory per size and the KB per extra answer.

Run: .venv/bin/python tests/perf/bench_regrade_memory.py [--sizes 20000 200000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.conftest import judges_config_data, start_llm_server  # noqa: E402
from tests.integration.test_regrade_memory import peak_rss_kb  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 200_000])
    args = parser.parse_args()
    process, server = start_llm_server()
    peaks: dict[int, int] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "judges.yaml"
            config.write_text(yaml.safe_dump(judges_config_data(server)))
            for size in args.sizes:
                started = time.perf_counter()
                peaks[size] = peak_rss_kb(Path(tmp) / str(size), size, config)
                seconds = time.perf_counter() - started
                print(
                    f"{size:>9} answers: peak RSS {peaks[size] / 1024:7.1f} MB  ({seconds:.0f} s)"
                )
    finally:
        process.terminate()
    sizes = sorted(peaks)
    for small, large in zip(sizes, sizes[1:], strict=False):
        slope = (peaks[large] - peaks[small]) / (large - small)
        print(f"{small} -> {large}: {slope:.3f} KB per extra answer")
    print(
        "command: .venv/bin/python tests/perf/bench_regrade_memory.py --sizes "
        + " ".join(map(str, args.sizes))
    )
    print(
        "each run: qadi regrade ANSWERS.jsonl --rubric iraqi-linguistic-shaku-maku "
        "--judges gpt-judge --config judges.yaml --concurrency 32 --out results.jsonl"
    )


if __name__ == "__main__":
    main()
