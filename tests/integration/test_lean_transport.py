"""The lean transport (judges/transport.py, issue 40) against the OpenAI-compatible test
double: it sends what LiteLLM sends, with a request id, closes an abandoned request, and
every failure ends as the same outcome as on LiteLLM's route."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judges import JudgeConfigError, parse_config
from judges.client import CallOutcome, JudgeClient
from judges.logprobs import Tokens, alternatives_of
from judges.replies import read_completion
from judges.transport import request_id
from tests.conftest import free_port
from tests.perf.bench_client_overhead import FORMAT as SCHEMA
from tests.perf.bench_client_overhead import MESSAGES

ROOT = Path(__file__).resolve().parents[2]


def client_for(
    api_base: str,
    transport: str,
    model: str = "hosted_vllm/meta-llama/Llama-3.1-8B",
    logprobs: int | None = None,
    **qadi,
) -> JudgeClient:
    entry = {
        "logprobs": logprobs,
        "model_name": "judge",
        "litellm_params": {
            "model": model,
            "api_base": api_base,
            "api_key": "sk-test-lean-key-0001",
            "extra_body": {"top_k": 5},
        },
        "transport": transport,
    }
    return JudgeClient(parse_config({"model_list": [entry], "qadi": {"num_retries": 1, **qadi}}))


def call(client: JudgeClient, **overrides) -> CallOutcome:
    return asyncio.run(client.complete("judge", MESSAGES, SCHEMA, **overrides))


def test_the_lean_request_is_litellms_with_a_request_id(llm_server):
    """Structured output, logprobs (asked by default on hosted_vllm/), sampling, the entry's
    and the call's extra_body: the server receives the very body LiteLLM sends, and the
    lean one carries an X-Request-Id, a new one per call."""
    sent = {}
    for transport in ("litellm", "lean"):
        llm_server.reset()
        client = client_for(llm_server.api_base, transport)
        outcome = call(client, max_tokens=32)
        assert outcome.status == "ok", outcome.error
        call(client, extra_body={"prompt_logprobs": 0})  # a call's own replaces the entry's
        sent[transport] = (llm_server.requests(), llm_server.request_ids())
    (litellm_bodies, _), (lean_bodies, lean_ids) = sent["litellm"], sent["lean"]
    assert lean_bodies == litellm_bodies
    first, second = lean_bodies
    assert first["response_format"] == SCHEMA
    assert (first["logprobs"], first["top_logprobs"]) == (True, 10)
    assert (first["top_k"], first["max_tokens"]) == (5, 32)
    assert second["prompt_logprobs"] == 0 and "top_k" not in second
    assert all(lean_ids) and len(set(lean_ids)) == 2


def test_request_ids_differ_within_a_process_and_in_a_forked_child():
    """Two processes calling one server (a forked service or Ray worker) never send the same
    id: the child draws its own prefix, and counts from zero under it."""
    ids = [request_id() for _ in range(1000)]
    assert len(set(ids)) == 1000
    readable, writable = os.pipe()
    child = os.fork()
    if child == 0:  # the child sends its first id and leaves at once
        os.write(writable, request_id().encode())
        os._exit(0)
    os.waitpid(child, 0)
    in_child = os.read(readable, 200).decode()
    os.close(readable)
    os.close(writable)
    assert in_child.rsplit("-", 1)[0] != ids[0].rsplit("-", 1)[0]
    assert in_child not in ids and request_id() not in ids


def test_the_lean_reply_reads_as_litellms(llm_server):
    """Text, token logprobs, token counts and the price from LiteLLM's table: the same
    outcome from the same reply."""
    outcomes = {}
    for transport in ("litellm", "lean"):
        llm_server.script({"content": '{"rating": 4}', "top_logprobs": {"4": {"4": 0.7, "3": 0.3}}})
        client = client_for(llm_server.api_base, transport, "openai/gpt-4.1", logprobs=2)
        outcomes[transport] = call(client)
    litellm_outcome, lean_outcome = outcomes["litellm"], outcomes["lean"]
    assert lean_outcome.text == litellm_outcome.text == '{"rating": 4}'
    assert litellm_outcome.cost_usd > 0
    assert lean_outcome.cost_usd == pytest.approx(litellm_outcome.cost_usd)
    lean, litellm_read = (read_completion(o.payload) for o in (lean_outcome, litellm_outcome))
    assert (lean.prompt_tokens, lean.completion_tokens) == (100, 20)
    assert pairs(lean.tokens) == pairs(litellm_read.tokens) and lean.tokens.items
    assert lean.tokens.unusable is litellm_read.tokens.unusable is None


def pairs(tokens: Tokens) -> list:
    """Each token with its alternatives as (token, logprob) pairs, whichever way they were
    decoded (the lean transport's are decoded when read, into structs that unpack as pairs)."""
    return [
        (token, logprob, [tuple(a) for a in alternatives_of(top)])
        for token, logprob, top in tokens.items
    ]


async def _abandon(client: JudgeClient, llm_server) -> None:
    task = asyncio.create_task(client.complete("judge", MESSAGES, SCHEMA))
    while await asyncio.to_thread(llm_server.calls) < 1:
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def _disconnect_seen(llm_server, request_id: str) -> bool:
    for _ in range(100):
        if request_id in llm_server.disconnected():
            return True
        asyncio.run(asyncio.sleep(0.05))
    return False


def test_a_cancelled_lean_call_closes_its_request_on_the_server(llm_server):
    """vLLM aborts a request whose client disconnects: a cancelled call must close its
    connection, not leave it to finish in the pool."""
    llm_server.script({"delay": 10})
    asyncio.run(_abandon(client_for(llm_server.api_base, "lean"), llm_server))
    [request_id] = llm_server.request_ids()
    assert _disconnect_seen(llm_server, request_id)


def test_a_timed_out_lean_call_closes_its_request_on_the_server(llm_server):
    llm_server.script({"delay": 10})
    outcome = call(client_for(llm_server.api_base, "lean", timeout=0.5, num_retries=0))
    assert outcome.status == "timeout"
    [request_id] = llm_server.request_ids()
    assert _disconnect_seen(llm_server, request_id)


FAILURES = [
    {"status": 500},
    {"status": 502},
    {"status": 503},
    {"status": 504},
    {"status": 429, "retry_after": "0"},
    {"status": 400},
    {"status": 401},
    {"status": 403},
    {"status": 404},
    {"status": 422},
    {"status": 418},
    {"delay": 3},
    {"payload": {"id": "x", "object": "chat.completion", "choices": []}},
]


def _kind(outcome: CallOutcome) -> tuple:
    """What the grading path reads from an outcome: status, attempts, refusal, the
    exception's class (the error's first word), the server's words."""
    name = (outcome.error or "").split(":")[0]
    return outcome.status, outcome.attempts, outcome.refused, outcome.server_said, name


@pytest.mark.parametrize("reply", FAILURES, ids=lambda r: str(r.get("status", r)))
def test_every_failure_is_the_same_outcome_on_both_transports(llm_server, reply):
    kinds = {}
    for transport in ("litellm", "lean"):
        llm_server.reset()
        llm_server.script(reply, reply)
        client = client_for(llm_server.api_base, transport, timeout=1)
        outcome = call(client)
        kinds[transport] = (_kind(outcome), llm_server.calls())
        if outcome.status == "ok":  # no choices: refused by the reply's reader, not the call
            kinds[transport] += (read_completion(outcome.payload).status,)
    assert kinds["lean"] == kinds["litellm"]


def test_an_unreachable_server_is_the_same_outcome_on_both_transports():
    closed = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    kinds = {t: _kind(call(client_for(closed, t, num_retries=0))) for t in ("litellm", "lean")}
    assert kinds["lean"] == kinds["litellm"] == ("backend_error", 1, False, None, kinds["lean"][4])
    assert kinds["lean"][4] == "InternalServerError"


BASE = "http://127.0.0.1:1/v1"


@pytest.mark.parametrize(
    ("params", "transport", "expected"),
    [
        (
            {"model": "anthropic/claude-3-5-sonnet", "api_base": BASE},
            "lean",
            "model_list.0: transport: lean calls OpenAI-compatible servers (hosted_vllm/ or "
            "openai/ routes), not 'anthropic/claude-3-5-sonnet'",
        ),
        ({"model": "hosted_vllm/m"}, "lean", "transport: lean needs litellm_params.api_base"),
        ({"model": "hosted_vllm/m", "api_base": BASE}, "fast", "transport: Input should be 'lean' or 'litellm'"),
    ],
)  # fmt: skip
def test_a_wrong_transport_is_one_clear_line(params, transport, expected):
    entry = {"model_name": "j", "litellm_params": params, "transport": transport}
    with pytest.raises(JudgeConfigError) as raised:
        parse_config({"model_list": [entry]})
    message = str(raised.value)
    assert "\n" not in message and expected in message, message


def test_lean_on_a_judge_of_several_deployments_is_refused():
    deployments = [
        {
            "model_name": "j",
            "litellm_params": {"model": "hosted_vllm/m", "api_base": f"http://10.0.0.{p}/v1"},
            "transport": "lean",
        }
        for p in (1, 2)
    ]
    with pytest.raises(JudgeConfigError, match="model_list.j.transport: lean calls one server"):
        parse_config({"model_list": deployments})


def test_hosted_vllm_is_lean_by_default_and_other_routes_are_not():
    def lean(params: dict, **entry) -> bool:
        config = parse_config(
            {"model_list": [{"model_name": "j", "litellm_params": params, **entry}]}
        )
        return config.judge("j").lean

    assert lean({"model": "hosted_vllm/m", "api_base": BASE})
    assert not lean({"model": "hosted_vllm/m", "api_base": BASE}, transport="litellm")
    assert not lean({"model": "openai/gpt-4.1", "api_base": BASE})
    assert lean({"model": "openai/gpt-4.1", "api_base": BASE}, transport="lean")
    assert not lean({"model": "hosted_vllm/m"})  # no server named: LiteLLM's env lookup


LEAN_ONLY = """
import asyncio, json, sys
from judges import parse_config
from judges.client import JudgeClient
entry = {"model_name": "judge", "litellm_params": {"model": "hosted_vllm/m", "api_base": sys.argv[1]}}
client = JudgeClient(parse_config({"model_list": [entry], "qadi": {"num_retries": 0}}))
messages = [{"role": "user", "content": "Rate: 4"}]
outcomes = [asyncio.run(client.complete("judge", messages, None)) for _ in range(2)]
print(json.dumps([[o.status, o.error] for o in outcomes] + ["litellm" in sys.modules]))
"""


def test_a_process_whose_judges_are_all_lean_never_imports_litellm(llm_server):
    """LiteLLM's import is ~4 s of CPU; a lean judge's calls, answered and failed, are read
    without it (the failure named as LiteLLM names it)."""
    llm_server.script({"status": 200}, {"status": 503})
    done = subprocess.run(
        [sys.executable, "-c", LEAN_ONLY, llm_server.api_base],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    ok, failed, imported = json.loads(done.stdout.splitlines()[-1])
    assert ok == ["ok", None]
    assert failed[0] == "backend_error" and failed[1].startswith("ServiceUnavailableError: ")
    assert imported is False


@pytest.mark.parametrize(
    ("model", "variable"),
    [("hosted_vllm/meta-llama/Llama-3.1-8B", "HOSTED_VLLM_API_KEY"), ("openai/m", "OPENAI_API_KEY")],
)
def test_a_key_left_to_the_environment_is_sent_alike_and_never_stored(
    llm_server, monkeypatch, model, variable
):
    """An entry without `api_key`: LiteLLM reads the route's variable, and so does the lean
    transport (a vLLM started with `--api-key` takes the same judges file on either); a
    server repeating the key in an error has it redacted on both."""
    key = "env-key-of-the-judge-0001"
    monkeypatch.setenv(variable, key)
    seen, errors = {}, {}
    for transport in ("litellm", "lean"):
        llm_server.reset()
        llm_server.script({"content": "4", "echo_auth": True}, {"status": 500, "echo_auth": True})
        entry = {
            "model_name": "judge",
            "litellm_params": {"model": model, "api_base": llm_server.api_base},
            "transport": transport,
        }
        client = JudgeClient(parse_config({"model_list": [entry], "qadi": {"num_retries": 0}}))
        answered, failed = call(client), call(client)
        seen[transport] = read_completion(answered.payload).text
        errors[transport] = failed.error
    assert seen["lean"] == seen["litellm"] == f"4 (Authorization: Bearer {key})"
    for error in errors.values():
        assert key not in error and "Authorization: Bearer [redacted]" in error, error


def test_a_401_to_a_lean_call_without_a_key_names_the_variable_to_set(llm_server, monkeypatch):
    """As LiteLLM names the variable of a key it found unset: the failure says what to set,
    is not retried and does not count against the judge's health (the cooldown)."""
    monkeypatch.delenv("HOSTED_VLLM_API_KEY", raising=False)
    entry = {
        "model_name": "judge",
        "litellm_params": {"model": "hosted_vllm/m", "api_base": llm_server.api_base},
    }
    client = JudgeClient(parse_config({"model_list": [entry], "qadi": {"num_retries": 2}}))
    llm_server.script({"status": 401})
    outcome = call(client)
    assert (outcome.status, outcome.attempts, llm_server.calls()) == ("backend_error", 1, 1)
    assert outcome.error.startswith("HOSTED_VLLM_API_KEY is not set (judge 'judge' has no api_key")
    assert not client.cooldown.ended.get("judge")
    monkeypatch.setenv("HOSTED_VLLM_API_KEY", "a-key-the-server-refuses")
    keyed = JudgeClient(parse_config({"model_list": [entry], "qadi": {"num_retries": 2}}))
    llm_server.script({"status": 401})
    assert call(keyed).error.startswith("AuthenticationError: ")
