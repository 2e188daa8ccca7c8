"""The lead's dashboard: which guarantee POST /judge applies now, fitted on which labels and
since when; the trust map of the latest report; its history over the stored reports; what
happened to requests at request time, day by day; drift between the last two reports; the
corrected scores per candidate model; the log of every change; and the calibration scopes
the service recalibrates by itself, which a lead adds and runs from here.

Every number is in a table (readable without JavaScript, which the pages do not need); the
plots are SVG drawn on the server (service/web/plots.py). The data comes from small rows
written as things happen (report points, daily outcome counts, the change log) and from at
most two stored reports, so a page costs the same after a year of requests.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import ValidationError
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from rubrics import split_ref
from service.db.values import utcnow
from service.stores import guarantees, outcomes, scopes
from service.stores.calibration import report_points, stored_report
from service.web.pages import in_db, message, page, see_other
from service.web.plots import Series, lines, stacked_bars
from service.web.session import Lead, LeadPoster

router = APIRouter(prefix="/workbench", include_in_schema=False)
DAYS = 30
OUTCOMES = ("trusted", "audited", "escalated", "uncalibrated")


@router.get("/dashboard", response_model=None)
async def overview(request: Request, signed: Lead) -> HTMLResponse:
    found = await in_db(request, scopes.scopes, signed.person.project)
    return page(request, "dashboard.html.j2", signed, scopes=found, problems=[], form={})


@router.post("/dashboard/scopes", response_model=None)
async def add_scope(request: Request, signed: LeadPoster) -> HTMLResponse | RedirectResponse:
    form = {k: str(v).strip() for k, v in (await request.form()).items() if k != "csrf"}
    try:
        spec = scopes.ScopeSpec(
            name=form.get("name", ""), rubric=form.get("rubric", ""),
            alpha=form.get("alpha") or 0.1, delta=form.get("delta") or 0.1,
            cascades=[c.replace(" ", "").split(",") for c in form.get("cascade", "").split(";")
                      if c.strip()],
            by=[b for b in form.get("by", "").replace(",", " ").split() if b],
            every_labels=form.get("every_labels") or None,
            every_hours=form.get("every_hours") or None,
        )  # fmt: skip
        await in_db(request, scopes.add_scope, signed.person.project, spec, signed.person.handle)
    except ValidationError as exc:
        error = exc.errors()[0]
        problem = f"{'.'.join(map(str, error['loc']))}: {error['msg']}"
        return await _overview_with(request, signed, problem, form)
    except scopes.ScopeError as exc:
        return await _overview_with(request, signed, str(exc), form)
    return see_other(f"/workbench/dashboard/{spec.name}")


async def _overview_with(request: Request, signed, problem: str, form: dict) -> HTMLResponse:
    found = await in_db(request, scopes.scopes, signed.person.project)
    return page(request, "dashboard.html.j2", signed, 422, scopes=found, problems=[problem],
                form=form)  # fmt: skip


@router.get("/dashboard/{name}", response_model=None)
async def scope_page(request: Request, name: str, signed: Lead) -> HTMLResponse:
    view = await in_db(request, _scope_view, signed.person.project, name)
    if view is None:
        return message(request, "No such scope", f"The project has no scope '{name}'.", 404,
                       signed)  # fmt: skip
    return page(request, "scope.html.j2", signed, **view)


@router.post("/dashboard/{name}/run", response_model=None)
async def run_now(
    request: Request, name: str, signed: LeadPoster
) -> HTMLResponse | RedirectResponse:
    """Recalibrate the scope now, as the service would when it falls due."""
    try:
        scope_id = (await in_db(request, scopes.find_scope, signed.person.project, name)).id
    except scopes.ScopeError as exc:
        return message(request, "No such scope", str(exc), 404, signed)
    runner = request.app.state.recalibrator
    await run_in_threadpool(runner.run, scope_id, "manual", signed.person.handle)
    return see_other(f"/workbench/dashboard/{name}")


@router.get("/reports/{report_id}", response_model=None)
async def full_report(request: Request, report_id: str, signed: Lead) -> HTMLResponse:
    row = await in_db(request, stored_report, signed.person.project, report_id)
    if row is None:
        return message(request, "No such report", "This project has no such report.", 404, signed)
    return HTMLResponse(row.html)


def _scope_view(session: Session, project: str, name: str) -> dict[str, Any] | None:
    try:
        scope = scopes.find_scope(session, project, name)
    except scopes.ScopeError:
        return None
    options = scope.options
    rubric_id = split_ref(scope.rubric)[0]
    live = guarantees.live(session, project, rubric_id, options["alpha"], options["delta"],
                           options.get("confidence", "token"))  # fmt: skip
    audits = guarantees.audits(session, project, name)
    last_audit = {}
    for found in audits:  # newest first
        last_audit.setdefault((found.evaluator, found.stratum), found)
    points = report_points(session, project, name)
    summary = scope.summary or {}
    return {
        "scope": scope,
        "labels": scopes.sme_labels(session, project, scope.rubric),
        "live": sorted(live.values(), key=lambda g: (g.evaluator, g.stratum != "overall",
                                                     g.stratum)),  # fmt: skip
        "last_audit": last_audit,
        "trust_rows": summary.get("trust_rows", []),
        "drift": summary.get("drift"),
        "estimate": summary.get("estimate", {}),
        "history": _history(points),
        "outcomes": _outcomes(outcomes.series(session, project, rubric_id, DAYS)),
        "changes": guarantees.changes(session, project, name, 50),
    }


def _history(points: list[dict]) -> dict[str, Any]:
    """Per metric, one chart and its table: a line per judge over the reports."""
    judges = sorted({j for p in points for j in p["judges"]})
    x_labels = [p["at"][5:16].replace("T", " ") for p in points]
    charts = {}
    for metric, title in (("mad", "MAD (mean |judge − SMEs|)"),
                          ("signed_error", "Signed error (+: lenient)"),
                          ("omega", "ω: winning rate of the alt-test"),
                          ("rho", "ρ: advantage probability"),
                          ("label_multiplier", "Label multiplier: labels each SME label is "
                           "worth beside the judge")):  # fmt: skip
        series = []
        for judge in judges:
            values = [p["judges"].get(judge, {}).get(metric) for p in points]
            if not any(v is not None for v in values):
                continue
            ci = [p["judges"].get(judge, {}).get(f"{metric}_ci") for p in points]
            low = [c[0] if c else None for c in ci] if any(ci) else None
            high = [c[1] if c else None for c in ci] if any(ci) else None
            series.append(Series(judge, values, low, high))
        if series:
            charts[metric] = {"title": title, "svg": lines(title, x_labels, series, title),
                              "series": series}  # fmt: skip
    return {"x": x_labels, "charts": charts, "reports": [p["report"] for p in points]}


def _outcomes(rows: list[dict]) -> dict[str, Any]:
    """Totals per (evaluator, stratum) and status, and the daily bars."""
    today = utcnow().date()
    days = [today - timedelta(days=DAYS - 1 - i) for i in range(DAYS)]
    daily: dict[str, list[int]] = {status: [0] * DAYS for status in OUTCOMES}
    totals: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: dict.fromkeys(OUTCOMES, 0))
    for row in rows:
        index = (row["day"] - days[0]).days
        if 0 <= index < DAYS and row["status"] in daily:
            daily[row["status"]][index] += row["n"]
        totals[(row["evaluator"], row["stratum"])][row["status"]] += row["n"]
    labels = [d.strftime("%m-%d") for d in days]
    svg = stacked_bars("Requests with trust, per day", labels, daily)
    return {"svg": svg, "totals": dict(sorted(totals.items())), "statuses": OUTCOMES}
