"""Turning a rubric, a template and an answer into the messages and schema of one judge call."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from judges import fann_or_flop
from judges.models import GradeRequest
from judges.templates import PromptTemplate, fence, render
from rubrics import PenaltyWeightedRubric, Rubric, ScaleRubric


class RequestError(ValueError):
    """The request cannot be graded with this rubric; the message names the field."""


class JudgeCall(BaseModel):
    messages: list[dict[str, str]]
    response_format: dict[str, Any] | None


def build_call(template: PromptTemplate, request: GradeRequest) -> JudgeCall:
    rubric = request.rubric
    if template.output == "criteria_json":
        if not isinstance(rubric, PenaltyWeightedRubric):
            raise RequestError(f"rubric: template {template.ref} needs a penalty_weighted rubric")
        user = render(template.user or "", _criteria_values(template, request, rubric))
        schema = criteria_schema(rubric)
    elif template.user_builder == "fann_or_flop":
        user = _fann_or_flop_user(request)
        schema = scores_schema(_scale(rubric, template))
    else:
        user = render(template.user or "", _explanation_values(request))
        schema = (
            None if template.output == "first_integer" else scores_schema(_scale(rubric, template))
        )
    messages = [{"role": "system", "content": template.system}] if template.system else []
    messages.append({"role": "user", "content": user})
    return JudgeCall(messages=messages, response_format=schema)


def _scale(rubric: Rubric, template: PromptTemplate) -> ScaleRubric:
    if not isinstance(rubric, ScaleRubric):
        raise RequestError(f"rubric: template {template.ref} needs a scale rubric")
    return rubric


def _criteria_values(template, request: GradeRequest, rubric) -> dict[str, str]:
    def text(name: str, value: str) -> str:
        return fence(value) if name in template.fenced else value

    reference = ""
    if request.reference:
        reference = f"\n<reference>\n{text('reference', request.reference)}\n</reference>\n"
    criteria = "\n".join(f"- [{c.kind}] {c.id}: {c.text}" for c in rubric.criteria)
    return {
        "prompt": text("prompt", request.prompt),
        "answer": text("answer", request.response),
        "reference_section": reference,
        "criteria": criteria,
    }


def _explanation_values(request: GradeRequest) -> dict[str, str]:
    if not request.reference:
        raise RequestError("reference: this judge compares with a gold explanation; give one")
    return {"gold_explanation": request.reference, "generated_explanation": request.response}


def _fann_or_flop_user(request: GradeRequest) -> str:
    if not request.reference:
        raise RequestError("reference: the fann-or-flop judge needs the reference explanations")
    try:
        reference = fann_or_flop.verse_explanations(request.reference, "reference")
        generated = fann_or_flop.verse_explanations(request.response, "response")
    except fann_or_flop.VerseListError as exc:
        raise RequestError(str(exc)) from None
    item_id = request.metadata.get("poem_id") or request.metadata.get("item_id", "")
    title = request.metadata.get("title", "")
    return fann_or_flop.user_message(item_id, title, reference, generated)


def criteria_schema(rubric: PenaltyWeightedRubric) -> dict[str, Any]:
    """JSON schema with criterion ids as an enum, so a constrained decoder cannot invent ids."""
    ids = [c.id for c in rubric.criteria]
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "rubric_verdict",
            "strict": True,
            "schema": {
                "type": "object",
                "additionalProperties": False,
                "required": ["criteria", "rationale"],
                "properties": {
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
            },
        },
    }


def scores_schema(rubric: ScaleRubric) -> dict[str, Any]:
    """One number per dimension, named '<dimension>_score' as Fann or Flop's output is."""
    fields = [f"{d.id}_score" for d in rubric.dimensions]
    number = {"type": "number", "minimum": rubric.scale.min, "maximum": rubric.scale.max}
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "scale_verdict",
            "strict": True,
            "schema": {
                "type": "object",
                "additionalProperties": False,
                "required": fields,
                "properties": {f: number for f in fields},
            },
        },
    }
