"""The `qadi` command line. Each command group lives in its own module."""

from service.cli import judge  # noqa: F401,E402  (registers commands)
from service.cli.app import app

__all__ = ["app"]
