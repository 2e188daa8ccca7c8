"""The service recalibrates by itself: each round, every enabled calibration scope
(service/stores/scopes.py) that is due is run by one process of one replica (the scope's
lease), and its live guarantees are audited on the fresh labels that arrived since.

A run is `qadi calibrate --from-db --rubric R --trust-*` with the scope's options: the
report (with its judges' corrected means by candidate model) is stored as kind `auto`, and
its thresholds are what the next POST /judge applies. A scope with a window is `qadi report
nightly` on the service's own schedule: the judgments of the last N hours, stored as kind
`nightly` with its drift against the scope's previous report and the trend. Rows whose
labels could not test a threshold (too few, or of an unusable design) are not stored, so the
live guarantee there stays until it expires by the existing rules; a run that fails stores
nothing and says why (the dashboard, `qadi_recalibrations_total{status}`), and is tried
again after RETRY_AFTER. Every change of a live threshold is logged
(service/stores/guarantees.py).

The checks (their audits read every row of the rubric) and the runs are computed in a
report worker process (service/reporting/pool.py, the pool POST /estimates uses), never in the
process that serves POST /judge, never on the event loop, and never inside a transaction (on
SQLite one would hold the write lock for grading). What the serving process keeps is light:
the lease, the run's record (`finish_run`) and the metrics, so a worker that dies mid-run is
a failed run, recorded and tried again like any other. Without a pool (the CLI) the work is
done in the caller's thread.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from calibration.calibrate import CalibrationOptions, calibrate
from calibration.checks import CalibrationInputError
from calibration.drift import drift
from calibration.estimate import label_multiplier
from calibration.selective import AgreementRule
from calibration.selective_report import SelectiveOptions, agreement_matrix, panel_confidence
from calibration.table import build_table
from calibration.transport import audit, trusted_agreement
from rubrics import split_ref
from service import metrics
from service.db.engine import session_scope, storage_guard
from service.db.values import new_id, utcnow
from service.errors import StorageUnavailable
from service.reporting.calibration import render_report
from service.reporting.estimates import with_estimate
from service.reporting.nightly import with_drift_and_history
from service.reporting.pool import ReportPool, worker_sessions
from service.stores import guarantees, scopes
from service.stores.calibration import (
    Selection,
    nightly_history,
    rows_from_db,
    scale_of_rubric,
    store_report,
    stored_report,
    with_stored_rubric_weights,
)
from service.stores.guarantees import Change
from service.stores.rubrics import RubricNotFound

if TYPE_CHECKING:  # the scope rows service/stores/scopes.py returns
    from service.db.schema import CalibrationScopeRow

log = logging.getLogger("qadi")
LEASE_SECONDS = 600.0  # longer than a run takes; a holder that died lets go after it
RETRY_AFTER = timedelta(minutes=10)  # a failed run is tried again no sooner
AUDIT_LEVEL = 0.05


@dataclass(frozen=True)
class Outcome:
    scope: str
    status: str  # ok | unchanged | failed | skipped (another process holds it or ran it)
    message: str
    report_id: str | None = None
    summary: dict | None = None  # what the dashboard shows of the report


@dataclass(frozen=True)
class Check:
    """Why a scope should run now (None: it need not), and how many of its live guarantees
    failed their audit (counted by the serving process, whose metrics are scraped)."""

    reason: str | None
    project: str = ""
    scope: str = ""
    audits_failed: int = 0
    runs: int = 0  # the scope's finished runs when checked: a run may start only if still so


class Recalibrator:
    """One process's share of the recalibration rounds (every replica runs one; leases keep
    a scope to one runner at a time). Its reads and computations go to `pool`'s workers."""

    def __init__(self, sessions: sessionmaker[Session], pool: ReportPool | None = None) -> None:
        self.sessions = sessions
        self.url = sessions.kw["bind"].url.render_as_string(hide_password=False)
        self.pool = pool or ReportPool(0)
        self.owner = new_id()

    async def run_forever(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await asyncio.to_thread(self.run_round)
            except StorageUnavailable:
                continue  # the database is away; the next round tries again
            except Exception:  # noqa: BLE001 - the loop must outlive a failed round
                log.exception("recalibration round failed; trying again next round")

    def run_round(self) -> list[Outcome]:
        """Every enabled scope: audit its live guarantees, then run it if it is due."""
        with session_scope(self.sessions) as session:
            enabled = [s.id for s in scopes.scopes(session)]
        outcomes = []
        for scope_id in enabled:
            try:
                check = self.pool.call(check_scope, self.url, scope_id)
            except Exception:  # noqa: BLE001 - one scope's fault must not stop the others'
                log.exception("checking recalibration scope %s failed", scope_id)
                continue
            if check.audits_failed:
                metrics.GUARANTEE_AUDITS_FAILED.labels(check.project, check.scope).inc(
                    check.audits_failed
                )
            if check.reason is not None:
                outcomes.append(self.run(scope_id, check.reason, "service", check.runs))
        return outcomes

    def run(self, scope_id: int, trigger: str, actor: str, runs_seen: int | None = None) -> Outcome:
        """Run one scope now (a round, which found it due after `runs_seen` runs, or a person:
        `qadi recalibration run`, whatever ran before)."""
        with session_scope(self.sessions) as session:
            scope = scopes.get_scope(session, scope_id)
            name, project = scope.name, scope.project
            if not scopes.take_lease(session, scope_id, self.owner, LEASE_SECONDS, runs_seen):
                return Outcome(name, "skipped", "another process is running it or has run it")
            labels = scopes.sme_labels(session, project, scope.rubric)
        try:
            outcome = self.pool.call(recalibrate, self.url, scope_id, trigger, actor)
        except (CalibrationInputError, RubricNotFound, ValueError) as exc:
            outcome = Outcome(name, "failed", str(exc))
        except Exception as exc:  # noqa: BLE001 - said on the dashboard, the lease let go
            log.exception("recalibration of scope %s failed", name)
            outcome = Outcome(name, "failed", f"{type(exc).__name__}: {exc}")
        with session_scope(self.sessions) as session:
            scopes.finish_run(session, scope_id, self.owner, outcome.status, outcome.message,
                              labels, outcome.report_id, outcome.summary)  # fmt: skip
        metrics.RECALIBRATIONS.labels(project, name, outcome.status).inc()
        return outcome


def check_scope(url: str, scope_id: int) -> Check:
    """Whether the scope should run now, as a report worker works it out: its check and its
    audit's records in a transaction of their own, ended before a run opens its own (on
    SQLite a transaction that wrote holds the write lock)."""
    return storage_guard(worker_sessions(url), _why_now, scope_id)


def _why_now(session: Session, scope_id: int) -> Check:
    """Why the scope should run now: due by labels or schedule, or an audit failed."""
    scope = scopes.get_scope(session, scope_id)
    if scope is None or not scope.enabled:
        return Check(None)
    now = utcnow()
    labels = scopes.sme_labels(session, scope.project, scope.rubric)
    reason, audits_failed = scopes.why_due(scope, labels, now), 0
    if reason is None:
        reason, audits_failed = audit_scope(session, scope)
    reason = None if reason is None or _resting(scope, now) else reason
    return Check(reason, scope.project, scope.name, audits_failed, scope.runs)


def recalibrate(url: str, scope_id: int, trigger: str, actor: str) -> Outcome:
    """One run of the scope, as a report worker computes it: its rows read and its report
    built between two short transactions, the report and its thresholds stored."""
    sessions = worker_sessions(url)
    until = utcnow()
    with session_scope(sessions) as session:
        scope = scopes.get_scope(session, scope_id)
        project, name, rubric = scope.project, scope.name, scope.rubric
        window = scope.options.get("window_hours")
        options, selection = _options(session, scope, until)
        rows, inputs = rows_from_db(session, project, selection)
        options = with_stored_rubric_weights(session, project, options, inputs)
        before = stored_report(session, project, scope.last_report_id or "")
        previous = (before.id, before.report) if before is not None else None
        history = nightly_history(session, project, split_ref(rubric)[0]) if window else []
    report = calibrate(rows, options, {**inputs, "calibration_scope": name})
    if window:  # a nightly scope's report carries drift and the trend, as the CLI's does
        with_drift_and_history(report, previous, history, until)
    rendered = with_estimate(
        render_report(report, rows, options), rows, ["candidate_model"],
        (options.scale_min, options.scale_max),
    )  # fmt: skip
    change = Change(trigger=trigger[:64], actor=actor, scope=name)
    with session_scope(sessions) as session:
        row = store_report(
            session, project, "nightly" if window else "auto", split_ref(rubric)[0],
            rendered, (selection.since, selection.until), change, only_supported=True,
        )  # fmt: skip
        report_id = row.id
    summary = dashboard_summary(rendered[0], previous[1] if previous else None)
    return _outcome(name, rendered[0], report_id, summary)


def audit_scope(session: Session, scope: CalibrationScopeRow) -> tuple[str | None, int]:
    """Test each live guarantee of the scope on the labels that arrived since it was
    fitted (and since the last audit), once they fill a slice: the reason to recalibrate
    when one fails, and how many failed."""
    fresh = scopes.fresh_labels(session, scope)
    if len(fresh) < scope.audit_slice:
        return None, 0
    options = scope.options
    rubric_id = split_ref(scope.rubric)[0]
    live = guarantees.live(session, scope.project, rubric_id, options["alpha"],
                           options["delta"], options["confidence"])  # fmt: skip
    selection = Selection(rubric=scope.rubric)
    rows, _ = rows_from_db(session, scope.project, selection)
    failed, count = None, 0
    through = max(fresh.values())
    for guarantee in live.values():
        if guarantee.threshold is None:
            continue
        since = datetime.fromisoformat(guarantee.entry["calibrated_at"])
        items = {item for item, at in fresh.items() if at > since}
        agree = _fresh_agreement(rows, items, guarantee, options["confidence"])
        if agree.size < scope.audit_slice:
            continue
        result = audit(agree, options["alpha"], AUDIT_LEVEL)
        guarantees.record_audit(session, scope.project, scope.name, guarantee,
                                result.model_dump(mode="json"), through)  # fmt: skip
        if not result.passed:
            count += 1
            failed = failed or f"audit failed: {guarantee.evaluator} {guarantee.stratum}"
    scopes.audited(session, scope.id, through)
    return failed, count


def _resting(scope: CalibrationScopeRow, now: datetime) -> bool:
    """A failed run is tried again only after RETRY_AFTER (a broken input would otherwise
    be recomputed every round)."""
    return (
        scope.last_status == "failed"
        and scope.last_run_at is not None
        and now - scope.last_run_at < RETRY_AFTER
        and not scope.due_reason
    )


def _options(session: Session, scope: CalibrationScopeRow, until: datetime):
    """The report's options and the selection of judgments (a nightly scope's window)."""
    low, high, level = scale_of_rubric(session, scope.project, scope.rubric)
    stored = scope.options
    options = CalibrationOptions(
        scale_min=low,
        scale_max=high,
        level=level,
        by=stored.get("by", []),
        bootstrap=stored.get("bootstrap", 500),
        selective=SelectiveOptions(
            alpha=stored["alpha"],
            delta=stored["delta"],
            confidence=stored.get("confidence", "token"),
            cascades=stored.get("cascades", []),
        ),
    )
    window = stored.get("window_hours")
    since = until - timedelta(hours=window) if window else None
    return options, Selection(rubric=scope.rubric, since=since, until=until if window else None)


def _fresh_agreement(rows, items: set[str], guarantee, confidence_source: str) -> np.ndarray:
    """Whether each fresh labelled item the guarantee trusted was judged as the SMEs did."""
    table = build_table([r for r in rows if r.item_id in items])
    stages = guarantee.entry["threshold"].get("stages") or {}
    names = list(stages) or guarantee.evaluator.split(">")
    if not all(name in table.judges for name in names) or not table.humans:
        return np.array([], dtype=bool)
    rule = AgreementRule.model_validate(guarantee.entry["agreement"])
    agree = agreement_matrix(table, rule, "mean")
    confidence = (
        panel_confidence(table, rule) if confidence_source == "panel" else table.judge_confidence
    )
    columns = [table.judges.index(name) for name in names]
    keep = _in_stratum(table, guarantee.stratum)
    return trusted_agreement(confidence[keep][:, columns], agree[keep][:, columns],
                             guarantee.threshold)  # fmt: skip


def _in_stratum(table, stratum: str) -> np.ndarray:
    if stratum == "overall":
        return np.ones(table.n_items, dtype=bool)
    attribute, _, value = stratum.partition("=")
    return table.mask(attribute, value)


def _outcome(name: str, report: dict, report_id: str, summary: dict) -> Outcome:
    """What the run changed, in a sentence for the dashboard."""
    rows = (report.get("selective") or {}).get("rows", [])
    unsupported = [f"{r['evaluator']} {r['stratum']}: {r['result'].get('reason')}"
                   for r in rows if not r.get("supported", True)]  # fmt: skip
    stored = len(rows) - len(unsupported)
    status = "ok" if stored else "unchanged"
    message = f"{stored} threshold(s) stored"
    if unsupported:
        kept = "; ".join(unsupported[:5])
        message += f"; kept the live guarantee where the labels could not test one: {kept}"
    return Outcome(name, status, message, report_id, summary)


def dashboard_summary(report: dict, previous: dict | None) -> dict:
    """What the dashboard shows of a report, small: its trust map, its corrected means by
    stratum, and its drift against the scope's report before (calibration/drift.py)."""
    found = drift(report, previous) if previous is not None else None
    estimate = report.get("estimate") or {}
    judges = estimate.get("judges") or {}
    multipliers = {judge: label_multiplier(data["overall"]) for judge, data in judges.items()}
    return {
        "trust_rows": [
            {**{k: row.get(k) for k in ("stratum", "judge", "verdict", "winning_rate",
                                        "advantage_probability", "missing", "reason")},
             "label_multiplier": multipliers.get(row.get("judge"))}
            for row in (report.get("trust") or {}).get("rows", [])
        ],  # fmt: skip
        "estimate": {
            "undefined": estimate.get("undefined"),
            "judges": {
                judge: {stratum: {**{k: block.get(k) for k in ("estimate", "ci", "n_labelled")},
                                  "label_multiplier": label_multiplier(block)}
                        for stratum, block in (data.get("strata") or {}).items()}
                for judge, data in judges.items()
            },
        },  # fmt: skip
        "drift": None if found is None else {
            "tested": found["tested"], "procedure": found["procedure"], "q": found["q"],
            "changes": [{k: c.get(k) for k in ("judge", "stratum", "metric", "previous",
                                               "current", "q_value")} for c in found["changes"]],
        },  # fmt: skip
    }

