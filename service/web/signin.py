"""Signing in by an invite link, and out.

Opening the link shows whom it is for and a button; only the button (a POST) uses it. Mail
scanners and chat previews fetch links on their own: a link used on GET would be spent
before its owner clicked it.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from service.stores.smes import SignInRefused, close_session, invited, open_session
from service.web.pages import in_db, message, page, see_other
from service.web.session import COOKIE, Poster, clear_cookie, set_cookie

router = APIRouter(prefix="/workbench", include_in_schema=False)


@router.get("/invite/{secret}", response_model=None)
async def invitation(request: Request, secret: str) -> HTMLResponse:
    try:
        person = await in_db(request, invited, secret)
    except SignInRefused as exc:
        return message(request, "This link does not work", str(exc), 410)
    return page(request, "invite.html.j2", person=person, secret=secret)


@router.post("/invite/{secret}", response_model=None)
async def sign_in(request: Request, secret: str) -> HTMLResponse | RedirectResponse:
    hours = request.app.state.settings.workbench_session_hours
    try:
        cookie, _ = await in_db(request, open_session, secret, hours)
    except SignInRefused as exc:
        return message(request, "This link does not work", str(exc), 410)
    response = see_other("/workbench/queue")
    set_cookie(request, response, cookie, int(hours * 3600))
    return response


@router.post("/signout", response_model=None)
async def sign_out(request: Request, signed: Poster) -> HTMLResponse:
    await in_db(request, close_session, request.cookies[COOKIE])
    response = message(request, "Signed out", "You are signed out. Your work is saved.", 200)
    clear_cookie(request, response)
    return response


@router.get("", response_model=None)
async def home() -> RedirectResponse:
    return see_other("/workbench/queue")
