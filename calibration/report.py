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
from calibration.selective_report import SelectiveSection

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
    """One judge on one block: each metric's value, interval, the interval's method (a key
    of `methods` in the report) and standard error, and the independent units (items, or
    clusters with `--cluster`) the t intervals and the drift test count degrees of freedom
    from (units − 1)."""

    _optional = ("undefined", "no_interval", "df")
    ci: dict[str, list[float] | None]
    se: dict[str, float | None] = Field(default_factory=dict)
    ci_method: dict[str, str | None] = Field(default_factory=dict)
    units: int | None = None
    df: dict[str, float] = Field(
        default_factory=dict,
        description="degrees of freedom of a design-weighted metric's SE (Bell-McCaffrey); "
        "units − 1 otherwise",
    )
    no_interval: dict[str, str] = Field(
        default_factory=dict, description="why a defined metric has no interval"
    )
    undefined: dict[str, str] = Field(default_factory=dict)


class HumanBlock(_DropsEmpty):
    n_raters: int
    human_alpha: float | None
    ci: dict[str, list[float] | None]
    ci_method: dict[str, str | None] = Field(default_factory=dict)
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
    ci_method: dict[str, str | None] = Field(default_factory=dict)
    alt_test: AltTestResult
    weight: float | None = None
    points_at_stake: float | None = Field(
        default=None, description="|weight| × share of (item, human) pairs that disagree"
    )


class JudgeReport(_DropsEmpty):
    _optional = ("criteria", "stand_in")
    overall: MetricBlock
    strata: dict[str, MetricBlock]
    alt_test: JudgeAltTest
    criteria: dict[str, CriterionBlock] = Field(default_factory=dict)
    stand_in: bool = Field(
        default=False,
        description="a stand-in judge, no model behind it (inputs.stand_ins); shown when true",
    )


class TrustRow(BaseModel):
    stratum: str
    judge: str
    verdict: Verdict
    reason: str | None = Field(default=None, description="why the verdict is not 'replace'")
    winning_rate: float | None
    advantage_probability: float | None
    p_replace: float | None = Field(
        default=None, description="partial-conjunction p of 'beats at least half the annotators'"
    )
    q_replace: float | None = Field(
        default=None, description="p_replace adjusted over the report's cells (procedures)"
    )
    bias: Literal["lenient", "harsh"] | None
    bias_p: float | None = Field(default=None, description="two-sided p of signed error = 0")
    bias_q: float | None = Field(default=None, description="bias_p adjusted over the report")
    bias_test: str | None = Field(
        default=None, description="the test behind bias_p (calibration/cell_tests.py METHODS)"
    )
    bias_untested: str | None = Field(
        default=None, description="why the signed error could not be tested (no flag)"
    )
    rank: int
    tested: int
    small_n: bool = Field(description="fewest items of a tested annotator below SMALL_N")
    missing: str | None = Field(
        default=None, description="insufficient: what is missing, e.g. '2 of 3 annotators'"
    )
    stand_in: bool = Field(
        default=False, description="the judge is a stand-in, no model behind it"
    )


class TrustMap(BaseModel):
    epsilon: float
    q: float
    rows: list[TrustRow]
    best: dict[str, str | None]
    procedures: dict[str, str] = Field(
        default_factory=dict, description="how 'replace' and the bias flags are decided"
    )


class CalibrationReport(BaseModel):
    trust: TrustMap
    methods: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="what each named method in the report means"
    )
    design: dict[str, Any] = Field(
        default_factory=dict,
        description="how the labels were chosen (inclusion_prob), which values are weighted "
        "by it and the warnings a reader must see",
    )
    scale: dict[str, Any]
    reference: str
    n_items: int
    humans: HumanBlock
    judges: dict[str, JudgeReport]
    selective: SelectiveSection | None = Field(
        default=None,
        description="per judge, cascade and stratum: the confidence threshold above which a "
        "verdict is trusted at request time, with its guarantee (null: no judge carries a "
        "confidence)",
    )
    options: dict[str, Any]
    inputs: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
