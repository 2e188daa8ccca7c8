"""The CLI reference: typer's own Markdown generator, `typer service.cli utils docs`, run in
this process on the `qadi` app.

Why typer's generator and not mkdocs-click: typer now builds its commands on its own copy of
click (`typer._click`), which mkdocs-click does not recognise as click commands; typer's
command renders exactly the help that `qadi COMMAND --help` prints, rich markup included.
It is driven through its command line, the interface typer documents, rather than its
internal functions.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path

APP_MODULE = "service.cli"
PROGRAM = "qadi"


def markdown() -> str:
    """Every command, argument and option of `qadi` with its help, as Markdown whose
    top heading level is 2 (the page holding it has the title)."""
    import typer
    from typer.cli import app as typer_cli

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cli.md"
        args = [APP_MODULE, "utils", "docs", "--name", PROGRAM, "--output", str(out)]
        with contextlib.redirect_stdout(io.StringIO()):  # "Docs saved to ..."
            typer.main.get_command(typer_cli).main(args, prog_name="typer", standalone_mode=False)
        text = out.read_text(encoding="utf-8")
    title, _, body = text.partition("\n")
    if not title.startswith("# "):
        raise RuntimeError(f"typer's docs no longer start with a title line: {title!r}")
    return body.strip() + "\n"
