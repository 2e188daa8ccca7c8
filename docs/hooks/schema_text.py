"""JSON Schema (as pydantic v2 and FastAPI write it, OpenAPI 3.1) in words for Markdown
tables: the type of a value, its constraints, and a table cell that cannot break the table.

pydantic writes an optional field as `anyOf: [{...}, {"type": "null"}]`; renderers made for
OpenAPI 3.0 lose the type there, so the reference pages read it here.
"""

from __future__ import annotations

import json
import re
from typing import Any

CODE_SPAN = re.compile(r"(`+[^`]*?`+)")
CONSTRAINTS = (
    ("minLength", "min length {}"),
    ("maxLength", "max length {}"),
    ("minimum", "≥ {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "≤ {}"),
    ("exclusiveMaximum", "< {}"),
    ("minItems", "min items {}"),
    ("maxItems", "max items {}"),
    ("pattern", "pattern `{}`"),
)


def schema_anchor(name: str) -> str:
    return "schema-" + name.lower()


def type_of(schema: dict[str, Any] | bool | None) -> str:
    """The type in words: `string or null`, `array of [Item](#schema-item)`, ..."""
    if not isinstance(schema, dict) or not schema:
        return "any"
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{schema_anchor(name)})"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(dict.fromkeys(type_of(part) for part in schema[key]))
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return type_of(schema["allOf"][0])
    if "const" in schema:
        return f"`{json.dumps(schema['const'], ensure_ascii=False)}`"
    if "enum" in schema:
        return " or ".join(f"`{json.dumps(v, ensure_ascii=False)}`" for v in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(type_of({**schema, "type": k}) for k in kind)
    if kind == "array":
        return f"array of {type_of(schema.get('items'))}"
    if kind == "object":
        values = schema.get("additionalProperties")
        return f"object of {type_of(values)}" if isinstance(values, dict) and values else "object"
    if kind:
        fmt = schema.get("format")
        return f"{kind} ({fmt})" if fmt else str(kind)
    return "any"


def constraints(schema: dict[str, Any]) -> list[str]:
    """Bounds and the default, from the schema and from each branch of an anyOf."""
    found: list[str] = []
    for part in [schema, *schema.get("anyOf", [])]:
        for key, text in CONSTRAINTS:
            if key in part:
                found.append(text.format(part[key]))
    if "default" in schema:
        found.append(f"default `{json.dumps(schema['default'], ensure_ascii=False)}`")
    return found


def describe(schema: dict[str, Any], description: str | None = None) -> str:
    """A field's description followed by its constraints, for one table cell."""
    words = [description if description is not None else schema.get("description", "")]
    bounds = constraints(schema)
    if bounds:
        words.append("(" + "; ".join(bounds) + ")")
    return " ".join(w for w in words if w)


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell: one line, no raw HTML, and pipes escaped
    outside code spans (Python-Markdown never splits a cell inside a code span, and would
    show the backslash there)."""
    parts = CODE_SPAN.split(" ".join(str(text).split()))
    return "".join(
        part if part.startswith("`") else part.replace("|", "\\|").replace("<", "&lt;")
        for part in parts
    )


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
