"""Answers to (re)grade: read from JSONL/CSV files or from the database.

File columns: item_id, prompt, response, candidate_model, optional reference and
candidate_provider; every other column is metadata (a stratum). Errors name row and field.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from service.db.filters import rubric_matches
from service.db.schema import ItemRow, JudgmentRow, ResponseRow

KNOWN = ("item_id", "prompt", "response", "candidate_model", "reference", "candidate_provider")


class AnswerError(ValueError):
    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(f"{len(problems)} invalid answer row(s): " + "; ".join(problems[:10]))


class Answer(BaseModel):
    item_id: str = Field(min_length=1, max_length=256)
    prompt: str = ""
    response: str
    candidate_model: str = Field(min_length=1)
    reference: str | None = None
    candidate_provider: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)


def _answer(record: dict[str, Any]) -> Answer:
    metadata = {k: str(v) for k, v in record.items() if k not in KNOWN and v not in (None, "")}
    if isinstance(record.get("metadata"), dict):
        metadata.pop("metadata", None)
        metadata.update({k: str(v) for k, v in record["metadata"].items()})
    fields = {k: record[k] for k in KNOWN if k in record and record[k] not in (None, "")}
    return Answer(**fields, metadata=metadata)


def read_answers(path: str | Path) -> list[Answer]:
    """Every row validated; all problems reported at once."""
    path = Path(path)
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() == ".csv":
        numbered = list(enumerate(csv.DictReader(io.StringIO(text)), start=2))
    elif path.suffix.lower() in (".jsonl", ".ndjson"):
        numbered = []
        problems = []
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    numbered.append((number, json.loads(line)))
                except json.JSONDecodeError as exc:
                    problems.append(f"row {number}: not valid JSON ({exc.msg})")
        if problems:
            raise AnswerError(problems)
    else:
        raise AnswerError([f"{path}: unknown format; use .jsonl or .csv"])
    answers, problems = [], []
    for number, record in numbered:
        try:
            answers.append(_answer(record))
        except ValidationError as exc:
            problems += [
                f"row {number}: {'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
            ]
    if problems:
        raise AnswerError(problems)
    return answers


def answers_from_db(
    session: Session,
    rubric: str | None = None,
    candidate_model: str | None = None,
    metadata: dict[str, str] | None = None,
    since: datetime | None = None,
) -> list[Answer]:
    """Stored answers; with `rubric`, only answers already judged under that rubric."""
    query = select(ResponseRow, ItemRow).join(ItemRow, ResponseRow.item_id == ItemRow.id)
    if candidate_model:
        query = query.where(ResponseRow.candidate_model == candidate_model)
    for key, value in (metadata or {}).items():
        query = query.where(ResponseRow.attributes[key].as_string() == value)
    if since:
        query = query.where(ResponseRow.created_at >= since)
    if rubric:
        judged = select(JudgmentRow.response_id).where(
            rubric_matches(JudgmentRow.rubric_ref, rubric)
        )
        query = query.where(ResponseRow.id.in_(judged))
    answers = []
    for response, item in session.execute(query.order_by(ResponseRow.id)):
        answers.append(
            Answer(
                item_id=response.item_key,
                prompt=item.prompt,
                response=response.text,
                candidate_model=response.candidate_model,
                reference=item.reference,
                candidate_provider=response.candidate_provider,
                metadata={k: str(v) for k, v in (response.attributes or {}).items()},
            )
        )
    return answers
