"""The typer application and the helpers every command shares."""

from __future__ import annotations

import shutil
import sys
from importlib.metadata import version as package_version
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from service.db.engine import NotMigratedError, UnsupportedDatabase
from service.errors import StorageUnavailable


class QadiGroup(TyperGroup):
    """The root command group. A database that is not migrated, cannot be reached, or is not
    one qadi runs on, ends any command with the same one-line message as `qadi serve` (exit
    2), not a traceback:
    the check is made once, here, around every subcommand (commands open the database
    with `service.db.engine.open_database`)."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (NotMigratedError, StorageUnavailable, UnsupportedDatabase) as exc:
            fail(str(exc))


app = typer.Typer(
    cls=QadiGroup,
    name="qadi",
    help="qadi: LLM-as-judge grading, calibration against human experts, and benchmarks.",
    no_args_is_help=True,
    add_completion=False,
    # Markdown: a docstring's paragraphs are reflowed to the terminal (rich mode keeps the
    # source's line breaks after the first paragraph), and `id[@version]` is text, not a
    # rich markup tag that vanishes.
    rich_markup_mode="markdown",
)
# A terminal's own width; 160 columns when output goes to a file or a pipe, so tables that
# scripts and logs read are not folded at 80.
_WIDTH = shutil.get_terminal_size((160, 24)).columns
console = Console(stderr=True, width=_WIDTH)  # messages and progress
out = Console(width=_WIDTH)  # results a script may read


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a one-line error for a person and exit; no traceback for expected problems.
    The message is text, not markup: `pip install 'qadi[ray]'` printed as `'qadi'`."""
    console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    sys.exit(code)


def fail_invalid(exc) -> NoReturn:
    """A pydantic refusal of a command's options as one line: its first problem, by field."""
    error = exc.errors()[0]
    field = ".".join(map(str, error["loc"]))
    fail(f"{field}: {error['msg'].removeprefix('Value error, ')}")


def split_names(value: str | None) -> list[str] | None:
    if not value:
        return None
    return [n.strip() for n in value.split(",") if n.strip()]


def _print_version(wanted: bool) -> None:
    if wanted:
        typer.echo(f"qadi {package_version('qadi')}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="print the version"
    ),
) -> None:
    """qadi: grade answers with LLM judges and measure the judges against human experts."""


PROJECT_HELP = (
    "the project whose data this reads and writes (default: QADI_PROJECT, else 'default'; "
    "see qadi projects list)"
)


def project_option():
    """`--project` of every command that reads or writes a project's data."""
    return typer.Option(None, "--project", help=PROJECT_HELP, show_default=False)


def chosen_project(sessions, given: str | None) -> str:
    """The project `--project` names, else QADI_PROJECT's, checked to exist: a mistyped name
    ends the command instead of filing its data in a namespace of its own."""
    from service.db.engine import session_scope
    from service.settings import get_settings
    from service.stores.projects import ProjectError, require_project

    try:
        with session_scope(sessions) as session:
            return require_project(session, given or get_settings().project)
    except ProjectError as exc:
        fail(f"--{exc}")


def open_project(given: str | None):
    """The database and the chosen project (`chosen_project`)."""
    from service.db.engine import open_database
    from service.settings import get_settings

    sessions = open_database(get_settings().database_url)
    return sessions, chosen_project(sessions, given)


def open_grading(rubric: str, config, project: str | None):
    """The database, the project, the rubric (a file, or an id resolved in the project's
    stored rubrics then the bundled library) and a grader for the judges config: what every
    grading command starts from; a bad project, rubric or config exits with one line."""
    sessions, chosen = open_project(project)
    rubrics, grader = grading_for(sessions, chosen, [rubric], config)
    return sessions, chosen, rubrics[rubric], grader


def grading_for(sessions, project: str, references, config):
    """Each rubric reference resolved as `open_grading` resolves one, and a grader for the
    judges config (`qadi regrade`: each answer's own rubric_id); a bad one exits in one line."""
    from judges import Grader, JudgeConfigError, load_config
    from rubrics import RubricError
    from service.db.engine import session_scope
    from service.stores.rubrics import RubricNotFound, resolve_stored_rubric

    try:
        with session_scope(sessions) as session:
            rubrics = {ref: resolve_stored_rubric(session, project, ref) for ref in references}
        return rubrics, Grader(load_config(config))
    except (RubricError, RubricNotFound, JudgeConfigError) as exc:
        fail(str(exc))
