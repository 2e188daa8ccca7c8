"""Issue 41 point 6: an `qadi sme queue` file is one an SME can grade from. Each row carries
the question, the answer, the reference and the rubric as she grades by it; the file is
UTF-8 with a BOM (spreadsheets then show Arabic); filled in, it imports with score, rater
and rationale stored and the design columns kept; `--from-db` draws the round from the
stored judgments; a file that is not grades gets a capped list of problems and what the
queue reads. Judge calls go to the test double."""

from __future__ import annotations

import csv
import json

import pytest
import yaml
from fastapi.testclient import TestClient

from calibration.formats.interchange import read_grades
from service.app import create_app
from service.settings import Settings
from tests.conftest import judges_config_data, run_cli

RUBRIC = "iraqi-linguistic-shaku-maku"
MET = {"shaku_meaning": True, "maku_meaning": True, "greeting_example": True,
       "thanks_confusion": False, "msa_claim": False}  # fmt: skip


def verdict() -> str:
    criteria = [{"id": k, "met": v, "evidence": ""} for k, v in MET.items()]
    return json.dumps({"criteria": criteria, "rationale": ""})


@pytest.fixture
def client(migrated_db, llm_server, tmp_path):
    llm_server.script({"content": verdict()})
    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    return TestClient(create_app(Settings(database_url=migrated_db, judges_config=path, auth="off")))


def judge_items(client, count: int) -> None:
    for i in range(count):
        body = {
            "rubric_id": RUBRIC,
            "prompt": f"شو يعني شكو ماكو؟ ({i})",
            "reference": "شكو ماكو: ما الأخبار",
            "response": f"=معناها شنو الأخبار {i}",  # a formula to a spreadsheet
            "candidate_model": "Qwen/Qwen2.5-7B-Instruct",
            "metadata": {"item_id": f"item{i}", "dialect": "iraqi"},
        }
        answer = client.post("/judge", json=body)
        assert answer.status_code == 200, answer.text


def read_queue(path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def test_from_db_queue_rows_carry_the_stored_texts_and_import_back_with_the_rationale(
    client, migrated_db, tmp_path
):
    judge_items(client, 8)
    graded = [{"item_id": f"item{i}", "rater": "sme", "rater_kind": "human", "score": 100.0}
              for i in range(2)]  # fmt: skip
    assert client.post("/grades", json=graded).status_code == 200
    env = {"QADI_DATABASE_URL": migrated_db}
    out = tmp_path / "q.csv"
    done = run_cli("sme", "queue", "--from-db", "--rubric", RUBRIC, "--n", "3", "--out",
                   str(out), env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert out.read_bytes().startswith(b"\xef\xbb\xbf")  # the BOM a spreadsheet reads by
    queued = read_queue(out)
    assert len(queued) == 3 and not {"item0", "item1"} & {r["item_id"] for r in queued}
    for row in queued:
        i = row["item_id"].removeprefix("item")
        assert row["sme_question"] == f"شو يعني شكو ماكو؟ ({i})"
        assert row["sme_answer"] == f"'=معناها شنو الأخبار {i}"  # quoted, not run
        assert row["sme_reference"] == "شكو ماكو: ما الأخبار"
        assert "[shaku_meaning] earns" in row["sme_rubric"] and "/ " in row["sme_rubric"]
        assert (row["score"], row["rater"], row["rationale"]) == ("", "", "")
        assert row["inclusion_stratum"] == "all" and float(row["inclusion_prob"]) > 0
    # an SME fills it in (Arabic name and reason, Arabic-Indic digits), saved with its BOM
    for row in queued:
        row.update(score="٧٥", rater="سارة", rationale="الجواب صحيح لكنه ناقص")
    with out.open("w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(queued[0]))
        writer.writeheader()
        writer.writerows(queued)
    done = run_cli("grades", "import", str(out), env=env)
    assert done.returncode == 0, done.stderr
    stored = client.get("/grades", params={"rater": "سارة"}).json()["items"]
    assert sorted(g["item_id"] for g in stored) == sorted(r["item_id"] for r in queued)
    by_item = {r["item_id"]: r for r in queued}
    for grade in stored:
        assert grade["score"] == 75.0 and grade["rationale"] == "الجواب صحيح لكنه ناقص"
        assert grade["inclusion_prob"] == float(by_item[grade["item_id"]]["inclusion_prob"])
        assert grade["inclusion_stratum"] == "all"
        assert not {k for k in grade if k.startswith("sme_")}  # texts are not attributes


def test_a_grades_file_queue_with_rubric_writes_the_texts_the_database_holds(
    client, migrated_db, tmp_path
):
    judge_items(client, 4)
    grades = tmp_path / "g.csv"
    grades.write_text("item_id,rater,rater_kind,score\n" + "".join(
        f"item{i},gpt-judge,judge,80\n" for i in range(4)) + "other,gpt-judge,judge,70\n")
    out = tmp_path / "q.csv"
    done = run_cli("sme", "queue", str(grades), "--rubric", RUBRIC, "--n", "5", "--out",
                   str(out), env={"QADI_DATABASE_URL": migrated_db})  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = {r["item_id"]: r for r in read_queue(out)}
    assert rows["item2"]["sme_answer"] == "'=معناها شنو الأخبار 2"
    assert rows["other"]["sme_answer"] == "" and rows["other"]["sme_rubric"]
    assert "1 item(s) have no stored answer" in done.stderr


def test_the_import_reads_a_queue_file_with_and_without_the_bom(tmp_path):
    text = ("item_id,sme_question,sme_answer,score,rater,rationale,rater_kind,inclusion_prob\n"
            "i1,ما معنى شكو؟,شكو يعني ماذا,4,سارة,واضح,human,0.5\n")  # fmt: skip
    for name, encoding in (("bom.csv", "utf-8-sig"), ("plain.csv", "utf-8")):
        path = tmp_path / name
        path.write_text(text, encoding=encoding)
        [row] = read_grades(path)
        assert (row.item_id, row.score, row.rater, row.rationale) == ("i1", 4.0, "سارة", "واضح")
        assert row.inclusion_prob == 0.5 and row.attributes == {}


def test_regrade_output_fed_to_the_queue_is_refused_in_a_capped_list_naming_its_input(tmp_path):
    judgments = tmp_path / "regraded.jsonl"
    judgments.write_text("".join(
        json.dumps({"item_id": f"i{k}", "judge": "gpt-judge", "status": "ok", "score": 75}) + "\n"
        for k in range(675)))  # fmt: skip  (two problems a line: 1,350)
    done = run_cli("sme", "queue", str(judgments), "--n", "5", "--out", str(tmp_path / "q.csv"))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) <= 53 and "... and 1300 more problem(s)" in done.stderr
    assert "qadi sme queue reads grades in the interchange format" in lines[-1]
    assert "--from-db" in lines[-1]


def test_get_grades_says_the_services_judgments_are_not_listed_as_judge_grades(client):
    parameters = client.get("/openapi.json").json()["paths"]["/grades"]["get"]["parameters"]
    [kind] = [p for p in parameters if p["name"] == "rater_kind"]
    assert "GET /judgments" in kind["description"]
    assert "qadi sme queue --from-db" in kind["description"]
