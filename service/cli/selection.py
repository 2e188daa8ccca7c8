"""Which stored judgments a command reads with --from-db: the options `qadi calibrate` and
`qadi estimate` share, and the `Selection` (service/stores/calibration.py) they make."""

from __future__ import annotations

from datetime import datetime

import typer

from service.cli.app import fail, split_names

SINCE = typer.Option(None, help="with --from-db: judgments from this time")
UNTIL = typer.Option(None, help="with --from-db: judgments before this time")
JUDGES = typer.Option(None, help="with --from-db: only these judges, e.g. a,b")
METADATA = typer.Option(
    [], "--metadata", help="with --from-db: only answers with this attribute, key=value "
    "(repeatable)"
)  # fmt: skip


def db_selection(
    *,
    judges: str | None,
    rubric: str | None,
    metadata: list[str],
    since: datetime | None,
    until: datetime | None,
    scale: tuple[float, float] | None = None,
    score: str = "discrete",
):
    """The Selection of these option values, or a clean exit naming the option at fault."""
    from service.db.filters import parse_pairs
    from service.stores.calibration import Selection

    try:
        pairs = parse_pairs(metadata, "--metadata")
    except ValueError as exc:
        fail(str(exc))
    if since is not None and until is not None and until <= since:
        fail(f"--until: {until.isoformat()} is not after --since {since.isoformat()}")
    return Selection(
        judges=split_names(judges), rubric=rubric, metadata=pairs, since=since, until=until,
        scale=scale, score=score,
    )  # fmt: skip


def check_file_or_db(grades_file, from_db: bool, **db_only) -> None:
    """One source: a grades file or --from-db; the database's options only with it."""
    if (grades_file is None) == (not from_db):
        fail("give a GRADES_FILE or --from-db (one of them)")
    given = [name for name, value in db_only.items() if value]
    if grades_file is not None and given:
        fail(f"--{given[0].replace('_', '-')}: only with --from-db")
