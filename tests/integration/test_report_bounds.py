"""Issue 42 findings 7 and 11: what one calibration report may ask for, and what it says when
there is nothing to compare.

7. A report by an attribute of 4,000 values took 118 s of CPU and made GET /metrics 4.9 MB:
   a report now has at most QADI_REPORT_STRATA_MAX strata (200), counted and refused before
   any metric is computed, over HTTP (422 naming `by`) and in the CLI (a one-line error).
11. Judgments without a human grade on the same items answered numpy's "cannot reshape array
   of size 0" (422 over HTTP, a traceback in the CLI): now the error says what is missing.

On SQLite and PostgreSQL; judge calls go to the test double."""

from __future__ import annotations

import time
from collections.abc import Sequence

import pytest
import yaml

from tests.conftest import judges_config_data
from tests.integration.test_database_and_cli import qadi
from tests.integration.test_service_api import Service, rubric_body

RUBRIC = "iraqi-linguistic-shaku-maku"  # 0-100


@pytest.fixture
def make_service(migrated_db, llm_server, tmp_path):
    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    return lambda **settings: Service(migrated_db, path, **settings)


def grades(items: int, **attributes) -> list[dict]:
    """A human's and a judge's 1-5 grade of each item; an attribute given as a list gives
    item i its i-th value (modulo its length)."""
    def value(choices, i):
        return choices[i % len(choices)] if isinstance(choices, list) else choices

    return [
        {"item_id": f"i{i}", "rater": rater, "rater_kind": kind, "score": (i + k) % 5 + 1,
         "attributes": {name: value(choices, i) for name, choices in attributes.items()}}
        for i in range(items)
        for k, (rater, kind) in enumerate((("sme-1", "human"), ("kin-judge", "judge")))
    ]  # fmt: skip


def report(service, **body):
    return service.post("/calibration/reports", scope="grades",
                        json={"scale_min": 1, "scale_max": 5, **body})  # fmt: skip


def judge_items(service, count: int, dialect: Sequence[str] = ("iraqi",)) -> None:
    """`count` answers graded by gpt-judge under RUBRIC, item i of the i-th dialect."""
    for i in range(count):
        metadata = {"item_id": f"irq-{i}", "dialect": dialect[i % len(dialect)]}
        body = rubric_body(response=f"answer {i}", metadata=metadata)
        assert service.post("/judge", json=body).status_code == 200


# --- finding 7: strata per report ------------------------------------------------------------


def test_a_report_over_the_strata_cap_is_refused_before_any_work(make_service):
    """250 values of one attribute, with the most bootstrap resamples there are: computing
    them would take minutes; the refusal names the attribute, its count and the cap at once,
    and nothing is stored."""
    service = make_service()
    cities = [f"city-{k}" for k in range(250)]
    assert service.post("/grades", scope="grades", json=grades(500, city=cities)).status_code == 200
    started = time.perf_counter()
    refused = report(service, by=["city"], bootstrap=20000)
    elapsed = time.perf_counter() - started
    assert refused.status_code == 422, refused.text
    assert refused.json()["detail"] == [
        {
            "loc": ["body", "by"],
            "msg": "250 strata ('city' has 250 values); a report has at most 200: stratify by "
            "an attribute with fewer values, or narrow the selection",
            "type": "value_error",
        }
    ]
    assert elapsed < 10, elapsed  # the grades are read and counted, nothing computed
    latest = service.get("/calibration/reports/latest", scope="grades")
    assert latest.status_code == 404  # nothing stored


def test_the_cap_is_the_sum_over_the_attributes_and_a_setting(make_service):
    service = make_service(report_strata_max=3)
    body = grades(12, dialect=["iraqi", "egyptian", "gulf"], city=["basra", "cairo"])
    assert service.post("/grades", scope="grades", json=body).status_code == 200
    at_the_cap = report(service, by=["dialect"], bootstrap=0)
    assert at_the_cap.status_code == 201, at_the_cap.text
    assert set(at_the_cap.json()["judges"]["kin-judge"]["strata"]) == {
        "dialect=iraqi", "dialect=egyptian", "dialect=gulf"
    }  # fmt: skip
    over = report(service, by=["dialect", "city"], bootstrap=0)
    assert over.status_code == 422
    assert over.json()["detail"][0]["msg"].startswith(
        "5 strata ('dialect' has 3 values, 'city' has 2 values); a report has at most 3"
    )


def test_the_cli_refuses_the_same_report_in_one_line(make_service, migrated_db, tmp_path):
    """`qadi calibrate` over a file and over the database, and `qadi report nightly`, read
    the same QADI_REPORT_STRATA_MAX."""
    lines = ["item_id,rater,rater_kind,score,city"]
    lines += [f"i{i},{rater},{kind},{(i + k) % 5 + 1},city-{i % 250}"
              for i in range(500) for k, (rater, kind) in enumerate((("sme", "human"),
                                                                      ("judge", "judge")))]  # fmt: skip
    path = tmp_path / "grades.csv"
    path.write_text("\n".join(lines) + "\n")
    from_file = qadi("calibrate", str(path), "--scale", "1-5", "--by", "city",
                     "--out", str(tmp_path / "r.json"))  # fmt: skip
    assert from_file.returncode == 2
    assert from_file.stderr.strip().splitlines() == [
        "error: --by: 250 strata ('city' has 250 values); a report has at most 200: stratify "
        "by an attribute with fewer values, or narrow the selection"
    ]
    assert not (tmp_path / "r.json").exists()
    service = make_service()
    judge_items(service, 3, dialect=["iraqi", "egyptian", "gulf"])
    env = {"QADI_DATABASE_URL": migrated_db, "QADI_REPORT_STRATA_MAX": "2"}
    for command in (["calibrate", "--from-db"], ["report", "nightly", "--out-dir", str(tmp_path)]):
        done = qadi(*command, "--rubric", RUBRIC, "--by", "dialect", "--bootstrap", "0", env=env)
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert done.stderr.strip().splitlines() == [
            "error: --by: 3 strata ('dialect' has 3 values); a report has at most 2: stratify "
            "by an attribute with fewer values, or narrow the selection"
        ], command
    assert service.get("/calibration/reports/latest", scope="grades").status_code == 404


# --- finding 11: judgments without human grades ------------------------------------------------


def test_judgments_without_human_grades_say_what_is_missing(make_service):
    service = make_service()
    judge_items(service, 6)
    on_rubric = service.post("/calibration/reports", scope="grades",
                             json={"rubric": RUBRIC, "bootstrap": 20})  # fmt: skip
    assert on_rubric.status_code == 422, on_rubric.text
    assert on_rubric.json()["detail"] == [
        {
            "loc": ["body"],
            "msg": "no item has both a judge's grade and a human grade: 6 item(s) graded by "
            "gpt-judge, none of them by a human; import the SMEs' grades of these items",
            "type": "value_error",
        }
    ]
    # grades of other items are in a report without a rubric: said too, still nothing paired
    other = [{"item_id": "elsewhere", "rater": "sme", "rater_kind": "human", "score": 80}]
    assert service.post("/grades", scope="grades", json=other).status_code == 200
    by_scale = service.post("/calibration/reports", scope="grades",
                            json={"scale_min": 0, "scale_max": 100, "bootstrap": 20})  # fmt: skip
    assert by_scale.status_code == 422, by_scale.text
    assert by_scale.json()["detail"][0]["msg"] == (
        "no item has both a judge's grade and a human grade: 6 item(s) graded by gpt-judge, "
        "none of them by a human (the human grades are on 1 other item(s)); import the SMEs' "
        "grades of these items"
    )
    assert service.get("/calibration/reports/latest", scope="grades").status_code == 404


def test_judge_grades_alone_on_a_rating_scale_say_what_is_missing(make_service):
    """The finding's own input: on an ordinal scale numpy answered "cannot reshape array of
    size 0 into shape (1,0,newaxis)"."""
    service = make_service()
    judged = [row for row in grades(10) if row["rater_kind"] == "judge"]
    assert service.post("/grades", scope="grades", json=judged).status_code == 200
    refused = report(service, bootstrap=20)
    assert refused.status_code == 422, refused.text
    assert refused.json()["detail"] == [
        {
            "loc": ["body"],
            "msg": "no item has both a judge's grade and a human grade: 10 item(s) graded by "
            "kin-judge, none of them by a human; import the SMEs' grades of these items",
            "type": "value_error",
        }
    ]


def test_calibrate_from_db_without_human_grades_is_one_line(make_service, migrated_db, tmp_path):
    service = make_service()
    judge_items(service, 3)
    done = qadi("calibrate", "--from-db", "--rubric", RUBRIC, "--bootstrap", "20",
                "--out", str(tmp_path / "r.json"), env={"QADI_DATABASE_URL": migrated_db})  # fmt: skip
    assert done.returncode == 2, done.stdout
    assert done.stderr.strip().splitlines() == [
        "error: grades: no item has both a judge's grade and a human grade: 3 item(s) graded "
        "by gpt-judge, none of them by a human; import the SMEs' grades of these items"
    ]
    assert not (tmp_path / "r.json").exists()
