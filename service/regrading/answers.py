"""Answers to (re)grade, read from JSONL/CSV files (stored answers: service.stores.answers).

File columns: item_id, prompt, response, candidate_model, optional reference,
candidate_provider and rubric_id (the rubric to grade the line with); every other column is
metadata (a stratum). Errors name row and field.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from calibration.formats.lines import check_record, jsonl_file_lines, jsonl_lines
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
    problems: list[str] = []
    answers = list(stream_answers(path, problems))
    if problems:
        raise AnswerError(problems)
    return answers


def stream_answers(path: str | Path, problems: list[str] | None = None) -> Iterator[AnswerRecord]:
    """The file's answers one at a time, read as they are asked for, so a file of any size
    is held a row at a time. A bad row is added to `problems` and skipped (a first pass
    collects them all), or without a list raises AnswerError at once."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".jsonl", ".ndjson"):
        raise AnswerError([f"{path}: unknown format; use .jsonl or .csv"])
    for number, record, problem in _rows(path, suffix):
        answer, found = _checked(number, record, problem)
        if answer is not None:
            yield answer
        elif problems is None:
            raise AnswerError(found)
        else:
            problems.extend(found)


def _checked(number: int, record: Any, problem: str | None) -> tuple[AnswerRecord | None, list]:
    """The row's answer, or its problems, each naming the row and field."""
    if problem is not None:
        return None, [problem]
    try:
        return _answer(check_record(record, "an answer row")), []
    except ValidationError as exc:
        return None, [
            f"row {number}: {'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
        ]
    except ValueError as exc:
        return None, [f"row {number}: {exc}"]


def _rows(path: Path, suffix: str) -> Iterator[tuple[int, Any, str | None]]:
    """(row number, record, problem) from the open file, a row at a time."""
    if suffix == ".csv":
        with path.open(encoding="utf-8-sig", newline="") as handle:
            for number, record in enumerate(csv.DictReader(handle), start=2):
                yield number, record, None
        return
    with path.open("rb") as handle:
        yield from jsonl_lines(jsonl_file_lines(handle))
