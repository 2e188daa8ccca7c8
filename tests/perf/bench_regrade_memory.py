"""Peak memory of `qadi regrade` against the size of its input (issue 39: bounded by its
concurrency, not its input; ≤ 1 GB at 1M answers), on each path: the local engine, `--ingest`
of a batch results file, and the driver of `--engine ray`.

Each size runs in a fresh process and a fresh SQLite database against the LLM test double,
with the CI tests' inputs (tests/integration/test_regrade_memory.py): for the live engines one
answer in ten is new text and the other nine repeat one graded earlier, answered from the
store, each with its line in --out; for `--ingest` every answer is distinct and has a line
in the results file (written from the `--batch` file, in reverse order). The ray driver joins
a local Ray started here (2 CPUs, 2 actors), so its peak is the driver's alone, and the part
of its resident memory that is pages of the object store is printed too. Prints the peak
resident memory per size and the KB per extra answer.

Run: .venv/bin/python tests/perf/bench_regrade_memory.py [--path local|ingest|ray]
     [--sizes 20000 200000]
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.conftest import judges_config_data, start_llm_server  # noqa: E402
from tests.integration.test_regrade_memory import (  # noqa: E402
    ingest_peak_rss_kb,
    peak_rss_kb,
)

COMMANDS = {
    "local": "qadi regrade ANSWERS.jsonl --rubric iraqi-linguistic-shaku-maku --judges gpt-judge "
    "--config judges.yaml --concurrency 32 --out results.jsonl",
    "ingest": "qadi regrade ANSWERS.jsonl ... --batch batch.jsonl, then the same with "
    "--ingest replies.jsonl --out results.jsonl (measured)",
    "ray": "qadi regrade ANSWERS.jsonl ... --out results.jsonl --engine ray --address ADDRESS "
    "(in a process joined to ADDRESS first, so the store's pages it touched stay counted)",
}


def measure(path: str, workdir: Path, size: int, config: Path, address: str | None):
    """The run's peak resident memory (KB) and, for the ray driver, its share of the object
    store's pages (KB; tests/integration/test_regrade_ray.py's `driver_memory_kb`)."""
    if path == "ingest":
        return ingest_peak_rss_kb(workdir, size, config), None
    if path == "ray":
        from tests.integration.test_regrade_ray import driver_memory_kb

        return driver_memory_kb(workdir, size, config, address)
    return peak_rss_kb(workdir, size, config), None


def ray_address() -> str:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    return ray.get_runtime_context().gcs_address


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--path", choices=sorted(COMMANDS), default="local")
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 200_000])
    args = parser.parse_args()
    address = ray_address() if args.path == "ray" else None
    process, server = start_llm_server()
    peaks: dict[int, int] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "judges.yaml"
            config.write_text(yaml.safe_dump(judges_config_data(server)))
            for size in args.sizes:
                started = time.perf_counter()
                peaks[size], shared = measure(
                    args.path, Path(tmp) / str(size), size, config, address
                )
                seconds = time.perf_counter() - started
                store = "" if shared is None else f" (object store pages {shared / 1024:.1f} MB)"
                print(
                    f"{size:>9} answers: peak RSS {peaks[size] / 1024:7.1f} MB{store}  "
                    f"({seconds:.0f} s)",
                    flush=True,
                )
    finally:
        process.terminate()
    sizes = sorted(peaks)
    for small, large in zip(sizes, sizes[1:], strict=False):
        slope = (peaks[large] - peaks[small]) / (large - small)
        print(f"{small} -> {large}: {slope:.3f} KB per extra answer")
    print(
        f"command: .venv/bin/python tests/perf/bench_regrade_memory.py --path {args.path} "
        "--sizes " + " ".join(map(str, args.sizes))
    )
    print(f"each run: {COMMANDS[args.path]}")


if __name__ == "__main__":
    main()
