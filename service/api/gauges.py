"""Prometheus gauges of the latest stored calibration reports, so a team can alert on a
judge from Prometheus: per project, report kind (adhoc | nightly) and scope (rubric, or
`all`), per judge and stratum (`overall` or `ATTR=VALUE`), the MAD, the signed error and the
alt-test verdict of the trust map, plus when the report was made (to alert on a stale one).

A bounded set (issue 42.7: one report by an attribute of 4,000 values made 40,615 series,
4.9 MB at every scrape): of each report, at most `judges` judges (those with the most items)
and, for each, its overall numbers and those of at most `strata` strata (those with the most
items); `qadi_calibration_gauges_omitted` counts the judges and strata left out.

Read from the database at scrape time (GET /metrics), so every replica reports the same
values. A stored report never changes, so its samples are kept by id: a scrape asks which
reports are the latest (ids and times, not the reports), reads a report's JSON only when it
first becomes the latest of its scope, and serves the same text while the latest reports are
the same ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC
from typing import Any, NamedTuple

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import Row
from sqlalchemy.orm import Session

from service.stores.calibration import latest_report_keys, report_documents

VERDICTS = ("replace", "not_replacement", "insufficient")
ERRORS = {"mad": "qadi_calibration_mad", "signed_error": "qadi_calibration_signed_error"}
LABELS = ["project", "kind", "scope", "judge", "stratum"]
SCOPE = ["project", "kind", "scope"]


class Sample(NamedTuple):
    family: str  # a key of `families()`
    labels: tuple[str, ...]
    value: float


def families() -> dict[str, GaugeMetricFamily]:
    """The gauge families, empty, by the key their samples name."""
    errors = {
        key: GaugeMetricFamily(
            name,
            f"Latest report's {key} of the judge against the human reference, in scale units",
            labels=LABELS,
        )
        for key, name in ERRORS.items()
    }
    return {
        **errors,
        "verdict": GaugeMetricFamily(
            "qadi_calibration_alt_test_verdict",
            "Latest report's alt-test verdict (1 for the verdict the judge got, 0 for others)",
            labels=[*LABELS, "verdict"],
        ),
        "made": GaugeMetricFamily(
            "qadi_calibration_report_timestamp_seconds",
            "When the latest report of this project, kind and scope was made (Unix time)",
            labels=SCOPE,
        ),
        "omitted": GaugeMetricFamily(
            "qadi_calibration_gauges_omitted",
            "Judges or strata of the latest report left out of these gauges (past "
            "QADI_METRICS_REPORT_JUDGES or QADI_METRICS_REPORT_STRATA)",
            labels=[*SCOPE, "part"],
        ),
    }


class SampleCollector(Collector):
    def __init__(self, samples: Iterable[Sample]) -> None:
        self.samples = samples

    def collect(self) -> Iterator[GaugeMetricFamily]:
        found = families()
        for sample in self.samples:
            found[sample.family].add_metric(list(sample.labels), sample.value)
        yield from found.values()


class CalibrationGauges:
    """The gauges of one app, with its bounds and the samples of the reports it has read."""

    def __init__(self, judges: int, strata: int) -> None:
        self.judges, self.strata = judges, strata
        self._samples: dict[str, list[Sample]] = {}  # by report id: the latest reports only
        self._text: tuple[tuple[str, ...], bytes] | None = None  # (their ids, the text)

    def exposition(self, session: Session) -> bytes:
        """The gauges in Prometheus' text format, from a registry of their own."""
        latest = latest_report_keys(session)
        ids = tuple(row.id for row in latest)
        if self._text is not None and self._text[0] == ids:
            return self._text[1]
        known = self._samples
        documents = report_documents(session, [i for i in ids if i not in known])
        samples = {
            row.id: known.get(row.id)
            or report_samples(row, documents[row.id], self.judges, self.strata)
            for row in latest
            if row.id in known or row.id in documents  # not one deleted in between
        }
        registry = CollectorRegistry(auto_describe=False)
        registry.register(SampleCollector(s for found in samples.values() for s in found))
        text = generate_latest(registry)
        # replaced whole, not mutated: a concurrent scrape reads the old or the new state
        self._samples, self._text = samples, (ids, text)
        return text


def report_samples(row: Row, report: dict[str, Any], judges: int, strata: int) -> list[Sample]:
    """The samples of one report (`row` its id, project, kind, scope and time): at most
    `judges` judges and `strata` strata besides `overall`, those with the most items."""
    scope = (row.project, row.kind, row.scope or "all")
    blocks = report.get("judges") or {}
    chosen = _most_items({name: _n(block.get("overall")) for name, block in blocks.items()}, judges)
    sizes = _strata_sizes(blocks)
    kept = ["overall", *_most_items(sizes, strata)]
    return [
        Sample("made", scope, row.created_at.replace(tzinfo=UTC).timestamp()),
        Sample("omitted", (*scope, "judges"), float(len(blocks) - len(chosen))),
        Sample("omitted", (*scope, "strata"), float(len(sizes) - len(kept) + 1)),
        *_error_samples(scope, blocks, chosen, kept),
        *_verdict_samples(scope, report, chosen, kept),
    ]


def _error_samples(
    scope: tuple[str, ...], blocks: dict[str, Any], judges: list[str], strata: list[str]
) -> Iterator[Sample]:
    """The MAD and signed error of each kept judge and stratum (a null one is left out)."""
    for judge in judges:
        for stratum in strata:
            values = _block(blocks[judge], stratum)
            for key in ERRORS:
                value = values.get(key)
                if isinstance(value, int | float):  # null on a nominal scale
                    yield Sample(key, (*scope, judge, stratum), float(value))


def _verdict_samples(
    scope: tuple[str, ...], report: dict[str, Any], judges: list[str], strata: list[str]
) -> Iterator[Sample]:
    """The trust map's verdict of each kept judge and stratum, one sample per verdict."""
    kept = {(judge, stratum) for judge in judges for stratum in strata}
    for trust in (report.get("trust") or {}).get("rows", []):
        if (trust["judge"], trust["stratum"]) in kept:
            labels = (*scope, trust["judge"], trust["stratum"])
            for state in VERDICTS:
                yield Sample("verdict", (*labels, state), float(trust["verdict"] == state))


def _block(judge: dict[str, Any], stratum: str) -> dict[str, Any]:
    """A judge's metrics in `stratum` (or overall)."""
    if stratum == "overall":
        return judge.get("overall") or {}
    return (judge.get("strata") or {}).get(stratum) or {}


def _strata_sizes(blocks: dict[str, Any]) -> dict[str, int]:
    """Each stratum's items: the most any judge has in it."""
    sizes: dict[str, int] = {}
    for block in blocks.values():
        for stratum, values in (block.get("strata") or {}).items():
            sizes[stratum] = max(sizes.get(stratum, 0), _n(values))
    return sizes


def _n(block: dict[str, Any] | None) -> int:
    """A block's items (0 when it says none)."""
    n = (block or {}).get("n")
    return n if isinstance(n, int) else 0


def _most_items(sizes: dict[str, int], limit: int) -> list[str]:
    """The `limit` names of most items, ties by name, in name order (a stable series set)."""
    return sorted(sorted(sizes, key=lambda name: (-sizes[name], name))[:limit])
