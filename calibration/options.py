"""What a calibration report is asked to compute: scale, level, strata, bootstrap, alt-test."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from calibration.alt_test import MIN_ITEMS_FLOOR, check_min_items
from calibration.scoring import ScoringName, scoring_unit
from calibration.selective_report import SelectiveOptions


class CalibrationOptions(BaseModel):
    scale_min: float | None = None
    scale_max: float | None = None
    level: Literal["nominal", "ordinal", "interval"] | None = Field(
        default=None, description="default: ordinal for integer scales of at most 11 points"
    )
    reference: str = "mean"
    by: list[str] = Field(default_factory=list)
    max_strata: int | None = Field(
        default=None,
        ge=1,
        description="most strata over every `by` attribute, refused before any work (the "
        "service's QADI_REPORT_STRATA_MAX); None: no limit",
    )
    bootstrap: int = Field(default=2000, ge=0)
    seed: int = 0
    cluster: str | None = None
    confidence: float = Field(default=0.95, gt=0, lt=1)
    alt_test: bool = Field(default=False, description="require the alt-test (error if untestable)")
    epsilon: float = Field(default=0.2, ge=0, lt=1)
    alt_scoring: ScoringName | None = Field(  # type: ignore[valid-type]
        default=None, description="default: accuracy for labels, neg_rmse for numbers"
    )
    alt_min_items: int = Field(
        default=30, description=f"independent units an annotator needs; at least {MIN_ITEMS_FLOOR}"
    )
    criterion_weights: dict[str, float] = Field(
        default_factory=dict, description="rubric weight per criterion id (points at stake)"
    )
    selective: SelectiveOptions = Field(
        default_factory=SelectiveOptions,
        description="thresholds of selective judging (trust at request time)",
    )

    _floor = field_validator("alt_min_items")(check_min_items)

    @model_validator(mode="after")
    def _check(self) -> CalibrationOptions:
        if self.level != "nominal":
            if self.scale_min is None or self.scale_max is None:
                raise ValueError("scale: MIN-MAX is required unless the level is nominal")
            if self.scale_min >= self.scale_max:
                raise ValueError(f"scale: min {self.scale_min} must be below max {self.scale_max}")
        unit = scoring_unit(self.alt_scoring) if self.alt_scoring else None
        if unit is not None and self.effective_level not in unit.levels:
            needs = "needs numbers; labels use accuracy" if self.level == "nominal" else (
                f"applies to level {' or '.join(sorted(unit.levels))}"
            )
            raise ValueError(f"alt_scoring: {unit.name} {needs}, not {self.effective_level}")
        return self

    @property
    def effective_level(self) -> str:
        if self.level:
            return self.level
        integral = float(self.scale_min).is_integer() and float(self.scale_max).is_integer()
        return "ordinal" if integral and self.scale_max - self.scale_min <= 10 else "interval"

    @property
    def scoring(self) -> str:
        if self.alt_scoring:
            return self.alt_scoring
        return "accuracy" if self.effective_level == "nominal" else "neg_rmse"

    @property
    def scale_range(self) -> float:
        return 1.0 if self.scale_min is None else self.scale_max - self.scale_min
