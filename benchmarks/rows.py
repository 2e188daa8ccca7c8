"""A benchmark item and its answered row, typed: the question put to a target model, what
the target said, how it was parsed, and (for generative tasks) the judge panel's verdict and
the task's own metrics. Tasks build items; summaries, storage and reports all read rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Item:
    """One question to a target model: multiple choice (labels, gold) or generative
    (graded by `Task.rubric` against `reference`, with `judge_prompt` as what was asked)."""

    item_id: str
    prompt: str
    labels: list[str] = field(default_factory=list)
    gold: str = ""
    options: list[str] = field(default_factory=list)
    groups: dict[str, str] = field(default_factory=dict)
    unit: str | None = None  # items of one unit must all be right (MIDAS rotations)
    reference: str | None = None
    judge_prompt: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class PanelGrade:
    """The judge panel's verdict on one answer: the aggregate score, each judge's score and
    dimensions, judges that failed, and judges the self-evaluation guard skipped."""

    score: float | None
    judges: dict[str, float] = field(default_factory=dict)
    dimensions: dict[str, dict[str, float]] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


@dataclass
class AnswerRow:
    item_id: str
    prompt: str
    cache_key: str
    output: str | None
    error: str | None = None
    cached: bool = False
    unit: str | None = None  # rows of one unit must all be right (MIDAS rotations)
    groups: dict[str, str] = field(default_factory=dict)
    gold: str = ""
    parsed: str | None = None
    correct: bool = False
    parse_failure: bool = False
    # generative tasks only
    grade: PanelGrade | None = None
    grade_error: str | None = None
    guard_rejected: bool = False  # the guard left no judge for this answer
    metrics: dict[str, float] = field(default_factory=dict)  # BLEU, chrF, ...
    problems: list[str] = field(default_factory=list)  # what the output parser could not use

    @classmethod
    def of(cls, item: Item, key: str, output: str | None, error: str | None, cached: bool):
        return cls(
            item_id=item.item_id,
            prompt=item.prompt,
            cache_key=key,
            output=output,
            error=error,
            cached=cached,
            unit=item.unit,
            groups=dict(item.groups),
            gold=item.gold,
        )

    @property
    def graded(self) -> bool:
        return self.grade is not None and self.grade.score is not None

    def stored(self) -> dict[str, Any]:
        """The columns of a stored answer (service's bench_answers table)."""
        return {
            "item_id": self.item_id,
            "unit": self.unit,
            "cache_key": self.cache_key,
            "prompt": self.prompt,
            "gold": self.gold,
            "output": self.output,
            "parsed": self.parsed,
            "correct": self.correct,
            "error": self.error,
            "groups": self.groups,
        }
