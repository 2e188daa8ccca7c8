"""`qadi calibrate --from-parquet` and `qadi estimate --from-parquet` (issue 39): over a
`qadi export` of a database, the rows, inputs and reports equal those read from the database,
with either engine (pyarrow locally, Ray Data); an export that cannot be read, or a missing
extra, is a one-line error."""

from __future__ import annotations

import hashlib
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.exporting import calibration as from_parquet
from service.stores import exports
from service.stores.calibration import Selection, rows_from_db
from service.stores.projects import DEFAULT_PROJECT
from tests.conftest import run_cli
from tests.perf.judgment_db import populate

SELECTIONS = {
    "rubric": {"rubric": "kinayat-explanation"},
    "everything": {},  # other scales and failures too: no scale declared
    "both": {"score": "both", "judges": ["judge-good", "judge-lenient"]},
    "narrowed": {
        "judges": ["judge-good", "judge-noisy"], "metadata": {"domain": "food"},
        "since": datetime(2026, 1, 3, tzinfo=UTC), "until": datetime(2026, 1, 8),
        "score": "expected",
    },
}  # fmt: skip


def digest(rows) -> str:
    text = json.dumps([r.model_dump(mode="json") for r in rows], ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def export(url: str, out: Path, monkeypatch) -> Path:
    """`qadi export` of the database, many small files (as a big table's would be)."""
    monkeypatch.setattr(exports, "BATCH", 400)
    done = run_cli("export", str(out), env={"QADI_DATABASE_URL": url})
    assert done.returncode == 0, done.stderr
    return out


def without_source(inputs: dict) -> dict:
    return {k: v for k, v in inputs.items() if k != "source"}


@pytest.mark.db
def test_rows_from_an_export_equal_rows_from_the_database(db_url, tmp_path, monkeypatch):
    populate(db_url, 3000, seed=3)
    out = export(db_url, tmp_path / "out", monkeypatch)
    # merge the reductions many times over, as a long history would
    monkeypatch.setattr(from_parquet, "MERGE_AT", 300)
    engine = make_engine(db_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            for name, chosen in SELECTIONS.items():
                rows, inputs = rows_from_db(session, DEFAULT_PROJECT, Selection(**chosen))
                read, read_inputs = from_parquet.rows_from_parquet(out, Selection(**chosen))
                assert (len(read), digest(read)) == (len(rows), digest(rows)), name
                assert read_inputs["source"] == f"parquet:{out}"
                assert without_source(read_inputs) == without_source(inputs), name
                # the order of the failures is the order the first of each was made
                failed = inputs["failed_judgments_excluded"]
                assert failed and list(read_inputs["failed_judgments_excluded"]) == list(failed)
    finally:
        engine.dispose()


def report_without_source(path: Path) -> dict:
    report = json.loads(path.read_text(encoding="utf-8"))
    assert report["inputs"].pop("source")
    return report


@pytest.fixture
def exported(tmp_path, monkeypatch) -> tuple[str, Path]:
    url = f"sqlite:///{tmp_path / 'qadi.db'}"
    populate(url, 3000, seed=3)
    return url, export(url, tmp_path / "out", monkeypatch)


def test_calibrate_and_estimate_reports_from_an_export_equal_those_from_the_database(
    exported, tmp_path
):
    url, out = exported
    env = {"QADI_DATABASE_URL": url}
    common = ["--rubric", "kinayat-explanation", "--by", "candidate_model"]
    for source, args in (("db", ["--from-db"]), ("parquet", ["--from-parquet", str(out)])):
        done = run_cli("calibrate", *args, *common, "--bootstrap", "50",
                       "--out", str(tmp_path / f"calibrate-{source}.json"), env=env)  # fmt: skip
        assert done.returncode == 0, done.stderr
        done = run_cli("estimate", *args, *common, "--metadata", "domain=food",
                       "--out", str(tmp_path / f"estimate-{source}.json"), env=env)  # fmt: skip
        assert done.returncode == 0, done.stderr
    for command in ("calibrate", "estimate"):
        from_db = report_without_source(tmp_path / f"{command}-db.json")
        assert report_without_source(tmp_path / f"{command}-parquet.json") == from_db
    assert from_db["judges"]  # a report of something: the judges' corrected means


def test_the_ray_engine_gives_the_local_engines_rows(exported):
    """One Ray run (its start-up takes most of the test's time on 2 cores)."""
    _, out = exported
    chosen = Selection(**SELECTIONS["both"])
    rows, inputs = from_parquet.rows_from_parquet(out, chosen, engine="local")
    on_ray, ray_inputs = from_parquet.rows_from_parquet(out, chosen, engine="ray")
    assert len(rows) > 3000
    assert (len(on_ray), digest(on_ray)) == (len(rows), digest(rows))
    assert ray_inputs == inputs


def one_line_error(*args: str) -> str:
    done = run_cli(*args)
    assert done.returncode == 2, done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_a_folder_that_is_not_an_export_is_a_one_line_error(tmp_path):
    scale = ["--scale", "1-5", "--out", str(tmp_path / "r.json")]
    message = one_line_error("calibrate", "--from-parquet", str(tmp_path / "none"), *scale)
    assert message == (
        f"error: {tmp_path / 'none'}: no judgments/ with Parquet files; give a folder "
        "`qadi export` wrote"
    )
    broken = tmp_path / "broken" / "judgments" / "day=2026-01-01"
    broken.mkdir(parents=True)
    (broken / "part-00000.parquet").write_text("not parquet")
    (tmp_path / "broken" / "grades").mkdir()
    message = one_line_error("estimate", "--from-parquet", str(tmp_path / "broken"), *scale)
    assert message.startswith(f"error: {tmp_path / 'broken' / 'judgments'}: not a Parquet export")


def test_missing_extras_and_misplaced_options_are_one_line_errors(exported, tmp_path, monkeypatch):
    _, out = exported
    args = ["calibrate", "--from-parquet", str(out), "--rubric", "kinayat-explanation",
            "--out", str(tmp_path / "r.json")]  # fmt: skip
    assert one_line_error("calibrate", "--from-db", "--engine", "ray", "--scale", "1-5") == (
        "error: --engine: only with --from-parquet (the database does its own work)"
    )
    assert one_line_error(*args, "--engine", "spark") == (
        "error: --engine: expected local or ray, got 'spark'"
    )
    assert one_line_error(*args, "--from-db") == (
        "error: give a GRADES_FILE, --from-db or --from-parquet DIR (one of them)"
    )
    assert one_line_error(*args[:3], "--rubric", "ours@2", "--out", str(tmp_path / "r.json")) == (
        "error: --scale: required with --from-parquet unless --rubric is a bundled rubric (an "
        "export holds no rubrics): no bundled rubric 'ours@2' (known: "
        + ", ".join(sorted(_bundled()))
        + ")"
    )
    monkeypatch.setitem(sys.modules, "ray", None)  # Ray not installed
    assert one_line_error(*args, "--engine", "ray") == (
        "error: --engine: the ray engine needs Ray: pip install 'qadi[ray]'"
    )
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # pyarrow not installed
    assert one_line_error(*args) == (
        "error: --from-parquet reads Parquet with pyarrow, which is not installed: "
        "pip install 'qadi[export]'"
    )


def _bundled() -> set[str]:
    from rubrics.loading import library_rubrics

    return {r.id for r in library_rubrics()}
