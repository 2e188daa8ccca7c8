"""`qadi grades import --from lm-eval DIR` on a results directory in lm-evaluation-harness's
published `--output_path DIR --log_samples` layout (written here, not copied from a run):

    DIR/<model_name_sanitized>/results_<timestamp>.json      {"model_name": ..., "results": ...}
    DIR/<model_name_sanitized>/samples_<task>_<timestamp>.jsonl   one document per line:
        {"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter",
         "metrics": [names], <name>: value for each name, "doc_hash", "prompt_hash", ...}
"""

from __future__ import annotations

import json

from tests.conftest import run_cli, stored_grades

STAMP = "2026-11-20T09-15-02.118034"


def sample(doc_id: int, filter_name: str, **metrics) -> dict:
    return {
        "doc_id": doc_id,
        "doc": {"question": f"q{doc_id}"},
        "target": "A",
        "arguments": {"gen_args_0": {"arg_0": f"q{doc_id}", "arg_1": {}}},
        "resps": [["A"]],
        "filtered_resps": ["A"],
        "filter": filter_name,
        "metrics": list(metrics),
        "doc_hash": f"d{doc_id}",
        "prompt_hash": f"p{doc_id}",
        "target_hash": "t",
        **metrics,
    }


def write_run(root, samples_by_task: dict[str, list[dict]]) -> None:
    folder = root / "Qwen__Qwen2.5-7B-Instruct"
    folder.mkdir(parents=True)
    results = {"results": {}, "model_name": "Qwen/Qwen2.5-7B-Instruct",
               "config": {"model": "hf", "model_args": "pretrained=Qwen/Qwen2.5-7B-Instruct"}}
    (folder / f"results_{STAMP}.json").write_text(json.dumps(results))
    for task, samples in samples_by_task.items():
        lines = "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in samples)
        (folder / f"samples_{task}_{STAMP}.jsonl").write_text(lines)


def test_per_document_metrics_become_judge_rows(tmp_path, migrated_db):
    write_run(tmp_path / "out", {
        "arabic_mmlu": [sample(0, "none", acc=1.0, acc_norm=0.0), sample(1, "none", acc=0.0, acc_norm=1.0)],
        "gsm8k": [sample(7, "strict-match", exact_match=1.0, bleu=["ref", "pred"]),
                  sample(8, "strict-match", exact_match=float("nan"))],
    })
    env = {"QADI_DATABASE_URL": migrated_db}
    done = run_cli("grades", "import", "--from", "lm-eval", str(tmp_path / "out"), env=env)
    assert done.returncode == 0, done.stderr
    # arabic_mmlu: 2 docs x 2 metrics = 4; gsm8k: exact_match of doc 7 = 1 (bleu is a corpus
    # metric, doc 8's value is NaN: both skipped, never a 0)
    assert json.loads(done.stdout)["rows"] == 5 and json.loads(done.stdout)["skipped"] == 2
    assert "bleu has no per-document value" in done.stderr and "exact_match: NaN" in done.stderr
    rows = stored_grades(migrated_db)
    assert set(rows) == {("arabic_mmlu/0", "acc,none"), ("arabic_mmlu/0", "acc_norm,none"),
                         ("arabic_mmlu/1", "acc,none"), ("arabic_mmlu/1", "acc_norm,none"),
                         ("gsm8k/7", "exact_match,strict-match")}
    assert rows[("arabic_mmlu/1", "acc_norm,none")] == {
        "item_id": "arabic_mmlu/1", "rater": "acc_norm,none", "rater_kind": "judge", "score": 1.0,
        "benchmark": "arabic_mmlu", "candidate_model": "Qwen/Qwen2.5-7B-Instruct",
        "filter": "none", "project": "default"}


def test_a_value_that_is_not_a_number_is_refused_naming_file_line_and_metric(tmp_path, migrated_db):
    write_run(tmp_path / "out", {"arabic_mmlu": [sample(0, "none", acc=1.0),
                                                 sample(1, "none", acc="high")]})
    env = {"QADI_DATABASE_URL": migrated_db}
    done = run_cli("grades", "import", "--from", "lm-eval", str(tmp_path / "out"), env=env)
    assert done.returncode == 2
    assert f"samples_arabic_mmlu_{STAMP}.jsonl line 2: acc: 'high' is not a number" in done.stderr
    assert stored_grades(migrated_db) == {}  # nothing imported from a refused run


def test_a_directory_without_samples_says_how_to_write_them(tmp_path, migrated_db):
    (tmp_path / "empty").mkdir()
    done = run_cli("grades", "import", "--from", "lm-eval", str(tmp_path / "empty"),
                   env={"QADI_DATABASE_URL": migrated_db})
    assert done.returncode == 2 and "--log_samples" in done.stderr
