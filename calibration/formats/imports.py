"""Grades produced by other evaluation tools, read into interchange rows.

Two readers, each pure (a file in, `GradeRow`s out), so calibration can run on grades made
elsewhere:

- Inspect AI: an `.eval` (or `.json`) log, read with Inspect's own `read_eval_log` (the
  `inspect` extra). Each sample's score from each scorer is a judge row (rater = the scorer's
  name). A score a person edited (its latest `history` entry carries `provenance.author`) is a
  human row for that author with the edited value, beside the judge row with the scorer's
  original value.
- lm-evaluation-harness: a results directory written with `--output_path DIR --log_samples`.
  Every `samples_<task>_<timestamp>.jsonl` under DIR (any depth) is read as JSON lines; each
  line is one document: `doc_id`, `filter`, `metrics` (names of the per-document metrics) and,
  for each name in `metrics`, its value at the top level. Each numeric metric is a judge row
  with rater `<metric>,<filter>` (lm-eval's own naming in results files). The model is the
  `model_name` of a `results_*.json` in the same folder, when there is one.

Values are never invented: Inspect's unscored results (NaN) and lm-eval metrics without a
per-document number (corpus metrics such as BLEU log a [reference, prediction] pair) are
counted in `skipped`, and any other value that is not a number is refused with an error
naming the sample and the scorer.
"""

from __future__ import annotations

import json
import math
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from calibration.formats.interchange import (
    OPTIONAL,
    REQUIRED,
    GradeFormatError,
    GradeRow,
    parse_records,
)
from calibration.formats.lines import jsonl_records

# Inspect's letter grades (inspect_ai.scorer CORRECT/INCORRECT/PARTIAL/NOANSWER), mapped as
# its own `value_to_float` maps them; any other string is refused rather than made a 0.
INSPECT_LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
RESERVED = {*REQUIRED, *OPTIONAL, "attributes"}
SAMPLES_FILE = re.compile(r"^samples_(?P<task>.+)_(?P<stamp>\d{4}-\d{2}-\d{2}T[\d\-.:]+)\.jsonl$")


@dataclass
class Imported:
    """Rows read from a foreign log, and what was left out and why (one line per value)."""

    rows: list[GradeRow]
    skipped: list[str] = field(default_factory=list)


@dataclass
class _Collector:
    """Records read so far, with the problems and the skipped values met on the way."""

    records: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def grade(self, where: str, value: Any, record: dict[str, Any], unscored: str) -> None:
        """Keep `record` scored `value`; NaN is skipped, anything not a number is a problem."""
        try:
            number = _number(value)
        except ValueError as exc:
            self.problems.append(f"{where}: {exc}")
            return
        if number is None:
            self.skipped.append(f"{where}: {unscored}")
            return
        self.records.append((where, {**record, "score": number}))

    def imported(self) -> Imported:
        return Imported(_validated(self.records, self.problems), self.skipped)


def _number(value: Any) -> float | None:
    """A grade as a number; None for an unscored value (NaN); ValueError for anything else."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return None if math.isnan(value) else float(value)
    if isinstance(value, str):
        if value.strip() in INSPECT_LETTERS:
            return INSPECT_LETTERS[value.strip()]
        try:
            return float(value)
        except ValueError:
            pass
    raise ValueError(f"{value!r} is not a number")


def _validated(records: list[tuple[str, dict[str, Any]]], problems: list[str]) -> list[GradeRow]:
    """Validate every record, naming each refused one by where it came from."""
    rows: list[GradeRow] = []
    for where, record in records:
        try:
            rows += parse_records([record])
        except GradeFormatError as exc:
            problems += [f"{where}: {p.removeprefix('row 1: ')}" for p in exc.problems]
    if problems:
        raise GradeFormatError(problems)
    return rows


# --- Inspect AI -------------------------------------------------------------------------------


def read_inspect_log(path: str | Path) -> Imported:
    """Judge (and human-edited) grades of an Inspect AI log."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        missing = "inspect_ai is not installed: pip install 'qadi[inspect]'"
        raise GradeFormatError([missing]) from None
    try:
        log = read_eval_log(str(path))
    except (ValueError, KeyError, OSError, zipfile.BadZipFile) as exc:
        raise GradeFormatError([f"{path}: not an Inspect AI log ({exc})"]) from None
    base = {"benchmark": log.eval.task, "candidate_model": log.eval.model}
    found = _Collector()
    for sample in log.samples or []:
        item_id = str(sample.id) if sample.epoch == 1 else f"{sample.id}#{sample.epoch}"
        attributes = {**base, **_scalar_metadata(sample.metadata), "epoch": str(sample.epoch)}
        for scorer_name, score in (sample.scores or {}).items():
            where = f"sample {sample.id} (epoch {sample.epoch}): scorer {scorer_name}"
            for rater, kind, value in _inspect_grades(scorer_name, score):
                record = {"item_id": item_id, "rater": rater, "rater_kind": kind, **attributes}
                found.grade(where, value, record, f"unscored ({score.reason or 'no value'})")
    return found.imported()


def _inspect_grades(scorer_name: str, score: Any) -> list[tuple[str, str, Any]]:
    """(rater, rater_kind, value) of one Inspect score: the scorer's own value, and a
    person's edited value when the score was edited. A dict value is one grade per key."""
    edited = next((e for e in reversed(score.history) if e.provenance is not None), None)
    original = score.history[0].value if edited is not None else score.value
    grades = [(scorer_name, "judge", original)]
    if edited is not None:
        grades.append((edited.provenance.author, "human", score.value))
    out = []
    for rater, kind, value in grades:
        if isinstance(value, dict):
            out += [(f"{rater}/{key}", kind, v) for key, v in value.items()]
        else:
            out.append((rater, kind, value))
    return out


def _scalar_metadata(metadata: dict[str, Any] | None) -> dict[str, str]:
    """A sample's metadata strings and numbers become strata; nested values, and keys that
    name an interchange column (item_id, rater, score, ...), are left out."""
    return {
        str(k): str(v)
        for k, v in (metadata or {}).items()
        if isinstance(v, str | int | float | bool) and str(v) != "" and k not in RESERVED
    }


# --- lm-evaluation-harness --------------------------------------------------------------------


def read_lm_eval_results(directory: str | Path) -> Imported:
    """Per-document metric values of every `samples_*.jsonl` under an lm-eval output dir."""
    directory = Path(directory)
    files = sorted(p for p in directory.rglob("samples_*.jsonl") if SAMPLES_FILE.match(p.name))
    if not files:
        raise GradeFormatError(
            [f"{directory}: no samples_<task>_<timestamp>.jsonl (run lm_eval with --log_samples)"]
        )
    found = _Collector()
    for path in files:
        task = SAMPLES_FILE.match(path.name)["task"]
        base = {"benchmark": task, **_lm_eval_model(path.parent)}
        label = f"{path.name} line"
        samples, problems = jsonl_records(path.read_text(encoding="utf-8"), label)
        found.problems.extend(problems)
        for number, sample in samples:
            _lm_eval_sample(sample, task, base, f"{label} {number}", found)
    return found.imported()


def _lm_eval_sample(
    sample: Any, task: str, base: dict[str, str], where: str, found: _Collector
) -> None:
    if not isinstance(sample, dict) or "doc_id" not in sample or "metrics" not in sample:
        found.problems.append(f"{where}: expected an object with 'doc_id' and 'metrics'")
        return
    filter_name = str(sample.get("filter", "none"))
    for metric in sample["metrics"]:
        value = sample.get(metric)
        if isinstance(value, list | dict):
            found.skipped.append(f"{where}: {metric} has no per-document value (corpus metric)")
            continue
        record = {"item_id": f"{task}/{sample['doc_id']}", "rater": f"{metric},{filter_name}",
                  "rater_kind": "judge", **base, "filter": filter_name}
        found.grade(f"{where}: {metric}", value, record, "NaN")


def _lm_eval_model(folder: Path) -> dict[str, str]:
    """`candidate_model` from the run's results file beside the samples, when present."""
    for results in sorted(folder.glob("results_*.json"), reverse=True):
        try:
            name = json.loads(results.read_text(encoding="utf-8")).get("model_name")
        except (json.JSONDecodeError, AttributeError):
            continue
        if name:
            return {"candidate_model": str(name)}
    return {}
