"""The workbench: server-rendered pages (Jinja2, vendored htmx, no CDN) where SMEs grade their
queue and leads manage the team and settle disagreements. Signed in by invite links with
browser sessions, never by API keys; it calls the same stores as service/api/, and neither
imports the other."""

from __future__ import annotations

from fastapi import FastAPI

from service.web import alignment, dashboard, grading, pages, signin, team


def install(app: FastAPI) -> None:
    pages.install(app)
    for module in (signin, grading, team, dashboard, alignment):
        app.include_router(module.router)
