"""The lead's alignment pages: where a judge and the SMEs disagree (by criterion or rating
gap, the SMEs' reasons beside the judge's, one stratum at a time, downloadable), the
revisions `qadi align propose` made with their held-out certification, and the button that
makes a certified one live (service/alignment/)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from judges import TemplateError
from service.alignment.approval import approve_run
from service.alignment.disagreements import by_group, export, labelled_for
from service.alignment.revision import AlignmentError
from service.stores import alignment as store
from service.stores.rubrics import RubricNotFound, list_rubrics
from service.web.pages import in_db, message, page, see_other
from service.web.session import Lead, LeadPoster

router = APIRouter(prefix="/workbench", include_in_schema=False)
SHOWN = 25  # items per group on the page; the download has them all
MEDIA = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson; charset=utf-8"}


@router.get("/alignment", response_model=None)
async def overview(
    request: Request,
    signed: Lead,
    rubric: str = "",
    judge: str = "",
    stratum: str = "",
) -> HTMLResponse:
    """The form, the disagreements it asks for, and the project's alignment runs."""
    query, view = await _load(request, signed, rubric, judge, stratum)
    status = 422 if view["problem"] else 200
    return page(request, "alignment.html.j2", signed, status, query=query, shown=SHOWN,
                judges=request.app.state.grader.config.names, **view)  # fmt: skip


@router.get("/alignment/export", response_model=None)
async def download(
    request: Request,
    signed: Lead,
    rubric: str = "",
    judge: str = "",
    stratum: str = "",
    format: str = "csv",
) -> Response:
    """Every disagreement of the view as a CSV or JSON-lines file."""
    if format not in MEDIA:
        return message(request, "No such format", "Download as csv or jsonl.", 422, signed)
    query, view = await _load(request, signed, rubric, judge, stratum)
    if view["groups"] is None:
        problem = view["problem"] or "Choose a rubric and a judge first."
        return message(request, "Nothing to download", problem, 422, signed)
    name = f"disagreements-{view['rubric_ref']}-{query['judge']}.{format}".replace("@", "-v")
    return Response(export(view["groups"], format), media_type=MEDIA[format],
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})  # fmt: skip


async def _load(
    request: Request, signed, rubric: str, judge: str, stratum: str
) -> tuple[dict[str, str], dict[str, Any]]:
    """The query as typed (trimmed) and what the project's database says of it."""
    query = {"rubric": rubric.strip(), "judge": judge.strip(), "stratum": stratum.strip()}
    templates = request.app.state.grader.templates
    return query, await in_db(request, _view, signed.person.project, query, templates)


def _view(session: Session, project: str, query: dict[str, str], templates) -> dict[str, Any]:
    view: dict[str, Any] = {
        "rubrics": list_rubrics(session, project), "runs": store.runs(session, project),
        "groups": None, "problem": None, "rubric_ref": None, "labelled": 0,
    }  # fmt: skip
    if not (query["rubric"] and query["judge"]):
        return view
    where = None
    if query["stratum"]:
        key, sep, value = query["stratum"].partition("=")
        if not sep or not key:
            return {**view, "problem": f"Stratum: write it as attribute=value, such as "
                    f"dialect=gulf (not '{query['stratum']}')."}  # fmt: skip
        where = (key.strip(), value.strip())
    try:
        rubric, _, items = labelled_for(session, project, query["rubric"], query["judge"],
                                        templates)  # fmt: skip
    except (RubricNotFound, TemplateError) as exc:
        return {**view, "problem": str(exc)}
    return {**view, "groups": by_group(items, rubric, where), "labelled": len(items),
            "rubric_ref": f"{rubric.id}@{rubric.version}"}  # fmt: skip


@router.get("/alignment/runs/{run_id}", response_model=None)
async def run_page(request: Request, run_id: str, signed: Lead) -> HTMLResponse:
    run = await in_db(request, store.get_run, signed.person.project, run_id)
    if run is None:
        return message(request, "No such revision", "This project has no such revision.", 404,
                       signed)  # fmt: skip
    return page(request, "alignment_run.html.j2", signed, run=run, cert=run.certification or {},
                problem=None)  # fmt: skip


@router.post("/alignment/runs/{run_id}/approve", response_model=None)
async def approve(
    request: Request, run_id: str, signed: LeadPoster
) -> HTMLResponse | RedirectResponse:
    """Make the revision live (a new rubric version grades from now on); one that was not
    certified only with the form's "although it is not certified" box ticked."""
    uncertified = (await request.form()).get("uncertified") == "yes"
    try:
        await in_db(request, approve_run, signed.person.project, run_id, signed.person.handle,
                    uncertified)  # fmt: skip
    except AlignmentError as exc:
        run = await in_db(request, store.get_run, signed.person.project, run_id)
        if run is None:
            return message(request, "No such revision", str(exc), 404, signed)
        return page(request, "alignment_run.html.j2", signed, 409, run=run,
                    cert=run.certification or {}, problem=str(exc))  # fmt: skip
    return see_other(f"/workbench/alignment/runs/{run_id}")
