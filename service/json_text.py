"""JSON text written by msgspec where it is JSON the standard library would have written
(issue 40).

`json.dumps` wrote each stored row's JSON columns and each judged request's response body:
about 1.6% and 1.8% of a judged request's CPU. msgspec writes the same JSON in a fraction of
the time. The texts may differ only where JSON does not care: characters past ASCII as
UTF-8 rather than `\\u` escapes, a float's exponent without a leading zero (`1e-7`, not
`1e-07`). Every JSON reader reads the same values from both.

Where the two would part, the standard library writes, as before, and fails as before:
- NaN or an infinity, which msgspec writes as null: a defect upstream would become a value.
  The standard library writes `NaN` (SQLite keeps it, PostgreSQL refuses it) or refuses it
  (a response body), and the stores refuse it before either (`service.db.values`);
- what msgspec cannot write: a lone surrogate (not UTF-8), a key that is neither text nor
  a number, a type it does not know.
A float as a key is written as Python writes it by the standard library and by msgspec in
its shortest form (`1e-07` and `1e-7`), so the two are different keys to a reader; qadi's
JSON has text keys only.
Values of types that msgspec writes and the standard library refuses (a datetime, a UUID)
are written in their standard form; qadi stores and answers none in JSON.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from calibration.finite import holds_non_finite

_ENCODER = msgspec.json.Encoder()


def fast_json(value: Any) -> bytes | None:
    """`value` as UTF-8 JSON by msgspec, or None where the standard library must write it
    (see the module's docstring). msgspec writes NaN and the infinities as `null`, so a
    text without `null` held neither and the value is not walked for them (most of a
    judgment row's columns: the walk cost 1-2% of a regrade's call, issue 40)."""
    try:
        written = _ENCODER.encode(value)
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError):
        return None
    if b"null" in written and holds_non_finite(value):
        return None
    return written


def column_text(value: Any) -> str:
    """A JSON column's text (the engines' `json_serializer`): SQLAlchemy's default,
    `json.dumps`, where msgspec must not write it."""
    written = fast_json(value)
    return json.dumps(value) if written is None else written.decode()
