"""The results file of `qadi regrade --out` (service/regrading/local.py): one JSON line per
judge that answered, the answer's item id and candidate first, then every field of the
result as its JSON form has it."""

from __future__ import annotations

import json

from judges import AnswerRecord, GradeRequest, JudgeResult
from judges.models import CriterionVerdict, Graded
from rubrics import library_rubric
from service.regrading.local import result_lines

RUBRIC = library_rubric("iraqi-linguistic-shaku-maku")


def judgment(judge: str, score: float) -> JudgeResult:
    return JudgeResult(
        judge=judge,
        model="hosted_vllm/m",
        status="ok",
        score=score,
        criteria=[CriterionVerdict(id="shaku_meaning", met=True, evidence="«شكو» تعني ماذا")],
        rationale='a "quoted" rationale,\nover two lines',
        cache_key="sha256:k",
        template="rubric-criteria@1",
        template_hash="sha256:t",
        rubric_ref="iraqi-linguistic-shaku-maku@1",
        rubric_hash="sha256:r",
    )


def test_each_line_is_the_answer_then_the_result_s_json_fields():
    request = GradeRequest.from_answer(
        RUBRIC,
        AnswerRecord(item_id="عراق-1", prompt="شنو معنى شكو؟", response="r", candidate_model="q"),
        ["a", "b"],
    )
    results = [judgment("a", 62.5), judgment("b", 1e-06)]
    lines = result_lines(Graded(request, judgments=results))
    assert [line.count("\n") for line in lines] == [1, 1] and all(x.endswith("\n") for x in lines)
    read = [json.loads(line) for line in lines]
    assert read == [
        {"item_id": "عراق-1", "candidate_model": "q", **r.model_dump(mode="json")} for r in results
    ]
    assert list(read[0])[:3] == ["item_id", "candidate_model", "id"]
    assert "عراق-1" in lines[0]  # written as UTF-8, not escaped
