"""`qadi bench list|run|report`: the benchmark suite of the seed papers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import typer
from rich.table import Table

from service.cli.app import app, console, fail, out, split_names

bench_app = typer.Typer(
    help="Benchmarks: Kinayat/Jawaher/MAPS, MIDI, MIDAS, Fann or Flop, SME.", no_args_is_help=True
)
app.add_typer(bench_app, name="bench")


@bench_app.command("list")
def bench_list() -> None:
    """Benchmarks, tasks, dataset ids and local file names."""
    from benchmarks.suites import SUITES

    table = Table("suite", "task", "dataset", "local file", "answer", "what")
    for suite, tasks in SUITES.items():
        for task in tasks:
            table.add_row(
                suite,
                task.name,
                f"{task.source.hf_id} [{task.source.split}]",
                f"{task.source.file}.jsonl",
                task.answer,
                task.description,
            )
    out.print(table)


def _models(names: list[str], config: Path | None):
    """Target models: entries of a LiteLLM model_list file, or bare LiteLLM model ids."""
    from judges import JudgeConfigError, load_config, parse_config

    try:
        loaded = load_config(config) if config else None
    except JudgeConfigError as exc:
        fail(str(exc))
    entries = [e.model_dump() for e in loaded.model_list] if loaded else []
    known = {e["model_name"] for e in entries}
    entries += [{"model_name": n, "litellm_params": {"model": n}} for n in names if n not in known]
    qadi = loaded.qadi.model_dump() if loaded else {}
    return parse_config({"model_list": entries, "qadi": {**qadi, "guard": "off"}})


@bench_app.command("run")
def bench_run(
    suite: str = typer.Option(..., help="kinayat | midi | midas | full | a task name"),
    model: str = typer.Option(..., help="target model(s), comma-separated"),
    config: Path | None = typer.Option(None, help="LiteLLM model_list YAML for the targets"),
    data_dir: Path | None = typer.Option(None, help="local files in the published schemas"),
    limit: int | None = typer.Option(None, min=1, help="first K records of each task"),
    concurrency: int = typer.Option(16, min=1),
    mode: str = typer.Option("generate", help="generate (strict parse) | loglik (vLLM)"),
    seed: int = typer.Option(0, help="option-shuffle seed"),
    judges: str | None = typer.Option(None, help="judge panel for generative tasks"),
    judges_config: Path | None = typer.Option(
        None, help="judges YAML for generative tasks (default $QADI_JUDGES_CONFIG)"
    ),
    guard: str | None = typer.Option(
        None, help="self-evaluation guard for the judges: provider | model | off (recorded)"
    ),
    templates: Path | None = typer.Option(
        None, help="YAML/JSON {task: {language: template}} of localized prompts (MIDAS)"
    ),
) -> None:
    """Generate answers, score them the way the papers did (multiple choice) or grade them
    with the judge panel (explanations, SME cross-evaluation), and store the run. Exits 1
    when every task was skipped."""
    from benchmarks.generation import CandidateModel
    from benchmarks.suite import Suite, SuiteOptions, localized
    from benchmarks.suites import tasks_of
    from judges.client import JudgeClient
    from service.db.engine import open_database
    from service.settings import get_settings
    from service.stores import bench as bench_store

    if mode not in ("generate", "loglik"):
        fail(f"--mode: expected generate or loglik, got '{mode}'")
    if guard not in (None, "provider", "model", "off"):
        fail(f"--guard: expected provider, model or off, got '{guard}'")
    try:
        tasks = localized(tasks_of(suite), _templates(templates) if templates else {})
    except (KeyError, ValueError) as exc:
        fail(f"--suite/--templates: {exc.args[0]}")
    names = split_names(model) or []
    router = JudgeClient(_models(names, config))
    sessions = open_database(get_settings().database_url)
    grade, guard_used = _grading(tasks, judges_config, guard, sessions)
    options = SuiteOptions(
        suite, mode, seed, limit, concurrency, data_dir, split_names(judges), guard_used
    )
    with _BarProgress() as progress:
        runner = Suite(
            tasks,
            options,
            bench_store.DbRunStore(sessions),
            bench_store.DbAnswerCache(sessions),
            grade,
            progress,
        )
        runs = asyncio.run(runner.run([CandidateModel(router, n) for n in names]))
    for run in runs:
        out.print(f"run {run.run_id} ({run.model})")
        _print(run.summary)
    if runs and all(run.all_skipped for run in runs):
        fail("every task was skipped (see the reasons above)", code=1)


def _templates(path: Path) -> dict[str, dict[str, str]]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        fail(f"--templates: cannot read {path}: {exc}")
    if not isinstance(data, dict) or not all(
        isinstance(v, dict) and all(isinstance(t, str) for t in v.values()) for v in data.values()
    ):
        fail("--templates: expected a mapping {task: {language: template text}}")
    return data


def progress_columns() -> tuple:
    """Description, bar, done/total, elapsed and ETA: counts and time left, not a spinner."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return (
        "{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        "ETA",
        TimeRemainingColumn(),
    )


class _BarProgress:
    """`benchmarks.suite.Progress` as a rich progress bar, one bar per model × task."""

    def __enter__(self):
        from rich.progress import Progress

        self.bar = Progress(*progress_columns(), console=console)
        self.bar.__enter__()
        self.current = None
        return self

    def __exit__(self, *exc) -> None:
        self.bar.__exit__(*exc)

    def start(self, label: str, total: int) -> None:
        self.current = self.bar.add_task(label, total=total)

    def advance(self) -> None:
        self.bar.advance(self.current)

    def note(self, message: str) -> None:
        self.bar.console.print(f"[yellow]note[/] {message}", highlight=False)


def _grading(tasks, judges_config: Path | None, guard: str | None, sessions):
    """The grading function for generative tasks (the batch core's `grade_one`, every
    judgment stored) and the guard level it applies, or (None, guard) when every task is
    multiple choice or no judges are configured."""
    if not any(t.generative for t in tasks):
        return None, guard or "provider"
    from judges import Grader, JudgeConfigError, load_config
    from service.stores.judgments import project_batcher
    from service.stores.projects import DEFAULT_PROJECT

    try:
        loaded = load_config(judges_config)
    except JudgeConfigError as exc:
        console.print(f"[yellow]generative tasks skipped[/]: they need judges ({exc})")
        return None, guard or "provider"
    if guard is not None:
        loaded = loaded.model_copy(update={"qadi": loaded.qadi.model_copy(update={"guard": guard})})
    # benchmarks are the operator's, not a team's: their judgments are the default project's
    grader = project_batcher(Grader(loaded), sessions, DEFAULT_PROJECT)
    return grader.grade_one, loaded.qadi.guard


@bench_app.command("runs")
def bench_runs(limit: int = typer.Option(50, min=1, help="newest N runs")) -> None:
    """Stored benchmark runs, newest first: id, suite, model, mode, seed, tasks run/skipped."""
    from service.db.engine import open_database
    from service.settings import get_settings
    from service.stores import bench as bench_store

    factory = open_database(get_settings().database_url)
    table = Table("run", "created", "suite", "model", "mode", "seed", "tasks", "skipped")
    for run in bench_store.list_runs(factory, limit):
        skipped = sum("skipped" in t for t in run.summary.values())
        table.add_row(
            run.id,
            run.created_at.strftime("%Y-%m-%d %H:%M"),
            run.suite,
            run.model,
            run.mode,
            str(run.seed),
            str(len(run.summary)),
            str(skipped),
        )
    out.print(table)


@bench_app.command("report")
def bench_report(
    run_ids: list[str] = typer.Argument(..., help="one run, or several SME runs to pool"),
    html_path: Path | None = typer.Option(None, "--html", help="also write an HTML report"),
    json_path: Path | None = typer.Option(
        None, "--json", help="also write the report JSON (per-task numbers and breakdowns)"
    ),
    bootstrap: int = typer.Option(1000, min=0, help="resamples for the SME calibration"),
) -> None:
    """Accuracy ± stderr per task beside the published number for the same model; for the
    SME cross-evaluation, the judges' calibration against the imported SME grades, pooled
    over every run given (the paper pools five targets)."""
    from benchmarks.report import run_json, to_html
    from service.cli.bench_sme import sme_report
    from service.db.engine import open_database
    from service.settings import get_settings
    from service.stores import bench as bench_store

    factory = open_database(get_settings().database_url)
    runs = [bench_store.load_run(factory, run_id) for run_id in run_ids]
    for run_id, run in zip(run_ids, runs, strict=True):
        if run is None:
            fail(f"no benchmark run '{run_id}'")
    for run in runs:
        out.print(
            f"run {run.id}: suite {run.suite}, model {run.model}, mode {run.mode}, seed {run.seed}"
        )
        _print(run.summary)
        for task, data in run.summary.items():
            for note in data.get("notes", []):
                out.print(f"{task}: {note}", soft_wrap=True, highlight=False)
    sme_runs = [
        r.id for r in runs if "skipped" not in r.summary.get("sme-crosseval", {"skipped": 1})
    ]
    calibration = sme_report(factory, sme_runs, bootstrap) if sme_runs else None
    if json_path is not None:
        reports = [run_json(r.id, r.suite, r.model, r.summary) for r in runs]
        data = reports[0] if len(reports) == 1 else {"runs": reports}
        if calibration is not None:
            data["sme"] = calibration.pooled
        json_path.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    if html_path is not None:
        html_path.write_text(to_html([_stored(run) for run in runs]), encoding="utf-8")
        if calibration is not None:
            path = html_path.with_suffix(".calibration.html")
            path.write_text(calibration.html, encoding="utf-8")


def _print(summary: dict) -> None:
    from benchmarks.report import HEADER, cells

    table = Table(*HEADER)
    for task, data in summary.items():
        table.add_row(task, *cells(data))
    out.print(table)


def _stored(run) -> dict:
    """A stored run as `benchmarks.report.to_html` reads it."""
    created = run.created_at.strftime("%Y-%m-%d %H:%M") if run.created_at else None
    return {
        "run": run.id,
        "suite": run.suite,
        "model": run.model,
        "mode": run.mode,
        "seed": run.seed,
        "created": created,
        "summary": run.summary,
    }
