"""The `qadi` command line. Each command group lives in its own module."""

from service.cli import db, demo, grades, judge, keys, serve  # noqa: F401  (registers commands)
from service.cli.app import app

__all__ = ["app"]
