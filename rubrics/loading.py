"""Reading rubrics from YAML/JSON files, inline objects and the bundled library."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import TypeAdapter, ValidationError

from rubrics.errors import RubricError, describe_validation_error
from rubrics.hashing import content_hash
from rubrics.models import MAX_VERSION, Rubric

LIBRARY_DIR = Path(__file__).parent / "library"
_VERSION = re.compile(r"[0-9]{1,6}")
_ADAPTER: TypeAdapter[Rubric] = TypeAdapter(Rubric)


def parse_rubric(data: Any, source: str = "rubric") -> Rubric:
    """Validate an already-decoded rubric object; errors name the offending field."""
    if not isinstance(data, dict):
        raise RubricError(f"{source}: a rubric must be an object, got {type(data).__name__}")
    if "kind" not in data:
        raise RubricError(f"{source}: kind: missing (expected 'penalty_weighted' or 'scale')")
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise RubricError(f"{source}: {describe_validation_error(exc)}") from None


def load_rubric_file(path: str | Path) -> Rubric:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RubricError(f"{path}: cannot read rubric file ({exc.strerror})") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise RubricError(f"{path}: not valid YAML/JSON: {exc}") from None
    return parse_rubric(data, source=str(path))


def rubric_hash(rubric: Rubric) -> str:
    """Content hash stored with every judgment so reports can name the rubric version used."""
    return content_hash(rubric.model_dump(mode="json"))


def split_ref(ref: str) -> tuple[str, int | None]:
    """'id' or 'id@version' -> (id, version or None)."""
    name, _, version = ref.partition("@")
    if not version:
        return name, None
    # ASCII digits only: str.isdigit() also takes '²' and '٢', which int() refuses or rereads.
    if not _VERSION.fullmatch(version):
        raise RubricError(
            f"rubric_id: version in '{ref}' must be a whole number up to {MAX_VERSION}")
    return name, int(version)


@cache
def library_rubrics() -> tuple[Rubric, ...]:
    """Every rubric bundled in rubrics/library, sorted by id and version. Read once: the
    files are package data and rubrics are immutable models."""
    rubrics = [load_rubric_file(p) for p in sorted(LIBRARY_DIR.glob("*.yaml"))]
    return tuple(sorted(rubrics, key=lambda r: (r.id, r.version)))


def library_rubric(ref: str) -> Rubric:
    """Find a bundled rubric by 'id' (newest version) or 'id@version'."""
    name, version = split_ref(ref)
    matches = [r for r in library_rubrics() if r.id == name]
    if version is not None:
        matches = [r for r in matches if r.version == version]
    if not matches:
        known = ", ".join(sorted({r.id for r in library_rubrics()}))
        raise RubricError(f"rubric_id: no bundled rubric '{ref}' (known: {known})")
    return matches[-1]


def resolve_rubric(ref_or_path: str) -> Rubric:
    """A CLI argument is a file when it exists on disk, else a library reference."""
    path = Path(ref_or_path)
    if path.suffix in (".yaml", ".yml", ".json") or path.exists():
        return load_rubric_file(path)
    return library_rubric(ref_or_path)
