"""The `qadi` command line. Each command group lives in its own module."""

from service.cli import (  # noqa: F401  (registers commands)
    align,
    bench,
    calibrate,
    db,
    demo,
    estimate,
    export,
    grades,
    judge,
    judges_check,
    keys,
    nightly,
    probe,
    projects,
    recalibration,
    regrade,
    serve,
    sme,
)
from service.cli.app import app

__all__ = ["app"]
