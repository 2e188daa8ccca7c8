"""Answers to (re)grade, read from JSONL/CSV files (stored answers: service.stores.answers).

File columns: item_id, prompt, response, candidate_model, optional reference,
candidate_provider and rubric_id (the rubric to grade the line with); every other column is
metadata (a stratum). Errors name row and field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from calibration.formats.lines import check_record, csv_reader, jsonl_records
from judges import AnswerRecord

KNOWN = (
    "item_id",
    "prompt",
    "response",
    "candidate_model",
    "reference",
    "candidate_provider",
    "rubric_id",
)


class AnswerError(ValueError):
    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(f"{len(problems)} invalid answer row(s): " + "; ".join(problems[:10]))


def _answer(record: dict[str, Any]) -> AnswerRecord:
    metadata = {k: str(v) for k, v in record.items() if k not in KNOWN and v not in (None, "")}
    if isinstance(record.get("metadata"), dict):
        metadata.pop("metadata", None)
        metadata.update({k: str(v) for k, v in record["metadata"].items()})
    fields = {k: record[k] for k in KNOWN if k in record and record[k] not in (None, "")}
    return AnswerRecord(**fields, metadata=metadata)


def read_answers(path: str | Path) -> list[AnswerRecord]:
    """Every row validated; all problems reported at once."""
    path = Path(path)
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() == ".csv":
        numbered = list(enumerate(csv_reader(text), start=2))
    elif path.suffix.lower() in (".jsonl", ".ndjson"):
        numbered, problems = jsonl_records(text)
        if problems:
            raise AnswerError(problems)
    else:
        raise AnswerError([f"{path}: unknown format; use .jsonl or .csv"])
    answers, problems = [], []
    for number, record in numbered:
        try:
            answers.append(_answer(check_record(record, "an answer row")))
        except ValidationError as exc:
            problems += [
                f"row {number}: {'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
            ]
        except ValueError as exc:
            problems.append(f"row {number}: {exc}")
    if problems:
        raise AnswerError(problems)
    return answers
