"""Traps a newcomer hit on a first hour with qadi (issue 26 items 4 and 5), each fixed: what
the user expected, asserted."""

from __future__ import annotations

import asyncio
import json
import math

import pytest
import yaml
from fastapi.testclient import TestClient
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import get_model
from inspect_ai.solver import generate
from qadi_client.inspect import qadi_scorer

from judges import GuardError, choose_panel, load_config, parse_config
from judges.client import JudgeClient
from service.app import create_app
from service.settings import Settings
from tests.conftest import judges_config_data, run_cli
from tests.integration.test_database_and_cli import qadi
from tests.integration.test_inspect import inspect_run, mock_answer  # noqa: F401, F811
from tests.integration.test_service_api import IRAQI, Service, rubric_body, verdict

UNSET = "QADI_TEST_KEY_NEVER_SET_26"


def write_config(path, data) -> str:
    path.write_text(yaml.safe_dump(data) if isinstance(data, dict) else data)
    return str(path)


# --- 4. a bad or missing judges file at `qadi serve` / `make run` ---------------------------


@pytest.mark.parametrize("problem", ["missing", "not YAML", "no model_list"])
def test_a_bad_judges_file_stops_serve_and_demo_with_the_judges_check_line(
    problem, migrated_db, tmp_path
):
    path = tmp_path / "judges.yaml"
    if problem == "not YAML":
        path.write_text("model_list: [unclosed\n")
    elif problem == "no model_list":
        path.write_text("qadi: {guard: provider}\n")
    env = {"QADI_DATABASE_URL": migrated_db, "QADI_JUDGES_CONFIG": str(path)}
    check = run_cli("judges", "check", "--config", str(path))
    assert check.returncode == 2
    [line] = check.stderr.strip().splitlines()
    assert line.startswith(f"error: {path}:")
    for command in (["serve", "--port", "9"], ["demo", "--no-serve"]):
        refused = run_cli(*command, env=env)
        assert refused.returncode == 2, (command, refused.stdout, refused.stderr)
        assert refused.stderr.strip() == line, command


def test_a_bad_judges_file_at_serve_is_one_line_from_the_real_process(migrated_db, tmp_path):
    path = write_config(tmp_path / "judges.yaml", "model_list: [unclosed\n")
    done = qadi("serve", "--port", "9", env={"QADI_DATABASE_URL": migrated_db,
                                             "QADI_JUDGES_CONFIG": path})
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "not valid YAML" in done.stderr


# --- 4. `guard: off` as the README writes it ------------------------------------------------


def test_guard_off_unquoted_is_read_as_off(tmp_path):
    text = "model_list:\n  - model_name: a\n    litellm_params: {model: openai/gpt-4.1}\n"
    off = load_config(write_config(tmp_path / "off.yaml", text + "qadi:\n  guard: off\n"))
    assert off.qadi.guard == "off"
    on = run_cli("judges", "check", "--config",
                 write_config(tmp_path / "on.yaml", text + "qadi:\n  guard: on\n"))
    assert on.returncode == 2 and "qadi.guard: `on` is not a level" in on.stderr


# --- 4. a judge whose maker is unknown -------------------------------------------------------


def unknown_maker_config(server) -> dict:
    return {
        "model_list": [{
            "model_name": "acme-judge",
            "litellm_params": {"model": "openai/acme-finetune-v3", "api_base": server.api_base,
                               "api_key": "sk-test-acme-000001"},
        }],
    }


def test_judges_check_warns_of_an_unknown_judge_maker(llm_server, tmp_path):
    llm_server.script({"content": '{"ok": true}'}, {"content": '{"ok": true}'})
    path = write_config(tmp_path / "judges.yaml", unknown_maker_config(llm_server))
    checked = run_cli("judges", "check", "--config", path)
    assert checked.returncode == 0, checked.stderr
    assert "unknown" in checked.stdout  # the maker column
    assert "warning:" in checked.stderr
    assert "set `provider:` on judge 'acme-judge'" in checked.stderr


def test_the_guard_refusal_names_the_judge_to_set_provider_on(llm_server, migrated_db, tmp_path):
    config = parse_config(unknown_maker_config(llm_server))
    with pytest.raises(GuardError, match="set `provider:` on judge 'acme-judge'"):
        choose_panel(config, None, "Qwen/Qwen2.5-7B-Instruct")
    service = Service(migrated_db, write_config(tmp_path / "j.yaml", unknown_maker_config(
        llm_server)))
    refused = service.post("/judge", json=rubric_body())
    assert refused.status_code == 422
    [error] = refused.json()["detail"]
    assert error["loc"] == ["body", "judges"] and error["type"] == "guard_refused"
    assert "set `provider:` on judge 'acme-judge'" in error["msg"]
    assert "candidate_provider" not in error["msg"]


# --- 4. the Inspect scorer and a guard refusal ----------------------------------------------


def test_a_guard_refusal_leaves_the_inspect_sample_unscored(qadi_server, llm_server, tmp_path):
    llm_server.script({"content": verdict(IRAQI)})
    task = Task(
        dataset=[Sample(id="refused", input="شنو معنى شكو؟", target="شكو = شنو اكو"),
                 Sample(id="graded", input="شنو معنى ماكو؟", target="ماكو = ما في")],
        solver=generate(),
        scorer=qadi_scorer(rubric="iraqi-linguistic-shaku-maku", url=qadi_server.base,
                           api_key=qadi_server.keys["all"]),
    )
    # "mockllm/model": qadi knows no maker for it, so the guard refuses every sample
    model = get_model("mockllm/model", custom_outputs=mock_answer)
    [log] = eval(task, model=model, log_dir=str(tmp_path), display="none")
    assert log.status == "success", log.error
    for sample in log.samples:
        score = sample.scores["qadi_scorer"]
        assert math.isnan(score.value) and score.reason == "guard_refused"
        assert "candidate_model 'mockllm/model': the maker is unknown" in score.explanation


# --- 4. the demo's banner and the judges it loaded -------------------------------------------


def test_the_demo_banner_lists_the_judges_it_loaded(db_url, llm_server, tmp_path):
    env = {"QADI_DATABASE_URL": db_url}
    stand_ins = run_cli("demo", "--no-serve", env=env)
    assert stand_ins.returncode == 0, stand_ins.stderr
    banner = stand_ins.stderr
    assert "stand-in-good (qadi-stand-in/good), stand-in-noisy (qadi-stand-in/noisy)" in banner
    assert "STAND-INS grade deterministically" in banner and "none configured" not in banner
    assert "/docs" not in banner  # nothing is served to read them on
    path = write_config(tmp_path / "judges.yaml", judges_config_data(llm_server))
    configured = run_cli("demo", "--no-serve", env={**env, "QADI_JUDGES_CONFIG": path})
    assert "gpt-judge (openai/gpt-4.1), claude-judge (openai/claude-3-5-sonnet)" in (
        configured.stderr
    )
    assert "STAND-INS" not in configured.stderr


# --- 4. a missing provider key ---------------------------------------------------------------


def test_a_key_read_from_an_unset_variable_is_named_and_never_called(llm_server, tmp_path,
                                                                     monkeypatch):
    monkeypatch.delenv(UNSET, raising=False)
    path = write_config(tmp_path / "judges.yaml", {"model_list": [{
        "model_name": "gpt-judge",
        "litellm_params": {"model": "openai/gpt-4.1", "api_base": llm_server.api_base,
                           "api_key": f"os.environ/{UNSET}"},
    }]})
    checked = run_cli("judges", "check", "--config", path)
    assert checked.returncode == 1
    assert f"{UNSET} is not set" in checked.stdout and "not called" in checked.stdout
    assert "unreachable" not in checked.stdout and "Exception" not in checked.stdout
    assert llm_server.calls() == 0


@pytest.mark.parametrize(("handler", "calls"), [("true", 1), ("false", 0)],
                         ids=["LiteLLM's HTTP handler", "the OpenAI SDK"])
def test_a_provider_finding_no_key_is_named_and_not_retried(llm_server, monkeypatch, handler,
                                                            calls):
    """Through LiteLLM's own HTTP handler (qadi's default, judges/__init__.py) the call goes
    out without a key and the provider answers 401, as OpenAI does; the OpenAI SDK refuses
    to send it. Either way the missing variable is named and nothing is retried."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER", handler)
    llm_server.script({"status": 401})
    config = parse_config({
        "model_list": [{"model_name": "gpt-judge",
                        "litellm_params": {"model": "openai/gpt-4.1",
                                           "api_base": llm_server.api_base}}],
        "qadi": {"num_retries": 3, "retry_after": 0},
    })
    outcome = asyncio.run(JudgeClient(config).complete("gpt-judge", [{"role": "user",
                                                                      "content": "hi"}], None))
    assert outcome.status == "backend_error"
    assert outcome.error.startswith("OPENAI_API_KEY is not set")
    assert outcome.attempts == 1  # not retried as if the provider were down
    assert llm_server.calls() == calls


# --- 4. a database qadi does not run on ------------------------------------------------------


@pytest.mark.parametrize("command", [("db", "upgrade"), ("keys", "list"), ("serve",)])
def test_an_unsupported_database_is_one_line(command):
    url = "mysql://qadi:s3cret@127.0.0.1/qadi"
    done = run_cli(*command, env={"QADI_DATABASE_URL": url})
    assert done.returncode == 2
    assert done.stderr.startswith("error: unsupported database 'mysql'")
    assert "s3cret" not in done.stderr and "Traceback" not in done.stderr


# --- 5. unpriced judges: an unknown cost, never $0.0000 -------------------------------------


def test_a_regrade_with_an_unpriced_judge_shows_its_cost_as_unknown(
    llm_server, migrated_db, tmp_path
):
    llm_server.rules({"match": "", "reply": {"content": verdict(IRAQI)}})
    config = judges_config_data(llm_server, panel=["llama-judge"])  # not in LiteLLM's prices
    path = write_config(tmp_path / "judges.yaml", config)
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"item_id": "a", "prompt": "p", "response": "r",
                                   "candidate_model": "gpt-4o"}) + "\n")
    done = run_cli("regrade", str(answers), "--rubric", "iraqi-linguistic-shaku-maku",
                   "--config", path, env={"QADI_DATABASE_URL": migrated_db})
    assert done.returncode == 0, done.stderr
    assert "unknown (1 call(s) of unpriced models)" in done.stdout
    assert "0.0000" not in done.stdout


# --- 5. every 503 carries Retry-After --------------------------------------------------------


def test_every_503_carries_retry_after(migrated_db):
    app = create_app(Settings(database_url=migrated_db, auth="off"))
    client = TestClient(app)
    unconfigured = client.post("/judge", json=rubric_body())
    assert unconfigured.status_code == 503 and int(unconfigured.headers["Retry-After"]) > 0
    from sqlalchemy import create_engine

    app.state.engine = create_engine("postgresql+psycopg://nobody@127.0.0.1:1/none")
    not_ready = client.get("/readyz")
    assert not_ready.status_code == 503 and int(not_ready.headers["Retry-After"]) > 0


# --- 5. a missing reference is reported at body.reference ------------------------------------


def test_a_missing_reference_is_located_at_body_reference(service_with_judges):
    refused = service_with_judges.post("/judge", json={
        "kind": "explanation", "rubric_id": "kinayat-explanation", "response": "r",
        "candidate_model": "Qwen/Qwen2.5-7B-Instruct",
    })
    assert refused.status_code == 422
    [error] = refused.json()["detail"]
    assert error["loc"] == ["body", "reference"], error
    assert error["msg"].startswith("this judge compares with a gold explanation")


@pytest.fixture
def service_with_judges(migrated_db, llm_server, tmp_path):
    return Service(migrated_db, write_config(tmp_path / "j.yaml", judges_config_data(llm_server)))


# --- 5. corrected means stay on the scale ----------------------------------------------------


def test_corrected_intervals_are_clipped_to_the_scale_and_say_so(tmp_path):
    grades = tmp_path / "grades.csv"
    grades.write_text(
        "item_id,rater,rater_kind,score\n"
        "a,h,human,0\na,j,judge,90\nb,h,human,100\nb,j,judge,10\n"
        "c,h,human,95\nc,j,judge,50\nd,j,judge,60\n"
    )
    out = tmp_path / "est.json"
    done = run_cli("estimate", str(grades), "--scale", "0-100", "--out", str(out),
                   "--md", str(tmp_path / "est.md"))
    assert done.returncode == 0, done.stderr
    block = json.loads(out.read_text())["judges"]["j"]["overall"]
    low, high = block["ci"]
    assert 0 <= low <= high <= 100
    assert block["clipped_to_scale"] is True and block["unclipped"]["ci"][1] > 100
    assert "(clipped to the scale)" in (tmp_path / "est.md").read_text()


# --- 5. an Inspect scorer's grades in a rubric-scoped nightly report --------------------------


def test_imported_scorer_grades_stay_out_of_a_rubric_report(
    inspect_run,  # noqa: F811
    qadi_server,
    tmp_path,
):
    env = {"QADI_DATABASE_URL": qadi_server.database_url}
    imported = run_cli("grades", "import", "--from", "inspect", inspect_run.location, env=env)
    assert imported.returncode == 0, imported.stderr
    humans = tmp_path / "humans.csv"
    humans.write_text("item_id,rater,rater_kind,score\nalpha,sme-1,human,80\n"
                      "beta,sme-1,human,60\nalpha,sme-2,human,90\nbeta,sme-2,human,70\n")
    assert run_cli("grades", "import", str(humans), env=env).returncode == 0
    night = run_cli("report", "nightly", "--rubric", "iraqi-linguistic-shaku-maku",
                    "--out-dir", str(tmp_path), "--bootstrap", "50", env=env)
    assert night.returncode in (0, 3), night.stderr
    report = json.loads(next(tmp_path.glob("nightly-*.json")).read_text())
    # the scorer's value is the mean of qadi's own judgments; match() graded no rubric
    # (other tests of this server grade under the rubric too: only the imports are checked)
    assert "claude-judge" in report["judges"]
    assert not {"match", "qadi_scorer"} & set(report["judges"])
    assert report["inputs"]["imported_judge_grades_excluded"] == ["match", "qadi_scorer"]
    assert report["judges"]["claude-judge"]["overall"]["n"] == 2



# --- 5. `qadi regrade` honours each line's rubric_id ------------------------------------------


def test_regrade_grades_each_line_under_its_own_rubric_id(llm_server, migrated_db, tmp_path):
    from sqlalchemy import create_engine, select

    from service.db.schema import JudgmentRow

    llm_server.rules(
        {"match": "gold", "reply": {"content": '{"rating": 4}'}},
        {"match": "", "reply": {"content": verdict(IRAQI)}},
    )
    path = write_config(tmp_path / "judges.yaml", judges_config_data(llm_server))
    lines = [
        {"item_id": "shaku", "rubric_id": "iraqi-linguistic-shaku-maku", "prompt": "p",
         "response": "r", "candidate_model": "Qwen/Qwen2.5-7B-Instruct"},
        {"item_id": "idiom", "rubric_id": "kinayat-explanation", "response": "generated",
         "reference": "gold", "candidate_model": "Qwen/Qwen2.5-7B-Instruct"},
    ]
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps(line) + "\n" for line in lines))
    env = {"QADI_DATABASE_URL": migrated_db}
    done = run_cli("regrade", str(answers), "--config", path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    engine = create_engine(migrated_db)
    with engine.connect() as connection:
        stored = dict(connection.execute(select(JudgmentRow.rubric_ref, JudgmentRow.score)).all())
    engine.dispose()
    assert stored == {"iraqi-linguistic-shaku-maku@2": pytest.approx(500 / 6),
                      "kinayat-explanation@3": 4.0}
    overridden = run_cli("regrade", str(answers), "--config", path, "--rubric",
                         "iraqi-linguistic-shaku-maku", "--dry-run", env=env)
    assert "--rubric iraqi-linguistic-shaku-maku grades 1 answer(s) whose line names another" in (
        overridden.stderr
    )
    (tmp_path / "bare.jsonl").write_text(json.dumps({**lines[0], "rubric_id": None}) + "\n")
    refused = run_cli("regrade", str(tmp_path / "bare.jsonl"), "--config", path, env=env)
    assert refused.returncode == 2
    assert "1 answer(s) have no rubric_id (shaku); give --rubric" in refused.stderr


def test_calibrating_a_file_of_human_grades_only_says_no_judge_was_compared(tmp_path):
    """The sample's grades.csv holds the SMEs' grades alone: its report is an empty table, and
    the newcomer was not told why (2026-12-02 walk-through)."""
    path = tmp_path / "sme.csv"
    path.write_text("item_id,rater,rater_kind,score\na,r1,human,3\na,r2,human,4\nb,r1,human,2\n")
    result = run_cli("calibrate", str(path), "--scale", "1-5")
    assert result.returncode == 0, result.stderr
    said = " ".join((result.stdout + result.stderr).split())
    assert "no judge's grades: every row is a human's (rater_kind human)" in said, said


def test_a_judges_file_that_is_not_there_says_where_to_start(tmp_path):
    """`qadi judge … --config judges.yaml` in a fresh clone: the file is not there yet, and the
    error names the two that are (2026-12-02 walk-through)."""
    result = run_cli("judges", "check", "--config", str(tmp_path / "judges.yaml"))
    assert result.returncode != 0
    said = " ".join(result.stderr.split())
    assert "no such judges config" in said and "examples/judges.yaml" in said, said
    assert "service/sample/judges.yaml" in said
