"""Benchmark runs and candidate answers in the database (the answer cache lives here)."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session, sessionmaker

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


def create_run(factory, suite: str, model: str, mode: str, seed: int) -> str:
    with session_scope(factory) as session:
        row = BenchRunRow(suite=suite, model=model, mode=mode, seed=seed, summary={})
        session.add(row)
        session.flush()
        return row.id


def save_answers(factory, run_id: str, task: str, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    with session_scope(factory) as session:
        session.execute(
            insert(BenchAnswerRow),
            [
                {
                    "run_id": run_id,
                    "task": task,
                    "item_id": r["item_id"],
                    "unit": r["unit"],
                    "cache_key": r["cache_key"],
                    "prompt": r["prompt"],
                    "gold": r["gold"],
                    "output": r["output"],
                    "parsed": r["parsed"],
                    "correct": r["correct"],
                    "error": r["error"],
                    "groups": r["groups"],
                }
                for r in rows
            ],
        )


def save_summary(factory, run_id: str, summary: dict[str, Any]) -> None:
    with session_scope(factory) as session:
        session.get(BenchRunRow, run_id).summary = summary


def load_run(factory, run_id: str) -> BenchRunRow | None:
    with session_scope(factory) as session:
        return session.get(BenchRunRow, run_id)
