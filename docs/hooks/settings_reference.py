"""The settings reference: every field of `service.settings.Settings` as the environment
variable that sets it, with its type, default and description, read from the model itself.

A setting without a description fails the build: the page would otherwise list a variable
nobody explained.
"""

from __future__ import annotations

import json

from schema_text import constraints, table, type_of


def markdown() -> str:
    from service.settings import Settings

    prefix = Settings.model_config.get("env_prefix", "")
    properties = Settings.model_json_schema()["properties"]
    rows = []
    for name, field in Settings.model_fields.items():
        if not field.description:
            raise RuntimeError(f"service/settings.py: setting {name!r} has no description")
        schema = properties[name]
        rows.append(
            [
                f"`{(prefix + name).upper()}`",
                type_of(schema),
                _default(field, schema),
                field.description,
                "; ".join(c for c in constraints(schema) if not c.startswith("default")),
            ]
        )
    return table(["Variable", "Type", "Default", "Description", "Constraints"], rows)


def _default(field, schema: dict) -> str:
    if field.default_factory is not None:
        doc = (field.default_factory.__doc__ or "").strip()
        first = doc.split(". ")[0].rstrip(".")  # the first sentence
        return first or f"computed by `{field.default_factory.__name__}`"
    if "default" not in schema:
        return "required"
    value = schema["default"]
    return "unset" if value is None else f"`{json.dumps(value, ensure_ascii=False)}`"
