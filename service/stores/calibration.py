"""Calibration over the database: grade rows from human grades and stored judgments, and
stored reports (ad hoc and nightly); drift itself is computed by `calibration.drift`.
Everything here works on one project's data (service/stores/projects.py): a report computes over
its project's grades and judgments only and is stored in that project."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field
from sqlalchemy import ColumnElement, Row, Select, func, select
from sqlalchemy.orm import Session

from calibration.calibrate import CalibrationOptions
from calibration.columns import GradeColumns
from calibration.formats.interchange import GradeRow
from calibration.history import history_point
from judges.standins import is_stand_in
from rubrics import PenaltyWeightedRubric, Rubric
from service.db.filters import has_attribute, json_text, not_a_probe, rubric_matches
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


def judge_raters(judge: str, expected: bool, score: str) -> list[str]:
    """The raters a judgment is in a report as: its grade (named as the judge), and/or its
    expected score as a second rater (none when the judge gave no token probabilities)."""
    raters = [judge] if score in ("discrete", "both") else []
    if score in ("expected", "both") and expected:
        raters.append(f"{judge}{EXPECTED_SUFFIX}")
    return raters


def scale_of_rubric(session: Session, project: str, rubric: str) -> tuple[float, float, str]:
    return rubric_scale(get_rubric(session, project, rubric))


def rubric_scale(rubric: Rubric) -> tuple[float, float, str]:
    """Scale and level of a rubric's scores (penalty-weighted rubrics score 0-100 points)."""
    if isinstance(rubric, PenaltyWeightedRubric):
        return 0.0, 100.0, "interval"
    return float(rubric.scale.min), float(rubric.scale.max), "ordinal"


def criterion_weights(rubric: Rubric) -> dict[str, float]:
    """Points each criterion carries (penalty-weighted rubrics; none for scale rubrics)."""
    if isinstance(rubric, PenaltyWeightedRubric):
        return {c.id: c.weight for c in rubric.criteria}
    return {}


def rows_from_db(
    session: Session, project: str, selection: Selection
) -> tuple[GradeColumns, dict[str, Any]]:
    """Human grades plus the latest ok judgment per (item, judge) in the selection, of
    `project` only.

    Failed judgments (parse errors, provider errors) are not grades: they are counted in
    the returned inputs so the report can say how many were excluded. Probe answers
    (perturbed copies, service/reporting/probes.py) are never items.

    The database does the volume (issue 39): it counts the failures, picks each latest
    judgment and sends only the columns the statistics read, streamed; each judgment is kept
    as a few numbers in columns (calibration/columns.py), its answer's attributes shared with
    the answer's other judgments, the human grades appended as rows after them. Rows
    come in the order of each (item, judge)'s first judgment, as they did when every
    judgment was read and kept in a dict: the first attributes of an item and the order of
    its conflicts in the report depend on it.
    """
    where = _selected(project, selection)
    failures = _failures(session, where)
    other_scale = _rubrics_on_other_scales(session, project, where, selection)
    off_scale = _items_under(session, where, other_scale)
    # labels that revised an approved template (qadi align) are not fresh for its version
    revised = training_items(session, project, selection.rubric) if selection.rubric else set()
    found = JudgeRows(selection.score, revised)
    latest = _latest_judgments(where, other_scale)
    # Core, not the ORM: the rows are plain tuples, and ORM loading cost ~16 s per 1M
    for record in session.connection().execute(latest, execution_options={"yield_per": _BATCH}):
        found.add(*record)
    # Core rows, streamed: as ORM objects the half million grades of a 10M-judgment
    # database were all loaded at once (issue 39)
    grades = select(*_GRADE_COLUMNS).where(HumanGradeRow.project == project)
    stored = (
        grade_from_row(g)
        for g in session.connection().execute(
            grades.order_by(HumanGradeRow.id), execution_options={"yield_per": _BATCH}
        )
    )
    found.close()
    return with_grades(found, stored, selection, failures, off_scale, "database")


def with_grades(
    found: JudgeRows,
    grades: Iterable[GradeRow],
    selection: Selection,
    failures: dict[str, int],
    off_scale: set[str],
    source: str,
) -> tuple[GradeColumns, dict[str, Any]]:
    """The latest judgments gathered in `found` (closed) with the human grades (in the order
    they were stored) appended, and the report's inputs: what rows_from_db reads from the
    database, and `qadi calibrate --from-parquet` from an export, end here alike."""
    rows = found.rows
    narrowed = bool(
        selection.judges
        or selection.rubric
        or selection.metadata
        or selection.since
        or selection.until
    )
    # the judged items, asked of the rows (not a set of millions of names); narrowed, a
    # grade is kept only for a judged item, so the grades add no item to ask about
    off_scale = {item for item in off_scale if not rows.has_item(item)}
    imported_judges: set[str] = set()
    kept_apart: set[str] = set()
    made_here = found.raters  # the judges' (and expected scores') names
    for grade in grades:
        if (narrowed and not rows.has_item(grade.item_id)) or grade.item_id in off_scale:
            continue
        if grade.rater_kind == "judge" and selection.judges and grade.rater not in selection.judges:
            continue
        if grade.rater_kind == "judge" and selection.rubric:
            # judge scores imported as grades (an Inspect scorer, lm-eval) carry no rubric:
            # a rubric's report holds the judgments made under it, not copies of them
            imported_judges.add(grade.rater)
            continue
        if grade.rater_kind == "judge" and grade.rater in made_here:
            kept_apart.add(grade.rater)
            grade = _kept_apart(grade)
        rows.append(grade)
    inputs = {
        "source": source,
        "rubric_versions": sorted(found.rubric_refs),
        "judge_models": [
            {"judge": j, "model": m, "template": t, "template_hash": h}
            for j, m, t, h in sorted(found.judge_models)
        ],
        "window": {
            "since": selection.since.isoformat() if selection.since else None,
            "until": selection.until.isoformat() if selection.until else None,
        },
        "stand_ins": sorted(found.stand_ins),
        "failed_judgments_excluded": failures,
        "judge_scores": selection.score,
        # what each judge graded the items with (selective judging binds its guarantees)
        "judge_versions": {
            judge: _with_sources(versions, found.sources.get(judge, set()))
            for judge, versions in sorted(found.versions.items())
        },
        "items_on_other_scales_excluded": len(off_scale),
    }
    if imported_judges:
        inputs["imported_judge_grades_excluded"] = sorted(imported_judges)
    if found.revised:
        inputs["revision_training_items_excluded"] = len(found.revised)
    if kept_apart:
        inputs["imported_judge_grades_kept_apart"] = sorted(
            f"{name}{IMPORTED_SUFFIX}" for name in kept_apart
        )
    return rows, inputs


_BATCH = 5000  # judgments fetched at a time (a server-side cursor on PostgreSQL)
# what grade_from_row reads of a stored grade
_GRADE_COLUMNS = (
    HumanGradeRow.item_id,
    HumanGradeRow.rater,
    HumanGradeRow.rater_kind,
    HumanGradeRow.score,
    HumanGradeRow.criteria,
    HumanGradeRow.inclusion_prob,
    HumanGradeRow.confidence,
    HumanGradeRow.attributes,
    HumanGradeRow.rationale,
    HumanGradeRow.project,
)


def _selected(project: str, selection: Selection) -> list[ColumnElement[bool]]:
    """The conditions on a judgment joined to its answer that put it in the selection."""
    where = [JudgmentRow.project == project, not_a_probe()]
    if selection.judges:
        where.append(JudgmentRow.judge.in_(selection.judges))
    if selection.rubric:
        where.append(rubric_matches(JudgmentRow.rubric_ref, selection.rubric))
    for key, value in selection.metadata.items():
        where.append(has_attribute(key, value))
    if selection.since:
        where.append(JudgmentRow.created_at >= selection.since)
    if selection.until:
        where.append(JudgmentRow.created_at < selection.until)
    return where


def _judged(*columns, where: list[ColumnElement[bool]]) -> Select:
    return (
        select(*columns)
        .select_from(JudgmentRow)
        .join(ResponseRow, JudgmentRow.response_id == ResponseRow.id)
        .where(*where)
    )


def _failures(session: Session, where: list[ColumnElement[bool]]) -> dict[str, int]:
    """How many judgments failed, by status, in the order the first of each was made."""
    query = (
        _judged(JudgmentRow.status, func.count(), where=where)
        .where(JudgmentRow.status != "ok")
        .group_by(JudgmentRow.status)
        .order_by(func.min(JudgmentRow.created_at), JudgmentRow.status)
    )
    return {status: count for status, count in session.execute(query)}


def _rubrics_on_other_scales(
    session: Session, project: str, where: list[ColumnElement[bool]], selection: Selection
) -> list[str]:
    """The rubrics of ok judgments in the selection whose scale is not the declared one
    (none when no scale is declared, or a rubric is named: it sets the scale)."""
    if selection.rubric or selection.scale is None:
        return []
    on_scale = _ScaleFilter(session, project, selection.scale)
    refs = _judged(JudgmentRow.rubric_ref, where=[*where, JudgmentRow.status == "ok"])
    return sorted(ref for ref in session.scalars(refs.distinct()) if not on_scale(ref))


def _items_under(
    session: Session, where: list[ColumnElement[bool]], rubric_refs: list[str]
) -> set[str]:
    """Items with an ok judgment in the selection under one of these rubrics."""
    if not rubric_refs:
        return set()
    ok_under = [*where, JudgmentRow.status == "ok", JudgmentRow.rubric_ref.in_(rubric_refs)]
    return set(session.scalars(_judged(ResponseRow.item_key, where=ok_under).distinct()))


def _latest_judgments(where: list[ColumnElement[bool]], other_scale: list[str]) -> Select:
    """The latest ok judgment per (item, judge), only the columns a report reads, in the
    order of each pair's first judgment. Every window partitions, orders and frames alike,
    so the database sorts the judgments once for all of them."""
    ok = [*where, JudgmentRow.status == "ok"]
    if other_scale:
        ok.append(JudgmentRow.rubric_ref.not_in(other_scale))
    window = {
        "partition_by": (ResponseRow.item_key, JudgmentRow.judge),
        "order_by": (JudgmentRow.created_at, JudgmentRow.id),
        "rows": (None, None),
    }
    ranked = _judged(
        *_REPORT_COLUMNS,
        func.row_number().over(**window).label("position"),
        func.count().over(**window).label("judgments"),
        func.first_value(JudgmentRow.created_at).over(**window).label("first_at"),
        func.first_value(JudgmentRow.id).over(**window).label("first_id"),
        where=ok,
    ).subquery()
    return (
        select(*(ranked.c[column.key] for column in _REPORT_COLUMNS))
        .where(ranked.c.position == ranked.c.judgments)
        .order_by(ranked.c.first_at, ranked.c.first_id)
    )


# JSON as text: decoded once per distinct text, not once per judgment
_REPORT_COLUMNS = (
    ResponseRow.item_key,
    ResponseRow.candidate_model,
    json_text(ResponseRow.attributes, without="item_id").label("attributes"),
    JudgmentRow.judge,
    JudgmentRow.judge_model,
    JudgmentRow.template,
    JudgmentRow.template_hash,
    JudgmentRow.rubric_ref,
    JudgmentRow.rubric_hash,
    JudgmentRow.score,
    JudgmentRow.expected_score,
    JudgmentRow.confidence,
    JudgmentRow.confidence_source,
    json_text(JudgmentRow.criteria).label("criteria"),
)


class JudgeRows:
    """Grade rows from the latest judgments as they stream in, and what the report's inputs
    say of them. Attribute dicts, criteria marks and names repeat across judgments: each
    distinct one is kept once and shared (rows are read, never modified). What the inputs
    list (rubric versions, judge models, sources, stand-ins) is gathered once per distinct
    version at `close`, not per judgment: a report reads millions of them (issue 39)."""

    def __init__(self, score: str, revised: set[str]) -> None:
        self.score, self.revised = score, revised
        self.rows = GradeColumns()
        self.raters: set[str] = set()
        self.rubric_refs: set[str] = set()
        self.judge_models: set[tuple[str, str, str, str]] = set()
        self.stand_ins: set[str] = set()
        self.versions: dict[str, set[tuple[str, ...]]] = {}
        self.sources: dict[str, set[str]] = {}  # judge -> where its confidences came from
        self._shared: dict[Any, Any] = {}
        # (judge, its version, confidence source, expected score given) -> graded a kept item
        self._seen: dict[tuple, bool] = {}

    def add(
        self, item_key: str, candidate_model: str, attributes: str | None, judge: str,
        judge_model: str, template: str, template_hash: str, rubric_ref: str,
        rubric_hash: str, score: float, expected_score: float | None,
        confidence: float | None, confidence_source: str | None, criteria: str | None,
    ) -> None:  # fmt: skip
        """One latest judgment, its columns in the order of `_REPORT_COLUMNS`."""
        kept = item_key not in self.revised
        version = (judge, judge_model, template, template_hash, rubric_ref, rubric_hash,
                   confidence_source, expected_score is not None)  # fmt: skip
        if not kept:
            self._seen.setdefault(version, False)
            return
        self._seen[version] = True
        attributes_key = ("attributes", attributes, candidate_model)
        found = self._attributes(attributes_key)
        marks_key = ("marks", criteria)
        marks = self._marks(marks_key)
        for rater in judge_raters(judge, expected_score is not None, self.score):
            if rater == judge:
                self.rows.add_judge_row(
                    item_key, rater, score, confidence, found, attributes_key, marks, marks_key
                )
            else:
                self.rows.add_judge_row(
                    item_key, rater, expected_score, None, found, attributes_key, None, None
                )

    def close(self) -> None:
        """The inputs' lists from the distinct versions seen."""
        for version, kept in self._seen.items():
            judge, model, template, template_hash, rubric_ref, _, source, expected = version
            self.rubric_refs.add(rubric_ref)
            self.judge_models.add((judge, model, template, template_hash))
            if not kept:
                continue
            raters = judge_raters(judge, expected, self.score)
            self.raters.update(raters)
            self.versions.setdefault(judge, set()).add(version[1:6])
            if source is not None:
                self.sources.setdefault(judge, set()).add(source)
            if is_stand_in(model):  # by its route, whatever its name
                self.stand_ins.update(raters)

    def _attributes(self, key: tuple[str, str | None, str]) -> dict:
        """The answer's attributes (the JSON text of `key`) with its candidate model."""
        found = self._shared.get(key)
        if found is None:
            _, text, candidate_model = key
            found = {k: v for k, v in json.loads(text or "{}").items() if k != "item_id"}
            found["candidate_model"] = candidate_model
            self._shared[key] = found
        return found

    def _marks(self, key: tuple[str, str | None]) -> dict[str, bool] | None:
        """Criterion id -> met, from the judgment's criteria (the JSON text of `key`)."""
        if key not in self._shared:
            criteria = json.loads(key[1]) if key[1] else []
            marks = {c["id"]: bool(c["met"]) for c in criteria or [] if "id" in c}
            self._shared[key] = marks or None
        return self._shared[key]


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


def with_rubric_weights(
    options: CalibrationOptions, inputs: dict[str, Any], find: Callable[[str], Any]
) -> CalibrationOptions:
    """Without weights given, the criterion weights of the rubric the judgments used, when
    they all used one rubric version (so per-criterion points at stake are known). `find`
    gives the rubric of a reference (the database's copy, or the bundled one for a file
    report), or None when it has none."""
    refs = inputs.get("rubric_versions") or []
    if options.criterion_weights or len(refs) != 1:
        return options
    rubric = find(refs[0])
    if rubric is None:
        return options
    return options.model_copy(update={"criterion_weights": criterion_weights(rubric)})


def with_stored_rubric_weights(
    session: Session, project: str, options: CalibrationOptions, inputs: dict[str, Any]
) -> CalibrationOptions:
    """`with_rubric_weights` from the rubrics stored in `project`."""

    def stored(ref: str) -> Any:
        try:
            return get_rubric(session, project, ref)
        except RubricNotFound:
            return None

    return with_rubric_weights(options, inputs, stored)


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
    scope, oldest first, for the trend section: each report's stored history point (a few
    hundred bytes), never the report with its HTML (a nightly read 60 whole reports, +340 MB
    with 373 stored; issue 39). Reports stored before points existed (migration 0012) have
    none: their point is worked out from their JSON, as it was for every report before."""
    found = session.execute(
        select(
            CalibrationReportRow.id,
            CalibrationReportRow.window_end,
            CalibrationReportRow.created_at,
            ReportPointRow.point,
        )
        .outerjoin(ReportPointRow, ReportPointRow.report_id == CalibrationReportRow.id)
        .where(
            CalibrationReportRow.project == project,
            CalibrationReportRow.kind == "nightly",
            CalibrationReportRow.scope == scope,
        )
        .order_by(CalibrationReportRow.created_at.desc(), CalibrationReportRow.id.desc())
        .limit(limit)
    ).all()
    return [
        point if point is not None else _point_of(session, report_id, end or created)
        for report_id, end, created, point in reversed(found)
    ]


def _point_of(session: Session, report_id: str, at: datetime) -> dict[str, Any]:
    """The history point of a report stored without one, from its JSON alone (not its HTML
    and Markdown)."""
    report = session.scalar(
        select(CalibrationReportRow.report).where(CalibrationReportRow.id == report_id)
    )
    return history_point(report, at.isoformat(), report_id)


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
