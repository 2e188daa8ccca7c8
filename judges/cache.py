"""Cache keys for judge calls, and the storage protocol the grading core writes through.

The core never touches a database: `service` passes a `JudgmentStore` backed by SQL, and
library users and unit tests get `InMemoryJudgmentStore`.
"""

from __future__ import annotations

from typing import Protocol

from judges.config import JudgeEntry
from judges.models import GradeRequest, JudgeResult
from judges.prompts import JudgeCall
from judges.templates import PromptTemplate
from rubrics import content_hash


def cache_key(
    entry: JudgeEntry,
    template: PromptTemplate,
    rubric_hash: str,
    request: GradeRequest,
    call: JudgeCall,
) -> str:
    """Everything that can change a verdict, canonically hashed (dict order cannot matter).

    The rendered messages are included because some templates send more than the answer
    (Fann or Flop sends the item id and title). The judge's name is left out on purpose:
    two names for the same model and parameters give the same answer.
    """
    return content_hash(
        {
            "model": entry.model,
            "sampling": entry.sampling,
            "template_hash": template.hash,
            "rubric_hash": rubric_hash,
            "prompt": request.prompt,
            "reference": request.reference,
            "response": request.response,
            "messages": call.messages,
            "response_format": call.response_format,
        }
    )


class JudgmentStore(Protocol):
    """Where judge calls are remembered. Every call, ok or failed, is saved."""

    async def find_ok(self, cache_key: str) -> JudgeResult | None:
        """A stored successful result for this key, or None."""

    async def save(self, request: GradeRequest, result: JudgeResult) -> None:
        """Persist one outcome: a call, ok or failed, or a verdict served from the cache
        (`cached` true, no backend call made)."""


class InMemoryJudgmentStore:
    def __init__(self) -> None:
        self.saved: list[JudgeResult] = []
        self._ok: dict[str, JudgeResult] = {}

    async def find_ok(self, cache_key: str) -> JudgeResult | None:
        return self._ok.get(cache_key)

    async def save(self, request: GradeRequest, result: JudgeResult) -> None:
        self.saved.append(result)
        if result.status == "ok" and not result.cached:
            self._ok[result.cache_key] = result
