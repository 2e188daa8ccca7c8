"""Canonical JSON and content hashes, shared by rubrics, templates and cache keys.

A hash must not change when a dict is written in another order or a float is
written as 1 vs 1.0 in YAML, so everything hashed goes through `canonical_json`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

# One encoder for every call: `json.dumps` with options builds a new one each time, which
# was a tenth of hashing a judge call's key (issue 40). It keeps no state between calls.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    return _CANONICAL.encode(value)


def content_hash(value: Any) -> str:
    """sha256 of the canonical JSON of `value`, hex, prefixed so its kind is visible in a DB."""
    digest = hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
    return f"sha256:{digest}"
