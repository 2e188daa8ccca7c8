"""Calibration from the database at scale (issue 39): the rows and inputs a report is made
of are those main made before the change, on both databases; reports from the database equal
reports from the same grades in a file; `qadi estimate --from-db`."""

from __future__ import annotations

import csv
import hashlib
import json
from datetime import datetime
from pathlib import Path

import pytest
from sqlalchemy import func, insert, select

from service.db.engine import make_engine, make_sessionmaker, session_scope, upgrade
from service.db.schema import HumanGradeRow, ItemRow, JudgmentRow, ResponseRow
from service.stores.calibration import Selection, rows_from_db
from service.stores.projects import DEFAULT_PROJECT
from tests.conftest import run_cli
from tests.perf.judgment_db import populate

pytestmark = pytest.mark.db

# rows_from_db's output over `populate(url, 3000, seed=3)`, captured on main at f8c3a87
# (before the SQL-side selection), identical on SQLite and PostgreSQL there
GOLDEN = json.loads(Path("tests/data/rows_from_db_golden.json").read_text(encoding="utf-8"))
SELECTIONS = {
    "rubric": {"rubric": "kinayat-explanation"},
    "scale_both": {"scale": (1.0, 5.0), "score": "both"},
    "narrowed": {
        "judges": ["judge-good", "judge-noisy"], "metadata": {"domain": "food"},
        "since": datetime(2026, 1, 3), "until": datetime(2026, 1, 8), "score": "expected",
    },
    "everything": {},
}  # fmt: skip


def digest(rows) -> str:
    text = json.dumps([r.model_dump(mode="json") for r in rows], ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def test_rows_and_inputs_equal_those_captured_before_the_change(db_url):
    populate(db_url, 3000, seed=3)
    engine = make_engine(db_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            for name, selection in SELECTIONS.items():
                rows, inputs = rows_from_db(session, DEFAULT_PROJECT, Selection(**selection))
                expected = GOLDEN[name]
                assert inputs == expected["inputs"], name
                assert list(inputs["failed_judgments_excluded"]) == list(
                    expected["inputs"]["failed_judgments_excluded"]
                ), name
                assert (len(rows), digest(rows)) == (expected["rows"], expected["digest"]), name
    finally:
        engine.dispose()


# --- the bundled sample, stored as judgments, against the same grades in a file -------------

SAMPLE = Path("service/sample/grades.csv")
JUDGES = ("judge-close", "judge-harsh")


def sample_rows() -> list[dict]:
    """The sample's expert grades plus two judges made from them: one close to the
    experts, one a point harsher on a third of the items, each with a confidence."""
    with SAMPLE.open(encoding="utf-8") as handle:  # the design columns left out: the
        # stored grades below carry none, and this compares the two sources, not designs
        humans = [{k: v for k, v in row.items() if not k.startswith("inclusion_")}
                  for row in csv.DictReader(handle)]  # fmt: skip
    rows = list(humans)
    for n, first in enumerate(r for r in humans if r["rater"] == "generated-expert-1"):
        score = int(first["score"])
        for judge, value in zip(JUDGES, (score, max(1, score - (n % 3 == 0))), strict=True):
            rows.append({**first, "rater": judge, "rater_kind": "judge", "score": str(value),
                         "confidence": f"{0.55 + (n % 9) / 20:.2f}"})  # fmt: skip
    return rows


def store_sample(url: str, rows: list[dict]) -> None:
    """The sample's judge rows as judgments of answers, its expert rows as human grades."""
    upgrade(url)
    items = sorted({r["item_id"] for r in rows})
    first = {r["item_id"]: r for r in reversed(rows)}
    engine = make_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(insert(ItemRow), [
                {"id": n + 1, "content_hash": item, "prompt": item} for n, item in enumerate(items)
            ])  # fmt: skip
            connection.execute(insert(ResponseRow), [
                {"id": n + 1, "project": DEFAULT_PROJECT, "content_hash": item, "item_id": n + 1,
                 "item_key": item, "candidate_model": first[item]["candidate_model"],
                 "text": "answer", "attributes": {"variety": first[item]["variety"]}}
                for n, item in enumerate(items)
            ])  # fmt: skip
            connection.execute(insert(JudgmentRow), [
                {"id": f"j{n:05d}", "project": DEFAULT_PROJECT,
                 "response_id": items.index(r["item_id"]) + 1, "judge": r["rater"],
                 "judge_model": "openai/gpt-4.1", "status": "ok", "score": float(r["score"]),
                 "confidence": float(r["confidence"]), "cache_key": f"c{n}",
                 "rubric_ref": "kinayat-explanation@3", "rubric_hash": "h", "template": "t",
                 "template_hash": "th", "created_at": datetime(2026, 1, 1, 0, 0, n % 60)}
                for n, r in enumerate(rows) if r["rater_kind"] == "judge"
            ])  # fmt: skip
            connection.execute(insert(HumanGradeRow), [
                {"project": DEFAULT_PROJECT, "item_id": r["item_id"], "rater": r["rater"],
                 "rater_kind": "human", "score": float(r["score"]),
                 "attributes": {"candidate_model": r["candidate_model"], "variety": r["variety"]}}
                for r in rows if r["rater_kind"] == "human"
            ])  # fmt: skip
    finally:
        engine.dispose()


def write_csv(path: Path, rows: list[dict]) -> Path:
    fields = ["item_id", "rater", "rater_kind", "score", "candidate_model", "variety", "confidence"]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, restval="")
        writer.writeheader()
        writer.writerows(rows)
    return path


def numbers(report: dict) -> dict:
    """A report without what says where its rows came from: its inputs, and what binds its
    thresholds to the stored judgments' versions (a file has none: its thresholds bind to
    nothing, and say so)."""
    found = {key: value for key, value in report.items() if key != "inputs"}
    if "selective" in found:
        selective = {k: v for k, v in found["selective"].items() if k not in ("bound", "notes")}
        selective["rows"] = [{**row, "binding": None} for row in selective["rows"]]
        found["selective"] = selective
    return found


def test_reports_from_the_database_equal_reports_from_the_same_grades_in_a_file(db_url, tmp_path):
    rows = sample_rows()
    store_sample(db_url, rows)
    grades = write_csv(tmp_path / "grades.csv", rows)
    env = {"QADI_DATABASE_URL": db_url}
    common = ("--scale", "1-5", "--by", "candidate_model")
    for command, extra in (("calibrate", ("--bootstrap", "200")), ("estimate", ())):
        made = {}
        for source in ("file", "db"):
            out = tmp_path / f"{command}-{source}.json"
            where = (str(grades),) if source == "file" else ("--from-db",)
            result = run_cli(command, *where, *common, *extra, "--out", str(out), env=env)
            assert result.returncode == 0, result.stdout + result.stderr
            made[source] = json.loads(out.read_text(encoding="utf-8"))
        assert set(made["db"]["judges"]) == set(JUDGES), command
        assert numbers(made["db"]) == numbers(made["file"]), command


def test_estimate_from_db_narrows_like_calibrate_and_refuses_bad_options(db_url, tmp_path):
    populate(db_url, 3000, seed=3)
    env, out = {"QADI_DATABASE_URL": db_url}, tmp_path / "estimate.json"
    result = run_cli(
        "estimate", "--from-db", "--rubric", "kinayat-explanation", "--judges", "judge-good",
        "--metadata", "domain=food", "--since", "2026-01-02", "--until", "2026-01-09",
        "--by", "candidate_model", "--out", str(out), env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert list(report["judges"]) == ["judge-good"]
    assert report["inputs"]["rubric_versions"] == ["kinayat-explanation@3"]
    assert report["inputs"]["window"] == {"since": "2026-01-02T00:00:00",
                                          "until": "2026-01-09T00:00:00"}  # fmt: skip
    assert report["scale"] == {"min": 1.0, "max": 5.0}  # the stored rubric's
    assert set(report["judges"]["judge-good"]["strata"]) == {
        f"candidate_model=model-{m}" for m in "abc"
    }
    refused = {
        ("--from-db", "--metadata", "domain"): "--metadata: expected key=value, got 'domain'",
        ("--from-db", "--rubric", "nope"): "--rubric:",
        ("--from-db", "--since", "2026-01-05", "--until", "2026-01-04"): "--until:",
        (str(SAMPLE), "--since", "2026-01-05"): "--since: only with --from-db",
        (): "give a GRADES_FILE, --from-db or --from-parquet DIR (one of them)",
    }
    for args, message in refused.items():
        result = run_cli("estimate", *args, "--out", str(out), env=env)
        assert result.returncode == 2, args
        assert message in result.stdout + result.stderr, (args, result.stdout + result.stderr)


def test_grades_come_back_whole_beside_the_judgments(db_url):
    """The grades a report reads are kept as columns too (issue 39): each comes back as the
    row that was stored, rationale, inclusion probability, criteria and project included;
    a labelled item nobody judged is in a whole-project report and out of a narrowed one;
    a grade under a judge's name is kept apart; equal attribute dicts are shared."""
    populate(db_url, 300, seed=1)
    extra = [
        {"project": DEFAULT_PROJECT, "item_id": "only-graded", "rater": "sme-9",
         "rater_kind": "human", "score": 2.0, "criteria": {"meaning": True},
         "inclusion_prob": 0.25, "confidence": None,
         "attributes": {"domain": "food", "lang": "ar"}, "rationale": "the idiom is read literally"},
        {"project": DEFAULT_PROJECT, "item_id": "item-1", "rater": "judge-good",
         "rater_kind": "judge", "score": 4.0, "criteria": None, "inclusion_prob": None,
         "confidence": 0.7, "attributes": {}, "rationale": None},
    ]  # fmt: skip
    engine = make_engine(db_url)
    try:
        with engine.begin() as connection:
            connection.execute(insert(HumanGradeRow), extra)
            stored = connection.execute(
                select(func.count()).select_from(HumanGradeRow)
                .where(HumanGradeRow.rater_kind == "human")
            ).scalar_one()  # fmt: skip
        with session_scope(make_sessionmaker(engine)) as session:
            rows, _ = rows_from_db(session, DEFAULT_PROJECT, Selection())
            narrowed, _ = rows_from_db(session, DEFAULT_PROJECT, Selection(judges=["judge-good"]))
    finally:
        engine.dispose()
    found = [r.model_dump() for r in rows]
    assert found[-2] == {
        "item_id": "only-graded", "rater": "sme-9", "rater_kind": "human", "score": 2.0,
        "criteria": {"meaning": True}, "inclusion_prob": 0.25, "confidence": None,
        "attributes": {"domain": "food", "lang": "ar"},
        "rationale": "the idiom is read literally", "project": DEFAULT_PROJECT,
    }  # fmt: skip
    assert found[-1] == {
        "item_id": "item-1", "rater": "judge-good~imported", "rater_kind": "judge",
        "score": 4.0, "criteria": None, "inclusion_prob": None, "confidence": 0.7,
        "attributes": {}, "rationale": None, "project": DEFAULT_PROJECT,
    }  # fmt: skip
    assert sum(r["rater_kind"] == "human" for r in found) == stored
    assert "only-graded" not in {r.item_id for r in narrowed}
    humans = [r for r in rows if r.rater_kind == "human" and r.item_id != "only-graded"]
    assert len({id(r.attributes) for r in humans}) < len(humans)  # shared, not one per grade
    columns = rows.columns()
    assert columns.human.sum() == stored
    assert (len(rows) - 2, 0.25) in columns.probabilities
