"""The registry of user-message builders of braces templates: a template names its builder
(`user_builder`), and the module that knows a judge's message format registers it here, so
the generic prompt code needs no judge-specific import (Fann or Flop registers from
judges/fann_or_flop.py). jinja2 templates need no builder: their text is the message.

A builder also declares what its message leaves out on purpose, so that leaving it out is
never silent: the request fields its judge never sees (`ignores`: the Kinayat and Fann or
Flop judges were never shown the question) and the bundled rubric whose scale and anchors
its fixed text states (`anchors_of`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from judges.models import GradeRequest
from judges.templates import PromptTemplate, TemplateError

Builder = Callable[[PromptTemplate, GradeRequest], str]
# Templates that name no builder get the one for their output kind.
_DEFAULT_FOR_OUTPUT = {
    "criteria_json": "rubric_criteria",
    "first_integer": "explanation",
    "rating_json": "explanation",
}


# A request's metadata may ask a builder that shows two texts (the reference and the answer)
# to show the answer first: the `position` probe (judges/probes/general.py) grades the same
# pair in both orders. Each text keeps its label; only the order of presentation changes.
ORDER = "presentation_order"
ANSWER_FIRST = "answer_first"


def answer_first(request: GradeRequest) -> bool:
    return request.metadata.get(ORDER) == ANSWER_FIRST


def swap_lines(text: str, first: str, second: str) -> str:
    """`text` with the line holding `first` and the line holding `second` exchanged (each
    placeholder on a line of its own with its label, as 'Gold Explanation: {gold}')."""
    lines = text.split("\n")
    where = [next((i for i, line in enumerate(lines) if k in line), None) for k in (first, second)]
    if None in where or where[0] == where[1]:
        raise TemplateError(f"template: {first} and {second} are not on lines of their own")
    i, j = where
    lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


@dataclass(frozen=True)
class BuilderSpec:
    build: Builder
    ignores: tuple[str, ...] = ()
    anchors_of: str | None = None


_BUILDERS: dict[str, BuilderSpec] = {}


class RequestError(ValueError):
    """The request cannot be graded with this rubric; the message names the field, and
    `field` is it when the message starts with it."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def register(
    name: str, ignores: tuple[str, ...] = (), anchors_of: str | None = None
) -> Callable[[Builder], Builder]:
    """Decorator: make `builder` the one templates reach as `user_builder: name`."""

    def add(builder: Builder) -> Builder:
        if name in _BUILDERS:
            raise ValueError(f"message builder '{name}' is registered twice")
        _BUILDERS[name] = BuilderSpec(builder, ignores, anchors_of)
        return builder

    return add


def builder_name(template: PromptTemplate) -> str:
    """The name of the builder that writes this template's user message."""
    return template.user_builder or _DEFAULT_FOR_OUTPUT.get(template.output, "")


def spec_for(template: PromptTemplate) -> BuilderSpec:
    name = builder_name(template)
    try:
        return _BUILDERS[name]
    except KeyError:
        known = ", ".join(sorted(_BUILDERS))
        raise TemplateError(
            f"template: {template.ref} names message builder '{name}' (known: {known})"
        ) from None
