"""Benchmark suite II end to end against the LLM test double: explanations judged 1-5 with
the guard choosing the judge, Fann or Flop with lexical metrics and the authors' judge
message, and the SME cross-evaluation from prompts to a stratified calibration report."""

from __future__ import annotations

import json

import pytest
import yaml

from service.db.engine import make_engine, make_sessionmaker
from service.stores import bench as bench_store
from tests.conftest import ROOT, judges_config_data, run_cli, target_models_file

DATA = ROOT / "tests/data/bench"


@pytest.fixture
def files(tmp_path, llm_server):
    models = target_models_file(tmp_path, llm_server)
    judges = tmp_path / "judges.yaml"
    judges.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    return models, judges


def bench(env, models, judges, *args):
    done = run_cli(
        "bench",
        "run",
        "--config",
        str(models),
        "--judges-config",
        str(judges),
        "--data-dir",
        str(DATA),
        *args,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def summaries(db_url, stdout):
    factory = make_sessionmaker(make_engine(db_url))
    runs = [line.split()[1] for line in stdout.splitlines() if line.startswith("run ")]
    return {
        bench_store.load_run(factory, r).model: bench_store.load_run(factory, r).summary
        for r in runs
    }


def test_gpt_explanations_are_judged_by_the_substitute(migrated_db, llm_server, files):
    models, judges = files
    llm_server.rules({"match": "Rating (1–5)", "reply": {"content": '{"rating": 4}'}})
    done = bench(
        {"QADI_DATABASE_URL": migrated_db},
        models,
        judges,
        "--suite",
        "kinayat-explanation",
        "--model",
        "gpt-4o,qwen",
        "--judges",
        "gpt-judge",
    )
    by_model = summaries(migrated_db, done.stdout)
    gpt = by_model["gpt-4o"]["kinayat-explanation"]
    assert gpt["by_judge"].keys() == {"claude-judge"}  # the guard swapped GPT's judge
    assert gpt["skipped_by_guard"] == gpt["graded"] == 4
    assert gpt["score"]["mean"] == 4.0 and gpt["score"]["stderr"] == 0.0
    qwen = by_model["qwen"]["kinayat-explanation"]
    assert qwen["by_judge"].keys() == {"gpt-judge"} and qwen["skipped_by_guard"] == 0
    assert qwen["missing_records"] == 1


def test_fann_or_flop_end_to_end(migrated_db, llm_server, files):
    models, judges = files
    printed = (
        '{\n"explanation": "ملخص",\n[{"verse": "v1", "explanation": "يصف الشاعر صبره الطويل"},'
        '{"verse": "v2", "explanation": "الفتى ثابت"}]\n}'
    )
    llm_server.rules(
        {"match": "You are an academic expert", "reply": {"content": printed}},
        {
            "match": "ground_truth",
            "reply": {
                "content": json.dumps(
                    {"faithfulness_score": 4, "fluency_score": 5, "overall_score": 4}
                )
            },
        },
    )
    done = bench(
        {"QADI_DATABASE_URL": migrated_db},
        models,
        judges,
        "--suite",
        "fann-or-flop",
        "--model",
        "qwen",
        "--judges",
        "claude-judge",
    )
    summary = summaries(migrated_db, done.stdout)["qwen"]["fann-or-flop"]
    assert summary["graded"] == 2 and summary["parse_failures"] == 0
    assert summary["faithfulness"]["mean"] == 4.0 and summary["fluency"]["mean"] == 5.0
    assert 0 < summary["bleu"]["mean"] <= 1 and 0 < summary["chrf"]["mean"] <= 1
    assert set(summary["breakdowns"]["era"]) == {"العصر العباسي", "العصر الأموي"}
    judge_calls = [
        r
        for r in llm_server.requests()
        if "ground_truth" in json.dumps(r.get("messages"), ensure_ascii=False)
    ]
    message = json.loads(judge_calls[0]["messages"][-1]["content"])
    assert list(message) == ["id", "title", "ground_truth", "generated"]
    assert message["id"] in {"poem_1", "poem_2"}
    assert [v["v"] for v in message["generated"]] == list(
        range(1, len(message["ground_truth"]) + 1)
    )


def test_sme_crossevaluation_to_a_stratified_calibration_report(
    migrated_db, llm_server, files, tmp_path
):
    models, judges = files
    env = {"QADI_DATABASE_URL": migrated_db}
    done = bench(
        env,
        models,
        judges,
        "--suite",
        "sme-crosseval",
        "--model",
        "gpt-4o,claude-3-5-sonnet,qwen",
        "--judges",
        "gpt-judge,claude-judge,llama-judge",
    )
    by_model = summaries(migrated_db, done.stdout)
    made = sum(s["sme-crosseval"]["evaluations"] for s in by_model.values())
    skipped = sum(s["sme-crosseval"]["skipped_by_guard"] for s in by_model.values())
    # 12 prompts × 3 targets × 3 judges; the GPT and Claude answers each lose one judge
    assert (made, skipped) == (84, 24)
    assert made == 12 * 3 * 3 - skipped
    assert by_model["gpt-4o"]["sme-crosseval"]["by_judge"].keys() == {"claude-judge", "llama-judge"}
    # SME grades for every answer, in the interchange format
    grades = tmp_path / "sme.csv"
    lines = ["item_id,rater,rater_kind,score,dialect,category"]
    for line in (ROOT / "benchmarks/data/sme_crosseval.jsonl").read_text().splitlines():
        record = json.loads(line)
        for model, score in (("gpt-4o", 60), ("claude-3-5-sonnet", 75), ("qwen", 40)):
            lines.append(
                f"{record['item_id']}|{model},sme-{record['dialect']},human,{score},"
                f"{record['dialect']},{record['category']}"
            )
    grades.write_text("\n".join(lines))
    assert run_cli("grades", "import", str(grades), env=env).returncode == 0
    run_id = next(
        line.split()[1]
        for line in done.stdout.splitlines()
        if line.startswith("run ") and "(qwen)" in line
    )
    report = run_cli(
        "bench",
        "report",
        run_id,
        "--bootstrap",
        "100",
        "--html",
        str(tmp_path / "sme.html"),
        env=env,
    )
    assert report.returncode == 0, report.stderr
    assert "SME calibration" in report.stdout, report.stderr
    for stratum in (
        "dialect=egyptian",
        "dialect=iraqi",
        "category=cultural",
        "category=linguistic",
    ):
        assert stratum in report.stdout
    html = (tmp_path / "sme.calibration.html").read_text()
    assert "<table class='metrics'>" in html and "data:image/png;base64," in html
    # the paper pools its targets: one report over the three runs
    run_ids = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("run ")]
    pooled = run_cli(
        "bench", "report", *run_ids, "--bootstrap", "50", "--json", str(tmp_path / "p.json"),
        env=env,
    )  # fmt: skip
    assert pooled.returncode == 0, pooled.stderr
    assert "Cultural vs linguistic over 3 target run(s)" in pooled.stdout
    data = json.loads((tmp_path / "p.json").read_text())
    assert [r["run"] for r in data["runs"]] == run_ids
    assert data["sme"]["evaluations"] == 84  # every evaluation has an SME grade
    assert set(data["sme"]["category_gap"]) == {"gpt-judge", "claude-judge", "llama-judge"}
    # prompts are the independent units (every target answers each): 6 cultural, 6 linguistic
    for gap in data["sme"]["category_gap"].values():
        assert gap["cultural"]["prompts"] == gap["linguistic"]["prompts"] == 6
        assert gap["method"].startswith("welch_t_cr1") and gap["ci"] is not None
    # 12 prompts: 6 per dialect, each answered by 3 targets
    assert {d: c["answers"] for d, c in data["sme"]["dialect_leniency"].items()} == {
        "egyptian": 18,
        "iraqi": 18,
    }
    # SME means: (60 + 75 + 40) / 3 = 58.33 in each dialect
    assert data["sme"]["dialect_leniency"]["iraqi"]["sme_mean"] == pytest.approx(175 / 3)
    # each target's score corrected by the SME grades; every answer here is SME-graded, so
    # the corrected score is the SMEs' own mean for that target (qwen: 40 on all 24 answers)
    assert "Target scores corrected by the SME grades" in pooled.stdout
    qwen = data["sme"]["corrected"]["llama-judge"]["strata"]["candidate=qwen"]
    assert qwen["estimate"] == pytest.approx(40.0)
