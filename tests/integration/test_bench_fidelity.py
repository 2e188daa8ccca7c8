"""Issue 19 through the CLI against the LLM test double: the stop sequence reaches the
model, a guard that empties a run says so and can be turned off (and the run records it),
the report JSON carries breakdowns, runs are listed, and a run that skipped everything fails."""

from __future__ import annotations

import json

import yaml

from tests.conftest import ROOT, judges_config_data, run_cli, target_models_file

DATA = ROOT / "tests/data/bench"
FANN_REPLY = '{"explanation": "ملخص", "verses": [{"verse": "v1", "explanation": "يصف الشاعر"}]}'
JUDGE_REPLY = json.dumps({"faithfulness_score": 4, "fluency_score": 5, "overall_score": 4})


def bench(env, *args):
    return run_cli("bench", "run", *args, env=env)


def test_generation_sends_the_declared_stop_sequence(migrated_db, llm_server, tmp_path):
    judges = tmp_path / "judges.yaml"
    judges.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    llm_server.rules({"match": "Rating (1–5)", "reply": {"content": '{"rating": 3}'}})
    done = bench(
        {"QADI_DATABASE_URL": migrated_db},
        "--suite", "kinayat-explanation", "--model", "qwen",
        "--config", str(target_models_file(tmp_path, llm_server)),
        "--judges-config", str(judges), "--data-dir", str(DATA), "--limit", "1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # the suite holds the idiom and the proverb task: one candidate request each
    asked = [r for r in llm_server.requests() if "Qwen" in r.get("model", "")]
    assert len(asked) == 2
    # seed 000 T5: greedy decoding that stops at a blank line, 256 tokens
    assert all(r["stop"] == ["\n\n"] and r["max_tokens"] == 256 for r in asked)


def test_a_guard_that_empties_a_run_is_reported_and_can_be_turned_off(
    migrated_db, llm_server, tmp_path
):
    """GPT-4o answers, a GPT judge with no substitute: the guard leaves no judge for either
    of the 2 poems. The paper's setup (GPT-4o judging GPT-4o) needs --guard off."""
    env = {"QADI_DATABASE_URL": migrated_db}
    data = judges_config_data(llm_server)
    del data["model_list"][0]["substitute"]
    judges = tmp_path / "judges.yaml"
    judges.write_text(yaml.safe_dump(data))
    llm_server.rules(
        {"match": "You are an academic expert", "reply": {"content": FANN_REPLY}},
        {"match": "ground_truth", "reply": {"content": JUDGE_REPLY}},
    )
    args = (
        "--suite", "fann-or-flop", "--model", "gpt-4o", "--judges", "gpt-judge",
        "--config", str(target_models_file(tmp_path, llm_server)),
        "--judges-config", str(judges), "--data-dir", str(DATA),
    )  # fmt: skip
    guarded = bench(env, *args)
    assert guarded.returncode == 0, guarded.stderr
    assert "2 answers had no judge the self-evaluation guard allows" in guarded.stderr
    assert "--guard off" in guarded.stderr
    run_id = guarded.stdout.split()[1]
    report = run_cli("bench", "report", run_id, "--json", str(tmp_path / "g.json"), env=env)
    task = json.loads((tmp_path / "g.json").read_text())["tasks"]["fann-or-flop"]
    assert (task["n"], task["rejected_by_guard"], task["guard"]) == (0, 2, "provider")
    assert "fann-or-flop: judged with the self-evaluation guard 'provider'" in report.stdout
    assert "2 answers had no judge" in report.stdout and "--guard off" in report.stdout

    unguarded = bench(env, *args, "--guard", "off")
    assert unguarded.returncode == 0, unguarded.stderr
    run_id = unguarded.stdout.split()[1]
    report = run_cli("bench", "report", run_id, "--json", str(tmp_path / "o.json"), env=env)
    task = json.loads((tmp_path / "o.json").read_text())["tasks"]["fann-or-flop"]
    assert (task["n"], task["rejected_by_guard"], task["guard"]) == (2, 0, "off")
    assert task["faithfulness"]["mean"] == 4.0 and task["fluency"]["mean"] == 5.0
    assert set(task["breakdowns"]["era"]) == {"العصر العباسي", "العصر الأموي"}
    assert "fann-or-flop: judged with the self-evaluation guard 'off'" in report.stdout


def test_report_json_runs_listing_and_a_run_that_skipped_everything(
    migrated_db, llm_server, tmp_path
):
    env = {"QADI_DATABASE_URL": migrated_db}
    models = str(target_models_file(tmp_path, llm_server))
    mixtral = tmp_path / "mixtral.yaml"  # named as the hub id, served by the double
    mixtral.write_text(
        yaml.safe_dump(
            {
                "model_list": [
                    {
                        "model_name": "mistralai/Mixtral-8x7B-Instruct-v0.1",
                        "litellm_params": {
                            "model": "hosted_vllm/mistralai/Mixtral-8x7B-Instruct-v0.1",
                            "api_base": llm_server.api_base,
                        },
                    }
                ]
            }
        )
    )
    # MIDAS is released outside the hub: without --data-dir its only task is skipped
    skipped = bench(env, "--suite", "midas", "--model", "qwen", "--config", models)
    assert skipped.returncode == 1
    assert "every task was skipped" in skipped.stderr
    # the double answers "A": MIDI items whose gold is A are right
    llm_server.rules({"match": "most appropriate option", "reply": {"content": "A"}})
    done = bench(
        env, "--suite", "midi-mcq", "--model", "mistralai/Mixtral-8x7B-Instruct-v0.1",
        "--config", str(mixtral), "--data-dir", str(DATA),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.split()[1]
    assert run_cli("bench", "report", run_id, "--json", str(tmp_path / "r.json"), env=env)
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["run"] == run_id and report["model"] == "mistralai/Mixtral-8x7B-Instruct-v0.1"
    task = report["tasks"]["midi-mcq"]
    assert {"n", "accuracy", "stderr", "published", "parse_failures", "breakdowns"} <= set(task)
    assert task["published"] == 0.575  # Table 3, Mixtral (8x7B) overall 57.5
    assert {"language", "tier", "usage", "context", "tier×context", "tier×usage"} <= set(
        task["breakdowns"]
    )
    for cells in task["breakdowns"].values():
        assert all({"n", "accuracy"} <= set(cell) for cell in cells.values())
    assert sum(c["n"] for c in task["breakdowns"]["tier×context"].values()) == task["n"]
    listed = run_cli("bench", "runs", env=env)
    assert listed.returncode == 0 and run_id in listed.stdout and "midas" in listed.stdout
