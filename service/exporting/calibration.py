"""Calibration rows from a `qadi export` (Parquet partitioned by day) instead of the database:
`qadi calibrate --from-parquet DIR` and `qadi estimate --from-parquet DIR` (issue 39).

One function does the work, `reduce_judgments`: over any batch of exported judgments it keeps
the latest ok judgment per (item, judge) with the (created_at, id) of the pair's first one, and
one row per failure status with its count and first time. Its output is a batch of the same
kind, so reducing the reductions of the parts gives the reduction of the whole (a later day can
supersede an earlier day's latest judgment). Two executors apply it:
- local: pyarrow reads one file at a time (only the columns a report reads), reduces it, and
  merges the reductions as they pile up: memory holds one file and the running result;
- ray: Ray Data reads the files (`read_parquet`) and reduces each block where it lies
  (`map_batches`), the driver merges the reduced blocks as they stream back, as locally.
The result then fills the rows exactly as `rows_from_db` does (service/stores/calibration.py
`JudgeRows` and `with_grades`: the same row order, each (item, judge) in the order of its first
judgment, the same inputs), so both sources and both executors give the same report.

What an export cannot say, so a report from it does not either: rubrics are not exported, so
judgments under rubrics of another scale are not excluded without --rubric (their scores meet
the out-of-scale check, which names them) and `items_on_other_scales_excluded` is 0; the
training items of `qadi align` revisions are not exported, so they are not excluded.
Probe answers are excluded by their `probe_of` attribute, as in the database.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from calibration.columns import GradeColumns
from calibration.formats.interchange import GradeRow
from service.stores.calibration import JudgeRows, Selection, with_grades

# the judgment columns a report reads (the export's names)
READ = (
    "id", "project", "item_id", "candidate_model", "attributes", "judge", "judge_model",
    "template", "template_hash", "rubric_ref", "rubric_hash", "status", "score",
    "expected_score", "confidence", "confidence_source", "criteria", "created_at",
)  # fmt: skip
GRADES_READ = (
    "id", "project", "item_id", "rater", "rater_kind", "score", "criteria", "inclusion_prob",
    "confidence", "attributes", "rationale",
)  # fmt: skip
# what JudgeRows.add takes, in its order (rows_from_db's _REPORT_COLUMNS)
_ADDED = (
    "item_id", "candidate_model", "attributes", "judge", "judge_model", "template",
    "template_hash", "rubric_ref", "rubric_hash", "score", "expected_score", "confidence",
    "confidence_source", "criteria",
)  # fmt: skip
_REPEATED = ["candidate_model", "judge_model", "template", "template_hash", "rubric_hash",
             "confidence_source", "criteria"]  # fmt: skip
# exports made before these columns were written read them as missing (null)
_OPTIONAL = frozenset({"template_hash", "rubric_hash"})
ENGINES = ("local", "ray")
MERGE_AT = 50_000  # reduced rows pending before they are merged into the result


class ParquetSourceError(Exception):
    """Why an export cannot be read, in one line."""


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.compute
        import pyarrow.dataset
    except ImportError:
        raise ParquetSourceError(
            "--from-parquet reads Parquet with pyarrow, which is not installed: "
            "pip install 'qadi[export]'"
        ) from None
    return pyarrow, pyarrow.compute, pyarrow.dataset


# --- the one function, and the selection it is given ----------------------------------------


def reduce_judgments(table):
    """The latest ok judgment per (item_id, judge) by (created_at, id), carrying the pair's
    first (created_at, id) as `first_at`, `first_id`; and per failure status one row with its
    count in `judgments` and its first time in `first_at`. Applied to its own output (or
    concatenated outputs) it gives the same result as applied to the judgments themselves."""
    pa, pc, _ = _pyarrow()
    if "judgments" not in table.column_names:
        table = table.append_column("first_at", table["created_at"])
        table = table.append_column("first_id", table["id"])
        table = table.append_column("judgments", pa.array(np.ones(table.num_rows, np.int64)))
    # the pairs are grouped with their status, not filtered first: a filtered copy of every
    # ok judgment was most of a merge's memory; the failed ones are few
    latest = _latest_per_pair(table)
    latest = latest.filter(pc.equal(latest["status"], "ok"))
    failed = _per_status(table.filter(pc.not_equal(table["status"], "ok")))
    return pa.concat_tables([latest, failed])


def _latest_per_pair(table):
    """The last judgment of each (status, item, judge) by (created_at, id), with the first's
    (first_at, first_id): two sorts by the pair, so their groups line up."""
    pair = [("status", "ascending"), ("item_id", "ascending"), ("judge", "ascending")]
    last = _group_edges(table, pair, [("created_at", "ascending"), ("id", "ascending")], "last")
    first = _group_edges(
        table, pair, [("first_at", "ascending"), ("first_id", "ascending")], "first"
    )
    for name in ("first_at", "first_id"):
        last = last.set_column(last.schema.get_field_index(name), name, first[name])
    return last


def _per_status(table):
    """One row per failure status: its first judgment's, counting them all."""
    pa, pc, _ = _pyarrow()
    if not table.num_rows:
        return table
    counts = table.group_by("status").aggregate([("judgments", "sum")])
    first = _group_edges(table, [("status", "ascending")], [("first_at", "ascending")], "first")
    total = dict(zip(counts["status"].to_pylist(), counts["judgments_sum"].to_pylist(),
                     strict=True))  # fmt: skip
    summed = pa.array([total[s] for s in first["status"].to_pylist()], pa.int64())
    index = first.schema.get_field_index("judgments")
    return first.set_column(index, "judgments", summed)


def _group_edges(table, keys: list, order: list, edge: str):
    """The first or last row of each group of equal `keys`, rows ordered by `order` inside.
    Only the keys are sorted; the rows are taken once, at the edges (a sorted copy of the
    whole table was most of a merge's memory)."""
    pa, pc, _ = _pyarrow()
    ranks = pc.sort_indices(table, sort_keys=[*keys, *order])
    n = len(ranks)
    if n == 0:
        return table
    change = np.zeros(n - 1, bool)
    for name, _ in keys:
        column = table[name].take(ranks)
        change |= pc.not_equal(column.slice(1), column.slice(0, n - 1)).to_numpy(
            zero_copy_only=False
        )
    ends = np.flatnonzero(change)  # a group ends at each of these rows
    index = np.r_[0, ends + 1] if edge == "first" else np.r_[ends, n - 1]
    return table.take(ranks.take(pa.array(index)))


def selected(table, selection: Selection, project: str | None):
    """The judgments of the selection (any status): project, judges, rubric, time window,
    metadata, and no probe answers. Attributes are JSON text: each distinct text is read
    once per batch."""
    pa, pc, _ = _pyarrow()
    texts = pc.unique(table["attributes"]).to_pylist()
    wanted = [t for t in texts if _answer_wanted(t, selection.metadata)]
    keep = pc.is_in(table["attributes"], pa.array(wanted, pa.string()))
    if project is not None:
        keep = pc.and_(keep, pc.equal(table["project"], project))
    if selection.judges:
        keep = pc.and_(keep, pc.is_in(table["judge"], pa.array(selection.judges)))
    if selection.rubric:
        rubric = selection.rubric
        matches = (pc.equal(table["rubric_ref"], rubric) if "@" in rubric
                   else pc.starts_with(table["rubric_ref"], f"{rubric}@"))  # fmt: skip
        keep = pc.and_(keep, matches)
    if selection.since:
        keep = pc.and_(keep, pc.greater_equal(table["created_at"], _naive(selection.since)))
    if selection.until:
        keep = pc.and_(keep, pc.less(table["created_at"], _naive(selection.until)))
    return table.filter(pc.fill_null(keep, False))


def _answer_wanted(text: str | None, metadata: dict[str, str]) -> bool:
    """Not a probe's perturbed copy, and every metadata filter's attribute is its string."""
    attributes = json.loads(text) if text else {}
    if attributes.get("probe_of") is not None:
        return False
    return all(attributes.get(key) == value for key, value in metadata.items())


def _naive(moment: datetime) -> datetime:
    """The export's times are UTC without a zone; so is the compared time."""
    return moment if moment.tzinfo is None else moment.astimezone(UTC).replace(tzinfo=None)


# --- the executors ---------------------------------------------------------------------------


def _folder(directory: Path, table: str) -> Path | None:
    """The table's folder in the export; None when it holds no file (`qadi export` writes
    none for a table without records)."""
    folder = directory / table
    return folder if folder.is_dir() and any(folder.rglob("*.parquet")) else None


def _dataset(folder: Path):
    _, _, ds = _pyarrow()
    # names and criteria repeat across judgments: read as dictionaries (codes into one copy of
    # each distinct text, as the files hold them), never compared or sorted here
    layout = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(dictionary_columns=_REPEATED))
    try:
        return ds.dataset(folder, format=layout, partitioning="hive")
    except Exception as exc:  # noqa: BLE001 (pyarrow raises several kinds for a bad file)
        raise ParquetSourceError(f"{folder}: not a Parquet export ({exc})") from None


def _columns(dataset) -> list[str]:
    names = set(dataset.schema.names)
    missing = [c for c in READ if c not in names and c not in _OPTIONAL]
    if missing:
        raise ParquetSourceError(f"judgments: the export has no column {missing[0]}")
    return [c for c in READ if c in names]


def _with_optional(table):
    pa = _pyarrow()[0]
    for name in sorted(_OPTIONAL - set(table.column_names)):
        table = table.append_column(name, pa.nulls(table.num_rows, pa.string()))
    return table.select(list(READ))


def _local_batches(folder: Path, step: Callable, address: None = None) -> Iterator:
    """Each file of the export reduced by `step`, one file in memory at a time."""
    dataset = _dataset(folder)
    columns = _columns(dataset)
    for fragment in dataset.get_fragments():
        yield step(_with_optional(fragment.to_table(columns=columns)))


def _ray_batches(folder: Path, step: Callable, address: str | None) -> Iterator:
    """Each block of the export reduced by `step` on the Ray cluster at `address` (a local
    one without), streamed back."""
    from service.regrading.on_ray import RayCluster, RayEngineError, connect

    columns = _columns(_dataset(folder))
    try:
        started = connect(RayCluster(workers=2, address=address))
    except RayEngineError as exc:
        raise ParquetSourceError(f"--engine: {exc}") from None
    import ray

    try:
        # Ray Data pushes the column selection down into the read (2.60: `columns=` is
        # deprecated for it)
        dataset = (
            ray.data.read_parquet(str(folder))
            .select_columns(columns)
            .map_batches(
                lambda batch: step(_with_optional(batch)), batch_format="pyarrow", batch_size=None
            )
        )
        yield from dataset.iter_batches(batch_size=None, batch_format="pyarrow")
    finally:
        if started:
            ray.shutdown()


def merged(reduced: Iterable) -> Any:
    """The reductions merged into one, as they come: pending ones are merged into the
    result once they outgrow it, so memory holds about twice the result."""
    pa = _pyarrow()[0]
    parts, pending = [], 0  # parts[0] is the merged result once there is one
    for part in reduced:
        parts.append(part)
        pending += part.num_rows
        if pending > max(parts[0].num_rows, MERGE_AT):
            parts, pending = [reduce_judgments(pa.concat_tables(parts))], 0
    return reduce_judgments(pa.concat_tables(parts)) if parts else None


# --- rows --------------------------------------------------------------------------------------


def rows_from_parquet(
    directory: Path,
    selection: Selection,
    project: str | None = None,
    engine: str = "local",
    address: str | None = None,
) -> tuple[GradeColumns, dict[str, Any]]:
    """Human grades plus the latest ok judgment per (item, judge) in the selection, from an
    export, with the report's inputs: what rows_from_db gives over the database the export
    was written from (what an export cannot say: the module's docstring)."""
    if engine not in ENGINES:
        raise ParquetSourceError(f"--engine: expected local or ray, got '{engine}'")
    _pyarrow()
    judgments, grades = _folder(directory, "judgments"), _folder(directory, "grades")
    if judgments is None:
        raise ParquetSourceError(
            f"{directory}: no judgments/ with Parquet files; give a folder `qadi export` wrote"
        )

    def step(table):
        return reduce_judgments(selected(table, selection, project))

    batches = (_ray_batches if engine == "ray" else _local_batches)(judgments, step, address)
    result = merged(batches)
    found = JudgeRows(selection.score, set())
    failures: dict[str, int] = {}
    if result is not None:
        _add_latest(found, result)
        failures = _failures(result)
    found.close()
    source = f"parquet:{directory}"
    return with_grades(found, _grades(grades, project), selection, failures, set(), source)


def _add_latest(found: JudgeRows, result) -> None:
    """The latest judgments into `found`, in the order of each pair's first judgment, their
    attributes without the answer's own `item_id` (so answers of one kind share them)."""
    _, pc, _ = _pyarrow()
    ok = result.filter(pc.equal(result["status"], "ok"))
    ok = ok.take(pc.sort_indices(ok, sort_keys=[("first_at", "ascending"),
                                                ("first_id", "ascending")]))  # fmt: skip
    shared: dict[str | None, str | None] = {}
    for batch in ok.select(list(_ADDED)).to_batches(max_chunksize=5000):
        for record in zip(*(batch[c].to_pylist() for c in _ADDED), strict=True):
            text = record[2]
            if text not in shared:
                shared[text] = _without_item_id(text)
            found.add(record[0], record[1], shared[text], *record[3:])


def _without_item_id(text: str | None) -> str | None:
    if not text:
        return text
    attributes = json.loads(text)
    attributes.pop("item_id", None)
    return json.dumps(attributes, ensure_ascii=False)


def _failures(result) -> dict[str, int]:
    """Failed judgments by status, in the order the first of each was made."""
    _, pc, _ = _pyarrow()
    failed = result.filter(pc.not_equal(result["status"], "ok"))
    failed = failed.take(pc.sort_indices(failed, sort_keys=[("first_at", "ascending"),
                                                            ("status", "ascending")]))  # fmt: skip
    return dict(zip(failed["status"].to_pylist(), failed["judgments"].to_pylist(), strict=True))


def _grades(folder: Path | None, project: str | None) -> Iterator[GradeRow]:
    """The exported human grades in the order they were stored (by id), as rows_from_db
    reads them (accepted rows, not validated again)."""
    if folder is None:
        return
    _, pc, _ = _pyarrow()
    dataset = _dataset(folder)
    names = set(dataset.schema.names)
    table = dataset.to_table(columns=[c for c in GRADES_READ if c in names])
    if project is not None:
        table = table.filter(pc.equal(table["project"], project))
    table = table.take(pc.sort_indices(table, sort_keys=[("id", "ascending")]))
    for batch in table.to_batches(max_chunksize=5000):
        for record in batch.to_pylist():
            yield GradeRow.model_construct(
                item_id=record["item_id"], rater=record["rater"],
                rater_kind=record["rater_kind"], score=record["score"],
                criteria=json.loads(record["criteria"]) if record["criteria"] else None,
                inclusion_prob=record["inclusion_prob"], confidence=record["confidence"],
                attributes=json.loads(record["attributes"]) if record["attributes"] else {},
                rationale=record["rationale"], project=record["project"],
            )  # fmt: skip
