"""Judge-corrected means (calibration/estimate.py) where the service meets them: options from
the CLI and HTTP, and the section the nightly calibration report carries."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from calibration.estimate import EstimateOptions, estimate
from calibration.formats.interchange import GradeRow
from calibration.on_scale import clip_estimate
from calibration.render.estimate import to_html, to_markdown
from service.db.engine import session_scope
from service.stores.calibration import Selection, rows_from_db


def options_error(exc: ValidationError) -> str:
    """The first problem, naming the option: 'alpha: Input should be less than 1'."""
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err["loc"])
    message = err["msg"].removeprefix("Value error, ")
    return f"{field}: {message}" if field else message


def corrected_means(
    rows: list[GradeRow], options: EstimateOptions, inputs: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The judges' corrected means (`estimate`), kept on the options' scale when it is given
    (calibration/on_scale.py): every caller reports them through here."""
    report = estimate(rows, options, inputs)
    if options.scale_min is not None and options.scale_max is not None:
        clip_estimate(report, options.scale_min, options.scale_max)
    return report


def with_estimate(
    rendered: tuple[dict[str, Any], str, str],
    rows: list[GradeRow],
    by: list[str],
    scale: tuple[float, float] | None = None,
) -> tuple[dict[str, Any], str, str]:
    """A calibration report plus its judges' corrected means: the JSON key `estimate`, a
    Markdown section and an HTML section. Data too thin for an estimate is said, not fatal."""
    report, markdown, html = rendered
    low, high = scale or (None, None)
    try:
        found = corrected_means(rows, EstimateOptions(by=by, scale_min=low, scale_max=high))
    except ValueError as exc:
        report["estimate"] = {"undefined": str(exc)}
        return report, markdown, html
    report["estimate"] = found
    section = to_html(found, standalone=False)
    html = html.replace("</body>", section + "</body>", 1) if "</body>" in html else html + section
    return report, f"{markdown}\n{to_markdown(found)}", html


def estimate_over_database(
    url: str, project: str, selection: Selection, options: EstimateOptions
) -> dict[str, Any]:
    """`POST /estimates` over the database, as a report worker runs it (service/reporting/
    pool.py): the project's rows read here, in the worker, and their corrected means."""
    from service.reporting.pool import worker_sessions

    with session_scope(worker_sessions(url)) as session:
        rows, inputs = rows_from_db(session, project, selection)
    return corrected_means(rows, options, inputs)
