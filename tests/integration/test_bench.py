"""`qadi bench` end to end against the LLM test double, on the local files in tests/data."""

from __future__ import annotations

import asyncio

import yaml

from benchmarks import kinayat
from benchmarks.generation import CandidateModel
from benchmarks.loading import read_file
from benchmarks.runner import build_items, run_task
from judges import parse_config
from judges.client import JudgeClient
from service.db.engine import make_engine, make_sessionmaker
from service.stores import bench as bench_store
from tests.conftest import ROOT, judges_config_data, run_cli, target_models_file

DATA = ROOT / "tests/data/bench"


def test_kinayat_suite_end_to_end_through_the_cli(migrated_db, llm_server, tmp_path):
    env = {"QADI_DATABASE_URL": migrated_db}
    # the double answers every Kinayat understanding item with the letter of the right option
    understanding = next(t for t in kinayat.TASKS if t.name == "kinayat-understanding")
    for index, record in enumerate(read_file(DATA / "kinayat.jsonl")[:4]):
        [item] = understanding.items(record, index, 0)
        llm_server.rules(
            {
                "match": f"Idiom: {record['Idiom']}\\n",
                "reply": {"content": item.gold if index else item.gold + "."},
            }
        )

    def run_kinayat():
        return run_cli(
            "bench",
            "run",
            "--suite",
            "kinayat-understanding",
            "--model",
            "gpt-4o",
            "--config",
            str(target_models_file(tmp_path, llm_server)),
            "--data-dir",
            str(DATA),
            env=env,
        )

    done = run_kinayat()
    assert done.returncode == 0, done.stdout + done.stderr
    run_id = done.stdout.split()[1]
    run = bench_store.load_run(make_sessionmaker(make_engine(migrated_db)), run_id)
    summary = run.summary["kinayat-understanding"]
    assert summary["n"] == 4 and summary["items"] == 4
    assert summary["accuracy"] == 0.75  # "A." is a parse failure, counted wrong, not guessed
    assert summary["parse_failures"] == 1
    assert summary["missing_records"] == 1
    assert summary["missing"] == ["record kinayat-understanding:4: missing field 'Ar_Explanation'"]
    assert summary["published"] == 0.9415  # GPT-4o, Kinayat (general), Table 9
    calls = llm_server.calls()
    report = run_cli("bench", "report", run_id, "--html", str(tmp_path / "bench.html"), env=env)
    assert report.returncode == 0
    assert "kinayat-understanding" in report.stdout and "94.15" in report.stdout
    page = (tmp_path / "bench.html").read_text()
    assert '<table class="headline">' in page and "<pre>" not in page  # no raw JSON dump
    assert "<td class=\"num\">75.00 ± 25.00</td>" in page  # 3 of 4: sqrt(.75*.25/3) = .25
    assert "max-width:1200px" in page
    again = run_kinayat()
    assert again.returncode == 0
    assert llm_server.calls() == calls  # every answer came from the cache


def test_full_suite_runs_every_benchmark(migrated_db, llm_server, tmp_path):
    judges = tmp_path / "judges.yaml"
    judges.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    done = run_cli(
        "bench",
        "run",
        "--suite",
        "full",
        "--model",
        "gpt-4o",
        "--config",
        str(target_models_file(tmp_path, llm_server)),
        "--data-dir",
        str(DATA),
        "--limit",
        "2",
        "--judges-config",
        str(judges),
        "--judges",
        "gpt-judge,llama-judge",
        env={"QADI_DATABASE_URL": migrated_db},
    )
    assert done.returncode == 0, done.stderr
    run = bench_store.load_run(make_sessionmaker(make_engine(migrated_db)), done.stdout.split()[1])
    from benchmarks.suites import tasks_of

    assert set(run.summary) == {t.name for t in tasks_of("full")}
    for name in (
        "kinayat-pragmatic",
        "jawaher-connotation",
        "maps-context",
        "midi-mcq",
        "midi-bias",
        "midas-mcq",
    ):
        assert run.summary[name]["items"] > 0, name
    assert run.summary["midas-mcq"]["items"] == 6  # 2 questions × 3 rotations
    assert "bias" in run.summary["midi-bias"]
    for name in ("kinayat-explanation", "jawaher-explanation", "fann-or-flop", "sme-crosseval"):
        assert run.summary[name]["answered"] > 0, name


def test_loglik_scoring_picks_the_option_with_the_highest_logprob(
    migrated_db, llm_server, tmp_path
):
    config = parse_config(yaml.safe_load(target_models_file(tmp_path, llm_server).read_text()))
    model = CandidateModel(JudgeClient(config), "vllm-llama")
    maps = next(t for t in kinayat.TASKS if t.name == "maps-understanding")
    records = read_file(DATA / "maps_eng.jsonl")
    llm_server.rules(
        {"match": "Every cloud", "reply": {"logprobs": {" A": -3.0, " B": -0.2}}},
        {"match": "chickens", "reply": {"logprobs": {" A": -4.0, " B": -0.1}}},
    )
    cache = bench_store.DbAnswerCache(make_sessionmaker(make_engine(migrated_db)))
    items = build_items(maps, records, 0, None).items
    rows = asyncio.run(run_task(maps, items, model, "loglik", cache, 4))
    by_item = {r.item_id: r for r in rows}
    assert by_item["maps-understanding:0"].parsed == "B"  # the server favoured B
    assert by_item["maps-understanding:0"].correct is False  # gold is A
    assert by_item["maps-understanding:1"].parsed == "B" and by_item["maps-understanding:1"].correct
    sent = [r for r in llm_server.requests() if "prompt" in r]
    assert {r["prompt"][-2:] for r in sent} == {" A", " B"} and all(r["echo"] for r in sent)
