"""`qadi probe`: how far each judge is moved by perturbations that should not matter."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from pathlib import Path

import typer
from rich.table import Table

from service.cli.app import app, console, fail, open_grading, out, project_option, split_names
from service.cli.progress import grading_bar


@app.command()
def probe(
    input_path: Path | None = typer.Argument(None, help="answers .jsonl/.csv", dir_okay=False),
    rubric: str | None = typer.Option(None, help="rubric file or library id\\[@version]"),
    judges: str | None = typer.Option(None, help="comma-separated judges; default: all configured"),
    probes: str | None = typer.Option(None, help="comma-separated probes; default: all (--list)"),
    config: Path | None = typer.Option(None, help="judges YAML (default $QADI_JUDGES_CONFIG)"),
    seed: int = typer.Option(0, help="seed of the perturbations and of the permutation draws"),
    max_calls: int | None = typer.Option(
        None, min=0, help="refuse to start when the run needs more new judge calls"
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="state the calls and cost only"),
    concurrency: int = typer.Option(32, min=1, help="judge calls in flight"),
    q: float = typer.Option(0.05, help="false discovery rate of the 'moved' decisions (BH)"),
    alpha: float = typer.Option(0.05, help="intervals at 1 - alpha"),
    cluster: str | None = typer.Option(None, help="item attribute whose clusters flip together"),
    permutations: int = typer.Option(
        20000, help="sign patterns: exact when 2^k fit, else this many seeded draws"
    ),
    rewrite_column: str = typer.Option(
        "dialect_rewrite", help="attribute with the paired MSA/dialect rewrite (probe dialect)"
    ),
    limit: int | None = typer.Option(None, min=1, help="only the first K answers"),
    from_db: bool = typer.Option(False, "--from-db", help="probe answers stored in the DB"),
    db_rubric: str | None = typer.Option(None, help="--from-db: answers judged with this rubric"),
    candidate_model: str | None = typer.Option(None, help="--from-db: only this candidate"),
    metadata: list[str] = typer.Option([], help="--from-db: key=value, repeatable"),
    since: datetime | None = typer.Option(None, help="--from-db: answers stored since"),
    out_path: Path | None = typer.Option(None, "--out", help="write the run's JSON here"),
    html: Path | None = typer.Option(None, help="write the run's HTML page here"),
    md: Path | None = typer.Option(None, help="write the run's Markdown here"),
    list_probes: bool = typer.Option(False, "--list", help="list the registered probes"),
    project: str | None = project_option(),
) -> None:
    """Grade original and perturbed versions of the same answers with every judge (paired),
    and report each judge × probe effect with an exact paired test and Benjamini-Hochberg
    q-values. The run is stored (GET /probes/ID); the number of judge calls is stated before
    any is made. Calls go through the grading core: cache, guard and judge rate limits apply.
    """
    from judges.probes import PROBES

    if list_probes:
        _print_probes(PROBES.values())
        return
    from pydantic import ValidationError

    from judges import BatchStats, JudgeConfigError
    from judges.probes import ProbeError
    from judges.templates import TemplateError
    from service.db.engine import session_scope
    from service.regrading import local as regrading
    from service.reporting import probes as core
    from service.reporting.estimates import options_error
    from service.stores.judgments import project_batcher
    from service.stores.probes import store_run

    if (input_path is None) == (not from_db):
        fail("give an INPUT file or --from-db (one of them)")
    if rubric is None:
        fail("--rubric: required (the rubric the judges grade with)")
    try:
        options = core.ProbeOptions(
            judges=split_names(judges),
            probes=split_names(probes),
            seed=seed,
            max_calls=max_calls,
            q=q,
            alpha=alpha,
            cluster=cluster,
            permutations=permutations,
            rewrite_column=rewrite_column,
        )
    except ValidationError as exc:
        fail(f"--{options_error(exc).replace('_', '-')}")
    sessions, project, graded_rubric, grader = open_grading(rubric, config, project)
    answers = _answers(sessions, project, input_path, db_rubric, candidate_model, metadata, since)
    answers = answers[:limit] if limit else answers
    try:
        plan = core.plan_run(grader.config, answers, graded_rubric, options)
    except (ProbeError, JudgeConfigError, TemplateError) as exc:
        fail(str(exc))
    batcher = project_batcher(
        grader, sessions, project, regrading.options(concurrency, False, False)
    )
    try:
        calls, pending = asyncio.run(core.budget(plan, batcher, options.max_calls, dry_run))
    except core.CallBudgetExceeded as exc:
        fail(str(exc))
    console.print(
        f"probe run: {len(plan.judges)} judges × {len(plan.probes)} probes × {plan.n_items} "
        f"items → {len(plan.slots)} pairs; {calls['planned']} judge calls planned, "
        f"{calls['already_stored']} already stored, {calls['to_make']} to make",
        highlight=False,
    )
    if dry_run:
        summary = core.dry_run_summary(plan, calls, pending, grader.config, options.max_calls)
        out.print_json(json.dumps(summary, ensure_ascii=False))
        return
    stats = BatchStats()
    try:
        with grading_bar("probe", len(plan.requests), stats) as tick:
            report = asyncio.run(
                core.run(plan, batcher, graded_rubric, options, calls, lambda _: tick(), stats)
            )
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]: finished calls are stored; rerun to resume")
        raise typer.Exit(130) from None
    with session_scope(sessions) as session:
        row = store_run(session, project, report, plan.perturbations, core.rendered)
        report, markdown, page = row.report, row.markdown, row.html
    console.print(f"stored probe run {report['id']}")
    for path, text in (
        (out_path, json.dumps(report, indent=2, ensure_ascii=False)),
        (html, page),
        (md, markdown),
    ):
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    _print_cells(report)
    for item, judge, status, error in stats.failures:
        out.print(f"[red]{status}[/] item {item} judge {judge}: {error}", highlight=False)
    if stats.failures or stats.refused:
        raise typer.Exit(1)


def _answers(sessions, project, input_path, db_rubric, candidate_model, metadata, since):
    """The answers to probe, from the file or the database; bad input exits with a message."""
    from service.db.engine import session_scope
    from service.db.filters import parse_pairs
    from service.regrading.answers import AnswerError, read_answers
    from service.stores.answers import answers_from_db

    try:
        if input_path is None:
            pairs = parse_pairs(metadata, "--metadata")
            with session_scope(sessions) as session:
                return answers_from_db(session, project, db_rubric, candidate_model, pairs, since)
        return read_answers(input_path)
    except AnswerError as exc:
        fail("\n  ".join(["invalid answers", *exc.problems]))
    except ValueError as exc:
        fail(str(exc))


def _print_probes(probes) -> None:
    table = Table("probe", "what changes", "design", title="registered probes")
    for registered in probes:
        table.add_row(registered.name, registered.summary, registered.source)
    out.print(table)


def _print_cells(report: dict) -> None:
    from calibration.formatting import judge_label
    from calibration.render.probes import change_text, flips_text

    table = Table("judge", "probe", "n", "change [CI]", "flips", "p", "q", "moved")
    for cell in report["cells"]:
        table.add_row(
            judge_label(cell["judge"], cell.get("stand_in")),
            cell["probe"],
            str(cell["n"]),
            change_text(cell),
            flips_text(cell),
            _g(cell.get("p")),
            _g(cell.get("q")),
            "[bold red]yes[/]" if cell["moved"] else "no",
        )
    table.title = f"probe effects (BH q = {report['options']['q']})"
    out.print(table)


def _g(value: float | None) -> str:
    return "—" if value is None else f"{value:.2g}"
