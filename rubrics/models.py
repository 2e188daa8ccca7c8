"""What a grade means: the two rubric kinds of DESIGN.md as validated pydantic models.

Validation lives here so every entry point (YAML file, inline JSON in a request, the
database) refuses the same bad rubrics with the same field-naming errors.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$"
TEMPLATE_REF_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}@[0-9]{1,6}$"
# A version has at most six digits, as in a template reference: every database's INTEGER holds it.
MAX_VERSION = 999_999
NEUTRAL_TEMPLATES = {"penalty_weighted": "neutral-criteria@1", "scale": "neutral-scale@1"}
TemplateSpec = str | dict[str, Any]
_TEMPLATE_DOC = (
    "judge prompt template: 'name@version', or an inline template object (judges checks it); "
    "default: the neutral template of the rubric's kind"
)


def _template_ref(value: TemplateSpec) -> TemplateSpec:
    """A reference is a name@version, never a path ('../../etc/passwd@1' is refused here,
    wherever a rubric comes from); whether the template exists is the judges' check."""
    if isinstance(value, str) and not re.match(TEMPLATE_REF_PATTERN, value):
        raise ValueError(
            f"'{value}' is not a template reference (name@version; the name of letters, "
            "digits, '.', '_' and '-')"
        )
    return value


class _Strict(BaseModel):
    # allow_inf_nan=False: YAML's .inf and JSON's Infinity would make NaN scores (issue 13.4)
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Criterion(_Strict):
    """One line of a penalty-weighted rubric.

    A positive criterion is a requirement the answer must meet; a negative one is an
    answer-specific error whose presence costs `weight` points.
    """

    id: str = Field(pattern=ID_PATTERN)
    kind: Literal["positive", "negative"]
    weight: float = Field(gt=0, description="points earned (positive) or lost (negative)")
    text: str = Field(min_length=1)


class PenaltyWeightedRubric(_Strict):
    kind: Literal["penalty_weighted"] = "penalty_weighted"
    id: str = Field(pattern=ID_PATTERN)
    version: int = Field(default=1, ge=1, le=MAX_VERSION)
    title: str = ""
    clip: bool = Field(default=True, description="clip the score to [0, 100]; recorded")
    template: TemplateSpec = Field(
        default=NEUTRAL_TEMPLATES["penalty_weighted"], description=_TEMPLATE_DOC
    )
    criteria: list[Criterion] = Field(min_length=1)
    metadata: dict[str, str] = Field(default_factory=dict)

    _check_template = field_validator("template")(_template_ref)

    @field_validator("criteria")
    @classmethod
    def _unique_with_a_positive(cls, criteria: list[Criterion]) -> list[Criterion]:
        seen: set[str] = set()
        for criterion in criteria:
            if criterion.id in seen:
                raise ValueError(f"duplicate criterion id '{criterion.id}'")
            seen.add(criterion.id)
        if not any(c.kind == "positive" for c in criteria):
            raise ValueError("a penalty-weighted rubric needs at least one positive criterion")
        if not math.isfinite(sum(c.weight for c in criteria)):
            raise ValueError("the weights add up to more than a finite number can hold")
        return criteria

    @property
    def scale_min(self) -> float:
        return 0.0

    @property
    def scale_max(self) -> float:
        return 100.0


class Scale(_Strict):
    min: int
    max: int

    @model_validator(mode="after")
    def _ordered(self) -> Scale:
        if self.min >= self.max:
            raise ValueError(f"scale min ({self.min}) must be below max ({self.max})")
        return self


class Dimension(_Strict):
    """One scored dimension of a scale rubric with its published anchors."""

    id: str = Field(pattern=ID_PATTERN)
    anchors: dict[int, str] = Field(default_factory=dict)


class ScaleRubric(_Strict):
    kind: Literal["scale"] = "scale"
    id: str = Field(pattern=ID_PATTERN)
    version: int = Field(default=1, ge=1, le=MAX_VERSION)
    title: str = ""
    scale: Scale
    dimensions: list[Dimension] = Field(min_length=1)
    primary: str | None = Field(
        default=None,
        description="dimension whose value is the grade's score; default 'overall' or the first",
    )
    template: TemplateSpec = Field(default=NEUTRAL_TEMPLATES["scale"], description=_TEMPLATE_DOC)
    metadata: dict[str, str] = Field(default_factory=dict)

    _check_template = field_validator("template")(_template_ref)

    @model_validator(mode="after")
    def _consistent(self) -> ScaleRubric:
        ids = [d.id for d in self.dimensions]
        duplicates = {i for i in ids if ids.count(i) > 1}
        if duplicates:
            raise ValueError(f"duplicate dimension id '{sorted(duplicates)[0]}'")
        if self.primary is not None and self.primary not in ids:
            raise ValueError(f"primary '{self.primary}' is not one of the dimensions {ids}")
        for dim in self.dimensions:
            for score in dim.anchors:
                if not self.scale.min <= score <= self.scale.max:
                    raise ValueError(
                        f"anchor {score} of dimension '{dim.id}' is outside the scale "
                        f"{self.scale.min}-{self.scale.max}"
                    )
        return self

    @property
    def primary_dimension(self) -> str:
        ids = [d.id for d in self.dimensions]
        if self.primary:
            return self.primary
        return "overall" if "overall" in ids else ids[0]

    @property
    def scale_min(self) -> float:
        return float(self.scale.min)

    @property
    def scale_max(self) -> float:
        return float(self.scale.max)


Rubric = Annotated[PenaltyWeightedRubric | ScaleRubric, Field(discriminator="kind")]
