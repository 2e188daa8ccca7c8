"""`qadi regrade`: grade stored or file answers offline, resumably, at high concurrency."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from datetime import datetime
from enum import StrEnum
from itertools import islice
from pathlib import Path

import typer
from rich.table import Table

from service.cli.app import (
    app,
    console,
    fail,
    grading_for,
    open_project,
    out,
    project_option,
    split_names,
)
from service.cli.progress import grading_bar


class Engine(StrEnum):
    """Where the calls run: this process (and --workers), or a Ray Data actor pool."""

    local = "local"
    ray = "ray"


@app.command()
def regrade(
    input_path: Path | None = typer.Argument(None, help="answers .jsonl/.csv", dir_okay=False),
    rubric: str | None = typer.Option(
        None,
        help=r"rubric file or id\[@version] for every answer; default: each line's rubric_id",
    ),
    judges: str | None = typer.Option(None, help="comma-separated judge names; default panel"),
    config: Path | None = typer.Option(None, help="judges YAML (default $QADI_JUDGES_CONFIG)"),
    concurrency: int = typer.Option(
        32, min=1, help="judge calls in flight: in total (local), per actor (ray)"
    ),
    workers: int = typer.Option(1, min=1, help="worker processes (LiteLLM is CPU-bound)"),
    engine: Engine = typer.Option(Engine.local, help="local (this machine) or ray (Ray Data)"),
    ray_workers: int = typer.Option(2, min=1, help="--engine ray: actors, one grader each"),
    address: str | None = typer.Option(None, help="--engine ray: join this cluster ('auto')"),
    out_path: Path | None = typer.Option(
        None, "--out", help="results JSONL, a line per answer and judge (written anew each run)"
    ),
    limit: int | None = typer.Option(None, min=1, help="only the first K answers"),
    dry_run: bool = typer.Option(False, "--dry-run", help="count calls and estimate cost only"),
    force: bool = typer.Option(False, "--force", help="call again even when already stored"),
    retry_failed: bool = typer.Option(False, help="also redo stored parse errors"),
    from_db: bool = typer.Option(False, "--from-db", help="regrade answers stored in the DB"),
    db_rubric: str | None = typer.Option(None, help="--from-db: answers judged with this rubric"),
    candidate_model: str | None = typer.Option(None, help="--from-db: only this candidate"),
    metadata: list[str] = typer.Option([], help="--from-db: key=value, repeatable"),
    since: datetime | None = typer.Option(None, help="--from-db: answers stored since"),
    batch: Path | None = typer.Option(None, help="write an OpenAI Batch API JSONL instead"),
    ingest: Path | None = typer.Option(None, help="read a batch results JSONL back"),
    project: str | None = project_option(),
) -> None:
    """Grade answers with the judges core; every outcome goes to the database and --out.

    Rerunning the same command resumes: calls already stored (ok or parse error) are not
    made again. Exit code 1 when any call failed (listed at the end).
    """
    from judges import BatchStats
    from service.collector import start_up_frozen
    from service.regrading import local as core
    from service.regrading.answers import AnswerError
    from service.settings import get_settings
    from service.stores.judgments import project_batcher

    if (input_path is None) == (not from_db):
        fail("give an INPUT file or --from-db (one of them)")
    if engine is Engine.ray and workers > 1:
        fail("--workers is for the local engine; the ray engine takes --ray-workers")
    if engine is Engine.local and address is not None:
        fail("--address joins a Ray cluster: add --engine ray")
    sessions, project = open_project(project)
    answers = _source(sessions, project, input_path, db_rubric, candidate_model, metadata, since)
    if from_db and rubric is None:
        rubric = db_rubric  # answers judged with a rubric are regraded with it by default
    total, wanted, notes = _survey(answers, limit, rubric)
    rubrics, grader = grading_for(sessions, project, sorted(wanted), config)
    for note in notes:
        console.print(f"[yellow]note[/]: {note}", highlight=False)
    if rubric is not None:
        rubrics = {None: rubrics[rubric]}
    # the answers are read again as they are graded: none is held for the whole run
    requests = core.requests_for(islice(answers(None), limit), rubrics, split_names(judges))
    batcher = project_batcher(
        grader, sessions, project, core.options(concurrency, force, retry_failed)
    )
    if ingest is not None:
        _ingest(grader, batcher, requests, ingest, out_path)
        return
    if dry_run:
        out.print_json(json.dumps(_dry_run(grader, batcher, requests)))
        return
    if batch is not None:
        _write_batch(grader, batcher, requests, batch)
        return
    started = time.perf_counter()
    try:
        stats = BatchStats()
        with grading_bar("regrade", total, stats) as tick, core.results_file(out_path) as write:

            def advance(graded) -> None:
                write(graded)
                tick()

            if engine is Engine.ray:
                from service.regrading.on_ray import RayCluster, RayEngineError, run_on_ray

                try:
                    run_on_ray(
                        grader.config,
                        requests,
                        total,
                        core.options(concurrency, force, retry_failed),
                        RayCluster(ray_workers, address),
                        get_settings().database_url,
                        project,
                        stats,
                        advance,
                    )
                except RayEngineError as exc:
                    fail(str(exc))
            elif workers > 1:
                from service.regrading.workers import run_in_workers

                run_in_workers(
                    grader.config,
                    requests,
                    core.options(concurrency, force, retry_failed),
                    workers,
                    get_settings().database_url,
                    project,
                    stats,
                    advance,
                )
            else:
                with start_up_frozen():
                    asyncio.run(batcher.run(requests, advance, stats))
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]: finished calls are stored; rerun to resume")
        raise typer.Exit(130) from None
    except AnswerError as exc:  # the file changed under the run
        fail("\n  ".join(["invalid answers", *exc.problems]))
    wall = time.perf_counter() - started
    _report(stats, wall, _stand_ins(grader.config, split_names(judges)))
    if stats.failed or stats.refusals:
        raise typer.Exit(1)


def _source(sessions, project, input_path, db_rubric, candidate_model, metadata, since):
    """A function that reads the answers anew each time it is called, one at a time: from
    the file (bad rows added to the list it is given, or raised without one), or from the
    database a page at a time."""
    from service.regrading.answers import stream_answers

    if input_path is not None:
        return lambda problems: stream_answers(input_path, problems)
    from service.db.filters import parse_pairs
    from service.stores.answers import stream_answers_from_db

    pairs = _pairs(parse_pairs, metadata)
    return lambda problems: stream_answers_from_db(
        sessions, project, db_rubric, candidate_model, pairs, since
    )


def _survey(answers, limit: int | None, rubric: str | None) -> tuple[int, set[str], list[str]]:
    """A first pass over the answers: every bad row reported at once before any call, the
    count for the progress bar, and the rubrics to load (`rubric_plan`)."""
    from service.regrading import local as core

    problems: list[str] = []
    try:
        plan = core.rubric_plan(islice(answers(problems), limit), rubric)
    except ValueError as exc:  # bad rows come before any other complaint (AnswerError too)
        problems = problems or getattr(exc, "problems", [])
        if not problems:
            fail(str(exc))
    if problems:
        fail("\n  ".join(["invalid answers", *problems]))
    return plan


def _pairs(parse_pairs, values: list[str]) -> dict[str, str]:
    try:
        return parse_pairs(values, "--metadata")
    except ValueError as exc:
        fail(str(exc))


def _stand_ins(config, names: list[str] | None) -> list[str]:
    """The run's judges that are stand-ins (by their model's route), badged."""
    from calibration.formatting import judge_label
    from judges.standins import is_stand_in

    return [
        judge_label(name, True)
        for name in names or config.names
        if name in config.names and is_stand_in(config.judge(name).model)
    ]


def _report(stats, wall_seconds: float, stand_ins: list[str] | None = None) -> None:
    calls_per_second = stats.made / wall_seconds if wall_seconds else 0.0
    table = Table("", "", title="regrade summary")
    rows = [
        *([("stand-in judges (no model)", ", ".join(stand_ins))] if stand_ins else []),
        ("answers", stats.requests),
        ("graded (new calls ok)", stats.calls["ok"]),
        ("already stored (not called)", stats.reused),
        ("parse errors", stats.calls["parse_error"]),
        ("backend errors", stats.calls["backend_error"]),
        ("timeouts", stats.calls["timeout"]),
        ("skipped by the guard", stats.guard_skips),
        ("answers refused", stats.refusals),
        ("tokens (prompt / completion)", f"{stats.prompt_tokens} / {stats.completion_tokens}"),
        ("cost (USD, LiteLLM prices)", stats.cost_text),
        ("wall time", f"{wall_seconds:.1f} s"),
        ("calls/s", f"{calls_per_second:.1f}"),
    ]
    for name, value in rows:
        table.add_row(name, str(value))
    out.print(table)
    for item, judge, status, error in stats.failures:
        out.print(f"[red]{status}[/] item {item} judge {judge}: {error}", highlight=False)
    for item, reason in stats.refused:
        out.print(f"[red]refused[/] item {item}: {reason}", highlight=False)
    for count, shown, what in (
        (stats.failed, len(stats.failures), "failed calls"),
        (stats.refusals, len(stats.refused), "refused answers"),
    ):
        if count > shown:
            out.print(f"... and {count - shown} more {what} (first {shown} shown)")


def _planned(batcher, requests):
    """(plans, stored results) a chunk of requests at a time."""
    from judges.batch import chunks

    for chunk in chunks(requests, batcher.options.chunk):
        plans = batcher.plan_all(chunk)
        yield plans, asyncio.run(batcher.known(plans))


def _pending(batcher, requests, counts: Counter):
    """The calls a run would make, a chunk at a time; `counts` gets the calls planned and
    pending, the judges skipped by the guard and the answers refused."""
    from judges.batch import pending_calls

    for plans, known in _planned(batcher, requests):
        grades = [p for p in plans if not isinstance(p, Exception)]
        pending = pending_calls(plans, known)
        counts["planned"] += sum(len(p.panel.judges) for p in grades)
        counts["skipped"] += sum(len(p.panel.skipped) for p in grades)
        counts["refused"] += len(plans) - len(grades)
        counts["pending"] += len(pending)
        yield from pending


def _dry_run(grader, batcher, requests) -> dict:
    from service.regrading import local as core

    counts: Counter = Counter()
    estimate = core.estimate_cost(grader.config, _pending(batcher, requests, counts))
    return {
        **estimate,
        "already_stored": counts["planned"] - counts["pending"],
        "skipped_by_guard": counts["skipped"],
        "refused": counts["refused"],
    }


def _write_batch(grader, batcher, requests, path: Path) -> None:
    from service.regrading.batch_files import write_batch

    counts: Counter = Counter()
    try:
        count = write_batch(grader, _pending(batcher, requests, counts), path)
    except ValueError as exc:
        fail(str(exc))
    console.print(
        f"wrote {count} requests to {path} ({counts['planned'] - count} already stored); "
        "submit it, then `qadi regrade ... --ingest RESULTS.jsonl`"
    )


def _ingest(grader, batcher, requests, path: Path, out_path: Path | None) -> None:
    """The requests are planned a chunk at a time and each chunk's result lines found in
    the file through an index on disk (`ResultsIndex`), then stored and written: memory
    stays bounded whatever the size of the input or of the results file."""
    from judges import BatchStats, PlannedGrade
    from service.regrading import local as core
    from service.regrading.batch_files import ingest_results

    plans = (p for p in map(batcher.plan, requests) if isinstance(p, PlannedGrade))
    stats, unknown = BatchStats(), 0

    def report_unknown(line: str) -> None:
        nonlocal unknown
        unknown += 1
        out.print(f"[red]unknown[/] {line}", highlight=False)

    try:
        with core.results_file(out_path) as write:
            for graded in ingest_results(grader, plans, path, report_unknown):
                for item in asyncio.run(_store_new(batcher.store, graded)):
                    stats.add(item)
                    write(item)
    except ValueError as exc:
        fail(str(exc))
    _report(stats, 0.0)
    if stats.failed or unknown:
        raise typer.Exit(1)


async def _store_new(store, graded: list) -> list:
    """Save the ingested results whose call is not stored yet (`not_yet_stored`); those."""
    from service.regrading import local as core

    keys = [j.cache_key for g in graded for j in g.judgments]
    fresh = core.not_yet_stored(graded, await store.find_done(keys, core.EVERY_STATUS))
    await store.save(fresh)
    return fresh
