"""Rubrics in the database, versioned: a changed body is a new version; old ones stay readable.

Stored rubrics are a namespace per project: a team's POST /rubrics (or an inline rubric in
POST /judge) adds versions to its own project's rubric ids only, so it can never change how
another team's `rubric_id` resolves. The bundled library is shared and read-only: each
project stores its own copy of a library rubric on first use."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from sqlalchemy import bindparam, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from rubrics import (
    Rubric,
    RubricError,
    library_rubric,
    library_rubrics,
    load_rubric_file,
    parse_rubric,
    rubric_hash,
    split_ref,
)
from service.db.schema import RubricRow


class RubricNotFound(LookupError):
    pass


class _Stored(NamedTuple):
    """A stored body parsed, and the body without its version (what a saved rubric is
    compared with)."""

    rubric: Rubric
    unversioned: dict


_PARSED: dict[str, _Stored] = {}  # content hash -> its parsed body (bodies never change)


def _parsed(session: Session, digest: str) -> _Stored:
    """The stored rubric whose content hash is `digest`, parsed once per process. A hash
    names one body forever, whichever project stored it, so every request graded with it
    gets the same object, and what is made once per rubric object (its rendered blocks,
    judges/rendering.py) is made once (issue 40)."""
    found = _PARSED.get(digest)
    if found is None:
        body = session.scalar(
            select(RubricRow.body).where(RubricRow.content_hash == digest).limit(1)
        )
        rubric = parse_rubric(body)
        found = _PARSED[digest] = _Stored(rubric, _body_without_version(rubric))
    return found


def _body_without_version(rubric: Rubric) -> dict:
    body = rubric.model_dump(mode="json")
    body.pop("version")
    return body


def save_rubric(session: Session, project: str, rubric: Rubric) -> tuple[Rubric, bool]:
    """Store `rubric` under its id in `project`. Returns (stored rubric, created?).

    The same body as an existing version is that version; a different body becomes
    max(version) + 1 whatever version the caller wrote, so versions never collide.
    A concurrent writer of the same version makes the insert fail; the lookup then runs again.
    """
    for _ in range(5):
        try:
            with session.begin_nested():
                return _save_once(session, project, rubric)
        except IntegrityError:
            continue
    raise RubricError(f"rubric: could not store '{rubric.id}' under concurrent writes; retry")


def _save_once(session: Session, project: str, rubric: Rubric) -> tuple[Rubric, bool]:
    rows = session.execute(
        select(RubricRow.content_hash, RubricRow.version).where(
            RubricRow.project == project, RubricRow.rubric_id == rubric.id
        )
    ).all()
    body = _body_without_version(rubric)
    for digest, _ in rows:
        stored = _parsed(session, digest)
        if stored.unversioned == body:
            return stored.rubric, False
    version = max((r.version for r in rows), default=rubric.version - 1) + 1
    stored = rubric.model_copy(update={"version": version})
    session.add(
        RubricRow(
            project=project,
            rubric_id=stored.id,
            version=version,
            kind=stored.kind,
            content_hash=rubric_hash(stored),
            body=stored.model_dump(mode="json"),
        )
    )
    session.flush()
    return stored, True


def get_rubric(session: Session, project: str, ref: str) -> Rubric:
    """'id' (newest) or 'id@version' from the project's stored rubrics, else from the
    bundled library."""
    return find_rubric(session, project, ref)[0]


def find_rubric(session: Session, project: str, ref: str) -> tuple[Rubric, bool]:
    """The rubric, and whether `project` stores it (False: from the bundled library, not yet
    stored there).

    A bare 'id' takes the newest of the database and the bundled library: a release that
    ships kinayat-explanation v2 must not keep answering with the v1 stored on first use.
    Stored bodies are parsed once per process: a row is found by its content hash, and a
    hash names one body forever. A malformed ref ('x@v2') names no rubric either."""
    try:
        name, version = split_ref(ref)
    except RubricError as exc:
        raise RubricNotFound(str(exc)) from None
    query = _NEWEST if version is None else _AT_VERSION
    found = session.execute(query, {"p": project, "n": name, "v": version}).first()
    try:
        bundled = library_rubric(ref)
    except RubricError:
        bundled = None
    if found is not None and (bundled is None or found.version >= bundled.version):
        return _parsed(session, found.content_hash).rubric, True
    if bundled is None:
        raise RubricNotFound(f"rubric_id: no rubric '{ref}'")
    return bundled, False


# `find_rubric`'s queries, built once (service/stores/chunks.py): the newest stored version
# of a rubric, and a given one
_NEWEST = (
    select(RubricRow.content_hash, RubricRow.version)
    .where(RubricRow.project == bindparam("p"), RubricRow.rubric_id == bindparam("n"))
    .order_by(RubricRow.version.desc())
    .limit(1)
)
_AT_VERSION = _NEWEST.where(RubricRow.version == bindparam("v"))


def list_rubrics(session: Session, project: str) -> list[dict]:
    """Every id the project stores with its versions; library rubrics it has not stored are
    listed too."""
    rows = session.execute(
        select(RubricRow.rubric_id, func.max(RubricRow.version), RubricRow.kind)
        .where(RubricRow.project == project)
        .group_by(RubricRow.rubric_id, RubricRow.kind)
    ).all()
    listed = {
        r[0]: {"id": r[0], "latest_version": r[1], "kind": r[2], "stored": True} for r in rows
    }
    for rubric in library_rubrics():
        listed.setdefault(
            rubric.id,
            {
                "id": rubric.id,
                "latest_version": rubric.version,
                "kind": rubric.kind,
                "stored": False,
            },
        )
    return sorted(listed.values(), key=lambda r: r["id"])


def rubric_versions(session: Session, project: str, rubric_id: str) -> list[Rubric]:
    rows = session.scalars(
        select(RubricRow)
        .where(RubricRow.project == project, RubricRow.rubric_id == rubric_id)
        .order_by(RubricRow.version)
    ).all()
    return [parse_rubric(r.body) for r in rows]


def resolve_stored_rubric(session: Session, project: str, ref_or_path: str) -> Rubric:
    """A CLI argument: a rubric file when it names one, else 'id[@version]' resolved as the
    service resolves it (the project's stored rubrics first, then the bundled library)."""
    path = Path(ref_or_path)
    if path.suffix in (".yaml", ".yml", ".json") or path.exists():
        return load_rubric_file(path)
    return get_rubric(session, project, ref_or_path)
