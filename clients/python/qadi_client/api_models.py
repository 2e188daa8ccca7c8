# Generated from the qadi service's OpenAPI document by datamodel-code-generator: do not
# edit. `.venv/bin/python -m tests.client.openapi_models` rewrites it.

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, StringConstraints
from typing_extensions import TypeAliasType


class Aggregate(BaseModel):
    n: Annotated[int, Field(title="N")]
    mean: Annotated[float, Field(title="Mean")]
    median: Annotated[float, Field(title="Median")]
    min: Annotated[float, Field(title="Min")]
    max: Annotated[float, Field(title="Max")]
    spread: Annotated[
        float,
        Field(
            description="max - min over the judges that returned a score",
            title="Spread",
        ),
    ]
    stdev: Annotated[
        float | None,
        Field(description="sample SD; null with fewer than two scores", title="Stdev"),
    ]


class AgreementRule(BaseModel):
    """
    When a judge's verdict counts as agreeing with the humans (stated in every report
    and guarantee): `exact` for labels and ratings (the verdict is the humans' majority,
    any tied mode), `within` for interval scores (|verdict − humans' mean| ≤ tolerance).
    """

    rule: Annotated[Literal["exact", "within"], Field(title="Rule")]
    tolerance: Annotated[float, Field(ge=0.0, title="Tolerance")] = 0.0


class AnswerRecord(BaseModel):
    """
    A candidate's answer as files and the database hold it, before a rubric is chosen
    (`rubric_id`: the rubric its file line names, if any; `qadi regrade` honours it).
    """

    item_id: Annotated[str, Field(max_length=256, min_length=1, title="Item Id")]
    prompt: Annotated[str, Field(title="Prompt")] = ""
    response: Annotated[str, Field(title="Response")]
    candidate_model: Annotated[str, Field(min_length=1, title="Candidate Model")]
    reference: Annotated[str | None, Field(title="Reference")] = None
    candidate_provider: Annotated[str | None, Field(title="Candidate Provider")] = None
    rubric_id: Annotated[str | None, Field(title="Rubric Id")] = None
    metadata: Annotated[dict[str, str] | None, Field(title="Metadata")] = None


class BatchBody(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    items: Annotated[list[dict[str, Any]], Field(min_length=1, title="Items")]


class BatchItemResult(BaseModel):
    index: Annotated[int, Field(title="Index")]
    status_code: Annotated[int, Field(title="Status Code")]
    body: Annotated[dict[str, Any], Field(title="Body")]


class BatchResponse(BaseModel):
    results: Annotated[list[BatchItemResult], Field(title="Results")]


class CriterionVerdict(BaseModel):
    id: Annotated[str, Field(title="Id")]
    met: Annotated[bool, Field(title="Met")]
    evidence: Annotated[str, Field(title="Evidence")] = ""


class Distribution(BaseModel):
    """
    One value of a verdict and the probabilities the judge gave its alternatives.
    """

    probs: Annotated[
        dict[str, float],
        Field(
            description="allowed value -> probability as the judge gave it (raw, sum = mass)",
            title="Probs",
        ),
    ]
    mass: Annotated[
        float,
        Field(
            description="sum of probs: the judge's probability on allowed values",
            title="Mass",
        ),
    ]
    chosen: Annotated[
        str, Field(description="the value the reply holds", title="Chosen")
    ]
    confidence: Annotated[
        float, Field(description="probs[chosen] / mass", title="Confidence")
    ]


class DuplicateRow(BaseModel):
    """
    A row of an upload that repeats the (item_id, rater) pair of an earlier row: the
    later row's grade is the one stored.
    """

    row: Annotated[
        int, Field(description="its row number (CSV: the header is row 1)", title="Row")
    ]
    item_id: Annotated[str, Field(title="Item Id")]
    rater: Annotated[str, Field(title="Rater")]
    repeats_row: Annotated[
        int,
        Field(description="the earlier row with the same pair", title="Repeats Row"),
    ]


class Duplicates(BaseModel):
    count: Annotated[
        int,
        Field(
            description="rows that repeat an earlier row's (item_id, rater)",
            title="Count",
        ),
    ]
    rows: Annotated[
        list[DuplicateRow],
        Field(description="the first of them (at most 10)", title="Rows"),
    ]


class ErrorItem(BaseModel):
    """
    One problem: where it is (`loc`, FastAPI's convention), what it is, and its kind.
    """

    loc: Annotated[
        list[str | int],
        Field(
            description="path to the field, e.g. ['body', 'item_id'], ['header', 'Authorization']; [] for the service's own state",
            title="Loc",
        ),
    ]
    msg: Annotated[str, Field(title="Msg")]
    type: Annotated[
        str,
        Field(
            description="value_error, unauthorized, not_found, rate_limited, ...",
            title="Type",
        ),
    ]


class Compare(RootModel[list[str]]):
    root: Annotated[
        list[str],
        Field(
            description="two values of the first `by`",
            max_length=2,
            min_length=2,
            title="Compare",
        ),
    ]


class TargetHalfwidth(RootModel[float]):
    root: Annotated[float, Field(gt=0.0, title="Target Halfwidth")]


class EstimateRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    alpha: Annotated[float, Field(gt=0.0, lt=1.0, title="Alpha")] = 0.05
    reference: Annotated[str, Field(title="Reference")] = "mean"
    by: Annotated[list[str] | None, Field(title="By")] = None
    cluster: Annotated[str | None, Field(title="Cluster")] = None
    compare: Annotated[
        Compare | None,
        Field(description="two values of the first `by`", title="Compare"),
    ] = None
    target_halfwidth: Annotated[
        TargetHalfwidth | None, Field(title="Target Halfwidth")
    ] = None
    budget_quantile: Annotated[
        float,
        Field(
            description="the budget's labels reach the target half-width with this probability",
            ge=0.5,
            lt=1.0,
            title="Budget Quantile",
        ),
    ] = 0.8
    scale_min: Annotated[float | None, Field(title="Scale Min")] = None
    scale_max: Annotated[float | None, Field(title="Scale Max")] = None
    grades: Annotated[
        list[dict[str, Any]] | None,
        Field(
            description="interchange rows; omitted: the grades in the database",
            title="Grades",
        ),
    ] = None
    judges: Annotated[list[str] | None, Field(title="Judges")] = None
    rubric: Annotated[
        str | None, Field(description="'id' or 'id@version'", title="Rubric")
    ] = None
    metadata: Annotated[dict[str, str] | None, Field(title="Metadata")] = None
    since: Annotated[datetime | None, Field(title="Since")] = None
    until: Annotated[datetime | None, Field(title="Until")] = None


class GradeOut(BaseModel):
    """
    A stored grade as an interchange row; every key besides these is an attribute of the
    item. `project` says whose grade it is: an admin key lists every project's.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    project: Annotated[str, Field(title="Project")]
    item_id: Annotated[str, Field(title="Item Id")]
    rater: Annotated[str, Field(title="Rater")]
    rater_kind: Annotated[Literal["human", "judge"], Field(title="Rater Kind")]
    score: Annotated[float, Field(title="Score")]
    criteria: Annotated[dict[str, bool] | None, Field(title="Criteria")] = None
    inclusion_prob: Annotated[float | None, Field(title="Inclusion Prob")] = None
    confidence: Annotated[float | None, Field(title="Confidence")] = None
    rationale: Annotated[
        str | None, Field(description="the grader's reason", title="Rationale")
    ] = None


class GradePage(BaseModel):
    items: Annotated[list[GradeOut], Field(title="Items")]
    next_cursor: Annotated[str | None, Field(title="Next Cursor")]


class GradeRequestOut(BaseModel):
    id: Annotated[str, Field(title="Id")]
    project: Annotated[str, Field(title="Project")]
    status: Annotated[str, Field(title="Status")]
    outcome: Annotated[str | None, Field(title="Outcome")]
    attempt: Annotated[int, Field(title="Attempt")]
    created_at: Annotated[datetime, Field(title="Created At")]
    claimed_at: Annotated[datetime | None, Field(title="Claimed At")]
    finished_at: Annotated[datetime | None, Field(title="Finished At")]


class GradeRequestPage(BaseModel):
    items: Annotated[list[GradeRequestOut], Field(title="Items")]
    next_cursor: Annotated[str | None, Field(title="Next Cursor")]


class CandidateProvider(RootModel[str]):
    root: Annotated[str, Field(max_length=128, title="Candidate Provider")]


class RubricId(RootModel[str]):
    root: Annotated[
        str,
        Field(description="'id' or 'id@version'", max_length=160, title="Rubric Id"),
    ]


class Template(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="grade with this prompt template instead of the rubric's: 'name@version' or an inline template object (docs: how-to/rubrics-and-templates, 'Write your own template')",
            max_length=160,
            title="Template",
        ),
    ]


class Judge(RootModel[str]):
    root: Annotated[str, Field(max_length=128)]


class Judges(RootModel[list[Judge]]):
    root: Annotated[list[Judge], Field(max_length=32, title="Judges")]


MetadataAdditionalProperty = TypeAliasType(
    "MetadataAdditionalProperty", Annotated[str, Field(max_length=512)]
)


class JudgeInfo(BaseModel):
    name: Annotated[str, Field(title="Name")]
    model: Annotated[str, Field(title="Model")]
    maker: Annotated[str | None, Field(title="Maker")]
    stand_in: Annotated[
        bool,
        Field(
            description="a stand-in judge (qadi-stand-in/...): no model behind it",
            title="Stand In",
        ),
    ] = False
    substitute: Annotated[str | None, Field(title="Substitute")]
    confidence_source: Annotated[
        str,
        Field(
            description="where its confidence comes from: token or sampling",
            title="Confidence Source",
        ),
    ] = "token"
    calls_per_verdict: Annotated[
        int,
        Field(
            description="calls each verdict costs (a sampling judge's samples; with score_values, one more per allowed value and dimension of the rubric's scale)",
            title="Calls Per Verdict",
        ),
    ] = 1
    reachable: Annotated[
        bool | None,
        Field(description="null when the endpoint cannot be probed", title="Reachable"),
    ]
    detail: Annotated[str, Field(title="Detail")]


class JudgeTrust(BaseModel):
    judge: Annotated[str, Field(title="Judge")]
    confidence: Annotated[
        float | None,
        Field(description="null where the judge gave none", title="Confidence"),
    ]
    status: Annotated[
        Literal["trusted", "abstained", "uncalibrated", "no_confidence", "no_verdict"],
        Field(title="Status"),
    ]
    threshold: Annotated[
        float | None,
        Field(description="trusted when confidence ≥ it", title="Threshold"),
    ] = None
    reason: Annotated[str | None, Field(title="Reason")] = None


class LinkRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    ttl_seconds: Annotated[
        int,
        Field(description="how long it opens", ge=60, le=604800, title="Ttl Seconds"),
    ] = 3600
    format: Annotated[Literal["html", "md"], Field(title="Format")] = "html"


class ProbeRunPage(BaseModel):
    items: Annotated[list[dict[str, Any]], Field(title="Items")]
    next_cursor: Annotated[str | None, Field(title="Next Cursor")]


class MaxCalls(RootModel[int]):
    root: Annotated[
        int,
        Field(
            description="refuse (422) a run that needs more new judge calls; null: no limit below the service's own on the judge calls a run plans (QADI_PROBE_MAX_CALLS)",
            ge=0,
            title="Max Calls",
        ),
    ] = 1000


class Items(RootModel[list[AnswerRecord]]):
    root: Annotated[
        list[AnswerRecord],
        Field(
            description="answers to probe; omitted: answers stored in the database",
            max_length=5000,
            title="Items",
        ),
    ]


class Limit(RootModel[int]):
    root: Annotated[
        int, Field(description="only the first N answers", ge=1, title="Limit")
    ]


class ProbeRunRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    q: Annotated[
        float,
        Field(
            description="false discovery rate of decisions", gt=0.0, lt=1.0, title="Q"
        ),
    ] = 0.05
    alpha: Annotated[
        float,
        Field(description="intervals at 1 − alpha", gt=0.0, lt=1.0, title="Alpha"),
    ] = 0.05
    procedure: Annotated[Literal["bh", "by", "holm"], Field(title="Procedure")] = "bh"
    permutations: Annotated[int, Field(ge=999, le=1000000, title="Permutations")] = (
        20000
    )
    cluster: Annotated[
        str | None,
        Field(description="item attribute: flip its clusters", title="Cluster"),
    ] = None
    seed: Annotated[int, Field(title="Seed")] = 0
    judges: Annotated[
        list[str] | None,
        Field(description="default: every configured judge", title="Judges"),
    ] = None
    probes: Annotated[
        list[str] | None,
        Field(description="default: every registered probe", title="Probes"),
    ] = None
    rewrite_column: Annotated[
        str,
        Field(
            description="item attribute holding the paired MSA/dialect rewrite (probe `dialect`)",
            min_length=1,
            title="Rewrite Column",
        ),
    ] = "dialect_rewrite"
    max_calls: Annotated[
        MaxCalls | None,
        Field(
            description="refuse (422) a run that needs more new judge calls; null: no limit below the service's own on the judge calls a run plans (QADI_PROBE_MAX_CALLS)",
            title="Max Calls",
            validate_default=True,
        ),
    ] = 1000
    rubric: Annotated[
        str,
        Field(
            description="'id' or 'id@version' the judges grade with",
            min_length=1,
            title="Rubric",
        ),
    ]
    items: Annotated[
        Items | None,
        Field(
            description="answers to probe; omitted: answers stored in the database",
            title="Items",
        ),
    ] = None
    judged_with: Annotated[
        str | None,
        Field(
            description="database answers: only those judged under this rubric",
            title="Judged With",
        ),
    ] = None
    candidate_model: Annotated[str | None, Field(title="Candidate Model")] = None
    metadata: Annotated[
        dict[str, str] | None, Field(description="database answers", title="Metadata")
    ] = None
    since: Annotated[
        datetime | None,
        Field(description="database answers stored since", title="Since"),
    ] = None
    limit: Annotated[
        Limit | None, Field(description="only the first N answers", title="Limit")
    ] = None
    dry_run: Annotated[
        bool,
        Field(
            description="answer 200 with the planned judge calls, pairs, skipped items and a cost estimate; no call is made and nothing is stored",
            title="Dry Run",
        ),
    ] = False


class Queued(BaseModel):
    reason: Annotated[Literal["escalated", "audit"], Field(title="Reason")]
    inclusion_prob: Annotated[
        float,
        Field(
            description="the item's chance of reaching the SMEs", title="Inclusion Prob"
        ),
    ]


class ReportLink(BaseModel):
    url: Annotated[
        str,
        Field(
            description="opens the report without an API key until `expires_at`",
            title="Url",
        ),
    ]
    expires_at: Annotated[datetime, Field(title="Expires At")]


class RubricInfo(BaseModel):
    id: Annotated[str, Field(title="Id")]
    version: Annotated[int, Field(title="Version")]
    hash: Annotated[str, Field(title="Hash")]


class SampleVerdict(BaseModel):
    """
    One sample of a sampling judge (judges/sampling.py): what that call said.
    """

    status: Annotated[
        Literal["ok", "parse_error", "backend_error", "timeout"], Field(title="Status")
    ]
    score: Annotated[float | None, Field(title="Score")] = None
    dimensions: Annotated[dict[str, float] | None, Field(title="Dimensions")] = None
    criteria: Annotated[
        dict[str, bool] | None,
        Field(description="criterion id -> met", title="Criteria"),
    ] = None
    error: Annotated[str | None, Field(title="Error")] = None


class Tolerance(RootModel[float]):
    root: Annotated[
        float,
        Field(
            description="interval scales: a verdict within this distance of the humans' reference agrees (default 10% of the scale's range)",
            ge=0.0,
            title="Tolerance",
        ),
    ]


class MinItems(RootModel[int]):
    root: Annotated[int, Field(ge=1, title="Min Items")]


class SelectiveOptions(BaseModel):
    """
    What the section computes (`qadi calibrate --trust-*`).
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    alpha: Annotated[
        float, Field(description="target disagreement", gt=0.0, lt=1.0, title="Alpha")
    ] = 0.1
    delta: Annotated[
        float,
        Field(description="chance the guarantee fails", gt=0.0, lt=1.0, title="Delta"),
    ] = 0.1
    tolerance: Annotated[
        Tolerance | None,
        Field(
            description="interval scales: a verdict within this distance of the humans' reference agrees (default 10% of the scale's range)",
            title="Tolerance",
        ),
    ] = None
    cascades: Annotated[
        list[list[str]] | None,
        Field(
            description="judges in escalation order, each a cascade", title="Cascades"
        ),
    ] = None
    confidence: Annotated[Literal["token", "panel"], Field(title="Confidence")] = (
        "token"
    )
    min_items: Annotated[MinItems | None, Field(title="Min Items")] = None
    juries: Annotated[
        list[list[str]] | None,
        Field(
            description="judges whose verdicts are pooled into one evaluator, each a jury (calibration/jury.py; labels and ratings, token confidence)",
            title="Juries",
        ),
    ] = None


class SkippedJudge(BaseModel):
    judge: Annotated[str, Field(title="Judge")]
    reason: Annotated[str, Field(title="Reason")]
    detail: Annotated[str, Field(title="Detail")]
    substitute: Annotated[str | None, Field(title="Substitute")] = None


class SmeQueueItem(BaseModel):
    id: Annotated[int, Field(title="Id")]
    project: Annotated[str, Field(title="Project")]
    item_id: Annotated[str, Field(title="Item Id")]
    request_id: Annotated[
        str | None,
        Field(description="the request that queued it first", title="Request Id"),
    ]
    rubric_ref: Annotated[str, Field(title="Rubric Ref")]
    reason: Annotated[Literal["escalated", "audit", "sample"], Field(title="Reason")]
    inclusion_prob: Annotated[
        float,
        Field(
            description="the item's chance of reaching the SMEs: 1 when escalated, the audit rate when audited, its round's probability for a calibration sample (`qadi sme sample`); upload the SME's grade with it (POST /grades `inclusion_prob`)",
            title="Inclusion Prob",
        ),
    ]
    inclusion_stratum: Annotated[
        str | None,
        Field(
            description="a calibration sample's stratum (upload it as `inclusion_stratum`)",
            title="Inclusion Stratum",
        ),
    ]
    labels_wanted: Annotated[
        int,
        Field(
            description="2 when two SMEs grade it (their agreement)",
            title="Labels Wanted",
        ),
    ]
    route_tag: Annotated[
        str,
        Field(
            description="the expertise it needs ('dialect=egy'), or ''",
            title="Route Tag",
        ),
    ]
    status: Annotated[Literal["open", "done"], Field(title="Status")]
    prompt: Annotated[str, Field(title="Prompt")]
    reference: Annotated[str | None, Field(title="Reference")]
    response: Annotated[str, Field(title="Response")]
    candidate_model: Annotated[str, Field(title="Candidate Model")]
    attributes: Annotated[dict[str, Any], Field(title="Attributes")]
    trust: Annotated[
        dict[str, Any] | None,
        Field(
            description="the trust outcome of the request that queued it (judges/trust.py)",
            title="Trust",
        ),
    ]
    queued_at: Annotated[datetime, Field(title="Queued At")]


class SmeQueuePage(BaseModel):
    items: Annotated[
        list[SmeQueueItem],
        Field(
            description="at most `limit` items, fewer when their texts pass the page's byte limit (QADI_PAGE_BYTES_MAX): follow next_cursor for the rest",
            title="Items",
        ),
    ]
    next_cursor: Annotated[str | None, Field(title="Next Cursor")]


class StageVersion(BaseModel):
    """
    What one judge of a calibration graded with: a guarantee holds for these only.
    """

    judge: Annotated[str, Field(title="Judge")]
    model: Annotated[str, Field(title="Model")]
    template: Annotated[str, Field(title="Template")]
    template_hash: Annotated[str, Field(title="Template Hash")]
    confidence_source: Annotated[
        str | None,
        Field(
            description="token or sampling: what its confidences were (null: none)",
            title="Confidence Source",
        ),
    ] = None


class TokenProbabilities(BaseModel):
    """
    What the token probabilities of one reply say about its verdict.
    """

    method: Annotated[
        str,
        Field(
            description="how the distribution was read, and its assumptions",
            title="Method",
        ),
    ]
    top_logprobs: Annotated[
        int,
        Field(
            description="alternatives the judge listed per token (the most at the first token and at the tokens read)",
            title="Top Logprobs",
        ),
    ]
    rating: Annotated[
        Distribution | None,
        Field(description="the rating's (a one-dimension scale's score reads as one)"),
    ] = None
    criteria: Annotated[dict[str, Distribution] | None, Field(title="Criteria")] = None
    dimensions: Annotated[
        dict[str, Distribution] | None,
        Field(
            description="each dimension's score (scores_json replies)",
            title="Dimensions",
        ),
    ] = None
    expected: Annotated[
        float | None,
        Field(
            description="probability-weighted expected score (distributional)",
            title="Expected",
        ),
    ] = None
    confidence: Annotated[
        float | None,
        Field(
            description="the judge's probability of its whole verdict (a rating's confidence; for criteria, the product of each mark's, taken as independent)",
            title="Confidence",
        ),
    ] = None
    unavailable: Annotated[
        str | None,
        Field(
            description="why part of the verdict has no distribution",
            title="Unavailable",
        ),
    ] = None


class Cascade(RootModel[list[str]]):
    root: Annotated[
        list[str],
        Field(
            description="judges in escalation order (cheap first); the first trusted verdict stands and later judges are not called. A stage may be a jury calibrated with `qadi calibrate --jury` ('jury:a+b+c': its judges' verdicts pooled by the fitted weights), alone or after cheaper stages. Without it, each judge of the panel is checked on its own",
            max_length=8,
            min_length=1,
            title="Cascade",
        ),
    ]


class By(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="metadata attribute whose stratum's calibration applies (e.g. dialect); default: the overall calibration",
            max_length=64,
            title="By",
        ),
    ]


class TrustPolicy(BaseModel):
    """
    What a request asks of its verdict (the `trust` field of POST /judge).
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    alpha: Annotated[
        float,
        Field(
            description="most disagreement with the SMEs allowed among trusted verdicts",
            gt=0.0,
            lt=1.0,
            title="Alpha",
        ),
    ]
    delta: Annotated[
        float,
        Field(
            description="chance the guarantee fails over the draw of calibration items",
            gt=0.0,
            lt=1.0,
            title="Delta",
        ),
    ]
    cascade: Annotated[
        Cascade | None,
        Field(
            description="judges in escalation order (cheap first); the first trusted verdict stands and later judges are not called. A stage may be a jury calibrated with `qadi calibrate --jury` ('jury:a+b+c': its judges' verdicts pooled by the fitted weights), alone or after cheaper stages. Without it, each judge of the panel is checked on its own",
            title="Cascade",
        ),
    ] = None
    by: Annotated[
        By | None,
        Field(
            description="metadata attribute whose stratum's calibration applies (e.g. dialect); default: the overall calibration",
            title="By",
        ),
    ] = None
    confidence: Annotated[
        Literal["token", "panel"],
        Field(
            description="'token': the judge's own confidence in its verdict (its token probability, or its sampled or verbalised one: `confidence_source`, as calibrated); 'panel': the share of the other judges of the panel that agree with it (no cascade)",
            title="Confidence",
        ),
    ] = "token"
    audit_rate: Annotated[
        float,
        Field(
            description="share of trusted verdicts also sent to the SMEs at random, so that estimates over SME labels stay unbiased; 0 sends only escalations",
            ge=0.0,
            le=1.0,
            title="Audit Rate",
        ),
    ] = 0.05


class UnavailableJudge(BaseModel):
    """
    A judge whose provider failed (error or timeout) on this request.
    """

    judge: Annotated[str, Field(title="Judge")]
    status: Annotated[
        Literal["ok", "parse_error", "backend_error", "timeout"], Field(title="Status")
    ]
    error: Annotated[str | None, Field(title="Error")]
    substitute: Annotated[str | None, Field(title="Substitute")] = None


class UploadResult(BaseModel):
    """
    What an upload changed: inserted + updated + duplicates.count = rows sent.
    """

    inserted: Annotated[
        int,
        Field(
            description="(item_id, rater) pairs new to the database", title="Inserted"
        ),
    ]
    updated: Annotated[
        int, Field(description="pairs that replaced a stored grade", title="Updated")
    ]
    duplicates: Annotated[
        Duplicates | None, Field(description="present when the upload repeats a pair")
    ] = None
    unfilled: Annotated[
        int | None,
        Field(
            description="CSV rows without a rater and a score (a queue file's ungraded items), skipped; present when there were any",
            title="Unfilled",
        ),
    ] = None


class ErrorBody(BaseModel):
    """
    Every error answer of the API.
    """

    detail: Annotated[list[ErrorItem], Field(title="Detail")]


class Guarantee(BaseModel):
    """
    What a trusted verdict rests on, with everything needed to find its calibration.
    """

    statement: Annotated[str, Field(title="Statement")]
    alpha: Annotated[float, Field(title="Alpha")]
    delta: Annotated[float, Field(title="Delta")]
    method: Annotated[str, Field(title="Method")]
    evaluator: Annotated[str, Field(title="Evaluator")]
    stratum: Annotated[str, Field(title="Stratum")]
    threshold: Annotated[float, Field(title="Threshold")]
    n_calibration: Annotated[int, Field(title="N Calibration")]
    coverage: Annotated[float | None, Field(title="Coverage")]
    report_id: Annotated[str, Field(title="Report Id")]
    calibrated_at: Annotated[datetime, Field(title="Calibrated At")]
    agreement: AgreementRule
    rubric_ref: Annotated[str, Field(title="Rubric Ref")]
    rubric_hash: Annotated[str, Field(title="Rubric Hash")]
    judges: Annotated[list[StageVersion], Field(title="Judges")]


class JudgeBody(BaseModel):
    """
    One answer to grade. `kind`, optional, says which rubric kind it expects: `rubric` for
    a penalty-weighted rubric (score in %), `explanation` for a scale (Kinayat, Fann or Flop
    judges, a user's 1-5 rubric); the rubric's own kind decides when it is left out. One
    model, not a tagged union, so an error's `loc` is the field's own path
    (`["body", "item_id"]`), never prefixed by the tag.
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    kind: Annotated[
        Literal["rubric", "explanation"] | None,
        Field(
            description="optional, as the rubric says what it is: 'rubric' (penalty-weighted, %) or 'explanation' (a scale); given, it must agree with the rubric",
            title="Kind",
        ),
    ] = None
    prompt: Annotated[
        str, Field(description="what the candidate model was asked", title="Prompt")
    ] = ""
    response: Annotated[
        str,
        Field(
            description="the candidate's answer (untrusted; fenced in prompts)",
            title="Response",
        ),
    ]
    reference: Annotated[
        str | None, Field(description="gold answer or explanation", title="Reference")
    ] = None
    candidate_model: Annotated[
        str, Field(max_length=256, min_length=1, title="Candidate Model")
    ]
    candidate_provider: Annotated[
        CandidateProvider | None, Field(title="Candidate Provider")
    ] = None
    rubric: Annotated[
        dict[str, Any] | None, Field(description="inline rubric object", title="Rubric")
    ] = None
    rubric_id: Annotated[
        RubricId | None, Field(description="'id' or 'id@version'", title="Rubric Id")
    ] = None
    template: Annotated[
        Template | dict[str, Any] | None,
        Field(
            description="grade with this prompt template instead of the rubric's: 'name@version' or an inline template object (docs: how-to/rubrics-and-templates, 'Write your own template')",
            title="Template",
        ),
    ] = None
    judges: Annotated[Judges | None, Field(title="Judges")] = None
    metadata: Annotated[
        dict[
            Annotated[str, StringConstraints(max_length=64)], MetadataAdditionalProperty
        ]
        | None,
        Field(
            description="strata: dialect, item_id, ...", max_length=64, title="Metadata"
        ),
    ] = None
    trust: Annotated[
        TrustPolicy | None,
        Field(
            description="ask whether the verdict may stand without an SME, under the calibrated guarantee for this α and δ (docs: how-to/trust-at-request-time); a verdict nobody trusts is escalated to the SME queue"
        ),
    ] = None


class JudgeResult(BaseModel):
    """
    One judge call, successful or not. A failed call has no score, ever.
    """

    id: Annotated[str | None, Field(title="Id")] = None
    judge: Annotated[str, Field(title="Judge")]
    model: Annotated[str, Field(title="Model")]
    maker: Annotated[str | None, Field(title="Maker")] = None
    status: Annotated[
        Literal["ok", "parse_error", "backend_error", "timeout"], Field(title="Status")
    ]
    score: Annotated[float | None, Field(title="Score")] = None
    raw_score: Annotated[float | None, Field(title="Raw Score")] = None
    clipped: Annotated[bool | None, Field(title="Clipped")] = None
    dimensions: Annotated[dict[str, float] | None, Field(title="Dimensions")] = None
    criteria: Annotated[list[CriterionVerdict] | None, Field(title="Criteria")] = None
    rationale: Annotated[str | None, Field(title="Rationale")] = None
    probabilities: Annotated[
        TokenProbabilities | None,
        Field(
            description="the verdict's token probabilities, when the judge returned logprobs"
        ),
    ] = None
    expected_score: Annotated[
        float | None,
        Field(
            description="probability-weighted expected score (distributional), beside `score`",
            title="Expected Score",
        ),
    ] = None
    confidence: Annotated[
        float | None,
        Field(
            description="the judge's confidence in its verdict (`confidence_source` says which): its token probability (`probabilities.confidence`) or the share of its samples that give it; null where there is none, never invented",
            title="Confidence",
        ),
    ] = None
    confidence_source: Annotated[
        Literal["token", "sampling", "verbalised"] | None,
        Field(
            description="where `confidence` comes from: token (the verdict's token probabilities), sampling (the share of `samples` giving this verdict) or verbalised (the judge's own statement in its reply, opt-in); null with no confidence",
            title="Confidence Source",
        ),
    ] = None
    samples: Annotated[
        list[SampleVerdict] | None,
        Field(
            description="a sampling judge's samples in call order: each one's outcome; the verdict is the most common, its confidence their share",
            title="Samples",
        ),
    ] = None
    raw_reply: Annotated[str | None, Field(title="Raw Reply")] = None
    error: Annotated[str | None, Field(title="Error")] = None
    latency_ms: Annotated[float, Field(title="Latency Ms")] = 0.0
    prompt_tokens: Annotated[int | None, Field(title="Prompt Tokens")] = None
    completion_tokens: Annotated[int | None, Field(title="Completion Tokens")] = None
    cost_usd: Annotated[float | None, Field(title="Cost Usd")] = None
    cached: Annotated[bool, Field(title="Cached")] = False
    attempts: Annotated[
        int,
        Field(
            description="calls made (retries included); 0 cached",
            ge=0,
            title="Attempts",
        ),
    ] = 1
    cache_key: Annotated[str, Field(title="Cache Key")]
    template: Annotated[str, Field(title="Template")]
    template_hash: Annotated[str, Field(title="Template Hash")]
    rubric_ref: Annotated[str, Field(title="Rubric Ref")]
    rubric_hash: Annotated[str, Field(title="Rubric Hash")]
    stand_in: Annotated[
        bool,
        Field(
            description="a stand-in judge (judges/standins.py): deterministic, no model behind it; known by its model's route (qadi-stand-in/...), whatever the judge's name",
            title="Stand In",
        ),
    ]


class JudgmentOut(BaseModel):
    id: Annotated[str | None, Field(title="Id")] = None
    judge: Annotated[str, Field(title="Judge")]
    model: Annotated[str, Field(title="Model")]
    maker: Annotated[str | None, Field(title="Maker")] = None
    status: Annotated[
        Literal["ok", "parse_error", "backend_error", "timeout"], Field(title="Status")
    ]
    score: Annotated[float | None, Field(title="Score")] = None
    raw_score: Annotated[float | None, Field(title="Raw Score")] = None
    clipped: Annotated[bool | None, Field(title="Clipped")] = None
    dimensions: Annotated[dict[str, float] | None, Field(title="Dimensions")] = None
    criteria: Annotated[list[CriterionVerdict] | None, Field(title="Criteria")] = None
    rationale: Annotated[str | None, Field(title="Rationale")] = None
    probabilities: Annotated[
        TokenProbabilities | None,
        Field(
            description="the verdict's token probabilities, when the judge returned logprobs"
        ),
    ] = None
    expected_score: Annotated[
        float | None,
        Field(
            description="probability-weighted expected score (distributional), beside `score`",
            title="Expected Score",
        ),
    ] = None
    confidence: Annotated[
        float | None,
        Field(
            description="the judge's confidence in its verdict (`confidence_source` says which): its token probability (`probabilities.confidence`) or the share of its samples that give it; null where there is none, never invented",
            title="Confidence",
        ),
    ] = None
    confidence_source: Annotated[
        Literal["token", "sampling", "verbalised"] | None,
        Field(
            description="where `confidence` comes from: token (the verdict's token probabilities), sampling (the share of `samples` giving this verdict) or verbalised (the judge's own statement in its reply, opt-in); null with no confidence",
            title="Confidence Source",
        ),
    ] = None
    samples: Annotated[
        list[SampleVerdict] | None,
        Field(
            description="a sampling judge's samples in call order: each one's outcome; the verdict is the most common, its confidence their share",
            title="Samples",
        ),
    ] = None
    raw_reply: Annotated[str | None, Field(title="Raw Reply")] = None
    error: Annotated[str | None, Field(title="Error")] = None
    latency_ms: Annotated[float, Field(title="Latency Ms")] = 0.0
    prompt_tokens: Annotated[int | None, Field(title="Prompt Tokens")] = None
    completion_tokens: Annotated[int | None, Field(title="Completion Tokens")] = None
    cost_usd: Annotated[float | None, Field(title="Cost Usd")] = None
    cached: Annotated[bool, Field(title="Cached")] = False
    attempts: Annotated[
        int,
        Field(
            description="calls made (retries included); 0 cached",
            ge=0,
            title="Attempts",
        ),
    ] = 1
    cache_key: Annotated[str, Field(title="Cache Key")]
    template: Annotated[str, Field(title="Template")]
    template_hash: Annotated[str, Field(title="Template Hash")]
    rubric_ref: Annotated[str, Field(title="Rubric Ref")]
    rubric_hash: Annotated[str, Field(title="Rubric Hash")]
    project: Annotated[str, Field(title="Project")]
    request_id: Annotated[str | None, Field(title="Request Id")]
    item_id: Annotated[str, Field(title="Item Id")]
    candidate_model: Annotated[str, Field(title="Candidate Model")]
    metadata: Annotated[dict[str, Any], Field(title="Metadata")]
    created_at: Annotated[datetime, Field(title="Created At")]
    stand_in: Annotated[
        bool,
        Field(
            description="a stand-in judge (judges/standins.py): deterministic, no model behind it; known by its model's route (qadi-stand-in/...), whatever the judge's name",
            title="Stand In",
        ),
    ]


class JudgmentPage(BaseModel):
    items: Annotated[list[JudgmentOut], Field(title="Items")]
    next_cursor: Annotated[str | None, Field(title="Next Cursor")]


class ReportRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
    )
    judges: Annotated[list[str] | None, Field(title="Judges")] = None
    rubric: Annotated[
        str | None,
        Field(description="'id' or 'id@version'; sets the scale", title="Rubric"),
    ] = None
    metadata: Annotated[dict[str, str] | None, Field(title="Metadata")] = None
    since: Annotated[datetime | None, Field(title="Since")] = None
    until: Annotated[datetime | None, Field(title="Until")] = None
    scale_min: Annotated[float | None, Field(title="Scale Min")] = None
    scale_max: Annotated[float | None, Field(title="Scale Max")] = None
    level: Annotated[
        Literal["nominal", "ordinal", "interval"] | None,
        Field(
            description="nominal: scores compared as labels; no scale needed",
            title="Level",
        ),
    ] = None
    reference: Annotated[str, Field(title="Reference")] = "mean"
    by: Annotated[
        list[str] | None,
        Field(
            description="strata attributes: at most QADI_REPORT_STRATA_MAX (200) strata, their values summed; more is a 422 before any work",
            title="By",
        ),
    ] = None
    bootstrap: Annotated[int, Field(ge=0, le=20000, title="Bootstrap")] = 2000
    seed: Annotated[int, Field(title="Seed")] = 0
    cluster: Annotated[str | None, Field(title="Cluster")] = None
    confidence: Annotated[
        float,
        Field(
            description="confidence level of every interval",
            gt=0.0,
            lt=1.0,
            title="Confidence",
        ),
    ] = 0.95
    alt_test: Annotated[
        bool,
        Field(description="require the alt-test (422 if untestable)", title="Alt Test"),
    ] = False
    epsilon: Annotated[
        float,
        Field(
            description="alt-test cost-benefit allowance",
            ge=0.0,
            lt=1.0,
            title="Epsilon",
        ),
    ] = 0.2
    alt_scoring: Annotated[
        Literal["accuracy", "neg_rmse", "balanced_accuracy", "jaccard"] | None,
        Field(
            description="accuracy | neg_rmse (published) | balanced_accuracy (chance-corrected) | jaccard (tag sets); default accuracy for labels, neg_rmse for numbers",
            title="Alt Scoring",
        ),
    ] = None
    alt_min_items: Annotated[
        int,
        Field(
            description="independent units (items, or clusters) an annotator needs; the floor 20 keeps the alt-test at its level",
            ge=20,
            le=100000,
            title="Alt Min Items",
        ),
    ] = 30
    probe_run: Annotated[
        str | None,
        Field(
            description="stored probe run (id or 'latest'): its moved judges are marked on the trust map (`probes` on a row) and its table and plot added to the report",
            title="Probe Run",
        ),
    ] = None
    trust: Annotated[
        SelectiveOptions | None,
        Field(
            description="selective judging: the α, δ, agreement tolerance, cascades and confidence source whose thresholds the report fixes (POST /judge applies them)"
        ),
    ] = None


class TrustOutcome(BaseModel):
    status: Annotated[Literal["trusted", "escalated"], Field(title="Status")]
    judge: Annotated[
        str | None, Field(description="the judge whose verdict stands", title="Judge")
    ]
    score: Annotated[float | None, Field(title="Score")]
    stratum: Annotated[str | None, Field(title="Stratum")]
    policy: TrustPolicy
    judges: Annotated[list[JudgeTrust], Field(title="Judges")]
    guarantee: Guarantee | None = None
    reason: Annotated[
        str | None, Field(description="why the item was escalated", title="Reason")
    ] = None
    queued: Queued | None = None
    queue_note: Annotated[
        str | None,
        Field(
            description="why an item that would have gone to the SMEs did not (the key's queue budget)",
            title="Queue Note",
        ),
    ] = None


class FailedGradeBody(BaseModel):
    """
    No judge produced a usable verdict (502) or could be reached (503): the full grading
    response, every judge's error included, and `detail`.
    """

    request_id: Annotated[str, Field(title="Request Id")]
    status: Annotated[Literal["ok", "partial", "failed"], Field(title="Status")]
    rubric: RubricInfo
    candidate_model: Annotated[str, Field(title="Candidate Model")]
    candidate_maker: Annotated[str | None, Field(title="Candidate Maker")]
    aggregate: Aggregate | None
    results: Annotated[list[JudgeResult], Field(title="Results")]
    skipped: Annotated[list[SkippedJudge], Field(title="Skipped")]
    unavailable: Annotated[
        list[UnavailableJudge] | None,
        Field(
            description="judges whose provider failed, with their stand-in",
            title="Unavailable",
        ),
    ] = None
    trust: Annotated[
        TrustOutcome | None,
        Field(description="present when the request asked for `trust`"),
    ] = None
    detail: Annotated[list[ErrorItem], Field(title="Detail")]


class JudgeResponse(BaseModel):
    request_id: Annotated[str, Field(title="Request Id")]
    status: Annotated[Literal["ok", "partial", "failed"], Field(title="Status")]
    rubric: RubricInfo
    candidate_model: Annotated[str, Field(title="Candidate Model")]
    candidate_maker: Annotated[str | None, Field(title="Candidate Maker")]
    aggregate: Aggregate | None
    results: Annotated[list[JudgeResult], Field(title="Results")]
    skipped: Annotated[list[SkippedJudge], Field(title="Skipped")]
    unavailable: Annotated[
        list[UnavailableJudge] | None,
        Field(
            description="judges whose provider failed, with their stand-in",
            title="Unavailable",
        ),
    ] = None
    trust: Annotated[
        TrustOutcome | None,
        Field(description="present when the request asked for `trust`"),
    ] = None
