"""The SME's pages: her queue, and the grading page of the item she holds.

Judge-blind: nothing here reads a judge's verdict, score or confidence (the queue's `trust`
column is never selected), so no page can show one before she submits. Every change is a
form with the session's CSRF token; after a form the next page comes by GET (303), so a
refresh never sends it twice, and a double submit stores one grade (the store's conditional
update). Her marks are saved as she makes them (htmx posts the form on every change), so a
refresh or a dropped connection loses nothing.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy.orm import Session

from rubrics import PenaltyWeightedRubric, Rubric, RubricError
from service.stores import assignments
from service.stores.rubrics import RubricNotFound, get_rubric
from service.stores.smes import Person, SignedIn
from service.web.forms import FormProblem, controls, draft_of, label_of
from service.web.pages import in_db, message, page, see_other
from service.web.session import Poster, Viewer

router = APIRouter(prefix="/workbench", include_in_schema=False)
NOTICES = {
    "empty": "Nothing is waiting for you right now. Thank you!",
    "done": "Saved. That was the last item waiting for you.",
    "skipped": "Skipped: the item goes to another SME.",
    "cannot": "Noted: the item goes to another SME with your reason.",
    "closed": "That item is not open for you: it is not in your queue, or it returned to the "
    "queue after a long pause and another SME took it. Your queue has the next one.",
}
UPCOMING = 20


@router.get("/queue", response_model=None)
async def queue_page(request: Request, signed: Viewer) -> HTMLResponse:
    view = await in_db(request, _queue_view, signed.person)
    notice = NOTICES.get(request.query_params.get("notice", ""))
    return page(request, "queue.html.j2", signed, notice=notice, **view)


def _queue_view(session: Session, person: Person) -> dict[str, Any]:
    return {
        "progress": assignments.progress(session, person),
        "held": assignments.current(session, person),
        "upcoming": assignments.upcoming(session, person, UPCOMING),
        "recent": assignments.recent(session, person, UPCOMING),
        "counted": assignments.COUNTED,
    }


@router.post("/next", response_model=None)
async def next_item(request: Request, signed: Poster) -> RedirectResponse:
    return await _to_next(request, signed, "empty")


async def _to_next(request: Request, signed: SignedIn, notice: str) -> RedirectResponse:
    minutes = request.app.state.settings.sme_reservation_minutes
    slot = await in_db(request, assignments.reserve_next, signed.person, minutes)
    return see_other(f"/workbench/items/{slot}" if slot else f"/workbench/queue?notice={notice}")


@router.get("/items/{slot}", response_model=None)
async def item_page(request: Request, slot: str, signed: Viewer) -> HTMLResponse:
    view = await _held(request, signed, slot)
    if isinstance(view, HTMLResponse):
        return view
    held, rubric = view
    minutes = request.app.state.settings.sme_reservation_minutes
    await in_db(request, assignments.renew, signed.person, held.id, minutes)  # she is back
    draft = held.draft or {}
    return page(request, "grade.html.j2", signed, **_grading_context(held, rubric, draft, []))


@router.post("/items/{slot}/draft", response_model=None)
async def save_draft(request: Request, slot: str, signed: Poster) -> HTMLResponse:
    view = await _held(request, signed, slot)
    if isinstance(view, HTMLResponse):
        return HTMLResponse("Not saved: this item is no longer yours.", status_code=409)
    held, rubric = view
    form = await request.form()
    try:
        draft = draft_of(form, rubric)
    except FormProblem as exc:
        return HTMLResponse(f"Not saved: {exc}", status_code=422)
    minutes = request.app.state.settings.sme_reservation_minutes
    kept = await in_db(request, assignments.save_draft, signed.person, held.id, draft, minutes)
    if not kept:
        return HTMLResponse("Not saved: this item is no longer yours.", status_code=409)
    return HTMLResponse("Your marks are saved.")


@router.post("/items/{slot}/submit", response_model=None)
async def submit(request: Request, slot: str, signed: Poster) -> HTMLResponse | RedirectResponse:
    view = await _held(request, signed, slot)
    if isinstance(view, HTMLResponse):
        return _gone(view)
    held, rubric = view
    form = await request.form()
    try:
        label = label_of(form, rubric)
        stored = await in_db(request, assignments.submit, signed.person, held.id, label, rubric)
    except (FormProblem, RubricError) as exc:
        draft = draft_of(form, rubric) if not isinstance(exc, FormProblem) else held.draft or {}
        problems = _problems(str(exc), rubric)
        context = _grading_context(held, rubric, draft, problems)
        return page(request, "grade.html.j2", signed, 422, **context)
    if not stored:
        return see_other("/workbench/queue?notice=closed")
    return await _to_next(request, signed, "done")


@router.post("/items/{slot}/cannot-judge", response_model=None)
async def cannot_judge(
    request: Request, slot: str, signed: Poster
) -> HTMLResponse | RedirectResponse:
    view = await _held(request, signed, slot)
    if isinstance(view, HTMLResponse):
        return _gone(view)
    held, rubric = view
    reason = str((await request.form()).get("reason") or "").strip()[:2000]
    if not reason:
        problems = ["Say why you cannot judge this item (it helps the lead route it)."]
        context = _grading_context(held, rubric, held.draft or {}, problems)
        return page(request, "grade.html.j2", signed, 422, **context)
    await in_db(request, assignments.cannot_judge, signed.person, held.id, reason)
    return await _to_next(request, signed, "cannot")


@router.post("/items/{slot}/skip", response_model=None)
async def skip(request: Request, slot: str, signed: Poster) -> RedirectResponse:
    if slot.isdigit():
        await in_db(request, assignments.skip, signed.person, int(slot))
    return await _to_next(request, signed, "skipped")


def _gone(page_: HTMLResponse) -> HTMLResponse | RedirectResponse:
    """A form for an item no longer hers: back to her queue, which says so."""
    return see_other("/workbench/queue?notice=closed") if page_.status_code == 404 else page_


async def _held(
    request: Request, signed: SignedIn, slot: str
) -> tuple[assignments.Assignment, Rubric] | HTMLResponse:
    """Her open slot and its rubric, or the page that says why she cannot work on it."""
    found = await in_db(request, _slot_and_rubric, signed.person, slot)
    if found is None:
        return message(request, "Not your item", NOTICES["closed"], 404, signed)
    held, rubric = found
    if held.status != "reserved":
        text = "You have finished with this item. Go back to your queue for the next one."
        return message(request, "Already done", text, 409, signed)
    if rubric is None:
        text = f"The rubric {held.rubric_ref} of this item is not stored; tell your lead."
        return message(request, "Rubric missing", text, 409, signed)
    return held, rubric


def _slot_and_rubric(session: Session, person: Person, slot: str):
    if not slot.isdigit():
        return None
    held = assignments.assignment(session, person, int(slot))
    if held is None:
        return None
    try:
        return held, get_rubric(session, person.project, held.rubric_ref)
    except RubricNotFound:
        return held, None


def _grading_context(
    held: assignments.Assignment, rubric: Rubric, draft: dict, problems: list[str]
) -> dict[str, Any]:
    return {"held": held, **controls(rubric, draft, problems)}


def _problems(error: str, rubric: Rubric) -> list[str]:
    """The rubric's refusal in the SME's words: which criteria or dimensions are unmarked."""
    if "missing verdicts for" in error and isinstance(rubric, PenaltyWeightedRubric):
        numbers = [str(k) for k, c in enumerate(rubric.criteria, 1) if f"'{c.id}'" in error]
        return [f"Mark every criterion before you submit: criterion {', '.join(numbers)} "
                "is not marked yet."]  # fmt: skip
    if "no rating for" in error:
        return ["Choose a rating before you submit."]
    return [error]
