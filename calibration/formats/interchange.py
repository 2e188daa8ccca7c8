"""The grades interchange format of DESIGN.md (CSV or JSONL): one row per grade.

Columns: item_id, rater, rater_kind (human|judge), score (a number; a label compared as
text with level nominal), optional criteria (JSON object criterion id -> bool), optional
inclusion_prob (the probability the labelling design gave the item of being labelled, in
[1e-9, 1], MIN_INCLUSION_PROB below; `qadi sme queue` writes it, see calibration/design.py),
optional confidence (a judge row's probability of its verdict, in [0, 1], e.g. from its
token probabilities: what selective judging thresholds, calibration/selective.py),
optional project (the qadi project a row was exported from, GET /grades; an import into
another project refuses the row), optional sme_question, sme_answer, sme_reference and
sme_rubric (the texts a `qadi sme queue` file shows the SME; read past, never stored); every
other column is an attribute of the item (a stratum).
Errors name the row and the field; no row is silently dropped or altered.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from calibration.formats.lines import (
    UNIQUE_KEYS,
    RepeatedKey,
    check_record,
    csv_reader,
    jsonl_records,
)

REQUIRED = ("item_id", "rater", "rater_kind", "score")
# The smallest inclusion probability a label may carry: its weight 1/π is then at most 1e9,
# one label standing for a billion judged items, sparser than any labelling design qadi
# serves. Below it the weights stop being usable numbers: the estimates square and sum them
# (a weight's square overflows from π = 1e-154 down, and 1e-320, a denormal, has an infinite
# inverse), and an estimate resting on one label among a billion would be that label alone.
MIN_INCLUSION_PROB = 1e-9
OPTIONAL = ("criteria", "inclusion_prob", "confidence", "rationale", "project")
# What `qadi sme queue` shows the SME beside each row: the question, the answer, the
# reference answer and the rubric as she grades by it. Copies of texts the database holds,
# for reading; an import reads past them (they are not attributes of the item).
SME_TEXTS = ("sme_question", "sme_answer", "sme_reference", "sme_rubric")
COLUMNS = frozenset((*REQUIRED, *OPTIONAL, *SME_TEXTS))  # names an attribute cannot have


MAX_PROBLEMS = 50  # a file's problems listed; the rest counted (1,350 lines helped no one)
# Arabic-Indic (U+0660-0669) and Eastern Arabic-Indic (U+06F0-06F9) digits and the Arabic
# decimal separator (U+066B) as ASCII
_DIGITS = str.maketrans(
    {**{chr(0x0660 + d): str(d) for d in range(10)},
     **{chr(0x06F0 + d): str(d) for d in range(10)}, "\u066b": "."}
)  # fmt: skip


def western_digits(text: str) -> str:
    """A number typed with Arabic-Indic digits, in the digits float() reads."""
    return text.translate(_DIGITS)


class GradeFormatError(ValueError):
    """Rows were refused; `problems` lists 'row N: field: message' lines (the first
    MAX_PROBLEMS of them, then how many more)."""

    def __init__(self, problems: list[str]) -> None:
        if len(problems) > MAX_PROBLEMS:
            extra = len(problems) - MAX_PROBLEMS
            problems = [*problems[:MAX_PROBLEMS], f"... and {extra} more problem(s)"]
        self.problems = problems
        shown = "; ".join(problems[:10])
        more = f" (+{len(problems) - 10} more)" if len(problems) > 10 else ""
        super().__init__(f"{len(problems)} invalid grade row(s): {shown}{more}")


class _Grade(BaseModel):
    item_id: str = Field(min_length=1, max_length=256)
    rater: str = Field(min_length=1, max_length=256)
    rater_kind: Literal["human", "judge"]
    criteria: dict[str, bool] | None = None
    inclusion_prob: float | None = Field(default=None, gt=0, le=1, allow_inf_nan=False)
    confidence: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    attributes: dict[str, str] = Field(default_factory=dict)
    rationale: str | None = Field(
        default=None, max_length=20_000, description="the grader's reason for this grade"
    )
    project: str | None = Field(
        default=None, max_length=64, description="the qadi project the row was exported from"
    )

    @model_validator(mode="after")
    def _judges_have_confidence(self):
        if self.confidence is not None and self.rater_kind != "judge":
            raise ValueError("confidence: only a judge's grade carries a confidence")
        return self

    @field_validator("inclusion_prob", "confidence", mode="before")
    @classmethod
    def _probability_not_boolean(cls, value: Any) -> Any:
        """pydantic reads `true` as 1.0: a yes/no is not a probability."""
        if isinstance(value, bool):
            raise ValueError("a boolean is not a probability (give a number)")
        return value

    @field_validator("inclusion_prob")
    @classmethod
    def _usable_weight(cls, value: float | None) -> float | None:
        if value is not None and value < MIN_INCLUSION_PROB:
            raise ValueError(
                f"{value:g} is below {MIN_INCLUSION_PROB:g}, the smallest inclusion probability "
                "qadi weights by: a label may stand for at most a billion items"
            )
        return value


class GradeRow(_Grade):
    score: float

    @field_validator("score", mode="before")
    @classmethod
    def _not_boolean(cls, value: Any) -> Any:
        """pydantic reads `true` as 1.0; a yes/no is a label (level nominal), not a score.
        A score typed with Arabic-Indic digits (٤, ۴٫٥) reads as its number."""
        if isinstance(value, bool):
            raise ValueError("a boolean is not a score (give a number, or use level nominal)")
        if isinstance(value, str) and "_" in value:  # float() reads "1_000" as 1000
            raise ValueError(f"'{value}' is not a number (write it without '_')")
        return western_digits(value) if isinstance(value, str) else value

    @field_validator("score")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("score must be a finite number")
        return value


class LabelRow(_Grade):
    """A grade at level nominal: `score` is a label (A/B/tie, Yes/No, ...), compared as text."""

    score: str = Field(min_length=1, max_length=256)

    @field_validator("score", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> Any:
        if isinstance(value, float) and value.is_integer():
            return str(int(value))  # JSONL 1.0 and CSV "1" are the same label
        return str(value).strip() if isinstance(value, str | int | float | bool) else value


Row = GradeRow | LabelRow

_STORED_FIELDS = frozenset(
    ("item_id", "rater", "rater_kind", "score", "criteria", "confidence", "attributes")
)


_NO_VALUES = dict.fromkeys(GradeRow.model_fields)


def stored_row(**values: Any) -> GradeRow:
    """A GradeRow from values a store already holds as valid (a judgment's grade), made
    without validation and with the fields-set every such row shares: millions of them
    are read for one report (issue 39), and `GradeRow(...)` costs ~23 µs and ~1 KB each,
    `model_construct` about the same; this ~2 µs and ~0.4 KB. `values` are the
    `_STORED_FIELDS`; the others take their defaults (None). Rows are read, never changed."""
    row = GradeRow.__new__(GradeRow)
    fields = _NO_VALUES.copy()
    fields.update(values)
    object.__setattr__(row, "__dict__", fields)
    object.__setattr__(row, "__pydantic_fields_set__", _STORED_FIELDS)
    object.__setattr__(row, "__pydantic_extra__", None)
    object.__setattr__(row, "__pydantic_private__", None)
    return row


class Rows(list):
    """Parsed rows, each with the number problems name it by (`numbers`): a CSV's row, a
    JSON Lines file's line (blank lines are skipped, yet counted), a list's position. Later
    steps (storage checks, the duplicates an upload reports) number rows the same way."""

    def __init__(self, rows: Iterable[Row] = (), numbers: Iterable[int] = ()) -> None:
        super().__init__(rows)
        self.numbers = list(numbers)
        self.unfilled: list[int] = []  # CSV rows left without a rater and a score


def row_numbers(rows: list[Row], first_row: int = 1) -> list[int]:
    """The numbers of `rows` as their parser gave them; counted from `first_row` for rows
    that did not come from a parser."""
    numbers = getattr(rows, "numbers", None)
    if numbers is not None and len(numbers) == len(rows):
        return numbers
    return list(range(first_row, first_row + len(rows)))


def parse_records(
    records: Iterable[dict[str, Any]], first_row: int = 1, level: str | None = None
) -> list[Row]:
    """Validate decoded rows numbered from `first_row`; level nominal reads labels."""
    return _validate(enumerate(records, start=first_row), level=level)


def _validate(
    numbered: Iterable[tuple[int, Any]],
    problems: list[str] | None = None,
    level: str | None = None,
):
    """Collect every problem before refusing, so one pass over a file finds them all."""
    rows = Rows()
    problems = list(problems or [])
    model = LabelRow if level == "nominal" else GradeRow
    for number, record in numbered:
        try:
            rows.append(_row(record, model))
            rows.numbers.append(number)
        except ValidationError as exc:
            for err in exc.errors():
                field = ".".join(str(p) for p in err["loc"]) or "row"
                problems.append(
                    f"row {number}: {field}: {err['msg'].removeprefix('Value error, ')}"
                )
        except ValueError as exc:
            problems.append(f"row {number}: {exc}")
    if problems:
        raise GradeFormatError(problems)
    return rows


def _row(record: dict[str, Any], model: type[Row] = GradeRow) -> Row:
    check_record(record, "a grade row")
    criteria = record.get("criteria")
    if isinstance(criteria, str):
        if criteria.strip():
            try:
                criteria = json.loads(criteria)
            except (json.JSONDecodeError, RecursionError):
                raise ValueError("criteria: not a JSON object") from None
        else:
            criteria = None
    known = {*REQUIRED, *OPTIONAL, *SME_TEXTS, "attributes"}
    attributes = {
        str(k): _attribute(k, v)
        for k, v in record.items()
        if k not in known and v not in (None, "")
    }
    if isinstance(record.get("attributes"), dict):
        named = {str(k): _attribute(k, v) for k, v in record["attributes"].items()}
        taken = sorted(COLUMNS & named.keys())
        if taken:  # it would be read back as that column
            raise ValueError(f"attributes: {taken} are columns of the format, not attributes")
        attributes.update(named)
    data = {k: record.get(k) for k in REQUIRED}
    optional = {
        # a CSV cell; an empty one (an unqueued label, a judge without one) is absent
        name: (value.strip() or None) if isinstance(value, str) else value
        for name in ("inclusion_prob", "confidence", "rationale", "project")
        for value in [record.get(name)]
    }
    return model.model_validate(
        {**data, "criteria": criteria, **optional, "attributes": attributes}
    )


def _attribute(name: Any, value: Any) -> str:
    """An attribute's value as the text it is stored as; an object or a list has no such
    text (its Python spelling would be stored, and match nothing)."""
    if isinstance(value, dict | list):
        kind = "an object" if isinstance(value, dict) else "a list"
        raise ValueError(f"{name}: an attribute is text or a number, not {kind}")
    return str(value)


# A spreadsheet saved as CSV in a locale whose decimal mark is a comma separates with ';'.
SEMICOLON_HINT = (
    "the header is separated by ';' (a spreadsheet's CSV in a locale with decimal commas): "
    "save it as comma-separated CSV (Excel: CSV UTF-8 (Comma delimited)) and import that"
)
WORKBOOK_HINT = (
    "a spreadsheet workbook, not text: save it as CSV (Excel: File > Save As > CSV UTF-8 "
    "(Comma delimited)) and import the .csv"
)
WORKBOOK_SUFFIXES = (".xlsx", ".xls", ".xlsm", ".ods", ".numbers")
# the first bytes of a zip (xlsx, ods) and of an OLE compound file (xls)
WORKBOOK_MAGIC = (b"PK\x03\x04", b"\xd0\xcf\x11\xe0")


def decode_text(data: bytes, source: str) -> str:
    """A grades file's bytes as text: UTF-8 (a BOM allowed); a workbook or another
    encoding is refused with what to do about it."""
    if data.startswith(WORKBOOK_MAGIC):
        raise GradeFormatError([f"{source}: {WORKBOOK_HINT}"])
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise GradeFormatError(
            [f"{source}: not UTF-8 text (byte {exc.start}); save it as CSV UTF-8 or JSON"]
        ) from None


def parse_csv(text: str, level: str | None = None) -> list[Row]:
    try:
        reader = csv_reader(text)
        header = reader.fieldnames or []
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            semicolons = len(header) == 1 and header[0].count(";") >= len(REQUIRED) - 1
            hint = f"; {SEMICOLON_HINT}" if semicolons else ""
            raise GradeFormatError([f"header: missing column(s) {missing}{hint}"])
        records = list(enumerate(reader, start=2))
        rows = _validate([(n, r) for n, r in records if not _unfilled(r)], level=level)
        rows.unfilled = [n for n, r in records if _unfilled(r)]
        return rows
    except csv.Error as exc:
        raise GradeFormatError([f"csv: {exc}"]) from None


def _unfilled(record: dict[str, Any]) -> bool:
    """A row of a queue file the SME did not grade: no rater and no score (a row with one of
    them is a grade with a problem, and is refused)."""
    return all(not str(record.get(k) or "").strip() for k in ("rater", "score"))


def parse_jsonl(text: str, level: str | None = None) -> list[Row]:
    return _validate(*jsonl_records(text), level)


def parse_json(text: str, level: str | None = None) -> list[Row]:
    """A .json file: one JSON document, a list of rows or `{"grades": [...]}` as the API
    takes it (POST /grades), or JSON Lines under a .json name."""
    try:
        data = UNIQUE_KEYS.decode(text)
    except json.JSONDecodeError:
        return parse_jsonl(text, level)  # several values: one per line
    except RecursionError:
        raise GradeFormatError(["json: nested too deeply to read"]) from None
    except RepeatedKey as exc:
        raise GradeFormatError([f"json: {exc}"]) from None
    if isinstance(data, dict) and isinstance(data.get("grades"), list):
        data = data["grades"]
    if isinstance(data, list):
        return parse_records(data, first_row=1, level=level)
    return _validate([(1, data)], level=level)  # one row alone


def read_grades(path: str | Path, level: str | None = None) -> list[Row]:
    """Read a .csv, .jsonl or .json grades file; with level nominal `score` holds labels."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in WORKBOOK_SUFFIXES:
        raise GradeFormatError([f"{path}: {WORKBOOK_HINT}"])
    text = decode_text(path.read_bytes(), str(path))
    if suffix == ".csv":
        return parse_csv(text, level)
    if suffix in (".jsonl", ".ndjson"):
        return parse_jsonl(text, level)
    if suffix == ".json":
        return parse_json(text, level)
    raise GradeFormatError([f"{path}: unknown format; use .csv, .jsonl or .json"])


def to_records(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """Flatten rows back to interchange records (attributes as columns)."""
    out = []
    for row in rows:
        record: dict[str, Any] = {
            "item_id": row.item_id,
            "rater": row.rater,
            "rater_kind": row.rater_kind,
            "score": row.score,
        }
        if row.criteria is not None:
            record["criteria"] = row.criteria
        if row.inclusion_prob is not None:
            record["inclusion_prob"] = row.inclusion_prob
        if row.confidence is not None:
            record["confidence"] = row.confidence
        if row.rationale is not None:
            record["rationale"] = row.rationale
        if row.project is not None:
            record["project"] = row.project
        record.update({k: v for k, v in row.attributes.items() if k not in COLUMNS})
        out.append(record)
    return out


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralise_formula(value: Any) -> Any:
    """OWASP CSV injection: a text cell a spreadsheet would run as a formula gets a leading
    single quote. Numbers are written as numbers (a negative score is not a formula)."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def as_labels(rows: Iterable[Row]) -> list[LabelRow]:
    """Rows at level nominal: numeric scores become labels written as `f"{score:g}"`."""
    return [
        row
        if isinstance(row, LabelRow)
        else LabelRow.model_validate({**row.model_dump(), "score": f"{row.score:g}"})
        for row in rows
    ]
