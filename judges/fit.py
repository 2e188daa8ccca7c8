"""Whether a template can grade a rubric, and a request, without dropping what they carry.

A rubric's criteria or anchors, the question and the reference reach the judge only if the
template shows them. A template that would leave one out is refused with one line naming
the field, instead of grading with part of the rubric or the request silently missing
(issue 26: a user's 1-5 rubric graded with the Kinayat prompt lost its own anchors).
Leaving something out on purpose is declared: `ignores` for request fields, `anchors_of`
for a published text that states its own scale and anchors.

jinja2 templates are checked by rendering: with every value given (rubric check) or with
the request itself, and a fenced value counts as shown only when its fence is in the text.
Braces templates are checked by what their builder declares (judges/builders.py).
"""

from __future__ import annotations

from judges.builders import RequestError, spec_for
from judges.models import GradeRequest
from judges.rendering import Rendered, render_jinja, template_metadata_keys
from judges.templates import PromptTemplate, TemplateError, TemplateRegistry
from rubrics import PenaltyWeightedRubric, Rubric, RubricError, ScaleRubric, library_rubric

ONE_RATING = ("rating_json", "first_integer")
PROBE = "qadi-probe"


def template_of(
    rubric: Rubric,
    templates: TemplateRegistry,
    override: str | dict | None = None,
    field: str | None = None,
) -> PromptTemplate:
    """The template `rubric` is graded with (a request's `override`, else the rubric's own),
    refused with TemplateError if it is unknown or would drop any of the rubric; its `field`
    is where the template was given (default: `template` for an override, else
    `rubric.template`)."""
    field = field or ("template" if override is not None else "rubric.template")
    template = templates.resolve(override if override is not None else rubric.template, field)
    check_rubric(template, rubric, field)
    return template


def check_rubric(template: PromptTemplate, rubric: Rubric, field: str = "template") -> None:
    """TemplateError (located at `field`) unless `template` shows everything `rubric` has."""
    wants_criteria = template.output == "criteria_json"
    if wants_criteria != isinstance(rubric, PenaltyWeightedRubric):
        kind = "penalty_weighted" if wants_criteria else "scale"
        raise TemplateError(
            f"{field}: {template.ref} grades {kind} rubrics; '{rubric.id}' is {rubric.kind}",
            field,
        )
    one_rating = template.output in ONE_RATING
    if isinstance(rubric, ScaleRubric) and one_rating and len(rubric.dimensions) > 1:
        ids = ", ".join(d.id for d in rubric.dimensions)
        raise TemplateError(
            f"dimensions: {template.ref} returns one rating; rubric '{rubric.id}' has "
            f"{len(rubric.dimensions)} dimensions ({ids}): use a scores_json template "
            "such as neutral-scale@1",
            field,
        )
    stated = template.anchors_of
    if template.syntax == "braces":
        stated = spec_for(template).anchors_of
    if isinstance(rubric, ScaleRubric) and stated is not None:
        _same_scale(template, rubric, stated, field)
    if template.syntax == "braces":
        return  # the builder shows the rest (rubric_criteria: the criteria)
    try:
        rendered = render_jinja(template, _probe(template, rubric))
    except (RequestError, TemplateError) as exc:  # located at the template, wherever it came
        raise TemplateError(f"{field}: {str(exc).removeprefix('template: ')}", field) from None
    if rendered.shown["answer"] not in rendered.text:
        raise TemplateError(f"answer: {template.ref} never shows the answer", field)
    block = "criteria" if isinstance(rubric, PenaltyWeightedRubric) else "anchors"
    if (block == "criteria" or stated is None) and rendered.shared[block] not in rendered.text:
        raise TemplateError(
            f"{block}: {template.ref} never shows the rubric's {block} ({{{{ {block} }}}}); "
            f"rubric '{rubric.id}' would be graded without them",
            field,
        )


def check_request(template: PromptTemplate, request: GradeRequest, rendered: Rendered | None):
    """RequestError unless every field the request gives is shown or declared ignored."""
    if template.syntax == "braces" or rendered is None:
        return  # a builder shows every field it does not declare it ignores
    for name in ("prompt", "reference"):
        given = name in rendered.shown and name not in template.ignores
        if given and rendered.shown[name] not in rendered.text:
            raise RequestError(
                f"{name}: template {template.ref} does not show it, so the judge would "
                f"never see it; use a template that does, or one that declares ignores: [{name}]",
                name,
            )


def _same_scale(template: PromptTemplate, rubric: ScaleRubric, ref: str, field: str) -> None:
    try:
        published = library_rubric(ref)
    except RubricError:
        raise TemplateError(
            f"{field}: {template.ref}: anchors_of names no rubric '{ref}'"
        ) from None

    def shape(r: Rubric):
        if not isinstance(r, ScaleRubric):
            return None
        return (r.scale.min, r.scale.max, [(d.id, d.anchors) for d in r.dimensions])

    if shape(rubric) != shape(published):
        raise TemplateError(
            f"anchors: {template.ref} states the scale and anchors of rubric '{ref}' in its "
            f"own text; rubric '{rubric.id}' has others, which the judge would never see: "
            "use neutral-scale@1 or a template that shows {{ anchors }}",
            field,
        )


def _probe(template: PromptTemplate, rubric: Rubric) -> GradeRequest:
    """A request giving every value, to see which of them the template shows."""
    metadata = {key: PROBE for key in template_metadata_keys(template)}
    metadata |= {name: next(iter(texts)) for name, texts in template.metadata_choices.items()}
    return GradeRequest(
        rubric=rubric,
        prompt=PROBE,
        reference=PROBE,
        response=PROBE,
        candidate_model=PROBE,
        metadata=metadata,
    )
