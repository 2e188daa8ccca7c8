"""Judge alignment end to end on SQLite and PostgreSQL (issue 37), judges on the TEST DOUBLE.

The planted judge misreads one thing: it gives padded answers (marked PADDED) the top
rating where the three SMEs give the lowest, and agrees with them elsewhere. The reviser
model, shown the training fold's disagreements, writes guidance carrying PADDING-RULE; the
judge reads padded answers right once its template carries it. So the revision is certified
on the held-out fold, the reviser never sees a held-out answer, nothing is live before the
approval, and after it POST /judge grades with the revised template. A reviser whose
guidance changes nothing is not certified and cannot be approved."""

from __future__ import annotations

import csv
import io
import json

import pytest
import yaml
from sqlalchemy import func, select

from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.db.schema import AlignmentRunRow, JudgmentRow
from service.stores.calibration import Selection, rows_from_db
from tests.conftest import run_cli
from tests.integration.test_service_api import Service

N_ITEMS = 40
RUBRIC = {
    "kind": "scale",
    "id": "support-reply",
    "scale": {"min": 1, "max": 5},
    "dimensions": [{"id": "helpfulness", "anchors": {"1": "Ignores it", "5": "Solves it"}}],
}
GUIDANCE = "Padded answers repeat themselves without substance: rate them 1. PADDING-RULE"
REVISER_ASKED = "You revise the instructions of an AI judge"


def padded(i: int) -> bool:
    return i % 3 == 0


def truth(i: int) -> int:
    return 1 if padded(i) else 2 + i % 4


def answer(i: int) -> str:
    text = f"answer number {i:03d}."
    if i == 3:  # a spreadsheet formula planted in an answer: the CSV export must defuse it
        text = "=HYPERLINK(evil) " + text
    return text + (" PADDED PADDED PADDED" if padded(i) else "")


def rule(i: int, rating: int, *also: str) -> dict:
    return {
        "match": f"answer number {i:03d}.",
        "scope": "last_user",
        "also": list(also),
        "model": "judge-model",
        "reply": {"content": json.dumps({"helpfulness_score": rating})},
    }


def config(server) -> dict:
    entry = {"api_base": server.api_base}
    return {
        "model_list": [
            {"model_name": "judge", "litellm_params": {"model": "hosted_vllm/judge-model",
                                                       **entry}, "provider": "meta"},
            {"model_name": "reviser", "litellm_params": {"model": "hosted_vllm/reviser-model",
                                                         **entry}, "provider": "alibaba"},
        ],
        "qadi": {"num_retries": 0, "timeout": 5, "panel": ["judge"]},
    }  # fmt: skip


def planted() -> list[dict]:
    """The judge's rules: padded answers rated 5 unless the template carries the fix."""
    items = (*range(N_ITEMS), 99)
    fixes = [rule(i, 1, "PADDING-RULE") for i in items if padded(i)]
    return [*fixes, *(rule(i, 5 if padded(i) else truth(i)) for i in items)]


def body(i: int) -> dict:
    return {"kind": "explanation", "prompt": "My parcel never arrived.", "response": answer(i),
            "candidate_model": "gpt-4o", "rubric_id": "support-reply",
            "metadata": {"item_id": f"item-{i:03d}", "channel": "mail" if i % 2 else "chat"}}  # fmt: skip


def label(post) -> None:
    """The rubric, 40 answers graded by the judge (padded ones misread) and by three SMEs,
    through `post(path, key scope, json body)` -> HTTP status."""
    assert post("/rubrics", "judge", RUBRIC) == 201
    for i in range(N_ITEMS):
        assert post("/judge", "judge", body(i)) == 200
    grades = [
        {"item_id": f"item-{i:03d}", "rater": rater, "rater_kind": "human",
         "score": truth(i) if rater != "sme-3" or i % 4 else max(1, truth(i) - 1),
         "rationale": "padding, no substance" if padded(i) else "fine"}
        for i in range(N_ITEMS) for rater in ("sme-1", "sme-2", "sme-3")
    ]  # fmt: skip
    assert post("/grades", "grades", {"grades": grades}) == 200


def reviser_writes(server, guidance: str) -> None:
    """The reviser model's reply, before the planted judge's rules."""
    server.rules({"match": REVISER_ASKED, "model": "reviser-model",
                  "reply": {"content": guidance}}, *planted())  # fmt: skip


@pytest.fixture
def labelled(migrated_db, llm_server, tmp_path):
    llm_server.rules(*planted())
    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump(config(llm_server)))
    service = Service(migrated_db, path)
    label(lambda path, scope, json: service.post(path, scope=scope, json=json).status_code)
    env = {"QADI_DATABASE_URL": migrated_db, "QADI_JUDGES_CONFIG": str(path)}
    return service, env, make_sessionmaker(make_engine(migrated_db))


def test_the_disagreements_are_grouped_by_rating_gap_and_exported(labelled, tmp_path):
    _, env, _ = labelled
    out = tmp_path / "diff.csv"
    shown = run_cli("align", "diff", "--rubric", "support-reply", "--judge", "judge",
                    "--export", str(out), env=env)  # fmt: skip
    assert shown.returncode == 0, shown.stdout
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert {r["item_id"] for r in rows} == {f"item-{i:03d}" for i in range(N_ITEMS) if padded(i)}
    assert {r["group"] for r in rows} == {"judge higher by 4"}
    assert {r["sme_rationales"] for r in rows} == {" | ".join(["padding, no substance"] * 3)}
    assert next(r for r in rows if r["item_id"] == "item-003")["answer"].startswith("'=HYPERLINK")
    mail = run_cli("align", "diff", "--rubric", "support-reply", "--judge", "judge", "--stratum",
                   "channel=mail", "--export", str(tmp_path / "d.jsonl"), env=env)  # fmt: skip
    assert mail.returncode == 0
    lines = [json.loads(line) for line in (tmp_path / "d.jsonl").read_text().splitlines()]
    assert lines and {line["attributes"]["channel"] for line in lines} == {"mail"}
    bad = run_cli("align", "diff", "--rubric", "support-reply", "--judge", "judge",
                  "--stratum", "channel", env=env)  # fmt: skip
    assert bad.returncode == 2 and "stratum: expected attribute=value" in bad.stderr


def test_a_certified_revision_is_live_only_after_approval(labelled, llm_server):
    service, env, sessions = labelled
    reviser_writes(llm_server, GUIDANCE)
    before = len(llm_server.requests())
    proposed = run_cli("align", "propose", "--rubric", "support-reply", "--judge", "judge",
                       "--reviser", "reviser", "--seed", "7", env=env)  # fmt: skip
    assert proposed.returncode == 0, proposed.stdout
    assert "certified: the revision lowers MAD" in proposed.stdout
    with session_scope(sessions) as session:
        run = session.scalars(select(AlignmentRunRow)).one()
        run_id, folds, cert = run.id, run.folds, run.certification
        judgments = session.scalar(select(func.count()).select_from(JudgmentRow))
    held = {item for item, fold in folds.items() if fold == "holdout"}
    assert len(held) == N_ITEMS // 2 and cert["n_items"] == len(held)
    padded_held = sum(padded(int(item[-3:])) for item in held)
    assert cert["mad"]["difference"] == pytest.approx(-4 * padded_held / len(held))
    assert cert["agreement"]["new"]["mad"] < cert["agreement"]["old"]["mad"]
    # the reviser saw training answers only; the held-out fold was graded by the candidate
    revising = [r for r in llm_server.requests()[before:] if r["model"] == "reviser-model"]
    [asked] = [json.dumps(r["messages"]) for r in revising]
    assert all(f"answer number {item[-3:]}." not in asked for item in held)
    assert judgments == N_ITEMS  # the candidate's grades are kept with the run, not filed
    # before approval the live rubric is the old one
    live = service.post("/judge", json=body(99))
    assert live.json()["results"][0]["score"] == 5
    shown = run_cli("align", "show", run_id, env=env)
    assert "PADDING-RULE" in shown.stdout and "Examples the experts graded" in shown.stdout
    whole = json.loads(run_cli("align", "show", run_id, "--json", env=env).stdout)
    assert whole["folds"] == folds and whole["status"] == "certified"
    approved = run_cli("align", "approve", run_id, env=env)
    assert approved.returncode == 0 and "support-reply@2" in approved.stdout
    again = run_cli("align", "approve", run_id, env=env)
    assert again.returncode == 2 and "approved already" in again.stderr
    revised = service.post("/judge", json=body(99)).json()
    assert revised["rubric"]["version"] == 2 and revised["results"][0]["score"] == 1
    with session_scope(sessions) as session:
        rows, inputs = rows_from_db(session, "default", Selection(rubric="support-reply@2"))
    judged = {r.item_id for r in rows if r.rater_kind == "judge"}
    assert judged - {"item-099"} == held  # its calibrations start from the held-out labels
    assert inputs["revision_training_items_excluded"] == N_ITEMS - len(held)


def test_a_revision_that_changes_nothing_is_not_certified_nor_approved_unasked(
    labelled, llm_server
):
    _, env, _ = labelled
    reviser_writes(llm_server, "Read every answer carefully.")
    proposed = run_cli("align", "propose", "--rubric", "support-reply", "--judge", "judge",
                       "--reviser", "reviser", env=env)  # fmt: skip
    assert proposed.returncode == 1 and "not certified" in proposed.stdout
    run_id = proposed.stdout.split("run ")[1].split(":")[0]
    refused = run_cli("align", "approve", run_id, env=env)
    assert refused.returncode == 2 and "was not certified" in refused.stderr
    listed = run_cli("align", "list", env=env)
    assert run_id in listed.stdout and "not_certified" in listed.stdout
    anyway = run_cli("align", "approve", run_id, "--uncertified", env=env)
    assert anyway.returncode == 0 and "support-reply@2" in anyway.stdout
    assert "(not certified)" in run_cli("align", "list", env=env).stdout


def test_the_workbench_approves_an_uncertified_revision_only_with_the_box_ticked(
    labelled, llm_server
):
    from tests.integration.test_workbench_pages import csrf_of, link_for, sign_in

    service, env, sessions = labelled
    reviser_writes(llm_server, "Read every answer carefully.")
    proposed = run_cli("align", "propose", "--rubric", "support-reply", "--judge", "judge",
                       "--reviser", "reviser", env=env)  # fmt: skip
    run_id = proposed.stdout.split("run ")[1].split(":")[0]
    lead = sign_in(service, link_for(sessions, "lina", role="lead"))
    page = lead.get(f"/workbench/alignment/runs/{run_id}")
    assert page.status_code == 200 and "I approve it although it is not certified" in page.text
    refused = lead.post(f"/workbench/alignment/runs/{run_id}/approve",
                        data={"csrf": csrf_of(page.text)})  # fmt: skip
    assert refused.status_code == 409 and "was not certified" in refused.text
    done = lead.post(f"/workbench/alignment/runs/{run_id}/approve",
                     data={"csrf": csrf_of(page.text), "uncertified": "yes"})  # fmt: skip
    assert done.status_code == 303
    after = lead.get(f"/workbench/alignment/runs/{run_id}").text
    assert "Approved, although not certified, by lina" in after
    sme = sign_in(service, link_for(sessions, "ada"))
    assert sme.get(f"/workbench/alignment/runs/{run_id}").status_code == 403


def test_bad_alignment_requests_get_one_line_errors(labelled):
    _, env, _ = labelled
    base = ("align", "propose", "--rubric", "support-reply", "--judge")
    for args, message in (
        ((*base, "judge", "--reviser", "nobody"), "unknown judge 'nobody'"),
        ((*base, "other", "--reviser", "reviser"), "graded 0 SME-labelled item(s)"),
        (("align", "propose", "--rubric", "nope", "--judge", "judge", "--reviser", "reviser"),
         "nope"),
    ):  # fmt: skip
        result = run_cli(*args, env=env)
        assert result.returncode == 2 and message in result.stderr, result.stderr
        assert "Traceback" not in result.stdout + result.stderr
