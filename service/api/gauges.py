"""Prometheus gauges of the latest stored calibration reports, so a team can alert on a
judge from Prometheus: per project, report kind (adhoc | nightly) and scope (rubric, or
`all`), per judge and stratum (`overall` or `ATTR=VALUE`), the MAD, the signed error and the
alt-test verdict of the trust map, plus when the report was made (to alert on a stale one).

Read from the database at scrape time (GET /metrics), so every replica reports the same
values and nothing is kept in process memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import Row
from sqlalchemy.orm import Session

from service.stores.calibration import latest_reports

VERDICTS = ("replace", "not_replacement", "insufficient")
ERRORS = {"mad": "qadi_calibration_mad", "signed_error": "qadi_calibration_signed_error"}
LABELS = ["project", "kind", "scope", "judge", "stratum"]


class CalibrationCollector(Collector):
    def __init__(self, reports: list[Row]) -> None:
        self.reports = reports

    def collect(self) -> Iterator[GaugeMetricFamily]:
        errors = {
            key: GaugeMetricFamily(name, f"Latest report's {key} of the judge against the "
                                   "human reference, in scale units", labels=LABELS)
            for key, name in ERRORS.items()
        }
        verdict = GaugeMetricFamily(
            "qadi_calibration_alt_test_verdict",
            "Latest report's alt-test verdict (1 for the verdict the judge got, 0 for others)",
            labels=[*LABELS, "verdict"],
        )
        made = GaugeMetricFamily(
            "qadi_calibration_report_timestamp_seconds",
            "When the latest report of this project, kind and scope was made (Unix time)",
            labels=["project", "kind", "scope"],
        )
        for row in self.reports:
            base = [row.project, row.kind, row.scope or "all"]
            made.add_metric(base, row.created_at.replace(tzinfo=UTC).timestamp())
            for judge, stratum, values in _blocks(row.report):
                for key, family in errors.items():
                    value = values.get(key)
                    if isinstance(value, int | float):  # null on a nominal scale
                        family.add_metric([*base, judge, stratum], float(value))
            for trust in (row.report.get("trust") or {}).get("rows", []):
                for state in VERDICTS:
                    labels = [*base, trust["judge"], trust["stratum"], state]
                    verdict.add_metric(labels, float(trust["verdict"] == state))
        yield from (*errors.values(), verdict, made)


def _blocks(report: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(judge, stratum, metrics) for the overall block and each stratum of each judge."""
    for judge, block in (report.get("judges") or {}).items():
        yield judge, "overall", block.get("overall") or {}
        for stratum, values in (block.get("strata") or {}).items():
            yield judge, stratum, values or {}


def exposition(session: Session) -> bytes:
    """The gauges in Prometheus' text format, from a registry of their own."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(CalibrationCollector(latest_reports(session)))
    return generate_latest(registry)
