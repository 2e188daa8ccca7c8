"""CPU of reading one judge reply with token probabilities (issue 40), in one process.

The reply is what tests/perf/instant_llm.py sends for a criteria rubric (ten alternatives per
token, an 85 KB body), once as it sends it (every mark certain) and once with every mark
uncertain (P(true) = 0.7), as a real judge's are. Each is read two ways:

- the standard library's dicts (`json.loads`), the path of batch files and of replies the
  fast shape refuses: every logprob checked, every alternative copied;
- the lean transport's structs (`judges.payloads.decode_completion`): msgspec checks every
  chosen token's logprob while decoding and leaves the alternatives as undecoded JSON; only
  the value tokens' are decoded and checked, when read.

Both must give the same verdict and probabilities. Then the floor under any reading: the
reply's decoding alone (`decode_completion`), against msgspec reading one field of it and
skipping the rest (its JSON still checked, nothing built): no reader of these 85 KB does
less. Then the expected rubric score alone: by its definition (a `score` call for each of
the 2^n combinations of marks, the code before this change) and over net points
(`judges.logprobs._expected_rubric_score`). Then the two encodings around a call: its
request body (`json.dumps` against msgspec, which the lean transport uses) and its line of
`qadi regrade --out` (`model_dump` then `json.dumps`, as before, against
`service.regrading.local.result_lines`). Then what the stand-in server spends on a reply:
building and writing it at each call (as it did before), against its logprobs written once
and kept (`instant_llm.reply_bytes`). Then its judgments row with the check that no number
in it is NaN or infinite (`service.stores.judgments.row_values`): field by field with an
`isinstance` walk, as before, against one `model_dump` and the walk by exact types.

Run: .venv/bin/python tests/perf/bench_reply_reading.py [--repeat 2000]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from judges import Grader, GradeRequest, parse_config  # noqa: E402
from judges.logprobs import _expected_rubric_score  # noqa: E402
from judges.models import Graded, JudgeResult  # noqa: E402
from judges.payloads import decode_completion  # noqa: E402
from judges.replies import judge_result, read_completion  # noqa: E402
from rubrics import library_rubric, score  # noqa: E402
from service.db.values import utcnow  # noqa: E402
from service.regrading.local import result_lines  # noqa: E402
from service.stores.judgments import _RESULT_COLUMNS, row_values  # noqa: E402
from tests.perf.instant_llm import reply_bytes, reply_to  # noqa: E402

RUBRIC = library_rubric("iraqi-linguistic-shaku-maku")


class _OneField(msgspec.Struct):
    """A reply of which msgspec builds nothing but `id`, skipping every other value."""

    id: str | None = None


_SKIPPING = msgspec.json.Decoder(_OneField)
CONFIG = {
    "model_list": [
        {
            "model_name": "bench-judge",
            "litellm_params": {
                "model": "hosted_vllm/meta-llama/Llama-3.1-8B",
                "api_base": "http://127.0.0.1:9/v1",
            },
        }
    ]
}


def replies() -> tuple[dict[str, bytes], Grader, object]:
    """The two reply bodies, and the grader and plan that read them."""
    grader = Grader(parse_config(CONFIG))
    request = GradeRequest(
        rubric=RUBRIC, prompt="شنو معنى شكو؟", response="answer", candidate_model="qwen-2.5"
    )
    plan = grader.plan(request)
    call = {"model": "m", "messages": plan.call.messages, "logprobs": True, "top_logprobs": 10}
    certain = reply_to({**call, "response_format": plan.call.response_format})
    uncertain = json.loads(json.dumps(certain))
    for entry in uncertain["choices"][0]["logprobs"]["content"]:
        if entry["token"].strip() in ("true", "false"):
            lead = entry["token"][: len(entry["token"]) - len(entry["token"].lstrip())]
            pair = {"true": math.log(0.7), "false": math.log(0.3)}
            entry["logprob"] = pair[entry["token"].strip()]
            entry["top_logprobs"] = [
                {"token": lead + value, "logprob": lp, "bytes": list((lead + value).encode())}
                for value, lp in pair.items()
            ] + entry["top_logprobs"][2:]
    bodies = {"certain": json.dumps(certain).encode(), "uncertain": json.dumps(uncertain).encode()}
    return bodies, grader, plan


def cpu_per_call(work: Callable[[], object], repeat: int) -> float:
    """Process CPU seconds per call, the best of three rounds."""
    best = math.inf
    for _ in range(3):
        started = time.process_time()
        for _ in range(repeat):
            work()
        best = min(best, (time.process_time() - started) / repeat)
    return best


def by_definition(criteria) -> float:
    """E[score] as a `score` call for each combination of marks."""
    ids = [c.id for c in RUBRIC.criteria]
    total = 0.0
    for marks in itertools.product((True, False), repeat=len(ids)):
        weight = math.prod(
            criteria[c].probs["true" if m else "false"] / criteria[c].mass
            for c, m in zip(ids, marks, strict=True)
        )
        if weight:
            total += weight * score(RUBRIC, dict(zip(ids, marks, strict=True))).score
    return round(total, 6)


def row_as_before(result: JudgeResult) -> dict:
    """The judgments row as row_values built and checked it before (issue 40's last round)."""
    values = {column: getattr(result, name) for name, column in _RESULT_COLUMNS.items()}
    values.update(
        project="p",
        request_id=None,
        response_id=1,
        criteria=[c.model_dump() for c in result.criteria],
        probabilities=result.probabilities.model_dump(mode="json"),
        samples=None,
        created_at=utcnow(),
    )
    assert not _isinstance_walk(values)
    return values


def _isinstance_walk(value: object) -> bool:
    """calibration.finite.holds_non_finite as it was: `isinstance` for every element."""
    waiting = [value]
    while waiting:
        item = waiting.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            waiting.extend(item.values())
        elif isinstance(item, list | tuple):
            waiting.extend(item)
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    bodies, grader, plan = replies()
    base = JudgeResult(
        judge="bench-judge",
        model="m",
        status="ok",
        cache_key="k",
        template=plan.template.ref,
        template_hash=plan.template.hash,
        rubric_ref=plan.rubric_ref,
        rubric_hash=plan.rubric_hash,
    )

    def read(payload: object) -> JudgeResult:
        return judge_result(base, read_completion(payload), plan.template, plan.request)

    print(f"criteria rubric, {len(RUBRIC.criteria)} criteria; CPU per reply, best of 3 rounds")
    for label, body in bodies.items():
        dicts, structs = read(json.loads(body)), read(decode_completion(body))
        assert dicts.model_dump(exclude={"id"}) == structs.model_dump(exclude={"id"}), label
        slow = cpu_per_call(lambda b=body: read(json.loads(b)), args.repeat)
        fast = cpu_per_call(lambda b=body: read(decode_completion(b)), args.repeat)
        print(
            f"{label:9s} ({len(body) // 1000} KB): dicts {1e6 * slow:6.1f} µs, "
            f"structs {1e6 * fast:6.1f} µs ({fast / slow:.2f} of dicts)"
        )
    for label, body in bodies.items():
        decoding = cpu_per_call(lambda b=body: decode_completion(b), args.repeat)
        skipping = cpu_per_call(lambda b=body: _SKIPPING.decode(b), args.repeat)
        print(
            f"{label:9s}: decode_completion alone {1e6 * decoding:6.1f} µs, msgspec skipping "
            f"all but one field {1e6 * skipping:6.1f} µs (the floor: {skipping / decoding:.2f})"
        )
    criteria = read(decode_completion(bodies["uncertain"])).probabilities.criteria
    assert by_definition(criteria) == _expected_rubric_score(RUBRIC, criteria)
    slow = cpu_per_call(lambda: by_definition(criteria), args.repeat)
    fast = cpu_per_call(lambda: _expected_rubric_score(RUBRIC, criteria), args.repeat)
    print(
        f"expected rubric score, marks uncertain: by definition {1e6 * slow:6.1f} µs, "
        f"over net points {1e6 * fast:6.1f} µs ({fast / slow:.2f})"
    )
    body = {"model": "m", "messages": plan.call.messages, "logprobs": True, "top_logprobs": 10}
    body["response_format"] = plan.call.response_format
    assert json.loads(msgspec.json.encode(body)) == body
    slow = cpu_per_call(lambda: json.dumps(body, ensure_ascii=False).encode(), args.repeat)
    fast = cpu_per_call(lambda: msgspec.json.encode(body), args.repeat)
    print(
        f"request body: json.dumps {1e6 * slow:6.1f} µs, msgspec {1e6 * fast:6.1f} µs "
        f"({fast / slow:.2f})"
    )
    unwritten = {k: v for k, v in body.items() if k != "response_format"}  # no verdict cached
    slow = cpu_per_call(lambda: json.dumps(reply_to(body)).encode(), args.repeat)
    fast = cpu_per_call(lambda: reply_bytes(body), args.repeat)
    assert json.loads(reply_bytes(unwritten))["choices"] == reply_to(unwritten)["choices"]
    print(
        f"the stand-in's reply (instant_llm.py): built and written {1e6 * slow:6.1f} µs, "
        f"its logprobs kept {1e6 * fast:6.1f} µs ({fast / slow:.2f})"
    )
    graded = Graded(plan.request, judgments=[read(decode_completion(bodies["uncertain"]))])
    answer = {"item_id": None, "candidate_model": plan.request.candidate_model}

    def as_before() -> str:
        return json.dumps({**answer, **graded.judgments[0].model_dump(mode="json")})

    assert json.loads(as_before()) == json.loads(result_lines(graded)[0])
    slow = cpu_per_call(as_before, args.repeat)
    fast = cpu_per_call(lambda: result_lines(graded), args.repeat)
    print(
        f"results-file line: model_dump + json.dumps {1e6 * slow:6.1f} µs, "
        f"result_lines {1e6 * fast:6.1f} µs ({fast / slow:.2f})"
    )
    judgment = graded.judgments[0]
    new, old = row_values("p", judgment, None, 1), row_as_before(judgment)
    assert {**new, "created_at": None} == {**old, "created_at": None}
    slow = cpu_per_call(lambda: row_as_before(judgment), args.repeat)
    fast = cpu_per_call(lambda: row_values("p", judgment, None, 1), args.repeat)
    print(
        f"judgments row, checked: field by field {1e6 * slow:6.1f} µs, "
        f"one dump {1e6 * fast:6.1f} µs ({fast / slow:.2f})"
    )


if __name__ == "__main__":
    main()
