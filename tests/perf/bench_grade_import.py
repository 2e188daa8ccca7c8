"""Grade import speed: 30,000 rows as one CSV upload to POST /grades, through the real app
(in-process ASGI client, API key, migrated database), first as inserts, then the same file
again as updates. Target (issue 13.9): <= 2 s each on SQLite and PostgreSQL.

Run: .venv/bin/python tests/perf/bench_grade_import.py [--rows 30000] [--postgres URL]
(PostgreSQL also when QADI_TEST_POSTGRES_URL is set; its schema is dropped and re-created.)
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient

from service.app import create_app
from service.db.engine import make_engine, make_sessionmaker, session_scope, upgrade
from service.settings import Settings
from service.stores.keys import create_key


def grades_csv(n_rows: int) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["item_id", "rater", "rater_kind", "score", "criteria", "dialect"])
    dialects = ["egyptian", "iraqi", "levantine", "gulf"]
    for n in range(n_rows):
        criteria = '{"meaning": true, "usage": false}' if n % 2 else ""
        writer.writerow(
            [f"item-{n // 3}", f"sme-{n % 3}", "human", n % 5 + 1, criteria, dialects[n % 4]]
        )
    return out.getvalue().encode()


def import_seconds(database_url: str, body: bytes) -> list[tuple[float, float, dict]]:
    """For the first upload (inserts) and the second (updates) of `body` to a migrated
    database at `database_url`: (wall seconds, this process's CPU seconds, the answer).
    CPU time is quoted too because the wall time on a shared machine includes waiting."""
    upgrade(database_url)
    app = create_app(Settings(database_url=database_url, max_body_bytes=64 * 1024 * 1024))
    with session_scope(make_sessionmaker(make_engine(database_url))) as session:
        key = create_key(session, "bench", ["grades"])
    headers = {"Authorization": f"Bearer {key}", "content-type": "text/csv"}
    runs = []
    with TestClient(app) as client:
        for _ in range(2):
            wall, cpu = time.perf_counter(), time.process_time()
            response = client.post("/grades", content=body, headers=headers)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            response.raise_for_status()
            runs.append((wall, cpu, response.json()))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=30_000)
    parser.add_argument("--postgres", default=os.environ.get("QADI_TEST_POSTGRES_URL"))
    args = parser.parse_args()
    body = grades_csv(args.rows)
    with tempfile.TemporaryDirectory() as directory:
        targets = [("sqlite", f"sqlite:///{Path(directory) / 'bench.db'}")]
        if args.postgres:
            sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
            from tests.conftest import reset_postgres

            reset_postgres(args.postgres)
            targets.append(("postgresql", args.postgres))
        for name, url in targets:
            for what, (wall, cpu, answer) in zip(
                ("import", "re-import"), import_seconds(url, body), strict=True
            ):
                print(
                    f"{name} {what} of {args.rows} rows: {wall:.2f} s wall, {cpu:.2f} s CPU {answer}"
                )


if __name__ == "__main__":
    main()
