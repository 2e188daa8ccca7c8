"""`qadi regrade`: grade stored or file answers offline, resumably, at high concurrency."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime
from enum import StrEnum
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
from service.cli.progress import grading_task, progress_bar


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
    from judges.batch import pending_calls
    from service.db.engine import session_scope
    from service.regrading import local as core
    from service.regrading.answers import AnswerError, read_answers
    from service.settings import get_settings
    from service.stores.answers import answers_from_db
    from service.stores.judgments import project_batcher

    if (input_path is None) == (not from_db):
        fail("give an INPUT file or --from-db (one of them)")
    if engine is Engine.ray and workers > 1:
        fail("--workers is for the local engine; the ray engine takes --ray-workers")
    if engine is Engine.local and address is not None:
        fail("--address joins a Ray cluster: add --engine ray")
    sessions, project = open_project(project)
    try:
        if from_db:
            from service.db.filters import parse_pairs

            with session_scope(sessions) as session:
                answers = answers_from_db(
                    session,
                    project,
                    db_rubric,
                    candidate_model,
                    _pairs(parse_pairs, metadata),
                    since,
                )
        else:
            answers = read_answers(input_path)
    except AnswerError as exc:
        fail("\n  ".join(["invalid answers", *exc.problems]))
    answers = answers[:limit] if limit else answers
    if from_db and rubric is None:
        rubric = db_rubric  # answers judged with a rubric are regraded with it by default
    try:
        wanted, notes = core.rubric_plan(answers, rubric)
    except ValueError as exc:
        fail(str(exc))
    rubrics, grader = grading_for(sessions, project, sorted(wanted), config)
    for note in notes:
        console.print(f"[yellow]note[/]: {note}", highlight=False)
    if rubric is not None:
        rubrics = {None: rubrics[rubric]}
    requests = core.requests_for(answers, rubrics, split_names(judges))
    batcher = project_batcher(
        grader, sessions, project, core.options(concurrency, force, retry_failed)
    )
    store = batcher.store
    if ingest is not None or dry_run or batch is not None:
        plans = [batcher.plan(r) for r in requests]
        if ingest is not None:
            _ingest(grader, store, plans, ingest, out_path)
            return
        known = asyncio.run(batcher.known(plans))
        pending = pending_calls(plans, known)
        planned = sum(len(p.panel.judges) for p in plans if not isinstance(p, Exception))
        if dry_run:
            estimate = core.estimate_cost(grader.config, pending)
            skips = sum(len(p.panel.skipped) for p in plans if not isinstance(p, Exception))
            refused = sum(isinstance(p, Exception) for p in plans)
            summary = {
                **estimate,
                "already_stored": planned - len(pending),
                "skipped_by_guard": skips,
                "refused": refused,
            }
            out.print_json(json.dumps(summary))
            return
        from service.regrading.batch_files import write_batch

        try:
            count = write_batch(grader, pending, batch)
        except ValueError as exc:
            fail(str(exc))
        console.print(
            f"wrote {count} requests to {batch} ({planned - len(pending)} already stored); "
            "submit it, then `qadi regrade ... --ingest RESULTS.jsonl`"
        )
        return
    records: list[dict] = []
    started = time.perf_counter()
    try:
        with progress_bar() as progress:
            task = grading_task(progress, "regrade", len(requests))
            stats = BatchStats()

            def advance(graded) -> None:
                if out_path is not None:  # a results line costs a dump per judge
                    records.extend(core.result_records(graded))
                progress.update(
                    task, advance=1, errors=len(stats.failures), cost=stats.cost_text
                )

            if engine is Engine.ray:
                from service.regrading.on_ray import RayCluster, RayEngineError, run_on_ray

                try:
                    run_on_ray(
                        grader.config,
                        requests,
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
                asyncio.run(batcher.run(requests, advance, stats))
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]: finished calls are stored; rerun to resume")
        raise typer.Exit(130) from None
    wall = time.perf_counter() - started
    if out_path is not None:
        core.write_results_file(records, out_path)
    _report(stats, wall, _stand_ins(grader.config, split_names(judges)))
    if stats.failures or stats.refused:
        raise typer.Exit(1)


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
        ("answers refused", len(stats.refused)),
        ("tokens (prompt / completion)", f"{stats.prompt_tokens} / {stats.completion_tokens}"),
        ("cost (USD, LiteLLM prices)", stats.cost_text),
        ("wall time", f"{wall_seconds:.1f} s"),
        ("calls/s", f"{calls_per_second:.1f}"),
    ]
    for name, value in rows:
        table.add_row(name, str(value))
    out.print(table)
    for item, judge, status, error in stats.failures[:50]:
        out.print(f"[red]{status}[/] item {item} judge {judge}: {error}", highlight=False)
    for item, reason in stats.refused[:50]:
        out.print(f"[red]refused[/] item {item}: {reason}", highlight=False)


def _ingest(grader, store, plans, path: Path, out_path: Path | None) -> None:
    from judges import BatchStats, PlannedGrade
    from service.regrading import local as core
    from service.regrading.batch_files import ingest_results

    try:
        graded, unknown = ingest_results(
            grader, [p for p in plans if isinstance(p, PlannedGrade)], path
        )
    except ValueError as exc:
        fail(str(exc))
    graded = core.not_yet_stored(
        graded,
        asyncio.run(
            store.find_done([j.cache_key for g in graded for j in g.judgments], core.EVERY_STATUS)
        ),
    )
    asyncio.run(store.save(graded))
    stats = BatchStats()
    for item in graded:
        stats.add(item)
    if out_path is not None:
        core.write_results_file([r for g in graded for r in core.result_records(g)], out_path)
    _report(stats, 0.0)
    for line in unknown:
        out.print(f"[red]unknown[/] {line}", highlight=False)
    if stats.failures or unknown:
        raise typer.Exit(1)
