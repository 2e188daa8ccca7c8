"""A real judge end to end: vLLM serving SmolLM2-135M-Instruct, no test double in the path.

24 Arabic idiom explanations (service/sample/explanations.jsonl, written for qadi with two
stand-in SME ratings each in explanation-grades.csv) are graded through `POST /judge` of a running qadi service (judge `smol`,
json_schema structured output, 10 alternatives per token) and through `qadi regrade` (judge
`smol-regrade`: the same model with 5 alternatives per token and a tighter max_tokens, so its
calls are its own, not answers reused from the cache), both with token probabilities;
then `qadi calibrate --from-db --score both` and `qadi estimate` run on those real grades
against the SME ratings.

SmolLM2-135M is a weak judge: nothing here asserts that it grades well. What must hold is
qadi's contract with a real server: every call is stored, ok or not; a reply that is not a
verdict is a parse error with no score, never a made-up one; the rating probabilities are
the server's (they sum to at most 1), name the chosen rating and give the expected score; the
calibration and estimate JSON are complete. Latencies are printed for the README.
"""

from __future__ import annotations

import asyncio
import csv
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import yaml
from sqlalchemy import select

from service.cli.demo import SAMPLE
from tests.conftest import POSTGRES_URL, ROOT, free_port, reset_postgres, run_cli, wait_for_http

EXPLANATIONS = SAMPLE / "explanations.jsonl"
SME_GRADES = SAMPLE / "explanation-grades.csv"
RUBRIC = "kinayat-explanation"
ITEMS = [json.loads(line) for line in EXPLANATIONS.read_text().splitlines()]
RATINGS = {str(v) for v in range(1, 6)}
# the first test also waits for the server (its install, in CI) and grades everything
pytestmark = pytest.mark.timeout(3600)


@dataclass
class Run:
    """What the module's one grading run produced."""

    database_url: str
    env: dict[str, str]
    responses: list[dict] = field(default_factory=list)  # POST /judge bodies, by item
    regrade_out: Path | None = None
    regrade: object = None
    again: object = None
    seconds: dict[str, float] = field(default_factory=dict)


def regrade_entry(url: str) -> dict:
    """The regrade's judge: other token-probability and max_tokens settings than `smol`, so
    another cache key (a rating reply is about ten tokens; a longer one is cut short and
    recorded as a parse error). The json_object and none modes are tested against the test
    double's server rules: SmolLM2-135M, unconstrained by a schema, loops inside strings
    until max_tokens."""
    from service.local_judge import judge_entry

    entry = judge_entry(url, name="smol-regrade", logprobs=5)
    entry["litellm_params"]["max_tokens"] = 64
    return entry


def judges_file(folder: Path, url: str) -> Path:
    from service.local_judge import judge_entry

    path = folder / "judges.yaml"
    data = {
        "model_list": [
            judge_entry(url, name="smol"),
            regrade_entry(url),
        ],
        "qadi": {"timeout": 300, "num_retries": 0},
    }
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


async def post_all(base: str, key: str) -> list[dict]:
    """Every item through POST /judge, 6 in flight (vLLM batches them)."""
    slots = asyncio.Semaphore(6)
    async with httpx.AsyncClient(base_url=base, timeout=600) as client:

        async def one(item: dict) -> dict:
            body = {
                "kind": "explanation",
                "rubric_id": RUBRIC,
                "prompt": item["prompt"],
                "reference": item["reference"],
                "response": item["response"],
                "candidate_model": item["candidate_model"],
                "judges": ["smol"],
                "metadata": {"item_id": item["item_id"], **item["metadata"]},
            }
            async with slots:
                response = await client.post("/judge", json=body, headers={"X-API-Key": key})
            assert response.status_code in (200, 502), response.text
            return response.json()

        return list(await asyncio.gather(*(one(item) for item in ITEMS)))


@pytest.fixture(scope="module")
def run(local_judge_url, tmp_path_factory) -> Run:
    from service.db.engine import make_engine, make_sessionmaker, session_scope, upgrade
    from service.stores.keys import create_key

    folder = tmp_path_factory.mktemp("realjudge")
    if POSTGRES_URL:
        reset_postgres(POSTGRES_URL)
    database_url = POSTGRES_URL or f"sqlite:///{folder / 'qadi.db'}"
    upgrade(database_url)
    with session_scope(make_sessionmaker(make_engine(database_url))) as session:
        key = create_key(session, "realjudge", ["judge", "grades", "admin"])
    config = judges_file(folder, local_judge_url)
    env = {"QADI_DATABASE_URL": database_url, "QADI_JUDGES_CONFIG": str(config)}
    result = Run(database_url, env)

    port = free_port()
    service = subprocess.Popen(
        [sys.executable, "-m", "service", "serve", "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=(folder / "service.log").open("w"),
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for_http(f"{base}/healthz", timeout=600, process=service)  # a loaded CI machine
        started = time.perf_counter()
        result.responses = asyncio.run(post_all(base, key))
        result.seconds["post_judge"] = time.perf_counter() - started
    finally:
        service.terminate()
        try:
            service.wait(timeout=30)
        except subprocess.TimeoutExpired:  # calls still in flight after a failure
            service.kill()
            service.wait()

    answers = folder / "answers.jsonl"
    answers.write_text(EXPLANATIONS.read_text(encoding="utf-8"), encoding="utf-8")
    result.regrade_out = folder / "regrade.jsonl"
    started = time.perf_counter()
    result.regrade = run_cli(
        *("regrade", str(answers), "--rubric", RUBRIC, "--judges", "smol-regrade"),
        *("--concurrency", "6", "--out", str(result.regrade_out)),
        env=env,
    )
    result.seconds["regrade"] = time.perf_counter() - started
    result.again = run_cli(
        *("regrade", str(answers), "--rubric", RUBRIC, "--judges", "smol-regrade"), env=env
    )
    imported = run_cli("grades", "import", str(SME_GRADES), env=env)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    return result


def judgments(database_url: str) -> list:
    from service.db.engine import make_engine, make_sessionmaker, session_scope
    from service.db.schema import JudgmentRow

    with session_scope(make_sessionmaker(make_engine(database_url))) as session:
        rows = session.scalars(select(JudgmentRow).where(JudgmentRow.cached.is_(False))).all()
        session.expunge_all()
        return rows


def check_rating_probabilities(result: dict, top_logprobs: int) -> None:
    """The contract of one judged item: ok with a rating and its distribution, or a parse
    error with no score at all."""
    if result["status"] != "ok":
        assert result["status"] == "parse_error", result
        assert result["score"] is None and result["expected_score"] is None
        assert result["error"] and result["raw_reply"] is not None
        return
    assert str(int(result["score"])) in RATINGS
    probabilities = result["probabilities"]
    assert probabilities is not None, "the judge was asked for logprobs and vLLM returns them"
    assert probabilities["top_logprobs"] == top_logprobs
    rating = probabilities["rating"]
    assert rating is not None, probabilities["unavailable"]
    assert set(rating["probs"]) == RATINGS
    assert all(0.0 <= p <= 1.0 for p in rating["probs"].values())
    assert sum(rating["probs"].values()) == pytest.approx(rating["mass"], abs=1e-5)
    assert 0.0 < rating["mass"] <= 1.0 + 1e-6
    assert rating["chosen"] == str(int(result["score"]))
    assert rating["probs"][rating["chosen"]] > 0
    assert rating["confidence"] == pytest.approx(
        rating["probs"][rating["chosen"]] / rating["mass"], abs=1e-5
    )
    expected = sum(int(v) * p for v, p in rating["probs"].items()) / rating["mass"]
    assert result["expected_score"] == pytest.approx(expected, abs=1e-4)
    assert set(rating["probs"]) == {"1", "2", "3", "4", "5"}  # the scale's values, no others


def test_post_judge_grades_every_item_with_its_rating_distribution(run):
    assert len(run.responses) == len(ITEMS) >= 20
    results = [body["results"][0] for body in run.responses]
    for body, result in zip(run.responses, results, strict=True):
        assert result["judge"] == "smol" and result["cached"] is False
        assert body["status"] == ("ok" if result["status"] == "ok" else "failed")
        check_rating_probabilities(result, 10)
    ok = [r for r in results if r["status"] == "ok"]
    assert len(ok) >= 20, [r["error"] for r in results if r["status"] != "ok"]
    latencies = [r["latency_ms"] for r in ok]
    print(
        f"\nPOST /judge: {len(ITEMS)} items in {run.seconds['post_judge']:.1f} s "
        f"(6 in flight); per call median {statistics.median(latencies):.0f} ms, "
        f"max {max(latencies):.0f} ms"
    )


def test_every_call_is_stored_with_its_probabilities(run):
    rows = {row.id: row for row in judgments(run.database_url)}
    from_api = [body["results"][0] for body in run.responses]
    for result in from_api:
        row = rows[result["id"]]
        assert (row.status, row.score, row.expected_score) == (
            result["status"],
            result["score"],
            result["expected_score"],
        )
        assert row.probabilities == result["probabilities"]
    by_judge = {}
    for row in rows.values():
        by_judge.setdefault(row.judge, []).append(row)
    assert len(by_judge["smol"]) == len(ITEMS)
    assert len(by_judge["smol-regrade"]) == len(ITEMS)  # the regrade, each item once


def test_regrade_writes_distributions_and_resumes(run):
    assert run.regrade.returncode in (0, 1), run.regrade.stdout + run.regrade.stderr
    lines = [json.loads(line) for line in run.regrade_out.read_text().splitlines()]
    assert sorted(line["item_id"] for line in lines) == sorted(i["item_id"] for i in ITEMS)
    for line in lines:
        assert line["judge"] == "smol-regrade"
        check_rating_probabilities(line, 5)
    ok = [line for line in lines if line["status"] == "ok"]
    assert len(ok) >= 20, [line["error"] for line in lines if line["status"] != "ok"]
    # exit 1 only for failed calls, which are listed; a rerun calls nothing again
    failed = len(lines) - len(ok)
    assert (run.regrade.returncode == 1) == (failed > 0)
    assert "already stored (not called)" in run.again.stdout
    assert f"│ {len(ITEMS)}" in run.again.stdout.split("already stored (not called)")[1][:40]
    latencies = [line["latency_ms"] for line in ok]
    print(
        f"\nqadi regrade: {len(ITEMS)} items in {run.seconds['regrade']:.1f} s "
        f"(concurrency 6); per call median {statistics.median(latencies):.0f} ms"
    )


def test_calibrate_compares_discrete_and_expected_scores_with_the_smes(run, tmp_path):
    report_path = tmp_path / "report.json"
    done = run_cli(
        *("calibrate", "--from-db", "--rubric", RUBRIC, "--score", "both"),
        *("--bootstrap", "200", "--out", str(report_path)),
        env=run.env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(report_path.read_text())
    assert report["scale"]["level"] == "interval"  # expected scores lie between ratings
    assert report["inputs"]["judge_scores"] == "both"
    assert set(report["judges"]) == {
        "smol",
        "smol~expected",
        "smol-regrade",
        "smol-regrade~expected",
    }
    for name, data in report["judges"].items():
        overall = data["overall"]
        assert overall["n"] >= 20, name
        for metric in ("mad", "signed_error", "kendall_tau", "spearman_rho", "pearson_r"):
            assert metric in overall and metric in overall["ci"], (name, metric)
        assert "alt_test" in data
    assert report["humans"]["n_raters"] == 2
    verdicts = {row["judge"]: row["verdict"] for row in report["trust"]["rows"]}
    assert set(verdicts) == set(report["judges"])
    assert set(verdicts.values()) <= {"replace", "not_replacement", "insufficient"}


def test_estimate_on_the_real_grades(run, tmp_path):
    grades = tmp_path / "grades.jsonl"
    rows = [
        {
            "item_id": line["item_id"],
            "rater": line["judge"],
            "rater_kind": "judge",
            "score": line["score"],
        }
        for line in map(json.loads, run.regrade_out.read_text().splitlines())
        if line["status"] == "ok"
    ]
    judged = len(rows)
    labelled = {r["item_id"] for r in rows[:12]}  # 12 of the judged items carry SME labels
    with SME_GRADES.open(encoding="utf-8") as handle:
        rows += [
            {**row, "score": float(row["score"])}
            for row in csv.DictReader(handle)
            if row["item_id"] in labelled
        ]
    grades.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    out = tmp_path / "estimate.json"
    done = run_cli("estimate", str(grades), "--scale", "1-5", "--out", str(out), env=run.env)
    assert done.returncode == 0, done.stdout + done.stderr
    estimate = json.loads(out.read_text())
    overall = estimate["judges"]["smol-regrade"]["overall"]
    for key in ("estimate", "ci", "n_labelled", "n_unlabelled", "lambda", "judge_only"):
        assert key in overall, key
    assert (overall["n_labelled"], overall["n_unlabelled"]) == (12, judged - 12)
    # a t interval around the point as computed, then kept on the 1-5 scale
    computed = overall.get("unclipped", overall)
    c_low, c_high = computed["ci"]
    assert c_high - computed["estimate"] == pytest.approx(computed["estimate"] - c_low)
    assert overall["ci"] == [min(5.0, max(1.0, end)) for end in (c_low, c_high)]
    assert "t with" in overall["method"]


def test_judges_check_finds_what_the_real_server_takes(local_judge_url, tmp_path):
    """`qadi judges check` against vLLM itself, not the test double's copy of its rules: the
    judge is reachable, its json_schema structured output works and it returns token
    probabilities, so the check passes and says nothing needs changing."""
    from tests.integration.test_structured_output_and_logprobs import HEADERS

    config = judges_file(tmp_path, local_judge_url)
    done = run_cli("judges", "check", "--config", str(config), env={"COLUMNS": "250"})
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line for line in done.stdout.splitlines() if "hosted_vllm/smollm2" in line]
    assert len(rows) == 2  # smol and smol-regrade
    for row in rows:
        cells = dict(zip(HEADERS, (c.strip() for c in row.split("│")[1:]), strict=False))
        assert cells["reachable"] == "yes" and cells["structured output"] == "yes", row
        assert cells["logprobs"] == "yes", row
