"""Who is signed in to the workbench, and the checks every page and form makes.

A session is a cookie holding a random secret (`qadi_workbench`; httpOnly, SameSite=Lax,
Secure over HTTPS, path /workbench): the database keeps only its hash
(service/stores/smes.py). It opens the workbench's pages and nothing else: the HTTP API
authenticates by API key alone, so the cookie grants no API route. Every form that changes
something carries the session's CSRF token (a hidden field, or the X-CSRF-Token header htmx
sends), compared in constant time: a page of another site cannot post on her behalf.
"""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool

from service.db.engine import session_scope
from service.stores.smes import SignedIn, signed_in

COOKIE = "qadi_workbench"
COOKIE_PATH = "/workbench"


class SignInNeeded(Exception):
    """No open session: the page says how to sign in (an invite link from the lead)."""


class Forbidden(Exception):
    """Signed in, but this page is not hers (a lead's page, another SME's item)."""


class BadCsrf(Exception):
    """A form without the session's CSRF token: refused, nothing changed."""


def set_cookie(request: Request, response, secret: str, max_age: int) -> None:
    response.set_cookie(
        COOKIE,
        secret,
        max_age=max_age,
        path=COOKIE_PATH,
        httponly=True,
        samesite="lax",
        secure=_secure(request),
    )


def clear_cookie(request: Request, response) -> None:
    response.delete_cookie(
        COOKIE, path=COOKIE_PATH, httponly=True, samesite="lax", secure=_secure(request)
    )


def _secure(request: Request) -> bool:
    """Secure cookies over HTTPS (directly, or behind a proxy that says so)."""
    forwarded = request.headers.get("x-forwarded-proto", "")
    return request.url.scheme == "https" or forwarded.split(",")[0].strip() == "https"


async def current(request: Request) -> SignedIn:
    """The open session of this request, or SignInNeeded."""
    cookie = request.cookies.get(COOKIE)
    if not cookie:
        raise SignInNeeded()
    found = await run_in_threadpool(_lookup, request, cookie)
    if found is None:
        raise SignInNeeded()
    return found


def _lookup(request: Request, cookie: str) -> SignedIn | None:
    with session_scope(request.app.state.sessions) as session:
        return signed_in(session, cookie)


async def checked(request: Request, signed: SignedIn = Depends(current)) -> SignedIn:
    """The session, for a form that changes something: its CSRF token must come with it."""
    sent = request.headers.get("x-csrf-token")
    if sent is None and request.headers.get("content-type", "").startswith(
        ("application/x-www-form-urlencoded", "multipart/form-data")
    ):
        sent = (await request.form()).get("csrf")
    if not isinstance(sent, str) or not hmac.compare_digest(sent, signed.csrf_token):
        raise BadCsrf()
    return signed


async def lead(signed: SignedIn = Depends(current)) -> SignedIn:
    if not signed.person.is_lead:
        raise Forbidden()
    return signed


async def adjudicator(signed: SignedIn = Depends(current)) -> SignedIn:
    if not signed.person.may_adjudicate:
        raise Forbidden()
    return signed


async def lead_form(signed: SignedIn = Depends(checked)) -> SignedIn:
    return await lead(signed)


async def adjudicator_form(signed: SignedIn = Depends(checked)) -> SignedIn:
    return await adjudicator(signed)


Viewer = Annotated[SignedIn, Depends(current)]
Poster = Annotated[SignedIn, Depends(checked)]
Lead = Annotated[SignedIn, Depends(lead)]
LeadPoster = Annotated[SignedIn, Depends(lead_form)]
Adjudicator = Annotated[SignedIn, Depends(adjudicator)]
AdjudicatorPoster = Annotated[SignedIn, Depends(adjudicator_form)]
