"""Calibration over the database: grade rows from human grades and stored judgments, and
stored reports (ad hoc and nightly); drift itself is computed by `calibration.drift`.
Everything here works on one project's data (service/stores/projects.py): a report computes over
its project's grades and judgments only and is stored in that project."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field
from sqlalchemy import Row, func, select
from sqlalchemy.orm import Session

from calibration.calibrate import CalibrationOptions
from calibration.formats.interchange import GradeRow
from calibration.history import history_point
from judges.standins import is_stand_in
from rubrics import PenaltyWeightedRubric, Rubric
from service.db.filters import not_a_probe, rubric_matches
from service.db.schema import (
    CalibrationReportRow,
    HumanGradeRow,
    JudgmentRow,
    ReportPointRow,
    ResponseRow,
)
from service.stores.alignment import training_items
from service.stores.grades import grade_from_row
from service.stores.guarantees import Change
from service.stores.projects import Tenant
from service.stores.rubrics import RubricNotFound, get_rubric
from service.stores.trust import save_thresholds

EXPECTED_SUFFIX = "~expected"  # the rater name of a judge's expected score
# the rater name of grades imported under the name of a judge whose judgments qadi stored
IMPORTED_SUFFIX = "~imported"


class Selection(BaseModel):
    """Which judgments take part: judges, rubric, metadata filters, time window."""

    judges: list[str] | None = None
    rubric: str | None = Field(default=None, description="'id' or 'id@version'")
    metadata: dict[str, str] = Field(default_factory=dict)
    since: datetime | None = None
    until: datetime | None = None
    scale: tuple[float, float] | None = Field(
        default=None,
        description="without a rubric: only judgments under rubrics of this declared scale",
    )
    score: Literal["discrete", "expected", "both"] = Field(
        default="discrete",
        description="each judge's discrete grade, its expected (distributional) score as "
        f"rater 'JUDGE{EXPECTED_SUFFIX}', or both side by side",
    )


def judge_rows(judge: str, judgment: JudgmentRow, score: str) -> list[tuple[str, float]]:
    """(rater, score) pairs a judgment contributes: its grade, and/or its expected score
    as a second rater (none when the judge gave no token probabilities)."""
    pairs = []
    if score in ("discrete", "both"):
        pairs.append((judge, judgment.score))
    if score in ("expected", "both") and judgment.expected_score is not None:
        pairs.append((f"{judge}{EXPECTED_SUFFIX}", judgment.expected_score))
    return pairs


def scale_of_rubric(session: Session, project: str, rubric: str) -> tuple[float, float, str]:
    found = get_rubric(session, project, rubric)
    if isinstance(found, PenaltyWeightedRubric):
        return 0.0, 100.0, "interval"
    return float(found.scale.min), float(found.scale.max), "ordinal"


def criterion_weights(rubric: Rubric) -> dict[str, float]:
    """Points each criterion carries (penalty-weighted rubrics; none for scale rubrics)."""
    if isinstance(rubric, PenaltyWeightedRubric):
        return {c.id: c.weight for c in rubric.criteria}
    return {}


def rows_from_db(
    session: Session, project: str, selection: Selection
) -> tuple[list[GradeRow], dict[str, Any]]:
    """Human grades plus the latest ok judgment per (item, judge) in the selection, of
    `project` only.

    Failed judgments (parse errors, provider errors) are not grades: they are counted in
    the returned inputs so the report can say how many were excluded. Probe answers
    (perturbed copies, service/reporting/probes.py) are never items.
    """
    query = (
        select(JudgmentRow, ResponseRow)
        .join(ResponseRow, JudgmentRow.response_id == ResponseRow.id)
        .where(JudgmentRow.project == project, not_a_probe())
    )
    if selection.judges:
        query = query.where(JudgmentRow.judge.in_(selection.judges))
    if selection.rubric:
        query = query.where(rubric_matches(JudgmentRow.rubric_ref, selection.rubric))
    for key, value in selection.metadata.items():
        query = query.where(ResponseRow.attributes[key].as_string() == value)
    if selection.since:
        query = query.where(JudgmentRow.created_at >= selection.since)
    if selection.until:
        query = query.where(JudgmentRow.created_at < selection.until)
    on_scale = _ScaleFilter(session, project, None if selection.rubric else selection.scale)
    off_scale: set[str] = set()  # items judged under a rubric of another scale
    latest: dict[tuple[str, str], tuple[JudgmentRow, ResponseRow]] = {}
    failures: dict[str, int] = {}
    rubric_refs, judge_models, stand_ins = set(), set(), set()
    for judgment, response in session.execute(
        query.order_by(JudgmentRow.created_at, JudgmentRow.id)
    ):
        if judgment.status != "ok":
            failures[judgment.status] = failures.get(judgment.status, 0) + 1
            continue
        if not on_scale(judgment.rubric_ref):
            off_scale.add(response.item_key)
            continue
        latest[(response.item_key, judgment.judge)] = (judgment, response)
        rubric_refs.add(judgment.rubric_ref)
        judge_models.add(
            (judgment.judge, judgment.judge_model, judgment.template, judgment.template_hash)
        )
    # labels that revised an approved template (qadi align) are not fresh for its version
    revised = training_items(session, project, selection.rubric) if selection.rubric else set()
    latest = {key: found for key, found in latest.items() if key[0] not in revised}
    rows = []
    versions: dict[str, set[tuple[str, ...]]] = {}
    sources: dict[str, set[str]] = {}  # judge -> where its confidences came from
    for (item, judge), (judgment, response) in latest.items():
        versions.setdefault(judge, set()).add(_version(judgment))
        if judgment.confidence_source is not None:
            sources.setdefault(judge, set()).add(judgment.confidence_source)
        attributes = {k: v for k, v in (response.attributes or {}).items() if k != "item_id"}
        attributes["candidate_model"] = response.candidate_model
        marks = {c["id"]: bool(c["met"]) for c in judgment.criteria or [] if "id" in c}
        scores = judge_rows(judge, judgment, selection.score)
        rows.extend(
            GradeRow(
                item_id=item,
                rater=rater,
                rater_kind="judge",
                score=value,
                criteria=(marks or None) if rater == judge else None,
                confidence=judgment.confidence if rater == judge else None,
                attributes=attributes,
            )
            for rater, value in scores
        )
        if is_stand_in(judgment.judge_model):  # by its route, whatever its name
            stand_ins.update(rater for rater, _ in scores)
    narrowed = bool(
        selection.judges
        or selection.rubric
        or selection.metadata
        or selection.since
        or selection.until
    )
    items = {item for item, _ in latest}
    off_scale -= items
    imported_judges: set[str] = set()
    kept_apart: set[str] = set()
    made_here = {row.rater for row in rows}  # the judges' (and expected scores') names
    for grade in session.scalars(select(HumanGradeRow).where(HumanGradeRow.project == project)):
        if (narrowed and grade.item_id not in items) or grade.item_id in off_scale:
            continue
        if grade.rater_kind == "judge" and selection.judges and grade.rater not in selection.judges:
            continue
        if grade.rater_kind == "judge" and selection.rubric:
            # judge scores imported as grades (an Inspect scorer, lm-eval) carry no rubric:
            # a rubric's report holds the judgments made under it, not copies of them
            imported_judges.add(grade.rater)
            continue
        row = grade_from_row(grade)
        if row.rater_kind == "judge" and row.rater in made_here:
            row = _kept_apart(row)
            kept_apart.add(grade.rater)
        rows.append(row)
    inputs = {
        "source": "database",
        "rubric_versions": sorted(rubric_refs),
        "judge_models": [
            {"judge": j, "model": m, "template": t, "template_hash": h}
            for j, m, t, h in sorted(judge_models)
        ],
        "window": {
            "since": selection.since.isoformat() if selection.since else None,
            "until": selection.until.isoformat() if selection.until else None,
        },
        "stand_ins": sorted(stand_ins),
        "failed_judgments_excluded": failures,
        "judge_scores": selection.score,
        # what each judge graded the items with (selective judging binds its guarantees)
        "judge_versions": {
            judge: _with_sources(found, sources.get(judge, set()))
            for judge, found in sorted(versions.items())
        },
        "items_on_other_scales_excluded": len(off_scale),
    }
    if imported_judges:
        inputs["imported_judge_grades_excluded"] = sorted(imported_judges)
    if revised:
        inputs["revision_training_items_excluded"] = len(revised)
    if kept_apart:
        inputs["imported_judge_grades_kept_apart"] = sorted(
            f"{name}{IMPORTED_SUFFIX}" for name in kept_apart
        )
    return rows, inputs


def _kept_apart(row: GradeRow) -> GradeRow:
    """A grade imported under the name of a judge whose own judgments are in the report,
    renamed `NAME~imported`: merged with the judge's rows, a file's scores and confidences
    would speak for the judge's model and template, and fix the thresholds POST /judge
    applies to it (issue 42.2: an upload under a configured judge's name turned its unsure
    verdicts into `trusted`). Apart, they are one more rater that nothing at request time
    is bound to."""
    return row.model_copy(update={"rater": f"{row.rater}{IMPORTED_SUFFIX}"})


_VERSION_FIELDS = ("model", "template", "template_hash", "rubric_ref", "rubric_hash")


def _with_sources(found: set[tuple[str, ...]], sources: set[str]) -> list[dict[str, Any]]:
    """A judge's versions, each with the source of its confidences: a threshold fitted on
    token confidences says nothing of sampled ones. Confidences from two sources make two
    versions (no guarantee binds to a mixture); none, a version without a source."""
    return [
        {**dict(zip(_VERSION_FIELDS, v, strict=True)), "confidence_source": source}
        for v in sorted(found)
        for source in (sorted(sources) or [None])
    ]


def _version(judgment: JudgmentRow) -> tuple[str, ...]:
    return (
        judgment.judge_model,
        judgment.template,
        judgment.template_hash,
        judgment.rubric_ref,
        judgment.rubric_hash,
    )


class _ScaleFilter:
    """Whether a judgment's rubric has the declared scale, so one report never mixes scales
    (issue 16 item 4). A rubric the database does not hold (an inline one) is kept: its
    scores still meet the out-of-scale check, which names them."""

    def __init__(self, session: Session, project: str, scale: tuple[float, float] | None) -> None:
        self.session, self.project, self.scale = session, project, scale
        self.known: dict[str, bool] = {}

    def __call__(self, rubric_ref: str) -> bool:
        if self.scale is None:
            return True
        if rubric_ref not in self.known:
            try:
                low, high, _ = scale_of_rubric(self.session, self.project, rubric_ref)
                self.known[rubric_ref] = (low, high) == tuple(map(float, self.scale))
            except RubricNotFound:
                self.known[rubric_ref] = True
        return self.known[rubric_ref]


def with_stored_rubric_weights(
    session: Session, project: str, options: CalibrationOptions, inputs: dict[str, Any]
) -> CalibrationOptions:
    """Without weights given, the criterion weights of the rubric the judgments used, when
    they all used one rubric version (so per-criterion points at stake are known)."""
    refs = inputs.get("rubric_versions") or []
    if options.criterion_weights or len(refs) != 1:
        return options
    try:
        weights = criterion_weights(get_rubric(session, project, refs[0]))
    except RubricNotFound:
        return options
    return options.model_copy(update={"criterion_weights": weights})


def store_report(
    session: Session,
    project: str,
    kind: str,
    scope: str,
    rendered: tuple[dict[str, Any], str, str],
    window: tuple[datetime | None, datetime | None] = (None, None),
    change: Change | None = None,
    only_supported: bool = False,
) -> CalibrationReportRow:
    """The report, its thresholds (`save_thresholds`, with what set it off: `change`) and its
    history point (`report_points`, kept under the calibration scope's name when a scope
    made it, else the report's own scope)."""
    report, markdown, html = rendered
    row = CalibrationReportRow(
        project=project,
        kind=kind,
        scope=scope,
        report=report,
        html=html,
        markdown=markdown,
        window_start=window[0],
        window_end=window[1],
    )
    session.add(row)
    session.flush()
    save_thresholds(session, project, row.id, report, change, only_supported)
    at = (row.window_end or row.created_at).isoformat()
    session.add(
        ReportPointRow(
            report_id=row.id, project=project, kind=kind,
            scope=change.scope if change and change.scope else scope,
            point=history_point(report, at, row.id), created_at=row.created_at,
        )  # fmt: skip
    )
    return row


def nightly_history(
    session: Session, project: str, scope: str, limit: int = 60
) -> list[dict[str, Any]]:
    """The overall numbers of the last `limit` stored nightly reports of this project and
    scope, oldest first, for the trend section."""
    rows = session.scalars(
        select(CalibrationReportRow)
        .where(
            CalibrationReportRow.project == project,
            CalibrationReportRow.kind == "nightly",
            CalibrationReportRow.scope == scope,
        )
        .order_by(CalibrationReportRow.created_at.desc(), CalibrationReportRow.id.desc())
        .limit(limit)
    ).all()
    return [
        history_point(row.report, (row.window_end or row.created_at).isoformat(), row.id)
        for row in reversed(rows)
    ]


def latest_report(
    session: Session,
    tenant: Tenant,
    kind: str | None = None,
    scope: str | None = None,
    before: datetime | None = None,
) -> CalibrationReportRow | None:
    """The newest report the tenant may read (of every project, for an admin key)."""
    query = select(CalibrationReportRow).where(tenant.visible(CalibrationReportRow.project))
    if kind:
        query = query.where(CalibrationReportRow.kind == kind)
    if scope is not None:
        query = query.where(CalibrationReportRow.scope == scope)
    if before is not None:
        query = query.where(CalibrationReportRow.created_at < before)
    return session.scalars(
        query.order_by(CalibrationReportRow.created_at.desc(), CalibrationReportRow.id.desc())
    ).first()


def linked_report(session: Session, report_id: str) -> CalibrationReportRow | None:
    """A stored report by id for whoever holds a valid signed link to it (a link opens one
    report, whatever its project: that is what a link is for)."""
    return session.get(CalibrationReportRow, report_id)


def get_report(session: Session, tenant: Tenant, report_id: str) -> CalibrationReportRow | None:
    """A stored report by id, when the tenant may read it; None as for an unknown id, so
    another project's ids cannot be told from ids that do not exist."""
    row = session.get(CalibrationReportRow, report_id)
    return row if row is not None and tenant.owns(row.project) else None


def latest_report_keys(session: Session) -> list[Row]:
    """id, project, kind, scope and created_at of the newest report of each (project, kind,
    scope), in one query at every scrape of GET /metrics: without the reports themselves,
    which `report_documents` reads once per id (a stored report never changes)."""
    table = CalibrationReportRow
    newest_first = func.row_number().over(
        partition_by=(table.project, table.kind, table.scope),
        order_by=(table.created_at.desc(), table.id.desc()),
    )
    ranked = select(
        table.id,
        table.project,
        table.kind,
        table.scope,
        table.created_at,
        newest_first.label("rank"),
    ).subquery()
    columns = (ranked.c.project, ranked.c.kind, ranked.c.scope)
    return session.execute(
        select(ranked.c.id, *columns, ranked.c.created_at)
        .where(ranked.c.rank == 1)
        .order_by(*columns)
    ).all()


def report_documents(session: Session, ids: list[str]) -> dict[str, dict[str, Any]]:
    """The JSON of these stored reports by id (not their HTML and Markdown)."""
    table = CalibrationReportRow
    return dict(session.execute(select(table.id, table.report).where(table.id.in_(ids))).all())


def report_points(session: Session, project: str, scope: str, limit: int = 200) -> list[dict]:
    """The last `limit` history points of a scope's reports (a calibration scope's name, or
    a report scope), oldest first: what the dashboard plots, a few hundred bytes each."""
    points = session.scalars(
        select(ReportPointRow.point)
        .where(ReportPointRow.project == project, ReportPointRow.scope == scope)
        .order_by(ReportPointRow.created_at.desc(), ReportPointRow.report_id.desc())
        .limit(limit)
    ).all()
    return list(reversed(points))


def stored_report(session: Session, project: str, report_id: str) -> CalibrationReportRow | None:
    """A report of `project` by id (None: no such report there)."""
    row = session.get(CalibrationReportRow, report_id)
    return row if row is not None and row.project == project else None
