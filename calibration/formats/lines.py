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
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO


class RepeatedKey(ValueError):
    """A JSON object that names one key twice: `{"score": 50, "score": 60}` says two things,
    and `json.loads` would keep the last one without a word."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """`object_pairs_hook` for JSON whose objects must name each key once."""
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise RepeatedKey(f"key '{key}' appears twice in one JSON object")
        data[key] = value
    return data


# One decoder for every such read: `json.loads` with a hook builds a new one per call.
UNIQUE_KEYS = json.JSONDecoder(object_pairs_hook=unique_keys)


def jsonl_records(text: str, label: str = "row") -> tuple[list[tuple[int, Any]], list[str]]:
    """(line number, decoded value) for every non-blank line, and one problem per bad line
    ("{label} {number}: not valid JSON (...)") so a file's mistakes are reported together."""
    records: list[tuple[int, Any]] = []
    problems: list[str] = []
    for number, value, problem in jsonl_lines(text.split("\n"), label):
        if problem is None:
            records.append((number, value))
        else:
            problems.append(problem)
    return records, problems


def jsonl_lines(lines: Iterable[str], label: str = "row") -> Iterator[tuple[int, Any, str | None]]:
    """(line number, decoded value, None) for every non-blank line, or (number, None,
    problem) for a bad one, one line at a time: a reader that streams a large file holds only
    the line in hand. `lines` are split at "\n" only (`jsonl_file_lines`)."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield number, UNIQUE_KEYS.decode(line), None
        except json.JSONDecodeError as exc:
            yield number, None, f"{label} {number}: not valid JSON ({exc.msg})"
        except RepeatedKey as exc:
            yield number, None, f"{label} {number}: {exc}"
        except RecursionError:
            yield number, None, f"{label} {number}: nested too deeply to read"


def jsonl_file_lines(handle: BinaryIO) -> Iterator[str]:
    """A binary file's lines, split at b"\n" only and decoded (a leading BOM dropped); a line
    that is not UTF-8 comes out as one that is not valid JSON, so it is reported by number."""
    for index, raw in enumerate(handle):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            yield "\ufffd not UTF-8"
            continue
        yield line.removeprefix("\ufeff") if index == 0 else line


def csv_reader(text: str) -> csv.DictReader:
    """Rows keyed by the header; quoted cells keep their line breaks. A header that names a
    column twice is a csv.Error: csv.DictReader would keep the last cell of the two."""
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    repeated = sorted(name for name, count in Counter(header).items() if count > 1)
    if repeated:
        raise csv.Error(
            f"the header names {repeated} more than once; one cell of each row would be lost"
        )
    return reader


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
