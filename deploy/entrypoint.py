"""The image's entrypoint: build QADI_DATABASE_URL from its parts, then run the command.

A password written into a URL by hand breaks, or silently points elsewhere, as soon as it
holds `@`, `:`, `/`, `%` or `#`. Compose passes the parts instead (QADI_DB_HOST, QADI_DB_PORT,
QADI_DB_USER, QADI_DB_PASSWORD, QADI_DB_NAME); SQLAlchemy's `URL.create` escapes each one and
the result is exported as QADI_DATABASE_URL, the one setting qadi reads. Without
QADI_DB_HOST the environment is left as it is (e.g. the image's SQLite default).

Usage: python entrypoint.py COMMAND [ARG...]   (exec's COMMAND; its exit code is the container's)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

DRIVER = "postgresql+psycopg"


def database_url(env: Mapping[str, str]) -> str | None:
    """The URL the parts describe, every part escaped; None when no host is given."""
    if not env.get("QADI_DB_HOST"):
        return None
    from sqlalchemy.engine import URL

    missing = [k for k in ("QADI_DB_USER", "QADI_DB_PASSWORD", "QADI_DB_NAME") if not env.get(k)]
    if missing:
        raise SystemExit(f"entrypoint: QADI_DB_HOST is set but {', '.join(missing)} is not")
    url = URL.create(
        DRIVER,
        username=env["QADI_DB_USER"],
        password=env["QADI_DB_PASSWORD"],
        host=env["QADI_DB_HOST"],
        port=int(env.get("QADI_DB_PORT") or 5432),
        database=env["QADI_DB_NAME"],
    )
    return url.render_as_string(hide_password=False)


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit("entrypoint: no command given")
    url = database_url(os.environ)
    if url is not None:
        os.environ["QADI_DATABASE_URL"] = url
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
