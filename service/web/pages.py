"""How the workbench renders: its Jinja2 templates (autoescaped), its static files, and the
pages shown when something stops a person (no session, not her page, a stale form), so that
none of them ever sees a traceback or a JSON error body."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool

from service.db.engine import session_scope
from service.stores.smes import SignedIn
from service.web.session import BadCsrf, Forbidden, SignInNeeded

HERE = Path(__file__).parent
TEMPLATES = Jinja2Templates(directory=HERE / "templates")
STATIC = "/workbench/static"
REASONS = {
    "escalated": "Escalated: no judge's verdict could be trusted",
    "audit": "Audit: a random check of a trusted verdict",
    "sample": "Calibration sample",
}


T = TypeVar("T")


async def in_db(request: Request, work: Callable[..., T], *args: Any) -> T:
    """`work(session, *args)` in one transaction, on the thread pool (never on the loop)."""

    def run() -> T:
        with session_scope(request.app.state.sessions) as session:
            return work(session, *args)

    return await run_in_threadpool(run)


def page(
    request: Request,
    template: str,
    signed: SignedIn | None = None,
    status_code: int = 200,
    **context: Any,
) -> HTMLResponse:
    """A workbench page; `signed` fills the header (her name, her links, the CSRF token)."""
    return TEMPLATES.TemplateResponse(
        request,
        template,
        {"signed": signed, "static": STATIC, "reasons": REASONS, **context},
        status_code=status_code,
    )


def message(
    request: Request, title: str, text: str, status_code: int, signed: SignedIn | None = None
) -> HTMLResponse:
    return page(request, "message.html.j2", signed, status_code, title=title, text=text)


def see_other(path: str) -> RedirectResponse:
    """After a form: the next page by GET, so a refresh never sends the form again."""
    return RedirectResponse(path, status_code=303)


def install(app: FastAPI) -> None:
    """The static files and the pages of a refused request."""
    app.mount(STATIC, StaticFiles(directory=HERE / "static"), name="workbench-static")

    for kind, (title, text, status) in REFUSALS.items():
        app.add_exception_handler(kind, _refusal_page(title, text, status))


# What a person sees when a page is not for her (her session, her role, a stale form).
REFUSALS = {
    SignInNeeded: (
        "Please sign in",
        "Open the sign-in link your lead sent you. A link works once; if yours was used or "
        "has expired, ask your lead for a new one.",
        401,
    ),
    Forbidden: ("Not your page", "This page is not open to you.", 403),
    BadCsrf: (
        "Form refused",
        "This form is out of date (or did not come from this workbench), so nothing was "
        "changed. Go back, reload the page, and try again.",
        403,
    ),
}


def _refusal_page(title: str, text: str, status: int):
    async def handler(request: Request, _: Exception) -> HTMLResponse:
        return message(request, title, text, status)

    return handler
