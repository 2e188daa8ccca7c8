"""Benchmark runs and candidate answers in the database (the answer cache lives here)."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session, sessionmaker

from benchmarks.rows import AnswerRow
from service.db.engine import session_scope
from service.db.schema import BenchAnswerRow, BenchRunRow


class DbAnswerCache:
    """A cached answer is one that was produced without an error under the same key."""

    def __init__(self, factory: sessionmaker[Session]) -> None:
        self.factory = factory

    async def find(self, key: str) -> str | None:
        return await asyncio.to_thread(self._find, key)

    def _find(self, key: str) -> str | None:
        with session_scope(self.factory) as session:
            return session.scalar(
                select(BenchAnswerRow.output)
                .where(
                    BenchAnswerRow.cache_key == key,
                    BenchAnswerRow.error.is_(None),
                    BenchAnswerRow.output.is_not(None),
                )
                .limit(1)
            )


class DbRunStore:
    """`benchmarks.suite.RunStore` over the bench_runs and bench_answers tables."""

    def __init__(self, factory: sessionmaker[Session]) -> None:
        self.factory = factory

    def create_run(self, suite: str, model: str, mode: str, seed: int) -> str:
        with session_scope(self.factory) as session:
            row = BenchRunRow(suite=suite, model=model, mode=mode, seed=seed, summary={})
            session.add(row)
            session.flush()
            return row.id

    def save_answers(self, run_id: str, task: str, rows: list[AnswerRow]) -> None:
        if not rows:
            return
        with session_scope(self.factory) as session:
            session.execute(
                insert(BenchAnswerRow),
                [{"run_id": run_id, "task": task, **row.stored()} for row in rows],
            )

    def save_summary(self, run_id: str, summary: dict[str, Any]) -> None:
        with session_scope(self.factory) as session:
            session.get(BenchRunRow, run_id).summary = summary


def load_run(factory, run_id: str) -> BenchRunRow | None:
    with session_scope(factory) as session:
        return session.get(BenchRunRow, run_id)


def list_runs(factory, limit: int = 50) -> list[BenchRunRow]:
    """The newest runs first."""
    with session_scope(factory) as session:
        return list(
            session.scalars(
                select(BenchRunRow).order_by(BenchRunRow.created_at.desc()).limit(limit)
            )
        )
