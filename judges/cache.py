"""Cache keys for judge calls, and the storage protocol the grading core writes through.

The core never touches a database: `service` passes a `JudgmentStore` backed by SQL, and
library users and unit tests get `InMemoryJudgmentStore`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from judges.config import ConfidenceSource, JudgeEntry
from judges.models import Graded, GradeRequest, JudgeResult
from judges.prompts import JudgeCall
from judges.templates import PromptTemplate
from rubrics.hashing import fields_hash

# made once, not a model built and compared per key
_DEFAULT_CONFIDENCE = ConfidenceSource()


def cache_key(
    entry: JudgeEntry,
    template: PromptTemplate,
    rubric_hash: str,
    request: GradeRequest,
    call: JudgeCall,
    scope: str | None = None,
) -> str:
    """Everything that can change a verdict, canonically hashed (dict order cannot matter),
    in the namespace `scope` (a qadi project): keys of different scopes never match, so one
    namespace never reuses, nor learns of, another's verdicts. None is the unscoped
    namespace, whose keys are those made before scopes existed.

    The rendered messages are included because some templates send more than the answer
    (Fann or Flop sends the item id and title); they and the response_format are those of
    the judge's structured-output mode. The judge's name is left out on purpose: two names
    for the same model and parameters give the same answer.
    """
    fields: dict = {
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
    if entry.top_logprobs:
        # a result stored without token probabilities does not answer a call that asks for them
        fields["top_logprobs"] = entry.top_logprobs
    if entry.confidence != _DEFAULT_CONFIDENCE:
        # k samples at T are another verdict (the mode) than one call at the judge's
        # sampling; a verdict stored without its scored values does not answer one with
        fields["confidence"] = entry.confidence.model_dump()
    if scope is not None:
        fields["scope"] = scope
    # the user's sampling and confidence settings may hold any float; the messages hold
    # text, and the response_format is built from a rubric's texts, integers and booleans
    return fields_hash(fields, numbers=("sampling", "confidence"))


class JudgmentStore(Protocol):
    """Where judge calls are remembered. Every call, ok or failed, is saved."""

    async def find_done(
        self, keys: Collection[str], statuses: Collection[str]
    ) -> dict[str, JudgeResult]:
        """The earliest stored result per cache key whose status is in `statuses`."""

    async def save(self, graded: Sequence[Graded]) -> None:
        """Persist the `judgments` of each graded request (with its answer) in one go."""


class InMemoryJudgmentStore:
    """For library use and unit tests: the same contract, in a list."""

    def __init__(self) -> None:
        self.saved: list[JudgeResult] = []

    async def find_done(
        self, keys: Collection[str], statuses: Collection[str]
    ) -> dict[str, JudgeResult]:
        found = {}
        for key in keys:
            for result in self.saved:
                if result.cache_key == key and result.status in statuses and not result.cached:
                    found[key] = result
                    break
        return found

    async def save(self, graded: Sequence[Graded]) -> None:
        for item in graded:
            self.saved.extend(item.judgments)
