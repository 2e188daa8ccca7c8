"""CPU of rendering one judge call: a Jinja2 template against the braces template it replaces.

The same rubric (iraqi-linguistic-shaku-maku) and request, rendered with rubric-criteria@1
(braces: one-pass substitution) and with arabic-sme-criteria@1 (Jinja2 in the sandbox, the
rubric's fenced block cached per rubric, the static system message rendered once). Process CPU
per `build_call`, the minimum over repeated batches, both measured in the same run.

Run: .venv/bin/python tests/perf/bench_templates.py [--calls 1000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import time

from judges import GradeRequest, build_call
from judges.templates import BUNDLED
from rubrics import library_rubric

ANSWER = "شكو يعني شنو اكو، يعني شنو الأخبار. ماكو تعني ما في. " * 20


def cpu_per_call(template_ref: str, calls: int) -> float:
    rubric = library_rubric("iraqi-linguistic-shaku-maku").model_copy(
        update={"template": template_ref}
    )
    template = BUNDLED.resolve(template_ref)
    requests = [
        GradeRequest(
            rubric=rubric, prompt="ما معنى شكو؟", response=f"{ANSWER}{i}", candidate_model="m"
        )
        for i in range(calls)
    ]
    start = time.process_time()
    for request in requests:
        build_call(template, request)
    return (time.process_time() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    braces, jinja = [], []
    for _ in range(args.repeats):  # interleaved, so both see the same machine load
        braces.append(cpu_per_call("rubric-criteria@1", args.calls))
        jinja.append(cpu_per_call("arabic-sme-criteria@1", args.calls))
    print(f"rubric-criteria@1 (braces)      {min(braces):7.1f} µs CPU per call")
    print(f"arabic-sme-criteria@1 (jinja2)  {min(jinja):7.1f} µs CPU per call")
    print(f"ratio jinja2 / braces           {min(jinja) / min(braces):7.2f}")


if __name__ == "__main__":
    main()
