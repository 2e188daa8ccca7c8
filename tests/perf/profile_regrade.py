"""Where `qadi regrade` spends its CPU on the lean transport (issue 40): py-spy samples a
regrade of --answers answers by a `hosted_vllm/` judge against a server that answers at once
(tests/perf/instant_llm.py), results stored in SQLite, as `bench_regrade.py --lean` runs it,
and this prints each function's inclusive share of the busy samples (idle waits dropped; the
start-up's imports are among them, a smaller share the more answers).

Run: pip install py-spy && .venv/bin/python tests/perf/profile_regrade.py [--answers 6000]
     [--top 40] [--out stacks.txt] [--no-logprobs]  (needs ptrace rights: root, or CAP_SYS_PTRACE)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.perf.bench_regrade import fresh_database, hosted_vllm_entry, regrade, write_inputs  # noqa: E402
from tests.perf.instant_llm import start  # noqa: E402
from tests.perf.profile_service import add_output_options, summarize  # noqa: E402


def record(out: Path, answers: int, concurrency: int, logprobs: bool) -> None:
    """py-spy's samples (threads holding the GIL, 400 a second) of one regrade, into `out`."""
    process, api_base = start()
    how = {"transport": "lean"} | ({} if logprobs else {"logprobs": False})
    spy = ["py-spy", "record", "--gil", "--format", "raw", "-r", "400", "-o", str(out), "--"]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            fresh_database(workdir)
            inputs = write_inputs(workdir, answers, api_base, hosted_vllm_entry(api_base, **how))
            regrade(workdir, *inputs, concurrency, under=spy)
    finally:
        process.terminate()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=6000)
    parser.add_argument("--concurrency", type=int, default=64)
    add_output_options(parser, "qadi-regrade.txt")
    parser.add_argument("--no-logprobs", action="store_true", help="the judge's logprobs: false")
    args = parser.parse_args()
    record(args.out, args.answers, args.concurrency, not args.no_logprobs)
    summarize(args.out, args.top)


if __name__ == "__main__":
    main()
