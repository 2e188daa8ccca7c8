"""Structured-output modes per judge, servers that refuse a request, and token
probabilities, against the LLM test double following each server's rules
(`/_control/server`: vllm, openai, llama-cpp-python, plain)."""

from __future__ import annotations

import asyncio
import json

import pytest
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


# --- qadi judges check against each server's rules -------------------------------------------


def check_with(tmp_path, server, route="openai/gpt-4.1", **fields):
    """`qadi judges check` on one judge (gpt-judge, `route` at the test double) with `fields`
    set; its exit code, its table row as {column: cell} and its output with lines joined."""
    data = config_with(server, **fields)
    data["qadi"]["panel"] = None
    data["model_list"] = data["model_list"][:1]
    data["model_list"][0]["litellm_params"]["model"] = route
    config = tmp_path / "judges.yaml"
    config.write_text(yaml.safe_dump(data))
    done = run_cli("judges", "check", "--config", str(config))
    row = next(line for line in done.stdout.splitlines() if "gpt-judge" in line)
    cells = dict(zip(HEADERS, (cell.strip() for cell in row.split("│")[1:]), strict=False))
    return done.returncode, cells, " ".join(done.stdout.split())


def test_judges_check_fails_when_no_mode_works(llm_server, tmp_path):
    # a reachable model that never writes the JSON asked for, in any mode
    llm_server.rules({"match": "", "reply": {"content": "I would rather not."}})
    code, cells, printed = check_with(tmp_path, llm_server)
    assert code == 1
    assert (cells["reachable"], cells["structured output"]) == ("yes", "no")
    assert (
        "judge 'gpt-judge': no structured-output mode worked, with or without token "
        "probabilities (json_schema: the reply was not the requested JSON; json_object: the "
        "reply was not the requested JSON; none: the reply was not the requested JSON)"
    ) in printed
    assert "write `structured_output:" not in printed


def test_judges_check_finds_that_logprobs_are_the_refused_part(llm_server, tmp_path):
    # `plain` refuses any response_format and logprobs: with logprobs asked, every mode fails
    llm_server.server("plain")
    code, cells, printed = check_with(tmp_path, llm_server, logprobs=True)
    assert code == 1
    assert cells["structured output"] == "no (none works)"
    assert cells["logprobs"] == "refused"
    assert cells["detail"] == "response_format is not supported by this model"
    assert (
        "judge 'gpt-judge': its server refuses the token probabilities asked for; set "
        "`logprobs: false` on judge 'gpt-judge' in the judges file"
    ) in printed
    assert "write `structured_output: none` under it" in printed
    assert "json_object" not in printed.split("detail")[-1].split("│")[-1]  # no such advice


def test_judges_check_names_vllms_logprobs_limit(llm_server, tmp_path):
    # a vLLM started with --max-logprobs 5, asked for 10 alternatives per token
    llm_server.server("vllm", max_logprobs=5)
    route = "hosted_vllm/meta-llama/Llama-3.1-8B-Instruct"
    code, cells, printed = check_with(tmp_path, llm_server, route=route, logprobs=10)
    assert code == 1
    assert (cells["structured output"], cells["logprobs"]) == ("yes", "refused")
    assert "set `logprobs: 5` (or fewer, or `false`) on judge 'gpt-judge'" in printed
    assert "structured_output" not in printed.split("refuses the token probabilities")[1]


# flavour, route, configured mode, logprobs, structured-output cell, logprobs cell, advice
SERVERS = [
    ("vllm", "hosted_vllm/meta-llama/Llama-3.1-8B-Instruct", None, None, "yes", "yes", None),
    ("vllm", "hosted_vllm/meta-llama/Llama-3.1-8B-Instruct", "json_object", None, "yes", "yes",
     None),
    ("openai", "openai/gpt-4.1", "json_object", True, "no (json_schema works)", "yes",
     "its server does not take `json_object`; write `structured_output: json_schema`"),
    ("llama-server", "openai/qwen2.5-7b-instruct", None, True, "yes", "yes", None),
    ("llama-server", "openai/qwen2.5-7b-instruct", "json_object", True, "yes", "yes", None),
    ("ollama", "openai/qwen2.5:7b", None, True, "yes", "yes", None),
    ("ollama-0.4", "openai/qwen2.5:7b", None, True, "no (json_object works)", "no",
     "in `json_schema` mode its reply was not the requested JSON; write "
     "`structured_output: json_object`"),
    ("lm-studio", "lm_studio/qwen2.5-7b-instruct", None, True, "yes", "no", None),
    ("lm-studio", "lm_studio/qwen2.5-7b-instruct", "json_object", None, "no (json_schema works)",
     "off", "its server does not take `json_object`; write `structured_output: json_schema`"),
]


@pytest.mark.parametrize(
    ("flavour", "route", "mode", "logprobs", "structured", "logprob_cell", "advice"), SERVERS
)
def test_judges_check_finds_the_mode_each_server_takes(
    llm_server, tmp_path, flavour, route, mode, logprobs, structured, logprob_cell, advice
):
    llm_server.server(flavour)
    fields = {k: v for k, v in (("structured_output", mode), ("logprobs", logprobs)) if v}
    code, cells, printed = check_with(tmp_path, llm_server, route=route, **fields)
    assert (cells["structured output"], cells["logprobs"]) == (structured, logprob_cell)
    if advice is None:
        assert code == 0, printed
    else:
        assert code == 1 and f"judge 'gpt-judge': {advice} under it" in printed


# --- refusals: the server's words, the fix, and no cooldown -----------------------------------


def test_a_refusal_keeps_the_servers_words_without_provider_prefixes(llm_server):
    llm_server.server("llama-cpp-python")
    for judge in ("gpt-judge", "llama-judge"):  # openai/ and hosted_vllm/ word it differently
        result = grade(config_with(llm_server), judges=(judge,))
        assert result.error.startswith(
            f"judge '{judge}': the server refused the request (HTTP 500): 1 validation error: "
            "{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
            "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'} -- fix: "
        ), result.error
        for prefix in ("Exception", "InternalServerError", "litellm.", '{"error"'):
            assert prefix not in result.error


def test_lm_studio_refusing_json_object_is_told_to_use_json_schema(llm_server):
    llm_server.server("lm-studio")
    data = config_with(llm_server, structured_output="json_object")
    data["model_list"][0]["litellm_params"]["model"] = "lm_studio/mistral-7b-instruct"
    result = grade(data)
    assert result.status == "backend_error" and llm_server.calls() == 1
    assert result.error == (
        "judge 'gpt-judge': the server refused the request (HTTP 400): 'response_format.type' "
        "must be 'json_schema' -- fix: set `structured_output: json_schema` (or `none`) on "
        "judge 'gpt-judge' in the judges file; `qadi judges check` finds the mode this server "
        "takes"
    )


def test_refusals_do_not_rest_the_judge(llm_server):
    # five refused calls in a row: each keeps the server's words and the fix; none says the
    # judge is cooling down (allowed_fails is 3), and each one reached the server
    from judges.client import JudgeClient

    llm_server.server("llama-cpp-python")
    client = JudgeClient(parse_config(config_with(llm_server)))
    schema = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}
    for _ in range(5):
        outcome = asyncio.run(client.complete("gpt-judge", [{"role": "user", "content": "x"}],
                                              schema))
        assert outcome.refused and "cooling down" not in outcome.error
        assert "Input should be 'text' or 'json_object'" in outcome.error
    assert llm_server.calls() == 5
    # the judge is healthy: a well-formed request right after is answered
    ok = asyncio.run(client.complete("gpt-judge", [{"role": "user", "content": "x"}], None))
    assert ok.status == "ok"
