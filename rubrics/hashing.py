"""Canonical JSON and content hashes, shared by rubrics, templates and cache keys.

A hash must not change when a dict is written in another order or a float is
written as 1 vs 1.0 in YAML, so everything hashed goes through `canonical_json`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from typing import Any

import msgspec

# One encoder for every call: `json.dumps` with options builds a new one each time, which
# was a tenth of hashing a judge call's key (issue 40). It keeps no state between calls.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    return _CANONICAL.encode(value)


def content_hash(value: Any) -> str:
    """sha256 of the canonical JSON of `value`, hex, prefixed so its kind is visible in a DB."""
    return _prefixed(hashlib.sha256(canonical_json(value).encode("utf-8")))


# msgspec writes strings (every code point: tests/unit/test_cache_key.py), integers, booleans,
# null, lists and sorted dicts byte for byte as `canonical_json` does, in a tenth of the time
# for long text; it writes floats otherwise (1e-07 as 1e-7, NaN as null).
_TEXT_FIRST = msgspec.json.Encoder(order="sorted")


def fields_hash(fields: dict[str, Any], numbers: Collection[str] = ()) -> str:
    """`content_hash(fields)`, faster where the fields are long text (a judge call's messages
    are four fifths of its cache key, and the standard library took 20 µs a key: issue 40).
    The fields named in `numbers` may hold any float, and are written by `canonical_json`
    and embedded as written; every other field must hold none."""
    written = {
        name: msgspec.Raw(canonical_json(value).encode("utf-8")) if name in numbers else value
        for name, value in fields.items()
    }
    return _prefixed(hashlib.sha256(_TEXT_FIRST.encode(written)))


def _prefixed(digest: Any) -> str:
    return f"sha256:{digest.hexdigest()}"
