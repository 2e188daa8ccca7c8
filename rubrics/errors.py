"""Errors a caller can show to a person as they are."""

from __future__ import annotations

from pydantic import ValidationError


class RubricError(ValueError):
    """A rubric was refused; the message names the field and the problem."""


_UNION_TAGS = ("penalty_weighted", "scale")


def describe_validation_error(error: ValidationError, prefix: str = "") -> str:
    """Turn pydantic's error list into one line per problem, each starting with its field path.

    Discriminated-union errors carry the tag in the location ('penalty_weighted.criteria.0');
    the tag is dropped because the user never wrote it as a key.
    """
    lines = []
    for item in error.errors():
        loc = [str(p) for p in item["loc"]]
        if loc and loc[0] in _UNION_TAGS:
            loc = loc[1:]
        if item["type"] == "union_tag_invalid":
            loc = loc + ["kind"]
        where = ".".join(([prefix] if prefix else []) + loc) or prefix or "body"
        message = item["msg"].removeprefix("Value error, ")
        lines.append(f"{where}: {message}")
    return "; ".join(lines)
