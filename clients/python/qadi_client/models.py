"""Request and response bodies of the qadi HTTP API, as the client sees them.

These mirror the service's pydantic models without importing them (the client must not pull in
the server's dependencies). `tests/unit/test_client_models.py` compares every model here with
the schema of the same name in the service's OpenAPI document, so the two cannot drift apart.
Responses ignore fields they do not know, so an older client keeps working against a newer
server; the drift test is what keeps this file complete.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

CallStatus = Literal["ok", "parse_error", "backend_error", "timeout"]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Response(BaseModel):
    model_config = ConfigDict(extra="ignore")


class JudgeRequest(_Request):
    """One answer to grade (`POST /judge`); `kind` selects rubric (%) or explanation (1-5)."""

    kind: Literal["rubric", "explanation"]
    prompt: str = ""
    response: str
    reference: str | None = None
    candidate_model: str = Field(min_length=1, max_length=256)
    candidate_provider: str | None = Field(default=None, max_length=128)
    rubric: dict[str, Any] | None = None
    rubric_id: str | None = Field(default=None, max_length=160)
    judges: list[str] | None = Field(default=None, max_length=32)
    metadata: dict[str, str] = Field(default_factory=dict)


class RubricInfo(_Response):
    id: str
    version: int
    hash: str


class Aggregate(_Response):
    n: int
    mean: float
    median: float
    min: float
    max: float
    spread: float
    stdev: float | None


class CriterionVerdict(_Response):
    id: str
    met: bool
    evidence: str = ""


class JudgeResult(_Response):
    """One judge's outcome: a score, or a status saying why there is none."""

    id: str = ""  # optional in the schema (the server makes one), always sent
    judge: str
    model: str
    maker: str | None = None
    status: CallStatus
    score: float | None = None
    raw_score: float | None = None
    clipped: bool | None = None
    dimensions: dict[str, float] = Field(default_factory=dict)
    criteria: list[CriterionVerdict] = Field(default_factory=list)
    rationale: str | None = None
    raw_reply: str | None = None
    error: str | None = None
    latency_ms: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    cached: bool = False
    attempts: int = 1
    cache_key: str
    template: str
    template_hash: str
    rubric_ref: str
    rubric_hash: str


class SkippedJudge(_Response):
    judge: str
    reason: str
    detail: str
    substitute: str | None = None


class UnavailableJudge(_Response):
    judge: str
    status: CallStatus
    error: str | None
    substitute: str | None = None


class JudgeResponse(_Response):
    request_id: str
    status: Literal["ok", "partial", "failed"]
    rubric: RubricInfo
    candidate_model: str
    candidate_maker: str | None
    aggregate: Aggregate | None
    results: list[JudgeResult]
    skipped: list[SkippedJudge]
    unavailable: list[UnavailableJudge] = Field(default_factory=list)


class BatchItemResult(_Response):
    """One item of `POST /judge/batch`: its own status code and body."""

    index: int
    status_code: int
    body: dict[str, Any]

    @property
    def response(self) -> JudgeResponse | None:
        """The item's grade when it succeeded (200), else None (`body` holds the error)."""
        return JudgeResponse.model_validate(self.body) if self.status_code == 200 else None


class BatchResponse(_Response):
    results: list[BatchItemResult]


class Judgment(JudgeResult):
    """A stored judge outcome (`GET /judgments`): a JudgeResult with its item and request."""

    request_id: str | None
    item_id: str
    candidate_model: str
    metadata: dict[str, Any]
    created_at: datetime


class JudgmentPage(_Response):
    items: list[Judgment]
    next_cursor: str | None


class GradeRow(_Request):
    """One row of the grades interchange format; other attributes become strata."""

    model_config = ConfigDict(extra="allow")

    item_id: str
    rater: str
    rater_kind: Literal["human", "judge"]
    score: float
    criteria: dict[str, bool] | None = None


class UploadResult(_Response):
    inserted: int
    updated: int


class ReportRequest(_Request):
    """What `POST /calibration/reports` computes: which grades, which scale, which strata,
    and the alt-test behind the trust map (`epsilon`, `alt_scoring`, `alt_min_items`)."""

    judges: list[str] | None = None
    rubric: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    since: datetime | None = None
    until: datetime | None = None
    scale_min: float | None = None
    scale_max: float | None = None
    level: Literal["nominal", "ordinal", "interval"] | None = None
    reference: str = "mean"
    by: list[str] = Field(default_factory=list)
    bootstrap: int = Field(default=2000, ge=0, le=20000)
    seed: int = 0
    cluster: str | None = None
    alt_test: bool = False
    epsilon: float = Field(default=0.2, ge=0, lt=1)
    alt_scoring: Literal["accuracy", "neg_rmse", "balanced_accuracy", "jaccard"] | None = None
    alt_min_items: int = Field(default=30, ge=20, le=100000)


class EstimateRequest(_Request):
    """What `POST /estimates` computes: judge-corrected means (PPI++) over inline grades
    (interchange rows) or, without them, the grades in the database narrowed like a report."""

    grades: list[dict[str, Any]] | None = None
    judges: list[str] | None = None
    rubric: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    since: datetime | None = None
    until: datetime | None = None
    alpha: float = Field(default=0.05, gt=0, lt=1)
    reference: str = "mean"
    by: list[str] = Field(default_factory=list)
    cluster: str | None = None
    compare: list[str] | None = Field(default=None, min_length=2, max_length=2)
    target_halfwidth: float | None = Field(default=None, gt=0)
    scale_min: float | None = None
    scale_max: float | None = None


class Estimate(_Response):
    """Per judge, overall and per stratum: the corrected estimate and its interval, beside
    the judge-only and human-only means (kept as the server sent them)."""

    model_config = ConfigDict(extra="allow")

    alpha: float
    judges: dict[str, Any]


class CalibrationReport(_Response):
    """A stored calibration report; the metric blocks are kept as the server sent them."""

    model_config = ConfigDict(extra="allow")

    id: str
    kind: str
    created_at: datetime
    n_items: int | None = None
    scale: dict[str, Any] = Field(default_factory=dict)
    humans: dict[str, Any] = Field(default_factory=dict)
    judges: dict[str, Any] = Field(default_factory=dict)
    trust: dict[str, Any] | None = None
