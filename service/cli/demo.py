"""`qadi demo` (what `make run` runs): migrate, load the bundled sample, serve locally."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from calibration.interchange import read_grades
from judges import AnswerRecord, GradeRequest
from rubrics import library_rubric, library_rubrics
from service.auth import SCOPES, create_key, verify_key
from service.cli.app import app, console
from service.cli.serve import serve
from service.db.engine import open_database, session_scope, upgrade
from service.grade_store import upsert_grades
from service.settings import get_settings
from service.stores.answers import ensure_responses
from service.stores.rubrics import save_rubric

SAMPLE = Path(__file__).resolve().parent.parent / "sample"


def load_sample(url: str) -> dict[str, int]:
    """Store the library rubrics, the sample answers and the sample grades (idempotent)."""
    sessions = open_database(url)
    answers = [
        json.loads(line)
        for line in (SAMPLE / "answers.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    with session_scope(sessions) as session:
        for rubric in library_rubrics():
            save_rubric(session, rubric)
        requests = [
            GradeRequest.from_answer(
                library_rubric(answer["rubric_id"]),
                AnswerRecord(
                    item_id=answer["item_id"],
                    prompt=answer["prompt"],
                    response=answer["response"],
                    candidate_model=answer["candidate_model"],
                    metadata={k: answer[k] for k in ("dialect", "category")},
                ),
            )
            for answer in answers
        ]
        ensure_responses(session, requests)
        counts = upsert_grades(session, read_grades(SAMPLE / "grades.csv"))
    return {"answers": len(answers), **counts}


@app.command()
def demo(
    port: int = typer.Option(8000, help="port on 127.0.0.1"),
    no_serve: bool = typer.Option(False, "--no-serve", help="load the sample and stop"),
    local_judge: bool = typer.Option(
        False,
        "--local-judge",
        help="start a real judge on this machine (vLLM + SmolLM2-135M, no API key; the first "
        "start installs it) and grade and calibrate the sample's explanation set with it",
    ),
) -> None:
    """Migrate the local database, load the bundled sample, and serve on 127.0.0.1."""
    url = get_settings().database_url
    upgrade(url)
    counts = load_sample(url)
    key_file = get_settings().data_dir / "demo-key"
    key = demo_key(url, key_file)
    console.print(f"[bold]database[/] {url}  sample loaded: {counts}")
    console.print(f"[bold]API key[/] (all scopes; kept in {key_file}): {key}")
    console.print(f"[bold]docs[/]    http://127.0.0.1:{port}/docs")
    judges_config = None
    if local_judge:
        from service.cli.demo_local import local_judge_demo

        judges_config = local_judge_demo(url, get_settings().data_dir)
    else:
        console.print(
            "[bold]judges[/]  none configured: copy examples/judges.yaml, put provider keys in "
            "the environment, then `QADI_JUDGES_CONFIG=judges.yaml make run` (or `qadi demo "
            "--local-judge` for a real judge on this machine)"
        )
    if not no_serve:
        serve(
            host="127.0.0.1", port=port, workers=1, judges_config=judges_config, database_url=None
        )


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
