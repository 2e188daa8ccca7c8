"""Storing one save's new answers (issue 40): `ensure_responses` of --answers new answers to
as many new questions, in one transaction, with `insert_missing`'s statement as it is and as
it was before 7ddf0f4 (its RETURNING rows asked for in the parameters' order, which made
SQLAlchemy send one INSERT per row), alternated --rounds times on SQLite and, with
--postgres URL, on PostgreSQL: the statements sent, the wall and process CPU milliseconds of
a save (the median round), and the ratio of the two statements' figures.

Run: PYTHONPATH=. .venv/bin/python tests/perf/bench_answer_inserts.py [--answers 500]
       [--rounds 5] [--postgres postgresql+psycopg://postgres@127.0.0.1:54329/qadi_test]
The PostgreSQL database given is emptied first (its public schema dropped).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from sqlalchemy import Insert, Table, event
from sqlalchemy.dialects import postgresql, sqlite

from judges import AnswerRecord, GradeRequest
from rubrics import library_rubric
from service.db.engine import make_engine, make_sessionmaker, session_scope, upgrade
from service.stores import chunks
from service.stores.answers import ensure_responses
from tests.perf.bench_regrade import alternated
from tests.perf.bench_storage import empty_postgres

RUBRIC = library_rubric("iraqi-linguistic-shaku-maku")


def in_parameters_order(dialect_name: str, table: Table) -> Insert:
    """`insert_missing`'s statement as it was before 7ddf0f4."""
    dialect = postgresql if dialect_name == "postgresql" else sqlite
    return (
        dialect.insert(table)
        .on_conflict_do_nothing()
        .returning(table.c.content_hash, table.c.id, sort_by_parameter_order=True)
    )


STATEMENTS = {"as it is": chunks._insert_skipping, "in parameters' order": in_parameters_order}


def one_save(factory, engine, tag: str, count: int) -> tuple[int, float, float]:
    """(statements, wall ms, process CPU ms) of storing `count` new answers in one
    transaction."""
    requests = [
        GradeRequest.from_answer(
            RUBRIC,
            AnswerRecord(
                item_id=f"{tag}-{k}",
                prompt=f"سؤال {tag} {k}",
                response=f"جواب {k}",
                candidate_model="m",
            ),
        )
        for k in range(count)
    ]
    sent = []

    def count_statement(*_: object) -> None:
        sent.append(1)

    event.listen(engine, "before_cursor_execute", count_statement)
    started, cpu = time.perf_counter(), time.process_time()
    with session_scope(factory) as session:
        ensure_responses(session, "default", requests)
    wall, used = time.perf_counter() - started, time.process_time() - cpu
    event.remove(engine, "before_cursor_execute", count_statement)
    return len(sent), 1000 * wall, 1000 * used


def measure(url: str, answers: int, rounds: int) -> None:
    upgrade(url)
    engine = make_engine(url)
    factory = make_sessionmaker(engine)
    figures: dict[str, list[tuple[int, float, float]]] = {label: [] for label in STATEMENTS}
    try:
        one_save(factory, engine, "warm-up", answers)
        for round_ in range(rounds):
            for label, statement in alternated(round_, STATEMENTS):
                chunks._insert_skipping = statement
                figures[label].append(one_save(factory, engine, f"{round_}-{label}", answers))
    finally:
        chunks._insert_skipping = STATEMENTS["as it is"]
        engine.dispose()
    print(f"{engine.dialect.name}: {answers} new answers a save, {rounds} rounds alternated")
    medians = {
        label: [statistics.median(run[i] for run in runs) for i in range(3)]
        for label, runs in figures.items()
    }
    base = medians["in parameters' order"]
    for label, (statements, wall, cpu) in medians.items():
        print(
            f"  {label:22s}: {statements:5.0f} statements, {wall:8.1f} ms wall "
            f"({wall / base[1]:.2f}), {cpu:8.1f} ms CPU ({cpu / base[2]:.2f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--postgres", help="a PostgreSQL database to empty and use")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        measure(f"sqlite:///{Path(tmp) / 'qadi.db'}", args.answers, args.rounds)
    if args.postgres:
        empty_postgres(args.postgres)
        measure(args.postgres, args.answers, args.rounds)


if __name__ == "__main__":
    main()
