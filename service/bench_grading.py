"""Grading benchmark answers through the grading core with every judgment persisted, so
benchmark grades take part in calibration like any other judgment."""

from __future__ import annotations

import asyncio

from sqlalchemy.orm import Session, sessionmaker

from judges import Grader, GradeRequest, GradeResult
from service.db.engine import session_scope
from service.judgment_store import CollectingStore, ensure_response, row_from_result


class PersistingGrader:
    def __init__(self, grader: Grader, factory: sessionmaker[Session]) -> None:
        self.grader = grader
        self.factory = factory

    async def __call__(self, request: GradeRequest) -> GradeResult:
        store = CollectingStore(self.factory)
        store.response_id = await asyncio.to_thread(self._response, request)
        result = await self.grader.grade(request, store)
        await asyncio.to_thread(self._write, store)
        return result

    def _response(self, request: GradeRequest) -> int:
        with session_scope(self.factory) as session:
            return ensure_response(session, request)

    def _write(self, store: CollectingStore) -> None:
        with session_scope(self.factory) as session:
            session.add_all(row_from_result(r, None, store.response_id) for r in store.results)
