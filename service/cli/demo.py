"""`qadi demo` (what `make run` runs): migrate, load the bundled sample, serve locally with
judges that grade out of the box.

The judges are: with --local-judge, the real local judge (service/cli/demo_local.py), installed
first if need be; else the judges file of QADI_JUDGES_CONFIG when it is set; else the real local
judge when it is installed and prepared (never installed unasked: that takes minutes); else
the bundled stand-in judges (service/sample/judges.yaml: deterministic, no model behind them,
labelled as stand-ins wherever they appear), with a one-line note on installing the local one.
"""

from __future__ import annotations

from pathlib import Path

import typer

from judges import AnswerRecord, GradeRequest, JudgeConfigError, JudgesConfig, load_config
from judges.standins import is_stand_in
from rubrics import library_rubric, library_rubrics
from service.cli import ports
from service.cli.app import app, console, fail
from service.cli.serve import run_server
from service.db.engine import open_database, session_scope, upgrade
from service.regrading.answers import read_answers
from service.settings import get_settings
from service.stores.answers import ensure_responses
from service.stores.keys import SCOPES, create_key, verify_key
from service.stores.projects import DEFAULT_PROJECT
from service.stores.rubrics import save_rubric

SAMPLE = Path(__file__).resolve().parent.parent / "sample"
STAND_INS = SAMPLE / "judges.yaml"


def load_sample(url: str) -> dict[str, int]:
    """Store the library rubrics and the sample answers in the default project (idempotent).
    The sample's human grades are not loaded: importing them is a step of the README's
    quick start."""
    answers: list[AnswerRecord] = read_answers(SAMPLE / "answers.jsonl")
    with session_scope(open_database(url)) as session:
        for rubric in library_rubrics():
            save_rubric(session, DEFAULT_PROJECT, rubric)
        ensure_responses(
            session,
            DEFAULT_PROJECT,
            [GradeRequest.from_answer(library_rubric(a.rubric_id), a) for a in answers],
        )
    return {"answers": len(answers), "rubrics": len({a.rubric_id for a in answers})}


def demo_judges() -> tuple[Path, JudgesConfig]:
    """The judges file the demo serves with, loaded (a bad one ends the command in one
    line, as `qadi judges check` says it)."""
    path = get_settings().judges_config or STAND_INS
    try:
        return path, load_config(path)
    except JudgeConfigError as exc:
        fail(str(exc))


def describe_judges(config: JudgesConfig) -> str:
    """The judges by name and model (a stand-in's model says it is one)."""
    return ", ".join(f"{name} ({config.judge(name).model})" for name in config.names)


@app.command()
def demo(
    port: int = typer.Option(8000, envvar="QADI_PORT", help="port on 127.0.0.1"),
    no_serve: bool = typer.Option(False, "--no-serve", help="load the sample and stop"),
    local_judge: bool = typer.Option(
        False,
        "--local-judge",
        help="start a real judge on this machine (vLLM + SmolLM2-135M, no API key), installing "
        "it first if need be, and grade and calibrate the demo set's 150 1-5 answers with it",
    ),
) -> None:
    """Migrate the local database, load the bundled sample, and serve on 127.0.0.1 with the
    judges of QADI_JUDGES_CONFIG; else with the real local judge when it is installed (`make
    judge`), grading and calibrating the demo set's 150 1-5 answers with it; else with the
    bundled stand-in judges (no API key needed). --local-judge installs it if need be."""
    judges_path, config = demo_judges()  # a bad judges file stops here, before any work
    if ports.in_use("127.0.0.1", port) and not no_serve:  # before minutes of a judge's start
        fail(ports.taken("127.0.0.1", port))
    url = get_settings().database_url
    upgrade(url)
    counts = load_sample(url)
    key_file = get_settings().data_dir / "demo-key"
    demo_key(url, key_file)  # the all-scope key, kept for scripts; not printed
    console.print(f"[bold]database[/] {url}  sample loaded: {counts}", highlight=False)
    console.print(
        f"[bold]API key[/]  make one for your work: .venv/bin/qadi keys create --scopes "
        f"judge,grades (the demo's own, with every scope, is in {key_file})",
        highlight=False,
        soft_wrap=True,
    )
    if not no_serve:  # the page exists only while the service runs
        console.print(f"[bold]docs[/]     http://127.0.0.1:{port}/docs", highlight=False)
    if use_local_judge(local_judge):
        from service.cli.demo_local import local_judge_demo

        judges_path = local_judge_demo(url, get_settings().data_dir, SAMPLE)
        config = load_config(judges_path)
    judges = f"{describe_judges(config)} from {judges_path}"
    console.print(f"[bold]judges[/]   {judges}", highlight=False, soft_wrap=True)  # one line
    if any(is_stand_in(e.model) for e in config.model_list):
        console.print(
            "[bold yellow]STAND-INS[/] grade deterministically with no model behind them; "
            "for real grades set QADI_JUDGES_CONFIG to your judges file (examples/judges.yaml), "
            "or run `qadi demo --local-judge` for a real judge on this machine",
            highlight=False,
            soft_wrap=True,
        )
    console.print(
        "[bold]next[/]     the README's Quick start: grade, import the human grades "
        "(service/sample/grades.csv), calibrate",
        highlight=False,
    )
    if not no_serve:
        run_server("127.0.0.1", port, judges_config=judges_path)


def use_local_judge(forced: bool) -> bool:
    """With --local-judge, yes (installing it first if need be); else, when no judges file
    is set, whenever the local judge is installed and prepared (.ci/vllm.sh `prepared`): a
    start then serves in about a minute. Never installed unasked (minutes): without it the
    demo grades with the stand-ins and says, in one line, how to install it."""
    if forced:
        return True
    if get_settings().judges_config is not None:
        return False
    from service import local_judge

    why = local_judge.missing()
    if why is None:
        console.print(
            "[bold]local judge[/] installed: the demo grades with it (for the stand-ins, "
            "set QADI_JUDGES_CONFIG=service/sample/judges.yaml)",
            highlight=False,
        )
        return True
    console.print(
        f"[bold]local judge[/] not installed ({why}), so the stand-ins grade; `make judge` "
        "or `qadi demo --local-judge` installs it (several minutes, once)",
        highlight=False,
        soft_wrap=True,  # one line, however narrow the terminal
    )
    return False


def demo_key(url: str, key_file: Path) -> str:
    """The demo's all-scope key: the one saved in `key_file` while this database still
    accepts it, else a new one saved there (owner-only), so reruns add no keys."""
    with session_scope(open_database(url)) as session:
        if key_file.exists():
            saved = key_file.read_text(encoding="utf-8").strip()
            if verify_key(session, saved) is not None:
                return saved
        key = create_key(session, "demo", list(SCOPES))
    key_file.parent.mkdir(parents=True, exist_ok=True)
    key_file.touch(mode=0o600)
    key_file.chmod(0o600)
    key_file.write_text(key + "\n", encoding="utf-8")
    return key
