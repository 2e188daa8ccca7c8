"""`qadi estimate` (judge-corrected means, PPI++) and `qadi sme queue` (what SMEs grade next)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import typer
from rich.table import Table

from service.cli.app import app, console, fail, out, split_names
from service.cli.calibrate import parse_scale

sme_app = typer.Typer(help="Work for subject-matter experts.", no_args_is_help=True)
app.add_typer(sme_app, name="sme")


def _read(grades_file: Path):
    from calibration.interchange import GradeFormatError, read_grades

    try:
        return read_grades(grades_file)
    except (GradeFormatError, OSError) as exc:
        problems = getattr(exc, "problems", [str(exc)])
        fail("\n  ".join([f"{grades_file}: invalid grades", *problems]))


def _options(**values):
    from pydantic import ValidationError

    from calibration.estimate import EstimateOptions
    from service.estimates import options_error

    try:
        return EstimateOptions(**values)
    except ValidationError as exc:
        fail(f"--{options_error(exc).replace('_', '-')}")


@app.command()
def estimate(
    grades_file: Path = typer.Argument(..., help="CSV/JSONL grades (interchange format)"),
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
    out_path: Path = typer.Option(..., "--out", help="estimate JSON"),
    html: Path | None = typer.Option(None, help="also write a self-contained HTML report"),
    md: Path | None = typer.Option(None, help="also write a Markdown report"),
) -> None:
    """Correct each judge's mean score by the human-labelled items (PPI++), per stratum."""
    from calibration.estimate_render import to_html, to_markdown
    from service.estimates import corrected_means as compute

    if level == "nominal":
        fail("--level: nominal labels have no mean; estimate needs ordinal or interval scores")
    if level not in (None, "ordinal", "interval"):
        fail(f"--level: expected ordinal or interval, got '{level}'")
    bounds = parse_scale(scale) if scale else (None, None)
    options = _options(
        alpha=alpha,
        reference=reference,
        by=split_names(by) or [],
        cluster=cluster,
        compare=compare.split(",") if compare else None,
        target_halfwidth=target_halfwidth,
        scale_min=bounds[0],
        scale_max=bounds[1],
    )
    rows = _read(grades_file)
    try:
        report = compute(rows, options, {"source": str(grades_file)})
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


def _summary(report: dict) -> None:
    from calibration.estimate_render import interval_text

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


@sme_app.command("queue")
def queue(
    grades_file: Path = typer.Argument(..., help="CSV/JSONL grades (interchange format)"),
    n: int = typer.Option(..., "--n", min=1, help="how many items to queue"),
    by: str | None = typer.Option(None, help="the strata attribute, e.g. candidate_model"),
    alpha: float = typer.Option(0.05, min=0.0001, max=0.5, help="1 − confidence"),
    seed: int = typer.Option(0, help="seed of the random draw inside a stratum"),
    out_path: Path = typer.Option(..., "--out", help="items.csv to hand to the SMEs"),
) -> None:
    """The next N unlabelled items for SMEs: labels go to the strata whose corrected interval
    is widest, items drawn at random inside a stratum (random, so PPI stays unbiased; see
    calibration/sme_queue.py). Written in the interchange format with rater and score empty."""
    from calibration.sme_queue import choose, queue_records

    table, order = choose(_read(grades_file), n, by, alpha, seed)
    records = queue_records(table, order)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with out_path.open("w", newline="", encoding="utf-8") as handle:
        fields = list(records[0]) if records else ["item_id", "rater", "rater_kind", "score"]
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(records)
    out.print(
        f"{len(records)} item(s) queued in {out_path}"
        + (f" (only {len(records)} unlabelled)" if len(records) < n else "")
    )
