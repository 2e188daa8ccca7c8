"""Response bodies: JSON written fast, and a stored report in the format the client asks for
(JSON, HTML or Markdown, chosen by a `.json`/`.html`/`.md` suffix on the id or else by the
Accept header; calibration reports and probe runs alike)."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse

from service.json_text import fast_json


class FastJSONResponse(JSONResponse):
    """A JSONResponse whose body msgspec writes where it is the JSON Starlette's `json.dumps`
    would write (service/json_text.py); elsewhere Starlette writes it, or refuses it, as
    before. POST /judge's answer, 1.8% of a judged request's CPU by `json.dumps` (issue 40)."""

    def render(self, content: Any) -> bytes:
        written = fast_json(content)
        return super().render(content) if written is None else written


def split_suffix(ident: str) -> tuple[str, str | None]:
    """'abc.html' -> ('abc', 'html'); an id without a known suffix is returned as it is."""
    for suffix in ("html", "md", "json"):
        if ident.endswith(f".{suffix}"):
            return ident.removesuffix(f".{suffix}"), suffix
    return ident, None


def negotiate(request: Request, fmt: str | None, payload: dict[str, Any], html: str, markdown: str):
    accept = request.headers.get("accept", "")
    if fmt == "html" or (fmt is None and "text/html" in accept):
        return HTMLResponse(html)
    if fmt == "md" or (fmt is None and "text/markdown" in accept):
        return PlainTextResponse(markdown, media_type="text/markdown")
    return JSONResponse(payload)
