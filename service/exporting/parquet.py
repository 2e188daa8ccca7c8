"""Records as Parquet files partitioned by day, Hive style
(`DIR/TABLE/day=YYYY-MM-DD/part-00000.parquet`), which warehouses (BigQuery, Snowflake,
DuckDB, Spark) and Ray Data (`ray.data.read_parquet`) read as one dataset with `day` as a
column. Each batch of records is written as it comes, one file per day it spans, so memory
holds one batch whatever the table's size. Needs pyarrow (`pip install 'qadi[export]'`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

STRING, FLOAT, BOOL, TIME, INT = "string", "float64", "bool", "timestamp", "int64"
# the columns of each table, typed once, so every file of a table has one schema whatever
# its batch held (a batch whose scores are all missing would otherwise type them as null)
COLUMNS: dict[str, dict[str, str]] = {
    "judgments": {
        "id": STRING, "project": STRING, "request_id": STRING, "item_id": STRING,
        "candidate_model": STRING, "attributes": STRING, "judge": STRING,
        "judge_model": STRING, "status": STRING, "score": FLOAT, "expected_score": FLOAT,
        "confidence": FLOAT, "confidence_source": STRING, "criteria": STRING,
        "rubric_ref": STRING, "rubric_hash": STRING, "template": STRING,
        "template_hash": STRING, "cached": BOOL, "latency_ms": FLOAT,
        "cost_usd": FLOAT, "error": STRING, "rationale": STRING, "raw_reply": STRING,
        "created_at": TIME,
    },
    "grades": {
        "id": INT, "project": STRING, "item_id": STRING, "rater": STRING,
        "rater_kind": STRING, "score": FLOAT, "criteria": STRING, "inclusion_prob": FLOAT,
        "confidence": FLOAT, "attributes": STRING, "rationale": STRING, "created_at": TIME,
    },
    "reports": {
        "id": STRING, "project": STRING, "kind": STRING, "scope": STRING,
        "window_start": TIME, "window_end": TIME, "report": STRING, "created_at": TIME,
    },
}  # fmt: skip


class ExportError(Exception):
    """Why an export cannot be written, in one line."""


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ExportError(
            "qadi export writes Parquet with pyarrow, which is not installed: "
            "pip install 'qadi[export]'"
        ) from None
    return pyarrow, pyarrow.parquet


def schema(table: str):
    pa, _ = _pyarrow()
    types = {STRING: pa.string(), FLOAT: pa.float64(), BOOL: pa.bool_(),
             TIME: pa.timestamp("us"), INT: pa.int64()}  # fmt: skip
    return pa.schema([(name, types[kind]) for name, kind in COLUMNS[table].items()])


def target(directory: Path, table: str) -> Path:
    """The table's folder, refused when it already holds files: an export never mixes
    with an earlier one (readers would count rows twice)."""
    folder = directory / table
    if folder.exists() and any(folder.iterdir()):
        raise ExportError(f"{folder}: not empty; export into a new folder or remove it")
    return folder


def write_days(batches: Iterable[list[dict[str, Any]]], folder: Path, table: str) -> int:
    """Write each batch's records to `folder/day=D/part-N.parquet` by the day of their
    `created_at` (UTC), and return how many records were written."""
    pa, pq = _pyarrow()
    layout = schema(table)
    written = 0
    for number, batch in enumerate(batches):
        for day, records in _by_day(batch).items():
            path = folder / f"day={day}" / f"part-{number:05d}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.Table.from_pylist(records, schema=layout), path)
        written += len(batch)
    return written


def _by_day(batch: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    days: dict[str, list[dict[str, Any]]] = {}
    for record in batch:
        stamp: datetime = record["created_at"]
        days.setdefault(stamp.date().isoformat(), []).append(record)
    return days
