"""Bytes per stored judgment on SQLite and PostgreSQL, as stored and after `qadi db retain`
drops raw replies and rationales (issue 39), over a database from tests/perf/judgment_db.py
(each judgment with a ~600-character Arabic rationale and a ~400-character raw reply, as a
1-5 rating with a short explanation has; answers, items and 5% SME grades included).

Run: PYTHONPATH=. .venv/bin/python tests/perf/bench_storage.py --judgments 100000 \
       [--postgres postgresql+psycopg://postgres@127.0.0.1:54360/qadi_test]
The PostgreSQL database given is emptied first (its public schema dropped).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from sqlalchemy import create_engine, func, select, text

from service.db.engine import make_engine, make_sessionmaker
from service.db.schema import Base, JudgmentRow
from service.stores.judgments import drop_raw_text
from tests.perf.judgment_db import populate


def size(url: str) -> int:
    """The database's bytes once compacted: the SQLite file after VACUUM, or the tables and
    indexes of PostgreSQL after VACUUM FULL."""
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            if url.startswith("sqlite"):
                connection.execute(text("VACUUM"))
                return Path(url.removeprefix("sqlite:///")).stat().st_size
            connection.execute(text("VACUUM FULL"))
            tables = [t.name for t in Base.metadata.sorted_tables]
            return sum(
                connection.execute(text(f"SELECT pg_total_relation_size('{t}')")).scalar() or 0
                for t in tables
            )
    finally:
        engine.dispose()


def empty_postgres(url: str) -> None:
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text("DROP SCHEMA public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))
    engine.dispose()


def measure(url: str, judgments: int) -> str:
    populate(url, judgments)
    engine = make_engine(url)
    with engine.connect() as connection:
        count = connection.execute(select(func.count()).select_from(JudgmentRow)).scalar()
    stored = size(url)
    _, dropped = drop_raw_text(make_sessionmaker(engine), 0)  # every judgment: all older
    engine.dispose()
    kept = size(url)
    return (
        f"{url.split(':')[0].split('+')[0]:10s} {count} judgments: {stored / count:7.0f} bytes each as stored, "
        f"{kept / count:7.0f} after retention ({dropped} trimmed; {kept / stored:.2f} of the size)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--judgments", type=int, default=100_000)
    parser.add_argument("--postgres", help="an empty (it is emptied) PostgreSQL database URL")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(measure(f"sqlite:///{Path(tmp) / 'storage.db'}", args.judgments))
    if args.postgres:
        empty_postgres(args.postgres)
        print(measure(args.postgres, args.judgments))


if __name__ == "__main__":
    main()
