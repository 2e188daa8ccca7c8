"""The calibration report as typed models; `CalibrationReport.as_json()` is the JSON of
DESIGN.md ("Calibration report JSON"), with the trust map first.

Metric fields come from the metric registry, so a new registered metric appears in the
model, the JSON and the CIs without touching this file.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, model_serializer

from calibration.alt_test import AltTestResult
from calibration.metrics import METRICS

Verdict = Literal["replace", "not_replacement", "insufficient"]
NO_JUDGE = "no judge replaces an SME here"

_MetricValues = create_model(
    "MetricValues",
    __config__=ConfigDict(extra="forbid"),
    **{name: (int if name == "n" else float | None, ...) for name in METRICS},
)


class _DropsEmpty(BaseModel):
    """`undefined` (and other optional extras) appear only when they say something."""

    @model_serializer(mode="wrap")
    def _drop_empty(self, handler) -> dict[str, Any]:
        data = handler(self)
        return {k: v for k, v in data.items() if not (k in self._optional and not v)}

    _optional: tuple[str, ...] = ("undefined",)


class MetricBlock(_DropsEmpty, _MetricValues):  # type: ignore[misc, valid-type]
    ci: dict[str, list[float] | None]
    undefined: dict[str, str] = Field(default_factory=dict)


class HumanBlock(_DropsEmpty):
    n_raters: int
    human_alpha: float | None
    ci: dict[str, list[float] | None]
    undefined: dict[str, str] = Field(default_factory=dict)


class JudgeAltTest(BaseModel):
    overall: AltTestResult
    strata: dict[str, AltTestResult] = Field(default_factory=dict)


class CriterionBlock(BaseModel):
    """Agreement on one rubric criterion's met / not-met marks."""

    n: int
    judge_met_rate: float | None
    human_met_rate: float | None
    agreement: float | None
    cohen_kappa: float | None
    ci: dict[str, list[float] | None]
    alt_test: AltTestResult
    weight: float | None = None
    points_at_stake: float | None = Field(
        default=None, description="|weight| × share of (item, human) pairs that disagree"
    )


class JudgeReport(_DropsEmpty):
    _optional = ("criteria",)
    overall: MetricBlock
    strata: dict[str, MetricBlock]
    alt_test: JudgeAltTest
    criteria: dict[str, CriterionBlock] = Field(default_factory=dict)


class TrustRow(BaseModel):
    stratum: str
    judge: str
    verdict: Verdict
    winning_rate: float | None
    advantage_probability: float | None
    bias: Literal["lenient", "harsh"] | None
    rank: int
    tested: int
    small_n: bool = Field(description="fewest items of a tested annotator below SMALL_N")
    missing: str | None = Field(
        default=None, description="insufficient: what is missing, e.g. '2 of 3 annotators'"
    )


class TrustMap(BaseModel):
    epsilon: float
    q: float
    rows: list[TrustRow]
    best: dict[str, str | None]


class CalibrationReport(BaseModel):
    trust: TrustMap
    scale: dict[str, Any]
    reference: str
    n_items: int
    humans: HumanBlock
    judges: dict[str, JudgeReport]
    options: dict[str, Any]
    inputs: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
