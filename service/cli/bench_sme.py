"""`qadi bench report` for the SME cross-evaluation: the judges' calibration against the
imported SME grades over one or several target runs pooled, and the paper's headline cells
(cultural − linguistic ΔMAD per judge with its interval, per-dialect leniency)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.table import Table

from service.cli.app import console, out

# Every target answers each SME prompt, so a prompt's answers are not independent: intervals
# and corrected scores are clustered by it (the items' `bench_item`)
CLUSTER = "bench_item"


@dataclass
class SmeReport:
    html: str
    pooled: dict[str, Any]


def pooled_rows(session, run_ids: list[str]):
    """Judge and SME grades of every run's answers, each (answer, rater) once."""
    from service.stores.calibration import Selection, rows_from_db
    from service.stores.projects import DEFAULT_PROJECT

    rows, inputs = {}, {}
    for run_id in run_ids:  # benchmark judgments are the default project's (`qadi bench run`)
        selection = Selection(metadata={"bench_run": run_id})
        found, inputs = rows_from_db(session, DEFAULT_PROJECT, selection)
        rows.update({(r.item_id, r.rater): r for r in found})
    return list(rows.values()), inputs


def sme_report(factory, run_ids: list[str], bootstrap: int) -> SmeReport | None:
    """MAD and signed error per judge by dialect and category, stored as a calibration
    report, and the pooled headline cells; None until SME grades are imported."""
    from benchmarks.sme_pooled import pooled
    from calibration.calibrate import CalibrationOptions
    from service.db.engine import session_scope
    from service.reporting.calibration import build_report
    from service.stores.calibration import store_report
    from service.stores.projects import DEFAULT_PROJECT

    with session_scope(factory) as session:
        rows, inputs = pooled_rows(session, run_ids)
        if not any(r.rater_kind == "human" for r in rows):
            console.print(
                "no SME grades for these runs' answers yet: import them with "
                "`qadi grades import` (item_id = '<item>|<model>') and report again"
            )
            return None
        options = CalibrationOptions(
            scale_min=0,
            scale_max=100,
            level="interval",
            by=["dialect", "category"],
            bootstrap=bootstrap,
            cluster=CLUSTER,
        )
        rendered = build_report(rows, options, {**inputs, "bench_runs": run_ids})
        scope = f"bench:{','.join(run_ids)}"
        stored = store_report(session, DEFAULT_PROJECT, "adhoc", scope, rendered)
    _print_calibration(rendered[0], stored.id)
    headline = pooled(rows)
    _print_headline(headline, len(run_ids))
    headline["corrected"] = corrected_scores(rows)
    _print_corrected(headline["corrected"])
    return SmeReport(html=rendered[2], pooled=headline)


def corrected_scores(rows) -> dict[str, Any]:
    """Each target model's score as the judges gave it and corrected by the SME-graded
    answers (PPI++, `qadi estimate`), per judge: what a leaderboard should print."""
    from calibration.estimate import EstimateOptions
    from service.reporting.estimates import corrected_means

    options = EstimateOptions(by=["candidate"], scale_min=0, scale_max=100, cluster=CLUSTER)
    return corrected_means(rows, options)["judges"]


def _print_corrected(judges: dict[str, Any]) -> None:
    table = Table(
        "judge", "target", "labelled / all", "judge score", "corrected (PPI++)",
        title="Target scores corrected by the SME grades",
    )  # fmt: skip
    for judge, data in judges.items():
        for stratum, block in sorted(data["strata"].items()):
            if block.get("estimate") is None:
                continue
            n = block["n_labelled"]
            table.add_row(
                judge, stratum.removeprefix("candidate="),
                f"{n} / {n + block['n_unlabelled']}",
                _fmt(block["judge_only"]["estimate"], block["judge_only"]["ci"]),
                _fmt(block["estimate"], block["ci"]),
            )  # fmt: skip
    out.print(table)


def _print_calibration(report: dict[str, Any], report_id: str) -> None:
    table = Table(
        "judge", "stratum", "n", "MAD (pp)", "signed error (pp)",
        title=f"SME calibration (report {report_id})",
    )  # fmt: skip
    for judge, data in report["judges"].items():
        for stratum, block in [("overall", data["overall"]), *sorted(data["strata"].items())]:
            table.add_row(
                judge,
                stratum,
                str(block["n"]),
                _fmt(block.get("mad_pp"), (block.get("ci") or {}).get("mad_pp")),
                _fmt(block.get("signed_error_pp"), (block.get("ci") or {}).get("signed_error_pp")),
            )
    out.print(table)


def _print_headline(headline: dict[str, Any], runs: int) -> None:
    gaps = Table(
        "judge", "MAD cultural", "MAD linguistic", "Δ cultural − linguistic (pp)",
        title=f"Cultural vs linguistic over {runs} target run(s) (paper: +1.83 to +4.78 pp)",
    )  # fmt: skip
    for judge, gap in headline["category_gap"].items():
        gaps.add_row(
            judge,
            _fmt(gap["cultural"]["mad_pp"]),
            _fmt(gap["linguistic"]["mad_pp"]),
            _fmt(gap["delta_mad_pp"], gap["ci"]),
        )
    out.print(gaps)
    leniency = Table("dialect", "answers", "SME mean", "judge", "n", "judge mean", "judge − SME")
    for dialect, cell in headline["dialect_leniency"].items():
        for judge, block in cell["judges"].items():
            leniency.add_row(
                dialect, str(cell["answers"]), _fmt(cell["sme_mean"]), judge, str(block["n"]),
                _fmt(block["judge_mean"]), _fmt(block["signed_error_pp"]),
            )  # fmt: skip
    out.print(leniency)
    out.print(f"note: {headline['caveat']}", soft_wrap=True)


def _fmt(value: float | None, ci: list[float] | None = None) -> str:
    if value is None:
        return "—"
    return f"{value:+.2f} [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else f"{value:+.2f}"
