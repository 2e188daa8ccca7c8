"""Answers and items are inserted in content-hash order (service/stores/answers.py): two
transactions inserting shared rows lock them in one order, so on PostgreSQL they wait for
each other instead of deadlocking; and in one statement per table, not one per row. Checked
on the statements the database receives."""

from __future__ import annotations

from sqlalchemy import event

from judges import AnswerRecord, GradeRequest
from rubrics import library_rubric
from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.stores.answers import ensure_responses


def test_items_and_answers_are_inserted_in_hash_order(migrated_db):
    ids, statements = _ensure_new_answers(migrated_db, 12)
    assert len(set(ids)) == 12
    assert set(statements) == {"items", "responses"}
    for table, sent in statements.items():
        hashes = [h for statement in sent for h in statement]
        assert len(hashes) == 12, table
        assert hashes == sorted(hashes), f"{table} inserted out of hash order"


def test_new_answers_are_inserted_in_one_statement_per_table(migrated_db):
    """Asking for the inserted ids in the rows' order made SQLAlchemy send one INSERT per
    row: a 6,000-answer regrade sent 6,000 (issue 40)."""
    ids, statements = _ensure_new_answers(migrated_db, 40)
    assert len(set(ids)) == 40
    assert {table: len(sent) for table, sent in statements.items()} == {
        "items": 1,
        "responses": 1,
    }


def _ensure_new_answers(database_url, count: int) -> tuple[list[int], dict[str, list[list[str]]]]:
    """`ensure_responses` of `count` new answers to as many new questions: the response ids,
    and the content hashes each INSERT statement sent, by table."""
    engine = make_engine(database_url)
    statements: dict[str, list[list[str]]] = {}

    def record(conn, cursor, statement, parameters, context, executemany) -> None:
        table = next((t for t in ("items", "responses") if f"INSERT INTO {t} " in statement), None)
        if table is not None:
            statements.setdefault(table, []).append(_hashes_in(parameters))

    event.listen(engine, "before_cursor_execute", record)
    rubric = library_rubric("iraqi-linguistic-shaku-maku")
    requests = [
        GradeRequest.from_answer(
            rubric,
            AnswerRecord(
                item_id=f"i{k}", prompt=f"سؤال {k}", response=f"جواب {k}", candidate_model="m"
            ),
            None,
        )
        for k in range(count)
    ]
    with session_scope(make_sessionmaker(engine)) as session:
        ids = ensure_responses(session, "default", requests)
    return ids, statements


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
