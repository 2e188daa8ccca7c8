"""`qadi report nightly`: a report over a rolling window, with drift against the last one;
`qadi report diff OLD NEW`: the same drift test between any two reports."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import typer
from rich.table import Table

from calibration.formatting import drift_line, fmt, with_interval
from service.cli.app import app, console, fail, open_project, out, project_option
from service.cli.calibrate import (
    CASCADE,
    LEVELS,
    PROBE_RUN,
    TRUST_ALPHA,
    TRUST_CONFIDENCE,
    TRUST_DELTA,
    TRUST_TOLERANCE,
    attach_probe_run,
    check_choice,
    cli_options,
    compute_report,
    print_summary,
    scale_for,
    scorings,
    trust_options,
    write_outputs,
)
from service.db.engine import session_scope
from service.db.values import utcnow
from service.stores.projects import Tenant

report_app = typer.Typer(help="Stored calibration reports.", no_args_is_help=True)
app.add_typer(report_app, name="report")

DRIFT_EXIT = 3
DEFAULT_STRATA = ("dialect", "category")
_WINDOW = re.compile(r"^(\d+)([mhd])$")


def parse_window(text: str) -> timedelta:
    match = _WINDOW.match(text.strip())
    if not match:
        fail(f"--window: expected a number and m/h/d such as 24h or 7d, got '{text}'")
    amount, unit = int(match.group(1)), match.group(2)
    return timedelta(**{{"m": "minutes", "h": "hours", "d": "days"}[unit]: amount})


def default_strata(rows) -> str:
    """dialect and category, those of them the window's grades carry: a default is not an
    error when a deployment has no categories (an unknown `--by` given by hand is)."""
    carried = {key for row in rows for key in row.attributes}
    return ",".join(a for a in DEFAULT_STRATA if a in carried)


@report_app.command("nightly")
def nightly(
    window: str = typer.Option("24h", help="judgments of the last 24h / 7d / 90m"),
    out_dir: Path = typer.Option(Path("reports"), help="where JSON, Markdown, HTML are written"),
    rubric: str | None = typer.Option(None, help="only this rubric (sets the scale)"),
    scale: str | None = typer.Option(None, help="MIN-MAX when no --rubric is given"),
    by: str | None = typer.Option(
        None, help="strata attributes (default: dialect and category, those the grades carry)"
    ),
    bootstrap: int = typer.Option(2000, min=0),
    seed: int = typer.Option(0),
    level: str | None = typer.Option(None, help="nominal | ordinal | interval"),
    alt_test: bool = typer.Option(False, "--alt-test", help="require the alt-test"),
    epsilon: float = typer.Option(0.2, help="alt-test cost-benefit allowance"),
    alt_scoring: str | None = typer.Option(
        None, help="accuracy | neg_rmse | balanced_accuracy | jaccard (see qadi calibrate)"
    ),
    alt_min_items: int = typer.Option(
        30, help="items (clusters with --cluster) an annotator needs to be tested; at least 20"
    ),
    probe_run: str | None = PROBE_RUN,
    trust_alpha: float = TRUST_ALPHA,
    trust_delta: float = TRUST_DELTA,
    trust_tolerance: float | None = TRUST_TOLERANCE,
    cascade: list[str] = CASCADE,
    trust_confidence: str = TRUST_CONFIDENCE,
    project: str | None = project_option(),
) -> None:
    """Report over the window, compared with the previous nightly report; it carries the
    judges' corrected means (PPI, `qadi estimate`) per --by stratum as `estimate`.

    Exit code 3 on drift — a judge × stratum × metric whose change from the previous report
    is significant by Welch's test after Benjamini–Hochberg over the night's cells (the rule
    of `qadi report diff`) — so cron or CI can alert; 0 otherwise.
    """
    from service.reporting.calibration import render_report
    from service.reporting.estimates import with_estimate
    from service.reporting.nightly import with_drift_and_history
    from service.stores.calibration import (
        Selection,
        latest_report,
        nightly_history,
        rows_from_db,
        store_report,
        with_stored_rubric_weights,
    )

    until = utcnow()
    since = until - parse_window(window)
    check_choice("--level", level, LEVELS)
    check_choice("--alt-scoring", alt_scoring, scorings() if alt_scoring else ())
    sessions, project = open_project(project)
    with session_scope(sessions) as session:
        bounds, level, weights = scale_for(session, project, scale, rubric, level)
        selection = Selection(rubric=rubric, since=since, until=until, scale=bounds)
        rows, inputs = rows_from_db(session, project, selection)
        options = cli_options(
            bounds,
            level,
            by if by is not None else default_strata(rows),
            bootstrap=bootstrap,
            seed=seed,
            criterion_weights=weights,
            alt_test=alt_test,
            epsilon=epsilon,
            alt_scoring=alt_scoring,
            alt_min_items=alt_min_items,
            selective=trust_options(
                trust_alpha, trust_delta, trust_tolerance, cascade, trust_confidence
            ),
        )
        options = with_stored_rubric_weights(session, project, options, inputs)
        previous = latest_report(session, Tenant(project), kind="nightly", scope=rubric or "")
        history = nightly_history(session, project, rubric or "")
    # computed between two short transactions, not inside one: on SQLite a transaction
    # holds the write lock, and every POST /judge would wait for the report (issue 31.10)
    report = compute_report(rows, options, inputs)
    found = with_drift_and_history(
        report, (previous.id, previous.report) if previous else None, history, until
    )
    rendered = with_estimate(render_report(report, rows, options), rows, options.by, bounds)
    with session_scope(sessions) as session:
        rendered = attach_probe_run(session, project, rendered, probe_run)
        stored = store_report(
            session, project, "nightly", rubric or "", rendered, (since, until)
        )
    stamp = until.strftime("%Y%m%dT%H%M%S")
    report, markdown, html_text = rendered
    base = out_dir / f"nightly-{rubric or 'all'}-{stamp}"
    write_outputs(
        {
            base.with_suffix(".json"): json.dumps(report, indent=2, ensure_ascii=False),
            base.with_suffix(".md"): markdown,
            base.with_suffix(".html"): html_text,
        }
    )
    print_summary(report)
    out.print(f"report {stored.id} written to {base}.{{json,md,html}}")
    for change in found["changes"]:
        console.print(f"[bold red]drift[/] {drift_line(change)}", highlight=False)
    exit_on_drift(found)


def exit_on_drift(found: dict) -> None:
    """Exit 3 when the drift rule (`calibration.drift.drifted`) says so; return otherwise."""
    from calibration.drift import drifted

    if drifted(found):
        raise typer.Exit(DRIFT_EXIT)


def load_report(reference: str, name: str, project: str | None) -> dict:
    """A report from a JSON file (`qadi calibrate --out`, a nightly JSON, an API payload) or,
    when no such file exists, a stored report id of the project."""
    path = Path(reference)
    if not path.is_file() and (path.suffix == ".json" or "/" in reference):
        fail(f"{name}: no such file {reference}")
    if path.is_file():
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            fail(f"{name}: {reference} is not a report JSON file ({exc})")
    else:
        from service.stores.calibration import get_report

        sessions, chosen = open_project(project)
        with session_scope(sessions) as session:
            row = get_report(session, Tenant(chosen), reference)
            if row is None:
                fail(f"{name}: no file and no stored report '{reference}'")
            report = row.report
    if not isinstance(report, dict) or not isinstance(report.get("judges"), dict):
        fail(f"{name}: {reference} has no 'judges': not a calibration report")
    return report


def _cell_row(cell: dict) -> list[str]:
    untested = f"untested: {cell['untested']}" if cell.get("untested") else ""
    return [
        cell["judge"],
        cell["stratum"],
        cell["metric"],
        with_interval(cell["previous"], cell["previous_ci"]),
        with_interval(cell["value"], cell["ci"]),
        f"{cell['difference']:+.3f}",
        fmt(cell["p_value"], 4),
        fmt(cell["q_value"], 4),
        "DRIFT" if cell["drift"] else untested,
    ]


@report_app.command("diff")
def diff(
    old: str = typer.Argument(..., help="the earlier report: a JSON file or a stored report id"),
    new: str = typer.Argument(..., help="the later report: a JSON file or a stored report id"),
    all_cells: bool = typer.Option(False, "--all", help="print every tested cell, not only drift"),
    as_json: bool = typer.Option(False, "--json", help="print the drift JSON instead of a table"),
    project: str | None = project_option(),
) -> None:
    """Test every judge × stratum × metric the two reports share for a change (Welch's test
    on both reports' standard errors, Fisher's exact test where both were constant, cells
    under 5 units untested; Benjamini–Hochberg over all cells at q = 0.05) and print the
    changes with their p- and q-values.

    Exit code 3 when any cell drifted (the rule of `qadi report nightly`), 0 otherwise.
    """
    from calibration.drift import drift

    before = load_report(old, "OLD", project)
    found = drift(load_report(new, "NEW", project), before)
    if as_json:
        out.print_json(data=found)
    else:
        shown = found["cells"] if all_cells else found["changes"]
        table = Table(
            "judge", "stratum", "metric", "old [CI]", "new [CI]", "Δ", "p", "q (BH)", "",
            title="drift: every tested cell" if all_cells else "drift",
        )
        for cell in sorted(shown, key=lambda c: (c["q_value"] is None, c["q_value"] or 0)):
            table.add_row(*_cell_row(cell))
        if shown:
            out.print(table)
        out.print(
            f"{found['tested']} cell(s) tested, {found['untested']} untested (too few units "
            f"or no standard error); {len(found['changes'])} drifted (Benjamini–Hochberg, "
            f"q ≤ {found['q']})"
        )
    exit_on_drift(found)
