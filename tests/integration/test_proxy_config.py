"""A LiteLLM proxy config is accepted as it is (issue 16, item 10).

Several deployments under one `model_name` are one judge, load-balanced by `litellm.Router`
over two test-double processes on two ports; `environment_variables` are exported as the
proxy exports them (and redacted); the router_settings / litellm_settings that steer a judge
call are honoured, the rest named in one warning; retries stay qadi's alone.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from judges import JudgeConfigError, parse_config
from judges.client import JudgeClient
from tests.conftest import LLMServer, start_llm_server

SECRET = "sk-proxy-env-secret-0042"


@pytest.fixture(scope="module")
def second_server(request) -> LLMServer:
    """Another test double on its own port: the judge's second deployment."""
    process, server = start_llm_server()
    request.addfinalizer(lambda: (process.terminate(), process.wait(timeout=10)))
    return server


@pytest.fixture
def servers(llm_server: LLMServer, second_server: LLMServer) -> tuple[LLMServer, LLMServer]:
    second_server.reset()
    return llm_server, second_server


def proxy_config(a: LLMServer, b: LLMServer, **router_settings) -> dict:
    """What a LiteLLM proxy operator already has: two deployments of one model name, keys
    through environment_variables, and proxy-only sections."""
    deployment = {"model": "openai/gpt-4.1", "api_key": "os.environ/QADI_TEST_PROXY_KEY"}
    return {
        "model_list": [
            {"model_name": "gpt-judge", "litellm_params": {**deployment, "api_base": a.api_base},
             "rpm": 600},
            {"model_name": "gpt-judge", "litellm_params": {**deployment, "api_base": b.api_base}},
        ],
        "environment_variables": {"QADI_TEST_PROXY_KEY": SECRET},
        "router_settings": {"routing_strategy": "simple-shuffle", "num_retries": 1,
                            "allowed_fails": 100, "fallbacks": [{"gpt-judge": ["x"]}],
                            **router_settings},
        "litellm_settings": {"drop_params": True, "request_timeout": 7,
                             "success_callback": ["langfuse"]},
        "general_settings": {"master_key": "sk-1234"},
    }


def complete(client: JudgeClient, n: int = 1):
    async def run():
        messages = [{"role": "user", "content": "grade this"}]
        return await asyncio.gather(
            *(client.complete("gpt-judge", messages, None) for _ in range(n))
        )

    return asyncio.run(run())


@pytest.fixture
def proxy_env(monkeypatch):
    # registered with monkeypatch, so the variable the client exports is removed afterwards
    monkeypatch.delenv("QADI_TEST_PROXY_KEY", raising=False)


def test_several_deployments_are_one_judge_spread_over_both(servers, proxy_env):
    a, b = servers
    config = parse_config(proxy_config(a, b))
    assert config.names == ["gpt-judge"]
    assert [e.litellm_params["api_base"] for e in config.deployments("gpt-judge")] == [
        a.api_base, b.api_base
    ]
    outcomes = complete(JudgeClient(config), 40)
    assert [o.status for o in outcomes] == ["ok"] * 40
    # simple-shuffle over two equal deployments: P(one gets all 40) = 2 * 0.5**40
    assert a.calls() + b.calls() == 40 and a.calls() > 0 and b.calls() > 0


def test_environment_variables_are_exported_and_redacted(servers, proxy_env):
    import os

    a, b = servers
    client = JudgeClient(parse_config(proxy_config(a, b)))
    assert os.environ["QADI_TEST_PROXY_KEY"] == SECRET  # as the proxy does at start
    # a provider that echoes the caller's credentials in a non-transient error
    for server in (a, b):
        server.script({"status": 400, "echo_auth": True})
    (outcome,) = complete(client)
    assert outcome.status == "backend_error"
    assert SECRET not in outcome.error and "[redacted]" in outcome.error


def test_proxy_settings_set_qadi_options_unless_qadi_sets_them(servers):
    a, b = servers
    config = parse_config(proxy_config(a, b))
    # router_settings.num_retries and litellm_settings.request_timeout
    assert (config.qadi.num_retries, config.qadi.timeout) == (1, 7)
    assert config.router_args == {"routing_strategy": "simple-shuffle", "allowed_fails": 100}
    assert config.call_settings == {"drop_params": True}
    explicit = parse_config({**proxy_config(a, b), "qadi": {"num_retries": 0, "timeout": 30}})
    assert (explicit.qadi.num_retries, explicit.qadi.timeout) == (0, 30)


def test_one_warning_names_what_does_not_apply(servers, caplog):
    a, b = servers
    data = proxy_config(a, b, redis_ttl_unique_for_this_test=5)
    with caplog.at_level(logging.WARNING, logger="qadi"):
        parse_config(data)
        parse_config(data)
    warnings = [r.getMessage() for r in caplog.records if r.name == "qadi"]
    assert len(warnings) == 1
    for key in ("general_settings", "litellm_settings.success_callback",
                "router_settings.fallbacks", "router_settings.redis_ttl_unique_for_this_test"):
        assert key in warnings[0]
    for honoured in ("drop_params", "request_timeout", "routing_strategy", "num_retries"):
        assert honoured not in warnings[0]


def test_one_retry_layer_across_deployments(servers, proxy_env):
    a, b = servers
    a.faults(p500=1.0)
    b.faults(p500=1.0)
    (outcome,) = complete(JudgeClient(parse_config(proxy_config(a, b))))
    # num_retries 1 (router_settings): the first attempt and one retry by qadi, 2 calls in
    # all; a second layer in LiteLLM (router or SDK) would make 4 or more
    assert outcome.status == "backend_error" and outcome.attempts == 2
    assert a.calls() + b.calls() == 2


def test_deployments_of_one_judge_must_agree(servers):
    a, b = servers
    data = proxy_config(a, b)
    data["model_list"][1]["litellm_params"]["model"] = "anthropic/claude-3-5-sonnet"
    with pytest.raises(JudgeConfigError, match="different makers"):
        parse_config(data)
    data = proxy_config(a, b)
    data["model_list"][0]["provider"] = "openai"
    data["model_list"][1]["provider"] = "azure-openai"
    with pytest.raises(JudgeConfigError, match="gpt-judge.provider: its deployments disagree"):
        parse_config(data)
    data = proxy_config(a, b)
    data["model_list"][1]["litellm_params"]["temperature"] = 0.7
    with pytest.raises(JudgeConfigError, match="differ in sampling"):
        parse_config(data)


def test_qadi_fields_given_on_one_deployment_hold_for_the_judge(servers):
    a, b = servers
    data = proxy_config(a, b)
    data["model_list"][1]["provider"] = "openai"
    config = parse_config(data)
    assert [e.provider for e in config.deployments("gpt-judge")] == ["openai", "openai"]
    assert [e.rpm for e in config.deployments("gpt-judge")] == [600, 600]
