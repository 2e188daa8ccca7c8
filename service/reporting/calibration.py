"""A calibration report computed and rendered (JSON, Markdown, HTML with its plots): what
`qadi calibrate`, `qadi report nightly`, POST /calibration/reports and the benchmark SME
report share. Storing it is service/stores/calibration.py's."""

from __future__ import annotations

from typing import Any

from calibration.calibrate import CalibrationOptions, calibrate
from calibration.formats.interchange import GradeRow
from calibration.render.report import item_pairs, to_html, to_markdown


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
