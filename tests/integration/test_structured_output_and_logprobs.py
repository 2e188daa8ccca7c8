"""Structured-output modes per judge, servers that refuse a request, and token
probabilities, against the LLM test double following each server's rules
(`/_control/server`: vllm, openai, llama-cpp-python, plain)."""

from __future__ import annotations

import asyncio
import json

import yaml

from judges import BatchGrader, BatchOptions, Grader, GradeRequest, parse_config
from rubrics import library_rubric
from tests.conftest import judges_config_data, run_cli

# the columns of `qadi judges check`'s table
HEADERS = ["judge", "model", "maker", "reachable", "structured output", "latency ms", "logprobs",
           "detail"]

RATING_RUBRIC = library_rubric("kinayat-explanation")
CRITERIA_RUBRIC = library_rubric("iraqi-linguistic-shaku-maku")


def config_with(server, **fields):
    """The test double's panel with `fields` set on gpt-judge (its substitute removed, so a
    failure stays visible)."""
    data = judges_config_data(server, num_retries=2)
    entry = data["model_list"][0]
    entry.pop("substitute")
    entry.update(fields)
    return data


def grade(data: dict, rubric=RATING_RUBRIC, judges=("gpt-judge",)):
    request = GradeRequest(
        rubric=rubric,
        prompt="اشرح: قلبه أبيض",
        response="يعني طيب",
        reference="كناية عن الطيبة",
        candidate_model="qwen-2.5",
        judges=list(judges),
    )
    grader = Grader(parse_config(data))
    return asyncio.run(grader.grade(grader.plan(request))).results[0]


def test_a_server_refusing_json_schema_is_reported_once_with_the_fix(llm_server):
    llm_server.server("llama-cpp-python")
    result = grade(config_with(llm_server))
    assert result.status == "backend_error" and result.score is None
    assert llm_server.calls() == 1  # refused, not retried (num_retries is 2)
    assert result.attempts == 1
    assert result.error.startswith("judge 'gpt-judge': the server refused the request (HTTP 500)")
    assert "Input should be 'text' or 'json_object'" in result.error  # the server's own words
    assert "set `structured_output: json_object`" in result.error
    assert "retries" not in result.error


def test_json_object_mode_sends_the_schema_where_llama_cpp_python_reads_it(llm_server):
    llm_server.server("llama-cpp-python")
    result = grade(config_with(llm_server, structured_output="json_object"))
    assert result.status == "ok" and result.score == 1.0  # the schema's first rating
    [body] = llm_server.requests()
    schema = body["response_format"]["schema"]
    assert body["response_format"]["type"] == "json_object"
    assert schema["properties"]["rating"]["enum"] == [1, 2, 3, 4, 5]
    assert (
        json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
        in (body["messages"][-1]["content"])
    )


def test_openai_refuses_a_schema_field_and_the_fix_is_mode_none(llm_server):
    llm_server.server("openai")
    result = grade(config_with(llm_server, structured_output="json_object"))
    assert result.status == "backend_error" and llm_server.calls() == 1
    assert "(HTTP 400): Additional properties are not allowed" in result.error
    assert "set `structured_output: none`" in result.error


def test_mode_none_puts_the_schema_in_the_prompt_and_parses_strictly(llm_server):
    llm_server.server("plain")
    data = config_with(llm_server, structured_output="none")
    ok = grade(data)
    assert ok.status == "ok" and ok.score == 1.0
    body = llm_server.requests()[-1]
    assert "response_format" not in body
    assert "matches this JSON schema, and nothing else:" in body["messages"][-1]["content"]
    llm_server.script({"content": 'Sure! My rating is {"rating": 4}'})
    prose = grade(data)
    assert prose.status == "parse_error" and prose.score is None
    assert prose.raw_reply == 'Sure! My rating is {"rating": 4}'


def test_a_server_refusing_logprobs_is_told_to_turn_them_off(llm_server):
    llm_server.server("plain")
    result = grade(config_with(llm_server, structured_output="none", logprobs=True))
    assert result.status == "backend_error" and llm_server.calls() == 1
    assert "logprobs are not supported" in result.error
    assert "set `logprobs: false` on judge 'gpt-judge'" in result.error


def test_a_modes_calls_have_their_own_cache_keys(llm_server):
    schema = Grader(parse_config(config_with(llm_server)))
    other = Grader(parse_config(config_with(llm_server, structured_output="json_object")))
    request = GradeRequest(
        rubric=RATING_RUBRIC, response="r", reference="g", candidate_model="qwen-2.5"
    )
    assert schema.plan(request).keys["gpt-judge"] != other.plan(request).keys["gpt-judge"]


def test_judges_check_finds_the_mode_the_server_takes(llm_server, tmp_path):
    llm_server.server("llama-cpp-python")
    config = tmp_path / "judges.yaml"
    data = config_with(llm_server)
    data["qadi"]["panel"] = None
    data["model_list"] = data["model_list"][:1]
    config.write_text(yaml.safe_dump(data))
    done = run_cli("judges", "check", "--config", str(config))
    assert done.returncode == 1
    assert "no (json_object works)" in done.stdout
    assert (
        "judge 'gpt-judge': its server does not take `json_schema`; write "
        "`structured_output: json_object` under it in the judges file"
    ) in " ".join(done.stdout.split())
    data["model_list"][0]["structured_output"] = "json_object"
    config.write_text(yaml.safe_dump(data))
    fixed = run_cli("judges", "check", "--config", str(config))
    assert fixed.returncode == 0, fixed.stdout
    row = next(line for line in fixed.stdout.splitlines() if "gpt-judge" in line)
    cells = dict(zip(HEADERS, (cell.strip() for cell in row.split("│")[1:]), strict=False))
    assert cells["structured output"] == "yes"
    assert cells["logprobs"] == "off"  # an openai/ route: logprobs not asked


def test_hosted_vllm_judges_ask_for_logprobs_by_default(llm_server):
    data = judges_config_data(llm_server)
    config = parse_config(data)
    assert config.judge("llama-judge").top_logprobs == 10
    assert config.judge("gpt-judge").top_logprobs is None
    llm_server.script({"content": '{"rating": 4}', "top_logprobs": {"4": {"4": 0.7, "3": 0.3}}})
    result = grade(data, judges=("llama-judge",))
    [body] = llm_server.requests()
    assert (body["logprobs"], body["top_logprobs"]) == (True, 10)
    assert result.probabilities.rating.probs == {"1": 0, "2": 0, "3": 0.3, "4": 0.7, "5": 0}
    assert result.expected_score == 3.7


def test_criteria_probabilities_and_expected_score_are_stored(llm_server, migrated_db):
    from service.db.engine import open_database, session_scope
    from service.stores.judgments import SqlJudgmentStore, find_done_in

    data = config_with(llm_server, logprobs=5)
    ids = [c.id for c in CRITERIA_RUBRIC.criteria]
    verdicts = [{"id": i, "met": True, "evidence": "e"} for i in ids]
    llm_server.script(
        {
            "content": json.dumps({"criteria": verdicts, "rationale": "r"}),
            "top_logprobs": {"true": {"true": 0.8, "false": 0.2}},
        }
    )
    request = GradeRequest(
        rubric=CRITERIA_RUBRIC,
        prompt="شكو ماكو؟",
        response="يعني شنو الأخبار",
        candidate_model="qwen-2.5",
        judges=["gpt-judge"],
    )
    sessions = open_database(migrated_db)
    batch = BatchGrader(Grader(parse_config(data)), SqlJudgmentStore(sessions, "default"), BatchOptions())
    result = asyncio.run(batch.grade_one(request)).results[0]
    assert set(result.probabilities.criteria) == set(ids)
    assert all(
        d.probs == {"true": 0.8, "false": 0.2} for d in result.probabilities.criteria.values()
    )
    # every criterion met with P .8, independently: E[score] over the 2^n combinations
    assert 0 < result.expected_score < 100
    with session_scope(sessions) as session:
        stored = find_done_in(session, [result.cache_key], ["ok"])[result.cache_key]
    assert stored.probabilities == result.probabilities
    assert stored.expected_score == result.expected_score
