"""`qadi calibrate`, and the option handling `qadi report nightly` shares."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import typer
from pydantic import ValidationError
from rich.table import Table

from calibration.formatting import judge_label
from service.cli.app import app, console, fail, open_project, out, project_option, split_names
from service.cli.selection import (
    ADDRESS,
    ENGINE,
    FROM_PARQUET,
    JUDGES,
    METADATA,
    SINCE,
    UNTIL,
    check_source,
    db_selection,
    parquet_rows,
    parquet_rubric,
)
from service.db.engine import session_scope

_SCALE = re.compile(r"^(-?\d+(?:\.\d+)?)-(-?\d+(?:\.\d+)?)$")


def parse_scale(text: str) -> tuple[float, float]:
    match = _SCALE.match(text.strip())
    if not match:
        fail(f"--scale: expected MIN-MAX such as 1-5 or 0-100, got '{text}'")
    return float(match.group(1)), float(match.group(2))


LEVELS = ("nominal", "ordinal", "interval")
SCORES = ("discrete", "expected", "both")


def scorings() -> tuple[str, ...]:
    """The registered alt-test scorings (`calibration.scoring`), loaded only when asked."""
    from calibration.scoring import BY_NAME

    return tuple(BY_NAME)


def cli_options(scale, level, by, **fields):
    """CalibrationOptions from CLI values: `scale` parsed, `by` a comma list, `fields` the
    options named as in CalibrationOptions (reference, bootstrap, alt-test, weights...);
    at most QADI_REPORT_STRATA_MAX strata, as over HTTP."""
    from calibration.calibrate import CalibrationOptions
    from service.settings import get_settings

    try:
        return CalibrationOptions(
            scale_min=scale[0] if scale else None,
            scale_max=scale[1] if scale else None,
            level=level,
            by=split_names(by) or [],
            max_strata=get_settings().report_strata_max,
            **fields,
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        fail(f"--{field.replace('_', '-')}: {message}" if field else message)


# Selective judging (docs/how-to/trust-at-request-time.md): the options `qadi calibrate` and
# `qadi report nightly` share, defaults of both commands.
TRUST_ALPHA = typer.Option(
    0.1, "--trust-alpha", help="trust at request time: most disagreement with the SMEs allowed "
    "among trusted verdicts"
)  # fmt: skip
TRUST_DELTA = typer.Option(
    0.1, "--trust-delta", help="trust at request time: chance the guarantee fails"
)
TRUST_TOLERANCE = typer.Option(
    None, "--trust-tolerance", help="interval scales: a verdict this close to the humans' "
    "reference agrees (default 10% of the range); labels and ratings agree when equal"
)  # fmt: skip
CASCADE = typer.Option(
    [], "--cascade", help="judges in escalation order, e.g. cheap,strong (repeatable): its "
    "threshold is calibrated too"
)  # fmt: skip
JURY = typer.Option(
    [], "--jury", help="judges whose verdicts are pooled into one evaluator, e.g. a,b,c "
    "(repeatable): weights fitted on a third of the labels, its threshold on the rest"
)  # fmt: skip
PROBE_RUN = typer.Option(
    None,
    "--probe-run",
    help="stored probe run (ID or 'latest') whose moved judges are marked on the trust map",
)
TRUST_CONFIDENCE = typer.Option(
    "token", "--trust-confidence", help="token (the judge's token probability of its verdict) "
    "| panel (the share of the other judges that agree)"
)  # fmt: skip


def trust_options(alpha, delta, tolerance, cascades, confidence, juries=()) -> dict:
    """The `selective` field of CalibrationOptions from the --trust-* and --cascade options,
    or a clean exit naming the option at fault."""
    from calibration.selective_report import SelectiveOptions

    check_choice("--trust-confidence", confidence, ("token", "panel"))
    try:
        return SelectiveOptions(
            alpha=alpha,
            delta=delta,
            tolerance=tolerance,
            cascades=[split_names(c) for c in cascades],
            juries=[split_names(j) for j in juries],
            confidence=confidence,
        ).model_dump()
    except ValidationError as exc:
        error = exc.errors()[0]
        name = {"cascades": "cascade", "juries": "jury", "confidence": "trust-confidence"}.get(
            str(error["loc"][0]), f"trust-{error['loc'][0]}"
        )
        fail(f"--{name}: {error['msg'].removeprefix('Value error, ')}")


def check_choice(option: str, value: str | None, choices: tuple[str, ...]) -> None:
    if value not in (None, *choices):
        fail(f"{option}: expected {' or '.join(choices)}, got '{value}'")


def print_summary(report: dict, target=console) -> None:
    """The overall numbers and verdicts per judge (stderr beside report files; stdout, with
    the trust map of every stratum, when the table is the only output)."""
    table = Table(
        "judge",
        "n",
        "MAD",
        "signed error",
        "exact",
        "tau-b",
        "kappa",
        "alpha",
        "alt-test ω / ρ",
        title="calibration (overall)",
    )
    verdicts = {r["judge"]: r for r in report["trust"]["rows"] if r["stratum"] == "overall"}
    metrics = ("mad", "signed_error", "exact_match", "kendall_tau", "cohen_kappa")
    for judge, data in report["judges"].items():
        block = data["overall"]
        cells = [block.get(m) for m in (*metrics, "krippendorff_alpha")]
        trust = verdicts[judge]
        alt = f"{trust['verdict']} {_two(trust['winning_rate'])} / "
        alt += _two(trust["advantage_probability"])
        if trust.get("missing"):
            alt = f"insufficient: {trust['missing']}"
        label = judge_label(judge, data.get("stand_in"))
        table.add_row(label, str(block["n"]), *[_two(v, 3) for v in cells], alt)
    target.print(table)
    if not report["judges"]:
        target.print(
            "[bold yellow]no judge's grades:[/] every row is a human's (rater_kind human), so no "
            "judge is compared with the SMEs; add the judges' rows (rater_kind judge), or grade "
            "the items and calibrate --from-db",
            highlight=False,
        )
    best = report["trust"]["best"].get("overall")
    target.print(f"best overall: {best or 'no judge replaces an SME here'}")
    for warning in (report.get("design") or {}).get("warnings") or []:
        target.print(f"[bold yellow]labelling design:[/] {warning}", highlight=False)


def print_trust_map(report: dict, target=out) -> None:
    """The trust map of every stratum: a row per judge, a column per stratum."""
    strata = [s for s in report["trust"]["best"] if s != "overall"]
    if not strata:
        return
    cells = {
        (r["judge"], r["stratum"]): r["verdict"] + (f": {r['missing']}" if r.get("missing") else "")
        for r in report["trust"]["rows"]
    }
    table = Table("judge", *strata, title="trust map by stratum")
    for judge, data in report["judges"].items():
        label = judge_label(judge, data.get("stand_in"))
        table.add_row(label, *[cells.get((judge, s), "—") for s in strata])
    target.print(table)


def print_thresholds(report: dict, target=out) -> None:
    """Selective judging: per judge or cascade and stratum, the threshold and what it buys
    (the rows of the HTML and Markdown reports)."""
    # here, not at the top: the report's views import SciPy, most of a second that every
    # other command's start-up would pay (tests/perf/bench_start_up.py)
    from calibration.render.report_view import selective_view

    section = selective_view(report.get("selective"))
    if section is None:
        return
    table = Table("judge or cascade", "stratum", "n", "threshold", "coverage", "agreement",
                  "guaranteed", "notes", title=section["title"])  # fmt: skip
    for row in section["rows"]:
        table.add_row(*row)
    target.print(table)


def _two(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def write_outputs(outputs: dict[Path | None, str]) -> None:
    for path, text in outputs.items():
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


@app.command()
def calibrate(
    grades_file: Path | None = typer.Argument(None, help="CSV/JSONL grades (interchange format)"),
    from_db: bool = typer.Option(
        False, "--from-db", help="use human grades and judgments in the DB"
    ),
    from_parquet: Path | None = FROM_PARQUET,
    engine: str = ENGINE,
    address: str | None = ADDRESS,
    since: datetime | None = SINCE,
    until: datetime | None = UNTIL,
    metadata: list[str] = METADATA,
    rubric: str | None = typer.Option(
        None,
        help=r"id\[@version]: with --from-db/--from-parquet only this rubric (sets --scale); "
        "with a file, its criterion weights give the points at stake",
    ),
    judges: str | None = JUDGES,
    score: str = typer.Option(
        "discrete",
        help="with --from-db/--from-parquet: discrete (each judge's grade) | expected (its "
        "probability-weighted expected score, as rater JUDGE~expected) | both, to compare them; "
        "expected scores default the level to interval",
    ),
    scale: str | None = typer.Option(None, help="MIN-MAX of the scale, e.g. 1-5 or 0-100"),
    level: str | None = typer.Option(
        None, help="nominal | ordinal | interval (default from the scale); nominal: labels"
    ),
    reference: str = typer.Option("mean", help="mean | median | a human rater's id"),
    by: str | None = typer.Option(None, help="strata attributes, e.g. dialect,category"),
    bootstrap: int = typer.Option(2000, min=0, help="bootstrap resamples"),
    seed: int = typer.Option(0, help="bootstrap seed"),
    cluster: str | None = typer.Option(None, help="resample clusters of this attribute"),
    confidence: float = typer.Option(
        0.95, help="confidence level of every interval, between 0 and 1 (exclusive)"
    ),
    alt_test: bool = typer.Option(
        False, "--alt-test", help="require the alt-test: error unless 3 annotators are testable"
    ),
    epsilon: float = typer.Option(
        0.2, help="alt-test cost-benefit allowance: 0.2 experts, 0.15 skilled, 0.1 crowd"
    ),
    alt_scoring: str | None = typer.Option(
        None,
        help="accuracy | neg_rmse (the authors') | balanced_accuracy (chance-corrected: every "
        "label class weighs the same) | jaccard (tag sets 'a|b'); default: accuracy for labels, "
        "neg_rmse for numbers",
    ),
    alt_min_items: int = typer.Option(
        30, help="items (clusters with --cluster) an annotator needs to be tested; at least 20"
    ),
    out_path: Path | None = typer.Option(
        None, "--out", help="report JSON; without --out, --html or --md the table is printed"
    ),
    html: Path | None = typer.Option(None, help="also write a self-contained HTML report"),
    md: Path | None = typer.Option(None, help="also write a Markdown report"),
    probe_run: str | None = PROBE_RUN,
    trust_alpha: float = TRUST_ALPHA,
    trust_delta: float = TRUST_DELTA,
    trust_tolerance: float | None = TRUST_TOLERANCE,
    cascade: list[str] = CASCADE,
    jury: list[str] = JURY,
    trust_confidence: str = TRUST_CONFIDENCE,
    project: str | None = project_option(),
) -> None:
    """Measure every judge against the human grades, overall and per stratum, with CIs,
    the alt-test and the trust map (which judge may replace the SMEs, where); where judges
    give confidences, the thresholds POST /judge trusts their verdicts above. With
    --from-db, over one project's grades and judgments, and stored in it; with
    --from-parquet, over a `qadi export` folder (not stored: no database is read)."""
    # numpy, scipy and matplotlib load only when a report is computed, not for `qadi --help`
    from calibration.formats.interchange import GradeFormatError, read_grades
    from service.stores.calibration import rows_from_db, store_report, with_stored_rubric_weights

    check_source(
        grades_file, from_db, from_parquet, engine, address, since=since, until=until,
        metadata=metadata,
    )  # fmt: skip
    check_choice("--level", level, LEVELS)
    check_choice("--score", score, SCORES)
    if score != "discrete" and grades_file is not None:
        fail("--score: expected scores come from stored judgments; add --from-db")
    if probe_run is not None and from_parquet is not None:
        fail("--probe-run: stored probe runs are in the database; not with --from-parquet")
    check_choice("--alt-scoring", alt_scoring, scorings() if alt_scoring else ())
    fields = {
        "reference": reference,
        "bootstrap": bootstrap,
        "seed": seed,
        "cluster": cluster,
        "confidence": confidence,
        "alt_test": alt_test,
        "epsilon": epsilon,
        "alt_scoring": alt_scoring,
        "alt_min_items": alt_min_items,
        "selective": trust_options(
            trust_alpha, trust_delta, trust_tolerance, cascade, trust_confidence, jury
        ),
    }
    if grades_file is not None:
        if scale is None and level != "nominal":
            fail("--scale: required with a grades file (e.g. --scale 1-5) unless --level nominal")
        try:
            rows = read_grades(grades_file, level)
        except GradeFormatError as exc:
            fail("\n  ".join([f"{grades_file}: invalid grades", *exc.problems]))
        inputs = {"source": str(grades_file)}
        bounds = parse_scale(scale) if scale else None
        weights = _file_rubric_weights(rubric)
        options = cli_options(bounds, level, by, criterion_weights=weights, **fields)
        rendered = render_rows(rows, options, inputs)
        if probe_run is not None:
            sessions, project = open_project(project)
            with session_scope(sessions) as session:
                rendered = attach_probe_run(session, project, rendered, probe_run)
    elif from_parquet is not None:
        bounds, level, weights = _parquet_scale(scale, rubric, level, score)
        options = cli_options(bounds, level, by, criterion_weights=weights, **fields)
        selection = db_selection(
            judges=judges, rubric=rubric, metadata=metadata, since=since, until=until,
            scale=bounds, score=score,
        )  # fmt: skip
        rows, inputs = parquet_rows(from_parquet, selection, project, engine, address)
        rendered = render_rows(rows, _with_bundled_weights(options, inputs), inputs)
    else:
        sessions, project = open_project(project)
        with session_scope(sessions) as session:
            explicit_level = level
            bounds, level, weights = scale_for(session, project, scale, rubric, level)
            if score != "discrete" and explicit_level is None:
                level = "interval"  # expected scores lie between the ratings
            options = cli_options(bounds, level, by, criterion_weights=weights, **fields)
            selection = db_selection(
                judges=judges, rubric=rubric, metadata=metadata, since=since, until=until,
                scale=bounds, score=score,
            )  # fmt: skip
            rows, inputs = rows_from_db(session, project, selection)
            options = with_stored_rubric_weights(session, project, options, inputs)
            rendered = render_rows(rows, options, inputs)
            rendered = attach_probe_run(session, project, rendered, probe_run)
            window = (since, until)
            stored = store_report(session, project, "adhoc", rubric or "", rendered, window)
            console.print(f"stored report {stored.id}")
    report, markdown, html_text = rendered
    write_outputs(
        {out_path: json.dumps(report, indent=2, ensure_ascii=False), html: html_text, md: markdown}
    )
    if out_path is None and html is None and md is None:
        print_summary(report, target=out)
        print_trust_map(report)
        print_thresholds(report)
    else:
        print_summary(report)


def attach_probe_run(session, project: str, rendered, probe_run: str | None):
    """The rendered report with a stored probe run of the project marked on it, or a clean
    exit naming it."""
    from service.reporting.probes import ProbeRunError, with_probe_run
    from service.stores.projects import Tenant

    try:
        return with_probe_run(session, Tenant(project), rendered, probe_run)
    except ProbeRunError as exc:
        fail(f"--probe-run: {str(exc).removeprefix('probe_run: ')}")


def compute_report(rows, options, inputs) -> dict:
    """The report JSON, or a clean exit naming the option at fault (`--by: unknown ...`,
    `--score: item i3 rater gpt score 80 is outside 1–5`)."""
    from calibration.calibrate import calibrate
    from calibration.checks import CalibrationInputError

    try:
        return calibrate(rows, options, inputs)
    except CalibrationInputError as exc:
        fail(f"--{exc}" if exc.field == "by" else str(exc))
    except ValueError as exc:
        fail(str(exc))


def render_rows(rows, options, inputs):
    from service.reporting.calibration import render_report

    return render_report(compute_report(rows, options, inputs), rows, options)


def _file_rubric_weights(rubric: str | None) -> dict[str, float]:
    """Criterion weights of a bundled rubric or a rubric file (no database needed)."""
    from rubrics import RubricError, resolve_rubric
    from service.stores.calibration import criterion_weights

    if rubric is None:
        return {}
    try:
        return criterion_weights(resolve_rubric(rubric))
    except (RubricError, OSError) as exc:
        fail(f"--rubric: {exc}")


def scale_for(
    session, project: str, scale, rubric, level
) -> tuple[tuple[float, float] | None, str | None, dict[str, float]]:
    """Scale, level and criterion weights: from the options, else from the project's stored
    rubric."""
    from service.stores.calibration import criterion_weights, scale_of_rubric
    from service.stores.rubrics import RubricNotFound, get_rubric

    try:
        weights = criterion_weights(get_rubric(session, project, rubric)) if rubric else {}
        if scale is not None or level == "nominal":
            return (parse_scale(scale) if scale else None), level, weights
        if rubric is None:
            fail("--scale: required unless --rubric names the rubric whose scale to use")
        low, high, rubric_level = scale_of_rubric(session, project, rubric)
    except RubricNotFound as exc:
        fail(str(exc))
    return (low, high), level or rubric_level, weights


def _parquet_scale(
    scale: str | None, rubric: str | None, level: str | None, score: str
) -> tuple[tuple[float, float] | None, str | None, dict[str, float]]:
    """Scale, level and criterion weights with --from-parquet: from the options, else from
    the bundled rubric --rubric names (an export holds no rubrics), as `scale_for` does from
    the stored one."""
    from service.stores.calibration import criterion_weights, rubric_scale

    found = parquet_rubric(rubric, scale_needed=scale is None and level != "nominal")
    weights = criterion_weights(found) if found is not None else {}
    if score != "discrete" and level is None:
        level = "interval"  # expected scores lie between the ratings
    if scale is not None or level == "nominal":
        return (parse_scale(scale) if scale else None), level, weights
    if found is None:
        fail("--scale: required unless --rubric names the rubric whose scale to use")
    low, high, rubric_level = rubric_scale(found)
    return (low, high), level or rubric_level, weights


def _with_bundled_weights(options, inputs: dict):
    """Without weights given, those of the bundled rubric every judgment used, when they all
    used one (`with_stored_rubric_weights` reads the database's copy)."""
    from rubrics import RubricError, library_rubric
    from service.stores.calibration import with_rubric_weights

    def bundled(ref: str):
        try:
            return library_rubric(ref)
        except RubricError:
            return None

    return with_rubric_weights(options, inputs, bundled)
