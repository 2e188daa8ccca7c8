"""The shapes that cross the judges boundary: a grade request and what comes back."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from judges.guard import SkippedJudge
from judges.logprobs import TokenProbabilities
from judges.standins import is_stand_in
from rubrics import Rubric

CallStatus = Literal["ok", "parse_error", "backend_error", "timeout"]


def ordered_id() -> str:
    """32 hex digits, the time in milliseconds first (12) and 80 random bits after (20), as
    UUIDv7 orders them. A stored judgment's or grade request's id is its primary key: random
    ids put each insert on a random page of an index that outgrows memory (at 10M judgments
    PostgreSQL read about one page of the 743 MB `judgments_pkey` per POST /judge, most of
    the request's time in the database), time-ordered ones on its last page (issue 39)."""
    return f"{time.time_ns() // 1_000_000:012x}{secrets.randbits(80):020x}"


class GradeRequest(BaseModel):
    """One answer to grade. `prompt` is what the candidate was asked, `response` its answer."""

    model_config = ConfigDict(extra="forbid")

    rubric: Rubric
    prompt: str = ""
    response: str
    reference: str | None = None
    candidate_model: str = Field(min_length=1)
    candidate_provider: str | None = None
    judges: list[str] | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    template: str | dict[str, Any] | None = Field(
        default=None, description="grade with this template (a reference or an inline object)"
    )

    @classmethod
    def from_body(cls, rubric: Rubric, body: Any) -> GradeRequest:
        """From anything carrying the request fields as attributes (an HTTP body, CLI options)."""
        return cls(
            rubric=rubric,
            prompt=body.prompt,
            response=body.response,
            reference=body.reference,
            candidate_model=body.candidate_model,
            candidate_provider=body.candidate_provider,
            judges=body.judges,
            metadata=body.metadata,
            template=getattr(body, "template", None),
        )

    @classmethod
    def from_answer(
        cls, rubric: Rubric, answer: AnswerRecord, judges: list[str] | None = None
    ) -> GradeRequest:
        """From a stored or file answer; its `item_id` travels in the metadata."""
        return cls(
            rubric=rubric,
            prompt=answer.prompt,
            response=answer.response,
            reference=answer.reference,
            candidate_model=answer.candidate_model,
            candidate_provider=answer.candidate_provider,
            judges=judges,
            metadata={**answer.metadata, "item_id": answer.item_id},
        )


class AnswerRecord(BaseModel):
    """A candidate's answer as files and the database hold it, before a rubric is chosen
    (`rubric_id`: the rubric its file line names, if any; `qadi regrade` honours it)."""

    item_id: str = Field(min_length=1, max_length=256)
    prompt: str = ""
    response: str
    candidate_model: str = Field(min_length=1)
    reference: str | None = None
    candidate_provider: str | None = None
    rubric_id: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)


class CriterionVerdict(BaseModel):
    id: str
    met: bool
    evidence: str = ""


class SampleVerdict(BaseModel):
    """One sample of a sampling judge (judges/sampling.py): what that call said."""

    status: CallStatus
    score: float | None = None
    dimensions: dict[str, float] = Field(default_factory=dict)
    criteria: dict[str, bool] = Field(default_factory=dict, description="criterion id -> met")
    error: str | None = None


class JudgeResult(BaseModel):
    """One judge call, successful or not. A failed call has no score, ever."""

    id: str = Field(default_factory=ordered_id)
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
    probabilities: TokenProbabilities | None = Field(
        default=None,
        description="the verdict's token probabilities, when the judge returned logprobs",
    )
    expected_score: float | None = Field(
        default=None,
        description="probability-weighted expected score (distributional), beside `score`",
    )
    confidence: float | None = Field(
        default=None,
        description="the judge's confidence in its verdict (`confidence_source` says which): "
        "its token probability (`probabilities.confidence`) or the share of its samples that "
        "give it; null where there is none, never invented",
    )
    confidence_source: Literal["token", "sampling", "verbalised"] | None = Field(
        default=None,
        description="where `confidence` comes from: token (the verdict's token probabilities), "
        "sampling (the share of `samples` giving this verdict) or verbalised (the judge's own "
        "statement in its reply, opt-in); null with no confidence",
    )
    samples: list[SampleVerdict] | None = Field(
        default=None,
        description="a sampling judge's samples in call order: each one's outcome; the "
        "verdict is the most common, its confidence their share",
    )
    raw_reply: str | None = None
    error: str | None = None
    latency_ms: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    cached: bool = False
    attempts: int = Field(default=1, ge=0, description="calls made (retries included); 0 cached")
    cache_key: str
    template: str
    template_hash: str
    rubric_ref: str
    rubric_hash: str

    @computed_field(  # type: ignore[prop-decorator]
        description="a stand-in judge (judges/standins.py): deterministic, no model behind "
        "it; known by its model's route (qadi-stand-in/...), whatever the judge's name"
    )
    @property
    def stand_in(self) -> bool:
        return is_stand_in(self.model)


class Aggregate(BaseModel):
    n: int
    mean: float
    median: float
    min: float
    max: float
    spread: float = Field(description="max - min over the judges that returned a score")
    stdev: float | None = Field(description="sample SD; null with fewer than two scores")


class UnavailableJudge(BaseModel):
    """A judge whose provider failed (error or timeout) on this request."""

    judge: str
    status: CallStatus
    error: str | None
    substitute: str | None = None


class GradeResult(BaseModel):
    rubric_id: str
    rubric_version: int
    rubric_hash: str
    candidate_model: str
    candidate_maker: str | None
    status: Literal["ok", "partial", "failed"]
    aggregate: Aggregate | None
    results: list[JudgeResult]
    skipped: list[SkippedJudge]
    unavailable: list[UnavailableJudge] = Field(default_factory=list)

    @property
    def provider_outage(self) -> bool:
        """No grade, and at least one judge failed at the provider (not a parse error)."""
        return self.status == "failed" and any(
            r.status in ("backend_error", "timeout") for r in self.results
        )


@dataclass
class Graded:
    """One request through the core: its result (or why it was refused), the judgments to
    persist, and the caller's `tag` (the service's request id, a benchmark row, ...)."""

    request: GradeRequest
    result: GradeResult | None = None
    refused: Exception | None = None
    judgments: list[JudgeResult] = field(default_factory=list)
    tag: Any = None
