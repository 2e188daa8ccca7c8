"""Judge alignment end to end with a real judge (issue 37): vLLM serving SmolLM2-135M-Instruct
is both the judge and the reviser, no test double in the path.

The 24 idiom explanations of service/sample/ with their two stand-in SME ratings each are
graded with a scale rubric of the user's (the neutral jinja2 template), through `qadi
regrade`; then `qadi align diff` lists the disagreements, `qadi align propose` has the model
revise its own template from the training fold and grades the held-out fold with the
candidate, the lead approves, and POST /judge grades with the revised template.

SmolLM2-135M is a weak judge and a weaker reviser: nothing here asserts that the revision
helps, nor that it is certified. What must hold is the contract: the folds are fixed and
disjoint, the reviser's guidance is its own text inside a versioned, hashed candidate, the
held-out report covers every held-out item (graded, or recorded as failed, never invented),
and after the approval the rubric's newest version grades with the candidate.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from sqlalchemy import func, select

from service.cli.demo import SAMPLE
from tests.conftest import ROOT, run_cli
from tests.realjudge.conftest import real_judge_service

pytestmark = pytest.mark.timeout(3600)
RUBRIC = {
    "kind": "scale",
    "id": "idiom-meaning",
    "scale": {"min": 1, "max": 5},
    "dimensions": [{"id": "meaning", "anchors": {
        "5": "Perfectly matches the reference explanation in meaning",
        "3": "Partial understanding, some inaccuracies or missing key aspects",
        "1": "Completely incorrect or irrelevant explanation"}}],
}  # fmt: skip


def test_a_real_judge_is_revised_certified_on_held_out_labels_and_approved(
    local_judge_url, tmp_path
):
    from service.db.engine import make_engine, make_sessionmaker, session_scope
    from service.db.schema import AlignmentGradeRow, AlignmentRunRow

    service, url, config = real_judge_service(tmp_path, local_judge_url)
    env = {"QADI_DATABASE_URL": url, "QADI_JUDGES_CONFIG": str(config)}
    assert service.post("/rubrics", json=RUBRIC).status_code == 201
    graded = run_cli("regrade", str(SAMPLE / "explanations.jsonl"), "--rubric", "idiom-meaning",
                     "--judges", "smol", "--concurrency", "6", env=env)  # fmt: skip
    assert graded.returncode in (0, 1), graded.stderr  # 1: some replies were parse errors
    csv_text = (SAMPLE / "explanation-grades.csv").read_text(encoding="utf-8")
    uploaded = service.post("/grades", scope="grades", content=csv_text.encode(),
                            headers={"Content-Type": "text/csv"})  # fmt: skip
    assert uploaded.status_code == 200, uploaded.text

    diff = run_cli("align", "diff", "--rubric", "idiom-meaning", "--judge", "smol", "--export",
                   str(tmp_path / "diff.jsonl"), env=env)  # fmt: skip
    assert diff.returncode == 0, diff.stderr
    disagreements = [json.loads(x) for x in (tmp_path / "diff.jsonl").read_text().splitlines()]
    assert disagreements and all(d["group"].startswith("judge ") for d in disagreements)

    # the CLI in a process of its own, as a lead runs it
    proposed = subprocess.run(
        [sys.executable, "-m", "service", "align", "propose", "--rubric", "idiom-meaning",
         "--judge", "smol", "--reviser", "smol", "--concurrency", "6"],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=1800, cwd=ROOT,
    )  # fmt: skip
    assert proposed.returncode in (0, 1), proposed.stderr
    sessions = make_sessionmaker(make_engine(url))
    with session_scope(sessions) as session:
        run = session.scalars(select(AlignmentRunRow)).one()
        held = sorted(item for item, fold in run.folds.items() if fold == "holdout")
        cert, candidate, run_id, status = run.certification, run.candidate, run.id, run.status
        stored = session.scalar(select(func.count()).select_from(AlignmentGradeRow))
    assert set(run.folds.values()) == {"train", "holdout"} and len(held) >= 5
    assert status == ("certified" if proposed.returncode == 0 else "not_certified")
    assert (
        cert["guidance"].strip() and cert["guidance"] in candidate["constants"]["expert_guidance"]
    )
    assert candidate["id"].startswith("neutral-scale-aligned-")
    # every held-out item compared or listed as failed, and each graded one kept with the run
    assert cert["n_items"] + len(cert["without_candidate_grade"]) == len(held)
    assert stored == len(held) - sum(
        why == "not graded" for why in cert["without_candidate_grade"].values()
    )
    assert cert["mad"]["old"] is not None and "held-out" in cert["verdict"]

    extra = [] if status == "certified" else ["--uncertified"]
    approved = run_cli("align", "approve", run_id, *extra, env=env)
    assert approved.returncode == 0 and "idiom-meaning@2" in approved.stdout, approved.stderr
    item = json.loads((SAMPLE / "explanations.jsonl").read_text().splitlines()[0])
    answer = service.post("/judge", json={
        "kind": "explanation", "rubric_id": "idiom-meaning", "prompt": item["prompt"],
        "reference": item["reference"], "response": item["response"],
        "candidate_model": item["candidate_model"], "judges": ["smol"],
        "metadata": {"item_id": "after-approval"}})  # fmt: skip
    assert answer.status_code in (200, 502), answer.text
    body = answer.json()
    assert body["rubric"]["version"] == 2
    [result] = body["results"]
    stored_one = service.get(f"/judgments/{result['id']}").json()
    assert stored_one["template"] == f"{candidate['id']}@{candidate['version']}"
