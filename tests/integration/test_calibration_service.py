"""Calibration through the CLI and the API: files, the database, reports, nightly drift."""

from __future__ import annotations

import json

import pytest
import yaml
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings
from tests.conftest import judges_config_data, run_cli
from tests.perf.bench_calibration import synthetic_rows

NONE_MET = {
    "shaku_meaning": False,
    "maku_meaning": False,
    "greeting_example": False,
    "thanks_confusion": False,
    "msa_claim": False,
}
ALL_GOOD = {**NONE_MET, "shaku_meaning": True, "maku_meaning": True, "greeting_example": True}


def verdict(marks) -> str:
    return json.dumps(
        {
            "criteria": [{"id": k, "met": v, "evidence": ""} for k, v in marks.items()],
            "rationale": "",
        }
    )


def write_grades(path, rows):
    path.write_text(
        "\n".join(
            json.dumps(
                {
                    "item_id": r.item_id,
                    "rater": r.rater,
                    "rater_kind": r.rater_kind,
                    "score": r.score,
                    **r.attributes,
                }
            )
            for r in rows
        )
    )


def test_file_report_for_a_1_to_5_sample_renders_html_and_markdown(tmp_path):
    grades = tmp_path / "grades.jsonl"
    write_grades(grades, synthetic_rows(120))
    done = run_cli(
        "calibrate",
        str(grades),
        "--scale",
        "1-5",
        "--by",
        "dialect,category",
        "--bootstrap",
        "200",
        "--seed",
        "3",
        "--out",
        str(tmp_path / "r.json"),
        "--html",
        str(tmp_path / "r.html"),
        "--md",
        str(tmp_path / "r.md"),
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["scale"] == {"min": 1.0, "max": 5.0, "level": "ordinal"}
    assert set(report["judges"]["judge0"]["strata"]) >= {"dialect=iraqi", "category=cultural"}
    html = (tmp_path / "r.html").read_text()
    assert html.count("<table class='metrics'>") == 1 + 4 + 2
    # MAD, leniency, and per judge a Bland-Altman plot and a confusion matrix, all inline
    assert html.count('src="data:image/png;base64,') == 2 + 6 * 2
    assert "Bland-Altman judge0" in html and "confusion judge0" in html
    markdown = (tmp_path / "r.md").read_text()
    assert "| judge0 | 117 |" in markdown or "| judge0 |" in markdown
    assert "## dialect=iraqi" in markdown


def test_file_report_for_a_0_to_100_rubric_sample(tmp_path):
    done = run_cli(
        "calibrate",
        "tests/data/sme_sample_grades.csv",
        "--scale",
        "0-100",
        "--by",
        "dialect",
        "--bootstrap",
        "100",
        "--out",
        str(tmp_path / "r.json"),
        "--html",
        str(tmp_path / "r.html"),
        "--md",
        str(tmp_path / "r.md"),
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["scale"]["level"] == "interval"
    gpt = report["judges"]["gpt-judge"]["overall"]
    assert gpt["n"] == 4
    assert gpt["within_one"] is None and "ordinal" in gpt["undefined"]["within_one"]
    html = (tmp_path / "r.html").read_text()
    assert "confusion" not in html and html.count("Bland-Altman") == 2
    assert "<h2>dialect=egyptian</h2>" in html


def test_cli_refuses_bad_arguments(tmp_path):
    assert (
        "--scale: expected MIN-MAX"
        in run_cli(
            "calibrate", "service/sample/grades.csv", "--scale", "five", "--out", "x.json"
        ).stderr
    )
    assert "one of them" in run_cli("calibrate", "--scale", "1-5", "--out", "x.json").stderr
    assert (
        "min 5.0 must be below max 1.0"
        in run_cli(
            "calibrate", "service/sample/grades.csv", "--scale", "5-1", "--out", "x.json"
        ).stderr
    )


@pytest.fixture
def app_client(migrated_db, llm_server, tmp_path):
    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    settings = Settings(database_url=migrated_db, judges_config=path, auth="off")
    return TestClient(create_app(settings))


def grade_items(client, llm_server, marks, count=12, tag="a"):
    for i in range(count):
        llm_server.rules({"match": f"answer {tag}{i} ", "reply": {"content": verdict(marks)}})
    for i in range(count):
        body = {
            "kind": "rubric",
            "response": f"answer {tag}{i} ",
            "rubric_id": "iraqi-linguistic-shaku-maku",
            "candidate_model": "Qwen/Qwen2.5-7B-Instruct",
            "metadata": {"item_id": f"item{i}", "dialect": ["iraqi", "egyptian"][i % 2]},
        }
        assert client.post("/judge", json=body).status_code == 200


def test_report_api_uses_database_judgments_and_human_grades(app_client, llm_server):
    grade_items(app_client, llm_server, ALL_GOOD)
    llm_server.script({"content": "not json"})
    body = {
        "kind": "rubric",
        "response": "broken",
        "rubric_id": "iraqi-linguistic-shaku-maku",
        "candidate_model": "qwen-2.5",
        "metadata": {"item_id": "broken"},
    }
    assert app_client.post("/judge", json=body).status_code == 502
    humans = [
        {
            "item_id": f"item{i}",
            "rater": f"sme{k}",
            "rater_kind": "human",
            "score": 100.0 if (i + k) % 3 else 83.3,
        }
        for i in range(12)
        for k in range(2)
    ]
    assert app_client.post("/grades", json=humans).json()["inserted"] == 24
    created = app_client.post(
        "/calibration/reports",
        json={"rubric": "iraqi-linguistic-shaku-maku", "by": ["dialect"], "bootstrap": 100},
    )
    assert created.status_code == 201, created.text
    report = created.json()
    assert report["scale"] == {"min": 0.0, "max": 100.0, "level": "interval"}
    block = report["judges"]["gpt-judge"]["overall"]
    assert block["n"] == 12
    assert block["signed_error"] > 0  # the judge gives 100 where SMEs sometimes give 83.3
    assert set(report["judges"]["gpt-judge"]["strata"]) == {"dialect=iraqi", "dialect=egyptian"}
    assert report["inputs"]["failed_judgments_excluded"] == {"parse_error": 1}
    assert report["inputs"]["rubric_versions"] == ["iraqi-linguistic-shaku-maku@2"]
    assert report["inputs"]["judge_models"][0]["template_hash"].startswith("sha256:")
    same = app_client.get(f"/calibration/reports/{report['id']}").json()
    assert same["judges"] == report["judges"]
    html = app_client.get(f"/calibration/reports/{report['id']}.html")
    assert html.headers["content-type"].startswith("text/html")
    assert "<table class='metrics'>" in html.text and "data:image/png;base64," in html.text
    negotiated = app_client.get(
        f"/calibration/reports/{report['id']}", headers={"Accept": "text/html"}
    )
    assert negotiated.text == html.text
    assert app_client.get("/calibration/reports/latest").json()["id"] == report["id"]
    assert app_client.get("/calibration/reports/nope").status_code == 404
    missing_scale = app_client.post("/calibration/reports", json={"bootstrap": 10})
    assert missing_scale.status_code == 422


def test_nightly_detects_drift_and_exits_3(app_client, llm_server, migrated_db, tmp_path):
    humans = [
        {
            "item_id": f"item{i}",
            "rater": f"sme{k}",
            "rater_kind": "human",
            "score": [16.7, 0.0][k] if i % 2 else [0.0, 16.7][k],
        }
        for i in range(12)
        for k in range(2)
    ]
    app_client.post("/grades", json=humans)
    grade_items(app_client, llm_server, NONE_MET, tag="a")
    env = {"QADI_DATABASE_URL": migrated_db}
    args = [
        "report",
        "nightly",
        "--rubric",
        "iraqi-linguistic-shaku-maku",
        "--bootstrap",
        "200",
        "--out-dir",
        str(tmp_path / "reports"),
    ]
    first = run_cli(*args, env=env)
    assert first.returncode == 0, first.stderr
    assert len(list((tmp_path / "reports").glob("nightly-*.html"))) == 1
    grade_items(app_client, llm_server, ALL_GOOD, tag="b")  # the judge turns lenient
    second = run_cli(*args, env=env)
    assert second.returncode == 3, second.stdout + second.stderr
    assert "drift" in second.stderr and "gpt-judge" in second.stderr
    latest = app_client.get("/calibration/reports/latest", params={"kind": "nightly"}).json()
    changes = latest["drift"]["changes"]
    # Welch per cell, Benjamini–Hochberg over the night: overall and both dialects moved
    assert {(c["stratum"], c["metric"]) for c in changes} >= {
        ("overall", "mad"),
        ("overall", "signed_error"),
    }
    assert all(c["q_value"] <= 0.05 and c["p_value"] <= c["q_value"] for c in changes)
    assert latest["drift"]["procedure"] == "bh" and latest["drift"]["tested"] == 6
    assert [p["report"] for p in latest["history"]] == [latest["drift"]["previous_report"], None]
    # MAD: all 0 marks = score 0 against SMEs at 0/16.7 → 8.35; all good = 100 → 91.65
    assert [round(p["judges"]["gpt-judge"]["mad"], 2) for p in latest["history"]] == [8.35, 91.65]
    html = app_client.get(f"/calibration/reports/{latest['id']}.html").text
    banner = html.split('<section id="drift" class="banner drift">')[1].split("</section>")[0]
    assert "gpt-judge · MAD · overall: 91.650" in banner and "was 8.350 [" in banner
    assert "Benjamini–Hochberg over 6 cells" in html
    # the same rule from two stored ids: `qadi report diff` exits 3 and prints the q-values
    diffed = run_cli("report", "diff", latest["drift"]["previous_report"], latest["id"], env=env)
    assert diffed.returncode == 3, diffed.stdout + diffed.stderr
    assert "DRIFT" in diffed.stdout and "6 cell(s) tested" in diffed.stdout
    api = app_client.get(
        f"/calibration/reports/{latest['id']}/drift",
        params={"against": latest["drift"]["previous_report"]},
    ).json()
    assert len(api["changes"]) == len(changes)
    assert "nightly · iraqi-linguistic-shaku-maku@2 · " in html
    third = run_cli(*args, env=env)  # nothing new: no drift against the second report
    assert third.returncode == 0, third.stderr
    latest = app_client.get("/calibration/reports/latest", params={"kind": "nightly"}).json()
    assert len(latest["history"]) == 3 and latest["drift"]["changes"] == []
    html = app_client.get(f"/calibration/reports/{latest['id']}.html").text
    assert 'class="banner steady">No drift against report' in html
    assert '<section id="trend"><h2>Trend over 3 nightly reports</h2>' in html
    markdown = app_client.get(f"/calibration/reports/{latest['id']}.md").text
    assert markdown.count("| gpt-judge | 91.650 [") == 2 and "| gpt-judge | 8.350 [" in markdown


def test_report_diff_between_two_json_files(tmp_path):
    """`qadi report diff OLD NEW` on files: two samples of one distribution do not drift
    (exit 0); the same judges one point more lenient do (exit 3, p and q printed)."""
    before, same, lenient = (tmp_path / f"{n}.jsonl" for n in ("before", "same", "lenient"))
    write_grades(before, synthetic_rows(200, seed=1))
    write_grades(same, synthetic_rows(200, seed=2))
    write_grades(lenient, [
        r.model_copy(update={"score": min(5.0, r.score + 1)}) if r.rater == "judge1" else r
        for r in synthetic_rows(200, seed=2)
    ])  # fmt: skip
    for source in (before, same, lenient):
        made = run_cli("calibrate", str(source), "--scale", "1-5", "--by", "dialect",
                    "--bootstrap", "200", "--out", str(source.with_suffix(".json")))  # fmt: skip
        assert made.returncode == 0, made.stderr
    steady = run_cli("report", "diff", str(before.with_suffix(".json")), str(same.with_suffix(".json")))
    assert steady.returncode == 0, steady.stdout + steady.stderr
    assert "60 cell(s) tested" in steady.stdout and "0 drifted" in steady.stdout  # 6 × 5 × 2
    moved = run_cli("report", "diff", str(before.with_suffix(".json")),
                 str(lenient.with_suffix(".json")), "--json")  # fmt: skip
    assert moved.returncode == 3, moved.stdout + moved.stderr
    found = json.loads(moved.stdout)
    assert {c["judge"] for c in found["changes"]} == {"judge1"}
    assert all(c["q_value"] <= 0.05 for c in found["changes"])
    bad = run_cli("report", "diff", str(tmp_path / "missing.json"), str(same.with_suffix(".json")))
    assert bad.returncode == 2 and "OLD:" in bad.stderr


def test_cli_calibrate_from_db_stores_the_report(app_client, llm_server, migrated_db, tmp_path):
    grade_items(app_client, llm_server, ALL_GOOD, count=6)
    app_client.post(
        "/grades",
        json=[
            {"item_id": f"item{i}", "rater": "sme", "rater_kind": "human", "score": 100.0}
            for i in range(6)
        ],
    )
    done = run_cli(
        "calibrate",
        "--from-db",
        "--rubric",
        "iraqi-linguistic-shaku-maku",
        "--bootstrap",
        "50",
        "--out",
        str(tmp_path / "db.json"),
        env={"QADI_DATABASE_URL": migrated_db},
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "db.json").read_text())
    assert report["judges"]["gpt-judge"]["overall"]["mad"] == 0.0
    assert report["inputs"]["source"] == "database"
    assert app_client.get("/calibration/reports/latest").json()["kind"] == "adhoc"


def label_csv(path, humans=3, items=40):
    """Pairwise labels A/B/tie: humans agree mostly; judge 'close' follows the majority,
    judge 'always-a' says A every time."""
    lines = ["item_id,rater,rater_kind,score,lang"]
    for i in range(items):
        truth = ["A", "B", "tie"][i % 3]
        lang = ["ar", "en"][i % 2]
        for h in range(humans):
            label = truth if (i + h) % 5 else ["A", "B", "tie"][(i + 1) % 3]
            lines.append(f"i{i},sme{h},human,{label},{lang}")
        lines.append(f"i{i},close,judge,{truth},{lang}")
        lines.append(f"i{i},always-a,judge,A,{lang}")
    path.write_text("\n".join(lines) + "\n")


def test_cli_labels_with_the_alt_test_open_with_the_trust_map(tmp_path):
    label_csv(tmp_path / "labels.csv")
    done = run_cli(
        "calibrate", str(tmp_path / "labels.csv"), "--level", "nominal", "--alt-test",
        "--epsilon", "0.15", "--by", "lang", "--bootstrap", "100",
        "--out", str(tmp_path / "r.json"), "--md", str(tmp_path / "r.md"),
        "--html", str(tmp_path / "r.html"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert list(report)[0] == "trust" and report["trust"]["epsilon"] == 0.15
    assert report["scale"]["labels"] == ["A", "B", "tie"]
    close = report["judges"]["close"]
    assert close["alt_test"]["overall"]["scoring"] == "accuracy"
    assert close["alt_test"]["overall"]["tested"] == 3
    assert set(close["alt_test"]["strata"]) == {"lang=ar", "lang=en"}
    overall = {r["judge"]: r for r in report["trust"]["rows"] if r["stratum"] == "overall"}
    assert overall["close"]["verdict"] == "replace" and overall["close"]["rank"] == 1
    assert overall["always-a"]["verdict"] == "not_replacement"
    assert report["trust"]["best"]["overall"] == "close"
    assert close["overall"]["mad"] is None and close["overall"]["cohen_kappa"] > 0.5
    markdown = (tmp_path / "r.md").read_text()
    assert markdown.startswith("# Calibration report\n\nad hoc · labels.csv\n\n## Trust map")
    html = (tmp_path / "r.html").read_text()
    assert html.index("trust-map") < html.index("<table class='metrics'>")
    assert "replace" in done.stderr and "best overall: close" in done.stderr  # rich console


def test_cli_alt_test_required_and_bad_alt_options(tmp_path):
    label_csv(tmp_path / "two.csv", humans=2)
    args = ["calibrate", str(tmp_path / "two.csv"), "--level", "nominal", "--out", "x.json"]
    required = run_cli(*args, "--alt-test")
    assert required.returncode != 0
    assert "alt_test: needs at least 3 human annotators" in required.stderr
    assert "--alt-scoring: expected accuracy or neg_rmse or balanced_accuracy or jaccard" in (
        run_cli(*args, "--alt-scoring", "f1").stderr
    )
    floor = run_cli(*args, "--alt-min-items", "5")
    assert floor.returncode == 2 and floor.stderr.count("\n") == 1
    assert "--alt-min-items: 5 is below the floor of 20 items" in floor.stderr
    assert "--epsilon:" in run_cli(*args, "--epsilon", "1.5").stderr
    assert (
        "--scale: required"
        in run_cli("calibrate", str(tmp_path / "two.csv"), "--out", "x.json").stderr
    )
    nightly = run_cli("report", "nightly", "--scale", "1-5", "--alt-scoring", "f1")
    assert "--alt-scoring: expected accuracy or neg_rmse or" in nightly.stderr


def test_report_api_alt_test_options_criteria_and_field_errors(app_client, llm_server):
    grade_items(app_client, llm_server, ALL_GOOD, count=24)
    # three SMEs; sme2 disagrees on shaku_meaning for the even items
    humans = [
        {
            "item_id": f"item{i}",
            "rater": f"sme{k}",
            "rater_kind": "human",
            "score": 100.0,
            "criteria": {**ALL_GOOD, "shaku_meaning": not (k == 2 and i % 2 == 0)},
        }
        for i in range(24)
        for k in range(3)
    ]
    assert app_client.post("/grades", json=humans).status_code in (200, 201)
    body = {
        "rubric": "iraqi-linguistic-shaku-maku",
        "bootstrap": 50,
        "epsilon": 0.1,
        "alt_min_items": 20,
        "alt_test": True,
    }
    created = app_client.post("/calibration/reports", json=body)
    assert created.status_code == 201, created.text
    report = created.json()
    assert report["options"]["alt_test"] == {
        "epsilon": 0.1,
        "min_items": 20,
        "scoring": "neg_rmse",
        "required": True,
    }
    judge = report["judges"]["gpt-judge"]
    assert judge["alt_test"]["overall"]["tested"] == 3
    shaku = judge["criteria"]["shaku_meaning"]
    # judge marks met on 24 items; humans: 72 marks, 12 not met -> agreement 60/72 = 30/36
    assert shaku["agreement"] == pytest.approx(30 / 36)
    assert shaku["points_at_stake"] == pytest.approx(3 * 6 / 36)  # weight 3
    assert judge["criteria"]["maku_meaning"]["points_at_stake"] == 0.0
    # no rubric named: the one rubric version the judgments used gives the weights
    unnamed = {k: v for k, v in body.items() if k != "rubric"} | {"scale_min": 0, "scale_max": 100}
    by_judgments = app_client.post("/calibration/reports", json=unnamed).json()
    shaku = by_judgments["judges"]["gpt-judge"]["criteria"]["shaku_meaning"]
    assert shaku["weight"] == 3 and shaku["points_at_stake"] == pytest.approx(3 * 6 / 36)
    labels = app_client.post("/calibration/reports", json={**body, "level": "nominal"})
    assert labels.status_code == 201, labels.text
    assert labels.json()["scale"]["labels"] == ["100"]
    bad = app_client.post("/calibration/reports", json={**body, "epsilon": 1.5})
    assert bad.status_code == 422
    assert bad.json()["detail"][0]["loc"] == ["body", "epsilon"]
    clash = app_client.post(
        "/calibration/reports", json={**body, "level": "nominal", "alt_scoring": "neg_rmse"}
    )
    assert clash.status_code == 422
    assert "neg_rmse needs numbers" in clash.json()["detail"][0]["msg"]
    too_few = app_client.post("/calibration/reports", json={**body, "alt_min_items": 25})
    assert too_few.status_code == 422
    [problem] = too_few.json()["detail"]
    assert problem["loc"] == ["body", "alt_test"] and problem["msg"].startswith("needs")
    floor = app_client.post("/calibration/reports", json={**body, "alt_min_items": 5})
    assert floor.status_code == 422
    [problem] = floor.json()["detail"]
    assert problem["loc"] == ["body", "alt_min_items"]
    assert "below the floor of 20 items" in problem["msg"]


def test_cli_refuses_out_of_scale_scores_and_unknown_strata(tmp_path):
    """Issue 16 item 4: `--scale 1-5` used to accept 80 and 90 with only a note."""
    grades = tmp_path / "grades.csv"
    lines = ["item_id,rater,rater_kind,score,dialect"]
    lines += [f"i{i},sme{h},human,{i % 5 + 1},iraqi" for i in range(6) for h in range(2)]
    lines += [f"i{i},judge,judge,{[80, 90][i] if i < 2 else i % 5 + 1},iraqi" for i in range(6)]
    grades.write_text("\n".join(lines) + "\n")
    refused = run_cli("calibrate", str(grades), "--scale", "1-5", "--out", str(tmp_path / "r"))
    assert refused.returncode == 2
    assert "item i0 rater judge score 80 is outside 1–5" in refused.stderr
    assert "item i1 rater judge score 90 is outside 1–5" in refused.stderr
    assert not (tmp_path / "r").exists()
    fixed = grades.read_text().replace(",80,", ",1,").replace(",90,", ",2,")
    grades.write_text(fixed)
    unknown = run_cli(
        "calibrate", str(grades), "--scale", "1-5", "--by", "dialect,categroy",
        "--out", str(tmp_path / "r"),
    )  # fmt: skip
    assert unknown.returncode == 2
    assert "--by: unknown attribute 'categroy'; the grades carry dialect" in unknown.stderr
    printed = run_cli("calibrate", str(grades), "--scale", "1-5", "--bootstrap", "20")
    assert printed.returncode == 0 and "calibration (overall)" in printed.stdout  # no file
    html_only = run_cli(
        "calibrate", str(grades), "--scale", "1-5", "--bootstrap", "20",
        "--html", str(tmp_path / "only.html"),
    )  # fmt: skip
    assert html_only.returncode == 0, html_only.stderr
    assert "<table class='trust'>" in (tmp_path / "only.html").read_text()


def test_report_api_never_mixes_scales(app_client, llm_server):
    """A 0–100 rubric's judgments and 1–5 grades in one database: a report declared 1–5
    keeps to the 1–5 items, and a 0–100 score among them is refused by row."""
    grade_items(app_client, llm_server, ALL_GOOD)  # 12 items judged under the 0–100 rubric
    wide = [
        {"item_id": f"item{i}", "rater": "sme0", "rater_kind": "human", "score": 80.0}
        for i in range(12)
    ]
    narrow = [
        {"item_id": f"k{i}", "rater": rater, "rater_kind": kind, "score": float(i % 5 + 1)}
        for i in range(6)
        for rater, kind in (("sme1", "human"), ("sme2", "human"), ("kin-judge", "judge"))
    ]
    assert app_client.post("/grades", json=wide + narrow).status_code == 200
    body = {"scale_min": 1, "scale_max": 5, "bootstrap": 20}
    created = app_client.post("/calibration/reports", json=body)
    assert created.status_code == 201, created.text
    report = created.json()
    assert set(report["judges"]) == {"kin-judge"} and report["n_items"] == 6
    assert report["inputs"]["items_on_other_scales_excluded"] == 12
    assert report["judges"]["kin-judge"]["overall"]["mad"] == 0.0
    on_rubric = app_client.post(
        "/calibration/reports", json={"rubric": "iraqi-linguistic-shaku-maku", "bootstrap": 20}
    )
    assert set(on_rubric.json()["judges"]) == {"gpt-judge"}
    unknown = app_client.post("/calibration/reports", json={**body, "by": ["dialect"]})
    assert unknown.status_code == 422
    assert unknown.json()["detail"][0]["loc"] == ["body", "by"]
    stray = {"item_id": "k0", "rater": "sme9", "rater_kind": "human", "score": 75.0}
    assert app_client.post("/grades", json=[stray]).status_code == 200
    refused = app_client.post("/calibration/reports", json=body)
    assert refused.status_code == 422
    assert refused.json()["detail"] == [
        {
            "loc": ["body", "scale_min"],
            "msg": "item k0 rater sme9 score 75 is outside 1–5",
            "type": "value_error",
        }
    ]
