"""Request and response bodies of the HTTP API (pydantic v2), with OpenAPI examples."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from judges import JudgeResult, SkippedJudge
from judges.models import Aggregate, UnavailableJudge
from judges.trust import TrustOutcome, TrustPolicy

EXAMPLE_RUBRIC_BODY = {
    "kind": "rubric",
    "prompt": "ما معنى كلمة شكو في اللهجة العراقية؟",
    "response": "شكو تعني شنو اكو، يعني شنو الأخبار. ماكو تعني ما في.",
    "candidate_model": "gpt-4o",
    "rubric_id": "iraqi-linguistic-shaku-maku",
    "metadata": {"item_id": "iraq-0001", "dialect": "iraqi", "category": "linguistic"},
}
EXAMPLE_EXPLANATION_BODY = {
    "kind": "explanation",
    "prompt": "عَيْنِي عَيْنِكُ",
    "response": "يقال عن فعل الشيء علنا أمام الناس دون خجل",
    "reference": "كناية عن الجهر بالشيء بين الناس.",
    "candidate_model": "claude-3-5-sonnet",
    "rubric_id": "kinayat-explanation",
    "metadata": {"item_id": "kinayat-017"},
}


class JudgeBody(BaseModel):
    """One answer to grade. `kind`, optional, says which rubric kind it expects: `rubric` for
    a penalty-weighted rubric (score in %), `explanation` for a scale (Kinayat, Fann or Flop
    judges, a user's 1-5 rubric); the rubric's own kind decides when it is left out. One
    model, not a tagged union, so an error's `loc` is the field's own path
    (`["body", "item_id"]`), never prefixed by the tag."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [EXAMPLE_RUBRIC_BODY, EXAMPLE_EXPLANATION_BODY]},
    )

    kind: Literal["rubric", "explanation"] | None = Field(
        default=None,
        description="optional, as the rubric says what it is: 'rubric' (penalty-weighted, %) "
        "or 'explanation' (a scale); given, it must agree with the rubric",
    )
    prompt: str = Field(default="", description="what the candidate model was asked")
    response: str = Field(description="the candidate's answer (untrusted; fenced in prompts)")
    reference: str | None = Field(default=None, description="gold answer or explanation")
    candidate_model: str = Field(min_length=1, max_length=256)
    candidate_provider: str | None = Field(default=None, max_length=128)
    rubric: dict[str, Any] | None = Field(default=None, description="inline rubric object")
    rubric_id: str | None = Field(default=None, max_length=160, description="'id' or 'id@version'")
    template: Annotated[str, Field(max_length=160)] | dict[str, Any] | None = Field(
        default=None,
        description="grade with this prompt template instead of the rubric's: 'name@version' "
        "or an inline template object (docs: how-to/rubrics-and-templates, 'Write your own "
        "template')",
    )
    judges: list[Annotated[str, Field(max_length=128)]] | None = Field(default=None, max_length=32)
    metadata: dict[Annotated[str, Field(max_length=64)], Annotated[str, Field(max_length=512)]] = (
        Field(default_factory=dict, max_length=64, description="strata: dialect, item_id, ...")
    )
    trust: TrustPolicy | None = Field(
        default=None,
        description="ask whether the verdict may stand without an SME, under the calibrated "
        "guarantee for this α and δ (docs: how-to/trust-at-request-time); a verdict nobody "
        "trusts is escalated to the SME queue",
    )

    @model_validator(mode="after")
    def _one_rubric(self):
        if (self.rubric is None) == (self.rubric_id is None):
            raise ValueError("give exactly one of 'rubric' (inline) or 'rubric_id'")
        if self.trust is not None and self.trust.cascade and self.judges is not None:
            raise ValueError("give a cascade's judges in trust.cascade only, not in 'judges'")
        return self


class RubricInfo(BaseModel):
    id: str
    version: int
    hash: str


class JudgeResponse(BaseModel):
    request_id: str
    status: Literal["ok", "partial", "failed"]
    rubric: RubricInfo
    candidate_model: str
    candidate_maker: str | None
    aggregate: Aggregate | None
    results: list[JudgeResult]
    skipped: list[SkippedJudge]
    unavailable: list[UnavailableJudge] = Field(
        default_factory=list, description="judges whose provider failed, with their stand-in"
    )
    trust: TrustOutcome | None = Field(
        default=None, description="present when the request asked for `trust`"
    )


class BatchBody(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"items": [EXAMPLE_RUBRIC_BODY, EXAMPLE_EXPLANATION_BODY]}]
        },
    )

    items: list[dict[str, Any]] = Field(min_length=1)


class BatchItemResult(BaseModel):
    index: int
    status_code: int
    body: dict[str, Any]


class BatchResponse(BaseModel):
    results: list[BatchItemResult]


class JudgeInfo(BaseModel):
    name: str
    model: str
    maker: str | None
    stand_in: bool = Field(
        default=False, description="a stand-in judge (qadi-stand-in/...): no model behind it"
    )
    substitute: str | None
    confidence_source: str = Field(
        default="token", description="where its confidence comes from: token or sampling"
    )
    calls_per_verdict: int = Field(
        default=1,
        description="calls each verdict costs (a sampling judge's samples; with score_values, "
        "one more per allowed value and dimension of the rubric's scale)",
    )
    reachable: bool | None = Field(description="null when the endpoint cannot be probed")
    detail: str


class ErrorItem(BaseModel):
    """One problem: where it is (`loc`, FastAPI's convention), what it is, and its kind."""

    loc: list[str | int] = Field(
        description="path to the field, e.g. ['body', 'item_id'], ['header', 'Authorization'];"
        " [] for the service's own state"
    )
    msg: str
    type: str = Field(description="value_error, unauthorized, not_found, rate_limited, ...")


class ErrorBody(BaseModel):
    """Every error answer of the API."""

    detail: list[ErrorItem]


class FailedGradeBody(JudgeResponse):
    """No judge produced a usable verdict (502) or could be reached (503): the full grading
    response, every judge's error included, and `detail`."""

    detail: list[ErrorItem]


class GradesBody(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "grades": [
                        {
                            "item_id": "iraq-0001",
                            "rater": "sme-iq-1",
                            "rater_kind": "human",
                            "score": 66.7,
                            "dialect": "iraqi",
                            "category": "linguistic",
                        }
                    ]
                }
            ]
        },
    )

    grades: list[dict[str, Any]] = Field(min_length=1)


class DuplicateRow(BaseModel):
    """A row of an upload that repeats the (item_id, rater) pair of an earlier row: the
    later row's grade is the one stored."""

    row: int = Field(description="its row number (CSV: the header is row 1)")
    item_id: str
    rater: str
    repeats_row: int = Field(description="the earlier row with the same pair")


class Duplicates(BaseModel):
    count: int = Field(description="rows that repeat an earlier row's (item_id, rater)")
    rows: list[DuplicateRow] = Field(description="the first of them (at most 10)")


class UploadResult(BaseModel):
    """What an upload changed: inserted + updated + duplicates.count = rows sent."""

    inserted: int = Field(description="(item_id, rater) pairs new to the database")
    updated: int = Field(description="pairs that replaced a stored grade")
    duplicates: Duplicates | None = Field(
        default=None, description="present when the upload repeats a pair"
    )
    unfilled: int | None = Field(
        default=None,
        description="CSV rows without a rater and a score (a queue file's ungraded items), "
        "skipped; present when there were any",
    )
