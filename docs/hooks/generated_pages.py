"""MkDocs hook: the reference pages generated from the code at build time, so the site can
never describe a CLI option, an endpoint or a setting that is not there.

A page asks for a generated block with a marker on a line of its own:

    <!-- generated: cli -->       typer's Markdown of the `qadi` app (cli_reference.py)
    <!-- generated: http-api -->  the app's OpenAPI document as Markdown (http_api_reference.py)
    <!-- generated: settings -->  every QADI_ setting of service.settings (settings_reference.py)

An unknown marker fails the build. Nothing generated is committed: the pages in docs/ hold
only their prose and the marker.
"""

from __future__ import annotations

import re

import cli_reference
import http_api_reference
import settings_reference
from mkdocs.exceptions import PluginError

GENERATORS = {
    "cli": cli_reference.markdown,
    "http-api": http_api_reference.markdown,
    "settings": settings_reference.markdown,
}
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)

def on_page_markdown(markdown: str, page, config, files) -> str:
    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise PluginError(
                f"{page.file.src_uri}: unknown generated block {name!r} "
                f"(known: {', '.join(GENERATORS)})"
            )
        return GENERATORS[name]()

    return MARKER.sub(fill, markdown)
