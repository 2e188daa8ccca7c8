"""Turning a rubric, a template and an answer into the messages and schema of one judge call.

A jinja2 template's messages are its text rendered with fenced values (judges/rendering.py),
checked to show every field the request gives (judges/fit.py). A braces template's user
message comes from the builder it names (judges/builders.py); the two generic builders live
here, and every value such a template lists in `fenced` is wrapped in a section whose
boundary the value cannot contain (judges/fencing.py).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from judges.builders import RequestError, answer_first, register, spec_for, swap_lines
from judges.fencing import boundary_for, fence
from judges.fit import check_request
from judges.models import GradeRequest
from judges.rendering import render_jinja
from judges.templates import PromptTemplate, render
from rubrics import PenaltyWeightedRubric, Rubric, ScaleRubric

__all__ = [
    "JudgeCall",
    "RequestError",
    "build_call",
    "criteria_schema",
    "for_mode",
    "scores_schema",
]
SCHEMA_INSTRUCTION = (
    "\n\nRespond with one JSON object that matches this JSON schema, and nothing else:\n"
)


class JudgeCall(BaseModel):
    messages: list[dict[str, str]]
    response_format: dict[str, Any] | None


def build_call(template: PromptTemplate, request: GradeRequest) -> JudgeCall:
    if template.syntax == "jinja2":
        rendered = render_jinja(template, request)
        check_request(template, request, rendered)
        messages = rendered.messages
    else:
        user = spec_for(template).build(template, request)
        messages = [{"role": "system", "content": template.system}] if template.system else []
        messages.append({"role": "user", "content": user})
    return JudgeCall(messages=messages, response_format=_schema(template, request.rubric))


VERBALISED_INSTRUCTION = (
    '\n\nIn the same JSON object, also give "confidence": your probability, from 0 to 1, that '
    "a careful expert grading this answer would give exactly your verdict."
)


def with_verbalised_confidence(call: JudgeCall) -> JudgeCall:
    """The call asking the judge for its confidence in words (`confidence` in its JSON,
    required by the schema): the opt-in `verbalised` source. A free-text call (no schema)
    has no JSON to hold it and is left as it is; its verdicts carry no confidence."""
    if call.response_format is None:
        return call
    format_ = json.loads(json.dumps(call.response_format))
    schema = format_["json_schema"]["schema"]
    schema["properties"]["confidence"] = {"type": "number", "minimum": 0, "maximum": 1}
    schema["required"] = [*schema["required"], "confidence"]
    last = call.messages[-1]
    messages = [*call.messages[:-1], {**last, "content": last["content"] + VERBALISED_INSTRUCTION}]
    return JudgeCall(messages=messages, response_format=format_)


def for_mode(call: JudgeCall, mode: str) -> JudgeCall:
    """The same call for a judge whose server takes another kind of structured output
    (`judges.config.StructuredOutput`): the schema goes into the prompt for `json_object`
    and `none`, and for `json_object` also into the `schema` field of a JSON-mode
    response_format, which llama-cpp-python and llama.cpp's server enforce and OpenAI-style
    servers ignore. A call with no schema (free-text judges) is the same in every mode."""
    if mode == "json_schema" or call.response_format is None:
        return call
    schema = call.response_format["json_schema"]["schema"]
    text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    last = call.messages[-1]
    messages = [
        *call.messages[:-1],
        {**last, "content": last["content"] + SCHEMA_INSTRUCTION + text},
    ]
    response_format = {"type": "json_object", "schema": schema} if mode == "json_object" else None
    return JudgeCall(messages=messages, response_format=response_format)


def _schema(template: PromptTemplate, rubric: Rubric) -> dict[str, Any] | None:
    if template.output == "criteria_json":
        return criteria_schema(_penalty_weighted(rubric, template))
    if template.output == "first_integer":
        return None  # the paper's rule reads free text
    scale = _scale(rubric, template)
    if template.output == "rating_json":
        return rating_schema(scale)
    # Fann or Flop's published format lets a score be an average; jinja2 templates (the
    # neutral one, users') ask for whole numbers, and the schema says so
    return scores_schema(scale, whole=template.syntax == "jinja2")


def _scale(rubric: Rubric, template: PromptTemplate) -> ScaleRubric:
    if not isinstance(rubric, ScaleRubric):
        raise RequestError(f"rubric: template {template.ref} needs a scale rubric")
    return rubric


def _penalty_weighted(rubric: Rubric, template: PromptTemplate) -> PenaltyWeightedRubric:
    if not isinstance(rubric, PenaltyWeightedRubric):
        raise RequestError(f"rubric: template {template.ref} needs a penalty_weighted rubric")
    return rubric


def fenced_values(template: PromptTemplate, values: dict[str, str]) -> dict[str, str]:
    """`values` with those the template fences wrapped under one boundary per call."""
    boundary = boundary_for(list(values.values()))
    return {
        name: fence(name, value, boundary) if name in template.fenced else value
        for name, value in values.items()
    }


@register("rubric_criteria")
def _criteria_user(template: PromptTemplate, request: GradeRequest) -> str:
    rubric = _penalty_weighted(request.rubric, template)
    values = {
        "prompt": request.prompt,
        "answer": request.response,
        "rubric": "\n".join(f"- [{c.kind}] {c.id}: {c.text}" for c in rubric.criteria),
    }
    if request.reference:
        values["reference"] = request.reference
    fenced = fenced_values(template, values)
    return render(template.user or "", {"reference": "", **fenced})


@register("explanation", ignores=("prompt",), anchors_of="kinayat-explanation")
def _explanation_user(template: PromptTemplate, request: GradeRequest) -> str:
    """Kinayat's judge: it sees the two explanations, never the idiom (Figure 12)."""
    if not request.reference:
        raise RequestError(
            "reference: this judge compares with a gold explanation; give one", "reference"
        )
    values = {"gold_explanation": request.reference, "generated_explanation": request.response}
    text = template.user or ""
    if answer_first(request):  # the position probe: the same two texts, the other order
        text = swap_lines(text, "{gold_explanation}", "{generated_explanation}")
    return render(text, fenced_values(template, values))


def criteria_schema(rubric: PenaltyWeightedRubric) -> dict[str, Any]:
    """JSON schema with criterion ids as an enum, so a constrained decoder cannot invent ids."""
    ids = [c.id for c in rubric.criteria]
    return _json_schema(
        "rubric_verdict",
        {
            "criteria": {
                "type": "array",
                "minItems": len(ids),
                "maxItems": len(ids),
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["id", "met", "evidence"],
                    "properties": {
                        "id": {"type": "string", "enum": ids},
                        "met": {"type": "boolean"},
                        "evidence": {"type": "string"},
                    },
                },
            },
            "rationale": {"type": "string"},
        },
    )


def scores_schema(rubric: ScaleRubric, whole: bool = False) -> dict[str, Any]:
    """One number per dimension, named '<dimension>_score' as Fann or Flop's output is;
    `whole`: an integer."""
    kind = "integer" if whole else "number"
    number = {"type": kind, "minimum": rubric.scale.min, "maximum": rubric.scale.max}
    return _json_schema("scale_verdict", {f"{d.id}_score": number for d in rubric.dimensions})


def rating_schema(rubric: ScaleRubric) -> dict[str, Any]:
    """`{"rating": N}` with N an integer of the scale as an enum (issue 13.5): a constrained
    decoder (OpenAI structured outputs, vLLM's response_format) can produce nothing else."""
    ratings = list(range(rubric.scale.min, rubric.scale.max + 1))
    return _json_schema("rating", {"rating": {"type": "integer", "enum": ratings}})


def _json_schema(name: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {
            "name": name,
            "strict": True,
            "schema": {
                "type": "object",
                "additionalProperties": False,
                "required": list(properties),
                "properties": properties,
            },
        },
    }
