"""The messages of a jinja2 template: the values it may read, each fenced, and the text.

What a template reads (judges/templates.py `CONTEXT_NAMES`): `criteria` (a penalty-weighted
rubric's criteria, one `- [kind] id: text` line each) or `anchors` (a scale rubric's
dimensions with their anchors), `scale` (`scale.min`, `scale.max`), `reply_format` (the JSON
the reply must be, from the template's `output`), `prompt` (the question), `reference`,
`answer`, `metadata.KEY`, and the template's own `constants` and `metadata_choices`. An
absent `prompt` or `reference` is undefined: a template shows it with
`{% if reference is defined %}`, and one that uses it unconditionally refuses a request
without it, naming the field.

Every text value is fenced. The rubric's blocks, shared by every request graded with the
rubric, get a boundary derived from the rubric alone, so a template that puts them first
(the neutral ones do) renders the same prefix for every answer and a vLLM judge with prefix
caching reuses its KV cache; the per-item values get a boundary derived from everything.
Neither boundary occurs in any value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from jinja2.sandbox import SecurityError

from judges.builders import RequestError
from judges.fencing import Boundaries, fence
from judges.models import GradeRequest
from judges.sandbox import Metadata, MissingValue, metadata_keys, names_used, render
from judges.templates import PromptTemplate, TemplateError
from rubrics import PenaltyWeightedRubric, Rubric, ScaleRubric

_TAG_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,40}$")


@dataclass(frozen=True)
class Rendered:
    messages: list[dict[str, str]]
    shown: dict[str, str]  # request field -> its fenced text, as the template received it
    shared: dict[str, str]  # rubric block -> its fenced text

    @property
    def text(self) -> str:
        return "\n".join(m["content"] for m in self.messages)


def criteria_block(rubric: PenaltyWeightedRubric) -> str:
    lines = [f"Rubric: {rubric.title}"] if rubric.title else []
    return "\n".join([*lines, *(f"- [{c.kind}] {c.id}: {c.text}" for c in rubric.criteria)])


def anchors_block(rubric: ScaleRubric) -> str:
    lines = [f"Rubric: {rubric.title}"] if rubric.title else []
    lines.append(f"Scale: {rubric.scale.min} (lowest) to {rubric.scale.max} (highest)")
    for dimension in rubric.dimensions:
        if not dimension.anchors:
            lines.append(f"{dimension.id}: no anchors; use the whole scale")
            continue
        lines.append(f"{dimension.id}:")
        lines += [f"  {s}: {dimension.anchors[s]}" for s in sorted(dimension.anchors, reverse=True)]
    return "\n".join(lines)


def reply_format(template: PromptTemplate, rubric: Rubric) -> str:
    if isinstance(rubric, PenaltyWeightedRubric):
        return (
            '{"criteria": [{"id": "<criterion id>", "met": true or false, "evidence": '
            '"<short quote or reason>"}], "rationale": "<one or two sentences>"}'
        )
    number = f"<whole number from {rubric.scale.min} to {rubric.scale.max}>"
    if template.output == "scores_json":
        return "{" + ", ".join(f'"{d.id}_score": {number}' for d in rubric.dimensions) + "}"
    if template.output == "rating_json":
        return '{"rating": ' + number + "}"
    return number


def _rubric_blocks(rubric: Rubric) -> dict[str, str]:
    if isinstance(rubric, PenaltyWeightedRubric):
        return {"criteria": criteria_block(rubric)}
    return {"anchors": anchors_block(rubric)}


def template_metadata_keys(template: PromptTemplate) -> frozenset[str]:
    """The `metadata.KEY`s the template reads (only those are fenced and passed)."""
    return _metadata_keys(template.system or "", template.user or "")


@lru_cache(maxsize=256)
def _metadata_keys(system: str, user: str) -> frozenset[str]:
    return frozenset(metadata_keys(system) | metadata_keys(user))


def render_jinja(template: PromptTemplate, request: GradeRequest) -> Rendered:
    """The template's messages for this request; RequestError names a value it lacks."""
    rubric = _rubric_text(request.rubric)
    item = {"answer": request.response}
    if request.prompt:
        item["prompt"] = request.prompt
    if request.reference:
        item["reference"] = request.reference
    meta = {
        k: request.metadata[k] for k in template_metadata_keys(template) if k in request.metadata
    }
    values = [*item.values(), *meta.values()]
    lowered = [value.lower() for value in values]
    item_boundary = rubric.boundaries.after(values, lowered)
    fenced_shared = rubric.fenced
    if any(rubric.boundary in value for value in lowered):
        # a value holds the rubric's boundary: this request shares no prefix, and is safe
        fenced_shared = {k: fence(k, v, item_boundary) for k, v in rubric.blocks.items()}
    fenced_item = {k: fence(k, v, item_boundary) for k, v in item.items()}
    fenced_meta = Metadata(
        {
            k: fence(k if _TAG_NAME.match(k) else "metadata", v, item_boundary)
            for k, v in meta.items()
        }
    )
    context = {
        **template.constants,
        **_choices(template, request),
        "scale": _scale(request.rubric),
        "reply_format": reply_format(template, request.rubric),
        **fenced_shared,
        **fenced_item,
        "metadata": fenced_meta,
    }
    messages = []
    if template.system:
        system = _static_system(template) or _render(template, template.system, context)
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": _render(template, template.user or "", context)})
    return Rendered(messages, fenced_item, fenced_shared)


@dataclass(frozen=True)
class _RubricText:
    """A rubric's blocks as every request graded with it shows them (unless a request's
    value holds their boundary), made once per rubric."""

    blocks: dict[str, str]
    fenced: dict[str, str]  # each block fenced under `boundary`, derived from the blocks alone
    boundary: str
    boundaries: Boundaries  # a request's boundary: of the blocks and its values

    @classmethod
    def of(cls, rubric: Rubric) -> _RubricText:
        blocks = _rubric_blocks(rubric)
        boundaries = Boundaries(list(blocks.values()))
        boundary = boundaries.after([])
        fenced = {name: fence(name, text, boundary) for name, text in blocks.items()}
        return cls(blocks, fenced, boundary, boundaries)


# by identity: a rubric model is frozen, and a regrade grades every answer with one object
# (the service parses a stored rubric once per process); each entry keeps its rubric alive,
# so an id is not reused while it is here
_TEXTS: dict[int, tuple[Rubric, _RubricText]] = {}


def _rubric_text(rubric: Rubric) -> _RubricText:
    found = _TEXTS.get(id(rubric))
    if found is None or found[0] is not rubric:
        if len(_TEXTS) >= 256:
            _TEXTS.clear()
        found = _TEXTS[id(rubric)] = (rubric, _RubricText.of(rubric))
    return found[1]


def _static_system(template: PromptTemplate) -> str | None:
    """The system message of a template whose system text reads no value (the neutral and
    the Arabic SME ones): rendered once, not per request."""
    return _static_text(template.system or "")


@lru_cache(maxsize=256)
def _static_text(source: str) -> str | None:
    return None if names_used(source) else render(source, {})


def _render(template: PromptTemplate, source: str, context: dict) -> str:
    try:
        return render(source, context)
    except MissingValue as exc:
        raise RequestError(
            f"{exc.name}: template {template.ref} needs it; this request has none", exc.name
        ) from None
    except SecurityError as exc:
        raise TemplateError(f"template: {template.ref}: {exc}", "template") from None
    except Exception as exc:  # the template's own error (1 + "a", a division by zero): not ours
        raise TemplateError(
            f"template: {template.ref} cannot be rendered ({type(exc).__name__}: {exc})", "template"
        ) from None


def _scale(rubric: Rubric) -> dict[str, float]:
    if isinstance(rubric, ScaleRubric):
        return {"min": rubric.scale.min, "max": rubric.scale.max}
    return {"min": 0, "max": 100}


def _choices(template: PromptTemplate, request: GradeRequest) -> dict[str, str]:
    out = {}
    for name, texts in template.metadata_choices.items():
        value = request.metadata.get(name)
        if value not in texts:
            got = "none" if value is None else f"'{value}'"
            raise RequestError(
                f"metadata.{name}: template {template.ref} needs one of "
                f"{', '.join(texts)} (got {got})",
                f"metadata.{name}",
            )
        out[name] = texts[value]
    return out
