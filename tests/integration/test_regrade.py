"""`qadi regrade` against the LLM test double: DB and file agree, resume after a kill makes
exactly the missing calls, reruns make none, --force and rubric changes regrade, parse
errors are listed and not scored, dry runs, stored answers, and batch files round-trip."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest
import yaml
from sqlalchemy import func, select

from rubrics import library_rubric, rubric_hash
from service.db.engine import make_engine, make_sessionmaker, session_scope, upgrade
from service.db.schema import JudgmentRow
from service.stores.rubrics import save_rubric
from tests.conftest import ROOT, judges_config_data
from tests.conftest import run_cli as qadi

RUBRIC = "iraqi-linguistic-shaku-maku"


@pytest.fixture
def setup(migrated_db, llm_server, tmp_path):
    config = tmp_path / "judges.yaml"
    config.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "".join(
            json.dumps(
                {
                    "item_id": f"a{i}",
                    "prompt": "شنو معنى شكو؟",
                    "response": f"answer {i} ",
                    "candidate_model": "Qwen/Qwen2.5-7B-Instruct",
                    "dialect": "iraqi",
                }
            )
            + "\n"
            for i in range(30)
        )
    )
    env = {"QADI_DATABASE_URL": migrated_db}

    def run(*extra, judges="gpt-judge", rubric=RUBRIC, out=tmp_path / "results.jsonl"):
        return qadi(
            "regrade",
            str(answers),
            "--rubric",
            rubric,
            "--judges",
            judges,
            "--config",
            str(config),
            "--out",
            str(out),
            "--concurrency",
            "8",
            *extra,
            env=env,
        )

    return run, migrated_db, answers, config, env


def stored(url, **where):
    with session_scope(make_sessionmaker(make_engine(url))) as session:
        query = select(JudgmentRow)
        for key, value in where.items():
            query = query.where(getattr(JudgmentRow, key) == value)
        return session.scalars(query).all()


def test_results_in_database_and_file_match_and_rerun_makes_no_call(setup, llm_server, tmp_path):
    run, url, *_ = setup
    first = run()
    assert first.returncode == 0, first.stderr
    assert llm_server.calls() == 30
    rows = stored(url)
    lines = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert sorted((r.id, r.score) for r in rows) == sorted((x["id"], x["score"]) for x in lines)
    assert {x["item_id"] for x in lines} == {f"a{i}" for i in range(30)}
    second = run()
    assert second.returncode == 0
    assert llm_server.calls() == 30  # nothing new
    # the file still lists every answer, the reused results marked cached
    again = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert sorted(x["item_id"] for x in again) == sorted(x["item_id"] for x in lines)
    assert all(x["cached"] for x in again)
    assert "already stored (not called)  │ 30" in second.stdout.replace("│ 30 ", "│ 30")
    assert len(stored(url)) == 30
    forced = run("--force")
    assert forced.returncode == 0 and llm_server.calls() == 60
    assert len(stored(url)) == 60


def test_other_judge_model_or_rubric_version_regrades(setup, llm_server, tmp_path):
    run, url, *_ = setup
    run()
    assert llm_server.calls() == 30
    run(judges="llama-judge")  # another judge model: new cache keys
    assert llm_server.calls() == 60
    rubric = yaml.safe_load((ROOT / "rubrics/library/iraqi-linguistic-shaku-maku.yaml").read_text())
    rubric["version"] = 3
    rubric["criteria"][0]["weight"] = 4
    changed = tmp_path / "v2.yaml"
    changed.write_text(yaml.safe_dump(rubric, allow_unicode=True))
    assert run(rubric=str(changed)).returncode == 0
    assert llm_server.calls() == 90
    assert len(stored(url, rubric_ref="iraqi-linguistic-shaku-maku@3")) == 30


def test_parse_errors_are_counted_listed_and_not_scored(setup, llm_server):
    run, url, *_ = setup
    llm_server.rules({"match": "answer 7 ", "reply": {"content": "I refuse to use JSON"}})
    done = run()
    assert done.returncode == 1
    assert "parse errors                 │ 1" in done.stdout
    assert "parse_error item a7 judge gpt-judge" in done.stdout
    [failed] = stored(url, status="parse_error")
    assert failed.score is None and failed.raw_reply == "I refuse to use JSON"
    calls = llm_server.calls()
    run()  # a stored parse error is a deterministic outcome: not called again by default
    assert llm_server.calls() == calls
    run("--retry-failed")
    assert llm_server.calls() == calls + 1


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT], ids=["killed", "ctrl-c"])
def test_a_stopped_run_resumes_with_exactly_the_missing_calls(setup, llm_server, tmp_path, stop):
    """Killed, or interrupted with Ctrl-C (which `asyncio.run` turns into the command's own
    exit: 130, what finished is stored). The calls for answers 20-29 are held by the double
    (until their client leaves), so the run cannot finish before it is stopped however slowly
    this test polls (CI once saw a loaded machine let the whole run end first): it is stopped
    with at least 8 answers stored and its calls for the held ones in flight."""
    _, url, answers, config, env = setup
    llm_server.faults(latency_min=0.15, latency_max=0.15)
    llm_server.rules(*({"match": f"answer {i} ", "reply": {"delay": 120}} for i in range(20, 30)))
    command = [
        sys.executable,
        "-m",
        "service",
        "regrade",
        str(answers),
        "--rubric",
        RUBRIC,
        "--judges",
        "gpt-judge",
        "--config",
        str(config),
        "--concurrency",
        "3",
        "--out",
        str(tmp_path / "results.jsonl"),
    ]
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,  # the messages (and the progress bar, drawn rarely off a tty)
        text=True,
    )
    deadline = time.monotonic() + 180
    while len(stored(url)) < 8 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    at_signal = len(stored(url))
    process.send_signal(stop)
    _, err = process.communicate(timeout=60)
    done_before = len(stored(url))
    assert 8 <= at_signal <= done_before <= 20
    if stop == signal.SIGINT:
        assert process.returncode == 130, err
        assert "interrupted" in err and "Traceback" not in err, err  # messages go to stderr
    before = llm_server.settled_calls()
    assert before >= done_before  # every stored call was made (some may have been in flight)
    llm_server.reset()  # no held answers, no latency; the double counts from zero again
    resumed = qadi(*command[3:], env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert llm_server.calls() == 30 - done_before
    rows = stored(url)
    assert len(rows) == 30 and len({r.cache_key for r in rows}) == 30
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["id"] for x in lines) == sorted(r.id for r in rows)


def test_dry_run_counts_and_prices_without_calling(setup, llm_server):
    run, *_ = setup
    done = run("--dry-run", judges="gpt-judge,llama-judge,claude-judge")
    assert done.returncode == 0, done.stderr
    estimate = json.loads(done.stdout)
    assert estimate["calls"] == 90
    assert estimate["judges"]["gpt-judge"]["cost_usd"] > 0  # gpt-4.1 is in LiteLLM's table
    assert estimate["judges"]["llama-judge"]["cost_usd"] is None  # not in the table: unknown
    assert estimate["judges"]["claude-judge"]["cost_usd"] is None
    # the known part is totalled, the unknown named (not a null for the whole run)
    assert estimate["cost_usd"] == estimate["judges"]["gpt-judge"]["cost_usd"]
    assert estimate["cost_complete"] is False
    assert estimate["unpriced_judges"] == ["claude-judge", "llama-judge"]
    assert llm_server.calls() == 0


def test_regrade_answers_from_the_database(setup, llm_server):
    run, url, answers, config, env = setup
    run()
    done = qadi(
        "regrade",
        "--from-db",
        "--db-rubric",
        RUBRIC,
        "--rubric",
        "iraqi-linguistic-shaku-maku",
        "--judges",
        "llama-judge",
        "--config",
        str(config),
        "--metadata",
        "dialect=iraqi",
        "--limit",
        "10",
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert len(stored(url, judge="llama-judge")) == 10
    # without --rubric, the answers are regraded with the rubric --db-rubric names (41.8)
    again = qadi("regrade", "--from-db", "--db-rubric", RUBRIC, "--judges", "claude-judge",
                 "--config", str(config), "--limit", "5", env=env)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert len(stored(url, judge="claude-judge")) == 5


def test_batch_file_round_trip(setup, llm_server, tmp_path):
    run, url, *_ = setup
    batch = tmp_path / "batch.jsonl"
    written = run("--batch", str(batch))
    assert written.returncode == 0, written.stderr
    requests = [json.loads(x) for x in batch.read_text().splitlines()]
    assert len(requests) == 30 and llm_server.calls() == 0
    assert requests[0]["url"] == "/v1/chat/completions" and requests[0]["method"] == "POST"
    assert requests[0]["body"]["model"] == "gpt-4.1"
    assert requests[0]["body"]["temperature"] == 0
    ids = requests[0]["body"]["response_format"]["json_schema"]["schema"]["properties"]
    assert "criteria" in ids
    results = tmp_path / "batch_results.jsonl"
    lines = []
    for k, request in enumerate(requests):
        schema = request["body"]["response_format"]["json_schema"]["schema"]
        enum = schema["properties"]["criteria"]["items"]["properties"]["id"]["enum"]
        content = json.dumps(
            {
                "criteria": [{"id": c, "met": c == "shaku_meaning", "evidence": ""} for c in enum],
                "rationale": "batch",
            }
        )
        if k == 3:
            content = "not json"
        body = {
            "id": f"chatcmpl-{k}",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 200, "completion_tokens": 50},
        }
        response = {"status_code": 200, "request_id": f"r{k}", "body": body}
        if k == 4:
            response = {"status_code": 500, "request_id": f"r{k}", "body": {"error": "boom"}}
        lines.append(
            {
                "id": f"batch_req_{k}",
                "custom_id": request["custom_id"],
                "response": response,
                "error": None,
            }
        )
    results.write_text("\n".join(json.dumps(x) for x in lines))
    ingested = run("--ingest", str(results))
    assert ingested.returncode == 1  # one parse error and one backend error are listed
    assert "parse errors                 │ 1" in ingested.stdout
    assert "backend errors               │ 1" in ingested.stdout
    ok = stored(url, status="ok")
    assert len(ok) == 28 and {r.score for r in ok} == {50.0}
    assert ok[0].cost_usd == pytest.approx(0.5 * (200 * 2e-6 + 50 * 8e-6))
    assert llm_server.calls() == 0
    # the same results file again, with a repeated line: nothing is stored twice
    results.write_text("\n".join(json.dumps(x) for x in [*lines, lines[0]]))
    again = run("--ingest", str(results))
    assert "graded (new calls ok)        │ 0" in again.stdout
    assert len(stored(url, status="ok")) == 28
    rerun = run()  # the ingested ok and parse-error calls count as stored
    assert rerun.returncode == 0
    assert llm_server.calls() == 1  # only the backend error is retried
    with session_scope(make_sessionmaker(make_engine(url))) as session:
        assert session.scalar(select(func.count()).select_from(JudgmentRow)) == 31


def outcomes(path):
    """Each line of a results file as what must not differ between engines, sorted."""
    found = [json.loads(x) for x in path.read_text().splitlines()]
    return sorted(
        (x["item_id"], x["judge"], x["status"], x["score"], x["cache_key"], x["cached"],
         x["prompt_tokens"], x["completion_tokens"])
        for x in found
    )  # fmt: skip


def one_process_outcomes(answers, config, tmp_path):
    """The outcomes of gpt-judge's regrade of `answers` by the default engine, in one
    process and a database of its own (one parse error listed: exit code 1)."""
    local_url = f"sqlite:///{tmp_path / 'local.db'}"
    upgrade(local_url)
    local = qadi("regrade", str(answers), "--rubric", RUBRIC, "--judges", "gpt-judge",
                 "--config", str(config), "--out", str(tmp_path / "local.jsonl"),
                 env={"QADI_DATABASE_URL": local_url})  # fmt: skip
    assert local.returncode == 1, local.stdout + local.stderr
    return outcomes(tmp_path / "local.jsonl")


def test_worker_processes_grade_every_answer_once_as_one_process_does(setup, llm_server, tmp_path):
    """`--workers 2`: two processes take the answers from the parent's queue (each waits for
    its next one in a thread, `service/regrading/workers.py`) and grade them as the default
    engine does in one: the same outcomes, each call made and stored once."""
    run, url, answers, config, _ = setup
    llm_server.rules({"match": "answer 7 ", "reply": {"content": "I refuse to use JSON"}})
    two = run("--workers", "2", out=tmp_path / "two.jsonl")
    assert two.returncode == 1, two.stderr  # the parse error is listed
    assert llm_server.calls() == 30
    assert len(stored(url)) == 30
    assert outcomes(tmp_path / "two.jsonl") == one_process_outcomes(answers, config, tmp_path)
    assert [x[:3] for x in outcomes(tmp_path / "two.jsonl") if x[2] != "ok"] == [
        ("a7", "gpt-judge", "parse_error")
    ]


def test_ingested_batch_results_equal_the_local_engines(setup, llm_server, tmp_path):
    """The batch file's bodies sent to the LLM test double by hand, their replies written
    as a results file in reverse order and ingested, give each answer the outcome a live
    run of the default engine gives it (a parse error included); only the price differs."""
    run, url, answers, config, _ = setup
    llm_server.rules({"match": "answer 7 ", "reply": {"content": "I refuse to use JSON"}})
    batch, replies = tmp_path / "batch.jsonl", tmp_path / "replies.jsonl"
    assert run("--batch", str(batch)).returncode == 0
    lines = []
    for request in reversed([json.loads(x) for x in batch.read_text().splitlines()]):
        reply = httpx.post(f"{llm_server.api_base}/chat/completions", json=request["body"])
        response = {"status_code": reply.status_code, "body": reply.json()}
        lines.append({"custom_id": request["custom_id"], "response": response, "error": None})
    replies.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
    ingested = run("--ingest", str(replies), out=tmp_path / "ingested.jsonl")
    assert ingested.returncode == 1  # the parse error is listed
    ingested_outcomes = outcomes(tmp_path / "ingested.jsonl")
    assert ingested_outcomes == one_process_outcomes(answers, config, tmp_path)
    assert len(ingested_outcomes) == 30
    assert [x[:3] for x in ingested_outcomes if x[2] != "ok"] == [
        ("a7", "gpt-judge", "parse_error")
    ]


def test_judges_check_reports_reachability_and_structured_output(llm_server, tmp_path):
    data = judges_config_data(llm_server, num_retries=0, timeout=3)
    data["model_list"].append(
        {
            "model_name": "down-judge",
            "litellm_params": {
                "model": "hosted_vllm/Qwen/Qwen2.5-7B-Instruct",
                "api_base": "http://127.0.0.1:9/v1",
            },
        }
    )
    config = tmp_path / "judges.yaml"
    config.write_text(yaml.safe_dump(data))
    done = qadi("judges", "check", "--config", str(config))
    assert done.returncode == 1
    lines = {line.split("│")[1].strip(): line for line in done.stdout.splitlines() if "│" in line}
    assert "yes" in lines["gpt-judge"] and lines["gpt-judge"].count("yes") == 2
    assert "no" in lines["down-judge"]
    assert llm_server.calls() == 6  # each reachable judge: a first call, then a timed one


# issue 16 item 11: the README's own `--rubric ID@2` example failed for a version stored
# through POST /rubrics; the rubric is now resolved as the service resolves it
def test_regrade_grades_with_a_version_stored_through_the_api(setup, llm_server):
    run, url, *_ = setup
    bundled = library_rubric(RUBRIC)
    changed = bundled.model_copy(
        update={
            "criteria": [
                bundled.criteria[0].model_copy(update={"weight": 4}),
                *bundled.criteria[1:],
            ]
        }
    )
    with session_scope(make_sessionmaker(make_engine(url))) as session:
        save_rubric(session, "default", bundled)  # v2, as the library has it
        v2, created = save_rubric(
            session, "default", changed
        )  # what POST /rubrics does with a change
    assert (v2.version, created) == (3, True)

    done = run(rubric=f"{RUBRIC}@3")

    assert done.returncode == 0, done.stdout + done.stderr
    judgments = stored(url)
    assert len(judgments) == 30
    assert {j.rubric_ref for j in judgments} == {f"{RUBRIC}@3"}
    assert {j.rubric_hash for j in judgments} == {rubric_hash(v2)}
    assert rubric_hash(v2) != rubric_hash(bundled)
