"""The registry of user-message builders: a template names its builder (`user_builder`), and
the module that knows a judge's message format registers it here, so the generic prompt code
needs no judge-specific import (Fann or Flop registers from judges/fann_or_flop.py)."""

from __future__ import annotations

from collections.abc import Callable

from judges.models import GradeRequest
from judges.templates import PromptTemplate, TemplateError

Builder = Callable[[PromptTemplate, GradeRequest], str]
_BUILDERS: dict[str, Builder] = {}
# Templates that name no builder get the one for their output kind.
_DEFAULT_FOR_OUTPUT = {
    "criteria_json": "rubric_criteria",
    "first_integer": "explanation",
    "rating_json": "explanation",
}


class RequestError(ValueError):
    """The request cannot be graded with this rubric; the message names the field."""


def register(name: str) -> Callable[[Builder], Builder]:
    """Decorator: make `builder` the one templates reach as `user_builder: name`."""

    def add(builder: Builder) -> Builder:
        if name in _BUILDERS:
            raise ValueError(f"message builder '{name}' is registered twice")
        _BUILDERS[name] = builder
        return builder

    return add


def builder_name(template: PromptTemplate) -> str:
    """The name of the builder that writes this template's user message."""
    return template.user_builder or _DEFAULT_FOR_OUTPUT.get(template.output, "")


def builder_for(template: PromptTemplate) -> Builder:
    name = builder_name(template)
    try:
        return _BUILDERS[name]
    except KeyError:
        known = ", ".join(sorted(_BUILDERS))
        raise TemplateError(
            f"template: {template.ref} names message builder '{name}' (known: {known})"
        ) from None
