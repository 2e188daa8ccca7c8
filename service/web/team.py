"""The lead's pages: the team (invite an SME, withdraw one, who graded how much, the queue)
and the disagreements of double-labelled items, settled by a lead or a senior SME.

An invite link is shown once, on the page that made it (only its hash is stored), for the
lead to send as she likes. Adjudication shows the two SMEs' labels and reasons side by side
(never a judge's output) and stores the outcome beside them.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy.orm import Session

from rubrics import RubricError
from rubrics.labels import grade_of
from service.stores import adjudications, queue_overview
from service.stores.rubrics import RubricNotFound, get_rubric
from service.stores.sme_queue import texts_of
from service.stores.smes import (
    PeopleError,
    Person,
    add_person,
    find_person,
    invite,
    invite_url,
    people,
    revoke_person,
)
from service.web.agreement import agreement_by_rubric
from service.web.forms import FormProblem, controls, label_of
from service.web.pages import in_db, message, page, see_other
from service.web.session import Adjudicator, AdjudicatorPoster, Lead, LeadPoster

router = APIRouter(prefix="/workbench", include_in_schema=False)


@router.get("/team", response_model=None)
async def team_page(request: Request, signed: Lead) -> HTMLResponse:
    view = await in_db(request, _team_view, signed.person.project)
    return page(request, "team.html.j2", signed, **view)


def _team_view(session: Session, project: str) -> dict[str, Any]:
    done = queue_overview.labels_by_person(session, project)
    overlap = adjudications.double_labelled(session, project)
    return {
        "people": [(p, revoked, done.get(p.id, 0)) for p, revoked in people(session, project)],
        "queue": queue_overview.queue_counts(session, project),
        "unroutable": queue_overview.unroutable(session, project),
        "backlog": queue_overview.backlog(session, project),
        "throughput": queue_overview.throughput(session, project),
        "stale": queue_overview.stale(session, project),
        "cannot": queue_overview.cannot_judge_notes(session, project),
        "overlap": overlap,
        "agreement": agreement_by_rubric(session, project, overlap),
        "open_disagreements": sum(1 for i in overlap if i.disagree and i.outcome is None),
        "new_link": None,
        "problems": [],
    }


@router.post("/team/invite", response_model=None)
async def invite_person(request: Request, signed: LeadPoster) -> HTMLResponse:
    form = await request.form()
    fields = {k: str(form.get(k) or "").strip() for k in ("handle", "name", "role", "tags")}
    hours = request.app.state.settings.workbench_invite_hours
    try:
        made = await in_db(request, _invite, signed.person.project, fields, hours)
    except PeopleError as exc:
        view = await in_db(request, _team_view, signed.person.project)
        view["problems"] = [str(exc)]
        return page(request, "team.html.j2", signed, 422, **view)
    person, secret = made
    view = await in_db(request, _team_view, signed.person.project)
    view["new_link"] = (person, invite_url(_base_url(request), secret), hours)
    return page(request, "team.html.j2", signed, **view)


def _invite(session: Session, project: str, fields: dict[str, str], hours: float):
    """A new person, or a new link for one: empty fields keep what she has."""
    tags = [t for t in fields["tags"].replace(",", " ").split() if t] or None
    role = fields["role"] or None
    person = add_person(session, project, fields["handle"], fields["name"] or None, role, tags)
    return person, invite(session, person, hours)


def _base_url(request: Request) -> str:
    return request.app.state.settings.public_url or str(request.base_url)


@router.post("/team/people/{handle}/revoke", response_model=None)
async def revoke(
    request: Request, handle: str, signed: LeadPoster
) -> HTMLResponse | RedirectResponse:
    try:
        await in_db(request, _revoke, signed.person.project, handle, signed.person)
    except PeopleError as exc:
        return message(request, "Not withdrawn", str(exc), 422, signed)
    return see_other("/workbench/team")


def _revoke(session: Session, project: str, handle: str, lead: Person) -> None:
    person = find_person(session, project, handle)
    if person.id == lead.id:
        raise PeopleError("you cannot withdraw your own access here; another lead can")
    revoke_person(session, person)


@router.get("/adjudicate", response_model=None)
async def disagreements(request: Request, signed: Adjudicator) -> HTMLResponse:
    items = await in_db(request, adjudications.double_labelled, signed.person.project)
    disputed = [i for i in items if i.disagree]
    disputed.sort(key=lambda i: (i.outcome is not None, i.queue_id))
    return page(request, "disagreements.html.j2", signed, items=disputed)


@router.get("/adjudicate/{queue_id}", response_model=None)
async def adjudication_page(request: Request, queue_id: str, signed: Adjudicator) -> HTMLResponse:
    found = await in_db(request, _disputed, signed.person, queue_id)
    if isinstance(found, str):
        return message(request, "No such disagreement", found, 404, signed)
    return page(request, "adjudicate.html.j2", signed, **_context(*found, []))


@router.post("/adjudicate/{queue_id}", response_model=None)
async def settle(
    request: Request, queue_id: str, signed: AdjudicatorPoster
) -> HTMLResponse | RedirectResponse:
    found = await in_db(request, _disputed, signed.person, queue_id)
    if isinstance(found, str):
        return message(request, "No such disagreement", found, 404, signed)
    item, rubric, texts = found
    form = await request.form()
    try:
        label = label_of(form, rubric)
        grade = grade_of(rubric, label)
    except (FormProblem, RubricError) as exc:
        context = _context(item, rubric, texts, [str(exc)])
        return page(request, "adjudicate.html.j2", signed, 422, **context)
    await in_db(
        request, adjudications.adjudicate, signed.person, item.queue_id, grade, label.rationale
    )
    return see_other("/workbench/adjudicate")


def _disputed(session: Session, person: Person, queue_id: str):
    """The disagreement, its rubric and texts, or why there is none for her to settle."""
    project = person.project
    if not queue_id.isdigit():
        return "That is not an item of this workbench."
    found = adjudications.double_labelled(session, project, int(queue_id))
    if not found or not found[0].disagree:
        return "This item has no disagreement to settle."
    if person.handle in found[0].raters:
        return "You gave one of its two labels: another senior SME or a lead settles it."
    try:
        rubric = get_rubric(session, project, found[0].rubric_ref)
    except RubricNotFound:
        return f"The rubric {found[0].rubric_ref} is not stored."
    return found[0], rubric, texts_of(session, project, found[0].queue_id)


def _context(
    item: adjudications.DoubleLabelled, rubric, texts: dict, problems: list[str]
) -> dict[str, Any]:
    return {"item": item, "texts": texts, **controls(rubric, {}, problems)}
