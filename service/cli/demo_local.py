"""`qadi demo --local-judge`: the bundled demo set graded by a real model on this machine.

The local judge (service/local_judge.py: vLLM serving SmolLM2-135M-Instruct) is started, the
demo set's 150 proverb explanations (service/sample/answers.jsonl, `kinayat-explanation`, 1-5)
are stored with the three generated experts' grades of 60 of them (grades.csv) and graded
through the one
grading core (the same calls, cache and storage as `qadi regrade`), with token
probabilities, and the real grades are calibrated against the experts, the discrete and the
expected score side by side, overall and per candidate model: a newcomer sees a model's
grades, its confidences, the calibration table and a trust map that decides overall (60
labelled items, three experts; per candidate model 20 are too few, and the map says so)
without any API key. SmolLM2-135M is a
tiny model and a weak judge; the point is the pipeline, and the report says how weak.

The 1-5 answers, not the sample's six rubric answers: a rubric judge writes one JSON verdict
with evidence per criterion, and SmolLM2-135M loops inside the evidence strings
("1.1.1.1...") until max_tokens, so every such reply would be a parse error (measured: 512
tokens, finish_reason length, also with a frequency penalty). A 1-5 rating is ten tokens.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml
from rich.table import Table

from service.cli.app import console, fail, out

RUBRIC = "kinayat-explanation"


def local_judge_demo(database_url: str, data_dir: Path, sample: Path) -> Path:
    """Start the local judge, store and grade the 1-5 answers of the `sample` folder with
    it, calibrate, print; the judges file written for it (so `qadi serve` grades with it
    too)."""
    from service import local_judge

    console.print(
        "[bold]local judge[/] starting vLLM with SmolLM2-135M-Instruct (the first "
        "start installs it: several minutes)"
    )
    try:
        url = local_judge.start()
    except local_judge.LocalJudgeError as exc:
        fail(str(exc))
    config_path = data_dir / "local-judge.yaml"
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text(yaml.safe_dump(local_judge.judges_config(url)), encoding="utf-8")
    console.print(f"[bold]local judge[/] {url}  (judges file {config_path})")
    stats = _grade(database_url, config_path, load_rated_answers(database_url, sample))
    _calibrate(database_url)
    console.print(
        f"[bold]graded[/] {stats.calls['ok']} ok, {stats.calls['parse_error']} parse errors, "
        f"{stats.reused} already stored; every call is kept in the database"
    )
    return config_path


def load_rated_answers(database_url: str, sample: Path) -> list:
    """Store the demo set's `kinayat-explanation` answers and their experts' grades
    (idempotent, as the Quick start's import is); their grade requests."""
    from calibration.formats.interchange import read_grades
    from judges import GradeRequest
    from rubrics import library_rubric
    from service.db.engine import open_database, session_scope
    from service.regrading.answers import read_answers
    from service.stores.answers import ensure_responses
    from service.stores.grades import upsert_grades
    from service.stores.projects import DEFAULT_PROJECT

    rubric = library_rubric(RUBRIC)
    answers = [a for a in read_answers(sample / "answers.jsonl") if a.rubric_id == RUBRIC]
    requests = [GradeRequest.from_answer(rubric, answer) for answer in answers]
    with session_scope(open_database(database_url)) as session:
        ensure_responses(session, DEFAULT_PROJECT, requests)
        upsert_grades(session, DEFAULT_PROJECT, read_grades(sample / "grades.csv"))
    return requests


SHOWN = 12  # grades printed as a table; the rest are in the database and the report


def _grade(database_url: str, config_path: Path, requests: list):
    from judges import BatchOptions, BatchStats, Grader, load_config
    from service.cli.progress import grading_bar
    from service.db.engine import open_database
    from service.stores.judgments import project_batcher
    from service.stores.projects import DEFAULT_PROJECT

    grader = Grader(load_config(config_path))
    options = BatchOptions(concurrency=8, record_reused=False)
    batcher = project_batcher(grader, open_database(database_url), DEFAULT_PROJECT, options)
    graded, stats = [], BatchStats()
    with grading_bar("local judge", len(requests), stats) as tick:

        def advance(item) -> None:
            graded.append(item)
            tick()

        asyncio.run(batcher.run(requests, advance, stats))
    out.print(_grades_table(graded[:SHOWN], len(graded)))
    return stats


def _grades_table(graded: list, total: int) -> Table:
    """The first grades with their token probabilities."""
    table = Table(
        "item",
        "status",
        "rating",
        "expected",
        "P(rating)",
        "P(1..5)",
        title=f"the local judge's grades (the first {len(graded)} of {total})",
    )
    for item in graded:
        for result in item.result.results if item.result else []:
            rating = result.probabilities.rating if result.probabilities else None
            spread = " ".join(f"{p:.2f}" for p in rating.probs.values()) if rating else None
            table.add_row(
                item.request.metadata.get("item_id", ""),
                result.status,
                "–" if result.score is None else f"{result.score:.0f}",
                "–" if result.expected_score is None else f"{result.expected_score:.2f}",
                "–" if rating is None else f"{rating.confidence:.2f}",
                spread or (result.error or "")[:60],
            )
    return table


def _calibrate(database_url: str) -> None:
    """One report, stored as `qadi calibrate --from-db --rubric kinayat-explanation --score
    both --by candidate_model` stores it (interval level: expected scores lie between the
    ratings), summarised with the trust map of every stratum."""
    from calibration.calibrate import CalibrationOptions
    from service.cli.calibrate import print_summary, print_trust_map
    from service.db.engine import open_database, session_scope
    from service.reporting.calibration import build_report
    from service.stores.calibration import Selection, rows_from_db, store_report
    from service.stores.projects import DEFAULT_PROJECT

    with session_scope(open_database(database_url)) as session:
        selection = Selection(rubric=RUBRIC, score="both")
        rows, inputs = rows_from_db(session, DEFAULT_PROJECT, selection)
        options = CalibrationOptions(
            scale_min=1.0,
            scale_max=5.0,
            level="interval",
            by=["candidate_model"],
            bootstrap=500,
            seed=0,
        )
        rendered = build_report(rows, options, inputs)
        stored = store_report(session, DEFAULT_PROJECT, "adhoc", RUBRIC, rendered)
    console.print(f"[bold]calibration[/] stored report {stored.id} (GET /calibration/reports)")
    print_summary(rendered[0])
    print_trust_map(rendered[0])
