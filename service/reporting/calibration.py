"""A calibration report computed and rendered (JSON, Markdown, HTML with its plots): what
`qadi calibrate`, `qadi report nightly`, POST /calibration/reports and the benchmark SME
report share. Storing it is service/stores/calibration.py's."""

from __future__ import annotations

from typing import Any

from calibration.calibrate import CalibrationOptions, calibrate
from calibration.checks import CalibrationInputError
from calibration.formats.interchange import GradeRow
from calibration.render.report import item_pairs, to_html, to_markdown
from service.db.engine import session_scope
from service.stores.calibration import Selection, rows_from_db, with_stored_rubric_weights


def build_report(
    rows: list[GradeRow], options: CalibrationOptions, inputs: dict[str, Any]
) -> tuple[dict[str, Any], str, str]:
    """The JSON report with its Markdown and HTML renderings."""
    return render_report(calibrate(rows, options, inputs), rows, options)


def render_report(
    report: dict[str, Any], rows: list[GradeRow], options: CalibrationOptions
) -> tuple[dict[str, Any], str, str]:
    """A computed report (with whatever `drift`/`history` the caller added) rendered."""
    nominal = options.effective_level == "nominal"
    pairs = None if nominal else item_pairs(rows, options.reference)
    return report, to_markdown(report), to_html(report, pairs)


def report_over_database(
    url: str, project: str, selection: Selection, options: CalibrationOptions
) -> tuple[dict[str, Any], str, str]:
    """`POST /calibration/reports`, as a report worker runs it (service/reporting/pool.py):
    the project's rows read here, in the worker, in one short transaction (on SQLite one held
    through the computation would keep every POST /judge waiting), then the report built.
    A judge the selection names but no row grades is refused by name (`judges`), not left to
    numpy's "cannot reshape array of size 0"."""
    from service.reporting.pool import worker_sessions

    with session_scope(worker_sessions(url)) as session:
        rows, inputs = rows_from_db(session, project, selection)
        graded = {r.rater for r in rows if r.rater_kind == "judge"}
        missing = [j for j in selection.judges or [] if j not in graded]
        if missing:
            problem = f"no usable grade by {missing} in this selection"
            raise CalibrationInputError("judges", [problem])
        options = with_stored_rubric_weights(session, project, options, inputs)
    return build_report(rows, options, inputs)
