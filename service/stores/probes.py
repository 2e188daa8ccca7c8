"""Stored probe runs: written once in a project, read by id, listed in keyset pages (oldest
first, as /judgments pages), like calibration reports (service/stores/calibration.py); reads
see what the tenant may (service/stores/projects.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.db.filters import after
from service.db.schema import ProbeRunRow, new_id, utcnow
from service.stores.projects import Tenant


def store_run(
    session: Session,
    project: str,
    report: dict[str, Any],
    perturbations: list[dict[str, Any]],
    render: Any,
) -> ProbeRunRow:
    """Store a run; `render(report) -> (markdown, html)` draws it once its id is known, so
    the pages name the run they show."""
    row = ProbeRunRow(
        id=new_id(),
        project=project,
        created_at=utcnow(),
        rubric_ref=report["rubric"],
        seed=report["seed"],
    )
    report = {**report, "id": row.id, "created_at": row.created_at.isoformat()}
    row.markdown, row.html = render(report)
    row.report, row.perturbations = report, perturbations
    session.add(row)
    session.flush()
    return row


def get_run(session: Session, tenant: Tenant, run_id: str) -> ProbeRunRow | None:
    """The run, when the tenant may read it; None as for an unknown id."""
    row = session.get(ProbeRunRow, run_id)
    return row if row is not None and tenant.owns(row.project) else None


def latest_run(session: Session, tenant: Tenant) -> ProbeRunRow | None:
    return session.scalars(
        select(ProbeRunRow)
        .where(tenant.visible(ProbeRunRow.project))
        .order_by(ProbeRunRow.created_at.desc(), ProbeRunRow.id.desc())
    ).first()


def list_runs(
    session: Session, tenant: Tenant, limit: int, cursor: tuple[datetime, str] | None = None
) -> list[ProbeRunRow]:
    """Oldest first; `cursor` is the (created_at, id) of the last row of the previous page."""
    query = select(ProbeRunRow).where(tenant.visible(ProbeRunRow.project))
    if cursor is not None:
        query = query.where(after(ProbeRunRow.created_at, ProbeRunRow.id, *cursor))
    order = (ProbeRunRow.created_at, ProbeRunRow.id)
    return list(session.scalars(query.order_by(*order).limit(limit)))


def summary(row: ProbeRunRow) -> dict[str, Any]:
    """A run in a list: what was probed and what moved, without the cells."""
    report = row.report
    return {
        "id": row.id,
        "created_at": row.created_at.isoformat(),
        "rubric": row.rubric_ref,
        "seed": row.seed,
        "judges": report["judges"],
        "probes": [p["name"] for p in report["probes"]],
        "n_items": report["n_items"],
        "moved": report["moved"],
    }
