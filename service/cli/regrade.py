"""`qadi regrade`: grade stored or file answers offline, resumably, at high concurrency."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime
from pathlib import Path

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from service.cli.app import app, console, fail, out, split_names


@app.command()
def regrade(
    input_path: Path | None = typer.Argument(None, help="answers .jsonl/.csv", dir_okay=False),
    rubric: str = typer.Option(..., help="rubric file or library id[@version]"),
    judges: str | None = typer.Option(None, help="comma-separated judge names; default panel"),
    config: Path | None = typer.Option(None, help="judges YAML (default $QADI_JUDGES_CONFIG)"),
    concurrency: int = typer.Option(32, min=1, help="judge calls in flight (in total)"),
    workers: int = typer.Option(1, min=1, help="worker processes (LiteLLM is CPU-bound)"),
    out_path: Path | None = typer.Option(None, "--out", help="results JSONL (appended)"),
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
) -> None:
    """Grade answers with the judges core; every outcome goes to the database and --out.

    Rerunning the same command resumes: calls already stored (ok or parse error) are not
    made again. Exit code 1 when any call failed (listed at the end).
    """
    from judges import Grader, JudgeConfigError, load_config
    from rubrics import RubricError, resolve_rubric
    from service import regrade as core
    from service.answers import AnswerError, answers_from_db, read_answers
    from service.db.engine import make_engine, make_sessionmaker, session_scope
    from service.settings import get_settings

    if (input_path is None) == (not from_db):
        fail("give an INPUT file or --from-db (one of them)")
    try:
        graded_rubric = resolve_rubric(rubric)
        grader = Grader(load_config(config), direct=True)
    except (RubricError, JudgeConfigError) as exc:
        fail(str(exc))
    sessions = make_sessionmaker(make_engine(get_settings().database_url))
    try:
        if from_db:
            from service.db.filters import parse_pairs

            with session_scope(sessions) as session:
                answers = answers_from_db(
                    session, db_rubric, candidate_model, _pairs(parse_pairs, metadata), since
                )
        else:
            answers = read_answers(input_path)
    except AnswerError as exc:
        fail("\n  ".join(["invalid answers", *exc.problems]))
    answers = answers[:limit] if limit else answers
    plan = core.make_plan(answers, graded_rubric, grader.config, split_names(judges))
    if ingest is not None:
        _ingest(grader, plan, ingest, sessions, out_path)
        return
    calls, stored = core.pending_calls(sessions, plan, force, retry_failed)
    if dry_run:
        estimate = core.estimate_cost(grader.config, plan, calls)
        out.print_json(
            json.dumps(
                {
                    **estimate,
                    "already_stored": stored,
                    "skipped_by_guard": len(plan.guard_skips),
                    "refused": len(plan.refused),
                }
            )
        )
        return
    if batch is not None:
        from service.batch_files import write_batch

        count = write_batch(grader, calls, batch)
        console.print(
            f"wrote {count} requests to {batch} ({stored} already stored); submit it, "
            f"then `qadi regrade ... --ingest RESULTS.jsonl`"
        )
        return
    core.store_answers(sessions, calls)
    stats = core.Stats(planned=len(plan.calls), already_stored=stored)
    writer = core.ResultWriter(sessions, out_path)
    started = time.perf_counter()
    try:
        with _progress() as progress:
            task = progress.add_task("regrade", total=len(calls), errors=0, cost=0.0)

            def advance(*_) -> None:
                progress.update(task, advance=1, errors=len(stats.errors), cost=stats.cost_usd)

            if workers > 1:
                from service.regrade_workers import run_in_workers

                run_in_workers(
                    grader.config,
                    plan,
                    calls,
                    workers,
                    concurrency,
                    get_settings().database_url,
                    out_path,
                    stats,
                    advance,
                )
            else:
                asyncio.run(
                    core.run_calls(grader, plan, calls, writer, concurrency, stats, advance)
                )
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]: finished calls are stored; rerun to resume")
        raise typer.Exit(130) from None
    stats.wall_seconds = time.perf_counter() - started
    if out_path is not None:
        core.rewrite_results_file(sessions, plan, out_path)
    _report(plan, stats)
    if stats.errors or plan.refused:
        raise typer.Exit(1)


def _pairs(parse_pairs, values: list[str]) -> dict[str, str]:
    try:
        return parse_pairs(values, "--metadata")
    except ValueError as exc:
        fail(str(exc))


class RateColumn(ProgressColumn):
    """Calls per second over rich's sliding window."""

    def render(self, task) -> Text:
        return Text(f"{task.speed:.1f} calls/s" if task.speed else "– calls/s")


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TextColumn("{task.speed:>6.1f}/s" if False else ""),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("errors {task.fields[errors]}  ${task.fields[cost]:.4f}"),
        console=console,
        transient=False,
    )


def _report(plan, stats) -> None:
    calls_per_second = stats.made / stats.wall_seconds if stats.wall_seconds else 0.0
    table = Table("", "", title="regrade summary")
    rows = [
        ("planned calls", stats.planned),
        ("graded (new calls ok)", stats.statuses["ok"]),
        ("already stored (not called)", stats.already_stored),
        ("parse errors", stats.statuses["parse_error"]),
        ("backend errors", stats.statuses["backend_error"]),
        ("timeouts", stats.statuses["timeout"]),
        ("skipped by the guard", len(plan.guard_skips)),
        ("answers refused", len(plan.refused)),
        ("tokens (prompt / completion)", f"{stats.prompt_tokens} / {stats.completion_tokens}"),
        ("cost (USD, LiteLLM prices)", f"{stats.cost_usd:.4f}"),
        ("wall time", f"{stats.wall_seconds:.1f} s"),
        ("calls/s", f"{calls_per_second:.1f}"),
    ]
    for name, value in rows:
        table.add_row(name, str(value))
    out.print(table)
    for item, judge, status, error in stats.errors[:50]:
        out.print(f"[red]{status}[/] item {item} judge {judge}: {error}", highlight=False)
    for item, reason in plan.refused[:50]:
        out.print(f"[red]refused[/] item {item}: {reason}", highlight=False)


def _ingest(grader, plan, path: Path, sessions, out_path: Path | None) -> None:
    from service import regrade as core
    from service.batch_files import ingest_results

    try:
        results, unknown = ingest_results(grader, plan, path)
    except ValueError as exc:
        fail(str(exc))
    core.store_answers(sessions, [p for p, _ in results])
    stats = core.Stats(planned=len(plan.calls))
    writer = core.ResultWriter(sessions, out_path)

    async def write_all() -> None:
        writer.start()
        for planned, result in results:
            stats.add(planned, result)
            await writer.put(planned, result)
        await writer.close()

    asyncio.run(write_all())
    _report(plan, stats)
    for line in unknown:
        out.print(f"[red]unknown[/] {line}", highlight=False)
    if stats.errors or unknown:
        raise typer.Exit(1)
