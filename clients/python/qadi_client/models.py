"""Request and response bodies of the qadi HTTP API, as the client sees them.

The bodies the service types in its OpenAPI document are generated from it
(`api_models.py`, by datamodel-code-generator; tests/client/test_models_match_openapi.py
fails when that file is stale), so the client cannot drift from the API. They are named here
as the client calls them. Requests refuse unknown fields (a typo fails before sending);
responses ignore fields they do not know, so an older client keeps working against a newer
server. The few bodies the service does not type (a grade row, a report, an estimate) are
written out below.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from qadi_client import api_models
from qadi_client.api_models import (
    Aggregate,
    CriterionVerdict,
    Duplicates,
    EstimateRequest,
    JudgeResponse,
    JudgeResult,
    JudgmentPage,
    ReportRequest,
    RubricInfo,
    SkippedJudge,
    SmeQueueItem,
    SmeQueuePage,
    TrustOutcome,
    TrustPolicy,
    UnavailableJudge,
    UploadResult,
)
from qadi_client.api_models import JudgeBody as JudgeRequest
from qadi_client.api_models import JudgmentOut as Judgment

__all__ = [
    "Aggregate",
    "BatchItemResult",
    "BatchResponse",
    "CalibrationReport",
    "CallStatus",
    "CriterionVerdict",
    "Duplicates",
    "Estimate",
    "EstimateRequest",
    "GradeRow",
    "JudgeRequest",
    "JudgeResponse",
    "JudgeResult",
    "Judgment",
    "JudgmentPage",
    "ReportRequest",
    "RubricInfo",
    "SkippedJudge",
    "SmeQueueItem",
    "SmeQueuePage",
    "TrustOutcome",
    "TrustPolicy",
    "UnavailableJudge",
    "UploadResult",
]

CallStatus = Literal["ok", "parse_error", "backend_error", "timeout"]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Response(BaseModel):
    model_config = ConfigDict(extra="ignore")


class BatchItemResult(api_models.BatchItemResult):
    """One item of `POST /judge/batch`: its own status code and body."""

    @property
    def response(self) -> JudgeResponse | None:
        """The item's grade when it succeeded (200), else None (`body` holds the error)."""
        return JudgeResponse.model_validate(self.body) if self.status_code == 200 else None


class BatchResponse(api_models.BatchResponse):
    results: list[BatchItemResult]


class GradeRow(_Request):
    """One row of the grades interchange format; other attributes become strata."""

    model_config = ConfigDict(extra="allow")

    item_id: str
    rater: str
    rater_kind: Literal["human", "judge"]
    score: float
    criteria: dict[str, bool] | None = None
    inclusion_prob: float | None = Field(default=None, gt=0, le=1)  # from `qadi sme queue`
    confidence: float | None = Field(default=None, ge=0, le=1)  # a judge's, of its verdict
    rationale: str | None = Field(default=None, max_length=20_000)  # the grader's reason
    project: str | None = None  # whose grade (GET /grades); another project's is refused


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
