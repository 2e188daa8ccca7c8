"""The SME queue's label slots (service/stores/assignments.py), on SQLite and PostgreSQL:
two SMEs never hold the same single-label item, an overlap item gets exactly two labels from
two SMEs, a double submit stores one grade, a reservation past its time goes to the next
SME, "cannot judge" stores the reason and no score, expertise tags route items, and a label
is a grade with its design. Items are queued by POST /judge (tests/integration/
workbench_setup.py)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from rubrics import RubricError
from rubrics.labels import HumanLabel
from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.db.schema import HumanGradeRow, SmeAssignmentRow, SmeQueueRow, utcnow
from service.stores import assignments
from service.stores.rubrics import get_rubric
from service.stores.smes import add_person
from tests.integration.test_service_api import IRAQI
from tests.integration.workbench_setup import (
    criteria_body,
    queue_items,
    scale_body,
    workbench_service,
)

MINUTES = 30


@pytest.fixture
def world(migrated_db, llm_server, tmp_path):
    """A service, its sessions, and a way to add SMEs."""

    def make(overlap: float = 0.0):
        service = workbench_service(migrated_db, llm_server, tmp_path, sme_overlap_share=overlap)
        sessions = make_sessionmaker(make_engine(migrated_db))
        return service, sessions

    return make


def person(sessions, handle: str, tags=("dialect=iraqi", "dialect=gulf")):
    with session_scope(sessions) as session:
        return add_person(session, "default", handle, tags=list(tags))


def reserve(sessions, who) -> int | None:
    with session_scope(sessions) as session:
        return assignments.reserve_next(session, who, MINUTES)


def label_for(sessions, who, slot: int, rationale: str = "clear") -> HumanLabel:
    with session_scope(sessions) as session:
        held = assignments.assignment(session, who, slot)
    if held.rubric_ref.startswith("iraqi"):
        return HumanLabel(marks=IRAQI, rationale=rationale)
    return HumanLabel(ratings={"accuracy": 3}, rationale=rationale)


def submit(sessions, who, slot: int, label: HumanLabel | None = None) -> bool:
    label = label or label_for(sessions, who, slot)
    with session_scope(sessions) as session:
        held = assignments.assignment(session, who, slot)
        rubric = get_rubric(session, "default", held.rubric_ref)
        return assignments.submit(session, who, slot, label, rubric)


def item_of(sessions, who, slot: int) -> str:
    with session_scope(sessions) as session:
        return assignments.assignment(session, who, slot).item_id


def test_two_smes_never_get_the_same_single_label_item(world):
    service, sessions = world()
    queue_items(service, [criteria_body(f"c{i}") for i in range(6)])
    ada, bea = person(sessions, "ada"), person(sessions, "bea")
    seen = {"ada": [], "bea": []}
    while True:
        moved = False
        for handle, who in (("ada", ada), ("bea", bea)):
            slot = reserve(sessions, who)
            if slot is not None:
                seen[handle].append(item_of(sessions, who, slot))
                assert submit(sessions, who, slot)
                moved = True
        if not moved:
            break
    assert not set(seen["ada"]) & set(seen["bea"])
    assert sorted(seen["ada"] + seen["bea"]) == [f"c{i}" for i in range(6)]


def test_concurrent_reservations_hold_each_slot_once(world):
    """Eight SMEs ask at once for three single-label items: three get one each."""
    service, sessions = world()
    queue_items(service, [criteria_body(f"c{i}") for i in range(3)])
    smes = [person(sessions, f"sme-{k}") for k in range(8)]
    got: dict[str, int | None] = {}
    barrier = threading.Barrier(len(smes))

    def ask(who):
        barrier.wait()
        for _ in range(5):  # SQLite's writer lock may turn one away: she asks again
            try:
                got[who.handle] = reserve(sessions, who)
                return
            except Exception:  # noqa: BLE001 - the busy database, asked again
                continue

    threads = [threading.Thread(target=ask, args=(who,)) for who in smes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    held = [slot for slot in got.values() if slot is not None]
    assert len(held) == 3
    with session_scope(sessions) as session:
        per_item = session.execute(
            select(SmeAssignmentRow.queue_id, func.count()).group_by(SmeAssignmentRow.queue_id)
        ).all()
    assert sorted(n for _, n in per_item) == [1, 1, 1]


def test_an_overlap_item_gets_exactly_two_labels_from_two_smes(world):
    service, sessions = world(overlap=1.0)
    queue_items(service, [criteria_body("both")])
    ada, bea, cai = (person(sessions, h) for h in ("ada", "bea", "cai"))
    first, second = reserve(sessions, ada), reserve(sessions, bea)
    assert first is not None and second is not None and first != second
    assert reserve(sessions, cai) is None  # two labels wanted, both slots held
    assert submit(sessions, ada, first) and submit(sessions, bea, second)
    assert reserve(sessions, cai) is None
    with session_scope(sessions) as session:
        raters = sorted(session.scalars(select(HumanGradeRow.rater)))
        status = session.scalar(select(SmeQueueRow.status))
    assert raters == ["ada", "bea"] and status == "done"


def test_a_double_submit_stores_one_grade(world):
    service, sessions = world()
    queue_items(service, [criteria_body("once")])
    ada = person(sessions, "ada")
    slot = reserve(sessions, ada)
    assert submit(sessions, ada, slot) is True
    assert submit(sessions, ada, slot) is False  # the second click finds it submitted
    with session_scope(sessions) as session:
        assert session.scalar(select(func.count()).select_from(HumanGradeRow)) == 1


def test_a_reservation_past_its_time_goes_to_the_next_sme(world):
    service, sessions = world()
    queue_items(service, [criteria_body("slow")])
    ada, bea = person(sessions, "ada"), person(sessions, "bea")
    slot = reserve(sessions, ada)
    assert reserve(sessions, bea) is None  # still ada's
    with session_scope(sessions) as session:
        assert assignments.save_draft(session, ada, slot, {"marks": {"shaku_meaning": True}}, 30)
        session.execute(
            update(SmeAssignmentRow).values(reserved_until=utcnow() - timedelta(minutes=1))
        )
    taken = reserve(sessions, bea)
    assert taken == slot  # the same slot, now bea's, her draft not carried over
    with session_scope(sessions) as session:
        assert assignments.assignment(session, bea, taken).draft is None
        assert assignments.assignment(session, ada, slot) is None
    with session_scope(sessions) as session:  # ada's late submit lands nowhere
        rubric = get_rubric(session, "default", "iraqi-linguistic-shaku-maku")
        assert assignments.submit(session, ada, slot, HumanLabel(marks=IRAQI), rubric) is False
    assert submit(sessions, bea, taken)


def test_her_own_reservation_past_its_time_is_still_hers_until_taken(world):
    service, sessions = world()
    queue_items(service, [criteria_body("resume")])
    ada = person(sessions, "ada")
    slot = reserve(sessions, ada)
    with session_scope(sessions) as session:
        assignments.save_draft(session, ada, slot, {"rationale": "half done"}, 30)
        session.execute(
            update(SmeAssignmentRow).values(reserved_until=utcnow() - timedelta(minutes=5))
        )
    assert reserve(sessions, ada) == slot
    with session_scope(sessions) as session:
        assert assignments.assignment(session, ada, slot).draft == {"rationale": "half done"}


def test_cannot_judge_keeps_the_reason_stores_no_score_and_frees_the_item(world):
    service, sessions = world()
    queue_items(service, [criteria_body("hard")])
    ada, bea = person(sessions, "ada"), person(sessions, "bea")
    slot = reserve(sessions, ada)
    with session_scope(sessions) as session:
        assert assignments.cannot_judge(session, ada, slot, "not my dialect")
    with session_scope(sessions) as session:
        assert session.scalar(select(func.count()).select_from(HumanGradeRow)) == 0
        closed = session.get(SmeAssignmentRow, slot)
        assert (closed.status, closed.note) == ("cannot_judge", "not my dialect")
    assert reserve(sessions, ada) is None  # not offered to her again
    other = reserve(sessions, bea)
    assert other is not None and submit(sessions, bea, other)


def test_an_item_goes_only_to_an_sme_with_its_expertise(world):
    service, sessions = world()
    queue_items(service, [scale_body("egy-1", dialect="egy")])
    gulf = person(sessions, "gulf-sme", tags=("dialect=gulf",))
    egy = person(sessions, "egy-sme", tags=("dialect=egy",))
    assert reserve(sessions, gulf) is None
    assert reserve(sessions, egy) is not None


def test_a_label_is_a_grade_with_its_design_marks_and_rationale(world):
    service, sessions = world()
    queue_items(service, [criteria_body("c1"), scale_body("s1")])
    ada = person(sessions, "ada")
    done = {}
    while (slot := reserve(sessions, ada)) is not None:
        item = item_of(sessions, ada, slot)
        assert submit(sessions, ada, slot, label_for(sessions, ada, slot, f"why {item}"))
        done[item] = slot
    with session_scope(sessions) as session:
        grades = {g.item_id: g for g in session.scalars(select(HumanGradeRow))}
    criteria, scale = grades["c1"], grades["s1"]
    assert (criteria.rater, criteria.rater_kind, criteria.inclusion_prob) == ("ada", "human", 1.0)
    assert criteria.criteria == IRAQI and criteria.score == pytest.approx(500 / 6)  # 5 of 6 points
    assert criteria.attributes["queue_reason"] == "escalated"
    assert criteria.attributes["dialect"] == "iraqi" and criteria.rationale == "why c1"
    assert scale.score == 3.0 and scale.criteria is None and scale.rationale == "why s1"


def test_an_incomplete_label_is_refused_and_nothing_is_stored(world):
    service, sessions = world()
    queue_items(service, [criteria_body("c1")])
    ada = person(sessions, "ada")
    slot = reserve(sessions, ada)
    with pytest.raises(RubricError, match="missing verdicts for"):
        submit(sessions, ada, slot, HumanLabel(marks={"shaku_meaning": True}))
    with session_scope(sessions) as session:
        assert session.scalar(select(func.count()).select_from(HumanGradeRow)) == 0
        assert session.get(SmeAssignmentRow, slot).status == "reserved"


def test_a_calibration_sample_drawn_from_stored_judgments_is_graded_with_its_design(
    world, migrated_db
):
    """`qadi sme sample` draws items from the stored judgments as `qadi sme queue` does and
    queues them for the workbench; the label carries the draw's probability and stratum."""
    from tests.conftest import run_cli

    service, sessions = world()
    for i in range(10):  # graded, no trust: nothing escalated
        body = {**criteria_body(f"g{i}"), "trust": None}
        assert service.post("/judge", json=body).status_code == 200
    env = {"QADI_DATABASE_URL": migrated_db}
    done = run_cli("sme", "sample", "--rubric", "iraqi-linguistic-shaku-maku", "--n", "4",
                   env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "4 item(s) of iraqi-linguistic-shaku-maku@2 queued" in done.stdout
    ada = person(sessions, "ada")
    slot = reserve(sessions, ada)
    with session_scope(sessions) as session:
        assert assignments.assignment(session, ada, slot).reason == "sample"
    assert submit(sessions, ada, slot)
    with session_scope(sessions) as session:
        [grade] = session.scalars(select(HumanGradeRow)).all()
        queued = session.scalars(select(SmeQueueRow.reason)).all()
    assert queued == ["sample"] * 4
    assert grade.inclusion_prob == pytest.approx(4 / 10)  # 4 of the stratum's 10 items
    assert grade.attributes["inclusion_stratum"] == "all"
    assert grade.attributes["queue_reason"] == "sample"


def test_the_rationale_comes_back_with_the_grade_through_the_api(world):
    service, sessions = world()
    queue_items(service, [criteria_body("c1")])
    ada = person(sessions, "ada")
    slot = reserve(sessions, ada)
    assert submit(sessions, ada, slot, HumanLabel(marks=IRAQI, rationale="شرح دقيق"))
    [listed] = service.get("/grades", scope="grades").json()["items"]
    assert (listed["rater"], listed["rationale"]) == ("ada", "شرح دقيق")
    csv_text = service.get("/grades", scope="grades", params={"format": "csv"}).text
    assert "rationale" in csv_text.splitlines()[0] and "شرح دقيق" in csv_text
