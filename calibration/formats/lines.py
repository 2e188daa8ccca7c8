"""Reading users' JSONL and CSV files without breaking records apart.

`str.splitlines()` also splits at U+2028, U+2029, U+0085, \\v, \\f and \\x1c-\\x1e, all of
which JSON allows raw inside a string, so a JSONL record ends at "\\n" only. A CSV cell may
hold line breaks when quoted, so CSV text goes to the csv module unsplit (`newline=""`, as
its documentation asks). Every reader of a user's file (grades, answers, benchmark records,
lm-eval samples) goes through these two functions.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any


def jsonl_records(text: str, label: str = "row") -> tuple[list[tuple[int, Any]], list[str]]:
    """(line number, decoded value) for every non-blank line, and one problem per bad line
    ("{label} {number}: not valid JSON (...)") so a file's mistakes are reported together."""
    records: list[tuple[int, Any]] = []
    problems: list[str] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            problems.append(f"{label} {number}: not valid JSON ({exc.msg})")
        except RecursionError:
            problems.append(f"{label} {number}: nested too deeply to read")
    return records, problems


def csv_reader(text: str) -> csv.DictReader:
    """Rows keyed by the header; quoted cells keep their line breaks."""
    return csv.DictReader(io.StringIO(text, newline=""))


def check_record(record: Any, what: str) -> dict[str, Any]:
    """A file row as a mapping, or a ValueError naming what is wrong with its shape: a JSONL
    line that is not an object, or a CSV row with more cells than its header (csv.DictReader
    keeps those under the key None; they would be lost)."""
    if not isinstance(record, dict):
        raise ValueError(f"{what} must be a JSON object")
    extra = record.get(None)
    if extra is not None:
        raise ValueError(f"{len(extra)} cell(s) more than the header's columns; they would be lost")
    return record

