"""`qadi estimate` (judge-corrected means, PPI++) and `qadi sme queue` (what SMEs grade next;
the other `qadi sme` commands, the workbench's people, are service/cli/sme.py)."""

from __future__ import annotations

import csv
import json
from datetime import datetime
from pathlib import Path

import typer
from rich.table import Table

from service.cli.app import app, console, fail, open_project, out, project_option, split_names
from service.cli.calibrate import parse_scale
from service.cli.selection import (
    ADDRESS,
    ENGINE,
    FROM_PARQUET,
    JUDGES,
    METADATA,
    SINCE,
    UNTIL,
    check_file_or_db,
    check_source,
    db_selection,
    parquet_rows,
    parquet_rubric,
)
from service.cli.sme import sme_app
from service.db.engine import session_scope


def _read(grades_file: Path, expected: str | None = None):
    """The grades file's rows, or a clean exit listing its (capped) problems, then what the
    command expects when it says so (`expected`)."""
    from calibration.formats.interchange import GradeFormatError, read_grades

    try:
        return read_grades(grades_file)
    except (GradeFormatError, OSError) as exc:
        problems = getattr(exc, "problems", [str(exc)])
        tail = [expected] if expected else []
        fail("\n  ".join([f"{grades_file}: invalid grades", *problems, *tail]))


def _options(**values):
    from pydantic import ValidationError

    from calibration.estimate import EstimateOptions
    from service.reporting.estimates import options_error

    try:
        return EstimateOptions(**values)
    except ValidationError as exc:
        fail(f"--{options_error(exc).replace('_', '-')}")


@app.command()
def estimate(
    grades_file: Path | None = typer.Argument(None, help="CSV/JSONL grades (interchange format)"),
    from_db: bool = typer.Option(
        False, "--from-db", help="use human grades and the latest ok judgments in the DB"
    ),
    from_parquet: Path | None = FROM_PARQUET,
    engine: str = ENGINE,
    address: str | None = ADDRESS,
    rubric: str | None = typer.Option(
        None, help=r"with --from-db/--from-parquet: id\[@version], only this rubric (sets "
        "--scale)"
    ),  # fmt: skip
    judges: str | None = JUDGES,
    metadata: list[str] = METADATA,
    since: datetime | None = SINCE,
    until: datetime | None = UNTIL,
    project: str | None = project_option(),
    scale: str | None = typer.Option(None, help="MIN-MAX; scores outside it are reported"),
    level: str | None = typer.Option(None, help="ordinal | interval (labels have no mean)"),
    by: str | None = typer.Option(None, help="strata attributes, e.g. candidate_model"),
    alpha: float = typer.Option(0.05, help="1 − confidence of the intervals"),
    reference: str = typer.Option("mean", help="mean | median | a human rater's id"),
    cluster: str | None = typer.Option(None, help="cluster-robust variance over this attribute"),
    compare: str | None = typer.Option(None, help="A,B: difference of two values of --by"),
    target_halfwidth: float | None = typer.Option(
        None, "--target-halfwidth", help="how many more SME labels reach this CI half-width"
    ),
    budget_quantile: float = typer.Option(
        0.8,
        "--budget-quantile",
        help="the budget's labels reach the target half-width with this probability (0.5-1)",
    ),
    out_path: Path = typer.Option(..., "--out", help="estimate JSON"),
    html: Path | None = typer.Option(None, help="also write a self-contained HTML report"),
    md: Path | None = typer.Option(None, help="also write a Markdown report"),
) -> None:
    """Correct each judge's mean score by the human-labelled items (PPI++), per stratum.

    Intervals are Student t with small-sample (HC2/CR2) variances and name their method and
    df in the JSON; labels carrying `inclusion_prob` (from `qadi sme queue`) are weighted by
    its inverse. An interval marked unreliable (too few clusters, no variation) says why.
    With --from-db, over one project's human grades and the latest ok judgment per item and
    judge, chosen as `qadi calibrate --from-db` chooses them; with --from-parquet, the same
    from a `qadi export` folder."""
    from calibration.render.estimate import to_html, to_markdown
    from service.reporting.estimates import corrected_means as compute

    check_source(
        grades_file, from_db, from_parquet, engine, address, rubric=rubric, judges=judges,
        metadata=metadata, since=since, until=until,
    )  # fmt: skip
    if level == "nominal":
        fail("--level: nominal labels have no mean; estimate needs ordinal or interval scores")
    if level not in (None, "ordinal", "interval"):
        fail(f"--level: expected ordinal or interval, got '{level}'")
    selection = database = None
    if grades_file is None:
        selection = db_selection(
            judges=judges, rubric=rubric, metadata=metadata, since=since, until=until
        )
    if from_db:
        database = open_project(project)  # opened once: the scale and the rows read it
        scale = scale or _stored_scale(database, rubric)
    elif from_parquet is not None:
        scale = scale or _bundled_scale(rubric)
    bounds = parse_scale(scale) if scale else (None, None)
    options = _options(
        alpha=alpha,
        reference=reference,
        by=split_names(by) or [],
        cluster=cluster,
        compare=compare.split(",") if compare else None,
        target_halfwidth=target_halfwidth,
        budget_quantile=budget_quantile,
        scale_min=bounds[0],
        scale_max=bounds[1],
    )
    if selection is None:
        rows, inputs = _read(grades_file), {"source": str(grades_file)}
    elif from_parquet is not None:
        rows, inputs = parquet_rows(from_parquet, selection, project, engine, address)
    else:
        rows, inputs = _from_db(database, selection)
    try:
        report = compute(rows, options, inputs)
    except ValueError as exc:
        fail(str(exc))
    texts = {out_path: json.dumps(report, indent=2, ensure_ascii=False)}
    if md:
        texts[md] = to_markdown(report)
    if html:
        texts[html] = to_html(report)
    for path, text in texts.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    _summary(report)


def _stored_scale(database, rubric: str | None) -> str | None:
    """The scale of the project's stored rubric, as MIN-MAX (none without --rubric);
    `database` is `open_project`'s (sessions, project)."""
    if rubric is None:
        return None
    from service.stores.calibration import scale_of_rubric
    from service.stores.rubrics import RubricNotFound

    sessions, chosen = database
    with session_scope(sessions) as session:
        try:
            low, high, _ = scale_of_rubric(session, chosen, rubric)
        except RubricNotFound as exc:
            fail(f"--rubric: {exc}")
    return f"{low:g}-{high:g}"


def _bundled_scale(rubric: str | None) -> str | None:
    """With --from-parquet, the scale of the bundled rubric --rubric names, as MIN-MAX (an
    export holds no rubrics; none without --rubric)."""
    from service.stores.calibration import rubric_scale

    found = parquet_rubric(rubric, scale_needed=True)
    if found is None:
        return None
    low, high, _ = rubric_scale(found)
    return f"{low:g}-{high:g}"


def _from_db(database, selection) -> tuple[list, dict]:
    """Rows and inputs from the project's database (service/stores/calibration.py)."""
    from service.stores.calibration import rows_from_db

    sessions, chosen = database
    with session_scope(sessions) as session:
        return rows_from_db(session, chosen, selection)


def _summary(report: dict) -> None:
    from calibration.render.estimate import interval_text, unreliable_notes

    table = Table("judge", "PPI", "judge only", "humans only", "λ", "effective n", title="overall")
    for judge, data in report["judges"].items():
        block = data["overall"]
        lam, n_eff = block["lambda"], block["effective_n"]
        table.add_row(
            judge,
            interval_text(block),
            interval_text(block["judge_only"]),
            interval_text(block["human_only"]),
            "—" if lam is None else f"{lam:.3f}",
            "—" if n_eff is None else f"{n_eff:.1f}",
        )
    console.print(table)
    for line in [*report["design"]["warnings"], *unreliable_notes(report)]:
        console.print(f"[yellow]warning:[/yellow] {line}", markup=True, highlight=False)


@sme_app.command("queue")
def queue(
    grades_file: Path | None = typer.Argument(
        None, help="CSV/JSONL grades (interchange format); not with --from-db or --escalated"
    ),
    n: int | None = typer.Option(None, "--n", min=1, help="how many items to queue"),
    from_db: bool = typer.Option(
        False, "--from-db", help="choose from the human grades and latest ok judgments in the "
        "DB, as qadi calibrate --from-db selects them, instead of a grades file"
    ),  # fmt: skip
    rubric: str | None = typer.Option(
        None, help=r"id\[@version]: the rubric the SMEs grade by, written in each row; with "
        "--from-db only its judgments; with a grades file the items' texts are read from "
        "the DB too"
    ),  # fmt: skip
    judges: str | None = JUDGES,
    metadata: list[str] = METADATA,
    since: datetime | None = SINCE,
    until: datetime | None = UNTIL,
    escalated: bool = typer.Option(
        False,
        "--escalated",
        help="the items POST /judge sent to the SMEs (no trusted verdict, or audited), "
        "from the database, instead of choosing from a grades file",
    ),
    reason: str | None = typer.Option(
        None, help="with --escalated: only 'escalated' or only 'audit' items"
    ),
    project: str | None = project_option(),
    by: str | None = typer.Option(None, help="the strata attribute, e.g. candidate_model"),
    alpha: float = typer.Option(0.05, min=0.0001, max=0.5, help="1 − confidence"),
    seed: int = typer.Option(0, help="seed of the random draw inside a stratum"),
    floor: int = typer.Option(
        5, "--floor", min=2, help="labels every stratum gets first, before widths are compared"
    ),
    out_path: Path = typer.Option(..., "--out", help="items.csv to hand to the SMEs"),
) -> None:
    """The next N unlabelled items for SMEs: every stratum first gets --floor labels, then
    labels go to the strata whose corrected interval is widest; items are drawn at random
    inside a stratum. Written as CSV in UTF-8 with a BOM (spreadsheets then read Arabic),
    one row per item with its question, answer, reference and the rubric (--rubric), empty
    score, rater and rationale for the SME, and the item's `inclusion_prob` and
    `inclusion_stratum`, which `qadi estimate` weights by (keep them when you append the
    filled file to the grades; see calibration/sme_queue.py).

    With --escalated, the items trust at request time sent to the SMEs (docs: how-to,
    "Trust verdicts at request time"), each with its `inclusion_prob` (1 escalated, the audit
    rate audited)."""
    if escalated:
        if grades_file is not None or n is not None or from_db:
            fail("--escalated lists the database's queue: give no grades file, --from-db or --n")
        _write_escalated(reason, out_path, project)
        return
    check_file_or_db(
        grades_file, from_db, judges=judges, metadata=metadata, since=since, until=until
    )
    if n is None:
        fail("--n: how many items to queue (or --escalated for the items POST /judge escalated)")
    from calibration.sme_queue import choose, queue_records

    database = None  # opened once, when first needed: the rows, then the texts read it
    if from_db:
        selection = db_selection(
            judges=judges, rubric=rubric, metadata=metadata, since=since, until=until
        )
        database = open_project(project)
        rows, _ = _from_db(database, selection)
    else:
        rows = _read(grades_file, QUEUE_INPUT)
    try:
        found = choose(rows, n, by, alpha, seed, floor)
    except ValueError as exc:  # the option it names is --by; a grades problem says grades
        fail(f"--{exc}" if str(exc).startswith("by:") else str(exc))
    queued = [found.table.items[i] for i in found.order]
    texts, guide = {}, ""
    if from_db or rubric:
        texts, guide = _texts(database or open_project(project), rubric, queued)
    records = queue_records(found, texts, guide)
    _write_records(records, out_path)
    table = Table("stratum", "judged", "labelled", "queued", "inclusion_prob", title="queue")
    for stratum in found.strata.values():
        table.add_row(
            stratum.key, str(stratum.judged), str(stratum.labelled), str(stratum.queued),
            f"{stratum.inclusion_prob:.4g}",
        )  # fmt: skip
    console.print(table)
    _warn_missing_texts(records, rubric)
    out.print(
        f"{len(records)} item(s) queued in {out_path}"
        + (f" (only {len(records)} unlabelled)" if len(records) < n else "")
    )


# What `qadi sme queue GRADES_FILE` reads, said when the file is something else (regrade's
# output, a judgments export): the problems alone (1,350 of them) never said it.
QUEUE_INPUT = (
    "qadi sme queue reads grades in the interchange format (item_id, rater, rater_kind, "
    "score: human grades and judge scores, e.g. GET /grades?format=csv or the file "
    "qadi grades import took); for the judgments stored in the database use --from-db"
)


def _texts(database, rubric: str | None, item_ids: list[str]) -> tuple[dict[str, dict], str]:
    """The stored question, answer and reference of each queued item, and the rubric as the
    SME reads it (rubrics/guide.py; empty without --rubric)."""
    from service.stores.answers import texts_of_items
    from service.stores.rubrics import RubricNotFound

    sessions, chosen = database
    with session_scope(sessions) as session:
        try:
            guide = _guide(session, chosen, rubric) if rubric else ""
        except RubricNotFound as exc:
            fail(f"--rubric: {exc}")
        return texts_of_items(session, chosen, item_ids), guide


def _warn_missing_texts(records: list[dict[str, str]], rubric: str | None) -> None:
    """Say what an SME cannot grade from the file alone."""
    if rubric is None and records:
        console.print(
            "[yellow]warning:[/yellow] no --rubric: the file shows the SMEs no rubric (and, "
            "from a grades file, no question or answer); give --rubric ID to write them",
            markup=True, highlight=False,
        )  # fmt: skip
        if not any(r["sme_answer"] for r in records):
            return
    missing = [r["item_id"] for r in records if not r["sme_answer"]]
    if missing:
        console.print(
            f"[yellow]warning:[/yellow] {len(missing)} item(s) have no stored answer in the "
            f"project (first: {missing[0]}): their question and answer cells are empty",
            markup=True, highlight=False,
        )  # fmt: skip


def _write_records(records: list[dict[str, str]], out_path: Path) -> None:
    """CSV in UTF-8 with a BOM: without it Excel reads the file as the locale's code page
    and shows Arabic as mojibake; every grades reader accepts the BOM (decode_text)."""
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with out_path.open("w", newline="", encoding="utf-8-sig") as handle:
        fields = list(records[0]) if records else ["item_id", "rater", "rater_kind", "score"]
        for record in records[1:]:  # attributes differ between items: every one a column
            fields += [key for key in record if key not in fields]
        writer = csv.DictWriter(handle, fieldnames=fields, restval="")
        writer.writeheader()
        writer.writerows(records)


def _write_escalated(reason: str | None, out_path: Path, project: str | None) -> None:
    """The project's SME queue in the database, as interchange rows with rater, score and
    rationale empty, each with the texts the SME grades by (as a chosen round's rows)."""
    from calibration.formats.interchange import neutralise_formula
    from service.db.engine import session_scope
    from service.stores.projects import Tenant
    from service.stores.sme_queue import queued_items

    if reason not in (None, "escalated", "audit"):
        fail(f"--reason: '{reason}' is not escalated or audit")
    sessions, chosen = open_project(project)
    with session_scope(sessions) as session:
        items = queued_items(session, Tenant(chosen), reason)
        refs = {item["rubric_ref"] for item in items}
        guides = {ref: _stored_guide(session, chosen, ref) for ref in refs}
    # sent at request time only: a calibration sample (`qadi sme sample`) is the workbench's
    items = [item for item in items if item["reason"] in ("escalated", "audit")]
    records = [
        {
            "item_id": item["item_id"],
            "sme_question": neutralise_formula(item["prompt"]),
            "sme_answer": neutralise_formula(item["response"]),
            "sme_reference": neutralise_formula(item["reference"] or ""),
            "sme_rubric": guides[item["rubric_ref"]],
            "rater": "",
            "rater_kind": "human",
            "score": "",
            "rationale": "",
            "inclusion_prob": repr(item["inclusion_prob"]),
            "queue_reason": item["reason"],
            "request_id": item["request_id"],
            **item["attributes"],
        }
        for item in items
    ]
    _write_records(records, out_path)
    counts = {
        kind: sum(r["queue_reason"] == kind for r in records) for kind in ("escalated", "audit")
    }
    out.print(
        f"{len(records)} item(s) from the SME queue in {out_path} "
        f"({counts['escalated']} escalated, {counts['audit']} audited); texts: GET /sme/queue"
    )


def _guide(session, project: str, rubric_ref: str) -> str:
    """The stored rubric as the SME reads it (rubrics/guide.py); RubricNotFound when the
    project has none by that reference."""
    from rubrics.guide import sme_guide
    from service.stores.rubrics import get_rubric

    return sme_guide(get_rubric(session, project, rubric_ref))


def _stored_guide(session, project: str, rubric_ref: str) -> str:
    """A queued item's rubric as the SME reads it; empty for a rubric sent inline with the
    request and never stored (the queue keeps only its id@version)."""
    from service.stores.rubrics import RubricNotFound

    try:
        return _guide(session, project, rubric_ref)
    except RubricNotFound:
        return ""
