"""What a provider sent back, read once: the text to parse, or why there is none.

Live calls (a LiteLLM `ModelResponse`) and OpenAI Batch-file result lines (plain dicts) go
through the same `read_completion`, and `judge_result` turns either into a `JudgeResult`,
so the two paths cannot disagree on what counts as a usable reply.

A payload that is not a usable chat completion never becomes a grade: empty `choices` is a
`backend_error`; a tool call, a refusal, an empty, a truncated or a content-filtered message is
a `parse_error`.
Either way the raw payload (tool-call arguments and refusal text included) is kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from judges.logprobs import Tokens, read_probabilities, tokens_of
from judges.models import CallStatus, CriterionVerdict, GradeRequest, JudgeResult
from judges.payloads import field_of, plain
from judges.templates import PromptTemplate
from judges.verdicts import ParseFailure, json_object, parse_reply


@dataclass(frozen=True)
class Completion:
    """The usable text of a reply, or the reason it has none, and the payload as sent."""

    text: str | None
    status: CallStatus  # ok, or the failure status when there is no usable text
    problem: str | None
    raw: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    tokens: Tokens | None = None  # token logprobs, when the judge sent them


def _dump(payload: Any) -> str:
    if isinstance(payload, Mapping):
        return json.dumps(payload, ensure_ascii=False, default=plain, separators=(",", ":"))
    dump = getattr(payload, "model_dump_json", None)
    return dump() if dump is not None else str(payload)


def read_completion(payload: Any, allow_truncated: bool = False) -> Completion:
    """Find the judge's answer in a chat-completion payload, strictly (a reply cut off at
    max_tokens is refused unless `allow_truncated`)."""
    usage = field_of(payload, "usage")
    counts = {
        "prompt_tokens": field_of(usage, "prompt_tokens"),
        "completion_tokens": field_of(usage, "completion_tokens"),
    }
    choices = field_of(payload, "choices")
    if not choices:
        return Completion(
            None, "backend_error", "provider payload has no choices", _dump(payload), **counts
        )
    choice = choices[0]
    message = field_of(choice, "message") or {}
    content = field_of(message, "content")
    # LiteLLM moves OpenAI's `refusal` into provider_specific_fields; batch files keep it
    refusal = field_of(message, "refusal") or field_of(
        field_of(message, "provider_specific_fields"), "refusal"
    )
    tool_calls = field_of(message, "tool_calls")
    finish = field_of(choice, "finish_reason")
    if refusal:
        return Completion(None, "parse_error", "the judge refused to grade", str(refusal), **counts)
    if tool_calls:
        arguments = [field_of(field_of(call, "function"), "arguments") for call in tool_calls]
        raw = "\n".join(str(a) for a in arguments if a is not None) or _dump(payload)
        return Completion(
            None, "parse_error", "the judge answered with a tool call, not a verdict", raw, **counts
        )
    if not isinstance(content, str) or not content.strip():
        return Completion(None, "parse_error", "the reply has no text", _dump(payload), **counts)
    if finish in _UNFINISHED and not allow_truncated:
        problem = f"{_UNFINISHED[finish]} (finish_reason={finish})"
        return Completion(None, "parse_error", problem, content, **counts)
    return Completion(content, "ok", None, content, **counts, tokens=tokens_of(payload))


def _redacted(criterion: CriterionVerdict, redact: Callable[[str], str]) -> CriterionVerdict:
    """`criterion` with its evidence redacted; itself when there was nothing to redact (a
    copy per criterion was a tenth of reading a reply: issue 40)."""
    evidence = redact(criterion.evidence)
    if evidence == criterion.evidence:
        return criterion
    return criterion.model_copy(update={"evidence": evidence})


# Why a reply that stopped for these reasons is not a verdict, even when its text parses: it
# was cut off, or the provider's filter stopped or altered it (issue 31.3).
_UNFINISHED = {
    "length": "the reply was cut off",
    "content_filter": "the reply was stopped by the provider's content filter",
}


def judge_result(
    base: JudgeResult,
    completion: Completion,
    template: PromptTemplate,
    request: GradeRequest,
    redact: Callable[[str], str] = lambda text: text,
    verbalised: bool = False,
) -> JudgeResult:
    """`base` (who was asked, with what) completed by the reply: a verdict, or the failure
    with the raw reply and its reason. Secrets are redacted from everything stored.
    `verbalised`: the judge was asked for its confidence in its JSON (`confidence`, 0–1);
    a reply without a valid one is a parse error like any other missing field."""
    update: dict[str, Any] = {
        "raw_reply": redact(completion.raw),
        "prompt_tokens": completion.prompt_tokens,
        "completion_tokens": completion.completion_tokens,
    }
    if completion.text is None:
        return base.model_copy(
            update={**update, "status": completion.status, "error": completion.problem}
        )
    stated = None
    try:
        text = completion.text
        if verbalised and template.output != "first_integer":
            text, stated = _stated_confidence(text)
        verdict = parse_reply(template, request.rubric, text)
    except ParseFailure as exc:
        return base.model_copy(update={**update, "status": "parse_error", "error": str(exc)})
    verdict_fields = dict(verdict.__dict__)  # the fields as they are, not copied again
    if verdict.rationale:
        verdict_fields["rationale"] = redact(verdict.rationale)
    verdict_fields["criteria"] = [_redacted(c, redact) for c in verdict.criteria]
    probabilities = read_probabilities(
        completion.tokens, completion.text, request.rubric, template.output, verdict
    )
    if probabilities is not None:
        verdict_fields["probabilities"] = probabilities
        verdict_fields["expected_score"] = probabilities.expected
        verdict_fields["confidence"] = probabilities.confidence
        if probabilities.confidence is not None:
            verdict_fields["confidence_source"] = "token"
    if stated is not None:  # the judge's chosen source, whatever its token probabilities say
        verdict_fields["confidence"], verdict_fields["confidence_source"] = stated, "verbalised"
    return base.model_copy(update={**update, "status": "ok", **verdict_fields})


def _stated_confidence(text: str) -> tuple[str, float]:
    """The reply without its `confidence`, and that confidence (a number from 0 to 1)."""
    data = json_object(text)
    value = data.pop("confidence", None)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ParseFailure("'confidence' is missing or not a number from 0 to 1")
    return json.dumps(data, ensure_ascii=False), float(value)
