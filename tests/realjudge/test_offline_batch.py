"""Offline grading with the real judge: `qadi regrade --batch` writes the requests, vLLM's
run_batch grades them in its own engine (`.ci/vllm.sh batch`, the server's model and
settings, no HTTP), `qadi regrade --ingest` stores them in the same database and results file
as live grading, and the same regrade over HTTP then calls nothing. That rerun's judge points
at the test double, which counts what reaches it: the address is transport, not part of a
call's key, so a call the store failed to answer would land there. (vLLM's own /metrics
counter cannot witness it: it counts every caller's requests, a request may end after the
test that sent it, and CI once saw it move by one that this test never made.) Six
items, so the engine's start (~50 s) is most of the cost."""

from __future__ import annotations

import json

import pytest
import yaml

from service.cli.demo import SAMPLE
from tests.conftest import run_cli, users_local_judge
from tests.realjudge.test_real_judge import check_rating_probabilities

ITEMS = [json.loads(line) for line in (SAMPLE / "explanations.jsonl").read_text().splitlines()]
pytestmark = pytest.mark.timeout(1800)


def test_offline_batch_results_share_the_store_and_results_file_with_http(
    local_judge_url, llm_server, tmp_path
):
    from service import local_judge

    entry = local_judge.judge_entry(local_judge_url, name="smol-batch", logprobs=3)
    config = tmp_path / "judges.yaml"
    config.write_text(yaml.safe_dump({**local_judge.judges_config(local_judge_url),
                                      "model_list": [entry]}))  # fmt: skip
    env = {"QADI_DATABASE_URL": f"sqlite:///{tmp_path / 'qadi.db'}",
           "QADI_JUDGES_CONFIG": str(config)}  # fmt: skip
    assert run_cli("db", "upgrade", env=env).returncode == 0
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps(item, ensure_ascii=False) + "\n" for item in ITEMS[:6]))
    regrade = ("regrade", str(answers), "--rubric", "kinayat-explanation", "--judges", "smol-batch")
    requests, results, out = (
        tmp_path / "requests.jsonl",
        tmp_path / "results.jsonl",
        tmp_path / "out.jsonl",
    )

    written = run_cli(*regrade, "--batch", str(requests), env=env)
    assert written.returncode == 0, written.stdout + written.stderr
    assert len(requests.read_text().splitlines()) == 6
    with users_local_judge():  # the installed vLLM environment, not the suite's empty one
        local_judge.run_batch(requests, results)
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert [line["response"]["status_code"] for line in lines] == [200] * 6

    ingested = run_cli(*regrade, "--ingest", str(results), "--out", str(out), env=env)
    assert ingested.returncode in (0, 1), ingested.stdout + ingested.stderr
    graded = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(g["item_id"] for g in graded) == sorted(i["item_id"] for i in ITEMS[:6])
    for line in graded:
        assert line["judge"] == "smol-batch"
        check_rating_probabilities(line, 3)  # the engine's logprobs, read as a live call's
    assert sum(line["status"] == "ok" for line in graded) >= 5

    counted = tmp_path / "counted.yaml"  # the same judge, its address the counting double's
    moved = local_judge.judge_entry(llm_server.api_base, name="smol-batch", logprobs=3)
    counted.write_text(yaml.safe_dump({**local_judge.judges_config(llm_server.api_base),
                                       "model_list": [moved]}))  # fmt: skip
    env = {**env, "QADI_JUDGES_CONFIG": str(counted)}
    again = run_cli(*regrade, "--concurrency", "8", "--out", str(out), env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "already stored (not called)" in again.stdout
    assert "│ 6" in again.stdout.split("already stored (not called)")[1][:40]
    assert llm_server.calls() == 0  # no call was made
    assert len(out.read_text().splitlines()) == 6  # nothing new appended
