"""Who grades which queued item: the label slots of the SME queue (service/stores/sme_queue.py)
and what an SME does with one (open, autosave, submit, cannot judge, skip).

An item wants `labels_wanted` labels (2 for the overlap share). Each label is a slot row,
unique per (item, slot) and per (item, SME): whatever browsers do, two SMEs cannot hold the
same slot, one SME cannot hold two slots of an item, and an item never gets more labels than
it wants. A slot reserved past its time may be taken by the next SME who asks (one
conditional UPDATE, one winner); until then it is still hers, draft included. A submitted
label is a grade (service/stores/grades.py) with the queue's design: the SME as rater, the
inclusion probability, the queue reason, per-criterion marks and her rationale. "Cannot
judge" closes her slot with her reason and frees its place for another SME; it is never a
score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, exists, func, or_, select, union_all, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from calibration.formats.interchange import GradeRow
from rubrics import Rubric
from rubrics.labels import HumanLabel, grade_of
from service.db.schema import (
    HumanGradeRow,
    ItemRow,
    ResponseRow,
    SmeAssignmentRow,
    SmeQueueRow,
    utcnow,
)
from service.stores.grades import upsert_grades
from service.stores.smes import Person

CANDIDATES = 20  # open items tried per reservation before giving up (others took them)
COUNTED = 1000  # open items counted for her progress: "1,000 or more" past it


@dataclass(frozen=True)
class Assignment:
    """A slot an SME holds, with everything her grading page shows: never a judge's output."""

    id: int
    queue_id: int
    status: str
    reserved_until: datetime | None
    item_id: str
    rubric_ref: str
    reason: str
    route_tag: str
    prompt: str
    reference: str | None
    response: str
    attributes: dict[str, Any]
    draft: dict[str, Any] | None
    note: str | None


@dataclass(frozen=True)
class Progress:
    done: int  # labels she submitted
    today: int
    cannot: int  # items she could not judge
    waiting: int  # open items she could get next, up to COUNTED


def _takeable(now: datetime):
    """A slot that counts against the item's labels: submitted, or reserved and in time."""
    return or_(
        SmeAssignmentRow.status == "submitted",
        and_(SmeAssignmentRow.status == "reserved", SmeAssignmentRow.reserved_until >= now),
    )


def _open_for(person: Person, now: datetime, tags: Sequence[str] | None = None):
    """The queue's open items `person` may get: her expertise (or just `tags` of it), not
    hers already, not an item she graded under another reason, and a label still wanted."""
    mine = exists().where(
        SmeAssignmentRow.queue_id == SmeQueueRow.id, SmeAssignmentRow.sme_id == person.id
    )
    graded = exists().where(
        HumanGradeRow.project == SmeQueueRow.project,
        HumanGradeRow.item_id == SmeQueueRow.item_id,
        HumanGradeRow.rater == person.handle,
    )
    taken = (
        select(func.count())
        .where(SmeAssignmentRow.queue_id == SmeQueueRow.id, _takeable(now))
        .scalar_subquery()
    )
    return and_(
        SmeQueueRow.project == person.project,
        SmeQueueRow.status == "open",
        SmeQueueRow.route_tag.in_(["", *person.tags] if tags is None else tags),
        ~mine,
        ~graded,
        taken < SmeQueueRow.labels_wanted,
    )


def current(session: Session, person: Person) -> int | None:
    """The slot she holds open, if any (she works on one item at a time)."""
    return session.scalar(
        select(SmeAssignmentRow.id)
        .where(SmeAssignmentRow.sme_id == person.id, SmeAssignmentRow.status == "reserved")
        .order_by(SmeAssignmentRow.id)
        .limit(1)
    )


def reserve_next(session: Session, person: Person, minutes: float) -> int | None:
    """Her open slot, renewed; else the next open item in the queue's order, reserved for
    her for `minutes`; None when nothing is left for her."""
    now = utcnow()
    until = now + timedelta(minutes=minutes)
    held = current(session, person)
    if held is not None:
        renew(session, person, held, minutes)
        return held
    candidates = _first_open(
        session, person, now, CANDIDATES, SmeQueueRow.id, SmeQueueRow.labels_wanted
    )
    for queue_id, wanted in candidates:
        claimed = _claim_slot(session, person, queue_id, wanted, now, until)
        if claimed is not None:
            return claimed
    return None


def _first_open(session: Session, person: Person, now: datetime, limit: int, *columns) -> list:
    """The first `limit` open items she may get, in the queue's order: one ordered scan of
    the (project, status, route_tag, order_key) index per expertise tag of hers, merged.
    A single query over all her tags at once cannot follow the index's order: PostgreSQL
    then sorted every open item of her tags (190 ms at 100,000 queued; 10 ms this way)."""
    parts = [
        select(*columns, SmeQueueRow.order_key.label("k"), SmeQueueRow.id.label("i"))
        .where(_open_for(person, now, [tag]))
        .order_by(SmeQueueRow.order_key, SmeQueueRow.id)
        .limit(limit)
        .subquery()
        for tag in ("", *person.tags)
    ]
    merged = union_all(*(select(part) for part in parts)).subquery()
    picked = session.execute(select(merged).order_by(merged.c.k, merged.c.i).limit(limit))
    return [row[: len(columns)] for row in picked]


def _her_open_slot(person: Person, assignment_id: int):
    """An UPDATE of the slot only while it is hers and open: every change an SME makes goes
    through it, so a slot another SME took over, or one she closed, is never changed."""
    return update(SmeAssignmentRow).where(
        SmeAssignmentRow.id == assignment_id,
        SmeAssignmentRow.sme_id == person.id,
        SmeAssignmentRow.status == "reserved",
    )


def renew(session: Session, person: Person, assignment_id: int, minutes: float) -> None:
    """She opened her item again: it stays hers for another `minutes`."""
    session.execute(
        _her_open_slot(person, assignment_id)
        .values(reserved_until=utcnow() + timedelta(minutes=minutes))
    )


def _claim_slot(
    session: Session, person: Person, queue_id: int, wanted: int, now: datetime, until: datetime
) -> int | None:
    """A free slot of the item (inserted), or one whose reservation ran out (taken over);
    None when the others hold every slot."""
    for slot in range(1, wanted + 1):
        try:
            with session.begin_nested():
                row = SmeAssignmentRow(
                    project=person.project,
                    queue_id=queue_id,
                    slot=slot,
                    sme_id=person.id,
                    status="reserved",
                    reserved_until=until,
                    created_at=now,
                )
                session.add(row)
                session.flush()
                return row.id
        except IntegrityError:
            pass  # the slot is held (or she holds another slot of this item)
        try:
            with session.begin_nested():
                taken = session.execute(
                    update(SmeAssignmentRow)
                    .where(
                        SmeAssignmentRow.queue_id == queue_id,
                        SmeAssignmentRow.slot == slot,
                        SmeAssignmentRow.status == "reserved",
                        SmeAssignmentRow.reserved_until < now,
                    )
                    .values(sme_id=person.id, reserved_until=until, draft=None, created_at=now)
                    .returning(SmeAssignmentRow.id)
                ).scalar()
        except IntegrityError:
            taken = None  # she holds another slot of this item
        if taken is not None:
            return taken
    return None


def assignment(session: Session, person: Person, assignment_id: int) -> Assignment | None:
    """Her slot with the item's texts; None when it is not hers (any more)."""
    found = session.execute(
        select(SmeAssignmentRow, SmeQueueRow, ResponseRow, ItemRow)
        .join(SmeQueueRow, SmeQueueRow.id == SmeAssignmentRow.queue_id)
        .join(ResponseRow, ResponseRow.id == SmeQueueRow.response_id)
        .join(ItemRow, ItemRow.id == ResponseRow.item_id)
        .where(SmeAssignmentRow.id == assignment_id, SmeAssignmentRow.sme_id == person.id)
    ).first()
    if found is None:
        return None
    slot, queued, response, item = found
    return Assignment(
        id=slot.id,
        queue_id=queued.id,
        status=slot.status,
        reserved_until=slot.reserved_until,
        item_id=queued.item_id,
        rubric_ref=queued.rubric_ref,
        reason=queued.reason,
        route_tag=queued.route_tag,
        prompt=item.prompt,
        reference=item.reference,
        response=response.text,
        attributes=queued.attributes or {},
        draft=slot.draft,
        note=slot.note,
    )


def save_draft(
    session: Session, person: Person, assignment_id: int, draft: dict, minutes: float
) -> bool:
    """Keep what she has marked so far (a refresh or a dropped connection loses nothing),
    and keep the item hers while she works; False when the slot is no longer hers to edit."""
    done = session.execute(
        _her_open_slot(person, assignment_id)
        .values(draft=draft, reserved_until=utcnow() + timedelta(minutes=minutes))
    )
    return done.rowcount == 1


def submit(
    session: Session, person: Person, assignment_id: int, label: HumanLabel, rubric: Rubric
) -> bool:
    """Her label becomes a grade, once: the slot moves from reserved to submitted in one
    conditional UPDATE, so a double submit (two tabs, a resent form) stores one grade.
    RubricError names what the label lacks. False when the slot is not hers or is closed."""
    graded = grade_of(rubric, label)  # before anything is written
    held = assignment(session, person, assignment_id)
    if held is None or held.status != "reserved":
        return False
    queued = session.get(SmeQueueRow, held.queue_id)
    now = utcnow()
    moved = session.execute(
        _her_open_slot(person, assignment_id)
        .values(status="submitted", submitted_at=now, draft=label.model_dump())
    )
    if moved.rowcount != 1:
        return False
    upsert_grades(session, person.project, [_grade_row(person, queued, graded, label)])
    grade_id = session.scalar(
        select(HumanGradeRow.id).where(
            HumanGradeRow.project == person.project,
            HumanGradeRow.item_id == queued.item_id,
            HumanGradeRow.rater == person.handle,
        )
    )
    session.execute(
        update(SmeAssignmentRow)
        .where(SmeAssignmentRow.id == assignment_id)
        .values(grade_id=grade_id)
    )
    _close_if_done(session, queued)
    return True


def _grade_row(person: Person, queued: SmeQueueRow, graded, label: HumanLabel) -> GradeRow:
    """The grade in the interchange format, with the design the estimates weight by."""
    metadata = queued.attributes or {}
    attributes = {**{k: str(v) for k, v in metadata.items()}, "queue_reason": queued.reason}
    if queued.inclusion_stratum:
        attributes["inclusion_stratum"] = queued.inclusion_stratum
    return GradeRow(
        item_id=queued.item_id,
        rater=person.handle,
        rater_kind="human",
        score=graded.score,
        criteria=graded.criteria,
        inclusion_prob=queued.inclusion_prob,
        attributes=attributes,
        rationale=label.rationale or None,
    )


def _close_if_done(session: Session, queued: SmeQueueRow) -> None:
    submitted = session.scalar(
        select(func.count()).where(
            SmeAssignmentRow.queue_id == queued.id, SmeAssignmentRow.status == "submitted"
        )
    )
    if submitted >= queued.labels_wanted:
        queued.status = "done"


def cannot_judge(session: Session, person: Person, assignment_id: int, reason: str) -> bool:
    """She cannot grade this item (not her dialect, the answer is unreadable, ...): her slot
    closes with her reason and its place goes back to the queue for another SME (the slot
    number moves out of the item's range). No grade, no score."""
    done = session.execute(
        _her_open_slot(person, assignment_id)
        .values(
            status="cannot_judge",
            note=reason,
            submitted_at=utcnow(),
            slot=-assignment_id,
        )
    )
    return done.rowcount == 1


def skip(session: Session, person: Person, assignment_id: int) -> None:
    """She passes on the item: its place goes back to the queue for another SME, and she is
    not given it again."""
    session.execute(
        _her_open_slot(person, assignment_id)
        .values(status="skipped", submitted_at=utcnow(), slot=-assignment_id)
    )


def progress(session: Session, person: Person) -> Progress:
    now = utcnow()
    mine = select(func.count()).where(SmeAssignmentRow.sme_id == person.id)
    submitted = mine.where(SmeAssignmentRow.status == "submitted")
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    # counted up to COUNTED: an exact count of a long queue costs a scan of it per page
    open_ids = select(SmeQueueRow.id).where(_open_for(person, now)).limit(COUNTED).subquery()
    return Progress(
        done=session.scalar(submitted) or 0,
        today=session.scalar(submitted.where(SmeAssignmentRow.submitted_at >= midnight)) or 0,
        cannot=session.scalar(mine.where(SmeAssignmentRow.status == "cannot_judge")) or 0,
        waiting=session.scalar(select(func.count()).select_from(open_ids)) or 0,
    )


def upcoming(session: Session, person: Person, limit: int) -> list[dict[str, Any]]:
    """The next open items she would get, in order (why each is queued, its expertise)."""
    columns = (SmeQueueRow.reason, SmeQueueRow.route_tag, SmeQueueRow.created_at)
    rows = _first_open(session, person, utcnow(), limit, *columns)
    return [{"reason": r, "route_tag": t, "queued_at": c} for r, t, c in rows]


def recent(session: Session, person: Person, limit: int) -> list[dict[str, Any]]:
    """Her latest closed labels: the item, what she gave, when."""
    rows = session.execute(
        select(SmeAssignmentRow, SmeQueueRow.item_id, HumanGradeRow.score)
        .join(SmeQueueRow, SmeQueueRow.id == SmeAssignmentRow.queue_id)
        .outerjoin(HumanGradeRow, HumanGradeRow.id == SmeAssignmentRow.grade_id)
        .where(
            SmeAssignmentRow.sme_id == person.id,
            SmeAssignmentRow.status.in_(("submitted", "cannot_judge")),
        )
        .order_by(SmeAssignmentRow.submitted_at.desc(), SmeAssignmentRow.id.desc())
        .limit(limit)
    ).all()
    return [
        {"item_id": item, "status": slot.status, "score": score, "note": slot.note,
         "at": slot.submitted_at}
        for slot, item, score in rows
    ]  # fmt: skip
