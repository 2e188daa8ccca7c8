"""What a benchmark task is: a dataset source, the fields it needs, how a record becomes
items (prompt, labelled options, gold), and how answers are parsed.

A benchmark module (kinayat, midi, midas) declares its tasks with these pieces, including
the breakdowns its paper reports and a summary hook for its own cells; `benchmarks.suite`
does the rest the same way for every task, with no branch on a task's name.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.rows import AnswerRow, Item
from benchmarks.scoring import parse_answer
from rubrics import content_hash

Breakdown = str | tuple[str, ...]  # a group attribute, or several crossed (tier × context)
SummaryHook = Callable[["Task", list[AnswerRow], dict[str, Any], str], dict[str, Any]]


@dataclass(frozen=True)
class Source:
    """Hugging Face dataset id, config and split, or a local file `file` (any of .jsonl,
    .json, .csv, .parquet) in --data-dir with the same fields."""

    hf_id: str
    split: str
    file: str
    config: str | None = None
    hub: bool = True  # False: released outside the Hugging Face hub (local files only)
    bundled: Path | None = None  # a sample shipped with qadi, used without --data-dir


class MissingField(ValueError):
    def __init__(self, record_id: str, name: str) -> None:
        self.record_id, self.name = record_id, name
        super().__init__(f"record {record_id}: missing field '{name}'")


@dataclass
class Task:
    name: str
    source: Source
    required: tuple[str, ...]
    template: str  # the published template text, hashed into cache keys and run records
    build: Callable[[dict[str, Any], str, int], list[Item]]
    answer: str = "letter"  # letter | number | word | text
    max_tokens: int = 1
    stop: list[str] | None = None
    description: str = ""
    id_field: str | None = None
    selects: Callable[[dict[str, Any]], bool] = field(default=lambda record: True)
    prepare: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] = field(
        default=lambda records: records
    )  # whole-dataset steps: pairing readings (MIDI bias), building distractors (MIDAS)
    rubric: str | None = None  # generative tasks: the judge rubric (library id)
    respond: Callable[[Item, str], tuple[str | None, dict[str, Any]]] | None = None
    # generative tasks: model output -> (what the judge grades, or None; extra metrics)
    parse: Callable[[str, Item], str | None] = field(
        default=lambda output, item: parse_answer(output, item.labels)
    )  # output -> what is compared with `gold`, or None (a parse failure)
    breakdowns: tuple[Breakdown, ...] = ()  # the paper's strata, reported per value
    summary_hook: SummaryHook | None = None  # (task, rows, summary, model) -> own cells
    localize: Callable[[dict[str, str]], Task] | None = None
    # the task with user-supplied localized templates ({language: template}), if it has any

    @property
    def generative(self) -> bool:
        return self.rubric is not None

    @property
    def sampling(self) -> dict[str, Any]:
        """Every sampling parameter the task declares, sent with each generation request."""
        return {"max_tokens": self.max_tokens, **({"stop": list(self.stop)} if self.stop else {})}

    @property
    def template_hash(self) -> str:
        return content_hash({"task": self.name, "template": self.template})

    def record_id(self, record: dict[str, Any], index: int) -> str:
        if self.id_field and record.get(self.id_field) not in (None, ""):
            return f"{self.name}:{record[self.id_field]}"
        return f"{self.name}:{index}"

    def items(self, record: dict[str, Any], index: int, seed: int) -> list[Item]:
        """Items of one record, or MissingField naming the first absent required field."""
        record_id = self.record_id(record, index)
        for name in self.required:
            if record.get(name) in (None, "") or (
                isinstance(record.get(name), float) and record[name] != record[name]
            ):
                raise MissingField(record_id, name)
        return self.build(record, record_id, seed)


def shuffled(options: Sequence[str], key: str, seed: int) -> list[str]:
    """A per-item deterministic order: the same seed and item give the same order on every
    run and machine (the authors' global RNG made orders depend on task execution order)."""
    order = list(options)
    random.Random(f"{seed}|{key}").shuffle(order)
    return order


LETTERS = "ABCDEFGHIJ"


def lettered(options: Sequence[str]) -> list[str]:
    return list(LETTERS[: len(options)])
