"""CPU of planning one judge call (issue 40), in one process per build: `Grader.plan` for the
regrade benchmarks' rubric and answer, and two of its parts, the template's rendering
(`render_jinja`) and the call's cache key (`cache_key`). Each figure is the best of --rounds
timings of --calls calls, so a pause of this drifting machine does not count; with --base REV
a worktree of REV is measured in turn with the working tree, round by round.

Run: .venv/bin/python tests/perf/bench_planning.py [--base REV] [--calls 20000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.perf.trees import trees_to_compare  # noqa: E402

# run in the tree measured (its own packages first on the path), so only its public API is used
MEASURE = """
import json, sys, timeit
sys.path.insert(0, ".")
from judges import GradeRequest, cache_key, parse_config
from judges.grading import Grader
from judges.rendering import render_jinja
from rubrics import library_rubric, rubric_hash
from tests.perf.bench_regrade import RUBRIC, bench_answer

calls = int(sys.argv[1])
config = parse_config({"model_list": [{"model_name": "j", "litellm_params": {
    "model": "hosted_vllm/meta-llama/Llama-3.1-8B", "api_base": "http://127.0.0.1:9/v1"}}]})
grader, rubric = Grader(config), library_rubric(RUBRIC)
digest = rubric_hash(rubric)
requests = [
    GradeRequest(rubric=rubric, judges=["j"], **{k: v for k, v in bench_answer(i).items()
                                                if k != "item_id"})
    for i in range(1000)
]
plan = grader.plan(requests[0], digest)
entry, template = config.judge("j"), plan.template
each = [requests[i % 1000] for i in range(calls)]
parts = {
    "plan": lambda: [grader.plan(r, digest) for r in each],
    "render": lambda: [render_jinja(template, r) for r in each],
    "key": lambda: [cache_key(entry, template, digest, r, plan.call) for r in each],
}
print(json.dumps({name: 1e6 * timeit.timeit(run, number=1) / calls for name, run in parts.items()}))
"""


def measure(tree: Path, calls: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(calls)],
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", help="a git revision to compare the working tree with")
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with trees_to_compare(args.base) as trees:
        best: dict[str, dict[str, float]] = {label: {} for label in trees}
        for _ in range(args.rounds):
            for label, tree in trees.items():
                for part, micros in measure(tree, args.calls).items():
                    best[label][part] = min(micros, best[label].get(part, micros))
    print(f"calls={args.calls} rounds={args.rounds}: µs per call, best round")
    first = next(iter(best.values()))
    for label, parts in best.items():
        shown = ", ".join(f"{p} {us:5.1f} ({us / first[p]:.2f})" for p, us in parts.items())
        print(f"{label:14s}: {shown}")


if __name__ == "__main__":
    main()
