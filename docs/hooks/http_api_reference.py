"""The HTTP API reference: the OpenAPI document of the app `qadi serve` runs
(`service.app.create_app`), rendered as Markdown. No Swagger UI or ReDoc script is involved,
so the page works offline and is searched like any other page.

The app refuses an unmigrated database, so the document is taken from an app built on a
fresh SQLite database in a temporary directory (the same way tests/client does). No judges
are configured: the document does not depend on them.

Why not essentials-openapi (neoteroi's OAD plugin): it reads OpenAPI 3.0, and on the 3.1
document FastAPI writes it loses the type of every optional field (pydantic's `anyOf` with
`null`) and shows the security schemes as header parameters named after the scheme instead
of the header (`APIKeyHeader` instead of `X-API-Key`).
"""

from __future__ import annotations

import json
import logging
import tempfile
from itertools import groupby
from pathlib import Path
from typing import Any

from schema_text import describe, schema_anchor, table, type_of

METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


def openapi_document() -> dict[str, Any]:
    from service.app import create_app
    from service.db.engine import upgrade
    from service.settings import Settings

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'qadi.db'}"
        upgrade(url)
        quiet = logging.getLogger("qadi")
        level = quiet.level
        quiet.setLevel(logging.ERROR)  # "no judges configured" is expected here
        try:
            app = create_app(Settings(database_url=url, judges_config=None))
        finally:
            quiet.setLevel(level)
        try:
            return app.openapi()
        finally:
            app.state.engine.dispose()


def markdown() -> str:
    return render(openapi_document())


def render(doc: dict[str, Any]) -> str:
    """The whole reference: overview, authentication, errors, endpoints by tag, schemas."""
    schemes = doc.get("components", {}).get("securitySchemes", {})
    schemas = doc.get("components", {}).get("schemas", {})
    operations = [
        (path, method, op)
        for path, item in doc.get("paths", {}).items()
        for method, op in item.items()
        if method in METHODS
    ]
    parts = [
        f"OpenAPI {doc.get('openapi', '')}, API version {doc['info'].get('version', '')}.",
        doc["info"].get("description", "").strip(),
        "## Authentication",
        _authentication(schemes),
        "## Errors",
        _errors(operations),
        "## Endpoints",
    ]
    tag_order = list(dict.fromkeys(_tag(op) for _, _, op in operations))
    by_tag = sorted(operations, key=lambda o: tag_order.index(_tag(o[2])))
    for tag, group in groupby(by_tag, key=lambda o: _tag(o[2])):
        parts.append(f"### {tag}")
        parts.extend(_operation(path, method, op, schemes) for path, method, op in group)
    parts.append("## Schemas")
    parts.extend(_schema(name, schema) for name, schema in sorted(schemas.items()))
    return "\n\n".join(p for p in parts if p) + "\n"


def _tag(op: dict[str, Any]) -> str:
    return (op.get("tags") or ["other"])[0]


def _authentication(schemes: dict[str, Any]) -> str:
    lines = ["Routes marked *API key* accept the key in any one of these forms:", ""]
    for name, scheme in schemes.items():
        if scheme.get("type") == "http":
            how = f"header `Authorization: {scheme.get('scheme', '').title()} <key>`"
        elif scheme.get("type") == "apiKey":
            how = f"{scheme.get('in', '')} `{scheme.get('name', '')}: <key>`"
        else:
            how = scheme.get("type", "")
        lines.append(f"- {how} ({name}): {scheme.get('description', '')}")
    return "\n".join(lines)


def _errors(operations: list[tuple[str, str, dict[str, Any]]]) -> str:
    """Which body shapes the error responses use, read from the document itself."""
    shapes: dict[str, set[str]] = {}
    for _, _, op in operations:
        for status, response in op.get("responses", {}).items():
            if status[0] in "45":
                for media in response.get("content", {}).values():
                    shapes.setdefault(type_of(media.get("schema")), set()).add(status)
    if not shapes:
        return ""
    lines = ["Error responses (status 4xx and 5xx) have these bodies:", ""]
    for shape, statuses in sorted(shapes.items()):
        lines.append(f"- {shape}: {', '.join(sorted(statuses))}")
    return "\n".join(lines)


def _operation(path: str, method: str, op: dict[str, Any], schemes: dict[str, Any]) -> str:
    parts = [f"#### `{method.upper()} {path}`"]
    if op.get("summary"):
        parts.append(f"**{op['summary']}**")
    if op.get("description"):
        parts.append(op["description"].strip())
    if op.get("security"):
        names = sorted({name for requirement in op["security"] for name in requirement})
        parts.append("*API key* (" + ", ".join(names) + ")")
    if op.get("parameters"):
        rows = [
            [
                f"`{p['name']}`",
                p.get("in", ""),
                type_of(p.get("schema")),
                "yes" if p.get("required") else "no",
                describe(p.get("schema", {}), p.get("description")),
            ]
            for p in op["parameters"]
        ]
        parts.append(
            "**Parameters**\n\n"
            + table(["Name", "In", "Type", "Required", "Description"], rows)
        )
    if op.get("requestBody"):
        parts.append(_request_body(op["requestBody"]))
    rows = [
        [
            status,
            response.get("description", ""),
            "; ".join(
                f"{media}: {type_of(body.get('schema'))}"
                for media, body in response.get("content", {}).items()
            ),
        ]
        for status, response in op.get("responses", {}).items()
    ]
    parts.append("**Responses**\n\n" + table(["Status", "Description", "Body"], rows))
    return "\n\n".join(parts)


def _request_body(body: dict[str, Any]) -> str:
    required = "required" if body.get("required") else "optional"
    parts = []
    for media, content in body.get("content", {}).items():
        parts.append(f"**Request body** ({media}, {required}): {type_of(content.get('schema'))}")
        examples = content.get("examples") or {}
        for name, example in examples.items():
            if "value" in example:
                text = json.dumps(example["value"], ensure_ascii=False, indent=2)
                block = "\n".join("    " + line for line in text.splitlines())
                title = example.get("summary") or name
                parts.append(f'??? example "Example: {title}"\n    ```json\n{block}\n    ```')
    return "\n\n".join(parts)


def _schema(name: str, schema: dict[str, Any]) -> str:
    parts = [f"### {name} {{ #{schema_anchor(name)} }}"]
    if schema.get("description"):
        parts.append(schema["description"].strip())
    properties = schema.get("properties")
    if properties:
        required = set(schema.get("required", []))
        rows = [
            [f"`{field}`", type_of(sub), "yes" if field in required else "no", describe(sub)]
            for field, sub in properties.items()
        ]
        parts.append(table(["Field", "Type", "Required", "Description"], rows))
    else:
        parts.append(f"Type: {type_of(schema)}")
    return "\n\n".join(parts)
