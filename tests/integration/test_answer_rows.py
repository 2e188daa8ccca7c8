"""Answers and items are inserted in content-hash order (service/stores/answers.py): two
transactions inserting shared rows lock them in one order, so on PostgreSQL they wait for
each other instead of deadlocking. Checked on the statements the database receives."""

from __future__ import annotations

from sqlalchemy import event

from judges import AnswerRecord, GradeRequest
from rubrics import library_rubric
from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.stores.answers import ensure_responses


def test_items_and_answers_are_inserted_in_hash_order(migrated_db):
    engine = make_engine(migrated_db)
    inserted: dict[str, list[str]] = {}

    def record(conn, cursor, statement, parameters, context, executemany) -> None:
        table = next((t for t in ("items", "responses") if f"INSERT INTO {t} " in statement), None)
        if table is not None:
            inserted.setdefault(table, []).extend(_hashes_in(parameters))

    event.listen(engine, "before_cursor_execute", record)
    rubric = library_rubric("iraqi-linguistic-shaku-maku")
    requests = [
        GradeRequest.from_answer(
            rubric,
            AnswerRecord(item_id=f"i{k}", prompt=f"سؤال {k}", response=f"جواب {k}",
                         candidate_model="m"),
            None,
        )  # fmt: skip
        for k in range(12)
    ]
    with session_scope(make_sessionmaker(engine)) as session:
        ids = ensure_responses(session, "default", requests)
    assert len(set(ids)) == 12
    assert set(inserted) == {"items", "responses"}
    for table, hashes in inserted.items():
        assert len(hashes) == 12, table
        assert hashes == sorted(hashes), f"{table} inserted out of hash order"


def _hashes_in(parameters) -> list[str]:
    """The content hashes among a statement's bound parameters, in order, however the
    driver receives them (a dict or a tuple per row, a list of rows, or one flat tuple for
    a multi-row VALUES: SQLAlchemy's insertmanyvalues)."""
    if isinstance(parameters, str):
        return [parameters] if parameters.startswith("sha256:") else []
    if isinstance(parameters, dict):
        parameters = list(parameters.values())
    if isinstance(parameters, list | tuple):
        return [h for value in parameters for h in _hashes_in(value)]
    return []
