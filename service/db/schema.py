"""The database tables (SQLAlchemy 2 ORM). Alembic migrations (alembic/ at the top of the
source tree) create them. Every judge call, ok or failed, is one row of `judgments`."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from service.db.values import new_id, utcnow  # the tables' defaults, and the stores' too

JSONType = JSON().with_variant(JSONB(), "postgresql")


class Base(DeclarativeBase):
    pass


def project_column(table: str) -> Mapped[str]:
    """The project a row belongs to (migration 0009): every read and write of a team's data
    is scoped by it (service/stores/projects.py). No default: a writer that forgets it fails
    instead of filing another team's data under the default project."""
    return mapped_column(
        String(64), ForeignKey("projects.name", name=f"fk_{table}_project")
    )


class ProjectRow(Base):
    """A team's namespace: its keys, grade requests, judgments, answers, grades, rubrics,
    reports and probe runs. `default` (made by migration 0009) holds single-team use."""

    __tablename__ = "projects"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)
    # the metadata attribute trust strata are pinned to, read from the item's stored
    # attributes instead of the request's (issue 42.12; service/stores/trust.py)
    trust_stratum: Mapped[str | None] = mapped_column(String(64), nullable=True)


class RubricRow(Base):
    __tablename__ = "rubrics"
    __table_args__ = (
        UniqueConstraint("project", "rubric_id", "version", name="uq_rubric_project_version"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    project: Mapped[str] = project_column("rubrics")
    rubric_id: Mapped[str] = mapped_column(String(128), index=True)
    version: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(32))
    content_hash: Mapped[str] = mapped_column(String(80), index=True)
    body: Mapped[dict[str, Any]] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)


class ItemRow(Base):
    """What was asked: a prompt and its reference, shared by every candidate's answer."""

    __tablename__ = "items"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    content_hash: Mapped[str] = mapped_column(String(80), unique=True)
    prompt: Mapped[str] = mapped_column(Text)
    reference: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)


# indexes made on PostgreSQL only (`ddl_if`), which Alembic's comparison does not know of
ATTRIBUTE_INDEX = "ix_responses_attributes"
POSTGRESQL_ONLY_INDEXES = frozenset({ATTRIBUTE_INDEX})


class ResponseRow(Base):
    """A candidate model's answer to an item; `item_key` is the id grades refer to."""

    __tablename__ = "responses"
    __table_args__ = (
        Index("ix_responses_project", "project", "id"),
        # metadata= filters (`attributes @> {"key": "value"}`, service/db/filters.py) found by
        # the index on PostgreSQL instead of a scan of every answer (issue 39); SQLite has no
        # index of a JSON object's keys, so none is made there
        Index(
            ATTRIBUTE_INDEX,
            "attributes",
            postgresql_using="gin",
            postgresql_ops={"attributes": "jsonb_path_ops"},
        ).ddl_if(dialect="postgresql"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    project: Mapped[str] = project_column("responses")
    content_hash: Mapped[str] = mapped_column(String(80), unique=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id"), index=True)
    item_key: Mapped[str] = mapped_column(String(256), index=True)
    candidate_model: Mapped[str] = mapped_column(String(256), index=True)
    candidate_provider: Mapped[str | None] = mapped_column(String(128), nullable=True)
    text: Mapped[str] = mapped_column(Text)
    attributes: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)


class GradeRequestRow(Base):
    """One POST /judge (or batch item): the idempotency record and the final response.

    `status` is pending, done or abandoned (its process died; closed by the reaper).
    `attempt` counts take-overs: a finish only lands for the attempt that claimed the row.
    `idempotency_key` is scoped by API key ("<key id>:<key>"), so tenants cannot collide.
    """

    __tablename__ = "grade_requests"
    __table_args__ = (
        Index("ix_grade_requests_status_claimed", "status", "claimed_at"),
        Index("ix_grade_requests_project_created", "project", "created_at", "id"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    project: Mapped[str] = project_column("grade_requests")
    idempotency_key: Mapped[str | None] = mapped_column(String(320), unique=True, nullable=True)
    body_hash: Mapped[str] = mapped_column(String(80))
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempt: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime(), nullable=True)
    outcome: Mapped[str | None] = mapped_column(String(32), nullable=True)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    api_key_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(), nullable=True)


class JudgmentRow(Base):
    __tablename__ = "judgments"
    __table_args__ = (
        Index("ix_judgments_cache_ok", "cache_key", "status"),
        Index("ix_judgments_created", "created_at", "id"),
        Index("ix_judgments_project_created", "project", "created_at", "id"),
        # a grade is never fabricated: `ok` without a score cannot be stored (migration 0004)
        CheckConstraint("status <> 'ok' OR score IS NOT NULL", name="ck_judgments_ok_has_score"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    project: Mapped[str] = project_column("judgments")
    request_id: Mapped[str | None] = mapped_column(
        ForeignKey("grade_requests.id"), index=True, nullable=True
    )
    response_id: Mapped[int] = mapped_column(ForeignKey("responses.id"), index=True)
    judge: Mapped[str] = mapped_column(String(128), index=True)
    judge_model: Mapped[str] = mapped_column(String(256))
    judge_maker: Mapped[str | None] = mapped_column(String(128), nullable=True)
    status: Mapped[str] = mapped_column(String(16), index=True)
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    raw_score: Mapped[float | None] = mapped_column(Float, nullable=True)
    clipped: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    dimensions: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    criteria: Mapped[list[Any]] = mapped_column(JSONType, default=list)
    rationale: Mapped[str | None] = mapped_column(Text, nullable=True)
    # token probabilities of the verdict and the expected score they give (migration 0006)
    probabilities: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    expected_score: Mapped[float | None] = mapped_column(Float, nullable=True)
    confidence: Mapped[float | None] = mapped_column(Float, nullable=True)
    # token | sampling; a sampling judge's samples in call order (migration 0014)
    confidence_source: Mapped[str | None] = mapped_column(String(16), nullable=True)
    samples: Mapped[list[Any] | None] = mapped_column(JSONType, nullable=True)
    raw_reply: Mapped[str | None] = mapped_column(Text, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    latency_ms: Mapped[float] = mapped_column(Float, default=0.0)
    prompt_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    completion_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    cached: Mapped[bool] = mapped_column(Boolean, default=False)
    attempts: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    cache_key: Mapped[str] = mapped_column(String(80))
    rubric_ref: Mapped[str] = mapped_column(String(160), index=True)
    rubric_hash: Mapped[str] = mapped_column(String(80))
    template: Mapped[str] = mapped_column(String(160))
    template_hash: Mapped[str] = mapped_column(String(80))
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)


class HumanGradeRow(Base):
    """A grade in the interchange format of DESIGN.md (humans, or judges imported from files)."""

    __tablename__ = "human_grades"
    __table_args__ = (
        UniqueConstraint("project", "item_id", "rater", name="uq_grade_project_item_rater"),
        Index("ix_human_grades_project_created", "project", "created_at", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    project: Mapped[str] = project_column("human_grades")
    item_id: Mapped[str] = mapped_column(String(256), index=True)
    rater: Mapped[str] = mapped_column(String(256), index=True)
    rater_kind: Mapped[str] = mapped_column(String(16))
    score: Mapped[float] = mapped_column(Float)
    criteria: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    # the labelling design's probability for this item (`qadi sme queue`); NULL when unknown
    inclusion_prob: Mapped[float | None] = mapped_column(Float, nullable=True)
    # an imported judge grade's probability of its verdict (selective judging); NULL if none
    confidence: Mapped[float | None] = mapped_column(Float, nullable=True)
    attributes: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    # the grader's reason for her grade (the workbench's rationale; migration 0011)
    rationale: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)


class ApiKeyRow(Base):
    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    project: Mapped[str] = project_column("api_keys")
    name: Mapped[str] = mapped_column(String(128))
    prefix: Mapped[str] = mapped_column(String(16), unique=True)
    key_hash: Mapped[str] = mapped_column(String(80))
    scopes: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(), nullable=True)


class CalibrationReportRow(Base):
    __tablename__ = "calibration_reports"
    __table_args__ = (
        Index("ix_calibration_reports_kind_created", "kind", "created_at"),
        Index("ix_calibration_reports_project_kind", "project", "kind", "scope", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    project: Mapped[str] = project_column("calibration_reports")
    kind: Mapped[str] = mapped_column(String(16))  # adhoc | nightly
    scope: Mapped[str] = mapped_column(String(256), default="")  # rubric id or "" (all)
    window_start: Mapped[datetime | None] = mapped_column(DateTime(), nullable=True)
    window_end: Mapped[datetime | None] = mapped_column(DateTime(), nullable=True)
    report: Mapped[dict[str, Any]] = mapped_column(JSONType)
    html: Mapped[str] = mapped_column(Text)
    markdown: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)


class BenchRunRow(Base):
    __tablename__ = "bench_runs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    suite: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(256), index=True)
    mode: Mapped[str] = mapped_column(String(16))
    seed: Mapped[int] = mapped_column(Integer)
    summary: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)


class BenchAnswerRow(Base):
    """One candidate answer to one benchmark item, with its run."""

    __tablename__ = "bench_answers"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("bench_runs.id"), index=True)
    task: Mapped[str] = mapped_column(String(64))
    item_id: Mapped[str] = mapped_column(String(256))
    unit: Mapped[str | None] = mapped_column(String(256), nullable=True)
    cache_key: Mapped[str] = mapped_column(String(80), index=True)
    prompt: Mapped[str] = mapped_column(Text)
    gold: Mapped[str] = mapped_column(String(64))
    output: Mapped[str | None] = mapped_column(Text, nullable=True)
    parsed: Mapped[str | None] = mapped_column(String(64), nullable=True)
    correct: Mapped[bool] = mapped_column(Boolean)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    groups: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)


class JudgeFlightRow(Base):
    """A judge call in flight, leased by one process (PostgreSQL replicas only): a process
    asking for the same cache key meanwhile waits for the lease holder's judgment instead of
    calling too. Deleted with the judgment's write; a lease older than the request deadline
    belonged to a dead process and is taken over. Also a probe run going, one of its API
    key's QADI_PROBE_RUNS_PER_KEY (key `probe-run:KEY:SLOT`, any database), renewed while it
    runs (service/judging/limits.py, `ProbeRuns`)."""

    __tablename__ = "judge_flights"

    cache_key: Mapped[str] = mapped_column(String(80), primary_key=True)
    owner: Mapped[str] = mapped_column(String(32))
    started_at: Mapped[datetime] = mapped_column(DateTime())


class RateEventRow(Base):
    """One accepted request of an API key (PostgreSQL replicas only): the sliding one-minute
    window every replica counts against, so N replicas share one per-key limit."""

    __tablename__ = "rate_events"
    __table_args__ = (Index("ix_rate_events_key_at", "api_key_id", "at"),)

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    api_key_id: Mapped[int] = mapped_column(Integer)  # 0 when the service runs without keys
    at: Mapped[datetime] = mapped_column(DateTime())


class ServiceSecretRow(Base):
    """A secret every process and replica on this database shares, drawn on first use: the
    key of signed report links when QADI_REPORT_LINK_SECRET is not set, so a link minted by
    one worker opens on every other."""

    __tablename__ = "service_secrets"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)


class ProbeRunRow(Base):
    """One probe run (`qadi probe`, POST /probes): its report, renderings, and the perturbed
    texts with their seed, so the run can be checked and reproduced. The judge calls
    themselves are ordinary `judgments` rows."""

    __tablename__ = "probe_runs"
    __table_args__ = (
        Index("ix_probe_runs_created", "created_at", "id"),
        Index("ix_probe_runs_project_created", "project", "created_at", "id"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    project: Mapped[str] = project_column("probe_runs")
    rubric_ref: Mapped[str] = mapped_column(String(160))
    seed: Mapped[int] = mapped_column(Integer)
    report: Mapped[dict[str, Any]] = mapped_column(JSONType)
    perturbations: Mapped[list[Any]] = mapped_column(JSONType, default=list)
    html: Mapped[str] = mapped_column(Text)
    markdown: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)


class TrustThresholdRow(Base):
    """A threshold of selective judging fixed by a stored calibration report: one judge or
    cascade, one stratum, one (α, δ, confidence source). POST /judge applies the newest that
    matches a request (service/stores/trust.py); `entry` keeps the whole calibration, its
    guarantee and what it is bound to (rubric version, each stage's model and template)."""

    __tablename__ = "trust_thresholds"
    __table_args__ = (
        Index(
            "ix_trust_thresholds_lookup",
            "project",
            "rubric_id",
            "evaluator",
            "stratum",
            "created_at",
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    project: Mapped[str] = project_column("trust_thresholds")
    report_id: Mapped[str] = mapped_column(
        ForeignKey("calibration_reports.id", ondelete="CASCADE"), index=True
    )
    rubric_id: Mapped[str] = mapped_column(String(128))
    evaluator: Mapped[str] = mapped_column(String(512))
    stratum: Mapped[str] = mapped_column(String(256))
    alpha: Mapped[float] = mapped_column(Float)
    delta: Mapped[float] = mapped_column(Float)
    confidence: Mapped[str] = mapped_column(String(16))  # token | panel
    threshold: Mapped[float | None] = mapped_column(Float, nullable=True)
    entry: Mapped[dict[str, Any]] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)


class SmeQueueRow(Base):
    """An item waiting for the SMEs, once per (item, rubric version, reason): escalated at
    request time (no judge's verdict was trusted; inclusion probability 1), audited (a
    trusted verdict drawn at the policy's audit rate; that rate), or drawn from stored
    judgments for a calibration sample or a label budget (its round's probability and
    stratum), so an estimate over the labels can weight each by its inverse.

    `labels_wanted` is 2 for the overlap share (two SMEs, blind to each other), else 1;
    `route_tag` ("dialect=egy", or "") sends it only to SMEs with that expertise;
    `order_key` (a uniform draw fixed by the item) is the order SMEs get items in, so the
    labelled part of a round is a random part of it; `status` is open until its labels
    are in (done)."""

    __tablename__ = "sme_queue"
    __table_args__ = (
        UniqueConstraint(
            "project", "item_id", "rubric_ref", "reason", name="uq_sme_queue_item_reason"
        ),
        Index("ix_sme_queue_project_created", "project", "created_at", "id"),
        Index("ix_sme_queue_open", "project", "status", "route_tag", "order_key"),
        Index("ix_sme_queue_key_created", "api_key_id", "created_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    project: Mapped[str] = project_column("sme_queue")
    request_id: Mapped[str | None] = mapped_column(
        ForeignKey("grade_requests.id"), index=True, nullable=True
    )
    response_id: Mapped[int] = mapped_column(ForeignKey("responses.id"), index=True)
    item_id: Mapped[str] = mapped_column(String(256), index=True)
    rubric_ref: Mapped[str] = mapped_column(String(160))
    reason: Mapped[str] = mapped_column(String(16))  # escalated | audit | sample
    inclusion_prob: Mapped[float] = mapped_column(Float)
    inclusion_stratum: Mapped[str | None] = mapped_column(String(256), nullable=True)
    trust: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    attributes: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    api_key_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    labels_wanted: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    route_tag: Mapped[str] = mapped_column(String(128), default="", server_default="")
    order_key: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    status: Mapped[str] = mapped_column(String(16), default="open", server_default="open")
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)


class SmeRow(Base):
    """A person of the workbench: an SME, a senior SME (may adjudicate) or a lead (invites,
    adjudicates, reads agreement). `handle` is her rater name in the grades; `tags` are her
    expertise ("dialect=egy"), matched against the queue's `route_tag`."""

    __tablename__ = "smes"
    __table_args__ = (UniqueConstraint("project", "handle", name="uq_smes_project_handle"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    project: Mapped[str] = project_column("smes")
    handle: Mapped[str] = mapped_column(String(128))
    display_name: Mapped[str] = mapped_column(String(256))
    role: Mapped[str] = mapped_column(String(16))  # sme | senior | lead
    tags: Mapped[list[str]] = mapped_column(JSONType, default=list)
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(), nullable=True)


class SmeInviteRow(Base):
    """A one-time sign-in link: only its hash is kept; used, expired or revoked, it opens
    nothing."""

    __tablename__ = "sme_invites"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    project: Mapped[str] = project_column("sme_invites")
    sme_id: Mapped[int] = mapped_column(ForeignKey("smes.id"), index=True)
    token_hash: Mapped[str] = mapped_column(String(80), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime())
    used_at: Mapped[datetime | None] = mapped_column(DateTime(), nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(), nullable=True)


class WebSessionRow(Base):
    """A browser session of the workbench, opened by an invite: `id` is the hash of the
    cookie's secret; `csrf_token` is what every form of the session must send back."""

    __tablename__ = "web_sessions"

    id: Mapped[str] = mapped_column(String(80), primary_key=True)
    project: Mapped[str] = project_column("web_sessions")
    sme_id: Mapped[int] = mapped_column(ForeignKey("smes.id"), index=True)
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(), nullable=True)


class SmeAssignmentRow(Base):
    """One label slot of a queued item, held by one SME: reserved while she has it open
    (until `reserved_until`, then another SME may take it), then submitted (`grade_id`) or
    closed as cannot-judge (`note` is her reason; never a score). The unique slots are how
    the server keeps an item to `labels_wanted` labels whatever the browsers do; the unique
    (item, SME) pair keeps the two labels of an overlap item from one person."""

    __tablename__ = "sme_assignments"
    __table_args__ = (
        UniqueConstraint("queue_id", "slot", name="uq_sme_assignments_slot"),
        UniqueConstraint("queue_id", "sme_id", name="uq_sme_assignments_sme"),
        Index("ix_sme_assignments_sme_status", "sme_id", "status"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    project: Mapped[str] = project_column("sme_assignments")
    queue_id: Mapped[int] = mapped_column(ForeignKey("sme_queue.id"))
    slot: Mapped[int] = mapped_column(Integer)
    sme_id: Mapped[int] = mapped_column(ForeignKey("smes.id"))
    status: Mapped[str] = mapped_column(String(16))  # reserved | submitted | cannot_judge
    reserved_until: Mapped[datetime | None] = mapped_column(DateTime(), nullable=True)
    draft: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    grade_id: Mapped[int | None] = mapped_column(ForeignKey("human_grades.id"), nullable=True)
    note: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)
    submitted_at: Mapped[datetime | None] = mapped_column(DateTime(), nullable=True)


class SmeAdjudicationRow(Base):
    """How a disagreement of two SMEs on an item was settled (by a lead or a senior SME),
    kept beside both labels, which stay as they were."""

    __tablename__ = "sme_adjudications"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    project: Mapped[str] = project_column("sme_adjudications")
    queue_id: Mapped[int] = mapped_column(ForeignKey("sme_queue.id"), unique=True)
    sme_id: Mapped[int] = mapped_column(ForeignKey("smes.id"))
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    criteria: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    rationale: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)


class CalibrationScopeRow(Base):
    """What a project recalibrates by itself (service/recalibration/): a rubric with the
    trust options of `qadi calibrate --trust-*` (`options`), run after `every_labels` new SME
    labels or every `every_hours`, its live guarantees audited on slices of `audit_slice`
    fresh labels. One replica runs it at a time: the lease (`lease_owner`, `lease_until`) is
    taken by a conditional UPDATE."""

    __tablename__ = "calibration_scopes"
    __table_args__ = (
        UniqueConstraint("project", "name", name="uq_calibration_scopes_project_name"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    project: Mapped[str] = project_column("calibration_scopes")
    name: Mapped[str] = mapped_column(String(64))
    rubric: Mapped[str] = mapped_column(String(160))
    options: Mapped[dict[str, Any]] = mapped_column(JSONType)
    every_labels: Mapped[int | None] = mapped_column(Integer, nullable=True)
    every_hours: Mapped[float | None] = mapped_column(Float, nullable=True)
    audit_slice: Mapped[int] = mapped_column(Integer)
    enabled: Mapped[bool] = mapped_column(Boolean)
    created_by: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)
    labels_seen: Mapped[int] = mapped_column(Integer)  # SME labels at the last run
    audited_through: Mapped[datetime | None] = mapped_column(DateTime(), nullable=True)
    due_reason: Mapped[str | None] = mapped_column(String(64), nullable=True)
    last_run_at: Mapped[datetime | None] = mapped_column(DateTime(), nullable=True)
    last_status: Mapped[str | None] = mapped_column(String(16), nullable=True)
    last_message: Mapped[str | None] = mapped_column(Text, nullable=True)
    last_report_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    # what the dashboard shows of the last report (trust map, corrected means, drift against
    # the report before), kept small so a page never parses a whole report
    summary: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    runs: Mapped[int] = mapped_column(Integer)
    lease_owner: Mapped[str | None] = mapped_column(String(32), nullable=True)
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(), nullable=True)


class GuaranteeChangeRow(Base):
    """A change of a live threshold: what POST /judge applies for (rubric, evaluator,
    stratum, α, δ, confidence) before and after a stored report, with the labels it rests
    on, what set it off and who."""

    __tablename__ = "guarantee_changes"
    __table_args__ = (Index("ix_guarantee_changes_project_created", "project", "created_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    project: Mapped[str] = project_column("guarantee_changes")
    report_id: Mapped[str] = mapped_column(String(32))
    scope: Mapped[str | None] = mapped_column(String(64), nullable=True)
    rubric_id: Mapped[str] = mapped_column(String(128))
    evaluator: Mapped[str] = mapped_column(String(512))
    stratum: Mapped[str] = mapped_column(String(256))
    alpha: Mapped[float] = mapped_column(Float)
    delta: Mapped[float] = mapped_column(Float)
    confidence: Mapped[str] = mapped_column(String(16))
    old_threshold: Mapped[float | None] = mapped_column(Float, nullable=True)
    new_threshold: Mapped[float | None] = mapped_column(Float, nullable=True)
    old_report_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    coverage: Mapped[float | None] = mapped_column(Float, nullable=True)
    n_calibration: Mapped[int] = mapped_column(Integer)
    trigger: Mapped[str] = mapped_column(String(64))
    actor: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)


class GuaranteeAuditRow(Base):
    """A slice of fresh SME labels of trusted verdicts tested against a live guarantee
    (calibration/transport.py); `labels_through` is the newest label of the slice."""

    __tablename__ = "guarantee_audits"
    __table_args__ = (Index("ix_guarantee_audits_project_created", "project", "created_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    project: Mapped[str] = project_column("guarantee_audits")
    scope: Mapped[str] = mapped_column(String(64))
    report_id: Mapped[str] = mapped_column(String(32))
    evaluator: Mapped[str] = mapped_column(String(512))
    stratum: Mapped[str] = mapped_column(String(256))
    audit: Mapped[dict[str, Any]] = mapped_column(JSONType)
    passed: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    labels_through: Mapped[datetime] = mapped_column(DateTime())
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)


class TrustOutcomeCountRow(Base):
    """POST /judge's trust outcomes counted per day, rubric, evaluator (the cascade, or the
    panel's first judge), stratum and status (trusted, audited, escalated, uncalibrated), as
    requests finish: the dashboard's series, which never reads the requests themselves."""

    __tablename__ = "trust_outcome_counts"
    __table_args__ = (
        PrimaryKeyConstraint(
            "project", "day", "rubric_id", "evaluator", "stratum", "status",
            name="pk_trust_outcome_counts",
        ),  # fmt: skip
    )

    project: Mapped[str] = project_column("trust_outcome_counts")
    day: Mapped[date] = mapped_column(Date)
    rubric_id: Mapped[str] = mapped_column(String(128))
    evaluator: Mapped[str] = mapped_column(String(512))
    stratum: Mapped[str] = mapped_column(String(256))
    status: Mapped[str] = mapped_column(String(16))
    n: Mapped[int] = mapped_column(Integer)


class ReportPointRow(Base):
    """A stored report's summary for the history plots (calibration/history.py
    `history_point`): a dashboard reads a few hundred bytes per report, never the report."""

    __tablename__ = "report_points"
    __table_args__ = (Index("ix_report_points_project_scope", "project", "scope", "created_at"),)

    report_id: Mapped[str] = mapped_column(
        ForeignKey("calibration_reports.id", ondelete="CASCADE"), primary_key=True
    )
    project: Mapped[str] = project_column("report_points")
    scope: Mapped[str] = mapped_column(String(256))
    kind: Mapped[str] = mapped_column(String(16))
    point: Mapped[dict[str, Any]] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)


class AlignmentRunRow(Base):
    """A revision of a judge's template from the experts' disagreements (service/alignment/):
    the folds fixed before it (item -> train | holdout, by `seed`), the candidate template,
    its certification on the held-out fold, and, once approved, the rubric version that made
    it live. The training items informed the revision: no calibration of that version counts
    them (service/stores/alignment.py `training_items`)."""

    __tablename__ = "alignment_runs"
    __table_args__ = (Index("ix_alignment_runs_project_created", "project", "created_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    project: Mapped[str] = project_column("alignment_runs")
    rubric_ref: Mapped[str] = mapped_column(String(160))
    judge: Mapped[str] = mapped_column(String(128))
    reviser: Mapped[str] = mapped_column(String(128))
    seed: Mapped[int] = mapped_column(Integer)
    holdout: Mapped[float] = mapped_column(Float)
    folds: Mapped[dict[str, Any]] = mapped_column(JSONType)
    old_template: Mapped[str] = mapped_column(String(160))
    candidate: Mapped[dict[str, Any]] = mapped_column(JSONType)
    candidate_hash: Mapped[str] = mapped_column(String(80))
    status: Mapped[str] = mapped_column(String(16))  # certified | not_certified | approved
    certification: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(), default=utcnow)
    approved_at: Mapped[datetime | None] = mapped_column(DateTime(), nullable=True)
    approved_by: Mapped[str | None] = mapped_column(String(128), nullable=True)
    approved_rubric_ref: Mapped[str | None] = mapped_column(String(160), nullable=True)


class AlignmentGradeRow(Base):
    """The candidate template's verdict on one held-out item of an alignment run (a judge
    result as JSON). Kept here, not in `judgments`, until the run is approved: before that
    the candidate is no version of the rubric, and its grades must not enter the reports of
    the live one."""

    __tablename__ = "alignment_grades"

    run_id: Mapped[str] = mapped_column(
        ForeignKey("alignment_runs.id", ondelete="CASCADE"), primary_key=True
    )
    item_id: Mapped[str] = mapped_column(String(256), primary_key=True)
    response_id: Mapped[int] = mapped_column(ForeignKey("responses.id"))
    result: Mapped[dict[str, Any]] = mapped_column(JSONType)
